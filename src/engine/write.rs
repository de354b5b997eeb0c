//! Writing through the engine: ingest, import and reindex runs, one at a time, and the
//! `get` index kept in step with what they wrote (see `crate::ingest`).

use std::path::Path;
use std::sync::Arc;

use super::Engine;
use crate::Result;
use crate::index::TextIndex;
use crate::ingest::{ImportReport, IngestReport, Progress, Sinks, Writer};
use crate::model::Handoff;
use crate::retrieve::HandoffIndex;
use crate::semantic::Semantic;

impl Engine {
    /// Reads every new or changed session under the Claude dir into the graph, archiving
    /// each transcript's bytes in the cold tier as it goes. Malformed lines are skipped and
    /// counted; a file that cannot be read is logged and counted; a missing projects
    /// folder is an error. Sessions whose file is gone stay as they were.
    pub fn ingest(&self) -> Result<IngestReport> {
        self.ingest_with_progress(&mut |_| {})
    }

    /// [`Engine::ingest`], calling `progress` after every file.
    pub fn ingest_with_progress(&self, progress: &mut dyn FnMut(Progress)) -> Result<IngestReport> {
        self.ingest_run(|writer| writer.run(progress))
    }

    /// Runs an ingest under the ingest lock.
    fn ingest_run(
        &self,
        run: impl for<'w> FnOnce(&'w Writer<'w>) -> Result<IngestReport>,
    ) -> Result<IngestReport> {
        let report = self.write(|writer| {
            let report = run(writer);
            if report.is_err() {
                // It may know lines of files whose group never landed: loaded again next
                // run. (Imports and reindexes record no one's lines.)
                writer.authors.forget();
            }
            report
        })?;
        let mut last = self
            .last_ingest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A watcher's look that found nothing new does not hide what the last read found.
        let read = report.files_read + report.agent_files_read + report.files_skipped;
        if last.is_none() || read > 0 {
            *last = Some((
                crate::model::Timestamp::now(),
                std::sync::Arc::new(report.clone()),
            ));
        }
        drop(last);
        Ok(report)
    }

    /// This process's last ingest run that ended well and read something (a `serve`'s
    /// first, or its watcher's latest that found news), and when it ended; `None` before
    /// one.
    pub fn last_ingest(&self) -> Option<(crate::model::Timestamp, std::sync::Arc<IngestReport>)> {
        self.last_ingest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Reads one session now (its transcript path, id, or a unique 8+ character prefix of
    /// one), with its subagents and the plans, and returns its handoff: what a hook at the
    /// end of a session, or `eywa_extract`, asks for. Unchanged files are not read again.
    pub fn ingest_session(&self, reference: &str) -> Result<SessionIngest> {
        let found = self
            .claude
            .find_session(reference)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::InvalidInput => crate::Error::InvalidArgument(e.to_string()),
                _ => crate::Error::Io {
                    path: self.claude.projects_dir(),
                    source: e,
                },
            })?;
        let Some(session) = found else {
            return Err(crate::Error::NotFound(format!(
                "no session transcript {reference} under {}",
                self.claude.projects_dir().display(),
                reference = crate::error::quote(reference)
            )));
        };
        let session_id = session.session_id.clone();
        let report = self.ingest_run(|writer| writer.run_session(session, &mut |_| {}))?;
        let handoff = self.graph().handoff(&session_id)?;
        Ok(SessionIngest {
            report,
            session_id,
            handoff,
        })
    }

    /// Imports the handoffs of an Eywa data folder. Each becomes an Episode (`eywa:<id8>`)
    /// that TOUCHED its projects, with its handoff, so `get` ranks it with the rest.
    /// Sessions already read from transcripts are left as they are; importing again
    /// changes nothing.
    pub fn import_eywa(&self, dir: &Path) -> Result<ImportReport> {
        self.write(|writer| writer.import(dir))
    }

    /// Rebuilds the text index from the store: every transcript from its archive, every
    /// session's handoff and labels, every plan and memory file. Waits for a running ingest.
    /// Returns the documents.
    pub fn reindex(&self) -> Result<u64> {
        // A closure: the method alone is not general over the writer's lifetime.
        #[allow(clippy::redundant_closure_for_method_calls)]
        self.write(|writer| writer.reindex())
    }

    /// Runs `job` under the one ingest lock. When it fails after writing handoffs it could
    /// not report, the `get` index is rebuilt from the store next time.
    pub(super) fn write<T>(
        &self,
        job: impl for<'w> FnOnce(&'w Writer<'w>) -> Result<T>,
    ) -> Result<T> {
        let _guard = self.ingest_lock.lock()?;
        // Caught up before the job: only what the job writes needs reading.
        let caught_up = self.grams_caught_up();
        self.graph.take_sources_written();
        let result = job(&self.writer());
        if result.is_err() {
            self.handoffs_lost();
        }
        if result.is_ok() {
            self.refresh_grams(caught_up);
        }
        result
    }

