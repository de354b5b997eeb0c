//! The facade that owns the store and the indexes, and runs ingest and queries.

mod check;
mod context;
mod documents;
mod library;
mod memory;
mod migrate;
mod query;
mod search;
mod semantic;
mod stats;
mod write;

pub use self::memory::MIN_SIMILARITY;
pub use self::query::{GetOutcome, HandoffHit, MAX_DAYS_BACK};
pub use self::semantic::WriteEmbedder;
pub use self::stats::Stats;
pub use self::write::{SessionIngest, TextCommitter};
pub use crate::backup::{
    BackupManifest, BackupReport, MANIFEST as BACKUP_MANIFEST, copy_tree, ensure_store_free,
    restore,
};
pub use crate::check::CheckReport;
pub use crate::claude::migrate::{MigrateError, MigrateMode, MigrateResult, encode_project_dir};
pub use crate::docs::{DocumentOutcome, Followed, MAX_DOCUMENTS};
/// The graph's query types: what a walk, a neighbour list or a timeline takes and gives.
pub use crate::graph::{
    AsOf, Counts, Direction, EdgeFilter, MAX_DEPTH, MAX_LIMIT, Neighbor, PathStep, Related, Shared,
    Touch, Walk, WalkStep, parse_relations,
};
pub use crate::ingest::{
    ImportReport, IngestReport, Progress, SKIPPED_FILES_LISTED, SkippedFile, Summarizer,
};
pub use crate::library::{
    ExportFormat, MAX_CONTEXT_LINES, MAX_MATCHES, MAX_PAGE, MatchPage, SearchMatch, Session,
    SessionOrder, SessionPage, SessionSearch, SessionSummary,
};
pub use crate::memory::MAX_MEMORIES;
pub use crate::retrieve::context::{
    Context, ContextItem, ContextMode, ContextSession, DEFAULT_MAX_TOKENS, MAX_CONTEXT_SESSIONS,
    estimate_tokens,
};
pub use crate::retrieve::search::{
    CONTENT_TYPES, MAX_SEARCH_LIMIT, SearchHit, SearchRequest, SearchResults,
};
pub use crate::semantic::{EMBEDDED_TYPES, EmbedReport, Embedding, SemanticStatus};
pub use eywa_storage::{CacheStats, TierStats};

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use eywa_storage::{GenerationalCache, Keyspace};

use crate::claude::ClaudeDir;
use crate::graph::Graph;
use crate::retrieve::HandoffIndex;
use crate::{Error, Result};

/// `get` results kept in the hot tier.
const RESULT_CACHE_ENTRIES: usize = 1_024;

/// Where the engine keeps its data and reads its sources.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// `~/.eywa` by default; `None` with `temporary`.
    pub data_dir: Option<PathBuf>,
    /// `~/.claude` by default.
    pub claude_dir: PathBuf,
    /// Whether the store is in a temporary directory, removed when the engine is dropped.
    pub temporary: bool,
    /// Chunks not read for this many days move from the warm to the cold tier.
    pub chunk_idle_days: u32,
    /// The embedder of semantic memory (default: none, searches are lexical).
    pub embedding: Embedding,
    /// Bytes that must stay free on the data dir's disk: a write that would start below
    /// it is refused with [`Error::DiskFull`] instead of failing half-way.
    pub min_free_bytes: u64,
    /// The time memories decay and are consolidated by (the system clock; tests set one).
    pub clock: crate::model::Clock,
    /// Ages in days from which context carries a mild, a stale and an old notice (seed
    /// 001: 7, 30, 90); `None`: no notices.
    pub staleness_days: Option<[u32; 3]>,
    /// The command that writes handoffs (off by default: they are built from the
    /// transcript).
    pub summarizer: Option<Summarizer>,
    /// Whether opening does the store's upkeep: the one scrub of a store written before
    /// everything was redacted, and indexing what a writer that was killed left out. On
    /// by default; a hook, which has under a second, leaves it to the next command.
    pub upkeep: bool,
    /// Who sessions ingested here are attributed to (by default
    /// [`local_identity`](crate::host::local_identity)).
    pub identity: crate::model::Identity,
}

impl EngineConfig {
    /// Default days before an unread chunk moves to the cold tier.
    pub const DEFAULT_CHUNK_IDLE_DAYS: u32 = 30;
    /// Seed 001's staleness thresholds, in days.
    pub const DEFAULT_STALENESS_DAYS: [u32; 3] = [7, 30, 90];

