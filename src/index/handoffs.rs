//! The `get` index on disk, in `<store>/index/handoffs/`: a base segment (`base.seg`,
//! mmapped, so a fresh process pays only for the pages a query touches) and a small delta
//! (`delta.seg`, read whole) of the sessions changed since the base was built.
//!
//! A writer creates the `stale` marker before its first handoff write and removes it once
//! both files describe the store again, so a reader that finds no marker and a delta built
//! on the base beside it reads exactly what the store holds. Files are replaced by rename,
//! never rewritten in place, so a reader keeps a consistent pair while a writer works.

use std::path::{Path, PathBuf};

use crate::retrieve::{HandoffIndex, Rebuilt, Segment};
use crate::{Error, Result};

const BASE: &str = "base.seg";
const DELTA: &str = "delta.seg";
const STALE: &str = "stale";

/// The files of the `get` index.
#[derive(Debug, Clone)]
pub struct HandoffFiles {
    dir: PathBuf,
}

impl HandoffFiles {
    /// The files under an index tier directory.
    pub fn new(index_dir: &Path) -> HandoffFiles {
        HandoffFiles {
            dir: index_dir.join("handoffs"),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether a write began after the files were last saved.
    pub fn is_stale(&self) -> bool {
        self.dir.join(STALE).exists()
    }

    /// The index as last saved, when it is current: no marker, both files whole, and the
    /// delta built on this base. `None` otherwise (the caller rebuilds from the store).
    pub fn load(&self) -> Option<HandoffIndex> {
        if self.is_stale() {
            return None;
        }
        self.load_behind()
    }

    /// The index as last saved, marker or not: for the writer that set the marker, which
    /// knows what it wrote since.
    pub fn load_behind(&self) -> Option<HandoffIndex> {
        let base = std::fs::File::open(self.dir.join(BASE)).ok()?;
        // SAFETY: eywa replaces these files by rename and never writes into them, so the
        // mapped bytes cannot change under us; `Segment::open` checks every offset.
        let map = unsafe { memmap2::Mmap::map(&base) }.ok()?;
        let base = Segment::open(Box::new(map)).ok()?;
        let delta = std::fs::read(self.dir.join(DELTA)).ok()?;
        let delta = Segment::open(Box::new(delta)).ok()?;
        if delta.base_generation() != base.generation() {
            // A writer replaced the base between our two reads.
            return None;
        }
        Some(HandoffIndex::from_segments(base.into(), delta))
    }

    /// Marks the files as behind the store, durably, before a handoff is written.
    pub fn mark_stale(&self) -> Result<()> {
        crate::fs::create_private_dir(&self.dir)?;
        let marker = self.dir.join(STALE);
        let file = std::fs::File::create(&marker).map_err(Error::io(&marker))?;
        file.sync_all().map_err(Error::io(&marker))?;
        crate::fs::sync_dir(&self.dir)
    }

    /// Writes `index` (its delta, and its base when `rebuilt` says so), then clears the
    /// marker. Call only once the store holds everything the index describes.
    pub fn save(&self, index: &HandoffIndex, rebuilt: Rebuilt) -> Result<()> {
        crate::fs::create_private_dir(&self.dir)?;
        let base_path = self.dir.join(BASE);
        if rebuilt == Rebuilt::Base || !base_path.exists() {
            crate::fs::write_private_atomically(&base_path, index.base().bytes())?;
        }
        crate::fs::write_private_atomically(&self.dir.join(DELTA), index.delta().bytes())?;
        let marker = self.dir.join(STALE);
        match std::fs::remove_file(&marker) {
            Ok(()) => crate::fs::sync_dir(&self.dir),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(&marker)(e)),
        }
    }
}
