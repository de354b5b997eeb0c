//! A session as one row of a list: the CLI's numbered line ([`row_line`]) and its page's
//! last line ([`page_line`]), and an Episode node as the graph's answers show it, to a
//! person ([`episode_text`]) or an agent ([`episode_markdown`]). The web view's rows take
//! the same title rule, counts and durations ([`super::title_or_untitled`],
//! [`super::counted`], [`super::minutes`]).

use super::title_or_untitled;
use crate::library::{SessionPage, SessionSummary};
use crate::model::{Node, Timestamp, age};

/// Row `n` of a list of sessions: short id, title, project, age, messages and subagents.
pub fn row_line(n: usize, s: &SessionSummary, now: Timestamp) -> String {
    let agents = if s.agent_ids.is_empty() {
        String::new()
    } else {
        format!(" · {} agents", s.agent_ids.len())
    };
    format!(
        "{n:>3}. {}  {}  [{}] {} · {} messages{agents}",
        crate::claude::short_id(&s.session_id),
        title_or_untitled(&s.title),
        s.project,
        age(s.last_activity_at, now),
        s.message_count
    )
}

/// The line under a page of sessions: which rows of how many, and the offset of the next
/// page; or that the page is empty.
pub fn page_line(page: &SessionPage) -> String {
    let shown = page.sessions.len();
    if shown == 0 {
        return format!("No sessions here (total {}).", page.total);
    }
    let more = if page.has_more {
        format!("; next: --offset {}", page.offset + shown)
    } else {
        String::new()
    };
    format!(
        "{}-{} of {}{more}",
        page.offset + 1,
        page.offset + shown,
        page.total
    )
}

/// An Episode node as a person reads it in the graph's answers:
/// `Episode  2026-01-05  [eywa]  Fix the tokenizer  (0b5e6f1c)`; `None` for other nodes.
pub fn episode_text(node: &Node) -> Option<String> {
    let e = node.episode()?;
    Some(format!(
        "Episode  {}  [{}]  {}  ({})",
        e.start.date(),
        e.project,
        node.name,
        e.short_id
    ))
}

/// An Episode node for an agent, with its id and resume command (a subagent run is
/// resumed through the session that started it); `None` for other nodes.
pub fn episode_markdown(node: &Node) -> Option<String> {
    let e = node.episode()?;
    Some(match e.agent.as_ref() {
        Some(agent) => format!(
            "{} [{}] subagent **{}** (`{}`){}",
            e.start.date(),
            e.project,
            node.name,
            agent.agent_id,
            agent
                .parent_session
                .as_deref()
                .map(|p| {
                    let resume = crate::claude::resume_command(p, None).unwrap_or_default();
                    format!(" of session `{p}` · `{resume}`")
                })
                .unwrap_or_default()
        ),
        None => format!(
            "{} [{}] **{}** · session `{}`{}",
            e.start.date(),
            e.project,
            node.name,
            e.short_id,
            crate::claude::resume_command(&e.session_id, None)
                .map(|c| format!(" · `{c}`"))
                .unwrap_or_default()
        ),
    })
}
