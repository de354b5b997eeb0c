//! The in-memory view: a petgraph of every node and every current edge, built on open from
//! index keyspaces alone (no value decoding) and kept in step with writes. Walks run here;
//! node and edge payloads come from the warm tier through the hot cache.

use std::collections::HashMap;

use petgraph::Direction as PgDirection;
use petgraph::stable_graph::{EdgeIndex, NodeIndex, StableDiGraph};
use petgraph::visit::EdgeRef;

use super::keys::{self, Adjacency};
use crate::Result;
use crate::model::{EdgeId, NodeId, Relation};
use eywa_storage::{Keyspace, Store};

/// What the view keeps of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeMeta {
    pub id: NodeId,
    /// The index tag: 1 for episodes, 16 + entity type for entities.
    pub tag: u8,
    /// Start of an episode (ms); 0 for other nodes.
    pub start: i64,
}

impl NodeMeta {
    pub fn is_episode(&self) -> bool {
        self.tag == keys::EPISODE_TAG
    }
}

/// What the view keeps of a current edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeMeta {
    pub id: EdgeId,
    pub relation: Relation,
    pub valid_from: i64,
    /// `i64::MAX` when open.
    pub valid_to: i64,
}

/// Whether a fact valid over `[valid_from, valid_to]` held at some point in `[from, until]`
/// (ms; `None` = open).
pub(super) fn overlaps(
    valid_from: i64,
    valid_to: i64,
    from: Option<i64>,
    until: Option<i64>,
) -> bool {
    until.is_none_or(|u| valid_from <= u) && from.is_none_or(|f| valid_to >= f)
}

/// A change to apply to the view after its batch landed.
#[derive(Debug, Default, Clone)]
pub(crate) struct Delta {
    pub nodes: Vec<NodeMeta>,
    /// Current edges to add or update: (src, dst, meta).
    pub edges: Vec<(NodeId, NodeId, EdgeMeta)>,
    /// Edges no longer current.
    pub expired: Vec<EdgeId>,
}

#[derive(Debug, Default)]
pub(crate) struct View {
    graph: StableDiGraph<NodeMeta, EdgeMeta>,
    nodes: HashMap<NodeId, NodeIndex>,
    edges: HashMap<EdgeId, EdgeIndex>,
}

impl View {
    /// Builds the view from the index keyspaces.
    pub(crate) fn load(store: &Store) -> Result<View> {
        let mut view = View::default();
        for key in store.keys(Keyspace::EpisodesByTime, &[]) {
            let key = key?;
            let (start, id) =
                keys::parse_episode_time(&key).ok_or(bad_key(Keyspace::EpisodesByTime))?;
            view.upsert_node(NodeMeta {
                id,
                tag: keys::EPISODE_TAG,
                start,
            });
        }
        for key in store.keys(Keyspace::NodesByName, &[]) {
            let key = key?;
            let id = keys::trailing_node(&key).ok_or(bad_key(Keyspace::NodesByName))?;
            if !view.nodes.contains_key(&id) {
                view.upsert_node(NodeMeta {
                    id,
                    tag: key[0],
                    start: 0,
                });
            }
        }
        // By source, so each node's edges keep the order a walk has always seen (each
        // value starts with the edge's adjacency).
        for entry in store.entries(Keyspace::EdgesBySrc, &[]) {
            let (key, value) = entry?;
            let adj = keys::parse_adjacency(&key).ok_or(bad_key(Keyspace::EdgesBySrc))?;
            let meta = Adjacency::decode(&value).ok_or(bad_key(Keyspace::EdgesBySrc))?;
            if meta.is_current() {
                view.upsert_edge(
                    adj.node,
                    adj.other,
                    EdgeMeta {
                        id: adj.edge,
                        relation: adj.relation,
                        valid_from: meta.valid_from,
                        valid_to: meta.valid_to,
                    },
                );
            }
        }
        Ok(view)
    }

