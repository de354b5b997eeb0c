//! Reads on two time axes: the current view by default, or what held at a valid time and
//! what eywa knew at a record time.

use std::sync::Arc;

use eywa_storage::Keyspace;

use super::keys::{self, Adjacency};
use super::write::HANDOFF_PREFIX;
use super::{Direction, EdgeFilter, Graph};
use crate::Result;
use crate::model::{Edge, EdgeId, Handoff, Node, NodeId, NodeKind, Relation, Timestamp};

/// Which version of the world to read. `None` on both axes is the current view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AsOf {
    /// What held in the world at this time (valid time).
    pub valid: Option<Timestamp>,
    /// What eywa knew at this time (record time).
    pub recorded: Option<Timestamp>,
}

impl AsOf {
    pub fn is_current(&self) -> bool {
        self.valid.is_none() && self.recorded.is_none()
    }

    /// Whether this version of an edge is the one seen.
    pub fn sees(&self, edge: &Edge) -> bool {
        let known = match self.recorded {
            Some(at) => edge.recorded_at_time(at),
            None => edge.expired_at.is_none(),
        };
        known && self.valid.is_none_or(|at| edge.valid_at(at))
    }
}

/// Where an edge is stored: its id, ends and relation (the id derives from the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EdgeRef {
    pub id: EdgeId,
    pub src: NodeId,
    pub relation: Relation,
    pub dst: NodeId,
}

impl EdgeRef {
    pub fn new(src: NodeId, relation: Relation, dst: NodeId) -> Self {
        EdgeRef {
            id: EdgeId::derive(src, relation.as_str(), dst),
            src,
            relation,
            dst,
        }
    }

    pub fn of(edge: &Edge) -> Self {
        EdgeRef {
            id: edge.id,
            src: edge.src,
            relation: edge.relation,
            dst: edge.dst,
        }
    }

    /// The edge between `node` and `other`, leaving `node` when `outgoing`.
    pub(super) fn at(
        node: NodeId,
        id: EdgeId,
        relation: Relation,
        other: NodeId,
        outgoing: bool,
    ) -> Self {
        let (src, dst) = if outgoing {
            (node, other)
        } else {
            (other, node)
        };
        EdgeRef {
            id,
            src,
            relation,
            dst,
        }
    }
}

/// An edge at a node, read from the adjacency indexes (expired ones included).
#[derive(Debug, Clone, Copy)]
pub(super) struct Link {
    pub edge: EdgeId,
    pub relation: crate::model::Relation,
    /// The node the link is filed under.
    pub node: NodeId,
    pub other: NodeId,
    /// Whether the edge leaves `node`.
    pub outgoing: bool,
    pub adjacency: Adjacency,
}

impl Link {
    pub(super) fn edge_ref(&self) -> EdgeRef {
        EdgeRef::at(
            self.node,
            self.edge,
            self.relation,
            self.other,
            self.outgoing,
        )
    }
}

impl Graph {
    /// Every stored version of an edge, oldest first (none when it was never stored).
    pub fn edge_versions(&self, edge: EdgeRef) -> Result<Vec<Edge>> {
        let Some(latest) = self.latest_version(edge)? else {
            return Ok(Vec::new());
        };
        let mut versions = self
            .store
            .scan::<Edge>(Keyspace::Edges, &keys::edge_versions(edge.id))
            .map(|r| r.map(|(_, e)| e).map_err(Into::into))
            .collect::<Result<Vec<_>>>()?;
        versions.push(latest);
        Ok(versions)
    }

    /// The most recently recorded version of an edge, expired or not: its `edges_by_src`
    /// entry.
    pub(super) fn latest_version(&self, edge: EdgeRef) -> Result<Option<Edge>> {
        let key = keys::by_ref(edge);
        match self.store.get_raw(Keyspace::EdgesBySrc, &key)? {
            Some(value) => keys::latest_edge(&key, &value)
                .map(Some)
                .ok_or_else(|| bad_adjacency(Keyspace::EdgesBySrc).into()),
            None => Ok(None),
        }
    }

    /// The current version of an edge (none when expired), through the hot cache.
    pub fn edge(&self, edge: EdgeRef) -> Result<Option<Arc<Edge>>> {
        if let Some(cached) = self.edges.get(&edge.id) {
            return Ok(Some(cached));
        }
        Ok(self
            .latest_version(edge)?
            .filter(|e| e.expired_at.is_none())
            .map(|e| {
                let e = Arc::new(e);
                self.edges.insert(edge.id, e.clone());
                e
            }))
    }

