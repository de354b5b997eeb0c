//! The Graph service's messages: nodes, neighbors, what touched an entity, walks, paths and
//! related sessions.

use std::sync::Arc;

use tonic::Status;

use super::wire::wire;
use crate::api::pb;
use crate::engine::{EdgeFilter, Neighbor, PathStep, Related, Shared, Touch, Walk, WalkStep};
use crate::engine::{MAX_DEPTH, MAX_LIMIT};
use crate::model::{Handoff, Node};

/// Default `limit` of graph queries.
const DEFAULT_GRAPH_LIMIT: usize = 100;
const DEFAULT_RELATED_LIMIT: usize = 10;
const DEFAULT_WALK_DEPTH: usize = 2;
const DEFAULT_PATH_DEPTH: usize = 4;

/// A `Neighbors` or `WhatTouched` request, validated: a node and which of its edges.
pub struct NodeQuery {
    /// The node: an id, `session:<id or prefix>`, or `<type>:<name>`.
    pub node: String,
    /// Which of its edges count.
    pub filter: EdgeFilter,
    /// Most answers to return.
    pub limit: usize,
}

impl NodeQuery {
    /// A query about `node`, along the edges `filter` keeps.
    pub fn new(node: &str, filter: &EdgeFilter, limit: usize) -> Self {
        NodeQuery {
            node: node.to_owned(),
            filter: filter.clone(),
            limit,
        }
    }
}

wire! {
    NodeQuery <=> pb::NeighborsRequest {
        node, limit: count(DEFAULT_GRAPH_LIMIT, MAX_LIMIT),
        filter => { relations, direction, since, until, as_of }: edge_filter,
    }
}

/// A `WhatTouched` request, validated: an entity, which of its edges, and whose
/// sessions.
pub struct TouchedQuery {
    /// The entity: an id or `<type>:<name>`.
    pub node: String,
    /// Which of its edges count.
    pub filter: EdgeFilter,
    /// Most sessions to return.
    pub limit: usize,
    /// Only sessions by these users, on these machines (empty: any).
    pub authors: crate::model::Attribution,
}

wire! {
    TouchedQuery <=> pb::WhatTouchedRequest {
        node = entity, limit: count(DEFAULT_GRAPH_LIMIT, MAX_LIMIT),
        filter => { relations, direction, since, until, as_of }: edge_filter,
        authors => { users, machines }: attribution,
    }
}

/// A `FindEntities` request, validated.
pub struct FindQuery {
    pub name: String,
    /// Empty for any type.
    pub entity_type: String,
    pub prefix: bool,
    pub limit: usize,
}

wire! {
    FindQuery <=> pb::FindEntitiesRequest {
        name, entity_type, prefix, limit: count(DEFAULT_GRAPH_LIMIT, MAX_LIMIT),
    }
}

/// A `Walk` request, validated.
pub struct WalkQuery {
    pub node: String,
    pub depth: u32,
    pub max_nodes: usize,
    pub filter: EdgeFilter,
}

wire! {
    WalkQuery <=> pb::WalkRequest {
        node, depth: count(DEFAULT_WALK_DEPTH, MAX_DEPTH as usize),
        max_nodes: count(DEFAULT_GRAPH_LIMIT, MAX_LIMIT),
        filter => { relations, direction, since, until, as_of }: edge_filter,
    }
}

/// A `Path` request, validated.
pub struct PathQuery {
    pub from: String,
    pub to: String,
    pub max_depth: u32,
    pub filter: EdgeFilter,
}

wire! {
    PathQuery <=> pb::PathRequest {
        from, to, max_depth: count(DEFAULT_PATH_DEPTH, MAX_DEPTH as usize),
        filter => { relations, direction, since, until, as_of }: edge_filter,
    }
}

/// A `Related` request, validated.
pub struct RelatedQuery {
    pub session: String,
    pub limit: usize,
}

wire! {
    RelatedQuery <=> pb::RelatedRequest { session, limit: count(DEFAULT_RELATED_LIMIT, MAX_LIMIT) }
}

/// A node and, for a session, its handoff.
impl From<(Arc<Node>, Option<Handoff>)> for pb::GetNodeResponse {
    fn from((node, handoff): (Arc<Node>, Option<Handoff>)) -> Self {
        pb::GetNodeResponse {
            node: Some((*node).clone().into()),
            handoff: handoff.map(Into::into),
        }
    }
}

impl From<Vec<Arc<Node>>> for pb::FindEntitiesResponse {
    fn from(nodes: Vec<Arc<Node>>) -> Self {
        pb::FindEntitiesResponse {
            entities: nodes.into_iter().map(|n| (*n).clone().into()).collect(),
        }
    }
}

/// A node and its neighbors.
impl From<(Arc<Node>, Vec<Neighbor>)> for pb::NeighborsResponse {
    fn from((node, neighbors): (Arc<Node>, Vec<Neighbor>)) -> Self {
        pb::NeighborsResponse {
            node: Some((*node).clone().into()),
            neighbors: neighbors.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<Vec<Touch>> for pb::WhatTouchedResponse {
    fn from(touches: Vec<Touch>) -> Self {
        pb::WhatTouchedResponse {
            touches: touches.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<Vec<Related>> for pb::RelatedResponse {
    fn from(related: Vec<Related>) -> Self {
        pb::RelatedResponse {
            related: related.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<Option<Vec<PathStep>>> for pb::PathResponse {
    fn from(path: Option<Vec<PathStep>>) -> Self {
        pb::PathResponse {
            found: path.is_some(),
            steps: path
                .unwrap_or_default()
                .into_iter()
                .map(Into::into)
                .collect(),
        }
    }
}

/// A server's path: none when it found none.
pub(crate) fn path_from_wire(p: pb::PathResponse) -> Result<Option<Vec<PathStep>>, Status> {
    let pb::PathResponse { found, steps } = p;
    if !found {
        return Ok(None);
    }
    steps
        .into_iter()
        .map(PathStep::try_from)
        .collect::<Result<Vec<_>, Status>>()
        .map(Some)
}

wire! {
    Neighbor <=> pb::Neighbor { edge: present, node: present }
}

wire! {
    Touch <=> pb::Touch { episode: present, edge: present }
}

wire! {
    Walk <=> pb::WalkResponse { steps: messages, truncated }
}

wire! {
    WalkStep <=> pb::WalkStep { node: shared_node, depth, via => { via, from }: via }
}

wire! {
    PathStep <=> pb::PathStep { node: shared_node, via: maybe }
}

wire! {
    Related <=> pb::RelatedSession {
        episode: shared_node, score, shared: messages, similarity,
    }
}

wire! {
    Shared <=> pb::SharedEntity { entity: shared_node, weight }
}
