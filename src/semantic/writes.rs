//! Client writes' own chunks (a memory, a document), embedded ahead of the backlog.
//!
//! Alone, a write embeds its chunks before it answers. Beside `serve` a thread of their
//! own does ([`Semantic::run_write_embedder`]): the write answers once it is stored and
//! found by its words, and the thread embeds what the writes that came meanwhile asked
//! for, in one call of the model, on the writes' pool. A search by meaning first waits for
//! what was asked before it ([`Semantic::settle`]), so a client finds what it wrote, by
//! meaning too, from its next search on.
//!
//! On two cores the model embeds a short text in a few milliseconds, and 64 clients
//! keep a dozen `Remember`s in flight: each waiting for its own embedding made its p99
//! 120–180 ms (`benches/README.md`). The chunks are in the persisted queue before the
//! write answers, so a crash loses none: the background embedder takes what is left.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use eywa_storage::Store;

use super::{STEP, Semantic, Taken, queued_newest, queued_of};
use crate::Result;

/// How often the thread looks whether the server stops.
const STOP_POLL: Duration = Duration::from_millis(100);

/// What a client write asks embedded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Wanted {
    /// The chunks this source queued (a memory's).
    Source(String),
    /// The newest of the queue (a document just added is among them).
    Newest,
}

/// What client writes asked embedded and how far the thread that embeds it is.
#[derive(Debug, Default)]
pub(crate) struct Written {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// A thread embeds what writes ask ([`Semantic::run_write_embedder`]).
    running: bool,
    wanted: Vec<Wanted>,
    /// Requests made, and requests whose chunks are in the index (or failed), in order.
    asked: u64,
    done: u64,
}

impl Written {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Ends a thread's turn at embedding client writes when dropped.
struct Ending<'a>(&'a Written);

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        // What was asked and not embedded stays in the queue for the background embedder.
        state.running = false;
        state.wanted.clear();
        state.done = state.asked;
        self.0.changed.notify_all();
    }
}

impl Semantic {
    /// Embeds what a client write queued and puts it in the index: now, or by the
    /// thread of [`Semantic::run_write_embedder`] while it runs (the write then answers
    /// without waiting). Without a model nothing happens; the chunks wait in the queue.
    pub(crate) fn embed_written(&self, store: &Store, wanted: Wanted) -> Result<()> {
        if self.embedder.is_none() {
            return Ok(());
        }
        {
            let mut state = self.written.lock();
            if state.running {
                state.wanted.push(wanted);
                state.asked += 1;
                self.written.changed.notify_all();
                return Ok(());
            }
        }
        self.embed_wanted(store, vec![wanted])
    }

    /// Waits until what client writes asked before this call is in the index. Returns at
    /// once while no thread embeds writes (each write then embeds before it answers).
    pub(crate) fn settle(&self) {
        let mut state = self.written.lock();
        let target = state.asked;
        while state.running && state.done < target {
            state = self
                .written
                .changed
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// From now on client writes leave their chunks to
    /// [`Semantic::run_write_embedder`], which the caller runs next. Without a model
    /// nothing changes.
    pub(crate) fn defer_written(&self) {
        if self.embedder.is_some() {
            self.written.lock().running = true;
        }
    }

    /// Embeds what client writes ask (see [`Semantic::defer_written`]) until `stop` is
    /// set, and then what was asked by then. Returns at once without a model.
    pub(crate) fn run_write_embedder(&self, store: &Store, stop: &AtomicBool) {
        if self.embedder.is_none() {
            return;
        }
        self.defer_written();
        // However the loop ends, a panic in the model included, searches stop waiting
        // for it and writes embed their own chunks again.
        let _ending = Ending(&self.written);
        loop {
            let (wanted, asked, last) = {
                let mut state = self.written.lock();
                while state.wanted.is_empty() && !stop.load(Ordering::Relaxed) {
                    state = self
                        .written
                        .changed
                        .wait_timeout(state, STOP_POLL)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0;
                }
                let last = stop.load(Ordering::Relaxed);
                (std::mem::take(&mut state.wanted), state.asked, last)
            };
            if !wanted.is_empty()
                && let Err(e) = self.embed_wanted(store, wanted)
            {
                tracing::warn!(error = %e, "new chunks wait for the embedder");
            }
            if last {
                return;
            }
            self.written.lock().done = asked;
            self.written.changed.notify_all();
        }
    }

    /// Embeds the chunks `wanted` names, each once, on the writes' pool.
    fn embed_wanted(&self, store: &Store, wanted: Vec<Wanted>) -> Result<()> {
        let mut taken: Vec<Taken> = Vec::new();
        let mut newest = false;
        for w in wanted {
            match w {
                Wanted::Source(source) => queued_of(store, &source, STEP, &mut taken)?,
                Wanted::Newest if !newest => {
                    newest = true;
                    queued_newest(store, STEP, &mut taken)?;
                }
                Wanted::Newest => {}
            }
        }
        let mut seen = std::collections::HashSet::new();
        taken.retain(|(key, _, _)| seen.insert(key.clone()));
        self.embed_taken(store, taken, self.writes.as_ref())
            .map(|_| ())
    }
}
