//! The web view: what eywa holds, as pages a browser (or curl) reads, served by `eywa
//! serve` on its own listener beside gRPC and `/mcp`. Pages are rendered on the server
//! from the engine, every text escaped; every asset is compiled into the binary, and the
//! Content-Security-Policy lets a page load nothing from anywhere else.
//!
//! The server answers only requests whose `Host` names this machine's loopback, the
//! address it is bound to, or a name given with `--allow-host` (see
//! [`crate::server::Hosts`]): a web page whose name resolves to 127.0.0.1 (DNS rebinding)
//! gets 421, not the user's sessions.

mod assets;
mod context;
mod documents;
mod failure;
mod live;
pub mod login;
mod markdown;
mod memories;
mod nodes;
mod pages;
mod projects;
mod search;
mod sessions;
mod stats;
mod writes;

use std::sync::Arc;

use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::engine::Engine;
use crate::model::Clock;

pub use self::live::{LIVE_INTERVAL, Live};
pub use self::login::Login;

use self::failure::Failure;
use self::sessions::{export, session};
use self::writes::{FormResult, add_document, forget_memory, remember, update_memory};

/// What every page answers with: nothing from another origin, no inline script or
/// style, no framing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// Sessions a project's page lists at a time.
pub const SESSIONS_PER_PAGE: usize = 50;

/// Messages a session's page holds; the rest are on the pages after it.
pub const MESSAGES_PER_PAGE: usize = 200;

/// Plans a session's page shows at most.
const MAX_PLANS: usize = 20;

/// Whether a route reads the store or writes to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Answers `GET`; refuses the methods that write.
    Read,
    /// Answers `POST` with the page's CSRF token, and only to the token that may write
    /// when the server asks for tokens.
    Write,
    /// Answers without a token: signing in and out (see [`login`]).
    SignIn,
}

/// Every route the web view serves, with what it does: one table, pinned by a test.
pub const ROUTES: [(&str, Effect); 23] = [
    ("/", Effect::Read),
    ("/projects/{name}", Effect::Read),
    ("/sessions/{reference}", Effect::Read),
    ("/sessions/{reference}/markdown", Effect::Read),
    ("/search", Effect::Read),
    ("/nodes/{*reference}", Effect::Read),
    ("/context", Effect::Read),
    ("/stats", Effect::Read),
    ("/events", Effect::Read),
    ("/memories", Effect::Read),
    ("/memories/{id}", Effect::Read),
    ("/documents", Effect::Read),
    ("/documents/{id}", Effect::Read),
    ("/assets/eywa.css", Effect::Read),
    ("/assets/eywa.js", Effect::Read),
    ("/favicon.svg", Effect::Read),
    ("/favicon.ico", Effect::Read),
    ("/memories/{id}/update", Effect::Write),
    ("/memories/{id}/forget", Effect::Write),
    // Remembers: `/memories` answers POST as well as GET.
    ("/memories", Effect::Write),
    // Adds a document: `/documents` answers POST as well as GET.
    ("/documents", Effect::Write),
    ("/login", Effect::SignIn),
    ("/logout", Effect::SignIn),
];

/// How the web view renders. (Which hosts it answers is the server's, see
/// [`crate::server::Hosts`].)
#[derive(Clone, Default)]
pub struct WebOptions {
    /// The clock pages tell ages by (a fixed one in tests).
    pub clock: Clock,
    /// The ages (days) at which a handoff is marked aging, stale and old, as the hooks
    /// are told (`staleness_days`).
    pub staleness: Option<[u32; 3]>,
    /// Who listens for changes (shared with `serve`'s watcher, which looks more often
    /// while someone does).
    pub live: Arc<Live>,
    /// Cancelled when the server stops: open event streams end at once.
    pub stop: tokio_util::sync::CancellationToken,
    /// The tokens a browser signs in with, when the server asks for them.
    pub login: Option<Login>,
}

/// The web view's state, shared by its handlers.
struct Web {
    engine: Arc<Engine>,
    options: WebOptions,
    projects: projects::Cache,
    /// The token every form that writes carries: a page of another site cannot know it.
    csrf: String,
}

