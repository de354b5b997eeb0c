use std::collections::{HashMap, HashSet};

use eywa_storage::{Batch, Keyspace, Store};
use serde::{Deserialize, Serialize};

use super::keys;
use crate::Result;
use crate::extract::SessionFacts;
use crate::model::{
    Edge, EdgeId, EntityType, Handoff, Node, NodeId, NodeKind, Relation, Timestamp,
};

/// Docs keyspace prefix of handoff documents.
const HANDOFF_PREFIX: u8 = b'h';

/// What eywa knows of a source file as last ingested, to skip it when unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceRecord {
    pub path: String,
    pub len: u64,
    pub modified_ms: i64,
    pub session_id: String,
    pub lines: u64,
    pub skipped_lines: u64,
    /// The Episode it yielded; `None` for files without a user or assistant message.
    pub episode: Option<NodeId>,
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
    /// Source files that yielded an Episode.
    pub sessions: u64,
    pub episodes: u64,
    pub entities: u64,
    pub edges: u64,
    /// Source files known, sessions or not.
    pub sources: u64,
    /// Malformed lines in the sources as last read.
    pub skipped_lines: u64,
}

/// The temporal knowledge graph, stored in the warm tier.
#[derive(Debug, Clone)]
pub struct Graph {
    store: Store,
}

