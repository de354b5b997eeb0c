//! Requests → domain queries, validated. Each request is destructured exhaustively so a
//! new field cannot be silently ignored.

use tonic::Status;

use super::pb;
use crate::engine::{
    MAX_DAYS_BACK, MAX_DEPTH, MAX_LIMIT, MAX_SEARCH_LIMIT, SearchRequest, parse_relations,
};
use crate::graph::{AsOf, Direction, EdgeFilter};
use crate::model::Timestamp;
use crate::retrieve::{DEFAULT_DAYS_BACK, DEFAULT_LIMIT, GetOptions, SearchMode};

/// Default `limit` of graph queries.
const DEFAULT_GRAPH_LIMIT: usize = 100;
const DEFAULT_RELATED_LIMIT: usize = 10;
const DEFAULT_WALK_DEPTH: usize = 2;
const DEFAULT_PATH_DEPTH: usize = 4;

fn from_timestamp(field: &str, t: prost_types::Timestamp) -> Result<Timestamp, Status> {
    let prost_types::Timestamp { seconds, nanos } = t;
    if !(0..1_000_000_000).contains(&nanos) {
        return Err(Status::invalid_argument(format!(
            "{field}: nanos must be within 0..1e9"
        )));
    }
    seconds
        .checked_mul(1000)
        .and_then(|ms| ms.checked_add(i64::from(nanos / 1_000_000)))
        .map(Timestamp)
        .ok_or_else(|| Status::invalid_argument(format!("{field}: timestamp out of range")))
}

fn optional_time(
    field: &str,
    t: Option<prost_types::Timestamp>,
) -> Result<Option<Timestamp>, Status> {
    t.map(|t| from_timestamp(field, t)).transpose()
}

/// `optional int32` → a count within `1..=max`, or `default` when absent.
pub(super) fn count(
    field: &str,
    value: Option<i32>,
    default: usize,
    max: usize,
) -> Result<usize, Status> {
    bounded(field, value, default, 1, max)
}

/// `optional int32` → a number within `min..=max`, or `default` when absent.
pub(super) fn bounded(
    field: &str,
    value: Option<i32>,
    default: usize,
    min: usize,
    max: usize,
) -> Result<usize, Status> {
    match value {
        None => Ok(default),
        Some(v) if v >= 0 && (min..=max).contains(&(v as usize)) => Ok(v as usize),
        Some(v) => Err(Status::invalid_argument(format!(
            "{field} must be between {min} and {max}, got {v}"
        ))),
    }
}

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

pub struct GetQuery {
    pub query: String,
    pub options: GetOptions,
}

impl TryFrom<pb::GetHandoffsRequest> for GetQuery {
    type Error = Status;

    fn try_from(request: pb::GetHandoffsRequest) -> Result<Self, Status> {
        let pb::GetHandoffsRequest {
            query,
            days_back,
            limit,
            projects,
        } = request;
        let days_back = count(
            "days_back",
            days_back,
            DEFAULT_DAYS_BACK as usize,
            MAX_DAYS_BACK as usize,
        )? as u32;
        let limit = count("limit", limit, DEFAULT_LIMIT, MAX_LIMIT)?;
        if projects.iter().any(|p| p.trim().is_empty()) {
            return Err(Status::invalid_argument("projects: empty project name"));
        }
        Ok(GetQuery {
            query,
            options: GetOptions {
                days_back,
                limit,
                projects,
            },
        })
    }
}

impl TryFrom<pb::SearchRequest> for SearchRequest {
    type Error = Status;

    fn try_from(request: pb::SearchRequest) -> Result<Self, Status> {
        let pb::SearchRequest {
            query,
            types,
            projects,
            since,
            until,
            limit,
            agent_types,
            mode,
            focus,
        } = request;
        if query.trim().is_empty() {
            return Err(Status::invalid_argument("query: give words to search for"));
        }
        let mode = if mode.trim().is_empty() {
            SearchMode::default()
        } else {
            SearchMode::parse(&mode).ok_or_else(|| {
                Status::invalid_argument(format!(
                    "mode: `{mode}` is not lexical, semantic or hybrid"
                ))
            })?
        };
        if projects.iter().any(|p| p.trim().is_empty()) {
            return Err(Status::invalid_argument("projects: empty project name"));
        }
        Ok(SearchRequest {
            query,
            kinds: types,
            projects,
            agent_types,
            since: optional_time("since", since)?,
            until: optional_time("until", until)?,
            limit: count("limit", limit, 10, MAX_SEARCH_LIMIT)?,
            mode,
            focus: Some(focus.trim().to_owned()).filter(|f| !f.is_empty()),
        })
    }
}

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
