//! The embedding queue: chunks of what is indexed, queued in the same transaction as the
//! source they come from, listed by source so that a re-read or a drop replaces them, and
//! taken newest first by the embedder.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use eywa_storage::{Batch, Keyspace, Store};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::chunks::ChunkRecord;
use super::vectors::{VectorEntry, Vectors};
use super::{EMBEDDED_TYPES, MAX_CHUNKS, SNIPPET_CHARS, Semantic, text_hash};
use crate::Result;
use crate::embed::spans;
use crate::index::TextDoc;

/// A chunk waiting to be embedded (the `embed_queue` keyspace).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct QueueItem {
    pub(super) key: u64,
    pub(super) entry: VectorEntry,
    pub(super) text: String,
}

/// The key of chunk `chunk` of document `doc`: stable across reads.
fn vector_key(doc: &str, chunk: usize) -> u64 {
    let mut h = Sha256::new();
    h.update(doc.as_bytes());
    h.update(b"#");
    h.update(chunk.to_string().as_bytes());
    let digest = h.finalize();
    u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))
}

/// Queue order: newest first, then by key.
fn queue_key(timestamp: i64, key: u64) -> Vec<u8> {
    let newest_first = u64::MAX - ((timestamp as u64) ^ (1 << 63));
    let mut k = newest_first.to_be_bytes().to_vec();
    k.extend_from_slice(&key.to_be_bytes());
    k
}

pub(super) fn source_key(source: &str, key: u64) -> Vec<u8> {
    let mut k = source_prefix(source);
    k.extend_from_slice(&key.to_be_bytes());
    k
}

pub(super) fn source_prefix(source: &str) -> Vec<u8> {
    let mut k = source.as_bytes().to_vec();
    k.push(0);
    k
}

/// Chunks queued in a caller's batch, not yet applied: holds the write lock, so the
/// embedder cannot take a chunk the batch is about to change.
pub(crate) struct Staged<'a> {
    _write: std::sync::MutexGuard<'a, ()>,
    /// Chunks the batch queues.
    queued: u64,
    /// Queued chunks the batch takes off the queue.
    unqueued: u64,
    /// Embedded chunks the batch removes.
    removed: Vec<u64>,
    /// Chunk records the batch writes or drops.
    chunks: u64,
}

impl Semantic {
    /// The chunks of `docs` to embed, as queue items and chunk records.
    fn items(docs: &[TextDoc]) -> Vec<(QueueItem, ChunkRecord)> {
        let mut out = Vec::new();
        for doc in docs {
            if !EMBEDDED_TYPES.contains(&doc.kind.as_str()) {
                continue;
            }
            for (i, span) in spans(&doc.text, MAX_CHUNKS).into_iter().enumerate() {
                let record = ChunkRecord::new(doc, &span);
                let text = span.text;
                let snippet: String = text.chars().take(SNIPPET_CHARS).collect();
                let item = QueueItem {
                    key: vector_key(&doc.id, i),
                    entry: VectorEntry {
                        doc: doc.id.clone(),
                        source: doc.source.clone(),
                        session: doc.session.clone(),
                        project: doc.project.clone(),
                        kind: doc.kind.clone(),
                        agent: doc.agent.clone(),
                        timestamp: doc.timestamp,
                        chunk: i as u32,
                        text_hash: text_hash(&text),
                        snippet,
                    },
                    text,
                };
                out.push((item, record));
            }
        }
        out
    }

    /// Queues the chunks of `docs` whose text is not embedded under their key already.
    /// With `replace`, the source's other chunks are dropped (it was read from its start).
    pub(crate) fn enqueue(
        &self,
        store: &Store,
        source: &str,
        docs: &[TextDoc],
        replace: bool,
    ) -> Result<()> {
        let mut batch = Batch::new();
        let staged = self.stage(store, source, docs, replace, &mut batch)?;
        store.apply(batch)?;
        self.applied(staged);
        Ok(())
    }

