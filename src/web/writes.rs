//! The forms that write (remember, update, forget a memory; add a document): each carries
//! the token the server put in its page, and sends the browser on to what it wrote.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};

use super::{Failure, Web, blocking, documents, html, memories, pages};
use crate::engine::Engine;

/// Whether a form carries this server's token (compared in constant time).
fn forged(web: &Web, given: &str) -> bool {
    let (a, b) = (web.csrf.as_bytes(), given.as_bytes());
    a.len() != b.len() || a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) != 0
}

/// Where a browser goes after a write: the memory's page (303, so a reload does not send
/// the form again).
fn to_memory(id: &str) -> Response {
    axum::response::Redirect::to(&format!("/memories/{}", pages::segment(id))).into_response()
}

pub(super) type FormResult<T> = Result<axum::Form<T>, axum::extract::rejection::FormRejection>;

/// A form that writes: it carries the token this server put in it.
trait WriteForm: Send + 'static {
    fn csrf(&self) -> &str;
}

impl WriteForm for memories::Remember {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

impl WriteForm for memories::Update {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

impl WriteForm for documents::Add {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

impl WriteForm for memories::Forget {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// Applies a memory form once it parses and carries this server's token, and sends the
/// browser to the memory's page.
async fn write_memory<T: WriteForm>(
    web: &Web,
    form: FormResult<T>,
    apply: impl FnOnce(T, &Engine) -> Result<crate::memory::MemoryItem, Failure> + Send + 'static,
) -> Result<Response, Failure> {
    let axum::Form(form) = form?;
    if forged(web, form.csrf()) {
        return Err(Failure::Forged);
    }
    let engine = web.engine.clone();
    let item = blocking(move || apply(form, &engine)).await?;
    Ok(to_memory(&item.id))
}

/// `POST /memories`: remembers what the form says.
pub(super) async fn remember(
    State(web): State<Arc<Web>>,
    form: FormResult<memories::Remember>,
) -> Result<Response, Failure> {
    write_memory(&web, form, memories::Remember::apply).await
}

/// `POST /memories/{id}/update`.
pub(super) async fn update_memory(
    State(web): State<Arc<Web>>,
    Path(id): Path<String>,
    form: FormResult<memories::Update>,
) -> Result<Response, Failure> {
    write_memory(&web, form, move |form, engine| form.apply(engine, &id)).await
}

/// `POST /memories/{id}/forget`.
pub(super) async fn forget_memory(
    State(web): State<Arc<Web>>,
    Path(id): Path<String>,
    form: FormResult<memories::Forget>,
) -> Result<Response, Failure> {
    write_memory(&web, form, move |form, engine| form.apply(engine, &id)).await
}

/// `POST /documents`: adds the file or folder the form names. One file read goes to its
/// page; a folder, or a file that could not be read, to what adding did.
pub(super) async fn add_document(
    State(web): State<Arc<Web>>,
    form: FormResult<documents::Add>,
) -> Result<Response, Failure> {
    let axum::Form(form) = form?;
    if forged(&web, form.csrf()) {
        return Err(Failure::Forged);
    }
    let now = web.options.clock.now();
    let engine = web.engine.clone();
    let outcomes = blocking(move || form.apply(&engine)).await?;
    if let [
        crate::engine::DocumentOutcome {
            result: Ok((info, _)),
            ..
        },
    ] = outcomes.as_slice()
    {
        let to = format!("/documents/{}", pages::segment(&info.id));
        return Ok(axum::response::Redirect::to(&to).into_response());
    }
    Ok(html(documents::added(&outcomes, now)))
}
