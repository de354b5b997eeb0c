//! The tonic server: eywa's services, health and reflection (v1 and v1alpha, so every
//! grpcurl version can list and describe them), served on a bound listener until
//! `shutdown` resolves.

mod access;
mod announce;
mod background;
mod hosts;
mod serve;
mod tls;

pub use self::access::{Access, Tls, WRITE_METHODS};
pub use self::announce::Announcement;
pub use self::background::{Background, follow, quiet};
pub use self::hosts::Hosts;
pub use self::serve::{Mount, Serve, ServeFailed, remote_access};
pub use crate::tokens::Tokens;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::TcpListenerStream;
use tokio_util::either::Either;
use tonic::transport::Server;
use tonic_health::ServingStatus;

use crate::api;
use crate::engine::Engine;

/// Default address: loopback only.
pub const DEFAULT_ADDR: &str = "127.0.0.1:50051";

/// Why the gRPC server could not start, or failed while serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The reflection service could not be built from the API's descriptors.
    #[error("cannot build the reflection service")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// The transport failed while serving.
    #[error("the gRPC server failed")]
    Transport(#[from] tonic::transport::Error),
    /// The TLS certificate or its key cannot be used.
    #[error("cannot serve TLS with the certificate {}: {why}", .cert.display())]
    Tls {
        /// The certificate's file.
        cert: PathBuf,
        /// What is wrong with it, or with its key.
        why: String,
    },
}

/// Serves as [`run_with`] does, to any caller: a loopback server.
pub async fn run(
    listener: TcpListener,
    engine: Arc<Engine>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    run_with(listener, engine, Access::default(), shutdown).await
}

/// HTTP/2 streams one connection may have open at once. Said to every client: one that
/// hears no number may assume one stream (httpx does), and the MCP SDK keeps one open for
/// the server's events, so its next call would wait for ever.
const MAX_STREAMS: u32 = 1024;

/// How long a server takes at most to stop once `shutdown` resolves, requests in flight
/// or not.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How long open connections get to finish after `shutdown`: less than
/// [`SHUTDOWN_GRACE`], which also covers what the process does after (`serve` ends the
/// runtime's blocking work and its own threads).
const CONNECTIONS_GRACE: Duration = Duration::from_secs(3);

/// Serves until `shutdown` resolves. Then the work of requests in flight is cancelled
/// (it ends at its next checkpoint, see [`crate::cancel`]); open connections get
/// `CONNECTIONS_GRACE` (3 s) to finish, then are closed. With `access`, every call but health's needs a token
/// and connections need TLS.
pub async fn run_with(
    listener: TcpListener,
    engine: Arc<Engine>,
    access: Access,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    run_with_routes(listener, engine, access, axum::Router::new(), shutdown).await
}

/// [`run_with`], with `extra` routes beside the gRPC services (`/mcp`), which may be
/// HTTP/1.1 or HTTP/2, over TLS too. With `access`, they need the token that may write.
pub async fn run_with_routes(
    listener: TcpListener,
    engine: Arc<Engine>,
    access: Access,
    extra: axum::Router,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let (health, health_service) = tonic_health::server::health_reporter();
    for name in api::SERVICE_NAMES {
        health
            .set_service_status(name, ServingStatus::Serving)
            .await;
    }
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(api::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    // TLS is ended here, not by tonic, which would offer HTTP/2 alone.
    let acceptor = access.tls.as_ref().map(tls::acceptor).transpose()?;
    // The extra routes sit beside gRPC's; what none of them knows is UNIMPLEMENTED to a
    // gRPC call, and the web view's 404 page to anything else.
    let routes = tonic::service::Routes::from(extra.fallback(unknown_route));
    let router = Server::builder()
        .accept_http1(true)
        .max_concurrent_streams(MAX_STREAMS)
        .layer(access::AuthLayer {
            tokens: access.tokens.map(Arc::new),
            hosts: Arc::new(Hosts {
                bound: listener.local_addr().ok(),
                ..access.hosts
            }),
        })
        .add_routes(routes)
        .add_service(health_service)
        .add_service(reflection().build_v1()?)
        .add_service(reflection().build_v1alpha()?);
    let cancel = crate::cancel::Cancel::new();
    let router = api::add_services(router, engine, cancel.clone());
    let (stopping, stopped) = tokio::sync::oneshot::channel::<()>();
    let signal = async {
        shutdown.await;
        cancel.cancel();
        let _ = stopping.send(());
    };
    let served = match acceptor {
        None => {
            // Answers go out at once: without TCP_NODELAY a small reply waits for the
            // client's delayed ACK (~40 ms a request). Tonic sets it only on listeners it
            // binds itself.
            let incoming = TcpListenerStream::new(listener).map(|stream| {
                if let Ok(stream) = &stream {
                    let _ = stream.set_nodelay(true);
                }
                stream
            });
            Either::Left(router.serve_with_incoming_shutdown(incoming, signal))
        }
        Some(acceptor) => Either::Right(
            router.serve_with_incoming_shutdown(tls::incoming(listener, acceptor), signal),
        ),
    };
    tokio::pin!(served);
    tokio::select! {
        result = &mut served => result?,
        () = async {
            if stopped.await.is_ok() {
                tokio::time::sleep(CONNECTIONS_GRACE).await;
            } else {
                std::future::pending::<()>().await;
            }
        } => {
            tracing::warn!(
                "connections still open {} s after shutdown began: closing them",
                CONNECTIONS_GRACE.as_secs()
            );
        }
    }
    Ok(())
}

/// The answer to a request no route takes: UNIMPLEMENTED to a gRPC call (as tonic gives
/// it), a 404 page to a browser.
async fn unknown_route(request: axum::extract::Request) -> axum::response::Response {
    use axum::response::IntoResponse;
    if access::is_grpc(request.headers()) {
        tonic::Status::unimplemented("")
            .into_http::<axum::body::Body>()
            .into_response()
    } else {
        crate::web::not_found()
    }
}
