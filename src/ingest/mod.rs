//! An ingest run: every new or changed file under the Claude dir read into the store, in
//! order (main sessions, subagents, plans and memory files), then the run's end.

mod agents;
mod ahead;
mod documents;
mod get_index;
mod group;
mod group_commit;
mod handoffs;
mod import;
mod index_only;
mod keys;
mod memories;
mod report;
mod scrub;
mod sessions;
mod summarize;
mod text;
pub(crate) mod upkeep;
mod user_documents;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Instant, UNIX_EPOCH};

pub(crate) use self::get_index::GetIndex;
use self::group::Group;
pub(crate) use self::group_commit::GroupCommit;
pub use self::import::ImportReport;
pub use self::report::{IngestReport, Progress, SKIPPED_FILES_LISTED, SkippedFile};
pub(crate) use self::scrub::{SCRUBBED, ScrubReport};
pub use self::summarize::Summarizer;
pub(crate) use self::text::{
    DIRTY as TEXT_DIRTY, Deferred, PendingText, mark_text_dirty, pending_marks,
};
pub(crate) use self::user_documents::{failed_documents, follow, followed_folders};
use crate::archive::{Archive, Authors, Stamp};
use crate::claude::{AgentFile, ClaudeDir, IndexEntry, SessionFile, Transcript};
use crate::extract::RedactionCounts;
use crate::graph::{Graph, SourceRecord};
use crate::index::TextIndex;
use crate::model::{Handoff, Timestamp};
use crate::retrieve::HandoffIndex;
use crate::semantic::Semantic;
use crate::{Error, Result};

/// How often a process moves idle chunks to the cold tier, at most (the first ingest of a
/// process always does): one hour, in milliseconds.
const SWEEP_EVERY_MS: i64 = 60 * 60 * 1000;

/// Chunks one sweep moves to the cold tier at most (each is a blob file, synced): the rest
/// go at the next sweep.
const SWEEP_AT_MOST: u64 = 10_000;

/// Counts the files a run has done and tells its progress after each.
struct Ticker<'p> {
    progress: &'p mut dyn FnMut(Progress),
    started: Instant,
    done: u64,
    total: u64,
}

impl Ticker<'_> {
    /// One more file done.
    fn tick(&mut self, run: &Run) {
        self.done += 1;
        (self.progress)(Progress {
            files_done: self.done,
            files_total: self.total,
            bytes_read: run.bytes_read,
            elapsed: self.started.elapsed(),
        });
    }
}

/// What a write run writes into beside the graph, kept by the engine: the indexes it
/// opens on first use, and the `get` index it keeps in step with the store.
pub(crate) trait Sinks: Sync {
    /// The full-text index.
    fn text(&self) -> Result<&TextIndex>;
    /// Semantic memory (its queue takes every chunk written).
    fn semantic(&self) -> Result<&Semantic>;
    /// Called before a handoff is written: the `get` index files fall behind the store.
    fn handoffs_will_change(&self) -> Result<()>;
    /// Called once the writes are flushed, with every handoff written.
    fn handoffs_changed(&self, handoffs: &[Handoff]) -> Result<()>;
    /// The `get` index as it is now.
    fn handoff_index(&self) -> Result<Arc<HandoffIndex>>;
}

/// A write run: what it reads from, and what it writes into. The caller holds the one
/// ingest lock for as long as it lives.
pub(crate) struct Writer<'e> {
    pub(crate) graph: &'e Graph,
    pub(crate) claude: &'e ClaudeDir,
    pub(crate) authors: &'e Authors,
    pub(crate) sinks: &'e dyn Sinks,
    /// Where handoff markdown files go; `None` keeps them in the graph only.
    pub(crate) data_dir: Option<&'e Path>,
    /// Chunks not read for this many days move to the cold tier at the end of a run.
    pub(crate) chunk_idle_days: u32,
    /// When this process last moved idle chunks (ms since the epoch; 0: not yet): the
    /// walk over every chunk runs at most hourly, not at each poll of a follower.
    pub(crate) last_sweep: &'e std::sync::atomic::AtomicI64,
    /// The command that writes handoffs, when one is set.
    pub(crate) summarizer: Option<&'e Summarizer>,
    /// Who the sessions it writes are attributed to.
    pub(crate) identity: &'e crate::model::Identity,
    /// Sources this process marked pending in the text index (see `text::PENDING`).
    pub(crate) pending: &'e std::sync::Mutex<Vec<PendingText>>,
    /// The text-index commits of this engine's writers, shared when they come at once.
    pub(crate) text_commits: &'e GroupCommit,
    /// Client writes made searchable now and committed soon after, while `serve` runs.
    pub(crate) deferred: &'e Deferred,
}