    /// A store in `data_dir` reading `claude_dir`, with the default chunk idle days and free
    /// space floor, and no embedder.
    pub fn new(data_dir: impl Into<PathBuf>, claude_dir: impl Into<PathBuf>) -> Self {
        EngineConfig {
            data_dir: Some(data_dir.into()),
            claude_dir: claude_dir.into(),
            temporary: false,
            chunk_idle_days: Self::DEFAULT_CHUNK_IDLE_DAYS,
            embedding: Embedding::Off,
            min_free_bytes: eywa_storage::Config::DEFAULT_MIN_FREE_BYTES,
            clock: crate::model::Clock::system(),
            staleness_days: Some(Self::DEFAULT_STALENESS_DAYS),
            summarizer: None,
            upkeep: true,
            identity: crate::host::local_identity(),
        }
    }

    /// A store in a temporary directory, removed when the engine is dropped.
    pub fn temporary(claude_dir: impl Into<PathBuf>) -> Self {
        EngineConfig {
            data_dir: None,
            claude_dir: claude_dir.into(),
            temporary: true,
            chunk_idle_days: Self::DEFAULT_CHUNK_IDLE_DAYS,
            embedding: Embedding::Off,
            min_free_bytes: eywa_storage::Config::DEFAULT_MIN_FREE_BYTES,
            clock: crate::model::Clock::system(),
            staleness_days: Some(Self::DEFAULT_STALENESS_DAYS),
            summarizer: None,
            upkeep: true,
            identity: crate::host::local_identity(),
        }
    }

    /// The same, with this embedder for semantic memory.
    pub fn with_embedding(self, embedding: Embedding) -> Self {
        EngineConfig { embedding, ..self }
    }
}

/// eywa's engine: thread-safe, shared by the gRPC services and the CLI.
pub struct Engine {
    graph: Graph,
    claude: ClaudeDir,
    config: EngineConfig,
    /// The `get` index, loaded on first use (from its files, else from the store), and
    /// kept in step with this engine's writes.
    get_index: crate::ingest::GetIndex,
    /// `get` results, invalidated by every ingest.
    results: GenerationalCache<String, Arc<GetOutcome>>,
    /// One ingest at a time.
    ingest_lock: crate::cancel::WorkLock,
    /// Documents and memories this process wrote whose text-index entries are not
    /// committed yet (their pending marks are this process's to clear).
    pending: Mutex<Vec<crate::ingest::PendingText>>,
    /// Text-index commits of client writes, shared when they come at once.
    text_commits: crate::ingest::GroupCommit,
    /// Client writes made searchable now and committed soon after, while `serve` runs
    /// [`Engine::run_text_committer`].
    deferred: crate::ingest::Deferred,
    /// When this process last moved idle chunks to the cold tier (ms; 0: not yet).
    last_sweep: std::sync::atomic::AtomicI64,
    /// This process's last ingest run that ended, and when.
    last_ingest: Mutex<Option<(crate::model::Timestamp, Arc<IngestReport>)>>,
    /// Who wrote each message uuid; loaded on first use.
    authors: crate::archive::Authors,
    /// The full-text index (index tier), opened on first use.
    text: std::sync::OnceLock<crate::index::TextIndex>,
    /// The trigram index `SearchSessions` narrows by (index tier), opened on first use.
    grams: std::sync::OnceLock<crate::index::GramIndex>,
    /// Semantic memory: embedder, queue, vector index; opened on first use.
    semantic: std::sync::OnceLock<crate::semantic::Semantic>,
    /// Held while a lazily opened part opens.
    opening: Mutex<()>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("graph", &self.graph)
            .field("claude", &self.claude)
            .finish()
    }
}

