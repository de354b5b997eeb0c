//! Answers off the wire, back into the domain: what the CLI prints of a running server's
//! answer is what it prints of its own store. Each message is destructured exhaustively,
//! so a field added to the proto is either carried back or named as left out.

use tonic::Status;

use super::pb;
use crate::engine::{
    Context, ContextItem, ContextSession, EmbedReport, ImportReport, MatchPage, MigrateError,
    MigrateResult, SearchMatch, SessionPage, SessionSummary,
};
use crate::graph::{Neighbor, PathStep, Related, Shared, Touch, Walk, WalkStep};
use crate::model::{
    AgentInfo, AgentLayout, Compaction, DecayState, Document, Edge, EdgeId, Entity, EntityType,
    Episode, Memory, MemoryType, Node, NodeId, NodeKind, Relation, Timestamp, TokenUsage,
};

fn bad(what: &str) -> Status {
    Status::internal(format!("the server sent a bad {what}"))
}

pub fn time(t: Option<prost_types::Timestamp>) -> Timestamp {
    t.map_or(Timestamp(0), |t| {
        Timestamp(t.seconds * 1000 + i64::from(t.nanos / 1_000_000))
    })
}

fn some(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

fn node_id(s: &str) -> Result<NodeId, Status> {
    NodeId::parse(s).ok_or_else(|| bad("node id"))
}

pub fn node(node: Option<pb::Node>) -> Result<Node, Status> {
    let pb::Node {
        id,
        kind,
        name,
        properties,
        created_at,
        updated_at,
        content,
        detail,
    } = node.ok_or_else(|| bad("answer without its node"))?;
    let kind = match detail {
        Some(pb::node::Detail::Episode(e)) => NodeKind::Episode(Box::new(episode(e)?)),
        Some(pb::node::Detail::Entity(pb::Entity {
            entity_type,
            aliases,
            path,
        })) => NodeKind::Entity(Entity {
            entity_type: EntityType::parse(&entity_type).ok_or_else(|| bad("entity type"))?,
            aliases,
            path: some(path),
        }),
        Some(pb::node::Detail::Document(pb::Document { mime, path, hash })) => {
            NodeKind::Document(Document { mime, path, hash })
        }
        Some(pb::node::Detail::Memory(pb::Memory {
            memory_type,
            importance,
            last_access,
            weight,
        })) => NodeKind::Memory(Memory {
            memory_type: MemoryType::parse(&memory_type).ok_or_else(|| bad("memory type"))?,
            importance,
            decay_state: DecayState {
                last_access: time(last_access),
                weight,
            },
        }),
        None => return Err(bad(&format!("{kind} node without its details"))),
    };
    Ok(Node {
        id: node_id(&id)?,
        name,
        kind,
        content: some(content),
        properties: properties.into_iter().collect(),
        created_at: time(created_at),
        updated_at: time(updated_at),
        // Not sent: nothing that reads a node from a server shows them.
        doc_refs: Vec::new(),
    })
}

fn episode(e: pb::Episode) -> Result<Episode, Status> {
    let pb::Episode {
        session_id,
        short_id,
        project,
        project_path,
        cwd,
        git_branch,
        models,
        version,
        start,
        end,
        // Computed from start and end.
        duration_minutes: _,
        user_messages,
        assistant_messages,
        prompts,
        tool_calls,
        title,
        substance,
        source_path,
        // Computed from the session id.
        resume_command: _,
        active_minutes,
        agent,
        input_tokens,
        output_tokens,
        cache_creation_tokens,
        cache_read_tokens,
        slug,
        compactions,
        resumes,
    } = e;
    Ok(Episode {
        session_id,
        short_id,
        source_path,
        project,
        project_path,
        cwd,
        git_branch: some(git_branch),
        models,
        version: some(version),
        start: time(start),
        end: time(end),
        active_minutes,
        user_messages,
        assistant_messages,
        prompts,
        tool_calls,
        title,
        substance: u8::try_from(substance).map_err(|_| bad("substance"))?,
        agent: agent.map(agent_info).transpose()?,
        tokens: TokenUsage {
            input: input_tokens,
            output: output_tokens,
            cache_creation: cache_creation_tokens,
            cache_read: cache_read_tokens,
        },
        slug: some(slug),
        compactions: compactions
            .into_iter()
            .map(
                |pb::Compaction {
                     at,
                     trigger,
                     pre_tokens,
                     summary,
                 }| Compaction {
                    at: at.map(|t| time(Some(t))),
                    trigger: some(trigger),
                    pre_tokens,
                    summary: some(summary),
                },
            )
            .collect(),
        resumes,
    })
}

fn agent_info(a: pb::AgentInfo) -> Result<AgentInfo, Status> {
    let pb::AgentInfo {
        agent_id,
        parent_session,
        agent_type,
        description,
        tool_use_id,
        layout,
        summary,
        duration_ms,
        tokens,
        tool_uses,
    } = a;
    Ok(AgentInfo {
        agent_id,
        parent_session: some(parent_session),
        agent_type: some(agent_type),
        description: some(description),
        tool_use_id: some(tool_use_id),
        layout: match layout.as_str() {
            "inline" => AgentLayout::Inline,
            "root_level" => AgentLayout::RootLevel,
            "nested" => AgentLayout::Nested,
            "workflow" => AgentLayout::Workflow,
            _ => return Err(bad("agent layout")),
        },
        summary: some(summary),
        duration_ms,
        tokens,
        tool_uses,
    })
}

pub fn edge(edge: Option<pb::Edge>) -> Result<Edge, Status> {
    let pb::Edge {
        id,
        src,
        dst,
        relation,
        confidence,
        valid_from,
        valid_to,
        recorded_at,
        expired_at,
    } = edge.ok_or_else(|| bad("answer without its edge"))?;
    Ok(Edge {
        id: EdgeId::parse(&id).ok_or_else(|| bad("edge id"))?,
        src: node_id(&src)?,
        dst: node_id(&dst)?,
        relation: Relation::parse(&relation).ok_or_else(|| bad("relation"))?,
        confidence,
        valid_from: time(valid_from),
        valid_to: valid_to.map(|t| time(Some(t))),
        recorded_at: time(recorded_at),
        expired_at: expired_at.map(|t| time(Some(t))),
        // Not sent.
        evidence: Vec::new(),
    })
}

pub fn neighbor(n: pb::Neighbor) -> Result<Neighbor, Status> {
    let pb::Neighbor { edge: e, node: n } = n;
    Ok(Neighbor {
        edge: edge(e)?,
        node: node(n)?,
    })
}

pub fn touch(t: pb::Touch) -> Result<Touch, Status> {
    let pb::Touch { episode, edge: e } = t;
    Ok(Touch {
        episode: node(episode)?,
        edge: edge(e)?,
    })
}

pub fn walk(w: pb::WalkResponse) -> Result<Walk, Status> {
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
                    Some(e) => Some((edge(Some(e))?, node_id(&from)?)),
                    None => None,
                };
                Ok(WalkStep {
                    node: node(n)?.into(),
                    depth,
                    via,
                })
            },
        )
        .collect::<Result<_, Status>>()?;
    Ok(Walk { steps, truncated })
}

