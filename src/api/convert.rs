//! proto ↔ domain. Requests are destructured exhaustively so that a new field cannot be
//! silently ignored.

use eywa_storage::TierStats;
use tonic::Status;

use super::pb;
use crate::claude::Message;
use crate::engine::{GetOutcome, HandoffHit, IngestReport, Session, Stats};
use crate::extract::{RedactionCounts, render_markdown};
use crate::graph::{Counts, Neighbor, PathStep, Related, Shared, Touch, Walk, WalkStep};
use crate::model::{
    AgentInfo, AgentLayout, Edge, Episode, Handoff, HandoffSections, Node, NodeId, NodeKind,
    Timestamp, TokenUsage,
};

pub fn timestamp(t: Timestamp) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: t.0.div_euclid(1000),
        nanos: (t.0.rem_euclid(1000) * 1_000_000) as i32,
    }
}

pub fn resume_command(session_id: &str) -> String {
    format!("claude --resume {session_id}")
}

/// A page of sessions for the wire.
pub fn session_page(page: crate::engine::SessionPage) -> pb::ListSessionsResponse {
    let crate::engine::SessionPage {
        sessions,
        total,
        limit,
        offset,
        has_more,
    } = page;
    pb::ListSessionsResponse {
        sessions: sessions
            .into_iter()
            .map(|s| pb::SessionSummary {
                resume_command: resume_command(&s.session_id),
                session_id: s.session_id,
                title: s.title,
                project: s.project,
                project_path: s.project_path,
                cwd: s.cwd,
                started_at: Some(timestamp(s.started_at)),
                last_activity_at: Some(timestamp(s.last_activity_at)),
                message_count: s.message_count,
                agent_ids: s.agent_ids,
                version: s.version.unwrap_or_default(),
                git_branch: s.git_branch.unwrap_or_default(),
            })
            .collect(),
        pagination: Some(pagination(total, limit, offset, has_more)),
    }
}

/// Where a page sits in the whole list.
pub fn pagination(total: u64, limit: usize, offset: usize, has_more: bool) -> pb::Pagination {
    pb::Pagination {
        total,
        limit: u32::try_from(limit).unwrap_or(u32::MAX),
        offset: u32::try_from(offset).unwrap_or(u32::MAX),
        has_more,
    }
}

/// A search hit for the wire, its age told against `now`.
pub fn search_hit(hit: crate::engine::SearchHit, now: Timestamp) -> pb::SearchHit {
    let crate::engine::SearchHit {
        session_id,
        title,
        project,
        score,
        kind,
        snippet,
        timestamp: at,
        agent,
        matches,
        signals,
    } = hit;
    pb::SearchHit {
        short_id: session_id.chars().take(8).collect(),
        resume_command: if session_id.is_empty() {
            String::new()
        } else {
            resume_command(&session_id)
        },
        session_id,
        title,
        project,
        score: f64::from(score),
        r#type: kind,
        snippet,
        timestamp: Some(timestamp(at)),
        age: age(at, now),
        agent: agent.unwrap_or_default(),
        matches,
        signals: Some(signals.into()),
    }
}

