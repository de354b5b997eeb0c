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
    #[error("cannot access {}", quote_path(path))]
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
    /// The work was cancelled (its caller stopped waiting, or the server is stopping);
    /// what it committed before stays.
    #[error("cancelled: the caller stopped waiting, or the server is stopping")]
    Cancelled,
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

/// `input` as an error message repeats it: in backticks, its first [`MAX_QUOTED`]
/// characters (then `…` and how many there were), a backtick in it read as `'` so that the
/// quotes pair, and control characters escaped (`\n`, `\u{1b}`) so that a message stays
/// one line whatever it quotes. Every input an error names goes through here.
pub fn quote(input: &str) -> Quoted<'_> {
    Quoted(input)
}

/// `input` cut to its first [`MAX_QUOTED`] characters, then `…` and how many there were,
/// for messages that quote it their own way (a command line's `'…'`).
pub fn shorten(input: &str) -> std::borrow::Cow<'_, str> {
    match input.char_indices().nth(MAX_QUOTED) {
        None => std::borrow::Cow::Borrowed(input),
        Some((end, _)) => std::borrow::Cow::Owned(format!(
            "{}… ({} characters)",
            &input[..end],
            input.chars().count()
        )),
    }
}

/// A path as an error message repeats it: see [`quote`].
pub fn quote_path(path: &std::path::Path) -> String {
    quote(&path.to_string_lossy()).to_string()
}

/// An input as an error quotes it; see [`quote`].
#[derive(Debug, Clone, Copy)]
pub struct Quoted<'a>(&'a str);

impl std::fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::fmt::Write as _;
        f.write_char('`')?;
        // Characters written between the backticks: escapes count as what they print.
        let mut written = 0;
        let mut escaped = String::new();
        for c in self.0.chars() {
            escaped.clear();
            match c {
                '`' => escaped.push('\''),
                c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => {
                    write!(escaped, "{}", c.escape_default())?;
                }
                c => escaped.push(c),
            }
            let n = escaped.chars().count();
            if written + n > MAX_QUOTED {
                return write!(f, "…` ({} characters)", self.0.chars().count());
            }
            f.write_str(&escaped)?;
            written += n;
        }
        f.write_char('`')
    }
}

/// An error message fit to send back: each backtick-quoted input of more than
/// [`MAX_QUOTED`] characters is cut to that many and says how long it was, and the whole
/// message to [`MAX_MESSAGE`] characters, what says it was cut included. A 1 MB query
/// must not come back as a 1 MB error. Inputs are quoted with [`quote`] where the error is
/// made; this is the last bound on what leaves (a status, a tool error, a line printed).
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
        // A quote made by [`quote`] is already cut: its 200 characters and the `…`.
        if chars > MAX_QUOTED && !(chars == MAX_QUOTED + 1 && quoted.ends_with('…')) {
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
        let tail = format!("… ({total} characters)");
        let mut cut: String = out
            .chars()
            .take(MAX_MESSAGE - tail.chars().count())
            .collect();
        cut.push_str(&tail);
        return std::borrow::Cow::Owned(cut);
    }
    if changed {
        std::borrow::Cow::Owned(out)
    } else {
        std::borrow::Cow::Borrowed(message)
    }
}

/// Most bytes of a status message: [`MAX_MESSAGE`] characters of four bytes each would
/// be 8,000 bytes, which gRPC's percent-encoding of the `grpc-message` header triples past
/// the 8 KiB of metadata clients accept.
pub const MAX_STATUS_BYTES: usize = 2_000;

/// [`bounded_message`], then at most [`MAX_STATUS_BYTES`] bytes (cut at a character).
pub fn status_message(message: &str) -> String {
    let bounded = bounded_message(message);
    if bounded.len() <= MAX_STATUS_BYTES {
        return bounded.into_owned();
    }
    let tail = "…";
    let mut end = MAX_STATUS_BYTES - tail.len();
    while !bounded.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{tail}", &bounded[..end])
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
        assert_eq!(bounded.chars().count(), MAX_MESSAGE);
        assert!(
            bounded.ends_with("… (1000013 characters)"),
            "{}",
            &bounded[1990..]
        );
        let status = status_message(&format!("`{}`", "😀".repeat(5_000)));
        assert!(status.len() <= MAX_STATUS_BYTES, "{}", status.len());
        // Multibyte characters are counted and cut whole.
        let wide = "é".repeat(300);
        let message = format!("`{wide}`");
        let bounded = bounded_message(&message);
        assert_eq!(bounded, format!("`{}…` (300 characters)", "é".repeat(200)));
    }

    #[test]
    fn quoted_inputs_are_cut_and_stay_on_one_line() {
        assert_eq!(quote("abc").to_string(), "`abc`");
        assert_eq!(quote("a`b\nc\u{1b}").to_string(), "`a'b\\nc\\u{1b}`");
        // Escapes count as what they print: a quote of 1,000 control characters is cut
        // once, to at most 200 characters, and a message bounds it no further.
        let controls = quote(&"\u{1}".repeat(1_000)).to_string();
        assert_eq!(
            controls,
            format!("`{}…` (1000 characters)", "\\u{1}".repeat(40))
        );
        assert_eq!(bounded_message(&controls), controls);
        let long = "😀".repeat(1_000);
        assert_eq!(
            quote(&long).to_string(),
            format!("`{}…` (1000 characters)", "😀".repeat(200))
        );
    }
}
