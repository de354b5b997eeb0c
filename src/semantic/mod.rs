//! Semantic memory: which texts are embedded (prose, in chunks; never tool output), the
//! persisted queue that feeds the embedder newest first without holding up ingest
//! (`queue`), the embedding cache (hot LRU, then the warm `embeddings` keyspace, by
//! content hash), and vector search over the vector tier (`vectors`).

mod chunks;
mod queue;
mod search;
mod vectors;
mod writes;

pub(crate) use self::chunks::chunk_id;
pub(crate) use self::queue::Staged;
pub(crate) use self::vectors::{VECTOR_FILE, VectorEntry};
pub(crate) use self::writes::Wanted;

use std::collections::{HashMap, HashSet};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use eywa_storage::{Batch, CacheStats, HotCache, Keyspace, Store};
use serde::Serialize;
use sha2::{Digest, Sha256};

use self::queue::{QueueItem, source_key};
use self::vectors::{Vectors, cache_key, decode_vector, encode_vector};
use crate::embed::{Embedder, LazyMiniLm, ModelDir};
use crate::{Error, Result};

pub use crate::model::EMBEDDED_TYPES;

/// Chunks of one document at most (a plan or report longer than this is embedded by its
/// first chunks; the text index still has all of it).
const MAX_CHUNKS: usize = 16;

/// Characters of a chunk kept to show with a hit.
const SNIPPET_CHARS: usize = 240;

/// Chunks embedded per step.
pub(crate) const STEP: usize = 32;

/// How often the background embedder saves the index file while it has unsaved vectors.
const SAVE_EVERY: Duration = Duration::from_secs(60);

/// Embeddings kept in the hot tier, and query vectors.
const EMBEDDING_CACHE: usize = 4_096;

const QUERY_CACHE: usize = 1_024;

/// Where the embedder comes from.
#[derive(Clone, Default)]
pub enum Embedding {
    /// No semantic memory: searches are lexical.
    #[default]
    Off,
    /// The model installed in this folder (`eywa model install`); a missing or broken
    /// model leaves search lexical, saying why.
    Model(PathBuf),
    /// This embedder (tests, or another model).
    Embedder(Arc<dyn Embedder>),
}

impl std::fmt::Debug for Embedding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Embedding::Off => f.write_str("Off"),
            Embedding::Model(p) => f.debug_tuple("Model").field(p).finish(),
            Embedding::Embedder(e) => f.debug_tuple("Embedder").field(&e.model_id()).finish(),
        }
    }
}

/// How far semantic memory is.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SemanticStatus {
    /// The model in use, or `None` when search is lexical only.
    pub model: Option<String>,
    /// Why there is no model.
    pub unavailable: Option<String>,
    /// Chunks embedded and in the index.
    pub vectors: u64,
    /// Chunks waiting to be embedded.
    pub backlog: u64,
    /// The index is being rebuilt from the warm tier.
    pub rebuilding: bool,
}

/// What one run of the embedder did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EmbedReport {
    /// Chunks taken from the queue into the index.
    pub chunks: u64,
    /// Of those, embedded by the model (the rest came from the cache).
    pub embedded: u64,
    /// How long the run took, in seconds.
    pub seconds: f64,
}

/// The vectors of a step's texts, by where they came from.
struct Looked {
    vectors: Vec<Arc<Vec<f32>>>,
    /// Cache keys of the vectors the model computed (to store in the warm tier).
    fresh: Vec<[u8; 32]>,
    computed: u64,
}

/// The semantic side of the engine.
pub(crate) struct Semantic {
    embedder: Option<Arc<dyn Embedder>>,
    pub(crate) unavailable: Option<String>,
    pub vectors: RwLock<Option<Vectors>>,
    /// Serializes changes to the queue and the vector records.
    write: Mutex<()>,
    /// Keys met during a rebuild of the text index; the rest are dropped after it.
    sweep: Mutex<Option<HashSet<u64>>>,
    cache: HotCache<[u8; 32], Arc<Vec<f32>>>,
    queries: HotCache<String, Arc<Vec<f32>>>,
    /// The hot tier of chunk records.
    chunks: chunks::ChunkCache,
    backlog: AtomicU64,
    /// Woken when chunks are queued.
    wake: (Mutex<u64>, Condvar),
    /// Where a client write's own chunks are embedded (`crate::embed::writes_pool`), made
    /// by the thread that opens semantic memory, at its priority (the server's at start).
    writes: Option<rayon::ThreadPool>,
    /// What client writes asked embedded, while a thread of their own embeds it.
    written: writes::Written,
    /// Where a search's query is embedded, at the reads' priority.
    reads: Option<rayon::ThreadPool>,
}

