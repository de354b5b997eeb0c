//! The session library (seed 003): sessions listed by last activity with pagination, and a
//! session exported as Markdown or JSON.

use serde_json::json;

use crate::archive::Authors;
use crate::claude::{MessageKind, Role};
use crate::graph::Graph;
use crate::model::{Attribution, Node, NodeId, Relation, Timestamp};
use crate::{Error, Result};

pub use self::session::Session;

mod context;
mod grep;
mod migrate;
mod session;

/// The session library over a store: what it lists, shows, exports and searches.
pub(crate) struct Library<'e> {
    pub(crate) graph: &'e Graph,
    /// Who wrote each message, to tell a resumed session's own lines from those it replays.
    pub(crate) authors: &'e Authors,
    /// The trigram index `search_sessions` narrows by; `None` greps every session.
    pub(crate) grams: Option<&'e crate::index::GramIndex>,
}

/// Sessions a page holds at most.
pub const MAX_PAGE: usize = 1_000;

/// A session without its messages, for listing.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SessionSummary {
    /// The session uuid.
    pub session_id: String,
    /// Its headline: a given title (`/rename`, AI title, summary label), else its first prompt's
    /// first sentence.
    pub title: String,
    /// Name of the main project (empty when none was seen).
    pub project: String,
    /// Canonical path of the main project.
    pub project_path: String,
    /// The first working directory seen in the session.
    pub cwd: String,
    /// Time of its earliest line.
    pub started_at: Timestamp,
    /// Time of its latest line.
    pub last_activity_at: Timestamp,
    /// User and assistant messages (lines of type `user`, distinct assistant responses).
    pub message_count: u32,
    /// Subagents the session started (their agent ids).
    pub agent_ids: Vec<String>,
    /// The Claude Code version its transcript last names, if any.
    pub version: Option<String>,
    /// The first git branch its transcript names, if any.
    pub git_branch: Option<String>,
    /// Who wrote it.
    pub user: String,
    /// The machine it was written on.
    pub machine: String,
}

/// One page of sessions, and where it sits in the whole list.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SessionPage {
    /// This page's sessions, most recently active first.
    pub sessions: Vec<SessionSummary>,
    /// Sessions matching, over all pages.
    pub total: u64,
    /// Sessions a page holds at most, as asked.
    pub limit: usize,
    /// Sessions skipped before this page.
    pub offset: usize,
    /// Whether sessions follow this page.
    pub has_more: bool,
}

/// How to export a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// A readable transcript.
    Markdown,
    /// The episode and its messages, as JSON.
    Json,
}

impl ExportFormat {
    /// The format's name: `markdown` or `json`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExportFormat::Markdown => "markdown",
            ExportFormat::Json => "json",
        }
    }

    /// A format by name; blank is Markdown.
    pub fn parse(s: &str) -> Result<ExportFormat> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "md" | "markdown" => Ok(ExportFormat::Markdown),
            "json" => Ok(ExportFormat::Json),
            other => Err(Error::InvalidArgument(format!(
                "unknown export format {other}: use markdown or json",
                other = crate::error::quote(other)
            ))),
        }
    }
}

