//! `/memories`: memories listed or recalled, one memory's versions with what each changed
//! and the session it came from; and the forms that remember, update and forget, each a
//! POST carrying the page's CSRF token.

use maud::{Markup, html};

use crate::engine::Engine;
use crate::memory::{MemoryFilter, MemoryItem, MemoryUpdate, NewMemory, RecallQuery};
use crate::model::{MemoryType, Timestamp};

use super::pages::{counted, layout, pager, segment, when};
use super::{Failure, given, page_number};

/// Memories a page lists.
const PER_PAGE: usize = 50;

/// The list's query: recall words, or a listing filtered by project and type.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct Params {
    q: Option<String>,
    project: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    page: Option<String>,
}

/// A memory type from a form, or a 400 naming the three.
fn memory_type(v: &Option<String>) -> Result<Option<MemoryType>, Failure> {
    given(v)
        .map(|t| {
            MemoryType::parse(t).ok_or_else(|| {
                Failure::BadRequest(format!(
                    "type must be STM, LTM or PROCEDURAL, got {}",
                    crate::error::quote(t)
                ))
            })
        })
        .transpose()
}

/// What a memories page shows.
pub(super) struct Listed {
    params: Params,
    /// Each memory, with its recall score when recalled.
    memories: Vec<(MemoryItem, Option<f32>)>,
    total: u64,
    page: usize,
}

impl Params {
    /// Reads the page asked for.
    pub(super) fn read(self, engine: &Engine) -> Result<Listed, Failure> {
        let kind = memory_type(&self.kind)?;
        let page = page_number(&self.page)?;
        let project = given(&self.project).map(str::to_owned);
        let (memories, total) = if let Some(q) = given(&self.q) {
            let hits = engine.recall(&RecallQuery {
                query: q.to_owned(),
                limit: PER_PAGE,
                project,
                types: kind.into_iter().collect(),
                tags: Vec::new(),
            })?;
            let total = hits.len() as u64;
            (
                hits.into_iter()
                    .map(|h| (h.memory, Some(h.score)))
                    .collect(),
                total,
            )
        } else {
            let filter = MemoryFilter {
                project,
                types: kind.into_iter().collect(),
                ..MemoryFilter::default()
            };
            let (items, total) = engine.list_memories(&filter, PER_PAGE, (page - 1) * PER_PAGE)?;
            (items.into_iter().map(|m| (m, None)).collect(), total)
        };
        Ok(Listed {
            params: self,
            memories,
            total,
            page,
        })
    }
}

/// What the remember form sends.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Remember {
    pub(super) csrf: String,
    content: String,
    #[serde(rename = "type")]
    kind: Option<String>,
    importance: Option<String>,
    project: Option<String>,
    tags: Option<String>,
}

/// What the update form sends.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Update {
    pub(super) csrf: String,
    content: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    importance: Option<String>,
    reason: Option<String>,
}

/// What the forget form sends.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Forget {
    pub(super) csrf: String,
    reason: Option<String>,
}

/// An importance from a form: 0 to 1.
fn importance(v: &Option<String>) -> Result<Option<f32>, Failure> {
    given(v)
        .map(|i| {
            i.parse::<f32>()
                .ok()
                .filter(|i| (0.0..=1.0).contains(i))
                .ok_or_else(|| {
                    Failure::BadRequest(format!(
                        "importance must be a number from 0 to 1, got {}",
                        crate::error::quote(i)
                    ))
                })
        })
        .transpose()
}