    /// Whether the trigram index holds every session the store does.
    fn grams_caught_up(&self) -> bool {
        let Ok(grams) = self.grams() else {
            return false;
        };
        match (grams.synced(), self.graph.sources_generation()) {
            (Ok(Some(synced)), Ok(generation)) => synced == generation,
            _ => false,
        }
    }

    /// Brings the trigram index up to what the job wrote: the sources it wrote when the
    /// index was caught up before, else every source that changed. A failure leaves it
    /// behind, which costs searches time, never results: what it lacks is read whole.
    fn refresh_grams(&self, caught_up: bool) {
        let library = self.library();
        let Some(grams) = library.grams else { return };
        let started = std::time::Instant::now();
        let written = self.graph.take_sources_written();
        let refreshed = if caught_up {
            library.refresh_grams_at(grams, &written)
        } else {
            library.refresh_grams(grams)
        };
        match refreshed {
            Ok(0) => {}
            Ok(read) => tracing::info!(
                sessions = read,
                ms = started.elapsed().as_millis() as u64,
                "indexed sessions' text for search"
            ),
            Err(e) => tracing::warn!(error = %e, "the trigram index was not brought up to date"),
        }
    }
}

impl Engine {
    /// What writes into this engine's store and indexes. Hold the ingest lock while it
    /// writes.
    pub(super) fn writer(&self) -> Writer<'_> {
        Writer {
            graph: &self.graph,
            claude: &self.claude,
            authors: &self.authors,
            sinks: self,
            data_dir: self.config.data_dir.as_deref(),
            chunk_idle_days: self.config.chunk_idle_days,
            last_sweep: &self.last_sweep,
            summarizer: self.config.summarizer.as_ref(),
            identity: &self.config.identity,
            pending: &self.pending,
            text_commits: &self.text_commits,
            deferred: &self.deferred,
        }
    }
}

impl Sinks for Engine {
    fn text(&self) -> Result<&TextIndex> {
        Engine::text(self)
    }

    fn semantic(&self) -> Result<&Semantic> {
        Engine::semantic(self)
    }

    fn handoffs_will_change(&self) -> Result<()> {
        Engine::handoffs_will_change(self)
    }

    fn handoffs_changed(&self, handoffs: &[Handoff]) -> Result<()> {
        Engine::handoffs_changed(self, handoffs)
    }

    fn handoff_index(&self) -> Result<Arc<HandoffIndex>> {
        Engine::handoff_index(self)
    }
}

/// What [`Engine::ingest_session`] read, and the session's handoff.
#[derive(Debug, Clone)]
pub struct SessionIngest {
    /// What the run read.
    pub report: IngestReport,
    /// The session's full id.
    pub session_id: String,
    /// Its handoff; `None` for a transcript with nothing to hand off yet.
    pub handoff: Option<Handoff>,
}

/// The least time between two commits of client writes: what comes meanwhile shares one.
const COMMIT_GAP: std::time::Duration = std::time::Duration::from_secs(1);
/// How often the committing thread looks whether the server stops.
const STOP_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// The receiving end of [`Engine::defer_text_commits`]: what wakes the thread that
/// commits client writes.
#[derive(Debug)]
pub struct TextCommitter(std::sync::mpsc::Receiver<()>);

impl Engine {
    /// From now on client writes (memories, documents) answer once searchable, without a
    /// commit of the text index of their own; [`Engine::run_text_committer`] commits them
    /// soon after, on a thread of its own (their pending marks hold them until then, see
    /// `ingest::text`). `serve` does this before it answers.
    pub fn defer_text_commits(&self) -> TextCommitter {
        TextCommitter(self.deferred.start())
    }

    /// Commits the text index within ~[`COMMIT_GAP`] after client writes, until `stop`;
    /// then hands commits back to the writes, and commits what is left.
    pub fn run_text_committer(
        &self,
        committer: TextCommitter,
        stop: &std::sync::atomic::AtomicBool,
    ) {
        use std::sync::mpsc::RecvTimeoutError;
        use std::time::Instant;
        let woken = committer.0;
        // Behind the writes and the reads it serves, ahead of the embedder.
        crate::priority::lower_to(crate::priority::READS);
        let mut last: Option<Instant> = None;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            match woken.recv_timeout(STOP_POLL) {
                Ok(()) => {}
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => break,
            }
            // What comes meanwhile shares the commit.
            if let Some(next) = last.map(|at| at + COMMIT_GAP) {
                while let Some(left) = next.checked_duration_since(Instant::now()) {
                    if let Err(RecvTimeoutError::Disconnected) = woken.recv_timeout(left) {
                        break;
                    }
                }
            }
            while woken.try_recv().is_ok() {}
            last = Some(Instant::now());
            self.commit_client_writes();
        }
        self.deferred.stop();
        self.commit_client_writes();
    }

    fn commit_client_writes(&self) {
        if let Err(e) = self.writer().commit_text_writes() {
            tracing::warn!(error = %e, "cannot commit the text index now; trying at the next write");
        }
    }
}
