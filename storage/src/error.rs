//! The storage layer's errors.

use std::path::PathBuf;

/// Errors of the storage layer. An error here means the store is unusable or the bytes on
/// disk are not what we wrote; expected outcomes (a missing key) are values, not errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Another process held the store's lock past [`crate::Config::lock_wait_ms`].
    #[error("store at {path} is in use by another process (is `eywa serve` running?)")]
    Locked {
        /// The store's directory.
        path: PathBuf,
    },
    /// Creating, locking, renaming or removing a file or directory of the store failed, or
    /// measuring its disk's free space did.
    #[error("cannot prepare the data directory {path}")]
    Io {
        /// The file or directory acted on (empty when the config named no path).
        path: PathBuf,
        /// The error the operation returned.
        #[source]
        source: std::io::Error,
    },
    /// A batch holds a key that is empty or longer than 65,536 bytes.
    #[error("a key in keyspace {keyspace} is {len} bytes; keys are 1 to 65,536 bytes")]
    KeyLength {
        /// Name of the keyspace the key was for.
        keyspace: &'static str,
        /// The key's length in bytes.
        len: usize,
    },
    /// An operation of the warm tier's fjall keyspace failed.
    #[error("the warm tier (fjall) failed")]
    Fjall(#[from] fjall::Error),
    /// Reading a sled store of layouts 1 to 3, to move it into fjall, failed.
    #[error("reading the store of an earlier layout (sled) failed")]
    Sled(#[from] sled::Error),
    /// The store records a format version newer than this build reads.
    #[error(
        "store format version {found} is newer than this eywa supports ({supported}); upgrade eywa"
    )]
    NewerFormat {
        /// Format version recorded in the store.
        found: u32,
        /// The newest version this build reads ([`crate::FORMAT_VERSION`]).
        supported: u32,
    },
    /// The store records a format version below 1, which no migration handles.
    #[error("store format version {found} is older than {supported} and cannot be migrated")]
    OlderFormat {
        /// Format version recorded in the store.
        found: u32,
        /// The version this build writes ([`crate::FORMAT_VERSION`]).
        supported: u32,
    },
    /// A keyspace holds entries but [`crate::Keyspace::Settings`] has no format version
    /// record.
    #[error("store holds data but no format version record; refusing to guess its layout")]
    MissingFormat,
    /// A value could not be encoded as MessagePack.
    #[error("cannot encode a value for keyspace {keyspace}")]
    Encode {
        /// Name of the keyspace the value was for.
        keyspace: &'static str,
        /// The encoder's error.
        #[source]
        source: rmp_serde::encode::Error,
    },
    /// A stored value does not decode as the type it was read as.
    #[error("corrupt value in keyspace {keyspace}")]
    Decode {
        /// Name of the keyspace the value was read from.
        keyspace: &'static str,
        /// The decoder's error.
        #[source]
        source: rmp_serde::decode::Error,
    },
    /// A stored key (or its value) does not have the layout its keyspace expects; raised by
    /// the callers that parse keys.
    #[error("corrupt key in keyspace {keyspace}: {reason}")]
    BadKey {
        /// Name of the keyspace the key was read from.
        keyspace: &'static str,
        /// What did not parse, e.g. `unexpected key layout`.
        reason: &'static str,
    },
    /// A blob hash given to the cold tier is not 64 lowercase hex digits.
    #[error("invalid blob hash {hash:?}: expected 64 lowercase hex characters")]
    BadBlobHash {
        /// The hash as given.
        hash: String,
    },
    /// Reading the input handed to [`crate::BlobStore::put`] failed.
    #[error("cannot read the input of a blob")]
    BlobInput(#[source] std::io::Error),
    /// Opening, writing, syncing, renaming or removing a blob file failed.
    #[error("i/o error on blob file {path}")]
    BlobIo {
        /// The blob file, its temporary file or its directory.
        path: PathBuf,
        /// The error the operation returned.
        #[source]
        source: std::io::Error,
    },
    /// A blob's content does not decompress, or does not hash to its name.
    #[error("blob {hash} does not decode to the content its hash names")]
    CorruptBlob {
        /// The blob's hash (its name).
        hash: String,
        /// The decompression error, or an [`std::io::ErrorKind::InvalidData`] error when the
        /// hash does not match.
        #[source]
        source: std::io::Error,
    },
    /// A cold chunk's blob is not in the cold tier.
    #[error("a cold chunk refers to blob {hash}, which is missing")]
    MissingBlob {
        /// Hash of the missing blob.
        hash: String,
    },
    /// A write was refused because the store's disk has less than the configured room free,
    /// or failed because the disk filled up.
    #[error(
        "the disk holding {path} is full: {} free, and eywa keeps {} free so that no write \
         stops half-way; free some space, or move the data dir to a larger disk (the floor \
         is --min-free-mb / EYWA_MIN_FREE_MB)",
        mib(*free), mib(*needed)
    )]
    DiskFull {
        /// The directory whose disk is full.
        path: PathBuf,
        /// Bytes free on that disk (0 when they could not be measured).
        free: u64,
        /// Bytes that must stay free ([`crate::Config::min_free_bytes`]).
        needed: u64,
    },
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Bytes free for this user on the disk holding `path`.
pub fn free_bytes(path: &std::path::Path) -> std::io::Result<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        // SAFETY: statvfs(3) fills the zeroed struct it is given from a NUL-terminated path.
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut stat) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        #[allow(clippy::unnecessary_cast)] // the field types differ between platforms
        Ok(stat.f_bavail as u64 * stat.f_frsize as u64)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(u64::MAX)
    }
}

/// `Ok` when the disk holding `path` has at least `needed` bytes free.
pub(crate) fn ensure_room(path: &std::path::Path, needed: u64) -> Result<()> {
    if needed == 0 {
        return Ok(());
    }
    let free = free_bytes(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if free < needed {
        return Err(Error::DiskFull {
            path: path.to_path_buf(),
            free,
            needed,
        });
    }
    Ok(())
}

/// A fjall error that is a full disk, as [`Error::DiskFull`]; others as they are.
pub(crate) fn fjall_error(error: fjall::Error, path: &std::path::Path, needed: u64) -> Error {
    let full = match &error {
        fjall::Error::Io(io) => io.kind() == std::io::ErrorKind::StorageFull,
        fjall::Error::Storage(fjall::LsmError::Io(io)) => {
            io.kind() == std::io::ErrorKind::StorageFull
        }
        _ => false,
    };
    match full {
        true => Error::DiskFull {
            path: path.to_path_buf(),
            free: free_bytes(path).unwrap_or(0),
            needed,
        },
        false => Error::Fjall(error),
    }
}

/// A result whose error defaults to [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
