//! `eywa serve`: ingest, then serve gRPC (and embed and watch in the background) until
//! stopped.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use eywa::server::Announcement;

use crate::app::Paths;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Accept callers from other machines (and listen on a non-loopback address): every
    /// call then needs a bearer token (<data>/token may also ingest, import and migrate;
    /// <data>/token.read only reads; both made 0600 when missing), over TLS
    #[arg(long)]
    allow_remote: bool,
    /// With --allow-remote: the token that may also write [default: <data>/token]
    #[arg(long, value_name = "FILE", value_parser = crate::app::user_path, requires = "allow_remote")]
    token_file: Option<std::path::PathBuf>,
    /// With --allow-remote: the read-only token [default: <data>/token.read]
    #[arg(long, value_name = "FILE", value_parser = crate::app::user_path, requires = "allow_remote")]
    read_token_file: Option<std::path::PathBuf>,
    /// With --allow-remote: the TLS certificate, PEM [default: a self-signed one in
    /// <data>/tls/, made when missing]
    #[arg(long, value_name = "FILE", value_parser = crate::app::user_path, requires_all = ["allow_remote", "tls_key"])]
    tls_cert: Option<std::path::PathBuf>,
    /// With --allow-remote: the TLS certificate's private key, PEM
    #[arg(long, value_name = "FILE", value_parser = crate::app::user_path, requires_all = ["allow_remote", "tls_cert"])]
    tls_key: Option<std::path::PathBuf>,
    /// Serve what the store holds without ingesting first
    #[arg(long)]
    no_ingest: bool,
    /// Milliseconds between looks for new and changed transcripts while serving (0: never)
    /// [default: 2000]
    #[arg(long, env = "EYWA_WATCH_INTERVAL_MS")]
    watch_interval_ms: Option<u64>,
    /// Whether to install the embedding model when it is missing: auto, or never (serve
    /// lexical search only unless it is installed)
    /// [default: auto]
    #[arg(long, env = "EYWA_MODEL_INSTALL", value_parser = ["auto", "never"])]
    model_install: Option<String>,
    /// Answer this host name too (a reverse proxy's, a DNS name's), besides loopback names
    /// and the address listened on; other names are refused (DNS rebinding); repeatable
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_hosts: Vec<String>,
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let listen = &paths.settings.listen;
    let addr: SocketAddr = listen.value.parse().with_context(|| {
        format!(
            "{}: give HOST:PORT, such as 127.0.0.1:50051",
            match listen.source {
                crate::app::config::Source::File => "serve.listen in config.toml",
                _ => "--addr",
            }
        )
    })?;
    if !addr.ip().is_loopback() && !args.allow_remote {
        anyhow::bail!(
            "refusing to listen on {addr} (not loopback): pass --allow-remote, and every call \
             will need a token, over TLS"
        );
    }
    let mut access = if args.allow_remote {
        remote_access(paths, &args, addr)?
    } else {
        eywa::server::Access::default()
    };
    access.hosts.allow.clone_from(&args.allow_hosts);
    if let Some(running) = Announcement::read_live(&paths.data_dir) {
        anyhow::bail!(
            "eywa serve is already running for {} (pid {}, listening on {}): one server per \
             store; stop it first, or give this one another --data-dir",
            paths.data_dir.display(),
            running.pid,
            running.addr
        );
    }
    if paths.settings.model_install.value == "auto"
        && eywa::embed::ModelDir::open(&paths.model_dir())
            .ok()
            .flatten()
            .is_none()
    {
        // First run: fetch the model. Without it, search is lexical (said once, below).
        if let Err(e) = super::model::install(paths, &super::model::options(None, false)) {
            tracing::debug!(error = %format!("{e:#}"), "no embedding model");
        }
    }
    let engine = paths.open_engine().map_err(|e| match e {
        eywa::Error::StoreLocked { path } => anyhow::anyhow!(
            "the store at {} is in use by another eywa process (an `eywa ingest` or \
             `eywa ingest --watch`?): one process holds a store at a time",
            path.display()
        ),
        other => anyhow::Error::new(other).context(format!(
            "cannot open the store in {}",
            paths.data_dir.display()
        )),
    })?;
    let semantic = engine
        .prepare_semantic()
        .context("cannot open semantic memory")?;
    match &semantic.unavailable {
        None => tracing::info!(
            model = semantic.model.as_deref().unwrap_or_default(),
            vectors = semantic.vectors,
            backlog = semantic.backlog,
            "semantic search on"
        ),
        Some(why) => errln!(
            "eywa: semantic search is off: {why}. Searches are lexical (BM25) until \
             `eywa model install` succeeds and serve is restarted."
        ),
    }
    if !args.no_ingest {
        match engine.ingest_with_progress(&mut super::ingest::show_progress()) {
            Ok(report) => tracing::info!(
                sessions = report.counts.sessions,
                episodes = report.counts.episodes,
                entities = report.counts.entities,
                edges = report.counts.edges,
                skipped_lines = report.counts.skipped_lines,
                seconds = report.elapsed.as_secs_f64(),
                "ingested {}",
                paths.claude_dir.display()
            ),
            Err(eywa::Error::ClaudeDirMissing { path }) => tracing::warn!(
                "no Claude Code projects at {}: serving what the store holds",
                path.display()
            ),
            Err(other) => return Err(other).context("ingest failed"),
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let engine = Arc::new(engine);
    let watch_interval_ms = paths.settings.watch_interval_ms.value;
    // Pages of the web view listening for news: the watcher looks more often meanwhile.
    let live = Arc::new(eywa::web::Live::default());
    let background = eywa::server::Background::start(
        &engine,
        (watch_interval_ms > 0).then(|| std::time::Duration::from_millis(watch_interval_ms)),
        &live,
    )
    .context("cannot start the server's background work")?;
    let served = engine.clone();
    let data_dir = paths.data_dir.clone();
    // Where a client on this machine finds the token that may write.
    let token_file = args.allow_remote.then(|| {
        args.token_file
            .clone()
            .unwrap_or_else(|| paths.data_dir.join("token"))
    });
    // The MCP tools at /mcp, answered from this store; their sessions end with the server.
    let mcp_stop = tokio_util::sync::CancellationToken::new();
    // With --allow-remote every call carries a token, which DNS rebinding cannot send: any
    // `Host` is answered. Without, only loopback names are.
    let tokens = access.tokens.is_some();
    let mcp = axum::Router::new().route_service(
        "/mcp",
        crate::agents::mcp::http_service(
            paths,
            engine.clone(),
            tokens,
            &args.allow_hosts,
            mcp_stop.clone(),
        ),
    );
    let web = eywa::web::router(
        engine.clone(),
        eywa::web::WebOptions {
            clock: eywa::model::Clock::system(),
            staleness: paths.staleness_days,
            live,
            stop: mcp_stop.clone(),
            login: access.tokens.clone().map(|tokens| eywa::web::Login {
                tokens: std::sync::Arc::new(tokens),
                secure: access.tls.is_some(),
            }),
        },
    )
    .context("cannot set up the web view")?;
    let extra = mcp.merge(web);
    let scheme = if access.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let local = listener.local_addr()?;
        let stop_signal = stop_signal()?;
        // Every other command on this data dir now asks us instead of the store.
        let mut announcement = Announcement::of_this_process(local);
        // Absolute: a client may run from any directory.
        let absolute = |p: &std::path::Path| {
            std::path::absolute(p)
                .unwrap_or_else(|_| p.to_path_buf())
                .display()
                .to_string()
        };
        announcement.tls_cert = access.tls.as_ref().map(|t| absolute(&t.cert_path));
        announcement.token_file = token_file.as_deref().map(absolute);
        announcement
            .write(&data_dir)
            .context("cannot announce the server")?;
        let _announced = Withdraw(&data_dir);
        tracing::info!("serving eywa.v1 on {local} (Ctrl-C stops)");
        errln!("eywa: web view at {scheme}://{local}/");
        errln!("eywa: MCP tools at {scheme}://{local}/mcp");
        errln!("eywa: serving gRPC on {local}");
        let stopping = async move {
            stop_signal.await;
            mcp_stop.cancel();
        };
        eywa::server::run_with_routes(listener, served, access, extra, stopping).await?;
        anyhow::Ok(())
    });
    // A request still at work on a blocking thread past the grace is left to end with
    // the process: dropping the runtime would wait for it, and the server's promise is to
    // stop within the grace. What it wrote is committed or not; nothing is half-written.
    background.stopping();
    runtime.shutdown_timeout(RUNTIME_GRACE);
    // What client writes changed since the last run that read a transcript: durable, and
    // the graph view's snapshot current, so the next start loads it instead of rebuilding.
    background.stop();
    served?;
    Ok(ExitCode::SUCCESS)
}

