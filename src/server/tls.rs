//! TLS, ended here rather than by tonic: tonic offers only HTTP/2 (ALPN `h2`), and an MCP
//! client such as httpx offers only HTTP/1.1 unless told otherwise. Each handshake runs in
//! its own task, within [`HANDSHAKE_TIMEOUT`], so a slow client holds up no other.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::server::TlsStream;
use tokio_stream::Stream;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use super::{ServeError, Tls};

/// How long a client gets to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long accepting waits after an error that is not one connection's (out of file
/// descriptors, say), rather than spin.
const ACCEPT_PAUSE: Duration = Duration::from_secs(1);

/// Connections past their handshake, waiting for the server to take them.
const READY_BACKLOG: usize = 64;

/// An acceptor presenting `tls`'s certificate, offering HTTP/2 and HTTP/1.1.
pub(super) fn acceptor(tls: &Tls) -> Result<TlsAcceptor, ServeError> {
    let refused = |why: String| ServeError::Tls {
        cert: tls.cert_path.clone(),
        why,
    };
    let chain = CertificateDer::pem_slice_iter(&tls.cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| refused(format!("the certificate is not PEM: {e}")))?;
    if chain.is_empty() {
        return Err(refused("it holds no certificate".to_owned()));
    }
    let key = PrivateKeyDer::from_pem_slice(&tls.key_pem)
        .map_err(|e| refused(format!("its key is not a PEM private key: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_no_client_auth().with_single_cert(chain, key))
        .map_err(|e| refused(e.to_string()))?;
    // gRPC clients ask for h2; httpx (the MCP SDK's client) for http/1.1 unless told.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The connections to `listener` that completed a TLS handshake with `acceptor`. Accepting
/// stops, and the listener closes, when the stream is dropped.
pub(super) fn incoming(
    listener: TcpListener,
    acceptor: TlsAcceptor,
) -> impl Stream<Item = std::io::Result<TlsStream<TcpStream>>> {
    let (ready, streams) = mpsc::channel(READY_BACKLOG);
    tokio::spawn(accept(listener, acceptor, ready));
    ReceiverStream::new(streams).map(Ok::<_, std::io::Error>)
}

/// Accepts connections until `ready`'s receiver is dropped, handing each to a handshake task.
async fn accept(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    ready: mpsc::Sender<TlsStream<TcpStream>>,
) {
    loop {
        let accepted = tokio::select! {
            () = ready.closed() => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                tracing::warn!(error = %e, "cannot accept a connection");
                tokio::time::sleep(ACCEPT_PAUSE).await;
                continue;
            }
        };
        // Answers go out at once: without TCP_NODELAY a small reply waits for the
        // client's delayed ACK (~40 ms a request).
        let _ = stream.set_nodelay(true);
        let (acceptor, ready) = (acceptor.clone(), ready.clone());
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(stream)) => {
                    // The server stopped meanwhile: the connection is dropped.
                    let _ = ready.send(stream).await;
                }
                Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
                Err(_) => tracing::debug!(
                    "TLS handshake not done within {} s: connection closed",
                    HANDSHAKE_TIMEOUT.as_secs()
                ),
            }
        });
    }
}

/// An error of one connection, gone before it was accepted: the next one may do.
fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    )
}
