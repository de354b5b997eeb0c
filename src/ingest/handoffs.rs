//! Handoff files: each handoff a run writes as Eywa markdown under the data directory, and
//! the handoff index beside them.

use super::Writer;
use std::path::Path;

use rayon::prelude::*;

use super::Run;
use crate::extract::{build_index, handoff_path, render_markdown};
use crate::model::Handoff;
use crate::{Error, Result};

impl Writer<'_> {
    /// Writes the handoffs written so far as Eywa markdown files,
    /// `<data>/handoffs/YYYY/MM/DD/<id8>.md`: handed to the run's file thread while it has
    /// one, else written here on both cores (stores without a data directory keep handoffs
    /// in the graph only).
    pub(super) fn flush_handoff_files(&self, run: &mut Run) -> Result<()> {
        let handoffs = std::mem::take(&mut run.handoff_files);
        match &run.handoff_sink {
            // A closed sink means its thread stopped on an error, which its join returns.
            Some(sink) => {
                let _ = sink.send(handoffs);
                Ok(())
            }
            None => self.write_handoff_files(&handoffs),
        }
    }

    fn write_handoff_files(&self, handoffs: &[Handoff]) -> Result<()> {
        handoffs
            .par_iter()
            .try_for_each(|handoff| self.write_handoff_file(handoff))
    }

    pub(super) fn write_handoff_file(&self, handoff: &Handoff) -> Result<()> {
        let Some(root) = &self.data_dir else {
            return Ok(());
        };
        write_atomically(
            &handoff_path(root, handoff),
            render_markdown(handoff, &handoff.sections).as_bytes(),
        )
    }

    /// Rewrites `<data>/handoff-index.json` in the shape Eywa's reader takes.
    pub(super) fn write_handoff_index(&self) -> Result<()> {
        let Some(root) = &self.data_dir else {
            return Ok(());
        };
        let handoffs: Vec<Handoff> = self.sinks.handoff_index()?.handoffs().collect();
        let index = build_index(&handoffs, chrono::Utc::now());
        let bytes = serde_json::to_vec_pretty(&index).expect("a JSON value serializes");
        write_atomically(&root.join("handoff-index.json"), &bytes)
    }
}

/// Writes `bytes` to a temporary file beside `path`, then renames it into place, so a
/// reader never sees half a file.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().expect("a file path has a parent");
    std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(Error::io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(Error::io(path))
}
