//! What an ingest run reports: the counts of what it read and what the store holds, the
//! files it read in part or not at all, and its progress while it runs.

use std::time::Duration;

use serde::Serialize;

use crate::extract::RedactionCounts;
use crate::graph::Counts;

/// What one ingest run did, and what the store holds after it.
#[derive(Debug, Clone, Serialize)]
pub struct IngestReport {
    /// Main session files found.
    pub files_scanned: u64,
    /// Files read this run (new or changed).
    pub files_read: u64,
    /// Files skipped because they had not changed since the last ingest.
    pub files_unchanged: u64,
    /// Files that could not be read (permissions, vanished mid-run).
    pub files_failed: u64,
    /// Files read this run that hold no user or assistant message.
    pub files_without_messages: u64,
    /// Subagent files found (`agent-*.jsonl`, root-level and in `<session>/subagents/`).
    pub agent_files_scanned: u64,
    /// Subagent files read this run.
    pub agent_files_read: u64,
    /// Secrets redacted from what this run read, per kind.
    pub redacted: RedactionCounts,
    /// Plan files found (`plans/*.md`).
    pub plans: u64,
    /// Project memory files found (`projects/*/memory/*.md`).
    pub memory_files: u64,
    /// `CLAUDE.md` files found (the user's and the projects'), read as procedural
    /// memories.
    pub claude_md_files: u64,
    /// Memories this run wrote or changed (from `CLAUDE.md` files and handoff insights).
    pub memories_written: u64,
    /// Files of followed folders (`eywa docs watch`) added or changed this run.
    pub documents_added: u64,
    /// Files of followed folders that cannot be read (an encrypted PDF, another kind).
    pub documents_failed: u64,
    /// Bytes read from sources this run: whole files, or what was appended to a file
    /// since the last run.
    pub bytes_read: u64,
    /// Files that shrank or were rewritten since the last run: read as new versions, what
    /// earlier versions said kept.
    pub files_versioned: u64,
    /// With a summarizer: the handoffs it wrote this run.
    pub summaries_made: u64,
    /// Handoffs taken from its cache (the same session asked again).
    pub summaries_cached: u64,
    /// Sessions that kept the deterministic handoff: the command failed, timed out or
    /// answered out of format.
    pub summaries_failed: u64,
    /// Sessions that kept it because the day's token cap was reached.
    pub summaries_capped: u64,
    /// Files this run read in part or not at all, by path: malformed lines, unreadable
    /// files, symlinks out of the Claude dir. At most [`SKIPPED_FILES_LISTED`];
    /// `files_skipped` counts them all.
    pub skipped_files: Vec<SkippedFile>,
    /// Files read in part or not at all, all of them counted.
    pub files_skipped: u64,
    /// Counts of the store after the run.
    pub counts: Counts,
    /// How long the run took (serialized in seconds).
    #[serde(serialize_with = "seconds")]
    pub elapsed: Duration,
}

impl IngestReport {
    /// The report of a run that found `files_scanned` main session files and did nothing
    /// yet.
    pub(super) fn empty(files_scanned: u64) -> Self {
        IngestReport {
            files_scanned,
            files_read: 0,
            files_unchanged: 0,
            files_failed: 0,
            files_without_messages: 0,
            agent_files_scanned: 0,
            agent_files_read: 0,
            redacted: RedactionCounts::default(),
            plans: 0,
            memory_files: 0,
            claude_md_files: 0,
            memories_written: 0,
            documents_added: 0,
            documents_failed: 0,
            bytes_read: 0,
            files_versioned: 0,
            summaries_made: 0,
            summaries_cached: 0,
            summaries_failed: 0,
            summaries_capped: 0,
            skipped_files: Vec::new(),
            files_skipped: 0,
            counts: Counts::default(),
            elapsed: Duration::ZERO,
        }
    }
}

/// A file an ingest run read in part, or not at all.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SkippedFile {
    /// The file's path.
    pub path: String,
    /// Lines skipped; 0 when the whole file was.
    pub lines: u64,
    /// The first skipped line's number and why, or why the file was not read.
    pub reason: String,
}

/// Files named in a report; more are counted.
pub const SKIPPED_FILES_LISTED: usize = 1_000;

/// Where an ingest run is, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Session and subagent files done so far, unchanged ones included.
    pub files_done: u64,
    /// Session and subagent files this run goes through.
    pub files_total: u64,
    /// Bytes of transcripts read so far this run (unchanged files are not read).
    pub bytes_read: u64,
    /// Time since the run started.
    pub elapsed: Duration,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}
