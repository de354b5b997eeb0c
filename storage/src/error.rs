use std::path::PathBuf;

/// Errors of the storage layer. An error here means the store is unusable or the bytes on
/// disk are not what we wrote; expected outcomes (a missing key) are values, not errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("store at {path} is in use by another process (is `eywa serve` running?)")]
    Locked { path: PathBuf },
    #[error("cannot prepare the data directory {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("a key in keyspace {keyspace} is {len} bytes; keys are 1 to 65,536 bytes")]
    KeyLength { keyspace: &'static str, len: usize },
    #[error("the warm tier (fjall) failed")]
    Fjall(#[from] fjall::Error),
    #[error("reading the store of an earlier layout (sled) failed")]
    Sled(#[from] sled::Error),
    #[error(
        "store format version {found} is newer than this eywa supports ({supported}); upgrade eywa"
    )]
    NewerFormat { found: u32, supported: u32 },
    #[error("store format version {found} is older than {supported} and cannot be migrated")]
    OlderFormat { found: u32, supported: u32 },
    #[error("store holds data but no format version record; refusing to guess its layout")]
    MissingFormat,
    #[error("cannot encode a value for keyspace {keyspace}")]
    Encode {
        keyspace: &'static str,
        #[source]
        source: rmp_serde::encode::Error,
    },
    #[error("corrupt value in keyspace {keyspace}")]
    Decode {
        keyspace: &'static str,
        #[source]
        source: rmp_serde::decode::Error,
    },
    #[error("corrupt key in keyspace {keyspace}: {reason}")]
    BadKey {
        keyspace: &'static str,
        reason: &'static str,
    },
    #[error("invalid blob hash {hash:?}: expected 64 lowercase hex characters")]
    BadBlobHash { hash: String },
    #[error("cannot read the input of a blob")]
    BlobInput(#[source] std::io::Error),
    #[error("i/o error on blob file {path}")]
    BlobIo {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("blob {hash} does not decode to the content its hash names")]
    CorruptBlob {
        hash: String,
        #[source]
        source: std::io::Error,
    },
    #[error("a cold chunk refers to blob {hash}, which is missing")]
    MissingBlob { hash: String },
    #[error(
        "the disk holding {path} is full: {} free, and eywa keeps {} free so that no write \
         stops half-way; free some space, or move the data dir to a larger disk (the floor \
         is --min-free-mb / EYWA_MIN_FREE_MB)",
        mib(*free), mib(*needed)
    )]
    DiskFull {
        path: PathBuf,
        free: u64,
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

pub type Result<T, E = Error> = std::result::Result<T, E>;
