//! The Graph service's messages: nodes, neighbors, what touched an entity, walks, paths and
//! related sessions.

use std::sync::Arc;

use tonic::Status;

use super::model::{edge_from_wire, node_from_wire};
use super::{count, node_id, optional_time};
use crate::api::pb;
use crate::engine::{MAX_DEPTH, MAX_LIMIT, parse_relations};
use crate::graph::{
    AsOf, Direction, EdgeFilter, Neighbor, PathStep, Related, Shared, Touch, Walk, WalkStep,
};
use crate::model::{Handoff, Node};

/// Default `limit` of graph queries.
const DEFAULT_GRAPH_LIMIT: usize = 100;
const DEFAULT_RELATED_LIMIT: usize = 10;
const DEFAULT_WALK_DEPTH: usize = 2;
const DEFAULT_PATH_DEPTH: usize = 4;

fn as_of(value: Option<pb::AsOf>) -> Result<AsOf, Status> {
    let Some(pb::AsOf { valid, recorded }) = value else {
        return Ok(AsOf::default());
    };
    Ok(AsOf {
        valid: optional_time("as_of.valid", valid)?,
        recorded: optional_time("as_of.recorded", recorded)?,
    })
}

fn direction(value: i32) -> Result<Direction, Status> {
    match pb::Direction::try_from(value) {
        Ok(pb::Direction::Both) => Ok(Direction::Both),
        Ok(pb::Direction::Out) => Ok(Direction::Out),
        Ok(pb::Direction::In) => Ok(Direction::In),
        Err(_) => Err(Status::invalid_argument(format!(
            "unknown direction {value}"
        ))),
    }
}

fn filter(
    relations: &[String],
    direction_value: i32,
    since: Option<prost_types::Timestamp>,
    until: Option<prost_types::Timestamp>,
    as_of_value: Option<pb::AsOf>,
) -> Result<EdgeFilter, Status> {
    Ok(EdgeFilter {
        direction: direction(direction_value)?,
        relations: parse_relations(relations)?,
        from: optional_time("since", since)?,
        until: optional_time("until", until)?,
        as_of: as_of(as_of_value)?,
    })
}

/// A `Neighbors` request, validated.
pub struct NeighborsQuery {
    pub node: String,
    pub filter: EdgeFilter,
    pub limit: usize,
}

impl TryFrom<pb::NeighborsRequest> for NeighborsQuery {
    type Error = Status;

    fn try_from(request: pb::NeighborsRequest) -> Result<Self, Status> {
        let pb::NeighborsRequest {
            node,
            relations,
            direction,
            limit,
            since,
            until,
            as_of,
        } = request;
        Ok(NeighborsQuery {
            node,
            filter: filter(&relations, direction, since, until, as_of)?,
            limit: count("limit", limit, DEFAULT_GRAPH_LIMIT, MAX_LIMIT)?,
        })
    }
}

/// A `WhatTouched` request, validated.
pub struct TouchedQuery {
    pub entity: String,
    pub filter: EdgeFilter,
    pub limit: usize,
}

impl TryFrom<pb::WhatTouchedRequest> for TouchedQuery {
    type Error = Status;

    fn try_from(request: pb::WhatTouchedRequest) -> Result<Self, Status> {
        let pb::WhatTouchedRequest {
            entity,
            since,
            until,
            limit,
            as_of,
            relations,
            direction,
        } = request;
        Ok(TouchedQuery {
            entity,
            filter: filter(&relations, direction, since, until, as_of)?,
            limit: count("limit", limit, DEFAULT_GRAPH_LIMIT, MAX_LIMIT)?,
        })
    }
}

/// A `FindEntities` request, validated.
pub struct FindQuery {
    pub name: String,
    pub entity_type: String,
    pub prefix: bool,
    pub limit: usize,
}

impl TryFrom<pb::FindEntitiesRequest> for FindQuery {
    type Error = Status;

    fn try_from(request: pb::FindEntitiesRequest) -> Result<Self, Status> {
        let pb::FindEntitiesRequest {
            name,
            entity_type,
            prefix,
            limit,
        } = request;
        Ok(FindQuery {
            name,
            entity_type,
            prefix,
            limit: count("limit", limit, DEFAULT_GRAPH_LIMIT, MAX_LIMIT)?,
        })
    }
}

/// A `Walk` request, validated.
pub struct WalkQuery {
    pub node: String,
    pub depth: u32,
    pub max_nodes: usize,
    pub filter: EdgeFilter,
}

impl TryFrom<pb::WalkRequest> for WalkQuery {
    type Error = Status;

    fn try_from(request: pb::WalkRequest) -> Result<Self, Status> {
        let pb::WalkRequest {
            node,
            depth,
            max_nodes,
            relations,
            direction,
            since,
            until,
            as_of,
        } = request;
        Ok(WalkQuery {
            node,
            depth: count("depth", depth, DEFAULT_WALK_DEPTH, MAX_DEPTH as usize)? as u32,
            max_nodes: count("max_nodes", max_nodes, DEFAULT_GRAPH_LIMIT, MAX_LIMIT)?,
            filter: filter(&relations, direction, since, until, as_of)?,
        })
    }
}

/// A `Path` request, validated.
pub struct PathQuery {
    pub from: String,
    pub to: String,
    pub max_depth: u32,
    pub filter: EdgeFilter,
}

