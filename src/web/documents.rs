//! `/documents`: the documents a user added or follows, and one document's versions with
//! what each changed and its text.

use maud::{Markup, html};

use crate::docs::DocumentInfo;
use crate::engine::Engine;
use crate::model::Timestamp;

use super::pages::{count, counted, cut, layout, pager, segment, when};
use super::{Failure, page_number};

/// Documents a page lists.
const PER_PAGE: usize = 50;
/// Lines two versions may each have for the page to show what changed between them.
const MAX_DIFF_LINES: usize = 2_000;

/// The list's query.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct ListParams {
    page: Option<String>,
}

/// A document page's query: which version.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct Params {
    version: Option<String>,
}

/// A number from a query, from 1, or a 400 naming the parameter.
fn number(name: &str, v: &Option<String>) -> Result<Option<u32>, Failure> {
    match v.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(n) => n
            .parse::<u32>()
            .ok()
            .filter(|n| *n >= 1)
            .map(Some)
            .ok_or_else(|| {
                Failure::BadRequest(format!(
                    "{name} must be a number from 1, got {}",
                    crate::error::quote(n)
                ))
            }),
    }
}

/// What the list shows.
pub(super) struct Listed {
    documents: Vec<DocumentInfo>,
    total: u64,
    page: usize,
}

impl ListParams {
    pub(super) fn read(&self, engine: &Engine) -> Result<Listed, Failure> {
        let page = page_number(&self.page)?;
        let (documents, total) = engine.list_documents(PER_PAGE, (page - 1) * PER_PAGE)?;
        Ok(Listed {
            documents,
            total,
            page,
        })
    }
}

/// What a document's page shows.
pub(super) struct Shown {
    text: crate::docs::DocumentText,
    versions: Vec<DocumentInfo>,
    /// The text of the version before the one shown, when there is one.
    before: Option<String>,
}

impl Params {
    pub(super) fn read(&self, engine: &Engine, reference: &str) -> Result<Shown, Failure> {
        let version = number("version", &self.version)?;
        let text = engine.document(reference, version, None)?;
        let versions = engine.document_history(reference)?;
        let before = match text.info.version {
            1 => None,
            v => Some(
                engine
                    .document(reference, Some(v - 1), None)?
                    .pages
                    .join("\n"),
            ),
        };
        Ok(Shown {
            text,
            versions,
            before,
        })
    }
}

/// `/documents`.
pub(super) fn list(listed: &Listed, now: Timestamp) -> Markup {
    let pages = (listed.total as usize).div_ceil(PER_PAGE).max(1);
    layout(
        "Documents",
        html! {
            h1 { "Documents" }
            p.lead { (counted(listed.total, "document")) ", most recently added first (" code { "eywa docs add" } " adds more)" }
            @if listed.documents.is_empty() {
                p.empty { "None yet." }
            } @else {
                ol.memories data-rows {
                    @for d in &listed.documents {
                        li {
                            a.headline href={ "/documents/" (segment(&d.id)) } { (d.title) }
                            div.meta {
                                code { (d.path) }
                                " · v" (d.version) " · " (d.mime)
                                " · " (count(d.chars)) " characters"
                                @if d.pages > 0 { " · " (counted(u64::from(d.pages), "page")) }
                                @if let Some(p) = &d.project { " · " a href={ "/projects/" (segment(p)) } { (p) } }
                                " · added " (when(d.added_at, now))
                            }
                            @if !d.summary.is_empty() { p.summary { (d.summary) } }
                        }
                    }
                }
            }
            (pager("/documents", listed.page, pages))
        },
    )
}

/// `/documents/{id}`.
pub(super) fn page(shown: &Shown, now: Timestamp) -> Markup {
    let info = &shown.text.info;
    let text = shown.text.pages.join("\n");
    let (body, note) = cut(&text);
    layout(
        &info.title,
        html! {
            h1 { (info.title) }
            p.meta {
                code { (info.path) } " · version " (info.version) " of " (shown.versions.len())
                " · " (info.mime) " · " (count(info.bytes)) " bytes"
                @if let Some(p) = &info.project { " · " a href={ "/projects/" (segment(p)) } { (p) } }
                " · read " (when(info.added_at, now))
                @if info.replaced_at.is_some() { " " span.badge { "replaced since" } }
            }
            @if !info.summary.is_empty() { p.summary { (info.summary) } }
            @if !info.key_concepts.is_empty() {
                p.keywords {
                    @for k in &info.key_concepts {
                        a.tag href={ "/nodes/concept:" (segment(k)) } { (k) } " "
                    }
                }
            }
            h2 { "Versions" }
            ol.versions reversed {
                @for v in shown.versions.iter().rev() {
                    li {
                        @if v.version == info.version { strong { "v" (v.version) } } @else {
                            a href={ "/documents/" (segment(&v.id)) "?version=" (v.version) } { "v" (v.version) }
                        }
                        " read " (when(v.added_at, now)) " · " (count(v.chars)) " characters"
                    }
                }
            }
            @if let Some(before) = &shown.before {
                h2 { "What version " (info.version) " changed" }
                @if before.lines().count() > MAX_DIFF_LINES || text.lines().count() > MAX_DIFF_LINES {
                    p.lead { "Too long to compare here." }
                } @else {
                    pre.diff {
                        @for (mark, line) in super::memories::diff(before, &text).into_iter().filter(|(m, _)| *m != ' ') {
                            @match mark {
                                '+' => ins { "+ " (line) "\n" },
                                _ => del { "- " (line) "\n" },
                            }
                        }
                    }
                }
            }
            h2 { "Text" }
            div.text { (body) }
            (note)
        },
    )
}
