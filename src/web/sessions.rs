//! A session's page (its handoff, plans, subagents and transcript, a page at a time) and
//! its Markdown export.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::{
    Failure, MAX_PLANS, MESSAGES_PER_PAGE, Paging, QueryOf, Web, blocking, given, html, pages,
    paging, visible_controls,
};

/// `/sessions/{reference}`: a session's handoff, then its transcript, a page at a time.
pub(super) async fn session(
    State(web): State<Arc<Web>>,
    Path(reference): Path<String>,
    query: QueryOf<Paging>,
) -> Result<Response, Failure> {
    let paging = paging(query)?;
    let now = web.options.clock.now();
    let engine = web.engine.clone();
    let (session, plans) = blocking(move || {
        let session = engine.session(&reference)?;
        let plans = engine.plans(session.episode.id, MAX_PLANS)?;
        Ok((session, plans))
    })
    .await?;
    let pages = session.messages.len().div_ceil(MESSAGES_PER_PAGE).max(1);
    let held = paging.at.as_deref().and_then(|at| {
        session
            .messages
            .iter()
            .position(|m| m.uuid.as_deref() == Some(at))
    });
    let asked = given(&paging.page).is_some();
    let page = match (asked, held) {
        (false, Some(index)) => index / MESSAGES_PER_PAGE + 1,
        _ => paging.number()?,
    };
    if page > pages {
        return Err(Failure::NotFound(format!(
            "this session has {pages} pages of messages: there is no page {page}"
        )));
    }
    Ok(html(pages::session(&session, &plans, page, pages, now)))
}

/// `/sessions/{reference}/markdown`: the session as `eywa sessions export` writes it, to
/// save.
pub(super) async fn export(
    State(web): State<Arc<Web>>,
    Path(reference): Path<String>,
) -> Result<Response, Failure> {
    let engine = web.engine.clone();
    let (id, markdown) = blocking(move || {
        let id = engine.resolve_one(&format!("session:{reference}"))?;
        let id = id
            .episode()
            .map(|e| e.session_id.clone())
            .unwrap_or(reference);
        let markdown = engine.export_session(&id, crate::library::ExportFormat::Markdown)?;
        Ok((id, markdown))
    })
    .await?;
    // The id is a file stem from the store: keep only what a file name may hold.
    let mut name: String = id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    if name.is_empty() {
        name = "session".to_owned();
    }
    Ok((
        [
            (
                header::CONTENT_TYPE,
                "text/markdown; charset=utf-8".to_owned(),
            ),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}.md\""),
            ),
        ],
        visible_controls(markdown),
    )
        .into_response())
}