impl TryFrom<pb::PathRequest> for PathQuery {
    type Error = Status;

    fn try_from(request: pb::PathRequest) -> Result<Self, Status> {
        let pb::PathRequest {
            from,
            to,
            max_depth,
            relations,
            as_of,
            direction,
            since,
            until,
        } = request;
        Ok(PathQuery {
            from,
            to,
            max_depth: count(
                "max_depth",
                max_depth,
                DEFAULT_PATH_DEPTH,
                MAX_DEPTH as usize,
            )? as u32,
            filter: filter(&relations, direction, since, until, as_of)?,
        })
    }
}

/// A `Related` request, validated.
pub struct RelatedQuery {
    pub session: String,
    pub limit: usize,
}

impl TryFrom<pb::RelatedRequest> for RelatedQuery {
    type Error = Status;

    fn try_from(request: pb::RelatedRequest) -> Result<Self, Status> {
        let pb::RelatedRequest { session, limit } = request;
        Ok(RelatedQuery {
            session,
            limit: count("limit", limit, DEFAULT_RELATED_LIMIT, MAX_LIMIT)?,
        })
    }
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

impl From<Neighbor> for pb::Neighbor {
    fn from(Neighbor { edge, node }: Neighbor) -> Self {
        pb::Neighbor {
            edge: Some(edge.into()),
            node: Some(node.into()),
        }
    }
}

impl From<Touch> for pb::Touch {
    fn from(Touch { episode, edge }: Touch) -> Self {
        pb::Touch {
            episode: Some(episode.into()),
            edge: Some(edge.into()),
        }
    }
}

impl From<Walk> for pb::WalkResponse {
    fn from(Walk { steps, truncated }: Walk) -> Self {
        pb::WalkResponse {
            steps: steps
                .into_iter()
                .map(|WalkStep { node, depth, via }| {
                    let (via, from) = match via {
                        Some((edge, from)) => (Some(edge.into()), from.to_string()),
                        None => (None, String::new()),
                    };
                    pb::WalkStep {
                        node: Some((*node).clone().into()),
                        depth,
                        via,
                        from,
                    }
                })
                .collect(),
            truncated,
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
                .map(|PathStep { node, via }| pb::PathStep {
                    node: Some((*node).clone().into()),
                    via: via.map(Into::into),
                })
                .collect(),
        }
    }
}

impl From<Related> for pb::RelatedSession {
    fn from(
        Related {
            episode,
            score,
            shared,
            similarity,
        }: Related,
    ) -> Self {
        pb::RelatedSession {
            episode: Some((*episode).clone().into()),
            score,
            similarity,
            shared: shared
                .into_iter()
                .map(|Shared { entity, weight }| pb::SharedEntity {
                    entity: Some((*entity).clone().into()),
                    weight,
                })
                .collect(),
        }
    }
}

impl TryFrom<pb::Neighbor> for Neighbor {
    type Error = Status;

    fn try_from(n: pb::Neighbor) -> Result<Neighbor, Status> {
        let pb::Neighbor { edge, node } = n;
        Ok(Neighbor {
            edge: edge_from_wire(edge)?,
            node: node_from_wire(node)?,
        })
    }
}

impl TryFrom<pb::Touch> for Touch {
    type Error = Status;

    fn try_from(t: pb::Touch) -> Result<Touch, Status> {
        let pb::Touch { episode, edge } = t;
        Ok(Touch {
            episode: node_from_wire(episode)?,
            edge: edge_from_wire(edge)?,
        })
    }
}

impl TryFrom<pb::WalkResponse> for Walk {
    type Error = Status;

    fn try_from(w: pb::WalkResponse) -> Result<Walk, Status> {
        let pb::WalkResponse { steps, truncated } = w;
        let steps = steps
            .into_iter()
            .map(
                |pb::WalkStep {
                     node: n,
                     depth,
                     via,
                     from,
                 }| {
                    let via = match via {
                        Some(e) => Some((e.try_into()?, node_id(&from)?)),
                        None => None,
                    };
                    Ok(WalkStep {
                        node: node_from_wire(n)?.into(),
                        depth,
                        via,
                    })
                },
            )
            .collect::<Result<_, Status>>()?;
        Ok(Walk { steps, truncated })
    }
}

/// A server's path: none when it found none.
pub fn path_from_wire(p: pb::PathResponse) -> Result<Option<Vec<PathStep>>, Status> {
    let pb::PathResponse { found, steps } = p;
    if !found {
        return Ok(None);
    }
    steps
        .into_iter()
        .map(|pb::PathStep { node: n, via }| {
            Ok(PathStep {
                node: node_from_wire(n)?.into(),
                via: via.map(TryInto::try_into).transpose()?,
            })
        })
        .collect::<Result<Vec<_>, Status>>()
        .map(Some)
}

impl TryFrom<pb::RelatedSession> for Related {
    type Error = Status;

    fn try_from(r: pb::RelatedSession) -> Result<Related, Status> {
        let pb::RelatedSession {
            episode,
            score,
            shared,
            similarity,
        } = r;
        Ok(Related {
            episode: node_from_wire(episode)?.into(),
            score,
            similarity,
            shared: shared
                .into_iter()
                .map(|pb::SharedEntity { entity, weight }| {
                    Ok(Shared {
                        entity: node_from_wire(entity)?.into(),
                        weight,
                    })
                })
                .collect::<Result<_, Status>>()?,
        })
    }
}
