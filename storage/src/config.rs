use std::path::{Path, PathBuf};

use crate::{Result, Store};

/// How to open a [`Store`]. All defaults live in [`Default`].
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) path: Option<PathBuf>,
    pub(crate) temporary: bool,
    /// Bytes of sled page cache.
    pub(crate) cache_capacity: u64,
    /// How often sled flushes in the background, in milliseconds.
    pub(crate) flush_every_ms: Option<u64>,
    /// How long opening waits for a locked store before [`crate::Error::Locked`], in
    /// milliseconds.
    pub(crate) lock_wait_ms: u64,
    /// Bytes that must stay free on the store's disk: a write batch or a blob that would
    /// start below it is refused ([`crate::Error::DiskFull`]).
    pub(crate) min_free_bytes: u64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            path: None,
            temporary: false,
            // 64 MiB. Walks and `get` read eywa's own in-memory indexes, not sled's pages,
            // and sled's heap runs well past this figure (its pages, page table and
            // transactions): at 256 MiB a 100k-session import peaked at 541 MiB RSS, at
            // 64 MiB at 485 MiB, in the same 12.5 s; small-session ingest ran at the same
            // rate (`benches/README.md`).
            cache_capacity: 64 * 1024 * 1024,
            // 500 ms, sled's own default.
            flush_every_ms: Some(500),
            // 1 s: sled frees the lock of a store dropped a moment ago within milliseconds,
            // a store held by a running process never.
            lock_wait_ms: 1000,
            min_free_bytes: Self::DEFAULT_MIN_FREE_BYTES,
        }
    }
}

impl Config {
    /// 64 MiB: room for sled's next log segments, a snapshot and a large transcript's blob.
    pub const DEFAULT_MIN_FREE_BYTES: u64 = 64 * 1024 * 1024;

    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes that must stay free on the store's disk (0: no floor).
    pub fn min_free_bytes(mut self, bytes: u64) -> Self {
        self.min_free_bytes = bytes;
        self
    }

    /// The directory of the store: sled in `warm/`, blob files in `cold/`. Created (mode
    /// 0700) if missing.
    pub fn path(mut self, path: impl AsRef<Path>) -> Self {
        self.path = Some(path.as_ref().to_path_buf());
        self
    }

    /// A store that lives in a fresh temporary directory and is removed when dropped.
    pub fn temporary(mut self, temporary: bool) -> Self {
        self.temporary = temporary;
        self
    }

    pub fn cache_capacity(mut self, bytes: u64) -> Self {
        self.cache_capacity = bytes;
        self
    }

    /// How long to wait for a store that is locked, in milliseconds (0: fail at once).
    pub fn lock_wait_ms(mut self, ms: u64) -> Self {
        self.lock_wait_ms = ms;
        self
    }

    pub fn open(&self) -> Result<Store> {
        Store::open(self)
    }
}