    /// The version of an edge seen `as_of`.
    pub fn edge_as_of(&self, edge: EdgeRef, as_of: AsOf) -> Result<Option<Edge>> {
        if as_of.is_current() {
            return Ok(self.edge(edge)?.map(|e| (*e).clone()));
        }
        Ok(self
            .edge_versions(edge)?
            .into_iter()
            .rev()
            .find(|e| as_of.sees(e)))
    }

    /// The nodes current `relation` edges lead to from `id`, read from the adjacency index
    /// alone (no view): one prefix scan, then each node.
    pub fn current_targets(&self, id: NodeId, relation: Relation) -> Result<Vec<Arc<Node>>> {
        let mut targets = Vec::new();
        for link in self.links_under(Keyspace::EdgesBySrc, id, Some(relation))? {
            if link.adjacency.is_current()
                && let Some(node) = self.node(link.other)?
            {
                targets.push(node);
            }
        }
        Ok(targets)
    }

    /// Edges at `id` from the adjacency indexes, expired ones included.
    pub(super) fn stored_links(&self, id: NodeId, direction: Direction) -> Result<Vec<Link>> {
        let mut links = Vec::new();
        if direction != Direction::In {
            links.extend(self.links_under(Keyspace::EdgesBySrc, id, None)?);
        }
        if direction != Direction::Out {
            links.extend(self.links_under(Keyspace::EdgesByDst, id, None)?);
        }
        Ok(links)
    }

    /// The entries filed under `id` in one adjacency index (`EdgesBySrc` or `EdgesByDst`),
    /// of one relation or all, expired ones included.
    pub(super) fn links_under(
        &self,
        keyspace: Keyspace,
        id: NodeId,
        relation: Option<Relation>,
    ) -> Result<Vec<Link>> {
        let mut prefix = id.as_bytes().to_vec();
        prefix.extend(relation.map(Relation::tag));
        let bad = || bad_adjacency(keyspace);
        let mut links = Vec::new();
        for entry in self.store.entries(keyspace, &prefix) {
            let (key, value) = entry?;
            let key = keys::parse_adjacency(&key).ok_or_else(bad)?;
            links.push(Link {
                edge: key.edge,
                relation: key.relation,
                node: key.node,
                other: key.other,
                outgoing: keyspace == Keyspace::EdgesBySrc,
                adjacency: Adjacency::decode(&value).ok_or_else(bad)?,
            });
        }
        Ok(links)
    }

    /// Every handoff, in no particular order.
    pub fn handoffs(&self) -> Result<Vec<Handoff>> {
        self.store
            .scan::<Handoff>(Keyspace::Docs, &[HANDOFF_PREFIX])
            .map(|r| r.map(|(_, h)| h).map_err(Into::into))
            .collect()
    }

    /// The handoff of one session, through the hot cache.
    pub fn handoff(&self, session_id: &str) -> Result<Option<Handoff>> {
        let id = NodeId::handoff(session_id);
        if let Some(handoff) = self.docs.get(&id) {
            return Ok(Some((*handoff).clone()));
        }
        let mut key = vec![HANDOFF_PREFIX];
        key.extend_from_slice(id.as_bytes());
        let handoff: Option<Handoff> = self.store.get(Keyspace::Docs, &key)?;
        if let Some(h) = &handoff {
            self.docs.insert(id, Arc::new(h.clone()));
        }
        Ok(handoff)
    }

    /// The plans `episode` carries (HAS_PLAN): plan documents with their text, at most
    /// `limit`.
    pub fn plans(&self, episode: NodeId, limit: usize) -> Result<Vec<Node>> {
        let filter = EdgeFilter {
            direction: Direction::Out,
            relations: vec![Relation::HasPlan],
            ..EdgeFilter::default()
        };
        Ok(self
            .neighbors(episode, &filter, limit)?
            .into_iter()
            .map(|n| n.node)
            .filter(|n| {
                matches!(n.kind, NodeKind::Document(_))
                    && n.content.as_deref().is_some_and(crate::extract::is_plan)
            })
            .collect())
    }
}

fn bad_adjacency(keyspace: Keyspace) -> eywa_storage::Error {
    eywa_storage::Error::BadKey {
        keyspace: keyspace.name(),
        reason: "unexpected adjacency layout",
    }
}
