//! How to open a store: its path, caches, free-space floor and lock wait.

use std::path::{Path, PathBuf};

use crate::{Result, Store};

/// How to open a [`Store`]. All defaults live in [`Default`].
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) path: Option<PathBuf>,
    pub(crate) temporary: bool,
    /// Bytes of the warm tier's block cache.
    pub(crate) cache_capacity: u64,
    /// How often the warm tier syncs its journal to disk in the background, in
    /// milliseconds (every write reaches the operating system before it returns).
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
            // 64 MiB. Walks and `get` read eywa's own in-memory indexes, not the warm
            // tier's blocks (`benches/README.md`).
            cache_capacity: 64 * 1024 * 1024,
            // 500 ms (fjall's syncing thread runs at most every 250 ms).
            flush_every_ms: Some(500),
            // 1 s: a store closed a moment ago is free within fjall's 250 ms shutdown, a
            // store held by a running process never.
            lock_wait_ms: 1000,
            min_free_bytes: Self::DEFAULT_MIN_FREE_BYTES,
        }
    }
}

impl Config {
    /// 64 MiB: room for the warm tier's next journal and flushed segments, and a large
    /// transcript's blob.
    pub const DEFAULT_MIN_FREE_BYTES: u64 = 64 * 1024 * 1024;

    /// The defaults, with neither a path nor `temporary(true)`: set one before [`Config::open`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes that must stay free on the store's disk (0: no floor).
    pub fn min_free_bytes(mut self, bytes: u64) -> Self {
        self.min_free_bytes = bytes;
        self
    }

    /// The directory of the store: the warm tier in `keyspaces/`, blob files in `cold/`. Created (mode
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

    /// Bytes of the warm tier's block cache (default 64 MiB).
    pub fn cache_capacity(mut self, bytes: u64) -> Self {
        self.cache_capacity = bytes;
        self
    }

    /// How long to wait for a store that is locked, in milliseconds (0: fail at once).
    pub fn lock_wait_ms(mut self, ms: u64) -> Self {
        self.lock_wait_ms = ms;
        self
    }

    /// Opens the store, creating it if missing and moving an older layout to the current one.
    pub fn open(&self) -> Result<Store> {
        Store::open(self)
    }
}
