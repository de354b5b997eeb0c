//! `eywa check` and `eywa backup` as the engine runs them: each takes the ingest lock and
//! hands the store to its room (`crate::check`, `crate::backup`).

use std::path::Path;
use std::time::Instant;

use super::Engine;
use crate::backup::BackupReport;
use crate::check::CheckReport;
use crate::{Error, Result};

impl Engine {
    /// Verifies the store; with `repair`, rebuilds what is derived (graph indexes and
    /// counters, semantic memory's listing, the text index) and has transcripts whose
    /// archive is damaged read again. A repair needs the store to itself: no ingest runs
    /// meanwhile.
    pub fn check(&self, repair: bool) -> Result<CheckReport> {
        let started = Instant::now();
        let _ingest = self.ingest_lock.lock()?;
        crate::check::run(&self.writer(), || self.semantic_status(), repair, started)
    }

    /// Copies the store to `dir` (which must be missing or empty) as it is at one moment:
    /// ingest, graph writes and the embedder wait while the files are copied. The copy is
    /// a data dir of its own (`store/`, `handoffs/`, `handoff-index.json`, and
    /// `eywa-backup.json` saying what it holds) that `eywa restore` brings back. Returns
    /// the bytes copied.
    pub fn backup(&self, dir: &Path) -> Result<BackupReport> {
        let started = Instant::now();
        crate::backup::check_target(dir)?;
        let data_dir = self.config.data_dir.as_deref().ok_or_else(|| {
            Error::InvalidArgument("a temporary store has no data dir to back up".into())
        })?;
        let semantic = self.semantic()?;
        let _ingest = self.ingest_lock.lock()?;
        crate::backup::take(dir, data_dir, &self.graph, semantic, started)
    }
}
