//! The temporal graph over `eywa-storage`: idempotent, versioned upserts that keep every
//! index keyspace in step with its primary in one batch; as-of reads on both time axes; an
//! in-memory petgraph view for walks; hot caches for node and edge payloads.

mod bounds;
mod changes;
mod check;
mod counts;
mod history;
mod keys;
mod loading;
mod read;
mod related;
mod session_ids;
mod snapshot;
mod sources;
mod upgrade;
mod view;
mod walk;
mod write;

pub use self::bounds::{MAX_DEPTH, MAX_LIMIT, parse_relations};
pub(crate) use self::bounds::{check_depth, check_limit, check_window};
pub use self::read::{AsOf, EdgeRef};
pub use self::related::{Related, Shared};
pub use self::sources::{SourceRecord, SourceVersion};
pub use self::view::{EdgeMeta, NodeMeta};
pub use self::walk::{EdgeFilter, PathStep, Walk, WalkStep};
pub(crate) use self::write::HANDOFF_PREFIX;
pub use self::write::{SpawnRecord, WriteGroup};

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use eywa_storage::{CacheStats, GenerationalCache, HotCache, Keyspace, Store};
use serde::Serialize;

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
    /// The episodes written through this graph, in order (see [`Graph::episodes_cursor`]).
    episodes_written: Mutex<changes::EpisodeLog>,
    /// Every session's id with its source's path (see [`Graph::sources_of_sessions`]).
    session_ids: Mutex<Option<session_ids::SessionIds>>,
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
            episodes_written: Mutex::new(changes::EpisodeLog::default()),
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
