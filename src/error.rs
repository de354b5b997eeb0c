use std::path::PathBuf;

/// Errors of the eywa library. Each maps onto one gRPC status in `api`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Storage(#[from] eywa_storage::Error),
    #[error("cannot access {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no Claude Code projects folder at {path} (set EYWA_CLAUDE_DIR or --claude-dir)")]
    ClaudeDirMissing { path: PathBuf },
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    NotFound(String),
    /// The request cannot be carried out in the current state (a migration target exists).
    #[error("{0}")]
    FailedPrecondition(String),
    /// The full-text index failed (its files are damaged, or the disk is full).
    #[error("text index: {0}")]
    Index(String),
    /// The embedding model could not be loaded or run.
    #[error("embedding model: {0}")]
    Embedding(String),
    /// The vector index failed.
    #[error("vector index: {0}")]
    VectorIndex(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}
