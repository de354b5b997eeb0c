//! The store's files: opening and building fjall keyspaces, copying entries between them,
//! the lock that keeps a store to one process, and private directories.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fjall::{PartitionHandle, PersistMode};

use super::{
    COPY_BATCH, CREATING_MARKER, KEYSPACES_DIR, LOCK_FILE, LOCK_RETRY_INTERVAL, NEW_KEYSPACES_DIR,
};
use crate::dirs::create_private_dir;
use crate::{Config, Error, Keyspace, Result};

/// The warm tier's settings: a small block cache and write buffer (eywa's reads go to its
/// own in-memory indexes), a bounded journal (replayed on open), one flush and one
/// compaction thread (a 2-core machine also ingests), and a sync every `flush_every_ms`
/// (at most 250 ms).
pub(super) fn open_keyspace(dir: &Path, config: &Config) -> fjall::Result<fjall::Keyspace> {
    // fjall's syncing thread sleeps this long between syncs, and closing the keyspace waits
    // for it to wake: at most 250 ms, the interval of fjall's own monitor thread.
    let sync = config
        .flush_every_ms
        .map(|ms| u16::try_from(ms.min(250)).unwrap_or(250));
    fjall::Config::new(dir)
        .cache_size(config.cache_capacity)
        .max_write_buffer_size(32 * 1024 * 1024)
        .max_journaling_size(64 * 1024 * 1024)
        .flush_workers(1)
        .compaction_workers(1)
        .fsync_ms(sync)
        .open()
}

/// Readies `store` for an empty warm tier laid out in place, when it has none (or one
/// whose laying out was cut short, which is removed): marks it as being created and makes
/// its private directory. Returns whether it did; [`end_keyspace`] then ends the mark,
/// once fjall has laid the keyspace out and synced it. In place, not built beside and
/// renamed in as [`build_keyspace`] does: closing the built keyspace would wait for
/// fjall's monitor thread, a quarter second on every new store.
pub(super) fn begin_keyspace(store: &Path) -> Result<bool> {
    let dir = store.join(KEYSPACES_DIR);
    let marker = store.join(CREATING_MARKER);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let cut_short = marker.exists();
    if dir.exists() && !cut_short {
        return Ok(false);
    }
    if cut_short && dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.create(true).truncate(true).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(&marker).map_err(io(&marker))?;
    crate::dirs::sync_dir(store).map_err(io(store))?;
    create_private_dir(&dir)?;
    Ok(true)
}

/// Ends what [`begin_keyspace`] began: the warm tier in `store` is whole.
pub(super) fn end_keyspace(store: &Path) -> Result<()> {
    let marker = store.join(CREATING_MARKER);
    std::fs::remove_file(&marker).map_err(|source| Error::Io {
        path: marker.clone(),
        source,
    })?;
    crate::dirs::sync_dir(store).map_err(|source| Error::Io {
        path: store.to_path_buf(),
        source,
    })
}

/// Builds the warm tier of the store in `store` beside its place: every partition is
/// created, `fill` writes into them (in the order of [`Keyspace::ALL`]), and the whole is
/// synced and renamed in. A process killed while fjall lays out a new keyspace leaves files
/// that do not open; a leftover of such a kill is removed first. Returns the bytes the
/// new keyspace takes on disk.
pub(super) fn build_keyspace(
    store: &Path,
    config: &Config,
    fill: impl FnOnce(&fjall::Keyspace, &[PartitionHandle]) -> Result<()>,
) -> Result<u64> {
    let dir = store.join(KEYSPACES_DIR);
    let new = store.join(NEW_KEYSPACES_DIR);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    if new.exists() {
        std::fs::remove_dir_all(&new).map_err(io(&new))?;
    }
    // Made private before fjall writes into it; the rename keeps its mode.
    create_private_dir(&new)?;
    let fjall = |e| crate::error::fjall_error(e, store, config.min_free_bytes);
    let keyspace = open_keyspace(&new, config).map_err(fjall)?;
    let partitions = Keyspace::ALL
        .iter()
        .map(|ks| keyspace.open_partition(ks.name(), ks.create_options()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(fjall)?;
    fill(&keyspace, &partitions)?;
    keyspace.persist(PersistMode::SyncAll).map_err(fjall)?;
    let bytes = keyspace.disk_space();
    drop(partitions);
    drop(keyspace);
    std::fs::rename(&new, &dir).map_err(io(&dir))?;
    Ok(bytes)
}

/// Writes `entries` into `target` in batches of [`COPY_BATCH`]; returns how many.
pub(super) fn copy_entries<K, V>(
    keyspace: &fjall::Keyspace,
    target: &PartitionHandle,
    entries: impl Iterator<Item = Result<(K, V)>>,
) -> Result<u64>
where
    K: Into<fjall::UserKey>,
    V: Into<fjall::UserValue>,
{
    let mut copied = 0;
    let mut batch = keyspace.batch();
    for entry in entries {
        let (key, value) = entry?;
        batch.insert(target, key, value);
        copied += 1;
        if batch.len() == COPY_BATCH {
            std::mem::replace(&mut batch, keyspace.batch()).commit()?;
        }
    }
    batch.commit()?;
    Ok(copied)
}

/// Takes the store's lock file, retrying for `wait`: [`Error::Locked`] when another
/// process holds it.
pub(super) fn lock_store(path: &Path, wait: Duration) -> Result<std::fs::File> {
    let lock_path = path.join(LOCK_FILE);
    let io = |source| Error::Io {
        path: lock_path.clone(),
        source,
    };
    let mut options = std::fs::OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options.open(&lock_path).map_err(io)?;
    let deadline = Instant::now() + wait;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => {
                if Instant::now() >= deadline {
                    return Err(Error::Locked {
                        path: path.to_path_buf(),
                    });
                }
                std::thread::sleep(LOCK_RETRY_INTERVAL);
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
    }
}

/// A directory under the system temp dir, removed on drop.
pub(super) struct TempDirGuard(pub(super) PathBuf);

impl TempDirGuard {
    pub(super) fn new() -> Result<Self> {
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