pub fn path(p: pb::PathResponse) -> Result<Option<Vec<PathStep>>, Status> {
    let pb::PathResponse { found, steps } = p;
    if !found {
        return Ok(None);
    }
    steps
        .into_iter()
        .map(|pb::PathStep { node: n, via }| {
            Ok(PathStep {
                node: node(n)?.into(),
                via: via.map(|e| edge(Some(e))).transpose()?,
            })
        })
        .collect::<Result<Vec<_>, Status>>()
        .map(Some)
}

pub fn related(r: pb::RelatedSession) -> Result<Related, Status> {
    let pb::RelatedSession {
        episode,
        score,
        shared,
        similarity,
    } = r;
    Ok(Related {
        episode: node(episode)?.into(),
        score,
        similarity,
        shared: shared
            .into_iter()
            .map(|pb::SharedEntity { entity, weight }| {
                Ok(Shared {
                    entity: node(entity)?.into(),
                    weight,
                })
            })
            .collect::<Result<_, Status>>()?,
    })
}

fn page_of(p: Option<pb::Pagination>) -> (u64, usize, usize, bool) {
    let pb::Pagination {
        total,
        limit,
        offset,
        has_more,
    } = p.unwrap_or_default();
    (total, limit as usize, offset as usize, has_more)
}

