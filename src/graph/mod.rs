//! The temporal graph over `eywa-storage`: idempotent, versioned upserts that keep every
//! index keyspace in step with its primary in one batch; as-of reads on both time axes; an
//! in-memory petgraph view for walks; hot caches for node and edge payloads.

mod check;
mod counts;
mod history;
mod keys;
mod read;
mod snapshot;
mod upgrade;
mod view;
mod walk;
mod write;

pub use self::read::{AsOf, EdgeRef};
pub use self::view::{EdgeMeta, NodeMeta};
pub use self::walk::{EdgeFilter, PathStep, Related, Shared, Walk, WalkStep};
pub use self::write::{SpawnRecord, WriteGroup};

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use eywa_storage::{CacheStats, GenerationalCache, HotCache, Keyspace, Store};
use serde::{Deserialize, Serialize};

use self::view::View;
use crate::Result;
use crate::model::{Edge, EdgeId, EntityType, Handoff, Node, NodeId, Relation};

/// Settings key: the activity index holds every main session (built, or kept from the
/// start).
pub(crate) const ACTIVITY_BUILT: &[u8] = b"sessions_by_activity_built";

/// Node payloads kept in the hot tier.
const NODE_CACHE_ENTRIES: usize = 16_384;
/// Current edge versions kept in the hot tier.
const EDGE_CACHE_ENTRIES: usize = 65_536;
/// Document headers (handoffs) kept in the hot tier.
const DOC_CACHE_ENTRIES: usize = 8_192;
/// Entity timelines (sessions newest first) kept in the hot tier until the next write.
const TIMELINE_CACHE_ENTRIES: usize = 1_024;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direction {
    #[default]
    Both,
    Out,
    In,
}

/// An edge and the node at its other end.
#[derive(Debug, Clone, PartialEq)]
pub struct Neighbor {
    pub edge: Edge,
    pub node: Node,
}

/// An Episode that touched an entity, through `edge`.
#[derive(Debug, Clone, PartialEq)]
pub struct Touch {
    pub episode: Node,
    pub edge: Edge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Counts {
    /// Main session files that yielded an Episode.
    pub sessions: u64,
    /// Subagent runs (their own files, or inline in their parent's).
    pub agents: u64,
    pub episodes: u64,
    pub entities: u64,
    /// Current (unexpired) edges.
    pub edges: u64,
    /// Source files known, sessions or not.
    pub sources: u64,
    /// Malformed lines in the sources as last read.
    pub skipped_lines: u64,
}

/// Where the view's loader says how its load went.
type Loaded = std::sync::mpsc::Sender<Result<()>>;

/// A write a test lands while the view loads.
#[cfg(test)]
type LoadingWrite = Box<dyn FnOnce(&Graph) + Send>;

/// How often the view's loader looks whether it should stop.
const LOADER_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// The temporal knowledge graph.
pub struct Graph {
    store: Store,
    /// The in-memory view, loaded on first use (a command that reads a few nodes never
    /// builds it).
    view: std::sync::OnceLock<RwLock<View>>,
    nodes: HotCache<NodeId, Arc<Node>>,
    edges: HotCache<EdgeId, Arc<Edge>>,
    docs: HotCache<NodeId, Arc<Handoff>>,
    timelines: GenerationalCache<(NodeId, u8), Arc<Vec<walk::TimelineEntry>>>,
    /// One writer at a time: versions are read, then written. Holds the graph generation
    /// (bumped by every batch, stored with it).
    writer: Mutex<u64>,
    /// The generation the snapshot on disk was taken at, once known.
    saved: Mutex<Option<u64>>,
    /// What the graph holds, kept in step by every batch once loaded.
    counters: Mutex<Option<counts::Counters>>,
    /// Projects with a sequence-pass marker in the store, as this process wrote them.
    queued: Mutex<std::collections::HashSet<NodeId>>,
    /// Source records written through this graph since they were last taken, by path.
    sources_written: Mutex<std::collections::HashSet<String>>,
    /// Every session's id with its source's path, as of a sources generation (see
    /// [`Graph::sources_of_sessions`]).
    session_ids: Mutex<Option<(u64, Arc<SessionIds>)>>,
    /// Whether the view came from a current snapshot (set once it is loaded).
    from_snapshot: std::sync::atomic::AtomicBool,
    /// Held by the one thread loading the view.
    loading: Mutex<()>,
    /// While the view loads, the changes of the batches that land meanwhile, in order:
    /// applied to the view before it is installed.
    missed: Mutex<Option<Vec<view::Delta>>>,
    /// Where a reader hands the view's load while a thread loads it for them
    /// ([`Graph::run_view_loader`]).
    loader: Mutex<Option<std::sync::mpsc::Sender<Loaded>>>,
    /// Called once the view is built and before it is installed (tests land a write there).
    #[cfg(test)]
    while_loading: Mutex<Option<LoadingWrite>>,
}

/// Session ids (and subagents' bare ids) with their sources' paths, sorted.
type SessionIds = Vec<(String, String)>;

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph").field("store", &self.store).finish()
    }
}

