use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionError};

use crate::{Batch, BlobStore, Config, Error, Keyspace, Result, codec};

/// The on-disk layout version this build reads and writes. Bump it with every change to
/// keys or values that an older reader would misread, and teach [`Store::open`] to bring
/// the older layout up to it.
///
/// - 1: the first layout.
/// - 2: values are compact MessagePack (arrays, not maps with field names: old values read
///   the same), and the never-read `edges_by_relation` index is gone.
/// - 3: an edge's latest version lives in its `edges_by_src` entry, no longer also in
///   `edges` (the graph moves them when it opens a store of layout 2).
pub const FORMAT_VERSION: u32 = 3;

/// Trees of earlier layouts that this one no longer keeps.
const RETIRED_TREES: [&str; 1] = ["edges_by_relation"];

const FORMAT_KEY: &[u8] = b"format_version";

/// How often [`Store::open`] retries a locked store.
const LOCK_RETRY_INTERVAL: Duration = Duration::from_millis(10);

/// The sled database (warm tier), under the store directory.
const WARM_DIR: &str = "warm";
/// The content-addressed blob files (cold tier), under the store directory.
const COLD_DIR: &str = "cold";

/// An open store: one sled database with one tree per [`Keyspace`] in `<path>/warm`, and
/// the blob files of the cold tier in `<path>/cold`.
#[derive(Clone)]
pub struct Store {
    db: sled::Db,
    trees: Vec<sled::Tree>,
    blobs: BlobStore,
    // Held while blobs are written and recorded, and while orphans are removed, so that a
    // blob between its `put` and its record is never taken for an orphan.
    blob_gate: Arc<Mutex<()>>,
    path: PathBuf,
    /// Bytes that must stay free on the disk for a write batch to start.
    min_free: u64,
    // Keeps a temporary store's directory alive as long as the store.
    _temp_dir: Option<Arc<TempDirGuard>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    pub(crate) fn open(config: &Config) -> Result<Store> {
        let (path, temp_dir) = match (&config.path, config.temporary) {
            (_, true) => {
                let guard = TempDirGuard::new()?;
                (guard.0.clone(), Some(Arc::new(guard)))
            }
            (Some(path), false) => {
                create_private_dir(path)?;
                (path.clone(), None)
            }
            (None, false) => {
                return Err(Error::Io {
                    path: PathBuf::new(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "a store needs a path or temporary(true)",
                    ),
                });
            }
        };
        let warm = path.join(WARM_DIR);
        create_private_dir(&warm)?;
        let sled_config = sled::Config::new()
            .path(&warm)
            .cache_capacity(config.cache_capacity)
            .flush_every_ms(config.flush_every_ms);
        // sled releases its file lock from a background thread shortly after the last
        // handle is dropped (spacejam/sled#1289), so a store closed a moment ago may still
        // look locked: retry for a while before calling it in use.
        let deadline = Instant::now() + Duration::from_millis(config.lock_wait_ms);
        let mut cleared = false;
        let db = loop {
            match sled_config.open() {
                Ok(db) => break db,
                Err(e) if is_lock_error(&e) => {
                    if Instant::now() >= deadline {
                        return Err(Error::Locked { path });
                    }
                    std::thread::sleep(LOCK_RETRY_INTERVAL);
                }
                // sled 0.34 takes an interrupted `snap.*.generating` (a snapshot cut short
                // by a full disk or a crash) for the newest snapshot and calls the store
                // corrupt. Its log is whole: without the partial file, open recovers.
                Err(sled::Error::Corruption { .. })
                    if !cleared && remove_interrupted_snapshots(&warm)? > 0 =>
                {
                    cleared = true;
                }
                Err(other) => {
                    return Err(crate::error::sled_error(
                        other,
                        &path,
                        config.min_free_bytes,
                    ));
                }
            }
        };
        let trees = Keyspace::ALL
            .iter()
            .map(|ks| db.open_tree(ks.name()))
            .collect::<Result<Vec<_>, _>>()?;
        // Only now that sled holds the lock: clearing `cold/tmp` earlier could delete the
        // half-written blobs of another process that has the store open.
        let blobs = BlobStore::init(path.join(COLD_DIR), config.min_free_bytes)?;
        let store = Store {
            min_free: config.min_free_bytes,
            db,
            trees,
            blobs,
            blob_gate: Arc::new(Mutex::new(())),
            path,
            _temp_dir: temp_dir,
        };
        store.check_format()?;
        Ok(store)
    }