impl Library<'_> {
    /// Main sessions (not subagent runs), most recently active first; `workspace` keeps
    /// those whose project is that path (or a folder inside it) or has that name.
    pub(crate) fn list_sessions(
        &self,
        workspace: Option<&str>,
        limit: usize,
        offset: usize,
    ) -> Result<SessionPage> {
        self.list_sessions_by(
            workspace,
            &Attribution::default(),
            limit,
            offset,
            SessionOrder::Recent,
        )
    }

    /// [`list_sessions`](Self::list_sessions) in `order`: by the conversation's depth
    /// (its message count, `sessions-index.json`'s when the transcript is gone), deepest
    /// first, more recent first among equals; `authors` keeps the sessions of some users
    /// or machines.
    pub(crate) fn list_sessions_by(
        &self,
        workspace: Option<&str>,
        authors: &Attribution,
        limit: usize,
        offset: usize,
        order: SessionOrder,
    ) -> Result<SessionPage> {
        if limit == 0 || limit > MAX_PAGE {
            return Err(Error::InvalidArgument(format!(
                "limit must be between 1 and {MAX_PAGE}, got {limit}"
            )));
        }
        let workspace = workspace
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .map(|w| w.trim_end_matches(['/', '\\']));
        // Everything, most recently active first: the page alone is read.
        if workspace.is_none() && authors.is_empty() && order == SessionOrder::Recent {
            let (nodes, total) = self.graph.sessions_by_activity(offset, limit)?;
            let rows = nodes
                .iter()
                .filter_map(|n| summary(n).map(|s| (s, n.id)))
                .collect();
            return self.page_of(rows, total as usize, limit, offset);
        }
        // Otherwise every session is looked at, to count the matches (and, by depth, to
        // rank them). (session, its node id), most recently active first.
        let mut in_workspace_at_all = false;
        let mut all = Vec::new();
        for node in self.graph.sessions_newest_first()? {
            let node = node?;
            let Some(e) = node.episode() else { continue };
            if let Some(w) = workspace
                && !in_workspace(&e.project_path, &e.project, w)
            {
                continue;
            }
            in_workspace_at_all = true;
            if !authors.keeps(&e.user, &e.machine) {
                continue;
            }
            // In time order only the page is kept; the rest are counted.
            if order == SessionOrder::Recent && (all.len() < offset || all.len() >= offset + limit)
            {
                all.push(None);
                continue;
            }
            all.push(summary(&node).map(|s| (s, node.id)));
        }
        if let Some(w) = workspace
            && !in_workspace_at_all
        {
            return Err(Error::NotFound(format!(
                "no workspace {w}: no session worked in a project of that path or name",
                w = crate::error::quote(w)
            )));
        }
        let total = all.len();
        let mut rows: Vec<(SessionSummary, NodeId)> = match order {
            SessionOrder::Recent => all.into_iter().skip(offset).take(limit).flatten().collect(),
            SessionOrder::Messages => {
                let mut rows: Vec<_> = all.into_iter().flatten().collect();
                rows.sort_by(|a, b| {
                    b.0.message_count
                        .cmp(&a.0.message_count)
                        .then(b.0.last_activity_at.cmp(&a.0.last_activity_at))
                });
                rows.into_iter().skip(offset).take(limit).collect()
            }
        };
        rows.truncate(limit);
        self.page_of(rows, total, limit, offset)
    }

    /// The sessions of `ids` (main sessions, in the order wanted), as the page at `offset`
    /// of `total` sessions: what [`Library::list_sessions`] answers, for a caller that
    /// knows which sessions a list holds (the web view's projects, per store generation).
    pub(crate) fn sessions_page(
        &self,
        ids: &[NodeId],
        total: usize,
        limit: usize,
        offset: usize,
    ) -> Result<SessionPage> {
        let mut rows = Vec::with_capacity(ids.len());
        for &id in ids {
            if let Some(node) = self.graph.node(id)? {
                rows.extend(summary(&node).map(|s| (s, node.id)));
            }
        }
        self.page_of(rows, total, limit, offset)
    }

    /// A page of sessions, each with its subagents' ids.
    fn page_of(
        &self,
        rows: Vec<(SessionSummary, NodeId)>,
        total: usize,
        limit: usize,
        offset: usize,
    ) -> Result<SessionPage> {
        let mut page = Vec::with_capacity(rows.len());
        for (mut summary, id) in rows {
            // From the adjacency index: a page never needs the whole graph in memory.
            summary.agent_ids = self
                .graph
                .current_targets(id, Relation::Spawned)?
                .iter()
                .filter_map(|n| n.episode().and_then(|e| e.agent.clone()))
                .map(|a| a.agent_id)
                .collect();
            summary.agent_ids.sort();
            page.push(summary);
        }
        Ok(SessionPage {
            has_more: offset.saturating_add(page.len()) < total,
            sessions: page,
            total: total as u64,
            limit,
            offset,
        })
    }

    /// A session as Markdown (a readable transcript) or JSON (its episode and messages).
    pub(crate) fn export_session(
        &self,
        reference: &str,
        format: ExportFormat,
        thinking: bool,
    ) -> Result<String> {
        let session = self.session_with(reference, thinking)?;
        let e = session
            .episode
            .episode()
            .expect("a session's node is an episode");
        match format {
            ExportFormat::Json => {
                let mut agent_ids: Vec<String> = session
                    .agents
                    .iter()
                    .filter_map(|a| a.episode()?.agent.as_ref().map(|a| a.agent_id.clone()))
                    .collect();
                agent_ids.sort();
                // A subagent's run: who started it, and what it was asked.
                let agent = e.agent.as_ref().map(|a| {
                    let prompt = session
                        .messages
                        .iter()
                        .find(|m| m.kind == MessageKind::Prompt)
                        .map(|m| m.text.clone());
                    json!({
                        "agent_id": a.agent_id,
                        "parent_session_id": a.parent_session,
                        "agent_type": a.agent_type,
                        "description": a.description,
                        "prompt": prompt,
                    })
                });
                let value = json!({
                    "session_id": e.session_id,
                    "title": e.title,
                    "project": e.project,
                    "project_path": e.project_path,
                    "encoded_path": encoded_path(&e.source_path),
                    "cwd": e.cwd,
                    "message_count": message_count(&session.episode),
                    "agent_ids": agent_ids,
                    "agent": agent,
                    "version": e.version,
                    "git_branch": e.git_branch,
                    "user": e.user,
                    "machine": e.machine,
                    "started_at": e.start.to_rfc3339(),
                    "last_activity_at": e.end.to_rfc3339(),
                    "models": e.models,
                    "tokens": {
                        "input": e.tokens.input,
                        "output": e.tokens.output,
                        "cache_creation": e.tokens.cache_creation,
                        "cache_read": e.tokens.cache_read,
                    },
                    "from_archive": session.from_archive,
                    "versions": session.versions,
                    "messages": session.messages,
                });
                Ok(serde_json::to_string_pretty(&value).expect("JSON values serialize"))
            }
            ExportFormat::Markdown => {
                let mut out = format!("# {}\n\n", e.title);
                out.push_str(&format!(
                    "- Session: `{}`\n- Project: {} (`{}`)\n- From {} to {}\n- Resume: `{}`\n",
                    e.session_id,
                    e.project,
                    e.project_path,
                    e.start.to_rfc3339(),
                    e.end.to_rfc3339(),
                    crate::claude::resume_command(&e.session_id, Some(&e.cwd)).unwrap_or_default()
                ));
                if session.versions > 1 {
                    out.push_str(&format!(
                        "- Versions: {} (the file shrank or was rewritten; what earlier versions said is kept, marked superseded where the file now says otherwise)\n",
                        session.versions
                    ));
                }
                for m in &session.messages {
                    let who = match (m.role, m.kind) {
                        (_, MessageKind::CompactSummary) => "Compact summary",
                        (_, MessageKind::Command) => "Command",
                        (_, MessageKind::Summary) => "Summary label",
                        (_, MessageKind::FileHistorySnapshot) => "File history snapshot",
                        (Role::User, _) => "User",
                        (Role::Assistant, _) => "Assistant",
                        (Role::System, _) => "Claude Code",
                    };
                    let when = m.timestamp.map(Timestamp::to_rfc3339).unwrap_or_default();
                    let superseded = if m.superseded { " (superseded)" } else { "" };
                    let model = m
                        .model
                        .as_deref()
                        .map_or(String::new(), |model| format!(" · {model}"));
                    out.push_str(&format!("\n## {who}{model}{superseded}  {when}\n\n"));
                    if let Some(thinking) = &m.thinking {
                        out.push_str("> *thinking*\n>\n");
                        for line in thinking.trim().lines() {
                            out.push_str(&format!("> {line}\n"));
                        }
                        out.push('\n');
                    }
                    if !m.text.is_empty() {
                        out.push_str(m.text.trim());
                        out.push('\n');
                    }
                    for call in &m.tool_calls {
                        let status = if call.is_error { " (error)" } else { "" };
                        out.push_str(&format!(
                            "\n**{}**{status}\n\n```json\n{}\n```\n",
                            call.name, call.input
                        ));
                        if let Some(result) = &call.result {
                            out.push_str(&format!("\n```\n{}\n```\n", fence_safe(result)));
                        }
                    }
                }
                Ok(out)
            }
        }
    }
}