impl Graph {
    /// Opens the graph on a store. Its view is loaded when first needed: from the snapshot
    /// in the index tier when that is current, else rebuilt from the index keyspaces.
    pub fn open(store: Store) -> Result<Self> {
        upgrade::inline_edges(&store)?;
        let generation = snapshot::generation(&store)?;
        if store.is_empty(Keyspace::EpisodesByTime)
            && !store.contains(Keyspace::Settings, ACTIVITY_BUILT)?
        {
            // Nothing to index yet: writes keep the activity index from the start.
            let mut batch = eywa_storage::Batch::new();
            batch.put(Keyspace::Settings, ACTIVITY_BUILT.to_vec(), &true)?;
            store.apply(batch)?;
        }
        Ok(Graph {
            store,
            view: std::sync::OnceLock::new(),
            nodes: HotCache::new("nodes", nonzero(NODE_CACHE_ENTRIES)),
            edges: HotCache::new("edges", nonzero(EDGE_CACHE_ENTRIES)),
            docs: HotCache::new("documents", nonzero(DOC_CACHE_ENTRIES)),
            timelines: GenerationalCache::new("timelines", nonzero(TIMELINE_CACHE_ENTRIES)),
            writer: Mutex::new(generation),
            saved: Mutex::new(None),
            counters: Mutex::new(None),
            queued: Mutex::new(std::collections::HashSet::new()),
            sources_written: Mutex::new(std::collections::HashSet::new()),
            session_ids: Mutex::new(None),
            from_snapshot: std::sync::atomic::AtomicBool::new(false),
            loading: Mutex::new(()),
            missed: Mutex::new(None),
            loader: Mutex::new(None),
            #[cfg(test)]
            while_loading: Mutex::new(None),
        })
    }

