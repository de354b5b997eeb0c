//! How a client reaches what answers it: the store opened in this process (closed or
//! left to the exit when done), or a running server (given, or announced in
//! `serve.json`), over TLS and with a token when it asks for them.

use std::cell::OnceCell;
use std::sync::Arc;

use anyhow::Context as _;
use eywa::api::{Connection, RemoteClient};
use eywa::engine::Engine;
use eywa::server::Announcement;

use super::Client;
use crate::app::Paths;

/// The store, opened in this process on first use (or the one a server here holds).
pub(crate) struct Local {
    pub(super) paths: Paths,
    engine: OnceCell<Arc<Engine>>,
    ending: Ending,
}

/// What becomes of a store this client opened when it is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// The process ends next: flush, and leave the rest to the exit.
    Exit,
    /// The process goes on (an MCP server between calls): flush and close, so that the
    /// store's lock is free for the next opener.
    Close,
    /// Another owner's (the server this process runs): left as it is.
    Shared,
}

/// A running server.
pub(crate) struct Remote {
    pub(super) addr: String,
    runtime: tokio::runtime::Runtime,
    client: RemoteClient,
}

impl Client {
    /// The server to ask, else the store in `paths`, opened when first needed.
    pub(crate) fn connect(paths: &Paths) -> anyhow::Result<Client> {
        if let Some(given) = &paths.addr {
            let (addr, connection) = given_server(given)?;
            return Remote::connect(&addr, &connection)
                .with_context(|| format!("no eywa server answers at {given} (--addr or EYWA_ADDR)"))
                .map(|r| Client::Remote(Box::new(r)));
        }
        if let Some(server) = Announcement::read_live(&paths.data_dir) {
            let (addr, connection) = announced_server(&server)?;
            return Remote::connect(&addr, &connection)
                .with_context(|| {
                    format!(
                        "eywa serve (pid {}) announced {} in {} but does not answer there",
                        server.pid,
                        server.addr,
                        Announcement::path(&paths.data_dir).display()
                    )
                })
                .map(|r| Client::Remote(Box::new(r)));
        }
        Ok(Client::Local(Local {
            paths: paths.clone(),
            engine: OnceCell::new(),
            ending: Ending::Exit,
        }))
    }

    /// [`Client::connect`] for one call of a process that goes on: a store opened here is
    /// closed when the client is dropped, its lock freed for the CLI, hooks or a server.
    pub(crate) fn connect_for_call(paths: &Paths) -> anyhow::Result<Client> {
        let mut client = Client::connect(paths)?;
        if let Client::Local(local) = &mut client {
            local.ending = Ending::Close;
        }
        Ok(client)
    }

    /// The store a server in this process already holds.
    pub(crate) fn shared(paths: &Paths, engine: Arc<Engine>) -> Client {
        Client::Local(Local {
            paths: paths.clone(),
            engine: OnceCell::from(engine),
            ending: Ending::Shared,
        })
    }

    /// The server's address, when this client asks one.
    pub(crate) fn server(&self) -> Option<&str> {
        match self {
            Client::Local(_) => None,
            Client::Remote(r) => Some(&r.addr),
        }
    }
}

