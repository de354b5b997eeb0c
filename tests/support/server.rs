//! The real server, in-process on 127.0.0.1:0.

use std::net::SocketAddr;
use std::sync::Arc;

use eywa::engine::Engine;
use tokio::sync::oneshot;

/// A running server; dropped = shut down and joined.
pub(crate) struct TestServer {
    pub addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    pub(crate) fn start(engine: Engine) -> TestServer {
        TestServer::start_shared(Arc::new(engine))
    }

    /// A server on an engine the test keeps a handle to.
    pub(crate) fn start_shared(engine: Arc<Engine>) -> TestServer {
        TestServer::start_with(engine, eywa::server::Access::default(), |_| {
            axum::Router::new()
        })
    }

    /// A server with the web view beside the API, as `serve` has it, its pages aged by
    /// `clock` and answering `allow_hosts` too.
    pub(crate) fn start_web(
        engine: Arc<Engine>,
        clock: eywa::model::Clock,
        allow_hosts: &[&str],
    ) -> TestServer {
        let access = eywa::server::Access {
            hosts: eywa::server::Hosts {
                bound: None,
                allow: allow_hosts.iter().map(ToString::to_string).collect(),
            },
            ..eywa::server::Access::default()
        };
        let options = eywa::web::WebOptions {
            clock,
            ..eywa::web::WebOptions::default()
        };
        TestServer::start_web_with(engine, access, options)
    }

    /// [`TestServer::start_web`] of a server that asks for `tokens`, as `serve
    /// --allow-remote` does (without TLS here): a browser signs in to see pages.
    pub(crate) fn start_web_signed(
        engine: Arc<Engine>,
        clock: eywa::model::Clock,
        tokens: eywa::server::Tokens,
    ) -> TestServer {
        let login = eywa::web::Login {
            tokens: Arc::new(tokens.clone()),
            secure: false,
        };
        let access = eywa::server::Access {
            tokens: Some(tokens),
            ..eywa::server::Access::default()
        };
        let options = eywa::web::WebOptions {
            clock,
            login: Some(login),
            ..eywa::web::WebOptions::default()
        };
        TestServer::start_web_with(engine, access, options)
    }

    /// A server asking `access` of its callers, with the web view `options` describes
    /// beside the API.
    fn start_web_with(
        engine: Arc<Engine>,
        access: eywa::server::Access,
        options: eywa::web::WebOptions,
    ) -> TestServer {
        TestServer::start_with(engine, access, move |engine| {
            eywa::web::router(engine, options).unwrap()
        })
    }

    /// A server asking `access` of its callers, with the routes `extra` makes from the
    /// engine beside the API.
    fn start_with(
        engine: Arc<Engine>,
        access: eywa::server::Access,
        extra: impl FnOnce(Arc<Engine>) -> axum::Router + Send + 'static,
    ) -> TestServer {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let routes = extra(engine.clone());
                eywa::server::run_with_routes(listener, engine, access, routes, async {
                    let _ = shutdown_rx.await;
                })
                .await
                .unwrap();
            });
        });
        let addr = addr_rx.recv().expect("server thread reports its address");
        TestServer {
            addr,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
        }
    }

    pub(crate) fn addr(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// An ingest that holds the engine's writer from its first file until released: what a
/// long ingest looks like to the requests behind it.
pub(crate) struct HeldIngest {
    release: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl HeldIngest {
    /// Starts the ingest; returns once it holds the writer.
    pub(crate) fn start(engine: &Arc<Engine>) -> HeldIngest {
        let (started, running) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let engine = engine.clone();
        let thread = std::thread::spawn(move || {
            let mut first = true;
            engine
                .ingest_with_progress(&mut |_| {
                    if std::mem::take(&mut first) {
                        started.send(()).unwrap();
                        released.recv().unwrap();
                    }
                })
                .unwrap();
        });
        running.recv().expect("the ingest reads a first file");
        HeldIngest { release, thread }
    }

    /// Lets the ingest go on, and waits for it to end.
    pub(crate) fn finish(self) {
        self.release.send(()).unwrap();
        self.thread.join().unwrap();
    }
}
