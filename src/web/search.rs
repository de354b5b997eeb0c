//! `/search`: the search `eywa search` runs, from a form, each hit with every signal
//! behind its rank.

use maud::{Markup, html};

use crate::model::{SearchFilter, Timestamp, parse_since};
use crate::retrieve::search::{CONTENT_TYPES, SearchHit, SearchRequest, SearchResults};
use crate::retrieve::{SearchMode, Signals};

use super::pages::{counted, layout, segment, when};
use super::{Failure, given};

/// Hits a search page shows unless asked for another number.
const DEFAULT_LIMIT: usize = 20;

/// A search page's query string, as typed into its form.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct Params {
    #[serde(default)]
    q: String,
    mode: Option<String>,
    project: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    since: Option<String>,
    limit: Option<String>,
}

/// What to search for, checked.
pub(super) struct Asked {
    /// The request; its query is empty when nothing was asked yet.
    pub(super) request: SearchRequest,
    params: Params,
}

impl Params {
    /// The request these parameters ask, or a 400 saying which one is wrong.
    pub(super) fn asked(self, now: Timestamp) -> Result<Asked, Failure> {
        let mode = match given(&self.mode) {
            None => SearchMode::Hybrid,
            Some(m) => SearchMode::parse(m).ok_or_else(|| {
                Failure::BadRequest(format!(
                    "mode must be lexical, semantic or hybrid, got {}",
                    crate::error::quote(m)
                ))
            })?,
        };
        let kinds: Vec<String> = given(&self.kind).map(str::to_owned).into_iter().collect();
        crate::retrieve::search::content_types(&kinds).map_err(Failure::BadRequest)?;
        let since = given(&self.since)
            .map(|s| parse_since(s, now))
            .transpose()
            .map_err(|why| Failure::BadRequest(format!("since: {why}")))?;
        let limit = match given(&self.limit) {
            None => DEFAULT_LIMIT,
            Some(l) => l
                .parse()
                .ok()
                .filter(|l| (1..=crate::retrieve::search::MAX_SEARCH_LIMIT).contains(l))
                .ok_or_else(|| {
                    Failure::BadRequest(format!(
                        "limit must be a number from 1 to {}, got {}",
                        crate::retrieve::search::MAX_SEARCH_LIMIT,
                        crate::error::quote(l)
                    ))
                })?,
        };
        let request = SearchRequest {
            query: self.q.trim().to_owned(),
            filter: SearchFilter {
                kinds,
                projects: given(&self.project)
                    .map(str::to_owned)
                    .into_iter()
                    .collect(),
                since,
                ..SearchFilter::default()
            },
            limit,
            mode,
            focus: None,
            as_of: None,
        };
        Ok(Asked {
            request,
            params: self,
        })
    }
}

/// The search form, filled in with what was asked.
fn form(asked: &Asked) -> Markup {
    let p = &asked.params;
    let mode = asked.request.mode;
    let kind = p.kind.as_deref().unwrap_or("");
    html! {
        form.search method="get" action="/search" role="search" {
            input type="search" name="q" value=(p.q) placeholder="Search sessions" autofocus aria-label="Query";
            label { "Mode "
                select name="mode" {
                    @for m in SearchMode::ALL {
                        option value=(m.as_str()) selected[m == mode] { (m.as_str()) }
                    }
                }
            }
            label { "Project " input type="text" name="project" value=[p.project.as_deref()] size="12"; }
            label { "Type "
                select name="type" {
                    option value="" selected[kind.is_empty()] { "conversation" }
                    @for t in CONTENT_TYPES {
                        option value=(t) selected[kind == t] { (t) }
                    }
                }
            }
            label { "Since " input type="text" name="since" value=[p.since.as_deref()] placeholder="7d or 2026-01-01" size="12"; }
            button type="submit" { "Search" }
        }
    }
}

