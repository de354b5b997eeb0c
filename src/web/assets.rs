//! The assets pages load, compiled into the binary: nothing is fetched from elsewhere.

use axum::http::header;
use axum::response::IntoResponse;

/// The one stylesheet: light and dark, following the system.
const STYLESHEET: &str = include_str!("assets/eywa.css");

/// The one script: keyboard shortcuts. Pages read and work without it.
const SCRIPT: &str = include_str!("assets/eywa.js");

/// The icon, an SVG that browsers also take at `/favicon.ico`.
const FAVICON: &str = include_str!("assets/favicon.svg");

/// How long a browser may keep an asset without asking again: an hour (assets change only
/// with the binary, and the pages name them without a version).
const CACHE: &str = "public, max-age=3600";

pub(super) async fn stylesheet() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, CACHE),
        ],
        STYLESHEET,
    )
}

pub(super) async fn favicon() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, CACHE),
        ],
        FAVICON,
    )
}

pub(super) async fn script() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, CACHE),
        ],
        SCRIPT,
    )
}