impl Remember {
    /// Remembers it: the new memory.
    pub(super) fn apply(self, engine: &Engine) -> Result<MemoryItem, Failure> {
        let tags = given(&self.tags)
            .map(|t| {
                t.split(',')
                    .map(|t| t.trim().to_owned())
                    .filter(|t| !t.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Ok(engine.remember(NewMemory {
            content: self.content,
            memory_type: memory_type(&self.kind)?.unwrap_or(MemoryType::Ltm),
            importance: importance(&self.importance)?.unwrap_or(0.5),
            project: given(&self.project).map(str::to_owned),
            session: None,
            tags,
            about: Vec::new(),
            origin: None,
        })?)
    }
}

impl Update {
    /// Updates memory `id`.
    pub(super) fn apply(self, engine: &Engine, id: &str) -> Result<MemoryItem, Failure> {
        Ok(engine.update_memory(
            id,
            &MemoryUpdate {
                content: given(&self.content).map(str::to_owned),
                memory_type: memory_type(&self.kind)?,
                importance: importance(&self.importance)?,
                tags: None,
                reason: given(&self.reason).map(str::to_owned),
            },
        )?)
    }
}

impl Forget {
    /// Forgets memory `id`.
    pub(super) fn apply(self, engine: &Engine, id: &str) -> Result<MemoryItem, Failure> {
        Ok(engine.forget_memory(id, given(&self.reason).map(str::to_owned))?)
    }
}

/// A memory's facts on one line: type, importance, project, tags, where it came from.
fn facts(m: &MemoryItem, now: Timestamp) -> Markup {
    html! {
        div.meta {
            span.badge { (m.memory_type.as_str()) }
            " importance " (format!("{:.2}", m.importance))
            @if let Some(project) = &m.project { " · " a href={ "/projects/" (segment(project)) } { (project) } }
            @for tag in &m.tags { " " span.tag { (tag) } }
            " · " (m.change.as_str()) " " (when(m.updated_at, now))
            @if let Some(session) = &m.session {
                " · from " a href={ "/sessions/" (segment(session)) } { "session " (session.get(..8).unwrap_or(session)) }
            }
            @if let Some(origin) = &m.origin { " · " code { (origin) } }
            @if m.forgotten_at.is_some() { " " span.badge.error { "forgotten" } }
        }
    }
}

/// The type choices of a form, `current` selected.
fn types(current: MemoryType) -> Markup {
    html! {
        select name="type" {
            @for t in [MemoryType::Ltm, MemoryType::Stm, MemoryType::Procedural] {
                option value=(t.as_str()) selected[t == current] { (t.as_str()) }
            }
        }
    }
}

/// `/memories`.
pub(super) fn list(listed: &Listed, csrf: &str, now: Timestamp) -> Markup {
    let p = &listed.params;
    let pages = (listed.total as usize).div_ceil(PER_PAGE).max(1);
    layout(
        "Memories",
        html! {
            h1 { "Memories" }
            form.search method="get" action="/memories" role="search" {
                input type="search" name="q" value=[given(&p.q)] placeholder="Recall" aria-label="Recall";
                label { "Project " input type="text" name="project" value=[given(&p.project)] size="12"; }
                label { "Type "
                    select name="type" {
                        option value="" { "any" }
                        @for t in ["LTM", "STM", "PROCEDURAL"] {
                            option value=(t) selected[given(&p.kind) == Some(t)] { (t) }
                        }
                    }
                }
                button type="submit" { @if given(&p.q).is_some() { "Recall" } @else { "List" } }
            }
            p.lead { (counted(listed.total, "memory").replace("memorys", "memories")) }
            @if listed.memories.is_empty() {
                p.empty { "None." }
            } @else {
                ol.memories data-rows {
                    @for (m, score) in &listed.memories {
                        li id={ "memory-" (m.id) } {
                            a.headline href={ "/memories/" (segment(&m.id)) } { (m.content.chars().take(200).collect::<String>()) }
                            @if m.content.chars().count() > 200 { "…" }
                            (facts(m, now))
                            @if let Some(score) = score { small { "recall score " (format!("{score:.3}")) } }
                        }
                    }
                }
            }
            @if given(&p.q).is_none() { (pager("/memories", listed.page, pages)) }
            h2 { "Remember" }
            form.write method="post" action="/memories" {
                input type="hidden" name="csrf" value=(csrf);
                textarea name="content" rows="3" required placeholder="What to remember" aria-label="Content" {}
                div.fields {
                    label { "Type " (types(MemoryType::Ltm)) }
                    label { "Importance " input type="text" name="importance" value="0.5" size="4"; }
                    label { "Project " input type="text" name="project" size="12"; }
                    label { "Tags " input type="text" name="tags" placeholder="a, b" size="12"; }
                    button type="submit" { "Remember" }
                }
            }
        },
    )
}

/// The lines of `old` and `new` as a diff: each line kept, removed or added, in order.
pub(super) fn diff<'a>(old: &'a str, new: &'a str) -> Vec<(char, &'a str)> {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    // Longest common subsequence of lines; contents are at most 16,000 characters.
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push((' ', a[i]));
            (i, j) = (i + 1, j + 1);
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push(('+', b[j]));
            j += 1;
        } else {
            out.push(('-', a[i]));
            i += 1;
        }
    }
    out
}

