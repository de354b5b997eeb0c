//! What eywa knows of each source file it read (its size, times, archive, read state and
//! replaced versions), and finding the sources of sessions by id.

use eywa_storage::Keyspace;
use serde::{Deserialize, Serialize};

use super::Graph;
use crate::Result;
use crate::model::NodeId;

/// What eywa knows of a source file as last ingested, to skip it when unchanged and to
/// serve it after Claude Code deleted it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceRecord {
    /// The source's path: its key in the store, so not stored again in the value.
    #[serde(skip)]
    pub path: String,
    pub len: u64,
    pub modified_ms: i64,
    pub session_id: String,
    pub lines: u64,
    pub skipped_lines: u64,
    /// The Episode it yielded; `None` for files without a user or assistant message.
    pub episode: Option<NodeId>,
    /// sha256 of the raw bytes archived in the cold tier.
    #[serde(default)]
    pub archive: Option<String>,
    /// True for a subagent's own transcript.
    #[serde(default)]
    pub agent: bool,
    /// Subagent episodes this file yielded (its own, or its inline runs).
    #[serde(default)]
    pub agents: u64,
    /// Segments appended since the archive was written, in order (sha256 each): the file
    /// is `archive` followed by these.
    #[serde(default)]
    pub archive_tail: Vec<String>,
    /// The saved state of the last read (a blob), to go on from when the file grows.
    #[serde(default)]
    pub state: Option<String>,
    /// The file's inode and status-change time (ns) when read: a file replaced or written
    /// in place keeps neither, even with its size and mtime kept. 0 when not known
    /// (recorded before eywa kept them).
    #[serde(default)]
    pub inode: u64,
    #[serde(default)]
    pub changed_ns: i64,
    /// Bytes of earlier versions' lines the archive holds ahead of the file's own: the
    /// archive is those lines, then the file's bytes (`len` of them) as read.
    #[serde(default)]
    pub shift: u64,
    /// Versions of the file that a later one replaced (it shrank or was rewritten), oldest
    /// first.
    #[serde(default)]
    pub versions: Vec<SourceVersion>,
    /// The version of the extraction that read the file
    /// ([`EXTRACT_VERSION`](crate::extract::EXTRACT_VERSION)); a file read by an older
    /// one is read again whole, though it did not change. 0 in records written before.
    #[serde(default)]
    pub extracted: u32,
    /// The fingerprint of the session's `sessions-index.json` entry when it was read
    /// ([`IndexEntry::stamp`](crate::claude::IndexEntry::stamp); 0: none): a changed entry
    /// has the session read again.
    #[serde(default)]
    pub index_stamp: u64,
}

impl SourceRecord {
    /// The blobs the record refers to: its archive (base and segments), its read state
    /// and its versions' superseded lines.
    pub fn blobs(&self) -> impl Iterator<Item = &String> {
        self.archive
            .iter()
            .chain(&self.archive_tail)
            .chain(&self.state)
            .chain(self.versions.iter().filter_map(|v| v.superseded.as_ref()))
    }

    /// The archive holds more than the file as read: lines of earlier versions.
    pub fn has_history(&self) -> bool {
        self.shift > 0 || !self.versions.is_empty()
    }
}

/// A version of a source file that a later one replaced: the file shrank, or no longer
/// began with what was read. Its lines that the new file lacks stay in the archive; those
/// the new file holds in another form (the same uuid) are kept apart, superseded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceVersion {
    /// When the replacement was noticed (ms since the epoch).
    pub replaced_ms: i64,
    /// Bytes of the replaced file as read.
    pub len: u64,
    /// Its lines the new file lacks, kept in the archive.
    pub kept_lines: u64,
    /// Its lines the new file contradicts: a blob of them, and how many.
    pub superseded: Option<String>,
    pub superseded_lines: u64,
}

impl Graph {
    pub fn source(&self, path: &str) -> Result<Option<SourceRecord>> {
        let record: Option<SourceRecord> = self.store.get(Keyspace::Sources, path.as_bytes())?;
        Ok(record.map(|r| SourceRecord {
            path: path.to_owned(),
            ..r
        }))
    }

    /// Every source record.
    pub fn sources(&self) -> Result<Vec<SourceRecord>> {
        self.store
            .scan::<SourceRecord>(Keyspace::Sources, &[])
            .map(|r| {
                let (key, record) = r?;
                Ok(SourceRecord {
                    path: String::from_utf8_lossy(&key).into_owned(),
                    ..record
                })
            })
            .collect()
    }
}