/// A session's row in a list, without its subagents (see [`Library::page_of`]).
fn summary(node: &Node) -> Option<SessionSummary> {
    let e = node.episode()?;
    Some(SessionSummary {
        session_id: e.session_id.clone(),
        title: e.title.clone(),
        project: e.project.clone(),
        project_path: e.project_path.clone(),
        cwd: e.cwd.clone(),
        started_at: e.start,
        last_activity_at: e.end,
        message_count: message_count(node),
        agent_ids: Vec::new(),
        version: e.version.clone(),
        git_branch: e.git_branch.clone(),
        user: e.user.clone(),
        machine: e.machine.clone(),
    })
}

/// Whether a session of the project at `path` named `name` is in the workspace `w`: the
/// path itself, a folder inside it, or the name.
fn in_workspace(path: &str, name: &str, w: &str) -> bool {
    path == w
        || path
            .strip_prefix(w)
            .is_some_and(|rest| rest.starts_with('/') || rest.starts_with('\\'))
        || name.eq_ignore_ascii_case(w)
}

/// The order sessions are listed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SessionOrder {
    /// Most recently active first.
    #[default]
    Recent,
    /// Most messages first (seed 004's `messageCount`, a conversation's depth).
    Messages,
}

impl SessionOrder {
    /// The order's name: `recent` or `messages`.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionOrder::Recent => "recent",
            SessionOrder::Messages => "messages",
        }
    }

    /// An order by name; blank is `recent`.
    pub fn parse(s: &str) -> Result<SessionOrder> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "recent" => Ok(SessionOrder::Recent),
            "messages" => Ok(SessionOrder::Messages),
            other => Err(Error::InvalidArgument(format!(
                "unknown order {other}: use recent or messages",
                other = crate::error::quote(other)
            ))),
        }
    }
}

