//! Writes: one atomic batch per source file, versioned edges, merged shared entities, and
//! the view and caches updated after the batch lands.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use eywa_storage::{Batch, Keyspace};

use super::counts::Change;
use super::keys::{self, Adjacency};
use super::snapshot;
use super::view::{Delta, EdgeMeta, NodeMeta};
use super::{Graph, SourceRecord};
use crate::Result;
use crate::model::{
    Edge, EdgeId, Node, NodeId, NodeKind, Relation, SessionFacts, Spawn, Timestamp,
};

/// Docs keyspace prefix of handoff documents.
pub(super) const HANDOFF_PREFIX: u8 = b'h';
/// Docs keyspace prefix of spawn records.
const SPAWN_PREFIX: u8 = b's';
/// Docs keyspace prefix of the slug index: `g | slug | 0x00 | episode id`.
const SLUG_PREFIX: u8 = b'g';

fn slug_key(slug: &str, episode: NodeId) -> Vec<u8> {
    let mut key = vec![SLUG_PREFIX];
    key.extend_from_slice(slug.as_bytes());
    key.push(0);
    key.extend_from_slice(episode.as_bytes());
    key
}

/// Docs keyspace prefix of projects whose FOLLOWS chain awaits the sequence pass. Set in
/// the batch that wrote a session, cleared in the batch of the pass: a crash in between
/// leaves the work queued, not lost.
const SEQUENCE_PREFIX: u8 = b'q';

/// Writes per batch of the sequence pass.
const SEQUENCE_BATCH: usize = 30_000;

fn spawn_key(agent_episode: NodeId) -> Vec<u8> {
    let mut key = vec![SPAWN_PREFIX];
    key.extend_from_slice(agent_episode.as_bytes());
    key
}

/// A subagent as its parent's `Task`/`Agent` call described it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SpawnRecord {
    pub parent_session: String,
    pub agent_id: String,
    pub tool_use_id: Option<String>,
    pub agent_type: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub duration_ms: Option<u64>,
    #[serde(default)]
    pub tokens: Option<u64>,
    #[serde(default)]
    pub tool_uses: Option<u64>,
}

/// A batch being assembled, with what the view and caches learn once it lands.
pub struct Pending {
    pub batch: Batch,
    delta: Delta,
    /// Nodes as this batch leaves them (the store still holds the older version): a node
    /// written twice in one batch merges with its staged version.
    staged: HashMap<NodeId, Node>,
    edges: Vec<Edge>,
    /// Cached documents to drop once the batch has landed (never before: a reader in
    /// between would cache the old value again).
    stale_docs: Vec<NodeId>,
    /// What the batch changes in the counters.
    change: Change,
    /// Projects this batch queues for the sequence pass.
    queued: HashSet<NodeId>,
    /// The latest version of each edge this batch writes: a later source in the same batch
    /// versions against it, not the store's.
    versions: HashMap<EdgeId, Edge>,
    /// Sources this batch writes.
    sources: HashSet<String>,
}

impl Pending {
    pub fn new(batch: Batch) -> Self {
        Pending {
            batch,
            delta: Delta::default(),
            staged: HashMap::new(),
            edges: Vec::new(),
            stale_docs: Vec::new(),
            change: Change::default(),
            queued: HashSet::new(),
            versions: HashMap::new(),
            sources: HashSet::new(),
        }
    }

    /// Whether this batch already writes `source` or one of `episodes`: a second write
    /// would read the store's older state of them, so the batch must land first.
    fn holds(&self, source: &str, episodes: &[SessionFacts]) -> bool {
        self.sources.contains(source)
            || episodes
                .iter()
                .any(|f| self.staged.contains_key(&f.episode.id))
    }
}

/// Sources written together in one transaction (see [`Graph::group`]).
pub struct WriteGroup<'g> {
    graph: &'g Graph,
    generation: std::sync::MutexGuard<'g, u64>,
    pending: Pending,
}

