//! Who may ask a server that listens beyond this machine's loopback: a bearer token on
//! every call (a read-only one, or one that may also ingest, import, embed, migrate, write
//! memories and add documents), over TLS. A loopback server (the default) asks neither.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::task::{Context, Poll};

use sha2::{Digest, Sha256};

use crate::tokens::{Scope, Tokens};
use crate::{Error, Result};

/// Calls that change the store or the Claude dir: the read-only token may not make them.
/// (`Recall` writes an access record too, but only of what the caller may read.)
pub const WRITE_METHODS: [&str; 13] = [
    "/eywa.v1.Admin/Backup",
    "/eywa.v1.Ingest/Ingest",
    "/eywa.v1.Ingest/IngestSession",
    "/eywa.v1.Ingest/Import",
    "/eywa.v1.Ingest/Embed",
    "/eywa.v1.Sessions/MigrateSessions",
    "/eywa.v1.Memory/Remember",
    "/eywa.v1.Memory/Update",
    "/eywa.v1.Memory/Forget",
    "/eywa.v1.Memory/Consolidate",
    // Reads a file of the server's machine, or has every ingest walk a folder of it.
    "/eywa.v1.Documents/AddDocument",
    "/eywa.v1.Documents/FollowFolders",
    // The MCP endpoint: its tools remember, forget and ingest as well as read.
    "/mcp",
];

/// Calls any client may make without a token: whether the server is up, and reflection
/// (the API's shape, which is public in `proto/`; grpcurl asks it before any call).
const OPEN_PREFIXES: [&str; 3] = [
    "/grpc.health.v1.Health/",
    "/grpc.reflection.v1.ServerReflection/",
    "/grpc.reflection.v1alpha.ServerReflection/",
];

impl Tokens {
    fn scope(&self, header: Option<&http::HeaderValue>) -> Option<Scope> {
        let token = header?.to_str().ok()?.strip_prefix("Bearer ")?.trim();
        self.scope_of(token)
    }

    /// `Ok` when a call to `path` with this `authorization` header may go on; the status
    /// to answer instead when not.
    pub fn check(
        &self,
        path: &str,
        authorization: Option<&http::HeaderValue>,
    ) -> std::result::Result<(), tonic::Status> {
        self.check_request(path, false, authorization)
    }

    /// [`Tokens::check`] of a request that `writes` whatever its path (a web form's
    /// POST): only the token that may write may make it.
    pub fn check_request(
        &self,
        path: &str,
        writes: bool,
        authorization: Option<&http::HeaderValue>,
    ) -> std::result::Result<(), tonic::Status> {
        if OPEN_PREFIXES.iter().any(|p| path.starts_with(p)) {
            return Ok(());
        }
        match self.scope(authorization) {
            None => Err(tonic::Status::unauthenticated(
                "this server needs a token: send `authorization: Bearer <token>` (the server's \
                 <data>/token, or <data>/token.read to read only)",
            )),
            Some(Scope::Read) if writes || WRITE_METHODS.contains(&path) => {
                Err(tonic::Status::permission_denied(format!(
                    "{path} changes the store: the read-only token may not call it"
                )))
            }
            Some(_) => Ok(()),
        }
    }
}

/// The certificate and key a remote server presents.
#[derive(Clone)]
pub struct Tls {
    /// The certificate (PEM).
    pub cert_pem: Vec<u8>,
    /// The certificate's private key (PEM).
    pub key_pem: Vec<u8>,
    /// Where the certificate is, for clients on this machine to trust.
    pub cert_path: PathBuf,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("cert_path", &self.cert_path)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// A certificate and key given as PEM files.
    pub fn from_files(cert: &Path, key: &Path) -> Result<Tls> {
        Ok(Tls {
            cert_pem: std::fs::read(cert).map_err(Error::io(cert))?,
            key_pem: std::fs::read(key).map_err(Error::io(key))?,
            cert_path: cert.to_path_buf(),
        })
    }

