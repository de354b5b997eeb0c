//! The tonic server: eywa's services, health and reflection (v1 and v1alpha, so every
//! grpcurl version can list and describe them), served on a bound listener until
//! `shutdown` resolves.

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::Server;
use tonic_health::ServingStatus;

use crate::api;
use crate::engine::Engine;

/// Default address: loopback only.
pub const DEFAULT_ADDR: &str = "127.0.0.1:50051";

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot build the reflection service")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("the gRPC server failed")]
    Transport(#[from] tonic::transport::Error),
}

/// Serves until `shutdown` resolves; in-flight requests finish first.
pub async fn run(
    listener: TcpListener,
    engine: Arc<Engine>,
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
    let router = Server::builder()
        .add_service(health_service)
        .add_service(reflection().build_v1()?)
        .add_service(reflection().build_v1alpha()?);
    api::add_services(router, engine)
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), shutdown)
        .await?;
    Ok(())
}
