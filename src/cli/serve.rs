//! `eywa serve`: ingest, then serve gRPC (and embed and watch in the background) until
//! stopped.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

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
    // Where a client on this machine finds the token that may write.
    let token_file = args
        .token_file
        .clone()
        .unwrap_or_else(|| paths.data_dir.join("token"));
    let mut access = if args.allow_remote {
        let read = args
            .read_token_file
            .clone()
            .unwrap_or_else(|| paths.data_dir.join("token.read"));
        let cert_and_key = args.tls_cert.as_deref().zip(args.tls_key.as_deref());
        eywa::server::remote_access(
            &paths.data_dir,
            &token_file,
            &read,
            cert_and_key,
            addr,
            &say,
        )?
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
        // First run: fetch the model. Without it, search is lexical (said once, by serve).
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
    let watch_interval_ms = paths.settings.watch_interval_ms.value;
    // With --allow-remote every call carries a token, which DNS rebinding cannot send: any
    // `Host` is answered. Without, only loopback names are.
    let tokens = access.tokens.is_some();
    let mcp_paths = paths.clone();
    let allow_hosts = args.allow_hosts.clone();
    let mcp: eywa::server::Mount = Box::new(move |engine, stop| {
        axum::Router::new().route_service(
            "/mcp",
            crate::agents::mcp::http_service(&mcp_paths, engine, tokens, &allow_hosts, stop),
        )
    });
    let serve = eywa::server::Serve {
        addr,
        access,
        ingest_first: !args.no_ingest,
        watch: (watch_interval_ms > 0).then(|| Duration::from_millis(watch_interval_ms)),
        data_dir: paths.data_dir.clone(),
        token_file: args.allow_remote.then_some(token_file),
        staleness: paths.staleness_days,
    };
    serve.run(engine, &mut super::ingest::show_progress(), mcp, &say)?;
    Ok(ExitCode::SUCCESS)
}

/// What the server tells the person at the terminal.
fn say(line: &str) {
    errln!("eywa: {line}");
}
