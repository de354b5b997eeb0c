//! The pages, rendered from what the engine read. Maud escapes every value spliced in:
//! a transcript's `<script>` is text on the page.

use axum::http::StatusCode;
use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::projects::{ProjectRow, SessionExtras};
use super::{MESSAGES_PER_PAGE, SESSIONS_PER_PAGE};
use crate::claude::{Message, MessageKind, Role, ToolCall, resume_command};
use crate::library::{Session, SessionPage};
use crate::model::{Handoff, Node, Timestamp, age};

tokio::task_local! {
    /// Whether the page is for a browser signed in with a token (set around each request
    /// by the web view's guard): its header then has a way to sign out.
    pub(super) static SIGNED_IN: bool;
}

/// Every page's frame: its title, the stylesheet, the header with the way home.
pub(super) fn layout(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) " · eywa" }
                link rel="stylesheet" href="/assets/eywa.css";
                link rel="icon" href="/favicon.svg" type="image/svg+xml";
                script src="/assets/eywa.js" defer {}
            }
            body {
                header.top {
                    a.brand href="/" { "eywa" }
                    nav { a href="/" { "Projects" } a href="/search" { "Search" } a href="/memories" { "Memories" } a href="/documents" { "Documents" } a href="/context" { "Context" } a href="/stats" { "Stats" } }
                    form.quick method="get" action="/search" role="search" {
                        input #quick type="search" name="q" placeholder="Search (⌘K)" aria-label="Search" accesskey="k";
                    }
                    @if SIGNED_IN.try_with(|s| *s).unwrap_or(false) {
                        form.signout method="post" action="/logout" {
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// A page saying why there is nothing to show.
pub(super) fn failure(status: StatusCode, why: &str) -> Markup {
    let title = format!(
        "{} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("Error")
    );
    layout(
        &title,
        html! {
            h1 { (title) }
            p.why { (why) }
            p { a href="/" { "Back to the projects" } }
        },
    )
}

pub(super) use crate::present::{counted, minutes, thousands as count};

/// A moment, with its age beside it and the exact time on hover.
pub(super) fn when(at: Timestamp, now: Timestamp) -> Markup {
    html! { time datetime=(at.to_rfc3339()) title=(at.to_rfc3339()) { (age(at, now)) } }
}

/// A path segment, escaped for a URL (whose path always starts with `/`, so a `:` in it
/// is never read as a scheme's).
pub(super) fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        // `:` and `@` may stand in a path (RFC 3986's pchar): `project:eywa` reads so.
        if b.is_ascii_alphanumeric() || b"-._~:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `/`: the projects.
pub(super) fn home(rows: &[ProjectRow], now: Timestamp) -> Markup {
    let sessions = rows.iter().fold(0u64, |n, r| n.saturating_add(r.sessions));
    layout(
        "Projects",
        html! {
            h1 { "Projects" }
            p.lead { (counted(rows.len() as u64, "project")) ", " (counted(sessions, "session")) }
            @if rows.is_empty() {
                p.empty { "Nothing ingested yet: run " code { "eywa ingest" } "." }
            } @else {
                table.list {
                    thead { tr { th { "Project" } th.num { "Sessions" } th { "Last active" } th.num { "Tokens" } } }
                    tbody data-rows {
                        @for row in rows {
                            tr {
                                td {
                                    a href={ "/projects/" (segment(&row.name)) } { (row.name) }
                                    @for path in &row.paths { br; small.path { (path) } }
                                }
                                td.num { (count(row.sessions)) }
                                td { (when(row.last_activity, now)) }
                                td.num { (count(row.tokens)) }
                            }
                        }
                    }
                }
            }
        },
    )
}

/// Links to the pages before and after `page` of `pages`, at `base?page=N`.
pub(super) fn pager(base: &str, page: usize, pages: usize) -> Markup {
    html! {
        @if pages > 1 {
            nav.pager {
                @if page > 1 { a rel="prev" href={ (base) "?page=" (page - 1) } { "← Newer" } }
                span { "Page " (page) " of " (pages) }
                @if page < pages { a rel="next" href={ (base) "?page=" (page + 1) } { "Older →" } }
            }
        }
    }
}

/// `/projects/{name}`: a page of its sessions.
pub(super) fn project(
    name: &str,
    listed: &SessionPage,
    rows: &[SessionExtras],
    page: usize,
    now: Timestamp,
) -> Markup {
    let pages = (listed.total as usize).div_ceil(SESSIONS_PER_PAGE).max(1);
    let base = format!("/projects/{}", segment(name));
    layout(
        name,
        html! {
            h1 { (name) }
            p.lead {
                span #session-count data-live-text { (counted(listed.total, "session")) }
                ", most recently active first · "
                a href={ "/nodes/project:" (segment(name)) } { "In the graph" }
            }
            // The first page follows the project: a new session shows at its top.
            ol.sessions #sessions start=((page - 1) * SESSIONS_PER_PAGE + 1) data-rows data-live[page == 1] {
                @for (s, extras) in listed.sessions.iter().zip(rows) {
                    li id={ "s-" (s.session_id) } {
                        a.headline href={ "/sessions/" (segment(&s.session_id)) } {
                            (crate::present::title_or_untitled(&s.title))
                        }
                        div.meta {
                            (when(s.last_activity_at, now))
                            " · " (minutes(extras.active_minutes))
                            " · " (counted(u64::from(s.message_count), "message"))
                            " · " (counted(extras.tokens, "token"))
                            @if let Some(branch) = &s.git_branch { " · " code { (branch) } }
                            " · " code.id { (s.session_id.get(..8).unwrap_or(&s.session_id)) }
                        }
                        @if !extras.bullets.is_empty() {
                            ul.bullets { @for b in &extras.bullets { li { (b) } } }
                        }
                    }
                }
            }
            (pager(&base, page, pages))
        },
    )
}

/// The handoff at the top of a session's page.
fn handoff(h: &Handoff) -> Markup {
    let s = &h.sections;
    html! {
        section.handoff {
            h2 { "Handoff" }
            @if !s.what_happened.is_empty() {
                h3 { "What happened" }
                ul { @for b in &s.what_happened { li { (b) } } }
            }
            @if !s.insights.is_empty() {
                h3 { "Insights" }
                ul { @for (topic, why) in &s.insights { li { strong { (topic) } " — " (why) } } }
            }
            @if !s.key_files.is_empty() {
                h3 { "Key files" }
                ul { @for f in &s.key_files { li { code { (f) } } } }
            }
            @if !s.open_threads.is_empty() {
                h3 { "Open threads" }
                ul { @for t in &s.open_threads { li { (t) } } }
            }
            @if !h.keywords.is_empty() {
                p.keywords { @for k in &h.keywords { span.tag { (k) } " " } }
            }
        }
    }
}

/// Who said a message, as its label reads.
fn speaker(m: &Message) -> &'static str {
    match (m.role, m.kind) {
        (_, MessageKind::CompactSummary) => "compaction",
        (_, MessageKind::Command) => "command",
        (_, MessageKind::Summary) => "label",
        (_, MessageKind::FileHistorySnapshot) => "snapshot",
        (Role::User, _) => "user",
        (Role::Assistant, _) => "assistant",
        (Role::System, _) => "system",
    }
}

/// Most of one text (a message, its thinking) a page holds, in bytes: the rest is in the
/// Markdown export. Tool inputs and results are cut at 16,000 characters already.
const MAX_SHOWN: usize = 200_000;

/// `text` up to [`MAX_SHOWN`] bytes (at a character's start), and a note of what was left
/// out.
pub(super) fn cut(text: &str) -> (&str, Markup) {
    if text.len() <= MAX_SHOWN {
        return (text, html! {});
    }
    let end = (0..=MAX_SHOWN)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let left = text.len() - end;
    (
        &text[..end],
        html! { p.cut { "… " (count(left as u64)) " more bytes: the Markdown export has them all." } },
    )
}

/// A message's text: Markdown for what people and the model wrote, as written for the
/// rest (commands, labels) and for a text too long to parse.
fn text(m: &Message) -> Markup {
    let prose = matches!(
        m.kind,
        MessageKind::Prompt | MessageKind::Response | MessageKind::CompactSummary
    );
    if prose {
        return markdown(&m.text);
    }
    let (shown, note) = cut(&m.text);
    html! { div.text { (shown) } (note) }
}

/// Text people or the model wrote, as Markdown (as written when too long to parse).
fn markdown(text: &str) -> Markup {
    let (shown, note) = cut(text);
    if let Some(rendered) = super::markdown::render(shown) {
        html! { div.md { (PreEscaped(rendered)) } (note) }
    } else {
        html! { div.text { (shown) } (note) }
    }
}

/// The plan a call to `ExitPlanMode` handed over, when its input still parses (inputs are
/// cut at 16,000 characters).
fn plan_of(call: &ToolCall) -> Option<String> {
    if call.name != "ExitPlanMode" {
        return None;
    }
    let input: serde_json::Value = serde_json::from_str(&call.input).ok()?;
    Some(input.get("plan")?.as_str()?.to_owned())
}

/// One message of the transcript: its text as written, thinking and tool calls folded.
fn message(m: &Message, now: Timestamp) -> Markup {
    let class = format!(
        "msg {}{}",
        speaker(m),
        if m.superseded { " superseded" } else { "" }
    );
    html! {
        article class=(class) id=[m.uuid.as_deref().map(|u| format!("m-{u}"))] {
            header {
                span.who { (speaker(m)) }
                @if let Some(at) = m.timestamp { " " (when(at, now)) }
                @if m.superseded { " " span.badge { "superseded" } }
                @if let Some(model) = &m.model { " " small.model { (model) } }
            }
            @if m.kind == MessageKind::CompactSummary {
                p.boundary role="separator" { "The conversation was compacted here: what follows continues from this summary." }
            }
            @if let Some(thinking) = &m.thinking {
                @let (shown, note) = cut(thinking);
                details.thinking { summary { "Thinking" } pre { (shown) } (note) }
            }
            @if !m.text.is_empty() { (text(m)) }
            @if !m.tracked_files.is_empty() {
                ul.files { @for f in &m.tracked_files { li { code { (f) } } } }
            }
            @for call in &m.tool_calls {
                @if let Some(plan) = plan_of(call) {
                    details.tool.plan open {
                        summary { span.tool-name { (call.name) } " " span.badge { "plan" } }
                        (markdown(&plan))
                        @if let Some(result) = &call.result {
                            h4 { "Result" }
                            pre { (result) }
                        }
                    }
                } @else {
                details.tool {
                    summary {
                        span.tool-name { (call.name) }
                        @if call.is_error { " " span.badge.error { "error" } }
                        @if call.result.is_none() { " " span.badge { "no result" } }
                    }
                    h4 { "Input" }
                    pre { (call.input) }
                    @if let Some(result) = &call.result {
                        h4 { "Result" }
                        pre { (result) }
                    }
                }
                }
            }
        }
    }
}

/// `/sessions/{reference}`: its handoff, its plans and subagents, then page `page` of its
/// messages.
pub(super) fn session(
    s: &Session,
    plans: &[Node],
    page: usize,
    pages: usize,
    now: Timestamp,
) -> Markup {
    let e = s.episode.episode();
    let id = e.map(|e| e.session_id.as_str()).unwrap_or_default();
    let title = match e {
        Some(e) => crate::present::title_or_untitled(&e.title),
        None => crate::present::UNTITLED,
    };
    let start = (page - 1) * MESSAGES_PER_PAGE;
    let shown = s.messages.iter().skip(start).take(MESSAGES_PER_PAGE);
    let base = format!("/sessions/{}", segment(id));
    let resume = e.and_then(|e| resume_command(&e.session_id, Some(&e.cwd)));
    layout(
        title,
        html! {
            h1 { (title) }
            @if let Some(e) = e {
                p.meta {
                    @if !e.project.is_empty() {
                        a href={ "/projects/" (segment(&e.project)) } { (e.project) } " · "
                    }
                    (when(e.start, now)) " · " (minutes(e.active_minutes))
                    " · " (counted(s.messages.len() as u64, "message"))
                    " · " (counted(super::projects::total(&e.tokens), "token"))
                    @if let Some(branch) = &e.git_branch { " · " code { (branch) } }
                    @if !e.user.is_empty() { " · by " span.author { (e.user) " on " (e.machine) } }
                    @if s.versions > 1 { " · " (s.versions) " versions of the transcript" }
                    @if s.from_archive { " · " span.badge { "from the archive" } }
                }
                p.ids {
                    code.id { (e.session_id) } " · "
                    a href={ "/nodes/" (s.episode.id) } { "In the graph" } " · "
                    a href={ "/sessions/" (segment(&e.session_id)) "/markdown" } download { "Export as Markdown" }
                }
                @if let Some(resume) = &resume {
                    div.resume {
                        pre { code { (resume) } }
                        button.copy type="button" data-copy=(resume) { "Copy" }
                    }
                }
            }
            @if let Some(h) = &s.handoff { (handoff(h)) }
            @if !plans.is_empty() {
                section.plans {
                    h2 { "Plans" }
                    @for plan in plans {
                        details.plan {
                            summary { (plan.name) " · " (when(plan.updated_at, now)) " · " a href={ "/nodes/" (plan.id) } { "In the graph" } }
                            (markdown(plan.content.as_deref().unwrap_or_default()))
                        }
                    }
                }
            }
            @if !s.agents.is_empty() {
                section.agents {
                    h2 { "Subagents" }
                    ul {
                        @for agent in &s.agents {
                            @if let Some(a) = agent.episode() {
                                li {
                                    a href={ "/sessions/" (segment(&a.session_id)) } {
                                        @if a.title.is_empty() { (a.session_id) } @else { (a.title) }
                                    }
                                    " · " (counted(super::projects::total(&a.tokens), "token"))
                                }
                            }
                        }
                    }
                }
            }
            section.transcript {
                h2 { "Transcript" }
                p.lead #message-count data-live-text {
                    (counted(s.messages.len() as u64, "message"))
                    @if pages > 1 { ", " (start + 1) "–" ((start + MESSAGES_PER_PAGE).min(s.messages.len())) " here" }
                }
                // The last page follows the session: new turns show at its end.
                div #messages data-rows="self" data-live[page == pages] {
                    @for m in shown { (message(m, now)) }
                }
            }
            (pager(&base, page, pages))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_escape_what_a_url_path_would_read_as_syntax() {
        assert_eq!(segment("eywa"), "eywa");
        assert_eq!(segment("a b/c?d#e"), "a%20b%2Fc%3Fd%23e");
        assert_eq!(segment("é"), "%C3%A9");
    }

    #[test]
    fn a_long_text_is_cut_at_a_character_and_says_how_much_is_left() {
        let (shown, note) = cut("short");
        assert_eq!(shown, "short");
        assert!(note.into_string().is_empty());
        // Two-byte characters: the limit falls inside one.
        let long = "é".repeat(MAX_SHOWN / 2 + 10);
        let (shown, note) = cut(&long);
        assert_eq!(shown.len(), MAX_SHOWN);
        assert!(long.starts_with(shown));
        assert!(note.into_string().contains("20 more bytes"));
        let odd = format!("x{}", "é".repeat(MAX_SHOWN / 2));
        let (shown, _) = cut(&odd);
        assert_eq!(shown.len(), MAX_SHOWN - 1);
    }

    #[test]
    fn a_failure_page_escapes_what_it_quotes() {
        let page = failure(StatusCode::NOT_FOUND, "<script>alert(1)</script>").into_string();
        assert!(
            page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{page}"
        );
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("404 Not Found"));
    }
}
