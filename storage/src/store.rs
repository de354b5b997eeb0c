//! The store: opening a warm tier (fjall keyspaces) with its lock and format check,
//! reads, batches, flushing, and the tiers beside it.

use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fjall::{AbstractTree, PartitionHandle, PersistMode};
use serde::de::DeserializeOwned;

use crate::tier::TierSums;
use crate::{Batch, BlobStore, Config, Error, Keyspace, Result, codec};

mod files;
mod migrate;
mod tiers;

use self::files::{
    TempDirGuard, begin_keyspace, build_keyspace, copy_entries, end_keyspace, lock_store,
    open_keyspace,
};
pub(crate) use crate::dirs::create_private_dir;

pub use migrate::Moved;

/// The on-disk layout version this build reads and writes. Bump it with every change to
/// keys or values that an older reader would misread, and teach `Store::open` to bring
/// the older layout up to it.
///
/// - 1: the first layout.
/// - 2: values are compact MessagePack (arrays, not maps with field names: old values read
///   the same), and the never-read `edges_by_relation` index is gone.
/// - 3: an edge's latest version lives in its `edges_by_src` entry, no longer also in
///   `edges` (the graph moves them when it opens a store of layout 2).
/// - 4: the warm tier is a fjall keyspace in `keyspaces/` instead of a sled database in
///   `warm/` (the same keys and values; a sled store is copied over when opened).
pub const FORMAT_VERSION: u32 = 4;

const FORMAT_KEY: &[u8] = b"format_version";

/// Entries per batch when the warm tier is copied.
const COPY_BATCH: usize = 10_000;

/// The longest key the warm tier takes (fjall's limit, `u16::MAX`); the shortest is one
/// byte. fjall asserts it on reads as well as writes, so a read of a longer key (a name a
/// request made up) is answered here as the miss it is, never handed on.
pub const MAX_KEY_LEN: usize = 65_535;

/// Whether `key` can be stored: a read of any other key finds nothing.
fn storable(key: &[u8]) -> bool {
    !key.is_empty() && key.len() <= MAX_KEY_LEN
}

/// How often [`Store::open`] retries a locked store.
const LOCK_RETRY_INTERVAL: Duration = Duration::from_millis(10);

/// The warm tier: one fjall partition per [`Keyspace`], under the store directory.
const KEYSPACES_DIR: &str = "keyspaces";
/// A warm tier being created, renamed to [`KEYSPACES_DIR`] when whole.
const NEW_KEYSPACES_DIR: &str = "keyspaces.new";
/// Present while an empty warm tier is laid out in place: one found on open was cut
/// short, and is laid out again.
const CREATING_MARKER: &str = "keyspaces.creating";
/// The content-addressed blob files (cold tier), under the store directory.
const COLD_DIR: &str = "cold";
/// The file a process holds an exclusive lock on while it has the store open.
const LOCK_FILE: &str = "lock";

/// An open store: one fjall keyspace with one partition per [`Keyspace`] in
/// `<path>/keyspaces`, and the blob files of the cold tier in `<path>/cold`.
#[derive(Clone)]
pub struct Store {
    warm: Arc<Warm>,
    blobs: BlobStore,
    // Held while blobs are written and recorded, and while orphans are removed, so that a
    // blob between its `put` and its record is never taken for an orphan.
    blob_gate: Arc<Mutex<()>>,
    path: PathBuf,
    /// Bytes that must stay free on the disk for a write batch to start.
    min_free: u64,
    /// What opening copied from a sled store of an earlier layout, if it did.
    moved: Option<migrate::Moved>,
    // Keeps a temporary store's directory alive as long as the store.
    _temp_dir: Option<Arc<TempDirGuard>>,
}

/// The warm tier and the lock that makes it this process's.
struct Warm {
    keyspace: fjall::Keyspace,
    partitions: Vec<PartitionHandle>,
    /// Held by every write: a guarded batch reads its guard and commits with no write in
    /// between.
    writer: Mutex<()>,
    /// The tiers' sums, kept by every write once [`Store::tier_stats`] counted them.
    tiers: Mutex<TierSums>,
    /// Held while the tiers are counted: one count at a time.
    tier_count: Mutex<()>,
    /// Something was written since the last settle: a settle with nothing to write
    /// returns at once (a follower's idle poll settles every time).
    written: std::sync::atomic::AtomicBool,
    // Dropped last: the lock outlives the keyspace's files being written.
    _lock: std::fs::File,
}