    /// [`Semantic::enqueue`]'s writes, added to `batch` for the caller to apply in its own
    /// transaction: a session's chunks are queued with its graph writes, or not at all. The
    /// embedder waits until what this returns is handed to [`Semantic::applied`] (once the
    /// batch is applied) or dropped (it was not).
    pub(crate) fn stage<'a>(
        &'a self,
        store: &Store,
        source: &str,
        docs: &[TextDoc],
        replace: bool,
        batch: &mut Batch,
    ) -> Result<Staged<'a>> {
        let mut staged = self.begin();
        self.stage_more(&mut staged, store, source, docs, replace, batch)?;
        Ok(staged)
    }

    /// Takes the write lock for writes staged in a caller's batch (see
    /// [`Semantic::stage_more`]).
    pub(crate) fn begin(&self) -> Staged<'_> {
        Staged {
            _write: self.lock_write(),
            queued: 0,
            unqueued: 0,
            removed: Vec::new(),
            chunks: 0,
        }
    }

    /// [`Semantic::stage`] under a lock already taken: several sources staged into one
    /// batch (a group of files written in one transaction) are applied together.
    pub(crate) fn stage_more(
        &self,
        staged: &mut Staged<'_>,
        store: &Store,
        source: &str,
        docs: &[TextDoc],
        replace: bool,
        batch: &mut Batch,
    ) -> Result<()> {
        let items = Self::items(docs);
        let wanted: HashSet<u64> = items.iter().map(|(i, _)| i.key).collect();
        if replace {
            for kv in store.entries(Keyspace::VectorsBySource, &source_prefix(source)) {
                let (k, pending) = kv?;
                let key = u64::from_be_bytes(k[k.len() - 8..].try_into().expect("8 bytes"));
                if !wanted.contains(&key) {
                    staged.unqueued += u64::from(Self::drop_key(batch, &k, &pending, key));
                    staged.removed.push(key);
                    staged.chunks += 1;
                }
            }
        }
        for (item, record) in &items {
            if let Some(seen) = self
                .sweep
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .as_mut()
            {
                seen.insert(item.key);
            }
            let sk = source_key(&item.entry.source, item.key);
            let pending = store.get_raw(Keyspace::VectorsBySource, &sk)?;
            match &pending {
                Some(q) if !q.is_empty() => {
                    batch.delete(Keyspace::EmbedQueue, q.clone());
                    staged.unqueued += 1;
                }
                Some(_) => {
                    let current: Option<VectorEntry> =
                        store.get(Keyspace::Vectors, &item.key.to_be_bytes())?;
                    if current.as_ref() == Some(&item.entry) {
                        // Embedded as it is; its record is written once (a store from
                        // before chunks were records gets them on its next reindex).
                        if !store.contains(Keyspace::Chunks, &item.key.to_be_bytes())? {
                            record.put(batch, item.key)?;
                            staged.chunks += 1;
                        }
                        continue;
                    }
                }
                None => {}
            }
            let qk = queue_key(item.entry.timestamp, item.key);
            batch.put(Keyspace::EmbedQueue, qk.clone(), item)?;
            batch.put_raw(Keyspace::VectorsBySource, sk, qk);
            record.put(batch, item.key)?;
            staged.queued += 1;
            staged.chunks += 1;
        }
        Ok(())
    }

    /// Chunks listed in semantic memory whose queue entry or vector is missing (a store
    /// written before a session's chunks were queued in its own transaction, or a damaged
    /// one): their listing is dropped, so that the next rebuild of the text index queues
    /// them again. Returns how many.
    pub(crate) fn repair_listing(&self, store: &Store) -> Result<usize> {
        let _write = self.lock_write();
        let mut batch = Batch::new();
        let mut dropped = 0;
        for kv in store.entries(Keyspace::VectorsBySource, &[]) {
            let (k, pending) = kv?;
            let key = u64::from_be_bytes(k[k.len() - 8..].try_into().expect("8 bytes"));
            let present = if pending.is_empty() {
                store.contains(Keyspace::Vectors, &key.to_be_bytes())?
            } else {
                store.contains(Keyspace::EmbedQueue, &pending)?
            };
            if !present {
                batch.delete(Keyspace::VectorsBySource, k);
                dropped += 1;
            }
        }
        store.apply(batch)?;
        Ok(dropped)
    }

    /// Counts what a [`Semantic::stage`]d batch queued and dropped, now that it is applied,
    /// and wakes the embedder.
    pub(crate) fn applied(&self, staged: Staged<'_>) {
        self.backlog.fetch_add(staged.queued, Ordering::Relaxed);
        self.backlog.fetch_sub(staged.unqueued, Ordering::Relaxed);
        self.forget(&staged.removed);
        if staged.chunks > 0 {
            self.chunks.bump();
        }
        if staged.queued > 0 {
            let (lock, cvar) = &self.wake;
            *lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) += staged.queued;
            cvar.notify_all();
        }
    }

    /// Adds to `batch` the removal of one chunk (queued or embedded); true when it was
    /// still queued.
    fn drop_key(batch: &mut Batch, source_key: &[u8], pending: &[u8], key: u64) -> bool {
        let queued = !pending.is_empty();
        if queued {
            batch.delete(Keyspace::EmbedQueue, pending.to_vec());
        } else {
            batch.delete(Keyspace::Vectors, key.to_be_bytes().to_vec());
            Vectors::journal(batch, key);
        }
        batch.delete(Keyspace::VectorsBySource, source_key.to_vec());
        batch.delete(Keyspace::Chunks, key.to_be_bytes().to_vec());
        queued
    }

    /// Drops removed keys from the in-memory index.
    fn forget(&self, keys: &[u64]) {
        if keys.is_empty() {
            return;
        }
        let mut guard = self
            .vectors
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(v) = guard.as_mut() {
            for key in keys {
                v.remove(*key);
            }
        }
    }

    /// Starts noting the keys a rebuild of the text index queues.
    pub(crate) fn begin_sweep(&self) {
        *self
            .sweep
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(HashSet::new());
    }

    /// Drops every chunk the rebuild did not meet: its document is gone.
    pub(crate) fn end_sweep(&self, store: &Store) -> Result<()> {
        let Some(seen) = self
            .sweep
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        else {
            return Ok(());
        };
        let _write = self.lock_write();
        let mut batch = Batch::new();
        let mut removed = Vec::new();
        let mut unqueued = 0;
        for kv in store.entries(Keyspace::VectorsBySource, &[]) {
            let (k, pending) = kv?;
            let key = u64::from_be_bytes(k[k.len() - 8..].try_into().expect("8 bytes"));
            if !seen.contains(&key) {
                unqueued += u64::from(Self::drop_key(&mut batch, &k, &pending, key));
                removed.push(key);
            }
        }
        store.apply(batch)?;
        self.backlog.fetch_sub(unqueued, Ordering::Relaxed);
        self.forget(&removed);
        if !removed.is_empty() {
            self.chunks.bump();
        }
        Ok(())
    }

    /// Chunks waiting to be embedded.
    pub(crate) fn backlog(&self) -> u64 {
        self.backlog.load(Ordering::Relaxed)
    }
}