impl WriteGroup<'_> {
    /// Stages what one source says, and `batch` (its archive, queue writes), as
    /// [`Graph::write_session`] would write them. A source or episode the group already
    /// holds makes what it holds land first.
    pub fn add(
        &mut self,
        batch: Batch,
        facts: &[SessionFacts],
        source: &SourceRecord,
    ) -> Result<()> {
        if self.pending.holds(&source.path, facts) {
            self.commit_now()?;
        }
        self.pending.batch.append(batch);
        self.graph
            .stage_session(&mut self.pending, facts, source, Timestamp::now())
    }

    /// Whether the group holds `source` or one of `episodes` (adding them would first
    /// commit what it holds).
    pub fn holds(&self, source: &str, episodes: &[SessionFacts]) -> bool {
        self.pending.holds(source, episodes)
    }

    /// Sources staged since the last commit.
    pub fn sources(&self) -> usize {
        self.pending.sources.len()
    }

    /// Writes staged since the last commit.
    pub fn writes(&self) -> usize {
        self.pending.batch.len()
    }

    /// Applies what the group holds in one transaction; the group stays open.
    pub fn commit_now(&mut self) -> Result<()> {
        if self.pending.batch.is_empty() {
            return Ok(());
        }
        let pending = std::mem::replace(&mut self.pending, Pending::new(Batch::new()));
        self.graph.commit(pending, &mut self.generation)
    }

    /// Applies what the group holds and releases the writer lock.
    pub fn commit(mut self) -> Result<()> {
        self.commit_now()
    }
}

impl Graph {
    /// Writes what one source file says, atomically: its episodes (a session and its
    /// inline subagent runs), handoffs, entities and edges with every index entry, the
    /// source record, and whatever `batch` already holds (the archive's blob record).
    /// Re-writing the same facts changes nothing; entities shared with other sessions are
    /// merged; a changed fact gets a new version and the old one is expired; facts the file
    /// no longer supports are expired, never deleted.
    pub fn write_session(
        &self,
        batch: Batch,
        facts: &[SessionFacts],
        source: &SourceRecord,
    ) -> Result<()> {
        self.write_sources(batch, &[(facts, source)])
    }

    /// [`Graph::write_session`] for many sources in one atomic batch: bulk writes (an
    /// import) pay for one transaction, not one each.
    pub fn write_sources(
        &self,
        batch: Batch,
        sources: &[(&[SessionFacts], &SourceRecord)],
    ) -> Result<()> {
        let mut group = self.group();
        group.pending.batch.append(batch);
        for (facts, source) in sources {
            group.add(Batch::new(), facts, source)?;
        }
        group.commit()
    }