/// Runs `f` on `pool`, or on the caller's (the global pool's) threads without one.
fn on_pool<T: Send>(pool: Option<&rayon::ThreadPool>, f: impl FnOnce() -> T + Send) -> T {
    match pool {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// A chunk taken from the embedding queue: its queue key, the entry as read, the item.
type Taken = (Vec<u8>, Vec<u8>, QueueItem);

/// Adds up to `max` queued chunks to `taken`, newest first.
fn queued_newest(store: &Store, max: usize, taken: &mut Vec<Taken>) -> Result<()> {
    for kv in store.entries(Keyspace::EmbedQueue, &[]).take(max) {
        let (k, v) = kv?;
        let item: QueueItem = eywa_storage::decode(Keyspace::EmbedQueue, &v)?;
        taken.push((k, v, item));
    }
    Ok(())
}

/// Adds the chunks `source` has queued (up to `max`) to `taken`, wherever they are in the
/// queue: a client's write embeds its own text, not the backlog's.
fn queued_of(store: &Store, source: &str, max: usize, taken: &mut Vec<Taken>) -> Result<()> {
    let mut found = 0;
    for kv in store.entries(Keyspace::VectorsBySource, &queue::source_prefix(source)) {
        let (_, queued) = kv?;
        // Empty: embedded already.
        if queued.is_empty() {
            continue;
        }
        if let Some(v) = store.get_raw(Keyspace::EmbedQueue, &queued)? {
            let item: QueueItem = eywa_storage::decode(Keyspace::EmbedQueue, &v)?;
            taken.push((queued, v, item));
            found += 1;
            if found == max {
                break;
            }
        }
    }
    Ok(())
}

/// A pool from `make`, or none (the work then runs on the shared threads), saying why.
pub(crate) fn pool_or_shared(make: fn() -> Result<rayon::ThreadPool>) -> Option<rayon::ThreadPool> {
    make()
        .inspect_err(|e| tracing::warn!(error = %e, "embedding on the shared threads"))
        .ok()
}

/// The embedder `config` names (its weights not loaded yet), or why there is none.
pub(crate) fn configured(config: &Embedding) -> (Option<Arc<dyn Embedder>>, Option<String>) {
    match config {
        Embedding::Off => (None, Some("no embedding model is configured".into())),
        Embedding::Embedder(e) => (Some(e.clone()), None),
        // The weights load on the first embedding: queueing and reporting need none.
        Embedding::Model(dir) => match ModelDir::open(dir) {
            Ok(Some(model)) => match LazyMiniLm::new(model) {
                Ok(m) => (Some(Arc::new(m) as Arc<dyn Embedder>), None),
                Err(e) => (
                    None,
                    Some(format!("the model at {} does not load: {e}", dir.display())),
                ),
            },
            Ok(None) => (
                None,
                Some(format!(
                    "no embedding model is installed at {} (run `eywa model install`)",
                    dir.display()
                )),
            ),
            Err(e) => (None, Some(e.to_string())),
        },
    }
}

fn text_hash(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Semantic {
    /// Loads the embedder `config` names and the vectors stored for it. No embedder, or
    /// one that fails to load, leaves semantic memory unavailable (with the reason); the
    /// queue still fills, for when a model comes. `Ok(true)`: the stored vectors were of
    /// another model and were dropped.
    pub(crate) fn open(
        config: &Embedding,
        store: &Store,
        index_dir: &Path,
    ) -> Result<(Semantic, bool)> {
        let (embedder, unavailable) = configured(config);
        let mut reset = false;
        let vectors = match &embedder {
            Some(e) => {
                let (v, r) = Vectors::open(store, index_dir, e.dim(), e.model_id())?;
                reset = r;
                Some(v)
            }
            None => None,
        };
        let (writes, reads) = match &embedder {
            Some(_) => (
                pool_or_shared(crate::embed::writes_pool),
                pool_or_shared(crate::embed::reads_pool),
            ),
            None => (None, None),
        };
        let semantic = Semantic {
            embedder,
            unavailable,
            vectors: RwLock::new(vectors),
            write: Mutex::new(()),
            sweep: Mutex::new(None),
            cache: HotCache::new(
                "embeddings",
                NonZeroUsize::new(EMBEDDING_CACHE).expect("positive"),
            ),
            queries: HotCache::new(
                "query_vectors",
                NonZeroUsize::new(QUERY_CACHE).expect("positive"),
            ),
            chunks: chunks::chunk_cache(),
            backlog: AtomicU64::new(store.len(Keyspace::EmbedQueue)? as u64),
            wake: (Mutex::new(0), Condvar::new()),
            writes,
            reads,
            written: writes::Written::default(),
        };
        Ok((semantic, reset))
    }

    pub(crate) fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }

    pub(crate) fn vectors(&self) -> RwLockReadGuard<'_, Option<Vectors>> {
        self.vectors
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn lock_write(&self) -> std::sync::MutexGuard<'_, ()> {
        self.write
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn cache_stats(&self) -> [CacheStats; 3] {
        [
            self.cache.stats(),
            self.queries.stats(),
            self.chunks.stats(),
        ]
    }

    /// Why semantic search cannot run now, or `None` when it can.
    pub(crate) fn not_ready(&self) -> Option<String> {
        if let Some(why) = &self.unavailable {
            return Some(format!("semantic search is unavailable: {why}"));
        }
        if let Some(Err(e)) = self.embedder.as_ref().map(|e| e.prepare()) {
            return Some(format!("semantic search is unavailable: {e}"));
        }
        match self.vectors().as_ref() {
            Some(v) if v.stale => {
                Some("semantic search is unavailable while the vector index is rebuilt".into())
            }
            _ => None,
        }
    }

    /// The embedding of each `(text hash, text)`, from the hot cache, the warm tier, or
    /// the model.
    fn vectors_for(
        &self,
        store: &Store,
        embedder: &dyn Embedder,
        items: &[(String, String)],
    ) -> Result<Looked> {
        let model = embedder.model_id();
        let mut out: Vec<Option<Arc<Vec<f32>>>> = vec![None; items.len()];
        let mut fresh: Vec<[u8; 32]> = Vec::new();
        let mut missing: HashMap<[u8; 32], Vec<usize>> = HashMap::new();
        let mut texts: Vec<(&[u8; 32], &str)> = Vec::new();
        let keys: Vec<[u8; 32]> = items.iter().map(|(h, _)| cache_key(model, h)).collect();
        for (i, key) in keys.iter().enumerate() {
            if let Some(v) = self.cache.get(key) {
                out[i] = Some(v);
            } else if let Some(bytes) = store.get_raw(Keyspace::Embeddings, key)? {
                let v = Arc::new(decode_vector(&bytes));
                self.cache.insert(*key, v.clone());
                out[i] = Some(v);
            } else {
                let slot = missing.entry(*key).or_default();
                if slot.is_empty() {
                    texts.push((key, items[i].1.as_str()));
                }
                slot.push(i);
            }
        }
        let computed = texts.len() as u64;
        if !texts.is_empty() {
            let strs: Vec<&str> = texts.iter().map(|(_, t)| *t).collect();
            let vectors = embedder.embed(&strs)?;
            for ((key, _), v) in texts.iter().zip(vectors) {
                let v = Arc::new(v);
                self.cache.insert(**key, v.clone());
                for &i in &missing[*key] {
                    out[i] = Some(v.clone());
                }
                fresh.push(**key);
            }
        }
        let out = out
            .into_iter()
            .map(|v| v.ok_or_else(|| Error::Embedding("a chunk got no vector".into())))
            .collect::<Result<Vec<_>>>()?;
        Ok(Looked {
            vectors: out,
            fresh,
            computed,
        })
    }

    /// Embeds up to `max` queued chunks, newest first, on `pool` (see [`on_pool`]), and
    /// puts them in the index from the calling thread. Returns (chunks taken, chunks the
    /// model embedded).
    pub(crate) fn step(
        &self,
        store: &Store,
        max: usize,
        pool: Option<&rayon::ThreadPool>,
    ) -> Result<(u64, u64)> {
        if self.embedder.is_none() {
            return Ok((0, 0));
        }
        let mut taken = Vec::new();
        queued_newest(store, max, &mut taken)?;
        self.embed_taken(store, taken, pool)
    }

    /// Embeds the queued chunks `taken` (queue key, entry as read, item) on `pool` and
    /// puts them in the index. The index changes on the calling thread, not the pool's:
    /// a background pool's thread holding the locks that writes and searches wait for
    /// would hold them for as long as busier threads keep it off the cores.
    fn embed_taken(
        &self,
        store: &Store,
        taken: Vec<Taken>,
        pool: Option<&rayon::ThreadPool>,
    ) -> Result<(u64, u64)> {
        let Some(embedder) = self.embedder.clone() else {
            return Ok((0, 0));
        };
        if taken.is_empty() {
            return Ok((0, 0));
        }
        let inputs: Vec<(String, String)> = taken
            .iter()
            .map(|(_, _, i)| (i.entry.text_hash.clone(), i.text.clone()))
            .collect();
        let Looked {
            vectors,
            fresh,
            computed,
        } = on_pool(pool, || self.vectors_for(store, embedder.as_ref(), &inputs))?;
        let model = embedder.model_id();
        let _write = self.lock_write();
        let mut batch = Batch::new();
        let mut landed = Vec::new();
        for ((qk, bytes, item), vector) in taken.iter().zip(&vectors) {
            // Still queued as read: not dropped or replaced while the model ran.
            if store.get_raw(Keyspace::EmbedQueue, qk)?.as_deref() != Some(bytes.as_slice()) {
                continue;
            }
            let hash = cache_key(model, &item.entry.text_hash);
            if fresh.contains(&hash) {
                batch.put_raw(Keyspace::Embeddings, hash.to_vec(), encode_vector(vector));
            }
            batch.delete(Keyspace::EmbedQueue, qk.clone());
            batch.put(
                Keyspace::Vectors,
                item.key.to_be_bytes().to_vec(),
                &item.entry,
            )?;
            batch.put_raw(
                Keyspace::VectorsBySource,
                source_key(&item.entry.source, item.key),
                Vec::new(),
            );
            Vectors::journal(&mut batch, item.key);
            landed.push((item, vector));
        }
        store.apply(batch)?;
        self.backlog
            .fetch_sub(landed.len() as u64, Ordering::Relaxed);
        let mut guard = self
            .vectors
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(v) = guard.as_mut() {
            let items: Vec<(u64, &VectorEntry, &[f32])> = landed
                .iter()
                .map(|(item, vector)| (item.key, &item.entry, vector.as_slice()))
                .collect();
            v.insert_many(&items)?;
        }
        Ok((taken.len() as u64, computed))
    }

    /// Rebuilds a stale index from the warm tier. Returns chunks whose embedding was
    /// missing (their documents must be queued again).
    pub(crate) fn rebuild_if_stale(&self, store: &Store) -> Result<usize> {
        let Some(embedder) = &self.embedder else {
            return Ok(0);
        };
        let _write = self.lock_write();
        let mut guard = self
            .vectors
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(v) = guard.as_mut().filter(|v| v.stale) else {
            return Ok(0);
        };
        let started = Instant::now();
        let lost = v.rebuild(store, embedder.model_id())?;
        if !lost.is_empty() {
            let mut batch = Batch::new();
            for key in &lost {
                batch.delete(Keyspace::Vectors, key.to_be_bytes().to_vec());
                v.remove(*key);
            }
            store.apply(batch)?;
        }
        v.save(store)?;
        tracing::info!(
            vectors = v.meta.len(),
            seconds = started.elapsed().as_secs_f64(),
            "rebuilt the vector index"
        );
        Ok(lost.len())
    }

    /// Saves the index when [`SAVE_EVERY`] has passed since `last_save`: a long run
    /// saves as it goes, so the journal stays short.
    pub(crate) fn save_if_due(&self, store: &Store, last_save: &mut Instant) -> Result<()> {
        if last_save.elapsed() >= SAVE_EVERY {
            *last_save = Instant::now();
            self.save(store)?;
        }
        Ok(())
    }

    /// Saves the index file if vectors changed since the last save.
    pub(crate) fn save(&self, store: &Store) -> Result<bool> {
        let _write = self.lock_write();
        let mut guard = self
            .vectors
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match guard.as_mut() {
            Some(v) if v.unsaved > 0 && !v.stale => {
                v.save(store)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The stored record of a chunk (for its snippet).
    pub(crate) fn entry(store: &Store, key: u64) -> Result<Option<VectorEntry>> {
        Ok(store.get(Keyspace::Vectors, &key.to_be_bytes())?)
    }

    /// How many vectors the index holds.
    pub(crate) fn len(&self) -> u64 {
        self.vectors().as_ref().map_or(0, |v| v.meta.len() as u64)
    }

    /// Waits until chunks are queued, `timeout` passes, or `stop` is set.
    pub(crate) fn wait(&self, seen: &mut u64, timeout: Duration, stop: &AtomicBool) {
        let (lock, cvar) = &self.wake;
        let guard = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *guard != *seen || stop.load(Ordering::Relaxed) {
            *seen = *guard;
            return;
        }
        let (guard, _) = cvar
            .wait_timeout(guard, timeout)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *seen = *guard;
    }

    pub(crate) fn notify(&self) {
        let (lock, cvar) = &self.wake;
        *lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
        cvar.notify_all();
    }
}

/// A chunk found by vector search.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct VectorHit {
    pub key: u64,
    /// Cosine similarity to the query.
    pub score: f32,
    pub session: String,
    pub project: String,
    pub kind: String,
    pub agent: Option<String>,
    pub timestamp: i64,
}
