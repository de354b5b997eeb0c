use std::time::{Duration, Instant, UNIX_EPOCH};

use serde::Serialize;

use super::Engine;
use crate::claude::{SessionFile, read_transcript};
use crate::extract::session_facts;
use crate::graph::{Counts, SourceRecord};
use crate::{Error, Result};

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
    /// Counts of the store after the run.
    pub counts: Counts,
    #[serde(serialize_with = "seconds")]
    pub elapsed: Duration,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl Engine {
    /// Reads every new or changed session under the Claude dir into the graph. Malformed
    /// lines are skipped and counted; a file that cannot be read is logged and counted; a
    /// missing projects folder is an error.
    pub fn ingest(&self) -> Result<IngestReport> {
        let _guard = self
            .ingest_lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let started = Instant::now();
        let projects = self.claude.projects_dir();
        if !projects.is_dir() {
            return Err(Error::ClaudeDirMissing { path: projects });
        }
        let files = self.claude.session_files().map_err(Error::io(&projects))?;
        let mut report = IngestReport {
            files_scanned: files.len() as u64,
            files_read: 0,
            files_unchanged: 0,
            files_failed: 0,
            files_without_messages: 0,
            counts: Counts::default(),
            elapsed: Duration::ZERO,
        };
        for file in &files {
            match self.ingest_file(file) {
                Ok(FileOutcome::Unchanged) => report.files_unchanged += 1,
                Ok(FileOutcome::Read { episode }) => {
                    report.files_read += 1;
                    report.files_without_messages += u64::from(!episode);
                }
                Err(Error::Io { path, source }) => {
                    tracing::warn!(path = %path.display(), error = %source, "cannot read transcript");
                    report.files_failed += 1;
                }
                Err(other) => return Err(other),
            }
        }
        self.graph.store().flush()?;
        self.reload_handoffs()?;
        report.counts = self.graph.counts()?;
        report.elapsed = started.elapsed();
        tracing::info!(
            files = report.files_scanned,
            read = report.files_read,
            episodes = report.counts.episodes,
            skipped_lines = report.counts.skipped_lines,
            "ingest done"
        );
        Ok(report)
    }

    fn ingest_file(&self, file: &SessionFile) -> Result<FileOutcome> {
        let meta = std::fs::metadata(&file.path).map_err(Error::io(&file.path))?;
        let modified_ms = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let path = file.path.to_string_lossy().into_owned();
        if let Some(known) = self.graph.source(&path)?
            && known.len == meta.len()
            && known.modified_ms == modified_ms
        {
            return Ok(FileOutcome::Unchanged);
        }
        let transcript =
            read_transcript(&file.path, &file.session_id).map_err(Error::io(&file.path))?;
        let facts = session_facts(file, &transcript);
        let record = SourceRecord {
            path,
            len: meta.len(),
            modified_ms,
            session_id: file.session_id.clone(),
            lines: transcript.lines,
            skipped_lines: transcript.skipped_lines,
            episode: facts.as_ref().map(|f| f.episode.id),
        };
        if transcript.skipped_lines > 0 {
            tracing::debug!(path = %record.path, skipped = transcript.skipped_lines, "skipped malformed lines");
        }
        self.graph.write_session(facts.as_ref(), &record)?;
        Ok(FileOutcome::Read {
            episode: facts.is_some(),
        })
    }
}

enum FileOutcome {
    Unchanged,
    Read { episode: bool },
}
