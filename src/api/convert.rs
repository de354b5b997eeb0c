//! proto ↔ domain. Requests are destructured exhaustively so that a new field cannot be
//! silently ignored.

use tonic::Status;

use super::pb;
use crate::engine::{GetOutcome, HandoffHit, IngestReport};
use crate::graph::{Counts, Direction, Neighbor, Touch};
use crate::model::{Edge, Episode, Handoff, Node, NodeId, NodeKind, Timestamp};
use crate::retrieve::{DEFAULT_DAYS_BACK, DEFAULT_LIMIT, GetOptions};

/// Default `limit` of graph queries.
pub const DEFAULT_GRAPH_LIMIT: usize = 100;

pub fn timestamp(t: Timestamp) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: t.0.div_euclid(1000),
        nanos: (t.0.rem_euclid(1000) * 1_000_000) as i32,
    }
}

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

/// `optional int32` → a count within `1..=max`, or `default` when absent.
fn count(field: &str, value: Option<i32>, default: usize, max: usize) -> Result<usize, Status> {
    match value {
        None => Ok(default),
        Some(v) if v >= 1 && (v as usize) <= max => Ok(v as usize),
        Some(v) => Err(Status::invalid_argument(format!(
            "{field} must be between 1 and {max}, got {v}"
        ))),
    }
}

pub fn resume_command(session_id: &str) -> String {
    format!("claude --resume {session_id}")
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
            crate::engine::MAX_DAYS_BACK as usize,
        )? as u32;
        let limit = count("limit", limit, DEFAULT_LIMIT, crate::engine::MAX_LIMIT)?;
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

pub struct NeighborsQuery {
    pub node: String,
    pub relation: String,
    pub direction: Direction,
    pub limit: usize,
}

impl TryFrom<pb::NeighborsRequest> for NeighborsQuery {
    type Error = Status;

    fn try_from(request: pb::NeighborsRequest) -> Result<Self, Status> {
        let pb::NeighborsRequest {
            node,
            relation,
            direction,
            limit,
        } = request;
        let direction = match pb::Direction::try_from(direction) {
            Ok(pb::Direction::Both) => Direction::Both,
            Ok(pb::Direction::Out) => Direction::Out,
            Ok(pb::Direction::In) => Direction::In,
            Err(_) => {
                return Err(Status::invalid_argument(format!(
                    "unknown direction {direction}"
                )));
            }
        };
        Ok(NeighborsQuery {
            node,
            relation,
            direction,
            limit: count(
                "limit",
                limit,
                DEFAULT_GRAPH_LIMIT,
                crate::engine::MAX_LIMIT,
            )?,
        })
    }
}

pub struct TouchedQuery {
    pub entity: String,
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
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
        } = request;
        Ok(TouchedQuery {
            entity,
            since: since.map(|t| from_timestamp("since", t)).transpose()?,
            until: until.map(|t| from_timestamp("until", t)).transpose()?,
            limit: count(
                "limit",
                limit,
                DEFAULT_GRAPH_LIMIT,
                crate::engine::MAX_LIMIT,
            )?,
        })
    }
}

impl From<Node> for pb::Node {
    fn from(node: Node) -> pb::Node {
        let Node {
            id,
            name,
            kind,
            content: _,
            properties,
            created_at,
            updated_at,
            doc_refs: _,
        } = node;
        let kind_label = kind.label().to_owned();
        let detail = match kind {
            NodeKind::Episode(e) => Some(pb::node::Detail::Episode((*e).into())),
            NodeKind::Entity(e) => Some(pb::node::Detail::Entity(pb::Entity {
                entity_type: e.entity_type.as_str().to_owned(),
                aliases: e.aliases,
                path: e.path.unwrap_or_default(),
            })),
            NodeKind::Document(_) | NodeKind::Memory(_) => None,
        };
        pb::Node {
            id: id.to_string(),
            kind: kind_label,
            name,
            properties: properties.into_iter().collect(),
            created_at: Some(timestamp(created_at)),
            updated_at: Some(timestamp(updated_at)),
            detail,
        }
    }
}

impl From<Episode> for pb::Episode {
    fn from(e: Episode) -> pb::Episode {
        let duration_minutes = e.duration_minutes();
        let Episode {
            session_id,
            short_id,
            source_path,
            project,
            project_path,
            cwd,
            git_branch,
            models,
            version,
            start,
            end,
            active_minutes,
            user_messages,
            assistant_messages,
            prompts,
            tool_calls,
            title,
            substance,
        } = e;
        pb::Episode {
            resume_command: resume_command(&session_id),
            session_id,
            short_id,
            project,
            project_path,
            cwd,
            git_branch: git_branch.unwrap_or_default(),
            models,
            version: version.unwrap_or_default(),
            start: Some(timestamp(start)),
            end: Some(timestamp(end)),
            duration_minutes,
            active_minutes,
            user_messages,
            assistant_messages,
            prompts,
            tool_calls,
            title,
            substance: u32::from(substance),
            source_path,
        }
    }
}