/// Text that cannot close a fenced block early.
fn fence_safe(text: &str) -> String {
    text.replace("```", "`\u{200b}``")
}

/// Most matches a session search returns in one page.
pub const MAX_MATCHES: usize = 1_000;
/// Context lines a match carries at most, each side.
pub const MAX_CONTEXT_LINES: usize = 20;

/// What to grep for in sessions' messages.
#[derive(Debug, Clone)]
pub struct SessionSearch {
    /// What to look for: a substring, or a regular expression with `regex`; never empty.
    pub pattern: String,
    /// `pattern` is a regular expression (else a literal substring).
    pub regex: bool,
    /// Case counts (else it is ignored).
    pub case_sensitive: bool,
    /// Keeps sessions whose project is this path (or a folder inside it) or has this name;
    /// `None` searches all.
    pub workspace: Option<String>,
    /// Lines of context each side of a matching line.
    pub context: usize,
    /// Matches a page holds at most, 1 to [`MAX_MATCHES`].
    pub limit: usize,
    /// Matches skipped before the page.
    pub offset: usize,
}

/// A line of a message that matches, with the lines around it (seed 003's SearchMatch).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SearchMatch {
    /// The session the message belongs to.
    pub session_id: String,
    /// The message's uuid; empty when it has none.
    pub message_uuid: String,
    /// `user` or `assistant`.
    pub message_type: String,
    /// The matching line.
    #[serde(rename = "match")]
    pub line: String,
    /// The lines before and after it (the matching line excluded), in order.
    pub context: Vec<String>,
    /// 1-based line number within the message's text.
    pub line_number: u32,
}

/// Longest pattern `search_sessions` takes, in characters.
pub(crate) const MAX_PATTERN_CHARS: usize = 2_000;
/// Longest line a match shows whole, in bytes: a longer one (a 50 MB pasted log) is shown
/// around the match, half of this each side, with `…` where it was cut; `GetSession`
/// serves the whole text.
pub(crate) const MAX_MATCH_LINE_BYTES: usize = 2_000;
/// A page of matches stops once it holds this many bytes of lines; `has_more` says so.
pub(crate) const MAX_MATCH_PAGE_BYTES: usize = 1 << 20;

/// A page of matches.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MatchPage {
    /// This page's matches, sessions newest first.
    pub matches: Vec<SearchMatch>,
    /// Matches over all pages.
    pub total: u64,
    /// Matches a page holds at most, as asked.
    pub limit: usize,
    /// Matches skipped before this page.
    pub offset: usize,
    /// Whether matches follow this page.
    pub has_more: bool,
}

/// A session's messages: what the transcript holds; what `sessions-index.json` counted
/// when the transcript is gone.
fn message_count(node: &Node) -> u32 {
    let Some(e) = node.episode() else { return 0 };
    node.properties
        .get(crate::extract::MESSAGE_COUNT)
        .filter(|_| node.properties.contains_key(crate::extract::INDEX_ONLY))
        .and_then(|n| n.parse().ok())
        .unwrap_or(e.user_messages + e.assistant_messages)
}

/// The project folder Claude Code keeps a transcript in (seed 003's `encodedPath`): the
/// folder under `projects/` that holds it; empty when it is not in one.
fn encoded_path(source: &str) -> String {
    std::path::Path::new(source)
        .ancestors()
        .find(|p| {
            p.parent()
                .and_then(|p| p.file_name())
                .is_some_and(|n| n == "projects")
        })
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
