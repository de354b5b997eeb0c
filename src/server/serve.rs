//! `eywa serve` put together: the store's semantic memory made ready, an ingest first,
//! then one listener that answers gRPC, the MCP tools at `/mcp` and the web view, beside
//! the background work ([`Background`]), announced in the data dir until a signal stops
//! it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{Access, Announcement, Background, Hosts, ServeError, Tls, Tokens};
use crate::engine::{Engine, Progress};
use crate::web::{Live, Login, WebOptions};

/// How long, once the server has stopped, blocking work of requests gets to end.
const RUNTIME_GRACE: Duration = Duration::from_millis(500);

/// Routes mounted beside gRPC and the web view, made once the engine is shared: the MCP
/// tools at `/mcp`, which live with the agents' side. The token is cancelled when the
/// server stops (their open sessions end).
pub type Mount = Box<dyn FnOnce(Arc<Engine>, CancellationToken) -> axum::Router>;

/// What a serving process is to be.
pub struct Serve {
    /// Where it listens.
    pub addr: SocketAddr,
    /// What it asks of callers.
    pub access: Access,
    /// Ingest the Claude dir before answering.
    pub ingest_first: bool,
    /// How often the Claude dir is looked at while serving (`None`: never).
    pub watch: Option<Duration>,
    /// The data dir, where the server announces itself.
    pub data_dir: PathBuf,
    /// The file of the token that may write, told to clients on this machine.
    pub token_file: Option<PathBuf>,
    /// The handoff ages the web view marks (`staleness_days`).
    pub staleness: Option<[u32; 3]>,
}

