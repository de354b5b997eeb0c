//! Signing in to a server that asks for tokens (`serve --allow-remote`). A browser cannot
//! send an `authorization` header on a link, so `/login` takes the token once and keeps it
//! in an HttpOnly, SameSite=Strict cookie (`Secure` over TLS), which the server's auth
//! layer reads as it reads the header: the read-only token sees every page and writes
//! nothing, the token that may write does both. A page asked for without either is sent
//! here, and back once signed in. Without tokens there is nothing to sign in to.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::html;

use super::{Failure, FormResult, Web, html, pages};
use crate::tokens::Tokens;

/// The cookie that carries the token, hex-encoded (a token file may hold any text).
pub const COOKIE: &str = "eywa_token";

/// The paths that answer without a token: signing in and out, and what the sign-in page
/// loads.
const OPEN: [&str; 6] = [
    "/login",
    "/logout",
    "/assets/eywa.css",
    "/assets/eywa.js",
    "/favicon.svg",
    "/favicon.ico",
];

/// What signing in needs: the server's tokens, and whether it is reached over TLS (the
/// cookie is then `Secure`).
#[derive(Debug, Clone)]
pub struct Login {
    /// The tokens the server takes.
    pub tokens: Arc<Tokens>,
    /// Whether the server is reached over TLS: the cookie is then sent over TLS only.
    pub secure: bool,
}

/// Whether the web view answers `path` without a token.
pub fn is_open(path: &str) -> bool {
    OPEN.contains(&path)
}

/// The token a browser's cookie carries, as an `authorization` header would.
pub fn bearer_of_cookie(headers: &http::HeaderMap) -> Option<HeaderValue> {
    let token = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == COOKIE).then_some(value)
        })
        .and_then(from_hex)?;
    HeaderValue::from_str(&format!("Bearer {token}")).ok()
}

/// Where a browser asking for `path_and_query` without a token is sent: the sign-in page,
/// which sends it back.
pub fn to_sign_in(path_and_query: &str) -> Response {
    see_other(&format!("/login?next={}", pages::segment(path_and_query)))
}

#[derive(Debug, serde::Deserialize)]
pub(super) struct Next {
    next: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
pub(super) struct SignIn {
    token: String,
    next: Option<String>,
}

/// `GET /login?next=…`: the sign-in form.
pub(super) async fn form(State(web): State<Arc<Web>>, Query(query): Query<Next>) -> Response {
    let next = local(query.next.as_deref());
    if web.options.login.is_none() {
        return see_other(&next);
    }
    html(page(&next, None))
}

/// `POST /login`: a token this server knows signs the browser in and sends it on.
pub(super) async fn sign_in(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    form: FormResult<SignIn>,
) -> Result<Response, Failure> {
    let axum::Form(form) = form?;
    let next = local(form.next.as_deref());
    let Some(login) = &web.options.login else {
        return Ok(see_other(&next));
    };
    // Another site's form must not sign a browser in with a token of its choosing.
    if headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes() == b"cross-site")
    {
        return Err(Failure::CrossSite);
    }
    let token = form.token.trim();
    if !login.tokens.admits(token) {
        let why = "That is not a token of this server: it is in the server's data directory, \
                   in `token` (to read and write) or `token.read` (to read).";
        return Ok((StatusCode::UNAUTHORIZED, html(page(&next, Some(why)))).into_response());
    }
    let mut cookie = format!(
        "{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict",
        to_hex(token)
    );
    if login.secure {
        cookie.push_str("; Secure");
    }
    Ok(with_cookie(see_other(&next), &cookie))
}

/// `POST /logout`: forgets the browser's token.
pub(super) async fn sign_out() -> Response {
    let cookie = format!("{COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict");
    with_cookie(see_other("/login"), &cookie)
}

fn page(next: &str, why: Option<&str>) -> maud::Markup {
    pages::layout(
        "Sign in",
        html! {
            h1 { "Sign in" }
            p { "This server answers only callers with one of its tokens." }
            @if let Some(why) = why {
                p.error role="alert" { (why) }
            }
            form.login method="post" action="/login" {
                input type="hidden" name="next" value=(next);
                label { "Token " input type="password" name="token" autocomplete="current-password" required autofocus; }
                button type="submit" { "Sign in" }
            }
        },
    )
}

/// `next` when it is a path on this server, else `/`: never a way to another site.
fn local(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with('/') && !n.starts_with("//") && !n.starts_with("/\\") => {
            n.to_owned()
        }
        _ => "/".to_owned(),
    }
}

fn see_other(to: &str) -> Response {
    axum::response::Redirect::to(to).into_response()
}

fn with_cookie(mut response: Response, cookie: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

fn to_hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(hex: &str) -> Option<String> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_path_of_this_server_is_a_place_to_go_back_to() {
        for (given, kept) in [
            (Some("/sessions/abc?at=1"), "/sessions/abc?at=1"),
            (Some("//evil.example/x"), "/"),
            (Some("/\\evil.example"), "/"),
            (Some("https://evil.example/"), "/"),
            (None, "/"),
        ] {
            assert_eq!(local(given), kept, "{given:?}");
        }
    }

    #[test]
    fn the_cookie_carries_any_token_and_reads_back_as_a_bearer() {
        let token = "a token; with=odd \"chars\"";
        let mut headers = http::HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("other=1; {COOKIE}={}", to_hex(token))).unwrap(),
        );
        let bearer = bearer_of_cookie(&headers).unwrap();
        assert_eq!(bearer.to_str().unwrap(), format!("Bearer {token}"));
        headers.insert(header::COOKIE, HeaderValue::from_static("eywa_token=zz"));
        assert!(bearer_of_cookie(&headers).is_none());
    }
}
