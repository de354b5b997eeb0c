use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionError};

use crate::{Batch, Config, Error, Keyspace, Result, codec};

/// The on-disk layout version this build reads and writes. Bump it with every change to
/// keys or values that an older reader would misread.
pub const FORMAT_VERSION: u32 = 1;

const FORMAT_KEY: &[u8] = b"format_version";

/// An open store: one sled database with one tree per [`Keyspace`].
#[derive(Clone)]
pub struct Store {
    db: sled::Db,
    trees: Vec<sled::Tree>,
    path: PathBuf,
    // Keeps a temporary store's directory alive as long as the store.
    _temp_dir: Option<std::sync::Arc<TempDirGuard>>,
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
                (guard.0.clone(), Some(std::sync::Arc::new(guard)))
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
        let db = sled::Config::new()
            .path(&path)
            .cache_capacity(config.cache_capacity)
            .flush_every_ms(config.flush_every_ms)
            .open()
            .map_err(|e| match e {
                sled::Error::Io(io) if io.kind() == std::io::ErrorKind::WouldBlock => {
                    Error::Locked { path: path.clone() }
                }
                sled::Error::Io(io) if io.to_string().contains("lock") => {
                    Error::Locked { path: path.clone() }
                }
                other => Error::Sled(other),
            })?;
        let trees = Keyspace::ALL
            .iter()
            .map(|ks| db.open_tree(ks.name()))
            .collect::<Result<Vec<_>, _>>()?;
        let store = Store {
            db,
            trees,
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
                if found < FORMAT_VERSION {
                    return Err(Error::OlderFormat {
                        found,
                        supported: FORMAT_VERSION,
                    });
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

    /// The directory the store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn tree(&self, keyspace: Keyspace) -> &sled::Tree {
        &self.trees[keyspace.index()]
    }

    /// Reads and decodes one value; a missing key is `Ok(None)`.
    pub fn get<V: DeserializeOwned>(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<V>> {
        match self.tree(keyspace).get(key)? {
            Some(bytes) => codec::decode(keyspace, &bytes).map(Some),
            None => Ok(None),
        }
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

    /// Number of entries in a keyspace (walks the tree: O(n)).
    pub fn len(&self, keyspace: Keyspace) -> usize {
        self.tree(keyspace).len()
    }

    pub fn is_empty(&self, keyspace: Keyspace) -> bool {
        self.tree(keyspace).is_empty()
    }

    /// Applies every write of `batch` atomically across keyspaces.
    pub fn apply(&self, batch: Batch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let result: Result<(), TransactionError<()>> = self.trees.as_slice().transaction(|trees| {
            for (keyspace, key, value) in &batch.ops {
                let tree = &trees[keyspace.index()];
                match value {
                    Some(value) => {
                        tree.insert(key.as_slice(), value.as_slice())?;
                    }
                    None => {
                        tree.remove(key.as_slice())?;
                    }
                }
            }
            Ok::<(), ConflictableTransactionError<()>>(())
        });
        match result {
            Ok(()) => Ok(()),
            Err(TransactionError::Storage(e)) => Err(Error::Sled(e)),
            Err(TransactionError::Abort(())) => unreachable!("the batch never aborts"),
        }
    }

    /// Flushes dirty pages to disk; returns the bytes flushed.
    pub fn flush(&self) -> Result<usize> {
        Ok(self.db.flush()?)
    }

    /// Bytes sled uses on disk.
    pub fn size_on_disk(&self) -> Result<u64> {
        Ok(self.db.size_on_disk()?)
    }
}

/// Iterator over decoded entries of one keyspace.
pub struct Scan<V> {
    keyspace: Keyspace,
    inner: sled::Iter,
    _value: PhantomData<fn() -> V>,
}

impl<V: DeserializeOwned> Iterator for Scan<V> {
    type Item = Result<(Vec<u8>, V)>;

    fn next(&mut self) -> Option<Self::Item> {
        let (key, value) = match self.inner.next()? {
            Ok(kv) => kv,
            Err(e) => return Some(Err(e.into())),
        };
        Some(codec::decode(self.keyspace, &value).map(|v| (key.to_vec(), v)))
    }
}

fn create_private_dir(path: &Path) -> Result<()> {
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