/// How long before `now` a moment was, as people say it: "just now", "5 minutes ago",
/// "3 days ago", "2 months ago".
pub fn age(at: Timestamp, now: Timestamp) -> String {
    let seconds = (now.0 - at.0).max(0) / 1000;
    let (n, unit) = match seconds {
        s if s < 60 => return "just now".to_owned(),
        s if s < 3600 => (s / 60, "minute"),
        s if s < 86_400 => (s / 3600, "hour"),
        s if s < 30 * 86_400 => (s / 86_400, "day"),
        s if s < 365 * 86_400 => (s / (30 * 86_400), "month"),
        s => (s / (365 * 86_400), "year"),
    };
    format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" })
}

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
            agent_files_scanned,
            agent_files_read,
            redacted,
            plans,
            memory_files,
            bytes_read,
            files_versioned,
            skipped_files,
            files_skipped,
            counts,
            elapsed,
        } = report;
        pb::IngestResponse {
            skipped_files: skipped_files
                .into_iter()
                .map(|f| pb::SkippedFile {
                    path: f.path,
                    lines: f.lines,
                    reason: f.reason,
                })
                .collect(),
            files_skipped,
            files_versioned,
            plans,
            memory_files,
            bytes_read,
            redacted: redacted
                .iter()
                .map(|(k, n)| (k.as_str().to_owned(), n))
                .collect(),
            agent_files_scanned,
            agent_files_read,
            agents: counts.agents,
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
            agent_files_scanned,
            agent_files_read,
            agents,
            redacted,
            plans,
            memory_files,
            bytes_read,
            skipped_files,
            files_skipped,
            files_versioned,
        } = response;
        IngestReport {
            skipped_files: skipped_files
                .into_iter()
                .map(|f| crate::engine::SkippedFile {
                    path: f.path,
                    lines: f.lines,
                    reason: f.reason,
                })
                .collect(),
            files_skipped,
            files_versioned,
            plans,
            memory_files,
            bytes_read,
            redacted: RedactionCounts::from_names(&redacted),
            agent_files_scanned,
            agent_files_read,
            files_scanned,
            files_read,
            files_unchanged,
            files_failed,
            files_without_messages,
            counts: Counts {
                sessions,
                agents,
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

impl From<crate::engine::ImportReport> for pb::ImportResponse {
    fn from(report: crate::engine::ImportReport) -> Self {
        let crate::engine::ImportReport {
            found,
            imported,
            known,
            already_imported,
            failed,
        } = report;
        pb::ImportResponse {
            found,
            imported,
            known,
            already_imported,
            failed: failed
                .into_iter()
                .map(|(file, reason)| pb::ImportFailure { file, reason })
                .collect(),
        }
    }
}

impl From<crate::engine::EmbedReport> for pb::EmbedResponse {
    fn from(report: crate::engine::EmbedReport) -> Self {
        let crate::engine::EmbedReport {
            chunks,
            embedded,
            seconds,
        } = report;
        pb::EmbedResponse {
            chunks,
            embedded,
            seconds,
        }
    }
}

impl From<crate::embed::ModelStatus> for pb::ModelStatusResponse {
    fn from(status: crate::embed::ModelStatus) -> Self {
        let crate::embed::ModelStatus {
            path,
            installed,
            model_id,
        } = status;
        pb::ModelStatusResponse {
            path: path.display().to_string(),
            installed: installed.map(
                |crate::embed::Installed {
                     model,
                     weights_sha256,
                     source,
                     from,
                     installed_at,
                     bytes,
                 }| pb::InstalledModel {
                    model,
                    weights_sha256,
                    source,
                    from,
                    installed_at,
                    bytes,
                },
            ),
            model_id: model_id.unwrap_or_default(),
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

impl From<Message> for pb::Message {
    fn from(m: Message) -> Self {
        let Message {
            uuid,
            role,
            kind,
            timestamp: at,
            text,
            tool_calls,
            superseded,
        } = m;
        pb::Message {
            uuid: uuid.unwrap_or_default(),
            role: role.as_str().to_owned(),
            timestamp: at.map(timestamp),
            text_offset: 0,
            text_length: text.len() as u64,
            text,
            kind: kind.as_str().to_owned(),
            superseded,
            tool_calls: tool_calls
                .into_iter()
                .map(|c| pb::ToolCall {
                    id: c.id,
                    name: c.name,
                    input_json: c.input,
                    result: c.result,
                    is_error: c.is_error,
                })
                .collect(),
        }
    }
}

/// Where a part of a session starts: a message and a byte offset into its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionCursor {
    pub message: usize,
    pub offset: usize,
}

/// The part of `s` from `from` on that holds at most `max_bytes` of message text and
/// tool calls, never less than one piece of a message. A message whose rest does not fit
/// in an empty part is cut at a character boundary; its tool calls come with its last
/// part. A cursor past the end, or inside a character, is INVALID_ARGUMENT.
pub fn session_part(
    s: Session,
    from: SessionCursor,
    max_bytes: usize,
) -> Result<pb::GetSessionResponse, tonic::Status> {
    let Session {
        episode,
        handoff,
        messages,
        from_archive,
        versions,
        agents,
    } = s;
    let count = messages.len();
    let bad = |what: String| Err(tonic::Status::invalid_argument(what));
    if from.message > count || (from.message == count && from.offset > 0) {
        return bad(format!(
            "from_message {} is past the session's {count} messages",
            from.message
        ));
    }
    if let Some(m) = messages.get(from.message)
        && !m.text.is_char_boundary(from.offset)
    {
        return bad(format!(
            "from_offset {} is not a character boundary of message {} ({} bytes)",
            from.offset,
            from.message,
            m.text.len()
        ));
    }
    let first = from
        == SessionCursor {
            message: 0,
            offset: 0,
        };
    let mut part = Vec::new();
    let mut used = 0;
    let mut next = None;
    for (i, m) in messages.into_iter().enumerate().skip(from.message) {
        let offset = if i == from.message { from.offset } else { 0 };
        let calls: usize = m
            .tool_calls
            .iter()
            .map(|c| c.input.len() + c.result.as_ref().map_or(0, String::len) + 64)
            .sum();
        let rest = m.text.len() - offset;
        if used + rest + calls <= max_bytes {
            used += rest + calls;
            let mut message = pb::Message::from(m);
            message.text.drain(..offset);
            message.text_offset = offset as u64;
            part.push(message);
            continue;
        }
        if !part.is_empty() {
            next = Some(SessionCursor { message: i, offset });
            break;
        }
        // Alone and too large: as much of the text as fits (at least a character), the
        // tool calls with the last part.
        let mut end = offset + max_bytes.saturating_sub(used).min(rest);
        while !m.text.is_char_boundary(end) {
            end -= 1;
        }
        if end == offset {
            end = offset + m.text[offset..].chars().next().map_or(0, char::len_utf8);
        }
        if end >= m.text.len() {
            // The text fits; the tool calls make it large. Served whole, once.
            let mut message = pb::Message::from(m);
            message.text.drain(..offset);
            message.text_offset = offset as u64;
            part.push(message);
            continue;
        }
        let mut message = pb::Message::from(m);
        message.tool_calls.clear();
        message.text.truncate(end);
        message.text.drain(..offset);
        message.text_offset = offset as u64;
        part.push(message);
        next = Some(SessionCursor {
            message: i,
            offset: end,
        });
        break;
    }
    Ok(pb::GetSessionResponse {
        episode: first.then(|| (*episode).clone().into()),
        handoff: if first { handoff.map(Into::into) } else { None },
        messages: part,
        from_archive,
        agents: if first {
            agents.into_iter().map(|a| (*a).clone().into()).collect()
        } else {
            Vec::new()
        },
        first_message: u32::try_from(from.message).unwrap_or(u32::MAX),
        message_count: u32::try_from(count).unwrap_or(u32::MAX),
        has_more: next.is_some(),
        next_message: next.map_or(0, |n| u32::try_from(n.message).unwrap_or(u32::MAX)),
        next_offset: next.map_or(0, |n| n.offset as u64),
        versions,
    })
}

impl From<Stats> for pb::StatsResponse {
    fn from(stats: Stats) -> Self {
        let Stats {
            counts,
            kinds,
            relations,
            tiers,
            caches,
            semantic,
        } = stats;
        let Counts {
            sessions,
            agents,
            episodes,
            entities,
            edges,
            sources,
            skipped_lines,
        } = counts;
        pb::StatsResponse {
            sessions,
            agents,
            episodes,
            entities,
            edges,
            sources,
            skipped_lines,
            nodes_by_kind: kinds.into_iter().collect(),
            edges_by_relation: relations.into_iter().collect(),
            tiers: Some(tiers.into()),
            caches: caches
                .into_iter()
                .map(|c| pb::CacheStats {
                    hit_rate: c.hit_rate(),
                    name: c.name.into_owned(),
                    capacity: c.capacity as u64,
                    len: c.len as u64,
                    hits: c.hits,
                    misses: c.misses,
                    evictions: c.evictions,
                })
                .collect(),
            semantic: Some(semantic.into()),
        }
    }
}

/// A server's stats, as `eywa stats` shows them while `eywa serve` holds the store.
impl From<pb::StatsResponse> for Stats {
    fn from(stats: pb::StatsResponse) -> Self {
        let pb::StatsResponse {
            sessions,
            agents,
            episodes,
            entities,
            edges,
            sources,
            skipped_lines,
            nodes_by_kind,
            edges_by_relation,
            tiers,
            caches,
            semantic,
        } = stats;
        Stats {
            counts: Counts {
                sessions,
                agents,
                episodes,
                entities,
                edges,
                sources,
                skipped_lines,
            },
            kinds: nodes_by_kind.into_iter().collect(),
            relations: edges_by_relation.into_iter().collect(),
            tiers: tiers.map(Into::into).unwrap_or_default(),
            caches: caches
                .into_iter()
                .map(|c| eywa_storage::CacheStats {
                    name: c.name.into(),
                    capacity: usize::try_from(c.capacity).unwrap_or(usize::MAX),
                    len: usize::try_from(c.len).unwrap_or(usize::MAX),
                    hits: c.hits,
                    misses: c.misses,
                    // Not sent: nothing shows it.
                    inserts: 0,
                    evictions: c.evictions,
                })
                .collect(),
            semantic: semantic.map(Into::into).unwrap_or_default(),
        }
    }
}

impl From<pb::Semantic> for crate::engine::SemanticStatus {
    fn from(semantic: pb::Semantic) -> Self {
        let pb::Semantic {
            model,
            unavailable,
            vectors,
            backlog,
            rebuilding,
        } = semantic;
        crate::engine::SemanticStatus {
            model: (!model.is_empty()).then_some(model),
            unavailable: (!unavailable.is_empty()).then_some(unavailable),
            vectors,
            backlog,
            rebuilding,
        }
    }
}

impl From<crate::engine::SemanticStatus> for pb::Semantic {
    fn from(status: crate::engine::SemanticStatus) -> Self {
        let crate::engine::SemanticStatus {
            model,
            unavailable,
            vectors,
            backlog,
            rebuilding,
        } = status;
        pb::Semantic {
            model: model.unwrap_or_default(),
            unavailable: unavailable.unwrap_or_default(),
            vectors,
            backlog,
            rebuilding,
        }
    }
}

impl From<crate::retrieve::Signals> for pb::Signals {
    fn from(signals: crate::retrieve::Signals) -> Self {
        let crate::retrieve::Signals {
            lexical,
            semantic,
            retrieval,
            same_project,
            shared,
            distance,
            proximity,
            recency,
            total,
        } = signals;
        let ranked = |r: Option<crate::retrieve::Ranked>| {
            r.map(|r| pb::RankedSignal {
                rank: r.rank,
                score: f64::from(r.score),
            })
        };
        pb::Signals {
            lexical: ranked(lexical),
            semantic: ranked(semantic),
            retrieval,
            same_project,
            shared,
            distance,
            proximity,
            recency,
            total,
        }
    }
}

impl From<pb::Signals> for crate::retrieve::Signals {
    fn from(signals: pb::Signals) -> Self {
        let pb::Signals {
            lexical,
            semantic,
            retrieval,
            same_project,
            shared,
            distance,
            proximity,
            recency,
            total,
        } = signals;
        let ranked = |r: Option<pb::RankedSignal>| {
            r.map(|r| crate::retrieve::Ranked {
                rank: r.rank,
                score: r.score as f32,
            })
        };
        crate::retrieve::Signals {
            lexical: ranked(lexical),
            semantic: ranked(semantic),
            retrieval,
            same_project,
            shared,
            distance,
            proximity,
            recency,
            total,
        }
    }
}

impl From<TierStats> for pb::TierStats {
    fn from(tiers: TierStats) -> Self {
        let compression_ratio = tiers.compression_ratio();
        let TierStats {
            warm_chunks,
            warm_bytes,
            cold_chunks,
            cold_raw_bytes,
            blobs,
            blob_raw_bytes,
            blob_stored_bytes,
            warm_disk_bytes,
        } = tiers;
        pb::TierStats {
            warm_bytes: warm_disk_bytes,
            warm_chunks,
            warm_chunk_bytes: warm_bytes,
            cold_chunks,
            cold_chunk_bytes: cold_raw_bytes,
            blobs,
            blob_raw_bytes,
            blob_stored_bytes,
            compression_ratio,
        }
    }
}

impl From<pb::TierStats> for TierStats {
    fn from(tiers: pb::TierStats) -> Self {
        let pb::TierStats {
            warm_bytes,
            warm_chunks,
            warm_chunk_bytes,
            cold_chunks,
            cold_chunk_bytes,
            blobs,
            blob_raw_bytes,
            blob_stored_bytes,
            // Computed from the rest.
            compression_ratio: _,
        } = tiers;
        TierStats {
            warm_chunks,
            warm_bytes: warm_chunk_bytes,
            cold_chunks,
            cold_raw_bytes: cold_chunk_bytes,
            blobs,
            blob_raw_bytes,
            blob_stored_bytes,
            warm_disk_bytes: warm_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_cross_the_wire_unchanged() {
        let stats = Stats {
            counts: Counts {
                sessions: 1,
                agents: 2,
                episodes: 3,
                entities: 4,
                edges: 5,
                sources: 6,
                skipped_lines: 7,
            },
            kinds: [("Episode".to_owned(), 3), ("File".to_owned(), 4)].into(),
            relations: [("MODIFIED".to_owned(), 5)].into(),
            tiers: TierStats {
                warm_chunks: 8,
                warm_bytes: 9,
                cold_chunks: 10,
                cold_raw_bytes: 11,
                blobs: 12,
                blob_raw_bytes: 13,
                blob_stored_bytes: 14,
                warm_disk_bytes: 15,
            },
            caches: vec![eywa_storage::CacheStats {
                name: "nodes".into(),
                capacity: 16,
                len: 17,
                hits: 18,
                misses: 19,
                inserts: 0,
                evictions: 20,
            }],
            semantic: crate::engine::SemanticStatus {
                model: Some("all-MiniLM-L6-v2@53aa5117".to_owned()),
                unavailable: None,
                vectors: 21,
                backlog: 22,
                rebuilding: true,
            },
        };
        let wire = pb::StatsResponse::from(stats.clone());
        assert_eq!(Stats::from(wire), stats);
        let off = crate::engine::SemanticStatus {
            model: None,
            unavailable: Some("no embedding model".to_owned()),
            ..Default::default()
        };
        assert_eq!(
            crate::engine::SemanticStatus::from(pb::Semantic::from(off.clone())),
            off
        );
    }

    #[test]
    fn ages_read_as_people_say_them() {
        let now = Timestamp(1_000_000_000_000);
        let ago = |ms: i64| age(Timestamp(now.0 - ms), now);
        assert_eq!(ago(-5_000), "just now");
        assert_eq!(ago(59_000), "just now");
        assert_eq!(ago(60_000), "1 minute ago");
        assert_eq!(ago(3 * 3_600_000 + 5), "3 hours ago");
        assert_eq!(ago(86_400_000), "1 day ago");
        assert_eq!(ago(29 * 86_400_000), "29 days ago");
        assert_eq!(ago(95 * 86_400_000), "3 months ago");
        assert_eq!(ago(800 * 86_400_000), "2 years ago");
    }
}