    /// A view of exactly these nodes and current edges.
    pub(crate) fn from_parts(nodes: Vec<NodeMeta>, edges: Vec<(NodeId, NodeId, EdgeMeta)>) -> View {
        let mut view = View {
            graph: StableDiGraph::with_capacity(nodes.len(), edges.len()),
            nodes: HashMap::with_capacity(nodes.len()),
            edges: HashMap::with_capacity(edges.len()),
        };
        for node in nodes {
            view.upsert_node(node);
        }
        for (src, dst, meta) in edges {
            view.upsert_edge(src, dst, meta);
        }
        view
    }

    /// Every current edge with its endpoints.
    pub(crate) fn edge_triples(&self) -> impl Iterator<Item = (NodeId, NodeId, EdgeMeta)> + '_ {
        self.graph.edge_indices().filter_map(move |e| {
            let (a, b) = self.graph.edge_endpoints(e)?;
            Some((self.graph[a].id, self.graph[b].id, self.graph[e]))
        })
    }

    pub(crate) fn apply(&mut self, delta: &Delta) {
        for node in &delta.nodes {
            self.upsert_node(*node);
        }
        for id in &delta.expired {
            if let Some(index) = self.edges.remove(id) {
                self.graph.remove_edge(index);
            }
        }
        for (src, dst, meta) in &delta.edges {
            self.upsert_edge(*src, *dst, *meta);
        }
    }

    fn upsert_node(&mut self, meta: NodeMeta) -> NodeIndex {
        if let Some(&index) = self.nodes.get(&meta.id) {
            self.graph[index] = meta;
            index
        } else {
            let index = self.graph.add_node(meta);
            self.nodes.insert(meta.id, index);
            index
        }
    }

    /// Endpoints missing from the view (an edge written before its node's index entry
    /// was read) get a placeholder that the node's own entry later fills in.
    fn ensure_node(&mut self, id: NodeId) -> NodeIndex {
        match self.nodes.get(&id) {
            Some(&index) => index,
            None => self.upsert_node(NodeMeta {
                id,
                tag: 0,
                start: 0,
            }),
        }
    }

    fn upsert_edge(&mut self, src: NodeId, dst: NodeId, meta: EdgeMeta) {
        if let Some(&index) = self.edges.get(&meta.id) {
            self.graph[index] = meta;
            return;
        }
        let (a, b) = (self.ensure_node(src), self.ensure_node(dst));
        let index = self.graph.add_edge(a, b, meta);
        self.edges.insert(meta.id, index);
    }

    pub(crate) fn node(&self, id: NodeId) -> Option<NodeMeta> {
        self.nodes.get(&id).map(|&i| self.graph[i])
    }

    /// Every node's metadata.
    pub(crate) fn nodes(&self) -> impl Iterator<Item = &NodeMeta> {
        self.graph.node_weights()
    }

    /// Current edges at `id`: (edge, node at the other end, whether the edge points away).
    pub(crate) fn adjacent(
        &self,
        id: NodeId,
        outgoing: bool,
        incoming: bool,
    ) -> impl Iterator<Item = (EdgeMeta, NodeMeta, bool)> + '_ {
        let index = self.nodes.get(&id).copied();
        let out = index
            .filter(|_| outgoing)
            .into_iter()
            .flat_map(move |i| self.graph.edges_directed(i, PgDirection::Outgoing))
            .map(move |e| (*e.weight(), self.graph[e.target()], true));
        let inc = index
            .filter(|_| incoming)
            .into_iter()
            .flat_map(move |i| self.graph.edges_directed(i, PgDirection::Incoming))
            .map(move |e| (*e.weight(), self.graph[e.source()], false));
        out.chain(inc)
    }

    /// Number of distinct episodes with a current edge to `id`.
    pub(crate) fn episode_degree(&self, id: NodeId) -> usize {
        let mut seen: Vec<NodeId> = self
            .adjacent(id, true, true)
            .filter(|(_, n, _)| n.is_episode())
            .map(|(_, n, _)| n.id)
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }

    pub(crate) fn episode_count(&self) -> usize {
        self.graph.node_weights().filter(|n| n.is_episode()).count()
    }
}

fn bad_key(keyspace: Keyspace) -> eywa_storage::Error {
    eywa_storage::Error::BadKey {
        keyspace: keyspace.name(),
        reason: "unexpected key or value layout",
    }
}