    fn check_format(&self) -> Result<()> {
        let settings = self.tree(Keyspace::Settings);
        match settings.get(FORMAT_KEY)? {
            Some(bytes) => {
                let found: u32 = codec::decode(Keyspace::Settings, &bytes)?;
                if found > FORMAT_VERSION {
                    return Err(Error::NewerFormat {
                        found,
                        supported: FORMAT_VERSION,
                    });
                }
                if found < 1 {
                    return Err(Error::OlderFormat {
                        found,
                        supported: FORMAT_VERSION,
                    });
                }
                if found < FORMAT_VERSION {
                    self.upgrade(found)?;
                }
                Ok(())
            }
            None => {
                if self.trees.iter().any(|t| !t.is_empty()) {
                    return Err(Error::MissingFormat);
                }
                let bytes = codec::encode(Keyspace::Settings, &FORMAT_VERSION)?;
                settings.insert(FORMAT_KEY, bytes)?;
                self.db.flush()?;
                Ok(())
            }
        }
    }

    /// Brings a store of layout `found` to this one. Each step is idempotent, so a crash
    /// part-way is finished by the next open; the version is written last.
    fn upgrade(&self, found: u32) -> Result<()> {
        if found < 2 {
            // Values of layout 1 (named maps) decode as they are; only the retired index
            // goes.
            for tree in RETIRED_TREES {
                self.db.drop_tree(tree)?;
            }
        }
        let bytes = codec::encode(Keyspace::Settings, &FORMAT_VERSION)?;
        self.tree(Keyspace::Settings).insert(FORMAT_KEY, bytes)?;
        self.db.flush()?;
        Ok(())
    }

    /// The directory the store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The cold tier: content-addressed, zstd-compressed blob files.
    pub fn blobs(&self) -> &BlobStore {
        &self.blobs
    }

    /// Serializes writers of blobs with [`Store::remove_orphan_blobs`].
    pub(crate) fn lock_blob_gate(&self) -> std::sync::MutexGuard<'_, ()> {
        self.blob_gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn tree(&self, keyspace: Keyspace) -> &sled::Tree {
        &self.trees[keyspace.index()]
    }

    /// Reads and decodes one value; a missing key is `Ok(None)`.
    pub fn get<V: DeserializeOwned>(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<V>> {
        match self.tree(keyspace).get(key)? {
            Some(bytes) => codec::decode(keyspace, &bytes).map(Some),
            None => Ok(None),
        }
    }

    /// Reads one value's bytes as written (for values that are not MessagePack, such as
    /// vectors); a missing key is `Ok(None)`.
    pub fn get_raw(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.tree(keyspace).get(key)?.map(|v| v.to_vec()))
    }

    pub fn contains(&self, keyspace: Keyspace, key: &[u8]) -> Result<bool> {
        Ok(self.tree(keyspace).contains_key(key)?)
    }

    /// Decoded `(key, value)` pairs whose key starts with `prefix`, in key order.
    pub fn scan<V: DeserializeOwned>(&self, keyspace: Keyspace, prefix: &[u8]) -> Scan<V> {
        Scan {
            keyspace,
            inner: self.tree(keyspace).scan_prefix(prefix),
            _value: PhantomData,
        }
    }

    /// Keys that start with `prefix`, in key order (for index keyspaces).
    pub fn keys(
        &self,
        keyspace: Keyspace,
        prefix: &[u8],
    ) -> impl DoubleEndedIterator<Item = Result<Vec<u8>>> + use<> {
        self.tree(keyspace)
            .scan_prefix(prefix)
            .keys()
            .map(|k| k.map(|k| k.to_vec()).map_err(Error::from))
    }