impl Engine {
    /// Opens the store (`<data_dir>/store`, created when missing, or a temporary one); the
    /// indexes and semantic memory open when first needed.
    pub fn open(config: EngineConfig) -> Result<Engine> {
        let storage = if config.temporary {
            eywa_storage::Config::new().temporary(true)
        } else {
            let data_dir = config.data_dir.as_deref().ok_or_else(|| {
                Error::InvalidArgument("a data directory is needed unless temporary".into())
            })?;
            crate::fs::create_private_dir(data_dir)?;
            eywa_storage::Config::new().path(data_dir.join("store"))
        }
        .min_free_bytes(config.min_free_bytes);
        let store = storage.open()?;
        if let Some(moved) = store.moved_from_sled() {
            tracing::info!(
                entries = moved.entries,
                seconds = moved.elapsed.as_secs_f64(),
                "moved the store from sled to fjall (store layout 4)"
            );
        }
        let graph = Graph::open(store)?;
        let data_dir = config.data_dir.as_deref().filter(|_| !config.temporary);
        crate::ingest::upkeep::on_open(graph.store(), data_dir)?;
        let index_dir = graph.store().path().join("index");
        // Only the store opens here: the text index, semantic memory, the graph's view and
        // the `get` index open when a command first needs them.
        let engine = Engine {
            graph,
            claude: ClaudeDir::new(&config.claude_dir),
            config,
            get_index: crate::ingest::GetIndex::new(&index_dir),
            results: GenerationalCache::new(
                "get_results",
                NonZeroUsize::new(RESULT_CACHE_ENTRIES).expect("positive"),
            ),
            ingest_lock: crate::cancel::WorkLock::default(),
            pending: Mutex::new(Vec::new()),
            text_commits: crate::ingest::GroupCommit::default(),
            deferred: crate::ingest::Deferred::default(),
            last_sweep: std::sync::atomic::AtomicI64::new(0),
            last_ingest: Mutex::new(None),
            authors: crate::archive::Authors::default(),
            text: std::sync::OnceLock::new(),
            grams: std::sync::OnceLock::new(),
            semantic: std::sync::OnceLock::new(),
            opening: Mutex::new(()),
        };
        if engine.config.upkeep {
            // None may keep the store from opening: what fails is tried again at the next
            // open. Attribution runs first, before anything reads (and caches) a node.
            match crate::ingest::upkeep::attribute_once(
                engine.graph.store(),
                &engine.config.identity,
            ) {
                Ok((0, 0)) => {}
                Ok((episodes, handoffs)) => {
                    tracing::info!(
                        episodes,
                        handoffs,
                        identity = %engine.config.identity,
                        "attributed the sessions of a store written before attribution"
                    );
                    // The `get` index files hold the handoffs as they were: rebuilt now,
                    // or else marked behind, so that the next reader rebuilds them.
                    if handoffs > 0
                        && let Err(e) = engine.reload_handoffs()
                    {
                        tracing::warn!(error = %e, "cannot rebuild the get index now");
                        if let Err(e) = engine.handoffs_will_change() {
                            tracing::warn!(error = %e, "cannot mark the get index behind");
                        }
                    }
                }
                Err(e) => tracing::warn!(
                    error = %e,
                    "cannot attribute the store's sessions now; the next open tries again"
                ),
            }
            if let Err(e) = engine.scrub_once() {
                tracing::warn!(error = %e, "cannot scrub the store now; the next open tries again");
            }
            if let Err(e) = engine.catch_up_once() {
                tracing::warn!(error = %e, "cannot index what a stopped write left out now; the next open tries again");
            }
        }
        Ok(engine)
    }

    /// Documents and memories a process that died left out of the text index (it was
    /// killed between their store writes and the index's commit) are indexed now: this
    /// process holds the store, so no writer is midway.
    fn catch_up_once(&self) -> Result<()> {
        if crate::ingest::pending_marks(self.graph.store())?.is_empty() {
            return Ok(());
        }
        #[allow(clippy::redundant_closure_for_method_calls)]
        let caught = self.write(|w| w.catch_up_pending())?;
        tracing::info!(
            sources = caught,
            "indexed what a stopped write left out of the text index"
        );
        Ok(())
    }

    /// A store written before documents, memories, imported handoffs and summaries were
    /// redacted may hold secrets there: the first open redacts them (and what was derived
    /// from them), and says how many. A store with nothing in it is marked at once.
    fn scrub_once(&self) -> Result<()> {
        if !crate::ingest::upkeep::needs_scrub(self.graph.store())? {
            return Ok(());
        }
        let started = std::time::Instant::now();
        // The method's path is not general over the writer's lifetime: a closure it is.
        #[allow(clippy::redundant_closure_for_method_calls)]
        let report: crate::ingest::ScrubReport = self.write(|w| w.scrub_store())?;
        tracing::info!(
            documents = report.documents,
            memories = report.memories,
            handoffs = report.handoffs,
            snippets = report.snippets,
            secrets = report.redacted.total(),
            seconds = started.elapsed().as_secs_f64(),
            "scrubbed the store once: secrets redacted from what it held before"
        );
        Ok(())
    }