/// The web view's routes, to merge beside the API's; fails when the kernel gives no
/// random bytes for the forms' token.
pub fn router(engine: Arc<Engine>, options: WebOptions) -> crate::Result<axum::Router> {
    let web = Arc::new(Web {
        engine,
        options,
        projects: projects::Cache::default(),
        csrf: crate::tokens::random_hex(32)?,
    });
    // The projects' overview reads every session once, the index of session ids every
    // source record, and the tiers' sizes every chunk and blob record, once a process:
    // done now, on a thread of their own, so that the first page asked for does not wait
    // for them (or waits for what is left).
    let warm = web.clone();
    let _ = std::thread::Builder::new()
        .name("eywa-web-warm".into())
        .spawn(move || {
            let made = warm.projects.get(&warm.engine).and_then(|_| {
                let graph = warm.engine.graph();
                graph.prepare_session_ids()?;
                graph.store().tier_stats()?;
                Ok(())
            });
            if let Err(e) = made {
                tracing::debug!(error = %e, "the web view's first pages were not made ahead");
            }
        });
    // Each path as the table has it: a test answers every entry of `ROUTES`.
    Ok(axum::Router::new()
        .route("/", get(home))
        .route("/projects/{name}", get(project))
        .route("/sessions/{reference}", get(session))
        .route("/sessions/{reference}/markdown", get(export))
        .route("/search", get(search))
        .route("/nodes/{*reference}", get(node))
        .route("/context", get(start))
        .route("/stats", get(stats))
        .route("/events", get(events))
        .route("/memories", get(memories_list).post(remember))
        .route("/memories/{id}", get(memory))
        .route("/memories/{id}/update", post(update_memory))
        .route("/memories/{id}/forget", post(forget_memory))
        .route("/documents", get(documents_list).post(add_document))
        .route("/documents/{id}", get(document))
        .route("/assets/eywa.css", get(assets::stylesheet))
        .route("/assets/eywa.js", get(assets::script))
        .route("/favicon.svg", get(assets::favicon))
        .route("/favicon.ico", get(assets::favicon))
        .route("/login", get(login::form).post(login::sign_in))
        .route("/logout", post(login::sign_out))
        .layer(axum::middleware::from_fn_with_state(web.clone(), guard))
        .with_state(web))
}

/// The path of the page about `reference`: a node's when it has a `type:` or `session:`
/// prefix (`project:eywa`, `file:src/lib.rs`), a session's otherwise (an id or a prefix of
/// one); the projects without one. `eywa open` prints it after the server's address.
pub fn page_of(reference: Option<&str>) -> String {
    match reference.map(str::trim).filter(|r| !r.is_empty()) {
        None => "/".to_owned(),
        // A node's reference keeps its slashes: `/nodes/{*reference}` takes them.
        Some(r) if r.contains(':') => format!(
            "/nodes/{}",
            r.split('/')
                .map(pages::segment)
                .collect::<Vec<_>>()
                .join("/")
        ),
        Some(r) => format!("/sessions/{}", pages::segment(r)),
    }
}

/// The path of the search page for `query`.
pub fn search_page(query: &str) -> String {
    let query: String = query
        .trim()
        .bytes()
        .map(|b| match b {
            b' ' => "+".to_owned(),
            b if b.is_ascii_alphanumeric() || b"-._~".contains(&b) => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect();
    format!("/search?q={query}")
}

/// The page a request the router knows no route for gets, unless it is a gRPC call.
pub fn not_found() -> Response {
    let mut response = Failure::NotFound("no page here".to_owned()).into_response();
    secure(&mut response);
    response
}

/// Marks every answer with the headers that keep a page to itself, and refuses what
/// another site's page asks of this one without navigating to it (an image or a script
/// pointed at a search: it cannot read the answer, but can make the server work).
/// A page for a browser signed in with a token offers to sign out in its header.
async fn guard(State(web): State<Arc<Web>>, request: Request, next: Next) -> Response {
    let signed_in =
        web.options.login.is_some() && login::bearer_of_cookie(request.headers()).is_some();
    let cross_site = {
        let fetch = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
        fetch("sec-fetch-site") == Some("cross-site") && fetch("sec-fetch-mode") != Some("navigate")
    };
    let mut response = if cross_site {
        Failure::CrossSite.into_response()
    } else {
        pages::SIGNED_IN.scope(signed_in, next.run(request)).await
    };
    secure(&mut response);
    response
}

/// Marks `response` with the headers that keep a page to itself: nothing loaded from
/// elsewhere, no inline script, not framed, no type sniffed, no referrer sent.
fn secure(response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}

/// The page a request naming a host this server is not reached by gets (421), with the
/// headers every page has.
pub fn misdirected(host: &str) -> Response {
    let mut response = Failure::Misdirected(host.to_owned()).into_response();
    secure(&mut response);
    response
}

/// A rendered page as a response.
fn html(markup: maud::Markup) -> Response {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        visible_controls(markup.into_string()),
    )
        .into_response()
}

/// `text` with each control character a terminal would act on (a page read with curl, an
/// export printed) shown as its picture: ESC as `␛`, a lone carriage return as `␍`, DEL
/// as `␡`, the C1 controls as `�`. Tabs and line ends stay. No markup holds one, so a
/// whole page goes through.
fn visible_controls(text: String) -> String {
    if !text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n'))
    {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\t' | '\n' => out.push(c),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\u{7f}' => out.push('\u{2421}'),
            c if u32::from(c) < 0x20 => {
                out.push(char::from_u32(0x2400 + u32::from(c)).unwrap_or('\u{fffd}'));
            }
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Runs `f` on a blocking thread: the engine reads the store.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Failure> + Send + 'static,
) -> Result<T, Failure> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Failure::Internal(format!("a page's work stopped: {e}")))?
}

