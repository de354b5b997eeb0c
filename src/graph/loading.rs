//! The graph's in-memory view: loaded from a snapshot or the index keyspaces while
//! writes go on, on a loader thread of its own under `serve`, and saved as a snapshot.

use std::sync::RwLock;

use super::view::{self, View};
use super::{Graph, LOADER_POLL, Loaded, snapshot};
use crate::Result;

impl Graph {
    /// The view, loaded now if it is not yet: never call it while holding the writer lock.
    ///
    /// It is built outside the writer lock, from the snapshot of the generation it started
    /// at or from the index keyspaces, while writes go on (loading 100k sessions takes
    /// 300–460 ms, and every graph write waited that long when it was loaded under the
    /// lock, `benches/README.md`). The batches that land meanwhile record their changes;
    /// under the lock, at the end, they are applied in order and the view installed. A
    /// rebuild reads the keyspaces as they change, so it may already hold some of those
    /// batches' keys: each change states a node's or an edge's whole state, and applying
    /// it again leaves the same. Every write to those keyspaces records a change, except
    /// [`Graph::rebuild_indexes`], which holds off loads while it runs. A batch that lands
    /// during the build may sit elsewhere in its node's edge order than after a restart.
    pub(super) fn loaded_view(&self) -> Result<&RwLock<View>> {
        if let Some(view) = self.view.get() {
            return Ok(view);
        }
        let loader = self.loader().clone();
        if let Some(loader) = loader {
            let (done, loaded) = std::sync::mpsc::channel();
            // A loader that stopped answers nothing: the load is then this thread's.
            if loader.send(done).is_ok()
                && let Ok(result) = loaded.recv()
            {
                result?;
                if let Some(view) = self.view.get() {
                    return Ok(view);
                }
            }
        }
        self.load_view()
    }

