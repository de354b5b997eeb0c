//! Writes: one atomic batch per source file, versioned edges, merged shared entities, and
//! the view and caches updated after the batch lands.

mod docs;
mod sequence;
mod upsert;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use eywa_storage::{Batch, Keyspace};

pub use self::docs::SpawnRecord;
use self::docs::slug_key;
use self::sequence::SEQUENCE_PREFIX;
use super::counts::Change;
use super::snapshot;
use super::view::Delta;
use super::{Direction, EdgeRef, Graph, SourceRecord};
use crate::Result;
use crate::model::{Edge, EdgeId, Node, NodeId, Relation, SessionFacts, Timestamp};

/// Docs keyspace prefix of handoff documents.
pub(crate) const HANDOFF_PREFIX: u8 = b'h';

/// A batch being assembled, with what the view and caches learn once it lands.
pub(super) struct Pending {
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
    /// Nodes whose stored out-edges were listed, with the edges that have a stored
    /// version: any other edge from them is new.
    scanned: HashMap<NodeId, HashSet<EdgeId>>,
}

impl Pending {
    pub(super) fn new(batch: Batch) -> Self {
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
            scanned: HashMap::new(),
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
        let old = self.graph.source(&source.path)?;
        self.stage(batch, facts, source, old)
    }

    /// [`WriteGroup::add`] with the source's stored record (`old`) already read.
    fn stage(
        &mut self,
        batch: Batch,
        facts: &[SessionFacts],
        source: &SourceRecord,
        old: Option<SourceRecord>,
    ) -> Result<()> {
        if self.pending.holds(&source.path, facts) {
            self.commit_now()?;
        }
        self.pending.batch.append(batch);
        self.graph
            .stage_session(&mut self.pending, facts, source, old, Timestamp::now())
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
        let mut group = self.group();
        group.add(batch, facts, source)?;
        group.commit()
    }

    /// [`Graph::write_session`] for many sources that have no record yet (the caller
    /// checked), in one atomic batch: a bulk write (an import) pays for one transaction,
    /// not one each, and reads no record it knows is absent.
    pub fn write_new_sources(&self, sources: &[(&[SessionFacts], &SourceRecord)]) -> Result<()> {
        let mut group = self.group();
        for (facts, source) in sources {
            group.stage(Batch::new(), facts, source, None)?;
        }
        group.commit()
    }

    /// Starts a group of source writes that land in one atomic batch, so a bulk writer pays
    /// the cost of a batch (a journal write) once for many files. The group holds the writer lock
    /// until it is committed or dropped; dropped, it writes nothing.
    pub fn group(&self) -> WriteGroup<'_> {
        WriteGroup {
            graph: self,
            generation: self
                .writer
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            pending: Pending::new(Batch::new()),
        }
    }

    fn stage_session(
        &self,
        pending: &mut Pending,
        facts: &[SessionFacts],
        source: &SourceRecord,
        old_source: Option<SourceRecord>,
        now: Timestamp,
    ) -> Result<()> {
        let pending = &mut *pending;
        self.stage_facts(pending, facts, now)?;
        pending.change.source(old_source, source.clone());
        pending.sources.insert(source.path.clone());
        pending
            .batch
            .put(Keyspace::Sources, source.path.as_bytes().to_vec(), source)?;
        Ok(())
    }

    /// Stores `handoffs` in place of the handoffs of the same sessions, their facts left as
    /// they are (a handoff whose text was redacted after it was written).
    pub fn replace_handoffs(&self, handoffs: &[crate::model::Handoff]) -> Result<()> {
        if handoffs.is_empty() {
            return Ok(());
        }
        let mut generation = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut pending = Pending::new(Batch::new());
        for handoff in handoffs {
            let doc = NodeId::handoff(&handoff.session_id);
            let mut key = vec![HANDOFF_PREFIX];
            key.extend_from_slice(doc.as_bytes());
            pending.batch.put(Keyspace::Docs, key, handoff)?;
            pending.stale_docs.push(doc);
        }
        self.commit(pending, &mut generation)
    }

    /// Writes a node that no source file holds (a memory a client asked to keep) with its
    /// entities and edges, atomically with `batch`: its edges that `facts` no longer lists
    /// are expired, never deleted.
    pub fn write_facts(&self, batch: Batch, facts: &SessionFacts) -> Result<()> {
        let mut generation = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut pending = Pending::new(batch);
        self.stage_facts(&mut pending, std::slice::from_ref(facts), Timestamp::now())?;
        self.commit(pending, &mut generation)
    }

    /// Stages the nodes and edges of `facts`, expiring the current edges out of each
    /// node that it no longer lists (but those other writers own).
    fn stage_facts(
        &self,
        pending: &mut Pending,
        facts: &[SessionFacts],
        now: Timestamp,
    ) -> Result<()> {
        let own: HashSet<NodeId> = facts.iter().map(|f| f.episode.id).collect();
        for facts in facts {
            // One scan of what the store holds out of the episode: its edges that have no
            // stored version need no lookup (a new session's, all of them).
            let links = self.stored_links(facts.episode.id, Direction::Out)?;
            pending
                .scanned
                .insert(facts.episode.id, links.iter().map(|l| l.edge).collect());
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
            for link in links.iter().filter(|l| l.adjacency.is_current()) {
                let Some(old) = self
                    .latest_version(link.edge_ref())?
                    .filter(|e| e.expired_at.is_none())
                else {
                    continue;
                };
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
                let queued = self
                    .queued
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
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
        Ok(())
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
            sources,
            scanned: _,
        } = pending;
        snapshot::bump(&mut batch, *generation + 1)?;
        // Counted only once loaded: otherwise they no longer match, and are recounted.
        let mut counters = self
            .counters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
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
        let wrote_sources = !sources.is_empty();
        if wrote_sources {
            snapshot::bump_sources(&mut batch, *generation + 1)?;
        }
        let episodes: Vec<NodeId> = delta
            .nodes
            .iter()
            .filter(|n| n.is_episode())
            .map(|n| n.id)
            .collect();
        // Held until the nodes are current in the cache: a reader of the log then reads
        // what was written.
        let mut log = self.episode_log();
        // Held until the index of session ids has the sources written: a lookup sees both
        // or neither.
        let session_ids = match wrote_sources {
            true => self.hold_session_ids()?,
            false => None,
        };
        self.store.apply(batch)?;
        *generation += 1;
        if counted.is_some() {
            *counters = counted;
        }
        drop(counters);
        self.queued
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(queued);
        if wrote_sources {
            if let Some(held) = session_ids {
                held.written(self, &sources, *generation);
            }
            self.sources_written
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend(sources);
        }
        for id in &delta.expired {
            self.edges.remove(id);
        }
        for doc in &stale_docs {
            self.docs.remove(doc);
        }
        // A view not loaded yet is built later from what the store then holds; one
        // loading now gets the change once it is built.
        if let Some(view) = self.view.get() {
            view.write()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .apply(&delta);
        } else if let Some(missed) = self.missed().as_mut() {
            missed.push(delta);
        }
        // After the view changed: a timeline built from the old view is never served.
        self.timelines.bump();
        for (id, node) in staged {
            self.nodes.insert(id, Arc::new(node));
        }
        for edge in edges {
            self.edges.insert(edge.id, Arc::new(edge));
        }
        for id in episodes {
            log.push(id);
        }
        Ok(())
    }

    /// Supersedes a fact: the current version of `old` expires now and `new` is recorded.
    /// Both stay stored; the current view shows only `new`.
    pub fn supersede(&self, old: EdgeRef, new: Edge) -> Result<()> {
        let mut generation = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
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