/// `/`: every project, most recently active first.
async fn home(State(web): State<Arc<Web>>) -> Result<Response, Failure> {
    let now = web.options.clock.now();
    let overview = {
        let web = web.clone();
        blocking(move || Ok(web.projects.get(&web.engine)?)).await?
    };
    Ok(html(pages::home(&overview.projects, now)))
}

/// A page number from `?page=N`, counted from 1; on a session's page, `?at=UUID` asks
/// for the page that holds that message instead.
#[derive(Debug, serde::Deserialize)]
struct Paging {
    page: Option<String>,
    at: Option<String>,
}

impl Paging {
    /// The page asked for (1 when none is), or why it is not one.
    fn number(&self) -> Result<usize, Failure> {
        page_number(&self.page)
    }
}

/// A query parameter as given, trimmed; `None` when missing or blank.
fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// A `?page=N` of any list, counted from 1 (1 when not given), or a 400 saying why it is
/// not one.
fn page_number(v: &Option<String>) -> Result<usize, Failure> {
    match given(v) {
        None => Ok(1),
        Some(p) => p
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=1_000_000).contains(n))
            .ok_or_else(|| {
                Failure::BadRequest(format!(
                    "page must be a number from 1, got {}",
                    crate::error::quote(p)
                ))
            }),
    }
}

/// A page's query string, parsed; what does not parse is a 400 (see the `From` below).
type QueryOf<T> = Result<Query<T>, axum::extract::rejection::QueryRejection>;

/// The query of a page that takes `?page=N`, or a 400 saying what is wrong with it.
fn paging(query: QueryOf<Paging>) -> Result<Paging, Failure> {
    let Query(paging) = query?;
    paging.number()?;
    Ok(paging)
}

/// `/projects/{name}`: a project's sessions, most recently active first, a page at a time.
async fn project(
    State(web): State<Arc<Web>>,
    Path(name): Path<String>,
    query: QueryOf<Paging>,
) -> Result<Response, Failure> {
    let page = paging(query)?.number()?;
    let now = web.options.clock.now();
    let listed = blocking(move || {
        let engine = &web.engine;
        let offset = (page - 1) * SESSIONS_PER_PAGE;
        // The projects' overview knows each one's sessions: only the page's are read. A
        // name it lacks (a path) is looked for as `sessions list --workspace` does.
        let overview = web.projects.get(engine)?;
        let listed = match overview.sessions_of(&name) {
            Some(ids) => {
                let shown: Vec<_> = ids
                    .iter()
                    .skip(offset)
                    .take(SESSIONS_PER_PAGE)
                    .copied()
                    .collect();
                engine.sessions_page(&shown, ids.len(), SESSIONS_PER_PAGE, offset)?
            }
            None => engine.list_sessions(Some(&name), SESSIONS_PER_PAGE, offset)?,
        };
        let rows = projects::session_rows(engine, &listed.sessions)?;
        Ok((name, listed, rows))
    })
    .await?;
    let (name, listed, rows) = listed;
    if listed.sessions.is_empty() && page > 1 {
        return Err(Failure::NotFound(format!(
            "{name} has {} sessions: there is no page {page}",
            listed.total
        )));
    }
    Ok(html(pages::project(&name, &listed, &rows, page, now)))
}

/// `/search?q=…`: the search `eywa search` runs (mode, project, type, since, limit), each
/// hit with the signals behind its rank; the form alone before a query.
async fn search(
    State(web): State<Arc<Web>>,
    query: QueryOf<search::Params>,
) -> Result<Response, Failure> {
    let Query(params) = query?;
    let now = web.options.clock.now();
    let asked = params.asked(now)?;
    if asked.request.query.is_empty() {
        return Ok(html(search::page(&asked, None, now)));
    }
    let engine = web.engine.clone();
    let (asked, results) = blocking(move || {
        let results = engine.search(&asked.request)?;
        Ok((asked, results))
    })
    .await?;
    Ok(html(search::page(&asked, Some(&results), now)))
}

