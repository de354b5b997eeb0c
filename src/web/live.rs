//! Pages that follow the store: `/events` tells an open page, over server-sent events,
//! when an ingest (the watcher's, a hook's, a client's) changed what sessions serve, and
//! the page's script fetches itself again and adds what is new. While a page listens,
//! `serve` looks for changed transcripts often enough that a new line shows within a
//! second.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::engine::Engine;

/// How often an open stream looks at the store's sources generation.
const POLL: Duration = Duration::from_millis(200);
/// How often an idle stream says it is still there (proxies close silent connections).
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How often `serve` looks for changed transcripts while a page listens.
pub const LIVE_INTERVAL: Duration = Duration::from_millis(250);

/// Who listens: pages with a stream open. Shared by the web view and `serve`'s watcher.
#[derive(Debug, Default)]
pub struct Live {
    listeners: AtomicUsize,
}

impl Live {
    /// Whether a page is listening now.
    pub fn listening(&self) -> bool {
        self.listeners.load(Ordering::Relaxed) > 0
    }
}

/// A listener counted while it lives.
struct Listening(Arc<Live>);

impl Listening {
    fn new(live: Arc<Live>) -> Listening {
        live.listeners.fetch_add(1, Ordering::Relaxed);
        Listening(live)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.listeners.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The stream of one page: `ready` with the generation it starts at, then `changed`
/// each time it moves, until the page goes or `stop` is cancelled (the server stopping).
pub(super) fn events(
    engine: Arc<Engine>,
    live: Arc<Live>,
    stop: tokio_util::sync::CancellationToken,
) -> Response {
    let (send, receive) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(4);
    tokio::spawn(async move {
        let _listening = Listening::new(live);
        let generation = |engine: &Arc<Engine>| engine.graph().sources_generation().ok();
        let mut seen = generation(&engine);
        let ready = format!("event: ready\ndata: {}\n\n", seen.unwrap_or(0));
        if send.send(Ok(ready)).await.is_err() {
            return;
        }
        let mut quiet = Duration::ZERO;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = send.closed() => return,
                () = tokio::time::sleep(POLL) => {}
            }
            let now = generation(&engine);
            let event = if now != seen {
                seen = now;
                quiet = Duration::ZERO;
                format!("event: changed\ndata: {}\n\n", now.unwrap_or(0))
            } else {
                quiet += POLL;
                if quiet < KEEP_ALIVE {
                    continue;
                }
                quiet = Duration::ZERO;
                ": still here\n\n".to_owned()
            };
            if send.send(Ok(event)).await.is_err() {
                return;
            }
        }
    });
    let stream = tokio_stream::wrappers::ReceiverStream::new(receive);
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}