    /// Raw `(key, value)` pairs whose key starts with `prefix`, in key order (for index
    /// keyspaces whose values are not MessagePack).
    pub fn entries(
        &self,
        keyspace: Keyspace,
        prefix: &[u8],
    ) -> impl DoubleEndedIterator<Item = Result<(Vec<u8>, Vec<u8>)>> + use<> {
        self.tree(keyspace).scan_prefix(prefix).map(|kv| {
            kv.map(|(k, v)| (k.to_vec(), v.to_vec()))
                .map_err(Error::from)
        })
    }

    /// Keys within `[start, end)`, in key order.
    pub fn key_range(
        &self,
        keyspace: Keyspace,
        start: &[u8],
        end: &[u8],
    ) -> impl DoubleEndedIterator<Item = Result<Vec<u8>>> + use<> {
        self.tree(keyspace)
            .range(start.to_vec()..end.to_vec())
            .keys()
            .map(|k| k.map(|k| k.to_vec()).map_err(Error::from))
    }

    /// Number of entries in a keyspace (walks the tree: O(n)). Stops at the first error:
    /// sled's own count goes on retrying a read that fails for good (a split that cannot
    /// be written on a full disk), forever.
    pub fn len(&self, keyspace: Keyspace) -> Result<usize> {
        let mut n = 0;
        for key in self.tree(keyspace).iter().keys() {
            key?;
            n += 1;
        }
        Ok(n)
    }

    pub fn is_empty(&self, keyspace: Keyspace) -> bool {
        self.tree(keyspace).is_empty()
    }

    /// Applies every write of `batch` atomically across keyspaces.
    pub fn apply(&self, batch: Batch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let applied = self.apply_guarded(&batch, None)?;
        debug_assert!(applied, "an unguarded batch always applies");
        Ok(())
    }

    /// Applies `batch` only if the value under `key` in `keyspace` is still `expected`
    /// (`None`: absent), in the same transaction. `Ok(false)`: it changed, nothing written.
    pub(crate) fn apply_if_unchanged(
        &self,
        batch: &Batch,
        keyspace: Keyspace,
        key: &[u8],
        expected: Option<&[u8]>,
    ) -> Result<bool> {
        let guard = Guard {
            keyspace,
            key,
            expected,
        };
        self.apply_guarded(batch, Some(guard))
    }

    /// `Ok` when the store's disk has the configured room free; [`Error::DiskFull`], naming
    /// the path and the room needed, when not. Writes check it before they start.
    pub fn ensure_room(&self) -> Result<()> {
        crate::error::ensure_room(&self.path, self.min_free)
    }

    fn apply_guarded(&self, batch: &Batch, guard: Option<Guard<'_>>) -> Result<bool> {
        self.ensure_room()?;
        // The last write to each key is the one that lands: a key written many times in a
        // batch (a shared entity, a marker) costs sled one write. Applied tree by tree in
        // key order, so neighbouring writes share pages.
        let mut last: std::collections::BTreeMap<(usize, &[u8]), Option<&[u8]>> =
            std::collections::BTreeMap::new();
        for (keyspace, key, value) in &batch.ops {
            last.insert((keyspace.index(), key.as_slice()), value.as_deref());
        }
        // Only the trees the batch touches take part: a transaction costs per tree.
        let mut involved: Vec<usize> = last.keys().map(|(tree, _)| *tree).collect();
        if let Some(g) = &guard {
            involved.push(g.keyspace.index());
        }
        involved.sort_unstable();
        involved.dedup();
        let trees: Vec<sled::Tree> = involved.iter().map(|&i| self.trees[i].clone()).collect();
        let slot = |tree: usize| {
            involved
                .binary_search(&tree)
                .expect("every tree written is involved")
        };
        let result: Result<(), TransactionError<()>> = trees.as_slice().transaction(|trees| {
            if let Some(Guard {
                keyspace,
                key,
                expected,
            }) = guard
            {
                let current = trees[slot(keyspace.index())].get(key)?;
                if current.as_deref() != expected {
                    return Err(ConflictableTransactionError::Abort(()));
                }
            }
            for (&(tree, key), value) in &last {
                let tree = &trees[slot(tree)];
                match value {
                    Some(value) => {
                        tree.insert(key, *value)?;
                    }
                    None => {
                        tree.remove(key)?;
                    }
                }
            }
            Ok::<(), ConflictableTransactionError<()>>(())
        });
        match result {
            Ok(()) => Ok(true),
            Err(TransactionError::Abort(())) => Ok(false),
            Err(TransactionError::Storage(e)) => {
                Err(crate::error::sled_error(e, &self.path, self.min_free))
            }
        }
    }