pub fn session_page(page: pb::ListSessionsResponse) -> SessionPage {
    let pb::ListSessionsResponse {
        sessions,
        pagination,
    } = page;
    let (total, limit, offset, has_more) = page_of(pagination);
    SessionPage {
        sessions: sessions
            .into_iter()
            .map(
                |pb::SessionSummary {
                     session_id,
                     title,
                     project,
                     project_path,
                     cwd,
                     started_at,
                     last_activity_at,
                     message_count,
                     agent_ids,
                     version,
                     git_branch,
                     resume_command: _,
                 }| SessionSummary {
                    session_id,
                    title,
                    project,
                    project_path,
                    cwd,
                    started_at: time(started_at),
                    last_activity_at: time(last_activity_at),
                    message_count,
                    agent_ids,
                    version: some(version),
                    git_branch: some(git_branch),
                },
            )
            .collect(),
        total,
        limit,
        offset,
        has_more,
    }
}

pub fn match_page(page: pb::SearchSessionsResponse) -> MatchPage {
    let pb::SearchSessionsResponse {
        matches,
        pagination,
    } = page;
    let (total, limit, offset, has_more) = page_of(pagination);
    MatchPage {
        matches: matches
            .into_iter()
            .map(
                |pb::SearchMatch {
                     session_id,
                     message_uuid,
                     message_type,
                     r#match,
                     context,
                     line_number,
                 }| SearchMatch {
                    session_id,
                    message_uuid,
                    message_type,
                    line: r#match,
                    context,
                    line_number,
                },
            )
            .collect(),
        total,
        limit,
        offset,
        has_more,
    }
}

pub fn migrate_result(r: pb::MigrateSessionsResponse) -> MigrateResult {
    let pb::MigrateSessionsResponse {
        success_count,
        failed_count,
        errors,
        written,
        target_dir,
        created_dir,
    } = r;
    MigrateResult {
        target_dir,
        created_dir,
        success_count,
        failed_count,
        errors: errors
            .into_iter()
            .map(|pb::MigrateError { session, message }| MigrateError { session, message })
            .collect(),
        written,
    }
}

pub fn context(c: pb::RetrieveContextResponse) -> Context {
    let pb::RetrieveContextResponse {
        budget,
        used,
        // Computed from the two above.
        remaining: _,
        sessions,
        warnings,
        text,
    } = c;
    Context {
        budget: budget as usize,
        used: used as usize,
        warnings,
        text,
        sessions: sessions
            .into_iter()
            .map(
                |pb::ContextSession {
                     session_id,
                     title,
                     project,
                     age_days,
                     staleness,
                     dropped,
                     tokens,
                     items,
                 }| ContextSession {
                    session_id,
                    title,
                    project,
                    age_days,
                    staleness: some(staleness),
                    dropped,
                    tokens: tokens as usize,
                    items: items
                        .into_iter()
                        .map(
                            |pb::ContextItem {
                                 r#type,
                                 tokens,
                                 included,
                                 text,
                             }| ContextItem {
                                kind: r#type,
                                tokens: tokens as usize,
                                included,
                                text,
                            },
                        )
                        .collect(),
                },
            )
            .collect(),
    }
}

impl From<pb::ImportResponse> for ImportReport {
    fn from(r: pb::ImportResponse) -> Self {
        let pb::ImportResponse {
            found,
            imported,
            known,
            already_imported,
            failed,
        } = r;
        ImportReport {
            found,
            imported,
            known,
            already_imported,
            failed: failed
                .into_iter()
                .map(|pb::ImportFailure { file, reason }| (file, reason))
                .collect(),
        }
    }
}

impl From<pb::EmbedResponse> for EmbedReport {
    fn from(r: pb::EmbedResponse) -> Self {
        let pb::EmbedResponse {
            chunks,
            embedded,
            seconds,
        } = r;
        EmbedReport {
            chunks,
            embedded,
            seconds,
        }
    }
}

impl From<pb::ModelStatusResponse> for crate::embed::ModelStatus {
    fn from(r: pb::ModelStatusResponse) -> Self {
        let pb::ModelStatusResponse {
            path,
            installed,
            model_id,
        } = r;
        crate::embed::ModelStatus {
            path: path.into(),
            installed: installed.map(
                |pb::InstalledModel {
                     model,
                     weights_sha256,
                     source,
                     from,
                     installed_at,
                     bytes,
                 }| crate::embed::Installed {
                    model,
                    weights_sha256,
                    source,
                    from,
                    installed_at,
                    bytes,
                },
            ),
            model_id: some(model_id),
        }
    }
}