/// Why a server did not start, or stopped on a failure.
#[derive(Debug, thiserror::Error)]
pub enum ServeFailed {
    /// The embedding model could not be made ready.
    #[error("cannot open semantic memory")]
    Semantic(#[source] crate::Error),
    /// The first ingest failed.
    #[error("ingest failed")]
    Ingest(#[source] crate::Error),
    /// The async runtime did not start.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    /// A background thread did not start.
    #[error("cannot start the server's background work")]
    Background(#[source] crate::Error),
    /// The web view's routes could not be made.
    #[error("cannot set up the web view")]
    Web(#[source] crate::Error),
    /// The address cannot be listened on.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A stop signal's handler could not be installed.
    #[error("cannot handle {signal}")]
    Signal {
        /// Which signal.
        signal: &'static str,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `<data>/serve.json` could not be written.
    #[error("cannot announce the server")]
    Announce(#[source] crate::Error),
    /// The server failed while answering.
    #[error(transparent)]
    Serve(#[from] ServeError),
}

impl Serve {
    /// Serves `engine` until Ctrl-C or SIGTERM. `progress` hears of the first ingest;
    /// `say` is handed what a person at the terminal is told (where to connect, why
    /// semantic search is off).
    pub fn run(
        self,
        engine: Engine,
        progress: &mut dyn FnMut(Progress),
        mount: Mount,
        say: &dyn Fn(&str),
    ) -> Result<(), ServeFailed> {
        let semantic = engine.prepare_semantic().map_err(ServeFailed::Semantic)?;
        match &semantic.unavailable {
            None => tracing::info!(
                model = semantic.model.as_deref().unwrap_or_default(),
                vectors = semantic.vectors,
                backlog = semantic.backlog,
                "semantic search on"
            ),
            Some(why) => say(&format!(
                "semantic search is off: {why}. Searches are lexical (BM25) until \
                 `eywa model install` succeeds and serve is restarted."
            )),
        }
        if self.ingest_first {
            ingest_first(&engine, progress)?;
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(ServeFailed::Runtime)?;
        let engine = Arc::new(engine);
        // Pages of the web view listening for news: the watcher looks more often meanwhile.
        let live = Arc::new(Live::default());
        let background =
            Background::start(&engine, self.watch, &live).map_err(ServeFailed::Background)?;
        // Open MCP sessions and the web view's event streams end with the server.
        let stop = CancellationToken::new();
        let web = crate::web::router(
            engine.clone(),
            WebOptions {
                clock: crate::model::Clock::system(),
                staleness: self.staleness,
                live,
                stop: stop.clone(),
                login: self.access.tokens.clone().map(|tokens| Login {
                    tokens: Arc::new(tokens),
                    secure: self.access.tls.is_some(),
                }),
            },
        )
        .map_err(ServeFailed::Web)?;
        let routes = mount(engine.clone(), stop.clone()).merge(web);
        let served = runtime.block_on(self.listen(engine, routes, stop, say));
        // A request still at work on a blocking thread past the grace is left to end with
        // the process: dropping the runtime would wait for it, and the server's promise is
        // to stop within the grace. What it wrote is committed or not; nothing is
        // half-written.
        background.stopping();
        runtime.shutdown_timeout(RUNTIME_GRACE);
        // What client writes changed since the last run that read a transcript: durable,
        // and the graph view's snapshot current, so the next start loads it instead of
        // rebuilding it.
        background.stop();
        served
    }

    /// Binds the listener, announces the server and answers until a signal.
    async fn listen(
        self,
        engine: Arc<Engine>,
        routes: axum::Router,
        stop: CancellationToken,
        say: &dyn Fn(&str),
    ) -> Result<(), ServeFailed> {
        let addr = self.addr;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeFailed::Listen { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| ServeFailed::Listen { addr, source })?;
        let stop_signal = stop_signal()?;
        // Every other command on this data dir now asks us instead of the store.
        let mut announcement = Announcement::of_this_process(local);
        announcement.tls_cert = self.access.tls.as_ref().map(|t| absolute(&t.cert_path));
        announcement.token_file = self.token_file.as_deref().map(absolute);
        announcement
            .write(&self.data_dir)
            .map_err(ServeFailed::Announce)?;
        let _announced = Withdraw(&self.data_dir);
        let scheme = if self.access.tls.is_some() {
            "https"
        } else {
            "http"
        };
        tracing::info!("serving eywa.v1 on {local} (Ctrl-C stops)");
        say(&format!("web view at {scheme}://{local}/"));
        say(&format!("MCP tools at {scheme}://{local}/mcp"));
        say(&format!("serving gRPC on {local}"));
        let stopping = async move {
            stop_signal.await;
            stop.cancel();
        };
        super::run_with_routes(listener, engine, self.access, routes, stopping).await?;
        Ok(())
    }
}

/// The first ingest: a missing Claude dir serves what the store holds.
fn ingest_first(engine: &Engine, progress: &mut dyn FnMut(Progress)) -> Result<(), ServeFailed> {
    match engine.ingest_with_progress(progress) {
        Ok(report) => tracing::info!(
            sessions = report.counts.sessions,
            episodes = report.counts.episodes,
            entities = report.counts.entities,
            edges = report.counts.edges,
            skipped_lines = report.counts.skipped_lines,
            seconds = report.elapsed.as_secs_f64(),
            "ingested {}",
            engine.claude_dir().root().display()
        ),
        Err(crate::Error::ClaudeDirMissing { path }) => tracing::warn!(
            "no Claude Code projects at {}: serving what the store holds",
            path.display()
        ),
        Err(other) => return Err(ServeFailed::Ingest(other)),
    }
    Ok(())
}

/// The access of a server that takes remote callers: the tokens in `write` and `read`
/// (made 0600 when missing), and TLS with the given certificate and key, else a
/// self-signed one for `addr` kept in `<data>/tls/`. `say` is told where they are.
pub fn remote_access(
    data_dir: &Path,
    write: &Path,
    read: &Path,
    cert_and_key: Option<(&Path, &Path)>,
    addr: SocketAddr,
    say: &dyn Fn(&str),
) -> crate::Result<Access> {
    crate::fs::create_private_dir(data_dir)?;
    let tokens = Tokens::load_or_create(write, read)?;
    let tls = match cert_and_key {
        Some((cert, key)) => Tls::from_files(cert, key)?,
        None => Tls::self_signed(&data_dir.join("tls"), &[addr.ip().to_string()])?,
    };
    say(&format!(
        "remote callers need a token: {} (may write) or {} (reads only)",
        write.display(),
        read.display()
    ));
    say(&format!(
        "TLS certificate {} (sha256 {})",
        tls.cert_path.display(),
        tls.fingerprint()?
    ));
    Ok(Access {
        tokens: Some(tokens),
        tls: Some(tls),
        hosts: Hosts::default(),
    })
}

/// `path` made absolute: a client may run from any directory.
fn absolute(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// Ctrl-C or SIGTERM. The handlers are installed when this is called, not when the future
/// is first polled: a signal that comes as soon as the server says where it listens stops
/// it cleanly (its announcement withdrawn) instead of killing it.
fn stop_signal() -> Result<impl std::future::Future<Output = ()>, ServeFailed> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let handle = |kind, signal_name| {
            signal(kind).map_err(|source| ServeFailed::Signal {
                signal: signal_name,
                source,
            })
        };
        let mut interrupt = handle(SignalKind::interrupt(), "SIGINT")?;
        let mut terminate = handle(SignalKind::terminate(), "SIGTERM")?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            tracing::info!("shutting down");
        })
    }
    #[cfg(not(unix))]
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down");
    })
}

/// Removes `<data>/serve.json` when the server stops, however it stops.
struct Withdraw<'a>(&'a Path);

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if let Err(e) = Announcement::withdraw(self.0) {
            tracing::warn!(error = %e, "cannot remove the server announcement");
        }
    }
}
