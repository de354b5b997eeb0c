//! The engine's side of semantic memory: opening it on first use, reporting where it is,
//! and running the embedder (a step, a backlog, or the background loop of `serve`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use eywa_storage::Keyspace;

use super::Engine;
use crate::semantic::{EmbedReport, STEP, SemanticStatus, VECTOR_FILE, configured};
use crate::{Error, Result};

/// What [`Engine::defer_write_embeddings`] gives: the right to run the thread that embeds
/// client writes.
#[derive(Debug)]
pub struct WriteEmbedder(());

impl Engine {
    /// Neighbors of a chunk shown at most.
    pub const MAX_CHUNK_NEIGHBORS: usize = 50;

    /// Chunk `id` (16 hex digits, as search hits give it) whole, where it comes from, and
    /// up to `neighbors` of the most similar chunks of other sessions. Reading a cold
    /// chunk brings it back to the warm tier.
    pub fn chunk(&self, id: &str, neighbors: usize) -> Result<crate::model::Chunk> {
        if neighbors > Self::MAX_CHUNK_NEIGHBORS {
            return Err(Error::InvalidArgument(format!(
                "neighbors must be at most {}, not {neighbors}",
                Self::MAX_CHUNK_NEIGHBORS
            )));
        }
        self.semantic()?.chunk(self.graph.store(), id, neighbors)
    }

    /// Where semantic memory is: model, vectors, backlog.
    /// Opens semantic memory and loads the model's weights now (what a server does at
    /// start, so that a model that does not load shows at once and the first search does
    /// not wait for it); then where it is.
    pub fn prepare_semantic(&self) -> Result<SemanticStatus> {
        if let Some(embedder) = self.semantic()?.embedder()
            && let Err(e) = embedder.prepare()
        {
            tracing::debug!(error = %e, "the embedding model does not load");
        }
        Ok(self.semantic_status())
    }

    /// Where semantic memory is: model, vectors, backlog. Reported from the store when
    /// semantic memory is not open in this process (nothing is loaded to answer).
    pub fn semantic_status(&self) -> SemanticStatus {
        let Some(s) = self.semantic.get() else {
            let store = self.graph.store();
            let (embedder, mut unavailable) = configured(&self.config.embedding);
            let mut count = |keyspace| match store.len(keyspace) {
                Ok(n) => n as u64,
                Err(e) => {
                    unavailable.get_or_insert_with(|| format!("the store cannot be read: {e}"));
                    0
                }
            };
            let vectors = count(Keyspace::Vectors);
            let backlog = count(Keyspace::EmbedQueue);
            // Vectors without their index file: opening will rebuild it.
            let rebuilding =
                embedder.is_some() && vectors > 0 && !self.index_dir().join(VECTOR_FILE).exists();
            return SemanticStatus {
                model: embedder.map(|e| e.model_id().to_owned()),
                unavailable,
                vectors,
                backlog,
                rebuilding,
            };
        };
        SemanticStatus {
            model: s.embedder().map(|e| e.model_id().to_owned()),
            unavailable: s
                .unavailable
                .clone()
                .or_else(|| s.embedder().and_then(|e| e.failure())),
            vectors: s.len(),
            backlog: s.backlog(),
            rebuilding: s.vectors().as_ref().is_some_and(|v| v.stale),
        }
    }