    /// The self-signed pair in `dir` (`cert.pem`, `key.pem`, 0600), generated when missing,
    /// for `localhost`, the loopback addresses and `extra_names` (the address served on).
    pub fn self_signed(dir: &Path, extra_names: &[String]) -> Result<Tls> {
        let cert = dir.join("cert.pem");
        let key = dir.join("key.pem");
        if !cert.is_file() || !key.is_file() {
            let mut names = vec![
                "localhost".to_owned(),
                "127.0.0.1".to_owned(),
                "::1".to_owned(),
            ];
            names.extend(extra_names.iter().cloned());
            names.sort();
            names.dedup();
            let pair = rcgen::generate_simple_self_signed(names).map_err(|e| {
                Error::InvalidArgument(format!("cannot make a TLS certificate: {e}"))
            })?;
            crate::fs::create_private_dir(dir)?;
            crate::fs::write_private_atomically(&key, pair.signing_key.serialize_pem().as_bytes())?;
            crate::fs::write_private_atomically(&cert, pair.cert.pem().as_bytes())?;
        }
        Tls::from_files(&cert, &key)
    }

    /// The sha256 of the certificate (its DER), as `AB:CD:…`, for a client to pin.
    pub fn fingerprint(&self) -> Result<String> {
        let text = String::from_utf8_lossy(&self.cert_pem);
        let body: String = text
            .lines()
            .skip_while(|l| !l.starts_with("-----BEGIN CERTIFICATE-----"))
            .skip(1)
            .take_while(|l| !l.starts_with("-----END"))
            .collect();
        let der = base64_decode(&body).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} holds no PEM certificate",
                self.cert_path.display()
            ))
        })?;
        Ok(Sha256::digest(&der)
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect::<Vec<_>>()
            .join(":"))
    }
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes: Vec<u8> = text
        .bytes()
        .filter(|&c| c != b'=' && !c.is_ascii_whitespace())
        .collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c)? << (18 - 6 * i);
        }
        let take = chunk.len().saturating_sub(1);
        out.extend_from_slice(&n.to_be_bytes()[1..=take]);
    }
    Some(out)
}

/// What a server asks of its callers.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// `None`: no token asked (a loopback server).
    pub tokens: Option<Tokens>,
    /// `None`: plaintext (a loopback server).
    pub tls: Option<Tls>,
    /// The names a server without tokens answers for, besides loopback names and the
    /// address it listens on (which the server adds).
    pub hosts: super::Hosts,
}

/// A tower layer that refuses a call before it reaches its service. When the server asks
/// for tokens: a gRPC call with UNAUTHENTICATED or PERMISSION_DENIED, any other request
/// (`/mcp`, the web view) with HTTP 401 or 403. When it does not: a call naming a host
/// it is not reached by (see [`super::Hosts`]) with PERMISSION_DENIED, or the web view's
/// 421 page.
#[derive(Debug, Clone)]
pub(super) struct AuthLayer {
    pub tokens: Option<Arc<Tokens>>,
    pub hosts: Arc<super::Hosts>,
}

impl<S> tower::Layer<S> for AuthLayer {
    type Service = Auth<S>;

