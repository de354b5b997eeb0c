//! `/documents`: the documents a user added or follows, and one document's versions with
//! what each changed and its text.

use maud::{Markup, html};

use crate::docs::{Added, DocumentInfo};
use crate::engine::{DocumentOutcome, Engine};
use crate::model::Timestamp;

use super::pages::{count, counted, cut, layout, pager, segment, when};
use super::{Failure, given, page_number};

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

/// What the form that adds a document sends.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Add {
    pub(super) csrf: String,
    /// A file or folder on the server's machine; `~` at its start is the home folder of
    /// the user `serve` runs as, as on the command line.
    path: Option<String>,
    project: Option<String>,
}

impl Add {
    /// Adds the file, or the folder's files, as the CLI's `docs add` does.
    pub(super) fn apply(self, engine: &Engine) -> Result<Vec<DocumentOutcome>, Failure> {
        let Some(path) = given(&self.path) else {
            return Err(Failure::BadRequest(
                "give the path of a file or folder to add".into(),
            ));
        };
        let path = crate::fs::user_path(path).map_err(Failure::BadRequest)?;
        Ok(engine.add_documents(&[path], given(&self.project))?)
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
pub(super) fn list(listed: &Listed, csrf: &str, now: Timestamp) -> Markup {
    let pages = (listed.total as usize).div_ceil(PER_PAGE).max(1);
    layout(
        "Documents",
        html! {
            h1 { "Documents" }
            p.lead { (counted(listed.total, "document")) ", most recently added first" }
            (add_form(csrf))
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

/// The form that adds a file or folder, as `eywa docs add` does.
fn add_form(csrf: &str) -> Markup {
    html! {
        details.add {
            summary { "Add a document" }
            form.write method="post" action="/documents" {
                input type="hidden" name="csrf" value=(csrf);
                div.fields {
                    label { "Path " input type="text" name="path" required size="40" placeholder="~/notes/design.md" aria-label="A file or folder on the server's machine"; }
                    label { "Project " input type="text" name="project" size="12"; }
                    button type="submit" { "Add" }
                }
                p.hint { "A " code { ".md" } ", " code { ".txt" } " or " code { ".pdf" } " file, or a folder of them, on the machine " code { "eywa serve" } " runs on." }
            }
        }
    }
}

/// What adding a folder (or a file that could not be read) did, file by file.
pub(super) fn added(outcomes: &[DocumentOutcome], now: Timestamp) -> Markup {
    let read = outcomes.iter().filter(|o| o.result.is_ok()).count();
    layout(
        "Documents added",
        html! {
            h1 { "Documents added" }
            p.lead { (read) " of " (counted(outcomes.len() as u64, "file")) " read · " a href="/documents" { "All documents" } }
            ol.memories data-rows {
                @for o in outcomes {
                    li {
                        @match &o.result {
                            Ok((info, how)) => {
                                a.headline href={ "/documents/" (segment(&info.id)) } { (info.title) }
                                div.meta {
                                    code { (o.path) } " · "
                                    (match how { Added::New => "new", Added::Changed => "changed", Added::Unchanged => "unchanged" })
                                    " · v" (info.version) " · read " (when(info.added_at, now))
                                }
                            }
                            Err(why) => {
                                code { (o.path) }
                                p.error { (why) }
                            }
                        }
                    }
                }
            }
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
