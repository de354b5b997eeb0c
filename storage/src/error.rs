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
    #[error("sled failed")]
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
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