    /// Starts a group of source writes that land in one transaction, so a bulk writer pays
    /// sled's cost of a transaction once for many files. The group holds the writer lock
    /// until it is committed or dropped; dropped, it writes nothing.
    pub fn group(&self) -> WriteGroup<'_> {
        WriteGroup {
            graph: self,
            generation: self.writer.lock().unwrap_or_else(|p| p.into_inner()),
            pending: Pending::new(Batch::new()),
        }
    }

    fn stage_session(
        &self,
        pending: &mut Pending,
        facts: &[SessionFacts],
        source: &SourceRecord,
        now: Timestamp,
    ) -> Result<()> {
        let pending = &mut *pending;
        let own: HashSet<NodeId> = facts.iter().map(|f| f.episode.id).collect();
        for facts in facts {
            self.put_node(pending, facts.episode.clone())?;
            for entity in &facts.entities {
                self.put_node(pending, entity.clone())?;
            }
            let mut kept = HashSet::new();
            for edge in &facts.edges {
                if kept.insert(edge.id) {
                    self.put_edge(pending, edge.clone(), now)?;
                }
            }
            for old in self.current_edges_from(facts.episode.id)? {
                // A SPAWNED edge to a subagent in its own file is that file's to assert;
                // FOLLOWS and CONTINUES belong to the sequence pass, HAS_PLAN to the plan.
                let foreign = (old.relation == Relation::Spawned && !own.contains(&old.dst))
                    || matches!(
                        old.relation,
                        Relation::Follows | Relation::Continues | Relation::HasPlan
                    );
                if !kept.contains(&old.id) && !foreign {
                    self.expire_edge(pending, &old, now)?;
                }
            }
            if let Some(slug) = facts.episode.episode().and_then(|e| e.slug.as_deref()) {
                pending
                    .batch
                    .put_raw(Keyspace::Docs, slug_key(slug, facts.episode.id), Vec::new());
            }
            for edge in facts
                .edges
                .iter()
                .filter(|e| e.relation == Relation::Touched)
            {
                // Queued once until the sequence pass takes it (a marker already stored
                // needs no second write).
                let queued = self.queued.lock().unwrap_or_else(|p| p.into_inner());
                if queued.contains(&edge.dst) || pending.queued.contains(&edge.dst) {
                    continue;
                }
                drop(queued);
                let mut key = vec![SEQUENCE_PREFIX];
                key.extend_from_slice(edge.dst.as_bytes());
                pending.batch.put_raw(Keyspace::Docs, key, Vec::new());
                pending.queued.insert(edge.dst);
            }
            if let Some(handoff) = &facts.handoff {
                let doc = NodeId::handoff(&handoff.session_id);
                let mut key = vec![HANDOFF_PREFIX];
                key.extend_from_slice(doc.as_bytes());
                pending.batch.put(Keyspace::Docs, key, handoff)?;
                pending.stale_docs.push(doc);
            }
        }
        let old = self.source(&source.path)?;
        pending.change.source(old, source.clone());
        pending.sources.insert(source.path.clone());
        pending
            .batch
            .put(Keyspace::Sources, source.path.as_bytes().to_vec(), source)?;
        Ok(())
    }

    /// Brings FOLLOWS (a session → the previous session of a project) and CONTINUES (a
    /// resumed session → the one before it with the same slug) in step for the sessions
    /// of every project a write queued: missing edges are added, edges that no longer hold
    /// are expired. Subagent runs take no part. Returns how many edges changed.
    pub fn derive_sequences(&self) -> Result<u64> {
        if !self
            .store
            .keys(Keyspace::Docs, &[SEQUENCE_PREFIX])
            .any(|_| true)
        {
            return Ok(0);
        }
        let mut generation = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        // The pass reads the view when it is in memory, else the adjacency index (an import
        // or a CLI ingest never pays for the whole graph). Loading the view takes the
        // writer lock, so this holds for the whole pass.
        let from_view = self.view_loaded();
        let now = Timestamp::now();
        let mut projects = Vec::new();
        let mut markers = Vec::new();
        for key in self.store.keys(Keyspace::Docs, &[SEQUENCE_PREFIX]) {
            let key = key?;
            if let Some(id) = NodeId::from_slice(&key[1..]) {
                projects.push(id);
            }
            markers.push(key);
        }
        if projects.is_empty() {
            return Ok(0);
        }
        let mut sessions: Vec<(i64, NodeId, Option<String>, Vec<String>)> = Vec::new();
        let mut listed: HashSet<NodeId> = HashSet::new();
        let mut desired: HashMap<NodeId, Vec<Edge>> = HashMap::new();
        for &project in &projects {
            let mut chain: Vec<(i64, NodeId)> = Vec::new();
            let members = match from_view {
                true => self.episodes_touching(project)?,
                false => self.touching_project(project)?,
            };
            for (_, id) in members {
                let Some(node) = self.node(id)? else { continue };
                let Some(episode) = node.episode().filter(|e| e.agent.is_none()) else {
                    continue;
                };
                let start = episode.start.0;
                chain.push((start, id));
                if listed.insert(id) {
                    sessions.push((start, id, episode.slug.clone(), episode.resumes.clone()));
                }
            }
            chain.sort();
            for pair in chain.windows(2) {
                let (start, later) = pair[1];
                let edge = Edge::new(later, Relation::Follows, pair[0].1, Timestamp(start));
                desired.entry(later).or_default().push(edge);
            }
        }
        sessions.sort();
        let mut last_of_slug: HashMap<&str, NodeId> = HashMap::new();
        for (start, id, slug, resumes) in &sessions {
            let wanted = desired.entry(*id).or_default();
            if let Some(slug) = slug.as_deref()
                && let Some(previous) = last_of_slug.insert(slug, *id)
            {
                wanted.push(Edge::new(
                    *id,
                    Relation::Continues,
                    previous,
                    Timestamp(*start),
                ));
            }
            // A resume replays the lines of the session it continues (Q9).
            for resumed in resumes {
                let edge = Edge::new(
                    *id,
                    Relation::Continues,
                    NodeId::episode(resumed),
                    Timestamp(*start),
                );
                if !wanted.iter().any(|e| e.id == edge.id) {
                    wanted.push(edge);
                }
            }
        }
        // What each episode holds now, from the view: derived edges and their windows.
        // Only what differs is read from the store and written.
        let mut stale: Vec<EdgeId> = Vec::new();
        let mut fresh: Vec<Edge> = Vec::new();
        {
            let view = match from_view {
                true => Some(self.view()?),
                false => None,
            };
            for (episode, edges) in desired {
                // (id, valid_from, valid_to) of each current derived edge out of `episode`.
                let current: Vec<(EdgeId, i64, i64)> = match &view {
                    Some(view) => view
                        .adjacent(episode, true, false)
                        .map(|(meta, _, _)| meta)
                        .filter(|m| matches!(m.relation, Relation::Follows | Relation::Continues))
                        .map(|m: EdgeMeta| (m.id, m.valid_from, m.valid_to))
                        .collect(),
                    None => self.derived_links_from(episode)?,
                };
                let wanted: HashSet<EdgeId> = edges.iter().map(|e| e.id).collect();
                stale.extend(
                    current
                        .iter()
                        .map(|m| m.0)
                        .filter(|id| !wanted.contains(id)),
                );
                // Derived edges carry no evidence and full confidence: the same id and
                // window is the same fact.
                fresh.extend(edges.into_iter().filter(|edge| {
                    !current.iter().any(|&(id, from, to)| {
                        id == edge.id
                            && from == edge.valid_from.0
                            && to == edge.valid_to.map_or(i64::MAX, |t| t.0)
                    })
                }));
            }
        }
        // Written in bounded batches; the queue markers go with the last, so a crash
        // part-way leaves the pass queued, to be redone (what landed is then the same fact).
        let mut changed = 0;
        let mut pending = Pending::new(Batch::new());
        for id in stale {
            if let Some(old) = self.edge(id)? {
                self.expire_edge(&mut pending, &old, now)?;
                changed += 1;
            }
            if pending.batch.len() >= SEQUENCE_BATCH {
                self.commit(
                    std::mem::replace(&mut pending, Pending::new(Batch::new())),
                    &mut generation,
                )?;
            }
        }
        for edge in fresh {
            self.put_edge(&mut pending, edge, now)?;
            changed += 1;
            if pending.batch.len() >= SEQUENCE_BATCH {
                self.commit(
                    std::mem::replace(&mut pending, Pending::new(Batch::new())),
                    &mut generation,
                )?;
            }
        }
        for key in markers {
            pending.batch.delete(Keyspace::Docs, key);
        }
        self.commit(pending, &mut generation)?;
        let mut queued = self.queued.lock().unwrap_or_else(|p| p.into_inner());
        for project in &projects {
            queued.remove(project);
        }
        Ok(changed)
    }

    /// The episodes with a current TOUCHED edge to `project` (the only relation from an
    /// episode to a project), from the adjacency index, each once (the `i64` is 0: callers
    /// read each node).
    fn touching_project(&self, project: NodeId) -> Result<Vec<(i64, NodeId)>> {
        let mut others: Vec<(i64, NodeId)> = self
            .links_under(Keyspace::EdgesByDst, project, Some(Relation::Touched))?
            .into_iter()
            .filter(|l| l.adjacency.is_current())
            .map(|l| (0, l.other))
            .collect();
        others.sort_unstable();
        others.dedup();
        Ok(others)
    }

    /// Current FOLLOWS and CONTINUES edges out of `episode` as (id, valid from, valid to),
    /// from the adjacency index.
    fn derived_links_from(&self, episode: NodeId) -> Result<Vec<(EdgeId, i64, i64)>> {
        let mut out = Vec::new();
        for relation in [Relation::Follows, Relation::Continues] {
            for link in self.links_under(Keyspace::EdgesBySrc, episode, Some(relation))? {
                if link.adjacency.is_current() {
                    out.push((
                        link.edge,
                        link.adjacency.valid_from,
                        link.adjacency.valid_to,
                    ));
                }
            }
        }
        Ok(out)
    }

    /// Episodes (sessions and their agents) whose lines carry `slug`.
    pub fn episodes_with_slug(&self, slug: &str) -> Result<Vec<NodeId>> {
        let mut prefix = vec![SLUG_PREFIX];
        prefix.extend_from_slice(slug.as_bytes());
        prefix.push(0);
        let mut ids = Vec::new();
        for key in self.store.keys(Keyspace::Docs, &prefix) {
            if let Some(id) = key?.get(prefix.len()..).and_then(NodeId::from_slice) {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    /// Records the subagents a session started, so their transcripts can find the call
    /// that started them (type, description, tool call id).
    pub fn put_spawns(batch: &mut Batch, parent_session: &str, spawns: &[Spawn]) -> Result<()> {
        for spawn in spawns {
            let key = spawn_key(NodeId::agent(parent_session, &spawn.agent_id));
            let record = SpawnRecord {
                parent_session: parent_session.to_owned(),
                agent_id: spawn.agent_id.clone(),
                tool_use_id: spawn.tool_use_id.clone(),
                agent_type: spawn.agent_type.clone(),
                description: spawn.description.clone(),
                duration_ms: spawn.duration_ms,
                tokens: spawn.tokens,
                tool_uses: spawn.tool_uses,
            };
            batch.put(Keyspace::Docs, key, &record)?;
        }
        Ok(())
    }

    /// The spawn record of a subagent episode, if its parent was read.
    pub fn spawn(&self, agent_episode: NodeId) -> Result<Option<SpawnRecord>> {
        Ok(self.store.get(Keyspace::Docs, &spawn_key(agent_episode))?)
    }

    /// Applies a pending batch with the next generation, then brings the view and the
    /// caches in step.
    pub(super) fn commit(&self, pending: Pending, generation: &mut u64) -> Result<()> {
        let Pending {
            mut batch,
            delta,
            staged,
            edges,
            stale_docs,
            change,
            queued,
            versions: _,
            sources: _,
        } = pending;
        snapshot::bump(&mut batch, *generation + 1)?;
        // Counted only once loaded: otherwise they no longer match, and are recounted.
        let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        let counted = match counters.as_ref() {
            Some(c) => {
                let mut c = c.clone();
                c.apply(&change, *generation + 1, &mut batch)?;
                Some(c)
            }
            None => None,
        };
        if !stale_docs.is_empty() {
            snapshot::bump_handoffs(&mut batch, *generation + 1)?;
        }
        self.store.apply(batch)?;
        *generation += 1;
        if counted.is_some() {
            *counters = counted;
        }
        drop(counters);
        self.queued
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(queued);
        for id in &delta.expired {
            self.edges.remove(id);
        }
        for doc in &stale_docs {
            self.docs.remove(doc);
        }
        // A view not loaded yet is built later from what the store then holds.
        if let Some(view) = self.view.get() {
            view.write()
                .unwrap_or_else(|p| p.into_inner())
                .apply(&delta);
        }
        // After the view changed: a timeline built from the old view is never served.
        self.timelines.bump();
        for (id, node) in staged {
            self.nodes.insert(id, Arc::new(node));
        }
        for edge in edges {
            self.edges.insert(edge.id, Arc::new(edge));
        }
        Ok(())
    }

    fn put_node(&self, pending: &mut Pending, mut node: Node) -> Result<()> {
        let old = match pending.staged.get(&node.id) {
            Some(staged) => Some(Arc::new(staged.clone())),
            None => self.node(node.id)?,
        };
        if old.is_none() {
            pending.change.node_created(node.id, node_meta(&node).tag);
        }
        let old_keys = match &old {
            Some(old) => {
                merge_shared(old, &mut node);
                if **old == node {
                    return Ok(());
                }
                keys::node_index(old)
            }
            None => Vec::new(),
        };
        let new_keys = keys::node_index(&node);
        for stale in old_keys.iter().filter(|k| !new_keys.contains(k)) {
            pending.batch.delete(stale.0, stale.1.clone());
        }
        // Index entries the node already has stay as they are.
        for (keyspace, key) in new_keys.into_iter().filter(|k| !old_keys.contains(k)) {
            pending.batch.put_raw(keyspace, key, Vec::new());
        }
        pending
            .batch
            .put(Keyspace::Nodes, keys::node(node.id), &node)?;
        pending.delta.nodes.push(node_meta(&node));
        pending.staged.insert(node.id, node);
        Ok(())
    }

    /// Records `edge` unless its current version states the same fact. A different fact
    /// expires the current version and records a new one.
    fn put_edge(&self, pending: &mut Pending, mut edge: Edge, now: Timestamp) -> Result<()> {
        let latest = match pending.versions.get(&edge.id) {
            Some(staged) => Some(staged.clone()),
            None => self.latest_version(edge.id)?,
        };
        let recorded_at = match &latest {
            Some(old) if old.expired_at.is_none() && old.same_fact(&edge) => return Ok(()),
            Some(old) => {
                let at = Timestamp(now.0.max(old.recorded_at.0 + 1));
                if old.expired_at.is_none() {
                    let mut expired = old.clone();
                    expired.expired_at = Some(at);
                    pending.batch.put(
                        Keyspace::Edges,
                        keys::edge_version(expired.id, expired.recorded_at),
                        &expired,
                    )?;
                }
                at
            }
            None => now,
        };
        let was = latest.as_ref().is_some_and(|l| l.expired_at.is_none());
        pending.change.edge(edge.id, edge.relation, || was, true);
        edge.recorded_at = recorded_at;
        edge.expired_at = None;
        pending.batch.put(
            Keyspace::Edges,
            keys::edge_version(edge.id, edge.recorded_at),
            &edge,
        )?;
        self.put_adjacency(pending, &edge);
        pending.versions.insert(edge.id, edge.clone());
        pending.delta.edges.push((
            edge.src,
            edge.dst,
            EdgeMeta {
                id: edge.id,
                relation: edge.relation,
                valid_from: edge.valid_from.0,
                valid_to: edge.valid_to.map_or(i64::MAX, |t| t.0),
            },
        ));
        pending.edges.push(edge);
        Ok(())
    }

    /// Marks the current version of `edge` expired as of `now`.
    fn expire_edge(&self, pending: &mut Pending, edge: &Edge, now: Timestamp) -> Result<()> {
        pending.change.edge(edge.id, edge.relation, || true, false);
        let mut expired = edge.clone();
        expired.expired_at = Some(Timestamp(now.0.max(edge.recorded_at.0 + 1)));
        pending.batch.put(
            Keyspace::Edges,
            keys::edge_version(expired.id, expired.recorded_at),
            &expired,
        )?;
        self.put_adjacency(pending, &expired);
        pending.delta.expired.push(expired.id);
        pending.versions.insert(expired.id, expired);
        Ok(())
    }

    fn put_adjacency(&self, pending: &mut Pending, edge: &Edge) {
        let value = Adjacency::of(edge).encode();
        pending
            .batch
            .put_raw(Keyspace::EdgesBySrc, keys::by_src(edge), value.clone());
        pending
            .batch
            .put_raw(Keyspace::EdgesByDst, keys::by_dst(edge), value);
    }

    /// Supersedes a fact: the current version of `old` expires now and `new` is recorded.
    /// Both stay stored; the current view shows only `new`.
    pub fn supersede(&self, old: EdgeId, new: Edge) -> Result<()> {
        let mut generation = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let now = Timestamp::now();
        let mut pending = Pending::new(Batch::new());
        if let Some(current) = self.latest_version(old)?.filter(|e| e.expired_at.is_none()) {
            self.expire_edge(&mut pending, &current, now)?;
        }
        let now = Timestamp(now.0 + 1);
        self.put_edge(&mut pending, new, now)?;
        self.commit(pending, &mut generation)
    }
}

fn node_meta(node: &Node) -> NodeMeta {
    let (tag, start) = match &node.kind {
        NodeKind::Episode(e) => (keys::EPISODE_TAG, e.start.0),
        other => (other.tag(), 0),
    };
    NodeMeta {
        id: node.id,
        tag,
        start,
    }
}

/// Entities are shared by many sessions: what the stored one knows is kept (the earliest
/// first sighting, the latest last sighting, every alias).
fn merge_shared(old: &Node, new: &mut Node) {
    if let (NodeKind::Entity(old_e), NodeKind::Entity(new_e)) = (&old.kind, &mut new.kind) {
        new.created_at = new.created_at.min(old.created_at);
        new.updated_at = new.updated_at.max(old.updated_at);
        for alias in &old_e.aliases {
            if !new_e.aliases.contains(alias) {
                new_e.aliases.push(alias.clone());
            }
        }
        new_e.aliases.sort();
    }
}