impl From<Edge> for pb::Edge {
    fn from(edge: Edge) -> pb::Edge {
        let Edge {
            id,
            src,
            dst,
            relation,
            confidence,
            valid_from,
            valid_to,
            recorded_at,
            expired_at,
            evidence: _,
        } = edge;
        pb::Edge {
            id: id.to_string(),
            src: src.to_string(),
            dst: dst.to_string(),
            relation: relation.as_str().to_owned(),
            confidence,
            valid_from: Some(timestamp(valid_from)),
            valid_to: valid_to.map(timestamp),
            recorded_at: Some(timestamp(recorded_at)),
            expired_at: expired_at.map(timestamp),
        }
    }
}

impl From<Handoff> for pb::Handoff {
    fn from(h: Handoff) -> pb::Handoff {
        let duration = h.duration_label();
        let Handoff {
            session_id,
            short_id,
            episode,
            date,
            started_at: _,
            duration_minutes,
            model,
            headline,
            projects,
            keywords,
            substance,
            cwd,
        } = h;
        pb::Handoff {
            resume_command: resume_command(&session_id),
            session_id,
            short_id,
            date: date.to_string(),
            duration,
            duration_minutes: duration_minutes.unwrap_or(0),
            model: model.unwrap_or_default(),
            headline,
            projects,
            keywords,
            substance: u32::from(substance),
            cwd,
            episode_id: episode.to_string(),
        }
    }
}

/// For the CLI talking to a running server: the wire handoff back into the domain.
impl TryFrom<pb::Handoff> for Handoff {
    type Error = Status;

    fn try_from(h: pb::Handoff) -> Result<Handoff, Status> {
        let pb::Handoff {
            session_id,
            short_id,
            date,
            duration: _,
            duration_minutes,
            model,
            headline,
            projects,
            keywords,
            substance,
            cwd,
            episode_id,
            resume_command: _,
        } = h;
        let date = chrono::NaiveDate::parse_from_str(&date, "%Y-%m-%d")
            .map_err(|e| Status::internal(format!("bad handoff date `{date}`: {e}")))?;
        Ok(Handoff {
            episode: NodeId::parse(&episode_id).unwrap_or_else(|| NodeId::episode(&session_id)),
            session_id,
            short_id,
            started_at: Timestamp::parse(&date.to_string()).unwrap_or(Timestamp(0)),
            date,
            duration_minutes: (duration_minutes > 0).then_some(duration_minutes),
            model: (!model.is_empty()).then_some(model),
            headline,
            projects,
            keywords,
            substance: u8::try_from(substance).unwrap_or(u8::MAX),
            cwd,
        })
    }
}

impl From<GetOutcome> for pb::GetHandoffsResponse {
    fn from(outcome: GetOutcome) -> Self {
        let GetOutcome {
            tokens,
            hits,
            fallback_recent,
        } = outcome;
        pb::GetHandoffsResponse {
            handoffs: hits
                .into_iter()
                .map(|HandoffHit { handoff, score }| pb::ScoredHandoff {
                    handoff: Some(handoff.into()),
                    score,
                })
                .collect(),
            tokens,
            fallback_recent,
        }
    }
}

impl TryFrom<pb::GetHandoffsResponse> for GetOutcome {
    type Error = Status;

    fn try_from(response: pb::GetHandoffsResponse) -> Result<Self, Status> {
        let pb::GetHandoffsResponse {
            handoffs,
            tokens,
            fallback_recent,
        } = response;
        let hits = handoffs
            .into_iter()
            .map(|pb::ScoredHandoff { handoff, score }| {
                let handoff = handoff.ok_or_else(|| Status::internal("hit without a handoff"))?;
                Ok(HandoffHit {
                    handoff: handoff.try_into()?,
                    score,
                })
            })
            .collect::<Result<_, Status>>()?;
        Ok(GetOutcome {
            tokens,
            hits,
            fallback_recent,
        })
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

impl From<IngestReport> for pb::IngestResponse {
    fn from(report: IngestReport) -> Self {
        let IngestReport {
            files_scanned,
            files_read,
            files_unchanged,
            files_failed,
            files_without_messages,
            counts,
            elapsed,
        } = report;
        pb::IngestResponse {
            files_scanned,
            files_read,
            files_unchanged,
            files_failed,
            files_without_messages,
            sessions: counts.sessions,
            episodes: counts.episodes,
            entities: counts.entities,
            edges: counts.edges,
            skipped_lines: counts.skipped_lines,
            sources: counts.sources,
            seconds: elapsed.as_secs_f64(),
        }
    }
}

/// For the CLI talking to a running server.
impl From<pb::IngestResponse> for IngestReport {
    fn from(response: pb::IngestResponse) -> Self {
        let pb::IngestResponse {
            files_scanned,
            files_read,
            files_unchanged,
            files_failed,
            files_without_messages,
            sessions,
            episodes,
            entities,
            edges,
            skipped_lines,
            seconds,
            sources,
        } = response;
        IngestReport {
            files_scanned,
            files_read,
            files_unchanged,
            files_failed,
            files_without_messages,
            counts: Counts {
                sessions,
                episodes,
                entities,
                edges,
                sources,
                skipped_lines,
            },
            elapsed: std::time::Duration::try_from_secs_f64(seconds).unwrap_or_default(),
        }
    }
}