/// How long, once the server has stopped, blocking work of requests gets to end.
const RUNTIME_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// The tokens and TLS identity of a server that accepts remote callers; says where they
/// are on stderr.
fn remote_access(
    paths: &Paths,
    args: &Args,
    addr: SocketAddr,
) -> anyhow::Result<eywa::server::Access> {
    let write = args
        .token_file
        .clone()
        .unwrap_or_else(|| paths.data_dir.join("token"));
    let read = args
        .read_token_file
        .clone()
        .unwrap_or_else(|| paths.data_dir.join("token.read"));
    eywa::fs::create_private_dir(&paths.data_dir)?;
    let tokens = eywa::server::Tokens::load_or_create(&write, &read)?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => eywa::server::Tls::from_files(cert, key)?,
        _ => eywa::server::Tls::self_signed(&paths.data_dir.join("tls"), &[addr.ip().to_string()])?,
    };
    errln!(
        "eywa: remote callers need a token: {} (may write) or {} (reads only)",
        write.display(),
        read.display()
    );
    errln!(
        "eywa: TLS certificate {} (sha256 {})",
        tls.cert_path.display(),
        tls.fingerprint()?
    );
    Ok(eywa::server::Access {
        tokens: Some(tokens),
        tls: Some(tls),
        hosts: eywa::server::Hosts::default(),
    })
}

/// Ctrl-C or SIGTERM. The handlers are installed when this is called, not when the future
/// is first polled: a signal that comes as soon as the server says where it listens stops
/// it cleanly (its announcement withdrawn) instead of killing it.
fn stop_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
        let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
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
struct Withdraw<'a>(&'a std::path::Path);

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if let Err(e) = Announcement::withdraw(self.0) {
            tracing::warn!(error = %e, "cannot remove the server announcement");
        }
    }
}
