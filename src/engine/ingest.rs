use std::io::{Read, Write};
use std::time::{Duration, Instant, UNIX_EPOCH};

use eywa_storage::Batch;
use serde::Serialize;

use super::Engine;
use crate::claude::{SessionFile, read_transcript_from};
use crate::extract::session_facts;
use crate::graph::{Counts, SourceRecord};
use crate::model::Timestamp;
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
    /// Reads every new or changed session under the Claude dir into the graph, archiving
    /// each transcript's bytes in the cold tier as it goes. Malformed lines are skipped and
    /// counted; a file that cannot be read is logged and counted; a missing projects
    /// folder is an error. Sessions whose file is gone stay as they were.
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
        if self.graph.save_view()? {
            tracing::debug!("saved the graph view snapshot");
        }
        self.reload_handoffs()?;
        let idle = i64::from(self.config.chunk_idle_days) * 24 * 3600 * 1000;
        let swept = self.graph.store().sweep_chunks(idle, Timestamp::now().0)?;
        if swept.moved > 0 {
            tracing::info!(
                chunks = swept.moved,
                bytes = swept.bytes,
                "moved idle chunks to the cold tier"
            );
        }
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
        let known = self.graph.source(&path)?;
        if let Some(known) = &known
            && known.len == meta.len()
            && known.modified_ms == modified_ms
        {
            return Ok(FileOutcome::Unchanged);
        }
        // One pass over the file: parsed and archived (hashed, compressed) together, so the
        // archive is exactly what was parsed even while Claude Code appends.
        let source = std::fs::File::open(&file.path).map_err(Error::io(&file.path))?;
        let mut archive = self.graph.store().blobs().writer()?;
        let transcript = read_transcript_from(Tee::new(source, &mut archive), &file.session_id)
            .map_err(Error::io(&file.path))?;
        let blob = archive.finish()?;
        let facts = session_facts(file, &transcript);
        let record = SourceRecord {
            path,
            len: blob.raw_len,
            modified_ms,
            session_id: file.session_id.clone(),
            lines: transcript.lines,
            skipped_lines: transcript.skipped_lines,
            episode: facts.as_ref().map(|f| f.episode.id),
            archive: Some(blob.hash.clone()),
        };
        if transcript.skipped_lines > 0 {
            tracing::debug!(path = %record.path, skipped = transcript.skipped_lines, "skipped malformed lines");
        }
        let mut batch = Batch::new();
        batch.put_blob(&blob)?;
        self.graph.write_session(batch, facts.as_ref(), &record)?;
        if let Some(old) = known.and_then(|k| k.archive)
            && old != blob.hash
        {
            self.drop_archive_if_unused(&old)?;
        }
        Ok(FileOutcome::Read {
            episode: facts.is_some(),
        })
    }

    /// Removes an archive no source refers to any more (a transcript that grew has a new
    /// archive; the old one is history nothing points at).
    fn drop_archive_if_unused(&self, hash: &str) -> Result<()> {
        if self
            .graph
            .sources()?
            .iter()
            .any(|s| s.archive.as_deref() == Some(hash))
        {
            return Ok(());
        }
        let store = self.graph.store();
        let mut batch = Batch::new();
        batch.delete_blob(hash);
        store.apply(batch)?;
        store.blobs().delete(hash)?;
        Ok(())
    }
}

enum FileOutcome {
    Unchanged,
    Read { episode: bool },
}

/// Hands every byte read from `inner` to `sink` as well.
struct Tee<R, W> {
    inner: R,
    sink: W,
}

impl<R, W> Tee<R, W> {
    fn new(inner: R, sink: W) -> Self {
        Tee { inner, sink }
    }
}

impl<R: Read, W: Write> Read for Tee<R, W> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.sink.write_all(&buf[..n])?;
        Ok(n)
    }
}
