//! Why a page cannot be shown: each a status, and a page saying so.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::{html, pages};

/// Why a page cannot be shown: each a status and a page saying so.
#[derive(Debug)]
pub(super) enum Failure {
    /// 400: a parameter that does not parse, with why.
    BadRequest(String),
    /// 404: nothing at this address.
    NotFound(String),
    /// 409: what the store lacks to answer (semantic search without the model).
    Unavailable(String),
    /// 421: a `Host` this server is not reached by.
    Misdirected(String),
    /// 403: another site's page asking without navigating here.
    CrossSite,
    /// 403: a form without this server's token (stale, or another site's).
    Forged,
    /// 500: the store failed.
    Internal(String),
}

impl From<crate::Error> for Failure {
    fn from(e: crate::Error) -> Failure {
        match e {
            crate::Error::NotFound(why) => Failure::NotFound(why),
            crate::Error::InvalidArgument(why) => Failure::BadRequest(why),
            crate::Error::FailedPrecondition(why) => Failure::Unavailable(why),
            other => {
                tracing::warn!(error = %other, "a web page failed");
                Failure::Internal(other.to_string())
            }
        }
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let (status, why) = match self {
            Failure::BadRequest(why) => (StatusCode::BAD_REQUEST, why),
            Failure::NotFound(why) => (StatusCode::NOT_FOUND, why),
            Failure::Unavailable(why) => (StatusCode::CONFLICT, why),
            Failure::Misdirected(host) => (
                StatusCode::MISDIRECTED_REQUEST,
                format!(
                    "this server does not answer for the host {}: reach it at 127.0.0.1, \
                     or start it with --allow-host NAME",
                    crate::error::quote(&host)
                ),
            ),
            Failure::CrossSite => (
                StatusCode::FORBIDDEN,
                "another site's page may link here, not load from here".to_owned(),
            ),
            Failure::Forged => (
                StatusCode::FORBIDDEN,
                "this form is not one this server gave out (or the server restarted since): \
                 reload the page and send it again"
                    .to_owned(),
            ),
            Failure::Internal(why) => (StatusCode::INTERNAL_SERVER_ERROR, why),
        };
        (status, html(pages::failure(status, &why))).into_response()
    }
}

impl From<axum::extract::rejection::QueryRejection> for Failure {
    fn from(e: axum::extract::rejection::QueryRejection) -> Failure {
        Failure::BadRequest(e.body_text())
    }
}

impl From<axum::extract::rejection::FormRejection> for Failure {
    fn from(e: axum::extract::rejection::FormRejection) -> Failure {
        Failure::BadRequest(e.body_text())
    }
}