    /// The index tier's directory.
    fn index_dir(&self) -> PathBuf {
        self.graph.store().path().join("index")
    }

    /// What `slot` holds, opened by `open` on first use: one part opens at a time, once.
    fn opened<'a, T>(
        &self,
        slot: &'a std::sync::OnceLock<T>,
        open: impl FnOnce() -> Result<T>,
    ) -> Result<&'a T> {
        if let Some(part) = slot.get() {
            return Ok(part);
        }
        let _opening = self
            .opening
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(part) = slot.get() {
            return Ok(part);
        }
        let part = open()?;
        Ok(slot.get_or_init(|| part))
    }

    /// Semantic memory, opened on first use (the model's weights wait for the first
    /// embedding). Vectors of another model, or none beside a store that holds sources,
    /// mark the text index for a rebuild, which queues every document again.
    fn semantic(&self) -> Result<&crate::semantic::Semantic> {
        self.opened(&self.semantic, || {
            let store = self.graph.store();
            let (semantic, vectors_reset) =
                crate::semantic::Semantic::open(&self.config.embedding, store, &self.index_dir())?;
            let unembedded = semantic.embedder().is_some()
                && store.is_empty(Keyspace::Vectors)
                && store.is_empty(Keyspace::EmbedQueue);
            if (vectors_reset || unembedded) && !store.is_empty(Keyspace::Sources) {
                crate::ingest::mark_text_dirty(store)?;
            }
            Ok(semantic)
        })
    }

    /// The full-text index, opened on first use. A new index beside a store that already
    /// holds sources (an index removed, or a store from before it) is rebuilt.
    pub fn text_index(&self) -> Result<&crate::index::TextIndex> {
        self.text()
    }

    fn text(&self) -> Result<&crate::index::TextIndex> {
        self.opened(&self.text, || {
            let (text, created) = crate::index::TextIndex::open(&self.index_dir().join("text"))?;
            if created && !self.graph.store().is_empty(Keyspace::Sources) {
                crate::ingest::mark_text_dirty(self.graph.store())?;
            }
            Ok(text)
        })
    }

    /// The trigram index of sessions' text, opened on first use.
    pub(crate) fn grams(&self) -> Result<&crate::index::GramIndex> {
        self.opened(&self.grams, || {
            crate::index::GramIndex::open(&self.index_dir().join("grams"))
        })
    }

    /// The temporal knowledge graph this engine reads and writes.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The Claude Code dir this engine reads sessions from.
    pub fn claude_dir(&self) -> &ClaudeDir {
        &self.claude
    }

    /// Where this engine's embedding model is (or would be) installed: the configured
    /// folder, else `<data>/models/`; `None` for a temporary store without one.
    pub fn model_dir(&self) -> Option<PathBuf> {
        match &self.config.embedding {
            Embedding::Model(dir) => Some(dir.clone()),
            _ => self
                .config
                .data_dir
                .as_deref()
                .map(crate::embed::ModelDir::default_path),
        }
    }

    /// The `get` index: as loaded, else from its files when they describe the store, else
    /// rebuilt from the store (and saved).
    fn handoff_index(&self) -> Result<Arc<HandoffIndex>> {
        self.get_index.index(&self.graph)
    }

    /// Call before writing a handoff: the index files are marked as behind the store.
    fn handoffs_will_change(&self) -> Result<()> {
        self.get_index.will_change(&self.graph)
    }

    /// Call once a write run is over and flushed, with every handoff it wrote: the index
    /// takes them in and its files are saved again; cached `get` results go.
    fn handoffs_changed(&self, changed: &[crate::model::Handoff]) -> Result<()> {
        if self.get_index.changed(&self.graph, changed)? {
            self.results.bump();
        }
        Ok(())
    }

    /// Call when a write run failed after writing handoffs it could not report: the index
    /// is rebuilt from the store next time.
    fn handoffs_lost(&self) {
        self.get_index.lost();
    }

    /// Rebuilds the `get` index from the store (after writes made past the engine).
    pub fn reload_handoffs(&self) -> Result<()> {
        self.get_index.reload(&self.graph)?;
        self.results.bump();
        Ok(())
    }
}
