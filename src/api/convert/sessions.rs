//! The Sessions service's messages: a session in parts, pages of sessions, exports,
//! searches through messages, and migrations.

use tonic::Status;

use super::wire::wire;
use super::{n32, resume_command, timestamp};
use crate::api::pb;
use crate::claude::Message;
use crate::engine::{
    ExportFormat, MAX_CONTEXT_LINES, MAX_MATCHES, MAX_PAGE, MatchPage, MigrateError, MigrateMode,
    MigrateResult, SearchMatch, Session, SessionOrder, SessionPage, SessionSearch, SessionSummary,
};

/// A `GetSession` request, validated.
pub struct PartQuery {
    pub session: String,
    pub from: SessionCursor,
    pub max_bytes: usize,
    pub thinking: bool,
}

wire! {
    PartQuery <=> pb::GetSessionRequest {
        session, max_bytes: part_bytes, from => { from_message, from_offset }: cursor,
        thinking = include_thinking,
    }
}

/// A `ListSessions` request, validated.
pub struct ListQuery {
    pub workspace: Option<String>,
    pub limit: usize,
    pub offset: usize,
    pub order: SessionOrder,
    pub authors: crate::model::Attribution,
}

wire! {
    ListQuery <=> pb::ListSessionsRequest {
        limit: count(50, MAX_PAGE), workspace: blank, offset: size32, order: named,
        authors => { users, machines }: attribution,
    }
}

/// An `ExportSession` request, validated.
pub struct ExportQuery {
    pub session: String,
    pub format: ExportFormat,
    pub offset: u64,
    pub max_bytes: usize,
    pub thinking: bool,
}

wire! {
    ExportQuery <=> pb::ExportSessionRequest {
        session, format: named, offset, max_bytes: part_bytes, thinking = include_thinking,
    }
}

wire! {
    SessionSearch <=> pb::SearchSessionsRequest {
        pattern, regex, case_sensitive, workspace: blank,
        context: bounded(2, 0, MAX_CONTEXT_LINES), limit: count(50, MAX_MATCHES),
        offset: size32,
    }
}

/// A `MigrateSessions` request, validated.
pub struct MigrateQuery {
    pub sessions: Vec<String>,
    pub destination: String,
    pub mode: MigrateMode,
    /// Every session of this workspace, instead of `sessions`.
    pub workspace: Option<String>,
}

wire! {
    MigrateQuery <=> pb::MigrateSessionsRequest {
        sessions, destination, mode: named, workspace: blank,
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
            parent_uuid,
            cwd,
            git_branch,
            is_sidechain,
            model,
            usage,
            stop_reason,
            thinking,
            tracked_files,
        } = m;
        pb::Message {
            parent_uuid: parent_uuid.unwrap_or_default(),
            cwd: cwd.unwrap_or_default(),
            git_branch: git_branch.unwrap_or_default(),
            is_sidechain,
            model: model.unwrap_or_default(),
            usage: usage.map(|u| pb::MessageUsage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                cache_creation_input_tokens: u.cache_creation_input_tokens,
                cache_read_input_tokens: u.cache_read_input_tokens,
            }),
            stop_reason: stop_reason.unwrap_or_default(),
            thinking: thinking.unwrap_or_default(),
            tracked_files,
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
pub(crate) fn session_part(
    s: Session,
    from: SessionCursor,
    max_bytes: usize,
) -> Result<pb::GetSessionResponse, Status> {
    let Session {
        episode,
        handoff,
        messages,
        from_archive,
        versions,
        agents,
    } = s;
    let count = messages.len();
    let bad = |what: String| Err(Status::invalid_argument(what));
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
        first_message: n32(from.message),
        message_count: n32(count),
        has_more: next.is_some(),
        next_message: next.map_or(0, |n| n32(n.message)),
        next_offset: next.map_or(0, |n| n.offset as u64),
        versions,
    })
}

/// The part of an export from `offset` on, at most `max_bytes` and cut at a character
/// boundary. An offset past the end, or inside a character, is INVALID_ARGUMENT.
pub(crate) fn export_part(
    mut content: String,
    format: ExportFormat,
    offset: u64,
    max_bytes: usize,
) -> Result<pb::ExportSessionResponse, Status> {
    let total = content.len();
    let start = usize::try_from(offset).unwrap_or(usize::MAX);
    if start > total || !content.is_char_boundary(start) {
        return Err(Status::invalid_argument(format!(
            "offset {offset} is not a character boundary of the {total}-byte export"
        )));
    }
    let mut end = (start + max_bytes).min(total);
    while !content.is_char_boundary(end) {
        end -= 1;
    }
    content.truncate(end);
    content.drain(..start);
    Ok(pb::ExportSessionResponse {
        format: match format {
            ExportFormat::Markdown => "markdown",
            ExportFormat::Json => "json",
        }
        .to_owned(),
        content,
        total_bytes: total as u64,
        has_more: end < total,
        next_offset: end as u64,
    })
}

wire! {
    SessionPage <=> pb::ListSessionsResponse {
        sessions: messages, { total, limit, offset, has_more } => pagination: page,
    }
}

wire! {
    SessionSummary <=> pb::SessionSummary {
        session_id, title, project, project_path, cwd, started_at: time,
        last_activity_at: time, message_count, agent_ids, version: text, git_branch: text,
        user, machine,
    }
    to_wire(s) { resume_command: resume_command(&s.session_id) }
}

wire! {
    MatchPage <=> pb::SearchSessionsResponse {
        matches: messages, { total, limit, offset, has_more } => pagination: page,
    }
}

wire! {
    SearchMatch <=> pb::SearchMatch {
        session_id, message_uuid, message_type, line = r#match, context, line_number,
    }
}

wire! {
    MigrateResult <=> pb::MigrateSessionsResponse {
        success_count, failed_count, errors: messages, written, target_dir, created_dir,
    }
}

wire! {
    MigrateError <=> pb::MigrateError { session, message }
}
