//! `/context?project=NAME` (or `cwd=PATH`): exactly what the SessionStart hook would hand
//! an agent starting there now, with its tokens, and the blocks that did not fit.

use maud::{Markup, html};

use crate::engine::Engine;
use crate::model::Timestamp;
use crate::present::context::{StartContext, session_start};

use super::pages::{counted, layout, segment};
use super::{Failure, given};

/// The hook's budget unless `EYWA_HOOK_MAX_TOKENS` or `--max-tokens` says otherwise.
pub(super) const HOOK_TOKENS: usize = 2_000;
/// The largest budget the page takes.
const MAX_TOKENS: usize = 200_000;

/// The page's query.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct Params {
    project: Option<String>,
    cwd: Option<String>,
    tokens: Option<String>,
}

impl Params {
    /// The project asked about (by name, or as the hook takes it from a cwd), and the
    /// budget; `None` for the project when neither is given.
    fn asked(&self) -> Result<(Option<String>, usize), Failure> {
        let project = match (given(&self.project), given(&self.cwd)) {
            (Some(_), Some(_)) => {
                return Err(Failure::BadRequest(
                    "give project or cwd, not both".to_owned(),
                ));
            }
            (Some(p), None) => Some(p.to_owned()),
            (None, Some(cwd)) => Some(crate::extract::project_of(cwd).name),
            (None, None) => None,
        };
        let tokens = match given(&self.tokens) {
            None => HOOK_TOKENS,
            Some(t) => t
                .parse()
                .ok()
                .filter(|t| (1..=MAX_TOKENS).contains(t))
                .ok_or_else(|| {
                    Failure::BadRequest(format!(
                        "tokens must be a number from 1 to {MAX_TOKENS}, got {}",
                        crate::error::quote(t)
                    ))
                })?,
        };
        Ok((project, tokens))
    }

    /// What the hook would hand a new session in the project asked about, if one is.
    pub(super) fn read(
        &self,
        engine: &Engine,
        thresholds: Option<[u32; 3]>,
        now: Timestamp,
    ) -> Result<Option<StartContext>, Failure> {
        let (project, tokens) = self.asked()?;
        let Some(project) = project else {
            return Ok(None);
        };
        // The local date, as the hook tells a handoff's age.
        let today = chrono::DateTime::from_timestamp_millis(now.0)
            .unwrap_or_default()
            .with_timezone(&chrono::Local)
            .date_naive();
        Ok(Some(session_start(
            engine, &project, "", tokens, thresholds, now, today,
        )?))
    }
}

/// The page: a form, then the context and what was left out.
pub(super) fn page(params: &Params, start: Option<&StartContext>) -> Markup {
    let title = start.map_or_else(
        || "Context".to_owned(),
        |s| format!("Context for {}", s.project),
    );
    layout(
        &title,
        html! {
            h1 { (title) }
            form.search method="get" action="/context" {
                label { "Project " input type="text" name="project" value=[given(&params.project)] size="16"; }
                label { "or cwd " input type="text" name="cwd" value=[given(&params.cwd)] placeholder="/path/to/repo" size="24"; }
                label { "Tokens " input type="text" name="tokens" value=[given(&params.tokens)] placeholder=(HOOK_TOKENS) size="7"; }
                button type="submit" { "Show" }
            }
            @if let Some(start) = start {
                p.lead {
                    "What the SessionStart hook hands an agent starting in "
                    a href={ "/projects/" (segment(&start.project)) } { (start.project) }
                    " now: " (counted(start.tokens as u64, "token")) " of " (start.budget) "."
                }
                @match &start.text {
                    Some(text) => pre.context { (text) },
                    None => p.empty {
                        @if start.blocks.is_empty() {
                            "Nothing: eywa has no handoff of this project, so the hook adds nothing."
                        } @else {
                            "Nothing: not even the first block fits in this budget."
                        }
                    },
                }
                @let left: Vec<_> = start.blocks.iter().filter(|b| !b.included).collect();
                @if !left.is_empty() {
                    h2 { "Left out" }
                    p.lead { "Blocks that did not fit in the budget, whole:" }
                    ul.left {
                        @for b in left {
                            li {
                                details {
                                    summary { (b.title) " · " (counted(b.tokens as u64, "token")) }
                                    pre { (b.text) }
                                }
                            }
                        }
                    }
                }
            } @else {
                p.lead { "Name a project, or the folder an agent would start in, to see what it is handed." }
            }
        },
    )
}