impl Drop for Warm {
    /// Writes what the memtables hold to the partitions' files, so the next process to
    /// open the store does not replay the journal first.
    fn drop(&mut self) {
        let _ = self.settle();
    }
}

impl Warm {
    /// Hands what the memtables hold to fjall's flush thread, waits up to
    /// [`SETTLE_WAIT`] for it to land in the partitions' files, and syncs the journal. A
    /// flush that cannot land (a full disk) is left to the journal, which holds it too.
    fn settle(&self) -> fjall::Result<()> {
        if !self
            .written
            .swap(false, std::sync::atomic::Ordering::AcqRel)
        {
            return Ok(());
        }
        for partition in &self.partitions {
            partition.rotate_memtable()?;
        }
        let deadline = Instant::now() + SETTLE_WAIT;
        while Instant::now() < deadline
            && self
                .partitions
                .iter()
                .any(|p| p.tree.sealed_memtable_count() > 0)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.keyspace.persist(PersistMode::SyncAll)
    }
}

/// How large a partition's memtable grows before the writer seals it for flushing: small
/// enough that the few partitions an ingest fills at once stay well inside the write
/// buffer, large enough that flushes write segments of a few MiB.
const MEMTABLE_SHARE: u32 = 4 * 1024 * 1024;

/// How long closing or flushing the store waits for memtables to reach their files: a
/// full write buffer (32 MiB) takes well under a second.
const SETTLE_WAIT: Duration = Duration::from_secs(5);

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
        let lock = lock_store(&path, Duration::from_millis(config.lock_wait_ms))?;
        // Only now that the lock is held: another process may be writing these.
        let moved = migrate::from_sled(&path, config)?;
        let dir = path.join(KEYSPACES_DIR);
        // A temporary store is gone after a crash anyway.
        let creating = !config.temporary && begin_keyspace(&path)?;
        let keyspace = open_keyspace(&dir, config)
            .map_err(|e| crate::error::fjall_error(e, &path, config.min_free_bytes))?;
        let partitions = Keyspace::ALL
            .iter()
            .map(|ks| keyspace.open_partition(ks.name(), ks.create_options()))
            .collect::<Result<Vec<_>, _>>()?;
        if creating {
            keyspace
                .persist(PersistMode::SyncAll)
                .map_err(|e| crate::error::fjall_error(e, &path, config.min_free_bytes))?;
            end_keyspace(&path)?;
        }
        let blobs = BlobStore::init(path.join(COLD_DIR), config.min_free_bytes)?;
        let store = Store {
            min_free: config.min_free_bytes,
            warm: Arc::new(Warm {
                keyspace,
                partitions,
                writer: Mutex::new(()),
                tiers: Mutex::new(TierSums::Unknown),
                tier_count: Mutex::new(()),
                // What the journal replayed on open is settled once too.
                written: std::sync::atomic::AtomicBool::new(true),
                _lock: lock,
            }),
            blobs,
            blob_gate: Arc::new(Mutex::new(())),
            path,
            moved,
            _temp_dir: temp_dir,
        };
        store.check_format()?;
        Ok(store)
    }

    fn check_format(&self) -> Result<()> {
        if let Some(bytes) = self.get_raw(Keyspace::Settings, FORMAT_KEY)? {
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
                // Layouts 1 to 3 differ from this one in where they live (moved by
                // `migrate`) and in what the graph moves itself; values of layout 1
                // (named maps) decode as they are.
                self.write_format()?;
            }
            Ok(())
        } else {
            for keyspace in Keyspace::ALL {
                if !self.is_empty(keyspace) {
                    return Err(Error::MissingFormat);
                }
            }
            self.write_format()
        }
    }

    fn write_format(&self) -> Result<()> {
        let mut batch = Batch::new();
        batch.put_raw(
            Keyspace::Settings,
            FORMAT_KEY.to_vec(),
            codec::encode(Keyspace::Settings, &FORMAT_VERSION)?,
        );
        self.apply(batch)?;
        self.flush()?;
        Ok(())
    }

    /// What opening this store copied from a sled store of layouts 1 to 3 (`None` when it
    /// had nothing to move).
    pub fn moved_from_sled(&self) -> Option<migrate::Moved> {
        self.moved
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

    pub(crate) fn partition(&self, keyspace: Keyspace) -> &PartitionHandle {
        &self.warm.partitions[keyspace.index()]
    }

    /// Reads and decodes one value; a missing key is `Ok(None)`.
    pub fn get<V: DeserializeOwned>(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<V>> {
        if !storable(key) {
            return Ok(None);
        }
        match self.partition(keyspace).get(key)? {
            Some(bytes) => codec::decode(keyspace, &bytes).map(Some),
            None => Ok(None),
        }
    }

    /// Reads one value's bytes as written (for values that are not MessagePack, such as
    /// vectors); a missing key is `Ok(None)`.
    pub fn get_raw(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if !storable(key) {
            return Ok(None);
        }
        Ok(self.partition(keyspace).get(key)?.map(|v| v.to_vec()))
    }

    /// Whether `keyspace` holds `key`.
    pub fn contains(&self, keyspace: Keyspace, key: &[u8]) -> Result<bool> {
        if !storable(key) {
            return Ok(false);
        }
        Ok(self.partition(keyspace).contains_key(key)?)
    }

    /// Decoded `(key, value)` pairs whose key starts with `prefix`, in key order.
    pub fn scan<V: DeserializeOwned>(&self, keyspace: Keyspace, prefix: &[u8]) -> Scan<V> {
        Scan {
            keyspace,
            inner: if prefix.len() <= MAX_KEY_LEN {
                Box::new(self.partition(keyspace).prefix(prefix.to_vec()))
            } else {
                Box::new(std::iter::empty())
            },
            _value: PhantomData,
        }
    }

    /// Keys that start with `prefix`, in key order (for index keyspaces).
    pub fn keys(
        &self,
        keyspace: Keyspace,
        prefix: &[u8],
    ) -> impl DoubleEndedIterator<Item = Result<Vec<u8>>> + use<> {
        self.prefix(keyspace, prefix)
            .map(|kv| kv.map(|(k, _)| k.to_vec()).map_err(Error::from))
    }

    /// Raw `(key, value)` pairs whose key starts with `prefix`, in key order (for index
    /// keyspaces whose values are not MessagePack).
    pub fn entries(
        &self,
        keyspace: Keyspace,
        prefix: &[u8],
    ) -> impl DoubleEndedIterator<Item = Result<(Vec<u8>, Vec<u8>)>> + use<> {
        self.prefix(keyspace, prefix).map(|kv| {
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
        (start.len() <= MAX_KEY_LEN && end.len() <= MAX_KEY_LEN)
            .then(|| self.partition(keyspace).range(start.to_vec()..end.to_vec()))
            .into_iter()
            .flatten()
            .map(|kv| kv.map(|(k, _)| k.to_vec()).map_err(Error::from))
    }

    /// The pairs under `prefix`; none when no key can start with it.
    fn prefix(
        &self,
        keyspace: Keyspace,
        prefix: &[u8],
    ) -> impl DoubleEndedIterator<Item = fjall::Result<fjall::KvPair>> + use<> {
        (prefix.len() <= MAX_KEY_LEN)
            .then(|| self.partition(keyspace).prefix(prefix.to_vec()))
            .into_iter()
            .flatten()
    }

    /// Number of entries in a keyspace (walks it: O(n)). Stops at the first error.
    pub fn len(&self, keyspace: Keyspace) -> Result<usize> {
        Ok(self.partition(keyspace).len()?)
    }

    /// Whether a keyspace holds no entry (a keyspace that cannot be read counts as not
    /// empty).
    pub fn is_empty(&self, keyspace: Keyspace) -> bool {
        self.partition(keyspace).is_empty().unwrap_or(false)
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
    /// (`None`: absent), with no write in between. `Ok(false)`: it changed, nothing written.
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
        if let Some((keyspace, key, _)) = batch.ops.iter().find(|(_, key, _)| !storable(key)) {
            return Err(Error::KeyLength {
                keyspace: keyspace.name(),
                len: key.len(),
            });
        }
        self.ensure_room()?;
        let _writer = self
            .warm
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(Guard {
            keyspace,
            key,
            expected,
        }) = guard
        {
            let current = self.partition(keyspace).get(key)?;
            if current.as_deref() != expected {
                return Ok(false);
            }
        }
        // The last write to each key is the one that lands: a key written many times in a
        // batch (a shared entity, a marker) is written once.
        let mut last: std::collections::BTreeMap<(usize, &[u8]), Option<&[u8]>> =
            std::collections::BTreeMap::new();
        for (keyspace, key, value) in &batch.ops {
            last.insert((keyspace.index(), key.as_slice()), value.as_deref());
        }
        // Handed to the operating system before `apply` returns: a process that dies
        // afterwards loses nothing it applied (the periodic sync covers the machine).
        let mut write = self
            .warm
            .keyspace
            .batch()
            .durability(Some(PersistMode::Buffer));
        for (&(partition, key), value) in &last {
            let partition = &self.warm.partitions[partition];
            match value {
                Some(value) => write.insert(partition, key, *value),
                None => write.remove(partition, key),
            }
        }
        // A memtable past its share is handed to the flush thread now, by the writer:
        // left to fjall, it grows to 16 MiB and the write buffer (shared by every
        // partition) fills before fjall's monitor, every 250 ms, frees it, and each
        // commit in between sleeps 10 to 100 ms.
        let mut touched: Vec<usize> = last.keys().map(|&(partition, _)| partition).collect();
        touched.dedup();
        for partition in touched {
            let partition = &self.warm.partitions[partition];
            if partition.tree.active_memtable_size() > MEMTABLE_SHARE {
                partition
                    .rotate_memtable()
                    .map_err(|e| crate::error::fjall_error(e, &self.path, self.min_free))?;
            }
        }
        let tiers = self.tier_change(&last)?;
        write
            .commit()
            .map_err(|e| crate::error::fjall_error(e, &self.path, self.min_free))?;
        if let Some(change) = tiers {
            self.tier_sums().add(&change);
        }
        self.warm
            .written
            .store(true, std::sync::atomic::Ordering::Release);
        Ok(true)
    }

    /// Writes what the warm tier holds in memory to its files and syncs them; returns 0
    /// (the count callers printed when sled reported its flushed bytes).
    pub fn flush(&self) -> Result<usize> {
        self.warm
            .settle()
            .map_err(|e| crate::error::fjall_error(e, &self.path, self.min_free))?;
        Ok(0)
    }

    /// Copies the warm tier, as one snapshot, into a new store directory `to` (its
    /// `keyspaces/`): a copy of its files could catch a compaction half-way. Returns the
    /// bytes the copy takes on disk. The cold tier and anything else beside it are the
    /// caller's to copy (their files are written once and renamed into place).
    pub fn copy_warm_to(&self, to: &Path) -> Result<u64> {
        create_private_dir(to)?;
        let instant = self.warm.keyspace.instant();
        let config = Config {
            min_free_bytes: self.min_free,
            ..Config::default()
        };
        build_keyspace(to, &config, |copy, targets| {
            for (partition, target) in self.warm.partitions.iter().zip(targets) {
                let entries = partition.snapshot_at(instant).iter().map(|entry| {
                    entry.map_err(|e| {
                        crate::error::fjall_error(fjall::Error::Storage(e), to, self.min_free)
                    })
                });
                copy_entries(copy, target, entries)?;
            }
            Ok(())
        })
    }

    /// Whether an entry of the store directory belongs to the warm tier (its keyspace, one
    /// being made, its lock), which [`Store::copy_warm_to`] copies.
    pub fn is_warm_tier_file(name: &std::ffi::OsStr) -> bool {
        [KEYSPACES_DIR, NEW_KEYSPACES_DIR, CREATING_MARKER, LOCK_FILE]
            .iter()
            .any(|warm| name == *warm)
    }

    /// Bytes the warm tier uses on disk; blob files are not counted.
    pub fn size_on_disk(&self) -> Result<u64> {
        Ok(self.warm.keyspace.disk_space())
    }
}

/// A value a guarded batch expects to find unchanged.
#[derive(Clone, Copy)]
struct Guard<'a> {
    keyspace: Keyspace,
    key: &'a [u8],
    expected: Option<&'a [u8]>,
}

type Pairs = Box<dyn DoubleEndedIterator<Item = fjall::Result<fjall::KvPair>>>;

/// Iterator over decoded entries of one keyspace.
pub struct Scan<V> {
    keyspace: Keyspace,
    inner: Pairs,
    _value: PhantomData<fn() -> V>,
}

impl<V: DeserializeOwned> Scan<V> {
    fn decode(&self, entry: fjall::Result<fjall::KvPair>) -> Result<(Vec<u8>, V)> {
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

#[cfg(test)]
mod tests;