/// `/nodes/{reference}` (`project:eywa`, `file:src/lib.rs`, `session:7acd37a8`, a node
/// id): the node, what touched it, its neighbours and a drawing of its neighbourhood, as
/// of the valid and record times asked; the nodes to pick from when it names several.
async fn node(
    State(web): State<Arc<Web>>,
    Path(reference): Path<String>,
    query: QueryOf<nodes::Params>,
) -> Result<Response, Failure> {
    let Query(params) = query?;
    let now = web.options.clock.now();
    let engine = web.engine.clone();
    let (reference, read) = blocking(move || {
        let read = params.read(&engine, &reference)?;
        Ok((reference, read))
    })
    .await?;
    Ok(html(match read {
        nodes::Read::Several(nodes) => nodes::several(&reference, &nodes),
        nodes::Read::One(shown) => nodes::page(&shown, now),
    }))
}

/// `/context?project=NAME` or `?cwd=PATH` (and `tokens`): what the SessionStart hook
/// would hand an agent starting there now, and what did not fit.
async fn start(
    State(web): State<Arc<Web>>,
    query: QueryOf<context::Params>,
) -> Result<Response, Failure> {
    let Query(params) = query?;
    let now = web.options.clock.now();
    let (engine, thresholds) = (web.engine.clone(), web.options.staleness);
    let (params, start) = blocking(move || {
        let start = params.read(&engine, thresholds, now)?;
        Ok((params, start))
    })
    .await?;
    Ok(html(context::page(&params, start.as_ref())))
}

/// `/stats`: counts, tiers, caches, the embedding backlog, the last ingest's skipped
/// files, tokens per day and per project.
async fn stats(State(web): State<Arc<Web>>) -> Result<Response, Failure> {
    let now = web.options.clock.now();
    let (stats, overview, last) = {
        let web = web.clone();
        blocking(move || {
            let stats = web.engine.stats()?;
            let overview = web.projects.get(&web.engine)?;
            Ok((stats, overview, web.engine.last_ingest()))
        })
        .await?
    };
    Ok(html(stats::page(&stats, &overview, last.as_ref(), now)))
}

/// `/events`: server-sent events for an open page, `changed` when an ingest changed what
/// sessions serve.
async fn events(State(web): State<Arc<Web>>) -> Response {
    live::events(
        web.engine.clone(),
        web.options.live.clone(),
        web.options.stop.clone(),
    )
}

/// `/memories?q=…&project=…&type=…`: memories recalled for words, or listed.
async fn memories_list(
    State(web): State<Arc<Web>>,
    query: QueryOf<memories::Params>,
) -> Result<Response, Failure> {
    let Query(params) = query?;
    let now = web.options.clock.now();
    let engine = web.engine.clone();
    let listed = blocking(move || params.read(&engine)).await?;
    Ok(html(memories::list(&listed, &web.csrf, now)))
}

/// `/memories/{id}`: a memory's versions, and the forms that change it.
async fn memory(State(web): State<Arc<Web>>, Path(id): Path<String>) -> Result<Response, Failure> {
    let now = web.options.clock.now();
    let engine = web.engine.clone();
    let versions = blocking(move || Ok(engine.memory_history(&id)?)).await?;
    Ok(html(memories::history(&versions, &web.csrf, now)))
}

/// `/documents`: the latest version of each document, most recently added first.
async fn documents_list(
    State(web): State<Arc<Web>>,
    query: QueryOf<documents::ListParams>,
) -> Result<Response, Failure> {
    let Query(params) = query?;
    let now = web.options.clock.now();
    let engine = web.engine.clone();
    let listed = blocking(move || params.read(&engine)).await?;
    Ok(html(documents::list(&listed, &web.csrf, now)))
}

/// `/documents/{id}` (`?version=N`): a document's versions, what the one shown changed,
/// and its text.
async fn document(
    State(web): State<Arc<Web>>,
    Path(id): Path<String>,
    query: QueryOf<documents::Params>,
) -> Result<Response, Failure> {
    let Query(params) = query?;
    let now = web.options.clock.now();
    let engine = web.engine.clone();
    let shown = blocking(move || params.read(&engine, &id)).await?;
    Ok(html(documents::page(&shown, now)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_show_as_their_pictures() {
        assert_eq!(
            super::visible_controls("a\u{1b}[31mred\r\nb\rc\u{7f}\u{85}\td\n".to_owned()),
            "a\u{241b}[31mred\nb\u{240d}c\u{2421}\u{fffd}\td\n"
        );
        assert_eq!(super::visible_controls("plain\n".to_owned()), "plain\n");
    }
}