    /// Flushes dirty pages to disk; returns the bytes flushed.
    pub fn flush(&self) -> Result<usize> {
        self.db
            .flush()
            .map_err(|e| crate::error::sled_error(e, &self.path, self.min_free))
    }

    /// Bytes sled (the warm tier) uses on disk; blob files are not counted.
    pub fn size_on_disk(&self) -> Result<u64> {
        Ok(self.db.size_on_disk()?)
    }
}

/// A value a guarded batch expects to find unchanged.
#[derive(Clone, Copy)]
struct Guard<'a> {
    keyspace: Keyspace,
    key: &'a [u8],
    expected: Option<&'a [u8]>,
}

/// Iterator over decoded entries of one keyspace.
pub struct Scan<V> {
    keyspace: Keyspace,
    inner: sled::Iter,
    _value: PhantomData<fn() -> V>,
}

impl<V: DeserializeOwned> Scan<V> {
    fn decode(&self, entry: sled::Result<(sled::IVec, sled::IVec)>) -> Result<(Vec<u8>, V)> {
        let (key, value) = entry?;
        codec::decode(self.keyspace, &value).map(|v| (key.to_vec(), v))
    }
}

impl<V: DeserializeOwned> Iterator for Scan<V> {
    type Item = Result<(Vec<u8>, V)>;

    fn next(&mut self) -> Option<Self::Item> {
        let entry = self.inner.next()?;
        Some(self.decode(entry))
    }
}

impl<V: DeserializeOwned> DoubleEndedIterator for Scan<V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let entry = self.inner.next_back()?;
        Some(self.decode(entry))
    }
}

fn is_lock_error(error: &sled::Error) -> bool {
    match error {
        sled::Error::Io(io) => {
            io.kind() == std::io::ErrorKind::WouldBlock || io.to_string().contains("lock")
        }
        _ => false,
    }
}

/// Creates `path` and its parents, and makes `path` itself accessible to its owner only.
pub(crate) fn create_private_dir(path: &Path) -> Result<()> {
    let io_err = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(path).map_err(io_err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).map_err(io_err)?;
    }
    Ok(())
}

/// A directory under the system temp dir, removed on drop.
struct TempDirGuard(PathBuf);

impl TempDirGuard {
    fn new() -> Result<Self> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let name = format!(
            "eywa-store-{}-{}-{}",
            std::process::id(),
            nanos,
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        create_private_dir(&path)?;
        Ok(TempDirGuard(path))
    }
}

impl Drop for TempDirGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests;

/// Removes `snap.*.generating` files from sled's directory: snapshots a full disk or a
/// crash cut short (sled renames a finished one). Called only when sled, holding the
/// store's lock, has just refused the store as corrupt. Returns how many it removed.
fn remove_interrupted_snapshots(warm: &Path) -> Result<usize> {
    let io = |source| Error::Io {
        path: warm.to_path_buf(),
        source,
    };
    let mut removed = 0;
    for entry in std::fs::read_dir(warm).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("snap.") && name.ends_with(".generating") {
            std::fs::remove_file(&path).map_err(io)?;
            removed += 1;
        }
    }
    Ok(removed)
}