impl Client {
    /// Opens the store now (a server needs nothing): `Ok(false)` while another process
    /// holds it.
    pub(crate) fn try_open(&self) -> anyhow::Result<bool> {
        let Client::Local(l) = self else {
            return Ok(true);
        };
        if l.engine.get().is_some() {
            return Ok(true);
        }
        match l.paths.open_engine() {
            Ok(engine) => {
                l.engine.get_or_init(|| Arc::new(engine));
                Ok(true)
            }
            Err(eywa::Error::StoreLocked { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

impl Local {
    /// Whether the store is open (a command that finds its answer in files need not).
    pub(super) fn is_open(&self) -> bool {
        self.engine.get().is_some()
    }

    /// The engine, opened on first use.
    pub(crate) fn engine(&self) -> anyhow::Result<&Engine> {
        if let Some(engine) = self.engine.get() {
            return Ok(engine);
        }
        let engine = self.paths.open_engine().map_err(|e| match e {
            eywa::Error::StoreLocked { path } => anyhow::anyhow!(
                "the store at {} is in use by another eywa process, and no server is announced \
                 in {} (an `eywa ingest --watch`? stop it, or run `eywa serve` so that every \
                 command can ask it)",
                path.display(),
                Announcement::path(&self.paths.data_dir).display()
            ),
            other => anyhow::Error::new(other).context(format!(
                "cannot open the store in {}",
                self.paths.data_dir.display()
            )),
        })?;
        Ok(self.engine.get_or_init(|| Arc::new(engine)))
    }
}

impl Drop for Local {
    /// The process is about to end: what was written is flushed, a graph view this command
    /// had to rebuild is saved for the next one, and the rest is left to the exit to free
    /// (closing the warm tier waits up to 250 ms for fjall's threads; what they hold was
    /// just flushed).
    fn drop(&mut self) {
        if self.ending == Ending::Shared {
            return;
        }
        if let Some(engine) = self.engine.take() {
            if let Err(e) = engine.graph().store().flush() {
                errln!("eywa: cannot flush the store: {e}");
                return;
            }
            if let Err(e) = engine.graph().save_view() {
                errln!("eywa: cannot save the graph view: {e}");
            }
            if self.ending == Ending::Exit {
                std::mem::forget(engine);
            }
        }
    }
}

impl Remote {
    fn connect(addr: &str, connection: &Connection) -> anyhow::Result<Remote> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let client = runtime
            .block_on(RemoteClient::connect_with(addr, connection))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Remote {
            addr: addr.to_owned(),
            runtime,
            client,
        })
    }

    pub(super) fn call<T>(
        &self,
        f: impl AsyncFnOnce(&mut RemoteClient) -> Result<T, tonic::Status>,
    ) -> anyhow::Result<T> {
        let mut client = self.client.clone();
        self.runtime.block_on(f(&mut client)).map_err(|status| {
            match status.code() {
                // The server could not be reached, or went away mid-call.
                tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled => {
                    anyhow::anyhow!("the eywa server at {}: {}", self.addr, status.message())
                }
                // What the server said of the request: the same words the store says here.
                _ => anyhow::Error::new(RemoteError(status)),
            }
        })
    }
}

/// A server's refusal of a request, shown as its message alone.
#[derive(Debug)]
pub(crate) struct RemoteError(pub tonic::Status);

impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.message())
    }
}

impl std::error::Error for RemoteError {}

impl RemoteError {
    /// Whether the server refused the request's arguments.
    pub(crate) fn is_invalid_argument(&self) -> bool {
        self.0.code() == tonic::Code::InvalidArgument
    }
}

/// A server given by `--addr` / `EYWA_ADDR`: `HOST:PORT`, or `https://HOST:PORT` trusting
/// the certificate in `EYWA_TLS_CA`; the token in `EYWA_TOKEN_FILE` is sent when set.
fn given_server(given: &str) -> anyhow::Result<(String, Connection)> {
    let (addr, tls) = match given.strip_prefix("https://") {
        Some(addr) => (addr, true),
        None => (given.strip_prefix("http://").unwrap_or(given), false),
    };
    let mut connection = Connection::default();
    if tls {
        let ca = std::env::var_os("EYWA_TLS_CA").context(
            "an https:// server needs EYWA_TLS_CA: the file of its certificate (PEM) to trust",
        )?;
        connection.tls_ca_pem =
            Some(std::fs::read(&ca).with_context(|| format!("EYWA_TLS_CA: cannot read {ca:?}"))?);
    }
    if let Some(file) = std::env::var_os("EYWA_TOKEN_FILE") {
        connection.token = Some(read_token(std::path::Path::new(&file))?);
    }
    Ok((addr.trim_end_matches('/').to_owned(), connection))
}

/// The server `serve.json` announces, reached as it asks: over TLS trusting its own
/// certificate, with the token beside the store, when it takes remote callers. A server
/// on every address (`0.0.0.0`) is asked on loopback.
fn announced_server(server: &Announcement) -> anyhow::Result<(String, Connection)> {
    let mut addr = server.addr.clone();
    if let Ok(socket) = addr.parse::<std::net::SocketAddr>()
        && socket.ip().is_unspecified()
    {
        let loopback: std::net::IpAddr = if socket.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        };
        addr = std::net::SocketAddr::new(loopback, socket.port()).to_string();
    }
    let mut connection = Connection::default();
    if let Some(cert) = &server.tls_cert {
        connection.tls_ca_pem =
            Some(std::fs::read(cert).with_context(|| format!("cannot read {cert}"))?);
    }
    if let Some(file) = &server.token_file {
        connection.token = Some(read_token(std::path::Path::new(file))?);
    }
    Ok((addr, connection))
}

fn read_token(path: &std::path::Path) -> anyhow::Result<String> {
    Ok(std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the token in {}", path.display()))?
        .trim()
        .to_owned())
}