/// `/memories/{id}`: its versions, newest first, each with what it changed; and the
/// forms that update and forget it.
pub(super) fn history(versions: &[MemoryItem], csrf: &str, now: Timestamp) -> Markup {
    let Some(current) = versions.iter().max_by_key(|m| m.version) else {
        return layout("Memory", html! { p.empty { "No versions." } });
    };
    let mut ordered: Vec<&MemoryItem> = versions.iter().collect();
    ordered.sort_by_key(|m| std::cmp::Reverse(m.version));
    let title: String = current.content.chars().take(60).collect();
    layout(
        &title,
        html! {
            h1 { "Memory " code { (current.id) } }
            div.md.memory { (current.content) }
            (facts(current, now))
            h2 { "Versions" }
            ol.versions reversed {
                @for (n, m) in ordered.iter().enumerate() {
                    li {
                        strong { "v" (m.version) " " (m.change.as_str()) } " " (when(m.updated_at, now))
                        @if let Some(reason) = &m.reason { " — " (reason) }
                        @match ordered.get(n + 1) {
                            Some(before) if before.content != m.content => {
                                pre.diff {
                                    @for (mark, line) in diff(&before.content, &m.content) {
                                        @match mark {
                                            '+' => ins { "+ " (line) "\n" },
                                            '-' => del { "- " (line) "\n" },
                                            _ => span { "  " (line) "\n" },
                                        }
                                    }
                                }
                            }
                            Some(_) => p.lead { "The same content." },
                            None => pre { (m.content) },
                        }
                    }
                }
            }
            @if current.forgotten_at.is_none() {
                h2 { "Update" }
                form.write method="post" action={ "/memories/" (segment(&current.id)) "/update" } {
                    input type="hidden" name="csrf" value=(csrf);
                    textarea name="content" rows="3" aria-label="Content" { (current.content) }
                    div.fields {
                        label { "Type " (types(current.memory_type)) }
                        label { "Importance " input type="text" name="importance" value=(format!("{:.2}", current.importance)) size="4"; }
                        label { "Why " input type="text" name="reason" size="20"; }
                        button type="submit" { "Update" }
                    }
                }
                h2 { "Forget" }
                form.write method="post" action={ "/memories/" (segment(&current.id)) "/forget" } {
                    input type="hidden" name="csrf" value=(csrf);
                    div.fields {
                        label { "Why " input type="text" name="reason" size="30"; }
                        button.danger type="submit" { "Forget" }
                    }
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_keeps_removes_and_adds_lines_in_order() {
        let d = diff("a\nb\nc", "a\nc\nd");
        assert_eq!(d, vec![(' ', "a"), ('-', "b"), (' ', "c"), ('+', "d")]);
        assert_eq!(diff("", "x"), vec![('+', "x")]);
        assert_eq!(diff("x", ""), vec![('-', "x")]);
    }
}
