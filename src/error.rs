//! The library's errors, and bounding what an error message repeats of its input.

use std::path::PathBuf;

/// Errors of the eywa library. Each maps onto one gRPC status in `api`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The storage layer failed (other than a lock held or a full disk).
    #[error(transparent)]
    Storage(eywa_storage::Error),
    /// Another process holds the store (one process opens a store at a time).
    #[error("store at {path} is in use by another process (is `eywa serve` running?)")]
    StoreLocked {
        /// The store's folder.
        path: PathBuf,
    },
    /// A write was refused, or failed, for want of disk space; nothing was half-written.
    #[error(transparent)]
    DiskFull(eywa_storage::Error),
    /// A file or folder could not be read, written or created.
    #[error("cannot access {path}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The Claude dir has no `projects` folder to ingest.
    #[error("no Claude Code projects folder at {path} (set EYWA_CLAUDE_DIR or --claude-dir)")]
    ClaudeDirMissing {
        /// The `projects` folder looked for.
        path: PathBuf,
    },
    /// A request's argument is malformed or out of bounds; the message says which.
    #[error("{0}")]
    InvalidArgument(String),
    /// What a request names (a session, a node, a folder) does not exist.
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

/// A result whose error is eywa's [`Error`] unless given.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<eywa_storage::Error> for Error {
    /// What callers act on gets its own variant, so that they need not know the storage
    /// layer's errors.
    fn from(error: eywa_storage::Error) -> Self {
        match error {
            eywa_storage::Error::Locked { path } => Error::StoreLocked { path },
            full @ eywa_storage::Error::DiskFull { .. } => Error::DiskFull(full),
            other => Error::Storage(other),
        }
    }
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}

/// Most characters of one quoted input (`…` in backticks) an error message repeats.
pub const MAX_QUOTED: usize = 200;
/// Most characters of a whole error message.
pub const MAX_MESSAGE: usize = 2_000;

/// An error message fit to send back: each backtick-quoted input of more than
/// [`MAX_QUOTED`] characters is cut to that many and says how long it was, and the whole
/// message to [`MAX_MESSAGE`]. A 1 MB query must not come back as a 1 MB error.
pub fn bounded_message(message: &str) -> std::borrow::Cow<'_, str> {
    let mut out = String::new();
    let mut rest = message;
    let mut changed = false;
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else {
            break;
        };
        let quoted = &rest[open + 1..open + 1 + len];
        let chars = quoted.chars().count();
        out.push_str(&rest[..=open]);
        if chars > MAX_QUOTED {
            out.extend(quoted.chars().take(MAX_QUOTED));
            out.push_str(&format!("…` ({chars} characters"));
            out.push(')');
            // The closing backtick is written above.
            rest = &rest[open + 2 + len..];
            changed = true;
            continue;
        }
        out.push_str(quoted);
        out.push('`');
        rest = &rest[open + 2 + len..];
    }
    out.push_str(rest);
    let total = out.chars().count();
    if total > MAX_MESSAGE {
        let mut cut: String = out.chars().take(MAX_MESSAGE).collect();
        cut.push_str(&format!("… ({total} characters)"));
        return std::borrow::Cow::Owned(cut);
    }
    if changed {
        std::borrow::Cow::Owned(out)
    } else {
        std::borrow::Cow::Borrowed(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_quoted_inputs_and_long_messages_are_cut() {
        assert_eq!(bounded_message("no session `abc`"), "no session `abc`");
        let long = "x".repeat(1_000_000);
        let message = format!("no session `{long}` in `w`");
        let bounded = bounded_message(&message);
        assert_eq!(
            bounded,
            format!(
                "no session `{}…` (1000000 characters) in `w`",
                "x".repeat(200)
            )
        );
        let bare = format!("bad pattern: {long}");
        let bounded = bounded_message(&bare);
        assert!(
            bounded.chars().count() < MAX_MESSAGE + 40,
            "{}",
            bounded.len()
        );
        assert!(
            bounded.ends_with("… (1000013 characters)"),
            "{}",
            &bounded[1990..]
        );
        // Multibyte characters are counted and cut whole.
        let wide = "é".repeat(300);
        let message = format!("`{wide}`");
        let bounded = bounded_message(&message);
        assert_eq!(bounded, format!("`{}…` (300 characters)", "é".repeat(200)));
    }
}