    fn layer(&self, inner: S) -> Auth<S> {
        Auth {
            inner,
            tokens: self.tokens.clone(),
            hosts: self.hosts.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Auth<S> {
    inner: S,
    tokens: Option<Arc<Tokens>>,
    hosts: Arc<super::Hosts>,
}

type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

impl<S, B> tower::Service<http::Request<B>> for Auth<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<std::result::Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if self.tokens.is_none() {
            let host = super::hosts::of_request(&request).unwrap_or_default();
            if !self.hosts.allows(&host) {
                let answer = if is_grpc(request.headers()) {
                    tonic::Status::permission_denied(format!(
                        "this server does not answer for the host {}: reach it at \
                         127.0.0.1, or start it with --allow-host NAME",
                        crate::error::quote(&host)
                    ))
                    .into_http()
                } else {
                    crate::web::misdirected(&host).map(tonic::body::Body::new)
                };
                return Box::pin(async move { Ok(answer) });
            }
        }
        let Some(tokens) = &self.tokens else {
            return Box::pin(self.inner.call(request));
        };
        let grpc = is_grpc(request.headers());
        let path = request.uri().path();
        // The web view's pages: a browser signs in once and sends its token as a cookie.
        let page = !grpc && path != "/mcp" && !path.starts_with("/mcp/");
        if page && crate::web::login::is_open(path) {
            return Box::pin(self.inner.call(request));
        }
        let cookie = page
            .then(|| crate::web::login::bearer_of_cookie(request.headers()))
            .flatten();
        let authorization = request
            .headers()
            .get(http::header::AUTHORIZATION)
            .or(cookie.as_ref());
        // A request other than a read of a page or an asset (a form's POST) writes.
        let reads = matches!(*request.method(), http::Method::GET | http::Method::HEAD);
        if let Err(status) = tokens.check_request(path, !grpc && !reads, authorization) {
            let answer = if grpc {
                status.into_http()
            } else if page && reads && status.code() == tonic::Code::Unauthenticated {
                let asked = request
                    .uri()
                    .path_and_query()
                    .map_or(path, http::uri::PathAndQuery::as_str);
                crate::web::login::to_sign_in(asked).map(tonic::body::Body::new)
            } else {
                http_refusal(&status)
            };
            return Box::pin(async move { Ok(answer) });
        }
        Box::pin(self.inner.call(request))
    }
}

/// Whether a request is a gRPC call: gRPC clients all send `application/grpc…`.
pub(super) fn is_grpc(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"))
}

/// A refused call as plain HTTP, for clients that read no gRPC status: 401 asking for a
/// bearer token (RFC 6750), or 403 when the token may not make it.
fn http_refusal(status: &tonic::Status) -> http::Response<tonic::body::Body> {
    let (code, challenge) = if status.code() == tonic::Code::PermissionDenied {
        (
            http::StatusCode::FORBIDDEN,
            r#"Bearer realm="eywa", error="insufficient_scope""#,
        )
    } else {
        (http::StatusCode::UNAUTHORIZED, r#"Bearer realm="eywa""#)
    };
    let body = axum::body::Body::from(format!("{}\n", status.message()));
    let mut response = http::Response::new(tonic::body::Body::new(body));
    *response.status_mut() = code;
    let headers = response.headers_mut();
    headers.insert(
        http::header::WWW_AUTHENTICATE,
        http::HeaderValue::from_static(challenge),
    );
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_allow_by_scope() {
        let tokens = Tokens::new("w-0123456789abcdef", "r-0123456789abcdef");
        let bearer = |t: &str| http::HeaderValue::from_str(&format!("Bearer {t}")).unwrap();
        let search = "/eywa.v1.Retrieval/Search";
        let migrate = "/eywa.v1.Sessions/MigrateSessions";
        assert_eq!(
            tokens.check(search, None).unwrap_err().code(),
            tonic::Code::Unauthenticated
        );
        let wrong = bearer("nope-0123456789abcdef");
        assert_eq!(
            tokens.check(search, Some(&wrong)).unwrap_err().code(),
            tonic::Code::Unauthenticated
        );
        let read = bearer("r-0123456789abcdef");
        assert!(tokens.check(search, Some(&read)).is_ok());
        assert_eq!(
            tokens.check(migrate, Some(&read)).unwrap_err().code(),
            tonic::Code::PermissionDenied
        );
        let write = bearer("w-0123456789abcdef");
        assert!(tokens.check(migrate, Some(&write)).is_ok());
        assert!(tokens.check("/grpc.health.v1.Health/Check", None).is_ok());
        // A web page reads with either token; its forms write with the writing one alone.
        assert!(
            tokens
                .check_request("/memories", false, Some(&read))
                .is_ok()
        );
        assert_eq!(
            tokens
                .check_request("/memories", true, Some(&read))
                .unwrap_err()
                .code(),
            tonic::Code::PermissionDenied
        );
        assert!(
            tokens
                .check_request("/memories", true, Some(&write))
                .is_ok()
        );
    }

    #[test]
    fn refusals_outside_grpc_are_http_statuses() {
        let tokens = Tokens::new("w-0123456789abcdef", "r-0123456789abcdef");
        let read = http::HeaderValue::from_static("Bearer r-0123456789abcdef");
        let anonymous = http_refusal(&tokens.check("/mcp", None).unwrap_err());
        assert_eq!(anonymous.status(), http::StatusCode::UNAUTHORIZED);
        let challenge = &anonymous.headers()[http::header::WWW_AUTHENTICATE];
        assert!(challenge.to_str().unwrap().starts_with("Bearer "));
        let reader = http_refusal(&tokens.check("/mcp", Some(&read)).unwrap_err());
        assert_eq!(reader.status(), http::StatusCode::FORBIDDEN);

        let mut headers = http::HeaderMap::new();
        assert!(!is_grpc(&headers));
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/grpc+proto"),
        );
        assert!(is_grpc(&headers));
    }

    #[test]
    fn base64_round_trips_what_pem_holds() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGk=").unwrap(), b"hi");
        assert_eq!(base64_decode("YWJj").unwrap(), b"abc");
    }
}
