//! A write run's hand on the archive (`crate::archive`): reading a source into it with what
//! the store and the run know of other sessions, reading it back, retiring what it no longer needs.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use super::Writer;
use crate::Result;
use crate::archive::{Archive, Archived};
use crate::claude::{Mode, Transcript};
use crate::graph::SourceRecord;

impl Writer<'_> {
    fn archive(&self) -> Archive<'_> {
        Archive::new(self.graph)
    }

    /// Reads a transcript into the archive (see [`Archive::read_source`]), with the lines
    /// other sessions own and `labels`, the summary labels known (stored, and this run's
    /// so far).
    pub(super) fn read_source(
        &self,
        path: &Path,
        name: &str,
        mode: Mode,
        known: Option<&SourceRecord>,
        force: bool,
        labels: &HashMap<u128, String>,
    ) -> Result<(Transcript, Archived)> {
        let history = self.authors.history(labels);
        self.archive()
            .read_source(path, name, mode, known, force, &history)
    }

    /// The archived bytes of a source: earlier versions' lines, then the file as read.
    pub(super) fn archive_reader(
        &self,
        record: &SourceRecord,
    ) -> Result<Option<Box<dyn Read + Send>>> {
        self.archive().archive_reader(record)
    }

    /// Drops the blobs a source referred to before this read and no longer does.
    pub(super) fn retire(&self, known: Option<&SourceRecord>, now: &Archived) -> Result<()> {
        self.archive().retire(known, now)
    }
}