    /// Loads the view now, and again for every reader that asks first after something
    /// dropped it, on the calling thread, until `stop`. A read runs below the priority of
    /// writes (`crate::priority`), and loading the view on a read's thread took seconds
    /// while clients kept the cores busy, with every walk waiting for it; `serve` runs
    /// this on a thread at its own priority. Loaded at once because nearly every first
    /// answer walks the graph (a session's page its subagents, SessionStart its plans): on
    /// a store `eywa ingest` wrote 100k sessions into, with no snapshot yet, the first
    /// session page waited 1.1 s for it (`benches/README.md`, `web_pages`).
    pub fn run_view_loader(&self, stop: &std::sync::atomic::AtomicBool) {
        let (ask, asks) = std::sync::mpsc::channel::<Loaded>();
        *self.loader() = Some(ask);
        if let Err(e) = self.load_view() {
            tracing::warn!(error = %e, "could not load the graph's view: a walk will try again");
        }
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            match asks.recv_timeout(LOADER_POLL) {
                Ok(done) => {
                    let _ = done.send(self.load_view().map(|_| ()));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        // Readers that ask from now on load it themselves, and so do those whose ask is
        // still queued: it is dropped with `asks`.
        *self.loader() = None;
    }

    /// Where readers ask for the view's load (`None` while no loader runs).
    pub(super) fn loader(
        &self,
    ) -> std::sync::MutexGuard<'_, Option<std::sync::mpsc::Sender<Loaded>>> {
        self.loader
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// [`Graph::loaded_view`] on the calling thread.
    pub(super) fn load_view(&self) -> Result<&RwLock<View>> {
        let _loading = self
            .loading
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(view) = self.view.get() {
            return Ok(view);
        }
        let generation = {
            let generation = self
                .writer
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *self.missed() = Some(Vec::new());
            *generation
        };
        let file = snapshot::path(&self.store);
        let loaded = match snapshot::load(&file, generation) {
            Some(view) => Ok((view, true)),
            None => View::load(&self.store).map(|view| (view, false)),
        };
        #[cfg(test)]
        if let Some(write) = self.while_loading.lock().unwrap().take() {
            write(self);
        }
        let _writer = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let missed = self.missed().take().unwrap_or_default();
        let (mut view, from_snapshot) = loaded?;
        for delta in &missed {
            view.apply(delta);
        }
        if from_snapshot {
            *self
                .saved
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(generation);
        }
        self.from_snapshot
            .store(from_snapshot, std::sync::atomic::Ordering::Relaxed);
        Ok(self.view.get_or_init(|| RwLock::new(view)))
    }

    /// The changes recorded while the view loads (`None` when it is not loading).
    pub(super) fn missed(&self) -> std::sync::MutexGuard<'_, Option<Vec<view::Delta>>> {
        self.missed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Saves the view to the index tier unless the snapshot there is already current (or
    /// the view was never loaded: there is nothing newer to save). Call after a flush: the
    /// snapshot must not describe writes that could still be lost.
    ///
    /// The view is encoded under the writer lock (a few milliseconds), and written and
    /// synced after it is let go: writes that came meanwhile (a client's memory) waited
    /// up to 300 ms for the file when it was written under the lock (`benches/README.md`).
    pub fn save_view(&self) -> Result<bool> {
        let Some(view) = self.view.get() else {
            return Ok(false);
        };
        let generation = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Held until the file is written: saves land one at a time, in order.
        let mut saved = self
            .saved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *saved == Some(*generation) {
            return Ok(false);
        }
        let at = *generation;
        let encoded = snapshot::encode(
            &view
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            at,
        );
        drop(generation);
        snapshot::write(&snapshot::path(&self.store), &encoded)?;
        *saved = Some(at);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::graph::EdgeRef;
    use crate::model::{Edge, NodeId, Relation, Timestamp};
    use eywa_storage::Config;

    /// Every node of `view` with its current outgoing edges, in a fixed order.
    fn contents(view: &View) -> Vec<String> {
        let mut out: Vec<String> = view
            .nodes()
            .map(|node| {
                let mut edges: Vec<String> = view
                    .adjacent(node.id, true, false)
                    .map(|(edge, to, _)| format!("{edge:?} -> {:?}", to.id))
                    .collect();
                edges.sort();
                format!("{node:?}: {edges:?}")
            })
            .collect();
        out.sort();
        out
    }

    /// The batches that land while the view is built outside the writer lock reach it
    /// before it is installed: what it shows is what a load after them shows.
    #[test]
    fn writes_that_land_while_the_view_loads_are_in_it() {
        let graph = Graph::open(Config::new().temporary(true).open().unwrap()).unwrap();
        let (a, b, c) = (
            NodeId::episode("a"),
            NodeId::episode("b"),
            NodeId::episode("c"),
        );
        let (p, q) = (NodeId::project("/p"), NodeId::project("/q"));
        let touched = Edge::new(a, Relation::Touched, p, Timestamp(10));
        let follows = Edge::new(b, Relation::Follows, a, Timestamp(20));
        for edge in [&touched, &follows] {
            graph.supersede(EdgeRef::of(edge), edge.clone()).unwrap();
        }
        let before = contents(&View::load(graph.store()).unwrap());
        *graph.while_loading.lock().unwrap() = Some(Box::new(move |graph: &Graph| {
            // `a` touched `q`, not `p`; and `c` came.
            let moved = Edge::new(a, Relation::Touched, q, Timestamp(30));
            graph
                .supersede(EdgeRef::of(&touched), moved.clone())
                .unwrap();
            let came = Edge::new(c, Relation::Touched, p, Timestamp(40));
            graph.supersede(EdgeRef::of(&came), came.clone()).unwrap();
        }));
        let loaded = contents(&graph.view().unwrap());
        assert!(
            graph.while_loading.lock().unwrap().is_none(),
            "the write ran"
        );
        let after = contents(&View::load(graph.store()).unwrap());
        assert_ne!(after, before);
        assert_eq!(loaded, after);
        // Once installed, writes reach the view directly, and nothing is recorded.
        assert!(graph.missed().is_none());
    }

    /// With a loader running, a reader's first walk has the view built on the loader's
    /// thread, and waits for it.
    #[test]
    fn a_running_loader_builds_the_view_for_the_reader() {
        let graph = Graph::open(Config::new().temporary(true).open().unwrap()).unwrap();
        let edge = Edge::new(
            NodeId::episode("a"),
            Relation::Touched,
            NodeId::project("/p"),
            Timestamp(10),
        );
        graph.supersede(EdgeRef::of(&edge), edge.clone()).unwrap();
        let built_on = Arc::new(Mutex::new(None));
        let on = built_on.clone();
        *graph.while_loading.lock().unwrap() = Some(Box::new(move |_: &Graph| {
            *on.lock().unwrap() = std::thread::current().name().map(str::to_owned);
        }));
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let loader = std::thread::Builder::new()
                .name("view-loader".into())
                .spawn_scoped(s, || graph.run_view_loader(&stop))
                .unwrap();
            // Asked once the loader has taken its place (before, a reader loads it itself).
            while graph.loader().is_none() {
                std::thread::yield_now();
            }
            assert_eq!(contents(&graph.view().unwrap()).len(), 2);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            loader.join().unwrap();
        });
        assert_eq!(built_on.lock().unwrap().as_deref(), Some("view-loader"));
        assert!(graph.loader().is_none(), "a stopped loader takes no asks");
    }
}