impl<'e> Writer<'e> {
    fn text(&self) -> Result<&'e TextIndex> {
        self.sinks.text()
    }

    fn semantic(&self) -> Result<&'e Semantic> {
        self.sinks.semantic()
    }

    /// The cold-tier history of the sources this run reads.
    fn archive(&self) -> Archive<'e> {
        Archive::new(self.graph)
    }

    /// Reads every new or changed session under the Claude dir into the graph, archiving
    /// each transcript's bytes in the cold tier as it goes (see `Engine::ingest`).
    pub(crate) fn run(&self, progress: &mut dyn FnMut(Progress)) -> Result<IngestReport> {
        self.run_over(None, progress)
    }

    /// Reads one session now, as a run over the whole Claude dir would: its transcript,
    /// its subagents' transcripts and the plans. Followed folders and project memory files
    /// wait for the next whole run.
    pub(crate) fn run_session(
        &self,
        session: SessionFile,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<IngestReport> {
        self.run_over(Some(session), progress)
    }

    fn run_over(
        &self,
        only: Option<SessionFile>,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<IngestReport> {
        let started = Instant::now();
        // Counters loaded before writing are kept in step by every batch.
        self.graph.counts()?;
        let projects = self.claude.projects_dir();
        if !projects.is_dir() {
            return Err(Error::ClaudeDirMissing { path: projects });
        }
        // Links refused by scans before this run (`eywa stats` lists nothing): not ours.
        self.claude.take_refused();
        let whole = only.is_none();
        let (mut files, agents) = match only {
            Some(session) => {
                let agents = self.claude.agent_files_of(&session);
                (vec![session], agents.map_err(Error::io(&projects))?)
            }
            None => (
                self.claude.session_files().map_err(Error::io(&projects))?,
                self.claude.agent_files().map_err(Error::io(&projects))?,
            ),
        };
        // Oldest first: a resumed session replays lines its predecessor wrote, and the
        // first writer of a message owns it.
        files.sort_by_cached_key(|f| (modified_ms(&f.path), f.path.clone()));
        let mut report = IngestReport::empty(files.len() as u64);
        self.authors.load(self.graph)?;
        if self.text_index_lags()? {
            let docs = self.reindex()?;
            tracing::info!(docs, "rebuilt the text index");
        }
        let mut run = Run {
            labels: self.graph.labels()?,
            index: self.claude.session_index().map_err(Error::io(&projects))?,
            ..Run::default()
        };
        self.assign_keys(&mut files, &mut run)?;
        let mut ticker = Ticker {
            progress,
            started,
            done: 0,
            total: (files.len() + agents.len()) as u64,
        };
        // Parents first: an agent file then finds its parent and the call that started it.
        let mut group = Group::default();
        self.ingest_sessions(&files, &mut run, &mut group, &mut report, &mut ticker)?;
        // Sessions that later files gave new summary labels: read again for their titles.
        for session in std::mem::take(&mut run.relabel) {
            if let Err(e) = self.relabel(&session, &files, &mut run, &mut group) {
                tracing::warn!(session, error = %e, "cannot re-read a relabelled session");
            }
        }
        self.commit_group(&mut group, &mut run)?;
        self.flush_handoff_files(&mut run)?;
        crate::cancel::checkpoint()?;
        self.ingest_agents(&agents, &mut run, &mut report, &mut ticker)?;
        if whole {
            self.ingest_index_only(&files, &mut run)?;
        }
        crate::cancel::checkpoint()?;
        self.ingest_documents(&files, whole, &mut run, &mut report)?;
        if whole {
            (report.documents_added, report.documents_failed) =
                self.follow_folders(Timestamp::now())?;
        }
        report.claude_md_files = self.derive_claude_md(&mut run)?;
        report.memories_written = self.write_derived(&mut run)?;
        self.end_run(&mut run, &mut report)?;
        report.elapsed = started.elapsed();
        // Callers say what a run read; a run that read nothing is not news.
        tracing::debug!(
            files = report.files_scanned,
            read = report.files_read,
            agents_read = report.agent_files_read,
            episodes = report.counts.episodes,
            skipped_lines = report.counts.skipped_lines,
            "ingest done"
        );
        Ok(report)
    }

    /// Reads the subagent files, after their parents.
    fn ingest_agents(
        &self,
        agents: &[AgentFile],
        run: &mut Run,
        report: &mut IngestReport,
        ticker: &mut Ticker,
    ) -> Result<()> {
        report.agent_files_scanned = agents.len() as u64;
        for file in agents {
            crate::cancel::checkpoint()?;
            let outcome = self.ingest_agent_file(file, run);
            match skip_unreadable(outcome, "cannot read subagent transcript", run, report)? {
                Some(FileOutcome::Read { .. }) => report.agent_files_read += 1,
                Some(FileOutcome::Unchanged) | None => {}
            }
            ticker.tick(run);
        }
        Ok(())
    }

    /// Reads the plan files, then (in a `whole` run) the project memory files.
    fn ingest_documents(
        &self,
        files: &[SessionFile],
        whole: bool,
        run: &mut Run,
        report: &mut IngestReport,
    ) -> Result<()> {
        let plans = self
            .claude
            .plan_files()
            .map_err(Error::io(self.claude.root()))?;
        for plan in &plans {
            let outcome = self.ingest_plan(plan, run);
            skip_unreadable(outcome, "cannot read plan", run, report)?;
        }
        report.plans = plans.len() as u64;
        if !whole {
            return Ok(());
        }
        let projects = self.claude.projects_dir();
        let memories = self.claude.memory_files().map_err(Error::io(&projects))?;
        for memory in &memories {
            let outcome = self.ingest_memory(memory, files, run);
            skip_unreadable(outcome, "cannot read memory file", run, report)?;
        }
        report.memory_files = memories.len() as u64;
        Ok(())
    }

    /// The end of a run: what it skipped and read told in `report`; the text index
    /// committed, sequences derived, the store flushed, the view and the handoff index
    /// saved, idle chunks swept; the store counted.
    fn end_run(&self, run: &mut Run, report: &mut IngestReport) -> Result<()> {
        report.redacted = std::mem::take(&mut run.redacted);
        for link in self.claude.take_refused() {
            run.skipped.push(SkippedFile {
                path: link.display().to_string(),
                lines: 0,
                reason: "a symlink out of the Claude dir: not followed".into(),
            });
        }
        run.skipped.sort();
        run.skipped.dedup();
        report.files_skipped = run.skipped.len() as u64;
        run.skipped.truncate(SKIPPED_FILES_LISTED);
        report.skipped_files = std::mem::take(&mut run.skipped);
        report.bytes_read = run.bytes_read;
        report.files_versioned = run.files_versioned;
        let [made, cached, failed, capped] = run.summaries;
        report.summaries_made = made;
        report.summaries_cached = cached;
        report.summaries_failed = failed;
        report.summaries_capped = capped;
        // A run that read no transcript (`serve`'s look every few seconds, most of the
        // time) does not flush the store: the journal holds what other writes applied,
        // and a flush under the ingest lock held every client write behind it for up to
        // hundreds of milliseconds.
        let read = report.files_read + report.agent_files_read > 0 || !run.handoffs.is_empty();
        self.settle_store(&run.handoffs, read)?;
        report.counts = self.graph.counts()?;
        Ok(())
    }

    /// What follows a run's writes: the text index committed, FOLLOWS and CONTINUES
    /// derived, the store flushed and the graph view saved (when the run `read` a
    /// transcript), the handoff index rewritten when the run wrote `handoffs`, and idle chunks
    /// moved to the cold tier (hourly at most).
    fn settle_store(&self, handoffs: &[Handoff], read: bool) -> Result<()> {
        // Sessions mark the whole index, documents and memories their own sources.
        let wrote_pending = !self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_empty();
        if self.text_index_lags()? {
            self.commit_text()?;
        } else if wrote_pending {
            // Documents and memories (this run's, or clients' staged beside it): beside
            // `serve` searchable at once and committed by its committing thread, as a
            // client's write is; else committed now.
            self.commit_writes()?;
        }
        let sequenced = self.graph.derive_sequences()?;
        if sequenced > 0 {
            tracing::debug!(edges = sequenced, "updated FOLLOWS and CONTINUES");
        }
        // The view's snapshot describes only what a flush made durable. A run that read
        // nothing leaves it to the next run that reads, or to the end of the process
        // (`serve` and the CLI save it as they stop): saved by `serve`'s look after every
        // client write, it held the writes behind the ingest lock for 15-95 ms every 2 s.
        if read {
            self.graph.store().flush()?;
            if self.graph.save_view()? {
                tracing::debug!("saved the graph view snapshot");
            }
        }
        self.sinks.handoffs_changed(handoffs)?;
        if !handoffs.is_empty() {
            self.write_handoff_index()?;
        }
        let now = Timestamp::now().0;
        let last = self.last_sweep.load(std::sync::atomic::Ordering::Relaxed);
        if last != 0 && now.saturating_sub(last) < SWEEP_EVERY_MS {
            return Ok(());
        }
        self.last_sweep
            .store(now, std::sync::atomic::Ordering::Relaxed);
        let idle = i64::from(self.chunk_idle_days) * 24 * 3600 * 1000;
        let swept = self
            .graph
            .store()
            .sweep_chunks_at_most(idle, now, SWEEP_AT_MOST)?;
        if swept.moved > 0 {
            tracing::info!(
                chunks = swept.moved,
                bytes = swept.bytes,
                "moved idle chunks to the cold tier"
            );
        }
        Ok(())
    }

    /// The source record of `path`, and whether the file is unchanged since it was read
    /// (see [`Stamp::matches`]).
    fn unchanged(&self, path: &Path) -> Result<Changed> {
        let stamp = Stamp::of(&std::fs::metadata(path).map_err(Error::io(path))?);
        let known = self.graph.source(&path.to_string_lossy())?;
        Ok(Changed {
            same: known.as_ref().is_some_and(|k| {
                stamp.matches(k) && k.extracted == crate::extract::EXTRACT_VERSION
            }),
            known,
            modified_ms: stamp.modified_ms,
            inode: stamp.inode,
            changed_ns: stamp.changed_ns,
        })
    }
}

/// What one ingest run gathers as it goes.
#[derive(Default)]
pub(super) struct Run {
    redacted: RedactionCounts,
    pub(super) bytes_read: u64,
    pub(super) files_versioned: u64,
    /// Summarizer outcomes: made, cached, failed, capped.
    pub(super) summaries: [u64; 4],
    /// Every `summary` label known, by leaf uuid (stored ones and this run's).
    pub(super) labels: HashMap<u128, String>,
    /// Sessions a file of this run gave a new label: to read again.
    relabel: BTreeSet<String>,
    /// `sessions-index.json` entries, by session id.
    index: HashMap<String, IndexEntry>,
    /// The handoffs written, without their bodies (for the `get` index).
    handoffs: Vec<Handoff>,
    /// Labels this run wrote (keys of `labels`): a transcript read ahead that holds one
    /// is read again.
    labels_added: HashSet<u128>,
    /// Handoffs whose markdown files wait to be written.
    handoff_files: Vec<Handoff>,
    /// Where they go to be written, while a thread of the run writes them.
    handoff_sink: Option<std::sync::mpsc::Sender<Vec<Handoff>>>,
    /// Files read in part or not at all.
    skipped: Vec<SkippedFile>,
    /// Memories this run derived (insights of handoffs, `CLAUDE.md` files), with the
    /// time each is from: written at its end.
    derived: Vec<(crate::memory::NewMemory, Timestamp)>,
    /// Settings keys and stamps of the `CLAUDE.md` files read this run, saved once their
    /// memories are written.
    seen: Vec<(Vec<u8>, (u64, i64))>,
    /// Keys of the copies among this run's files, by their project folder and Claude
    /// Code's id: where their subagents belong.
    copies: HashMap<(String, String), String>,
    /// Files read again though unchanged: a session and its copy that shared a key.
    reread: HashSet<std::path::PathBuf>,
}

impl Run {
    fn skipped_lines(&mut self, path: &str, transcript: &Transcript) {
        if transcript.skipped_lines == 0 {
            return;
        }
        tracing::debug!(
            path,
            skipped = transcript.skipped_lines,
            "skipped malformed lines"
        );
        self.skipped.push(SkippedFile {
            path: path.to_owned(),
            lines: transcript.skipped_lines,
            reason: transcript.first_skip.clone().unwrap_or_default(),
        });
    }

    fn unreadable(&mut self, path: &Path, error: &std::io::Error) {
        self.skipped.push(SkippedFile {
            path: path.display().to_string(),
            lines: 0,
            reason: format!("unreadable: {error}"),
        });
    }
}

/// A file's modification time in ms since the epoch (0 when unknown).
fn modified_ms(path: &Path) -> i64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

struct Changed {
    same: bool,
    known: Option<SourceRecord>,
    modified_ms: i64,
    /// The file's inode and status-change time now.
    inode: u64,
    changed_ns: i64,
}

enum FileOutcome {
    Unchanged,
    Read { episode: bool },
}

/// A file's outcome; or, when the file could not be read, `None`: the file logged with
/// `message`, counted as failed and listed as skipped. Any other error ends the run.
fn skip_unreadable(
    outcome: Result<FileOutcome>,
    message: &'static str,
    run: &mut Run,
    report: &mut IngestReport,
) -> Result<Option<FileOutcome>> {
    match outcome {
        Ok(outcome) => Ok(Some(outcome)),
        Err(Error::Io { path, source }) if !is_write_failure(&source) => {
            tracing::warn!(path = %path.display(), error = %source, "{message}");
            report.files_failed += 1;
            run.unreadable(&path, &source);
            Ok(None)
        }
        Err(other) => Err(other),
    }
}

/// An I/O error of writing (a full disk, a read-only one, a quota), not of reading the
/// file it names: it ends the run instead of counting the file as unreadable.
fn is_write_failure(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::StorageFull
            | std::io::ErrorKind::ReadOnlyFilesystem
            | std::io::ErrorKind::QuotaExceeded
    )
}