/// Every term of a hit's score, as a table.
fn why(s: &Signals) -> Markup {
    html! {
        details.why {
            summary { "Why this rank" }
            table {
                @for t in crate::present::hit::terms(s) {
                    @let total = matches!(t.value, crate::present::hit::TermValue::Total(_));
                    tr class=[total.then_some("total")] {
                        th { (t.label) }
                        td {
                            (t.value.cell())
                            @if t.name == "proximity" && let Some(d) = s.distance { " (" (d) " hops)" }
                        }
                    }
                }
            }
        }
    }
}

/// A snippet whose matched words the index wrapped in `**`, with those words marked. The
/// index marks words as its tokenizer reads them, runs of alphanumerics: any other `**` is
/// the text's own (Markdown bold in a reply, a glob), shown as written, and never turns
/// the marking of the rest inside out.
fn marked(snippet: &str) -> Markup {
    let mut parts: Vec<(bool, &str)> = Vec::new();
    let mut rest = snippet;
    while let Some(open) = rest.find("**") {
        let after = &rest[open + 2..];
        let word = after
            .char_indices()
            .find(|(_, c)| !c.is_alphanumeric())
            .map_or(after.len(), |(i, _)| i);
        if word > 0 && after[word..].starts_with("**") {
            parts.push((false, &rest[..open]));
            parts.push((true, &after[..word]));
            rest = &after[word + 2..];
        } else {
            // Not a marked word: its first `*` is text, and the next may open one.
            parts.push((false, &rest[..=open]));
            rest = &rest[open + 1..];
        }
    }
    parts.push((false, rest));
    html! {
        @for (mark, part) in parts {
            @if mark { mark { (part) } } @else { (part) }
        }
    }
}

/// One hit: where it leads, its passage, and why it ranks where it does.
fn hit(h: &SearchHit, now: Timestamp) -> Markup {
    html! {
        li.hit {
            div {
                @if h.session_id.is_empty() {
                    strong { (crate::present::hit::title(h)) }
                } @else {
                    a.headline href={ "/sessions/" (segment(&h.session_id)) } {
                        (crate::present::hit::title(h))
                    }
                }
            }
            div.meta {
                @if !h.project.is_empty() {
                    a href={ "/projects/" (segment(&h.project)) } { (h.project) } " · "
                }
                (when(h.timestamp, now))
                " · " code { (h.kind) }
                @if let Some(agent) = &h.agent { " · subagent " code { (agent) } }
                " · " (h.matches) " matching"
                " · score " (format!("{:.3}", h.score))
            }
            blockquote.snippet { (marked(&h.snippet)) }
            (why(&h.signals))
        }
    }
}

/// The page: the form, then what was found (or nothing, before a query).
pub(super) fn page(asked: &Asked, results: Option<&SearchResults>, now: Timestamp) -> Markup {
    let title = if asked.request.query.is_empty() {
        "Search".to_owned()
    } else {
        format!("{} – search", asked.request.query)
    };
    layout(
        &title,
        html! {
            h1 { "Search" }
            (form(asked))
            @if let Some(results) = results {
                @for notice in &results.notices { p.notice { (notice) } }
                p.lead {
                    (counted(results.hits.len() as u64, "session")) ", " (results.mode.as_str()) " search"
                }
                @if results.hits.is_empty() {
                    p.empty { "Nothing found." }
                } @else {
                    ol.hits data-rows { @for h in &results.hits { (hit(h, now)) } }
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matched_words_are_marked_and_everything_else_is_text() {
        let html = marked("the **flaky** <b>test</b> **runs**").into_string();
        assert_eq!(
            html,
            "the <mark>flaky</mark> &lt;b&gt;test&lt;/b&gt; <mark>runs</mark>"
        );
        assert_eq!(marked("no match").into_string(), "no match");
        // The text's own asterisks stay text, and the words after them are still marked.
        assert_eq!(
            marked("**Note:** a ** glob, ***flaky** and **two words** then **runs**").into_string(),
            "**Note:** a ** glob, *<mark>flaky</mark> and **two words** then <mark>runs</mark>"
        );
        assert_eq!(marked("***").into_string(), "***");
        assert_eq!(marked("**é**").into_string(), "<mark>é</mark>");
    }
}