impl Graph {
    pub fn new(store: Store) -> Self {
        Graph { store }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn node(&self, id: NodeId) -> Result<Option<Node>> {
        Ok(self.store.get(Keyspace::Nodes, &keys::node(id))?)
    }

    pub fn edge(&self, id: EdgeId) -> Result<Option<Edge>> {
        Ok(self.store.get(Keyspace::Edges, &keys::edge(id))?)
    }

    /// Edges (expired ones included) listed under `id` in an adjacency keyspace.
    fn adjacent(&self, keyspace: Keyspace, id: NodeId) -> Result<Vec<Edge>> {
        let mut edges = Vec::new();
        for key in self.store.keys(keyspace, id.as_bytes()) {
            let key = key?;
            let edge_id = keys::edge_of_adjacency(&key).ok_or(eywa_storage::Error::BadKey {
                keyspace: keyspace.name(),
                reason: "adjacency key shorter than two ids",
            })?;
            if let Some(edge) = self.edge(edge_id)? {
                edges.push(edge);
            }
        }
        Ok(edges)
    }

    /// Current (unexpired) edges at `id` in `direction`, with the nodes at their other
    /// ends, optionally of one relation.
    pub fn neighbors(
        &self,
        id: NodeId,
        direction: Direction,
        relation: Option<Relation>,
    ) -> Result<Vec<Neighbor>> {
        let mut edges = Vec::new();
        if direction != Direction::In {
            edges.extend(self.adjacent(Keyspace::EdgesBySrc, id)?);
        }
        if direction != Direction::Out {
            edges.extend(self.adjacent(Keyspace::EdgesByDst, id)?);
        }
        let mut out = Vec::new();
        for edge in edges {
            if edge.expired_at.is_some() || relation.is_some_and(|r| r != edge.relation) {
                continue;
            }
            let other = if edge.src == id { edge.dst } else { edge.src };
            if let Some(node) = self.node(other)? {
                out.push(Neighbor { edge, node });
            }
        }
        Ok(out)
    }

    /// Episodes with a current edge to `entity` that held within `[from, until]`, newest
    /// first, each once.
    pub fn what_touched(
        &self,
        entity: NodeId,
        from: Option<Timestamp>,
        until: Option<Timestamp>,
    ) -> Result<Vec<Touch>> {
        let mut seen = HashSet::new();
        let mut touches = Vec::new();
        for edge in self.adjacent(Keyspace::EdgesByDst, entity)? {
            if edge.expired_at.is_some() || !edge.valid_within(from, until) {
                continue;
            }
            if !seen.insert(edge.src) {
                continue;
            }
            if let Some(node) = self.node(edge.src)?
                && node.episode().is_some()
            {
                touches.push(Touch {
                    episode: node,
                    edge,
                });
            }
        }
        touches.sort_by_key(|t| {
            let start = t.episode.episode().map_or(0, |e| e.start.0);
            (std::cmp::Reverse(start), t.episode.id)
        });
        Ok(touches)
    }

    /// Entities of `entity_type` whose name, alias or path equals `name` (case-insensitive).
    pub fn find_entities(&self, entity_type: EntityType, name: &str) -> Result<Vec<Node>> {
        let tag = 16 + entity_type as u8;
        let mut ids = Vec::new();
        for key in self
            .store
            .keys(Keyspace::NodesByName, &keys::name_prefix(tag, name))
        {
            if let Some(id) = keys::trailing_node(&key?)
                && !ids.contains(&id)
            {
                ids.push(id);
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

    /// Every Episode, newest first.
    pub fn episodes(&self) -> Result<Vec<Node>> {
        let mut nodes = Vec::new();
        for key in self.store.keys(Keyspace::EpisodesByTime, &[]).rev() {
            let key = key?;
            let id = keys::trailing_node(&key).ok_or(eywa_storage::Error::BadKey {
                keyspace: Keyspace::EpisodesByTime.name(),
                reason: "key shorter than an id",
            })?;
            if let Some(node) = self.node(id)? {
                nodes.push(node);
            }
        }
        Ok(nodes)
    }

    pub fn source(&self, path: &str) -> Result<Option<SourceRecord>> {
        Ok(self.store.get(Keyspace::Sources, path.as_bytes())?)
    }

    /// Every handoff, in no particular order.
    pub fn handoffs(&self) -> Result<Vec<Handoff>> {
        self.store
            .scan::<Handoff>(Keyspace::Docs, &[HANDOFF_PREFIX])
            .map(|r| r.map(|(_, h)| h).map_err(Into::into))
            .collect()
    }

    /// Writes what one source file says, atomically: its episode, handoff, entities and
    /// edges with their index entries, and the source record. Re-writing the same facts
    /// changes nothing; entities shared with other sessions are merged; edges the file no
    /// longer supports are expired, not deleted.
    pub fn write_session(&self, facts: Option<&SessionFacts>, source: &SourceRecord) -> Result<()> {
        let mut batch = Batch::new();
        let now = Timestamp::now();
        if let Some(facts) = facts {
            self.put_node(&mut batch, facts.episode.clone())?;
            for entity in &facts.entities {
                self.put_node(&mut batch, entity.clone())?;
            }
            let kept: HashSet<EdgeId> = facts.edges.iter().map(|e| e.id).collect();
            for old in self.adjacent(Keyspace::EdgesBySrc, facts.episode.id)? {
                if !kept.contains(&old.id) && old.expired_at.is_none() {
                    let mut expired = old;
                    expired.expired_at = Some(now);
                    batch.put(Keyspace::Edges, keys::edge(expired.id), &expired)?;
                }
            }
            for edge in &facts.edges {
                self.put_edge(&mut batch, edge.clone())?;
            }
            let mut key = vec![HANDOFF_PREFIX];
            key.extend_from_slice(NodeId::handoff(&facts.handoff.session_id).as_bytes());
            batch.put(Keyspace::Docs, key, &facts.handoff)?;
        }
        batch.put(Keyspace::Sources, source.path.as_bytes().to_vec(), source)?;
        self.store.apply(batch)?;
        Ok(())
    }

    fn put_node(&self, batch: &mut Batch, mut node: Node) -> Result<()> {
        let old: Option<Node> = self.node(node.id)?;
        if let Some(old) = &old {
            merge_shared(old, &mut node);
            if *old == node {
                return Ok(());
            }
            let new_keys = keys::node_index(&node);
            for stale in keys::node_index(old) {
                if !new_keys.contains(&stale) {
                    batch.delete(stale.0, stale.1);
                }
            }
        }
        for (keyspace, key) in keys::node_index(&node) {
            batch.put_raw(keyspace, key, Vec::new());
        }
        batch.put(Keyspace::Nodes, keys::node(node.id), &node)?;
        Ok(())
    }

    fn put_edge(&self, batch: &mut Batch, mut edge: Edge) -> Result<()> {
        if let Some(old) = self.edge(edge.id)? {
            // When eywa first learned the fact stays when it is re-read.
            edge.recorded_at = old.recorded_at;
            if old.expired_at.is_none() && old == edge {
                return Ok(());
            }
        }
        for (keyspace, key) in keys::edge_index(&edge) {
            batch.put_raw(keyspace, key, Vec::new());
        }
        batch.put(Keyspace::Edges, keys::edge(edge.id), &edge)?;
        Ok(())
    }

    pub fn counts(&self) -> Result<Counts> {
        let mut counts = Counts {
            episodes: self.store.len(Keyspace::EpisodesByTime) as u64,
            edges: self.store.len(Keyspace::Edges) as u64,
            ..Counts::default()
        };
        let mut entities = HashSet::new();
        for key in self.store.keys(Keyspace::NodesByName, &[]) {
            let key = key?;
            if key.first().is_some_and(|tag| *tag >= 16)
                && let Some(id) = keys::trailing_node(&key)
            {
                entities.insert(id);
            }
        }
        counts.entities = entities.len() as u64;
        for record in self.store.scan::<SourceRecord>(Keyspace::Sources, &[]) {
            let (_, record) = record?;
            counts.sources += 1;
            counts.skipped_lines += record.skipped_lines;
            counts.sessions += u64::from(record.episode.is_some());
        }
        Ok(counts)
    }

    /// Count of current edges per relation.
    pub fn relation_counts(&self) -> Result<HashMap<Relation, u64>> {
        let mut counts = HashMap::new();
        for entry in self.store.scan::<Edge>(Keyspace::Edges, &[]) {
            let (_, edge) = entry?;
            if edge.expired_at.is_none() {
                *counts.entry(edge.relation).or_insert(0) += 1;
            }
        }
        Ok(counts)
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