    /// Whether the view was (or now is) loaded from a current snapshot rather than rebuilt.
    pub fn view_from_snapshot(&self) -> Result<bool> {
        self.loaded_view()?;
        Ok(self
            .from_snapshot
            .load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Whether the view is in memory.
    pub fn view_loaded(&self) -> bool {
        self.view.get().is_some()
    }

    /// The view, loaded now if it is not yet: never call it while holding the writer lock.
    ///
    /// It is built outside the writer lock, from the snapshot of the generation it started
    /// at or from the index keyspaces, while writes go on (loading 100k sessions takes
    /// 300–460 ms, and every graph write waited that long when it was loaded under the
    /// lock, `benches/README.md`). The batches that land meanwhile record their changes;
    /// under the lock, at the end, they are applied in order and the view installed. A
    /// rebuild reads the keyspaces as they change, so it may already hold some of those
    /// batches' keys: each change states a node's or an edge's whole state, and applying
    /// it again leaves the same. Every write to those keyspaces records a change, except
    /// [`Graph::rebuild_indexes`], which holds off loads while it runs. A batch that lands
    /// during the build may sit elsewhere in its node's edge order than after a restart.
    pub(super) fn loaded_view(&self) -> Result<&RwLock<View>> {
        if let Some(view) = self.view.get() {
            return Ok(view);
        }
        let loader = self.loader().clone();
        if let Some(loader) = loader {
            let (done, loaded) = std::sync::mpsc::channel();
            // A loader that stopped answers nothing: the load is then this thread's.
            if loader.send(done).is_ok()
                && let Ok(result) = loaded.recv()
            {
                result?;
                if let Some(view) = self.view.get() {
                    return Ok(view);
                }
            }
        }
        self.load_view()
    }

    /// Loads the view now, and again for every reader that asks first after something
    /// dropped it, on the calling thread, until `stop`. A read runs below the priority of
    /// writes (`crate::priority`), and loading the view on a read's thread took seconds
    /// while clients kept the cores busy, with every walk waiting for it; `serve` runs
    /// this on a thread at its own priority. Loaded at once because nearly every first
    /// answer walks the graph (a session's page its subagents, SessionStart its plans): on
    /// a store `eywa ingest` wrote 100k sessions into, with no snapshot yet, the first
    /// session page waited 1.1 s for it (`benches/README.md`, `web_pages`).
    pub fn run_view_loader(&self, stop: &std::sync::atomic::AtomicBool) {
        let (ask, asks) = std::sync::mpsc::channel::<Loaded>();
        *self.loader() = Some(ask);
        if let Err(e) = self.load_view() {
            tracing::warn!(error = %e, "could not load the graph's view: a walk will try again");
        }
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            match asks.recv_timeout(LOADER_POLL) {
                Ok(done) => {
                    let _ = done.send(self.load_view().map(|_| ()));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        // Readers that ask from now on load it themselves, and so do those whose ask is
        // still queued: it is dropped with `asks`.
        *self.loader() = None;
    }

    /// Where readers ask for the view's load (`None` while no loader runs).
    fn loader(&self) -> std::sync::MutexGuard<'_, Option<std::sync::mpsc::Sender<Loaded>>> {
        self.loader
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// [`Graph::loaded_view`] on the calling thread.
    fn load_view(&self) -> Result<&RwLock<View>> {
        let _loading = self
            .loading
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(view) = self.view.get() {
            return Ok(view);
        }
        let generation = {
            let generation = self
                .writer
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *self.missed() = Some(Vec::new());
            *generation
        };
        let file = snapshot::path(&self.store);
        let loaded = match snapshot::load(&file, generation) {
            Some(view) => Ok((view, true)),
            None => View::load(&self.store).map(|view| (view, false)),
        };
        #[cfg(test)]
        if let Some(write) = self.while_loading.lock().unwrap().take() {
            write(self);
        }
        let _writer = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let missed = self.missed().take().unwrap_or_default();
        let (mut view, from_snapshot) = loaded?;
        for delta in &missed {
            view.apply(delta);
        }
        if from_snapshot {
            *self
                .saved
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(generation);
        }
        self.from_snapshot
            .store(from_snapshot, std::sync::atomic::Ordering::Relaxed);
        Ok(self.view.get_or_init(|| RwLock::new(view)))
    }

    /// The changes recorded while the view loads (`None` when it is not loading).
    fn missed(&self) -> std::sync::MutexGuard<'_, Option<Vec<view::Delta>>> {
        self.missed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Saves the view to the index tier unless the snapshot there is already current (or
    /// the view was never loaded: there is nothing newer to save). Call after a flush: the
    /// snapshot must not describe writes that could still be lost.
    ///
    /// The view is encoded under the writer lock (a few milliseconds), and written and
    /// synced after it is let go: writes that came meanwhile (a client's memory) waited
    /// up to 300 ms for the file when it was written under the lock (`benches/README.md`).
    pub fn save_view(&self) -> Result<bool> {
        let Some(view) = self.view.get() else {
            return Ok(false);
        };
        let generation = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Held until the file is written: saves land one at a time, in order.
        let mut saved = self
            .saved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *saved == Some(*generation) {
            return Ok(false);
        }
        let at = *generation;
        let encoded = snapshot::encode(
            &view
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            at,
        );
        drop(generation);
        snapshot::write(&snapshot::path(&self.store), &encoded)?;
        *saved = Some(at);
        Ok(true)
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The generation of the last write that changed a handoff.
    pub fn handoff_generation(&self) -> Result<u64> {
        snapshot::handoff_generation(&self.store)
    }

    /// The generation of the last write that changed a source record: what a session
    /// serves can have changed since an index built at an earlier one.
    pub fn sources_generation(&self) -> Result<u64> {
        snapshot::sources_generation(&self.store)
    }

    /// The paths of the source records written through this graph since the last call.
    pub fn take_sources_written(&self) -> Vec<String> {
        self.sources_written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain()
            .collect()
    }

    fn view(&self) -> Result<RwLockReadGuard<'_, View>> {
        Ok(self
            .loaded_view()?
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// A node by id, through the hot cache.
    pub fn node(&self, id: NodeId) -> Result<Option<Arc<Node>>> {
        if let Some(node) = self.nodes.get(&id) {
            return Ok(Some(node));
        }
        let node: Option<Node> = self.store.get(Keyspace::Nodes, &keys::node(id))?;
        Ok(node.map(|n| {
            let n = Arc::new(n);
            self.nodes.insert(id, n.clone());
            n
        }))
    }

    /// Entities of `entity_type` whose name, alias or path equals `name` (case-insensitive).
    pub fn find_entities(&self, entity_type: EntityType, name: &str) -> Result<Vec<Arc<Node>>> {
        self.find_by_name(Some(keys::ENTITY_TAG_BASE + entity_type as u8), name, false)
    }

    /// Every entity of one type (a walk of its name index).
    pub fn entities(&self, entity_type: EntityType) -> Result<Vec<Arc<Node>>> {
        self.find_by_name(Some(keys::ENTITY_TAG_BASE + entity_type as u8), "", true)
    }

    /// Nodes indexed by name whose normalized name equals `name` or, with `prefix`, starts
    /// with it; of one index tag or any.
    pub fn find_by_name(
        &self,
        tag: Option<u8>,
        name: &str,
        prefix: bool,
    ) -> Result<Vec<Arc<Node>>> {
        let tags: Vec<u8> = match tag {
            Some(t) => vec![t],
            None => std::iter::once(2)
                .chain(std::iter::once(3))
                .chain(
                    EntityType::ALL
                        .iter()
                        .map(|t| keys::ENTITY_TAG_BASE + *t as u8),
                )
                .collect(),
        };
        let mut ids = Vec::new();
        for tag in tags {
            let mut key = keys::name_prefix(tag, name);
            if prefix {
                // Drop the terminator so longer names match too.
                key.truncate(key.len() - 2);
            }
            for k in self.store.keys(Keyspace::NodesByName, &key) {
                if let Some(id) = keys::trailing_node(&k?)
                    && !ids.contains(&id)
                {
                    ids.push(id);
                }
            }
        }
        let mut nodes = Vec::new();
        for id in ids {
            if let Some(node) = self.node(id)? {
                nodes.push(node);
            }
        }
        Ok(nodes)
    }

    pub fn source(&self, path: &str) -> Result<Option<SourceRecord>> {
        let record: Option<SourceRecord> = self.store.get(Keyspace::Sources, path.as_bytes())?;
        Ok(record.map(|r| SourceRecord {
            path: path.to_owned(),
            ..r
        }))
    }

    /// The source records of sessions (with an episode) whose id starts with `prefix`, or
    /// for a subagent's own transcript (`agent-<id>`) whose `<id>` does. Found in an
    /// index of every session's id, built once per [`Graph::sources_generation`]: a
    /// reference to one session reads its records, not all of them.
    pub fn sources_of_sessions(&self, prefix: &str) -> Result<Vec<SourceRecord>> {
        let index = self.session_ids()?;
        let start = index.partition_point(|(id, _)| id.as_str() < prefix);
        let mut paths: Vec<&str> = index[start..]
            .iter()
            .take_while(|(id, _)| id.starts_with(prefix))
            .map(|(_, path)| path.as_str())
            .collect();
        paths.sort_unstable();
        paths.dedup();
        let mut out = Vec::with_capacity(paths.len());
        for path in paths {
            out.extend(self.source(path)?);
        }
        Ok(out)
    }

    /// Every session's id (and a subagent's `<id>` without `agent-`) with its source's
    /// path, sorted, as of the current sources generation.
    fn session_ids(&self) -> Result<Arc<SessionIds>> {
        let generation = self.sources_generation()?;
        let mut cached = self
            .session_ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((g, index)) = cached.as_ref()
            && *g == generation
        {
            return Ok(index.clone());
        }
        let mut index = Vec::new();
        for s in self.sources()? {
            if s.episode.is_none() {
                continue;
            }
            if s.agent
                && let Some(id) = s.session_id.strip_prefix("agent-")
            {
                index.push((id.to_owned(), s.path.clone()));
            }
            index.push((s.session_id, s.path));
        }
        index.sort_unstable();
        let index = Arc::new(index);
        *cached = Some((generation, index.clone()));
        Ok(index)
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

    /// Main sessions (not subagent runs), most recently active first: `skip`, then at
    /// most `take`; and how many there are in all. Reads only the nodes of the page.
    pub fn sessions_by_activity(&self, skip: usize, take: usize) -> Result<(Vec<Arc<Node>>, u64)> {
        // One key per main session: as many as the counters' sessions (the check holds
        // them to it), so the total costs no scan.
        let total = self.counts()?.sessions;
        let page = self
            .sessions_newest_first()?
            .skip(skip)
            .take(take)
            .collect::<Result<_>>()?;
        Ok((page, total))
    }

    /// Every main session's node, most recently active first.
    pub fn sessions_newest_first(&self) -> Result<impl Iterator<Item = Result<Arc<Node>>> + '_> {
        Ok(self
            .session_ids_newest_first()?
            .filter_map(move |id| id.and_then(|id| self.node(id)).transpose()))
    }

    /// Every main session's node id, most recently active first (by last activity, then
    /// node id): the activity index's keys, no node read.
    pub fn session_ids_newest_first(&self) -> Result<impl Iterator<Item = Result<NodeId>> + '_> {
        self.ensure_activity_index()?;
        Ok(self
            .store
            .keys(Keyspace::SessionsByActivity, &[])
            .rev()
            .map(|key| {
                let key = key.map_err(crate::Error::from)?;
                let (_, id) =
                    keys::parse_episode_time(&key).ok_or(eywa_storage::Error::BadKey {
                        keyspace: Keyspace::SessionsByActivity.name(),
                        reason: "unexpected key layout",
                    })?;
                Ok(id)
            }))
    }

    /// Builds the activity index of a store written before it existed (once: a settings
    /// mark says it is complete; writes keep it since).
    fn ensure_activity_index(&self) -> Result<()> {
        if self.store.contains(Keyspace::Settings, ACTIVITY_BUILT)? {
            return Ok(());
        }
        let _writer = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut batch = eywa_storage::Batch::new();
        for key in self.store.keys(Keyspace::EpisodesByTime, &[]) {
            let key = key?;
            let Some((_, id)) = keys::parse_episode_time(&key) else {
                continue;
            };
            if let Some(node) = self.node(id)? {
                for (keyspace, key) in keys::node_index(&node) {
                    if keyspace == Keyspace::SessionsByActivity {
                        batch.put_raw(keyspace, key, Vec::new());
                    }
                }
            }
        }
        batch.put(Keyspace::Settings, ACTIVITY_BUILT.to_vec(), &true)?;
        self.store.apply(batch)?;
        Ok(())
    }

    /// Every Episode, newest first.
    pub fn episodes(&self) -> Result<Vec<Arc<Node>>> {
        let mut ids: Vec<(i64, NodeId)> = self
            .view()?
            .nodes()
            .filter(|n| n.is_episode())
            .map(|n| (n.start, n.id))
            .collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        let mut nodes = Vec::with_capacity(ids.len());
        for (_, id) in ids {
            if let Some(node) = self.node(id)? {
                nodes.push(node);
            }
        }
        Ok(nodes)
    }

    /// The counters: as kept in step by writes, else as stored for this generation, else
    /// recounted (once) from the index keyspaces.
    fn counters(&self) -> Result<counts::Counters> {
        let generation = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut counters = self
            .counters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(c) = counters.as_ref() {
            return Ok(c.clone());
        }
        let loaded = if let Some(c) = counts::Counters::load(&self.store, *generation)? {
            c
        } else {
            // Counted once, then kept: the next process reads them.
            let c = counts::Counters::recount(&self.store, *generation)?;
            c.save(&self.store)?;
            c
        };
        *counters = Some(loaded.clone());
        Ok(loaded)
    }

    pub fn counts(&self) -> Result<Counts> {
        Ok(self.counters()?.counts())
    }

    /// Nodes per kind (`Episode`, `Project`, …).
    pub fn kind_counts(&self) -> Result<HashMap<&'static str, u64>> {
        Ok(self.counters()?.kinds())
    }

    /// Current edges per relation.
    pub fn relation_counts(&self) -> Result<HashMap<Relation, u64>> {
        Ok(self.counters()?.relations())
    }

    /// Empties every hot-tier cache (they refill on use).
    pub fn clear_caches(&self) {
        self.nodes.clear();
        self.edges.clear();
        self.docs.clear();
        self.timelines.clear();
    }

    pub fn cache_stats(&self) -> Vec<CacheStats> {
        vec![
            self.nodes.stats(),
            self.edges.stats(),
            self.docs.stats(),
            self.timelines.stats(),
        ]
    }
}

/// The kind label of an index tag.
pub fn tag_label(tag: u8) -> &'static str {
    match tag {
        keys::EPISODE_TAG => "Episode",
        2 => "Document",
        3 => "Memory",
        t if t >= keys::ENTITY_TAG_BASE => EntityType::ALL
            .get(usize::from(t - keys::ENTITY_TAG_BASE))
            .map_or("Unknown", |e| e.as_str()),
        _ => "Unknown",
    }
}

fn nonzero(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n).expect("cache sizes are positive")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Edge, Timestamp};
    use eywa_storage::Config;

    /// Every node of `view` with its current outgoing edges, in a fixed order.
    fn contents(view: &View) -> Vec<String> {
        let mut out: Vec<String> = view
            .nodes()
            .map(|node| {
                let mut edges: Vec<String> = view
                    .adjacent(node.id, true, false)
                    .map(|(edge, to, _)| format!("{edge:?} -> {:?}", to.id))
                    .collect();
                edges.sort();
                format!("{node:?}: {edges:?}")
            })
            .collect();
        out.sort();
        out
    }

    /// The batches that land while the view is built outside the writer lock reach it
    /// before it is installed: what it shows is what a load after them shows.
    #[test]
    fn writes_that_land_while_the_view_loads_are_in_it() {
        let graph = Graph::open(Config::new().temporary(true).open().unwrap()).unwrap();
        let (a, b, c) = (
            NodeId::episode("a"),
            NodeId::episode("b"),
            NodeId::episode("c"),
        );
        let (p, q) = (NodeId::project("/p"), NodeId::project("/q"));
        let touched = Edge::new(a, Relation::Touched, p, Timestamp(10));
        let follows = Edge::new(b, Relation::Follows, a, Timestamp(20));
        for edge in [&touched, &follows] {
            graph.supersede(EdgeRef::of(edge), edge.clone()).unwrap();
        }
        let before = contents(&View::load(graph.store()).unwrap());
        *graph.while_loading.lock().unwrap() = Some(Box::new(move |graph: &Graph| {
            // `a` touched `q`, not `p`; and `c` came.
            let moved = Edge::new(a, Relation::Touched, q, Timestamp(30));
            graph
                .supersede(EdgeRef::of(&touched), moved.clone())
                .unwrap();
            let came = Edge::new(c, Relation::Touched, p, Timestamp(40));
            graph.supersede(EdgeRef::of(&came), came.clone()).unwrap();
        }));
        let loaded = contents(&graph.view().unwrap());
        assert!(
            graph.while_loading.lock().unwrap().is_none(),
            "the write ran"
        );
        let after = contents(&View::load(graph.store()).unwrap());
        assert_ne!(after, before);
        assert_eq!(loaded, after);
        // Once installed, writes reach the view directly, and nothing is recorded.
        assert!(graph.missed().is_none());
    }

    /// With a loader running, a reader's first walk has the view built on the loader's
    /// thread, and waits for it.
    #[test]
    fn a_running_loader_builds_the_view_for_the_reader() {
        let graph = Graph::open(Config::new().temporary(true).open().unwrap()).unwrap();
        let edge = Edge::new(
            NodeId::episode("a"),
            Relation::Touched,
            NodeId::project("/p"),
            Timestamp(10),
        );
        graph.supersede(EdgeRef::of(&edge), edge.clone()).unwrap();
        let built_on = Arc::new(Mutex::new(None));
        let on = built_on.clone();
        *graph.while_loading.lock().unwrap() = Some(Box::new(move |_: &Graph| {
            *on.lock().unwrap() = std::thread::current().name().map(str::to_owned);
        }));
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let loader = std::thread::Builder::new()
                .name("view-loader".into())
                .spawn_scoped(s, || graph.run_view_loader(&stop))
                .unwrap();
            // Asked once the loader has taken its place (before, a reader loads it itself).
            while graph.loader().is_none() {
                std::thread::yield_now();
            }
            assert_eq!(contents(&graph.view().unwrap()).len(), 2);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            loader.join().unwrap();
        });
        assert_eq!(built_on.lock().unwrap().as_deref(), Some("view-loader"));
        assert!(graph.loader().is_none(), "a stopped loader takes no asks");
    }
}