    /// Embeds everything queued (rebuilding a stale index first), calling `progress` with
    /// (chunks done, chunks left) after each step, then saves the index. Without a model:
    /// `FailedPrecondition`.
    pub fn embed_pending(&self, progress: &mut dyn FnMut(u64, u64)) -> Result<EmbedReport> {
        if let Some(why) = &self.semantic()?.unavailable {
            return Err(Error::FailedPrecondition(format!(
                "semantic search is unavailable: {why}"
            )));
        }
        let started = Instant::now();
        self.rebuild_vectors_if_stale()?;
        let mut report = EmbedReport::default();
        let mut last_save = Instant::now();
        loop {
            // Stopped between steps: what was embedded is in the warm tier's journal.
            crate::cancel::checkpoint()?;
            let (taken, computed) = self.semantic()?.step(self.graph.store(), STEP, None)?;
            if taken == 0 {
                break;
            }
            report.chunks += taken;
            report.embedded += computed;
            progress(report.chunks, self.semantic()?.backlog());
            self.semantic()?
                .save_if_due(self.graph.store(), &mut last_save)?;
        }
        self.semantic()?.save(self.graph.store())?;
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Embeds up to `max` queued chunks, newest first, without saving the index file
    /// (the journal in the warm tier covers them until the next save). Returns the chunks
    /// taken from the queue.
    pub fn embed_some(&self, max: usize) -> Result<u64> {
        if let Some(why) = &self.semantic()?.unavailable {
            return Err(Error::FailedPrecondition(format!(
                "semantic search is unavailable: {why}"
            )));
        }
        self.rebuild_vectors_if_stale()?;
        let mut done = 0;
        while (done as usize) < max {
            let (taken, _) =
                self.semantic()?
                    .step(self.graph.store(), STEP.min(max - done as usize), None)?;
            if taken == 0 {
                break;
            }
            done += taken;
        }
        Ok(done)
    }

    fn rebuild_vectors_if_stale(&self) -> Result<()> {
        let semantic = self.semantic()?;
        let store = self.graph.store();
        let lost = semantic.rebuild_if_stale(store)? + semantic.repair_listing(store)?;
        if lost > 0 {
            // Some documents lost their vectors or their place in the queue: the text
            // index's rebuild (at the next ingest) queues them again from the store.
            tracing::info!(chunks = lost, "chunks to queue again for embedding");
            crate::ingest::mark_text_dirty(self.graph.store())?;
        }
        Ok(())
    }

    /// The background embedder: embeds queued chunks, newest first, until `stop` is set,
    /// saving the index file when idle and at least every minute while busy. Errors are
    /// logged and retried after a pause. Returns at once without a model.
    pub fn run_embedder(&self, stop: &AtomicBool) {
        let semantic = match self.semantic() {
            Ok(semantic) if semantic.embedder().is_some() => semantic,
            Ok(_) => return,
            Err(e) => {
                tracing::error!(error = %e, "cannot open semantic memory: nothing is embedded");
                return;
            }
        };
        let store = self.graph.store();
        if let Err(e) = self.rebuild_vectors_if_stale() {
            tracing::error!(error = %e, "cannot rebuild the vector index");
        }
        // Batches go to a pool of their own, below the searches (see `background_pool`).
        let pool = crate::semantic::pool_or_shared(crate::embed::background_pool);
        let mut last_save = Instant::now();
        let mut seen = 0;
        while !stop.load(Ordering::Relaxed) {
            match semantic.step(store, STEP, pool.as_ref()) {
                Ok((0, _)) => {
                    if let Err(e) = semantic.save(store) {
                        tracing::error!(error = %e, "cannot save the vector index");
                    }
                    last_save = Instant::now();
                    semantic.wait(&mut seen, Duration::from_secs(2), stop);
                }
                Ok((taken, computed)) => {
                    tracing::debug!(taken, computed, backlog = semantic.backlog(), "embedded");
                    if let Err(e) = semantic.save_if_due(store, &mut last_save) {
                        tracing::error!(error = %e, "cannot save the vector index");
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "embedding failed; retrying shortly");
                    semantic.wait(&mut seen, Duration::from_secs(10), stop);
                }
            }
        }
        if let Err(e) = semantic.save(store) {
            tracing::error!(error = %e, "cannot save the vector index");
        }
    }

    /// From now on client writes (memories, documents) answer before their chunks are
    /// embedded, leaving them to [`Engine::run_write_embedder`]; a search by meaning waits
    /// for what was written before it. `serve` does this before it answers. Without it
    /// each write embeds its own chunks before it answers.
    pub fn defer_write_embeddings(&self) -> WriteEmbedder {
        if let Ok(semantic) = self.semantic() {
            semantic.defer_written();
        }
        WriteEmbedder(())
    }

    /// Embeds what client writes queued, ahead of the backlog, until `stop` is set (then
    /// what was asked by then), on the calling thread and the writes' pool: `serve` runs
    /// this on a thread of its own, at its priority. Returns at once without a model.
    pub fn run_write_embedder(&self, deferred: WriteEmbedder, stop: &AtomicBool) {
        let WriteEmbedder(()) = deferred;
        match self.semantic() {
            Ok(semantic) => semantic.run_write_embedder(self.graph.store(), stop),
            Err(e) => {
                tracing::error!(error = %e, "cannot open semantic memory: nothing is embedded");
            }
        }
    }

    /// Wakes the background embedder (to see `stop`).
    pub fn wake_embedder(&self) {
        if let Some(semantic) = self.semantic.get() {
            semantic.notify();
        }
    }
}
