//! The model types every service sends (nodes, episodes, agents, edges, handoffs), to the
//! wire and back.

use tonic::Status;

use super::{bad, node_id, resume_command, some, time, timestamp};
use crate::api::pb;
use crate::extract::render_markdown;
use crate::model::{
    AgentInfo, AgentLayout, Compaction, DecayState, Document, Edge, EdgeId, Entity, EntityType,
    Episode, Handoff, HandoffSections, Memory, MemoryType, Node, NodeId, NodeKind, Relation,
    Timestamp, TokenUsage,
};

impl From<Node> for pb::Node {
    fn from(node: Node) -> pb::Node {
        let Node {
            id,
            name,
            kind,
            content,
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
            NodeKind::Document(d) => Some(pb::node::Detail::Document(pb::Document {
                mime: d.mime,
                path: d.path,
                hash: d.hash,
            })),
            NodeKind::Memory(m) => Some(pb::node::Detail::Memory(pb::Memory {
                memory_type: m.memory_type.as_str().to_owned(),
                importance: m.importance,
                last_access: Some(timestamp(m.decay_state.last_access)),
                weight: m.decay_state.weight,
            })),
        };
        pb::Node {
            id: id.to_string(),
            content: content.unwrap_or_default(),
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
            agent,
            tokens,
            slug,
            compactions,
            resumes,
        } = e;
        let TokenUsage {
            input,
            output,
            cache_creation,
            cache_read,
        } = tokens;
        pb::Episode {
            slug: slug.unwrap_or_default(),
            compactions: compactions
                .into_iter()
                .map(|c| pb::Compaction {
                    at: c.at.map(timestamp),
                    trigger: c.trigger.unwrap_or_default(),
                    pre_tokens: c.pre_tokens,
                    summary: c.summary.unwrap_or_default(),
                })
                .collect(),
            resumes,
            input_tokens: input,
            output_tokens: output,
            cache_creation_tokens: cache_creation,
            cache_read_tokens: cache_read,
            agent: agent.map(Into::into),
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

impl From<AgentInfo> for pb::AgentInfo {
    fn from(a: AgentInfo) -> Self {
        let AgentInfo {
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
        pb::AgentInfo {
            agent_id,
            parent_session: parent_session.unwrap_or_default(),
            agent_type: agent_type.unwrap_or_default(),
            description: description.unwrap_or_default(),
            tool_use_id: tool_use_id.unwrap_or_default(),
            layout: match layout {
                AgentLayout::Inline => "inline",
                AgentLayout::RootLevel => "root_level",
                AgentLayout::Nested => "nested",
                AgentLayout::Workflow => "workflow",
            }
            .to_owned(),
            summary: summary.unwrap_or_default(),
            duration_ms,
            tokens,
            tool_uses,
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
        let markdown = render_markdown(&h, &h.sections);
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
            sections,
        } = h;
        let HandoffSections {
            what_happened,
            insights,
            key_files,
            open_threads,
        } = sections;
        pb::Handoff {
            what_happened,
            insights: insights
                .into_iter()
                .map(|(topic, explanation)| pb::Insight { topic, explanation })
                .collect(),
            key_files,
            open_threads,
            markdown,
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
            what_happened,
            insights,
            key_files,
            open_threads,
            markdown: _,
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
            sections: HandoffSections {
                what_happened,
                insights: insights
                    .into_iter()
                    .map(|pb::Insight { topic, explanation }| (topic, explanation))
                    .collect(),
                key_files,
                open_threads,
            },
        })
    }
}

/// A node a server sent, where its answer must hold one.
pub fn node_from_wire(node: Option<pb::Node>) -> Result<Node, Status> {
    node.ok_or_else(|| bad("answer without its node"))?
        .try_into()
}

/// An edge a server sent, where its answer must hold one.
pub fn edge_from_wire(edge: Option<pb::Edge>) -> Result<Edge, Status> {
    edge.ok_or_else(|| bad("answer without its edge"))?
        .try_into()
}

impl TryFrom<pb::Node> for Node {
    type Error = Status;

    fn try_from(node: pb::Node) -> Result<Node, Status> {
        let pb::Node {
            id,
            kind,
            name,
            properties,
            created_at,
            updated_at,
            content,
            detail,
        } = node;
        let kind = match detail {
            Some(pb::node::Detail::Episode(e)) => NodeKind::Episode(Box::new(e.try_into()?)),
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
}

impl TryFrom<pb::Episode> for Episode {
    type Error = Status;

    fn try_from(e: pb::Episode) -> Result<Episode, Status> {
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
            agent: agent.map(TryInto::try_into).transpose()?,
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
}

impl TryFrom<pb::AgentInfo> for AgentInfo {
    type Error = Status;

    fn try_from(a: pb::AgentInfo) -> Result<AgentInfo, Status> {
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
}

impl TryFrom<pb::Edge> for Edge {
    type Error = Status;

    fn try_from(edge: pb::Edge) -> Result<Edge, Status> {
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
        } = edge;
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
}
