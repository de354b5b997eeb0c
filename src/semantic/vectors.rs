//! The vector tier of semantic memory: every embedded chunk's record in the warm tier
//! (`vectors`), its vector (`embeddings`, by content), and the HNSW index in the index tier
//! (`<store>/index/vectors.usearch`), kept in step by a journal of the keys changed since
//! the file was last saved. In memory: the index and what each key belongs to, for
//! filters and grouping.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use eywa_storage::{Batch, Keyspace, Store};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::index::{HnswIndex, VectorIndex};
use crate::model::SearchFilter;
use crate::{Error, Result};

/// Settings prefix of the journal: `vector_journal/ | key` for every key whose vector
/// changed since the index file was saved.
const JOURNAL: &[u8] = b"vector_journal/";
/// Settings key naming the model the stored vectors came from.
const MODEL_KEY: &[u8] = b"vector_model";
/// Vectors read from the warm tier and added together while rebuilding the index.
const REBUILD_BATCH: usize = 8_192;
/// A store of at most this many vectors, or a filter that keeps at most this many, is
/// answered exactly, by comparing the query with each of them; a broader search walks
/// the graph.
const EXACT_LIMIT: usize = 20_000;

/// What an embedded chunk belongs to (the `vectors` keyspace).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct VectorEntry {
    /// The text-index document the chunk is part of.
    pub doc: String,
    pub source: String,
    /// The session a hit leads to (empty for a project memory file).
    pub session: String,
    /// Project name, lowercased.
    pub project: String,
    pub kind: String,
    pub agent: Option<String>,
    /// Milliseconds since the epoch.
    pub timestamp: i64,
    pub chunk: u32,
    /// sha256 of the chunk's text (hex, first 32 characters): unchanged text is not
    /// queued again.
    pub text_hash: String,
    /// The chunk's first characters, shown for a hit.
    pub snippet: String,
}

/// What the index keeps in memory of a key, for filters and grouping.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Meta {
    pub session: u32,
    pub project: u32,
    pub kind: u32,
    /// 0 when the chunk is not a subagent's.
    pub agent: u32,
    pub timestamp: i64,
}

/// Strings seen in metadata, by number (0 is the empty string).
#[derive(Debug, Default)]
pub(crate) struct Strings {
    names: Vec<String>,
    numbers: HashMap<String, u32>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings::default();
        s.intern("");
        s
    }

    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        if let Some(&n) = self.numbers.get(name) {
            return n;
        }
        let n = self.names.len() as u32;
        self.names.push(name.to_owned());
        self.numbers.insert(name.to_owned(), n);
        n
    }

    pub(crate) fn number(&self, name: &str) -> Option<u32> {
        self.numbers.get(name).copied()
    }

    pub(crate) fn name(&self, n: u32) -> &str {
        &self.names[n as usize]
    }
}

/// The in-memory side: the HNSW index and each key's metadata.
pub(crate) struct Vectors {
    pub index: HnswIndex,
    pub meta: HashMap<u64, Meta>,
    by_project: HashMap<u32, HashSet<u64>>,
    by_session: HashMap<u32, HashSet<u64>>,
    /// Keys by content type: a search for a rare type (memories among session chunks) is
    /// answered exactly among them.
    by_kind: HashMap<u32, HashSet<u64>>,
    pub strings: Strings,
    /// The index file lags the warm tier beyond what the journal can replay: rebuild.
    pub stale: bool,
    /// Vectors changed since the index file was saved.
    pub unsaved: u64,
    path: PathBuf,
}

fn journal_key(key: u64) -> Vec<u8> {
    let mut k = JOURNAL.to_vec();
    k.extend_from_slice(&key.to_be_bytes());
    k
}

/// Reads a stored embedding (little-endian f32s).
pub(crate) fn decode_vector(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect()
}

pub(crate) fn encode_vector(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The vector index's file in the index tier.
pub(crate) const VECTOR_FILE: &str = "vectors.usearch";

impl Vectors {
    /// Loads the metadata of every stored chunk and the index file, replaying the
    /// journal; an index file that is missing or unreadable marks the index stale. Vectors
    /// of another model are dropped (`Ok(true)`: the caller re-queues every document).
    pub(crate) fn open(
        store: &Store,
        dir: &Path,
        dim: usize,
        model: &str,
    ) -> Result<(Vectors, bool)> {
        let path = dir.join(VECTOR_FILE);
        let mut reset = false;
        let stored_model: Option<String> = store.get(Keyspace::Settings, MODEL_KEY)?;
        if stored_model.as_deref() != Some(model) {
            reset = stored_model.is_some() || !store.is_empty(Keyspace::Vectors);
            let mut batch = Batch::new();
            for keyspace in [Keyspace::Vectors, Keyspace::VectorsBySource] {
                for key in store.keys(keyspace, &[]) {
                    batch.delete(keyspace, key?);
                }
            }
            for key in store.keys(Keyspace::Settings, JOURNAL) {
                batch.delete(Keyspace::Settings, key?);
            }
            batch.put(Keyspace::Settings, MODEL_KEY.to_vec(), &model)?;
            store.apply(batch)?;
            let _ = std::fs::remove_file(&path);
        }
        let mut vectors = Vectors {
            index: HnswIndex::new(dim)?,
            meta: HashMap::new(),
            by_project: HashMap::new(),
            by_kind: HashMap::new(),
            by_session: HashMap::new(),
            strings: Strings::new(),
            stale: false,
            unsaved: 0,
            path,
        };
        for entry in store.scan::<VectorEntry>(Keyspace::Vectors, &[]) {
            let (key, entry) = entry?;
            let key = u64::from_be_bytes(
                key.as_slice()
                    .try_into()
                    .map_err(|_| Error::VectorIndex("a vector key is not 8 bytes".into()))?,
            );
            vectors.remember(key, &entry);
        }
        if vectors.path.exists() {
            match HnswIndex::load(&vectors.path, dim) {
                Ok(index) => {
                    vectors.index = index;
                    vectors.replay_journal(store, model)?;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "vector index unreadable: rebuilding it");
                    vectors.stale = true;
                }
            }
        } else {
            vectors.stale = !vectors.meta.is_empty();
        }
        Ok((vectors, reset))
    }

    /// Re-applies what changed after the index file was saved.
    fn replay_journal(&mut self, store: &Store, model: &str) -> Result<()> {
        // Stops at the first error: a failing read is not skipped.
        let mut keys: Vec<u64> = Vec::new();
        for k in store.keys(Keyspace::Settings, JOURNAL) {
            if let Ok(key) = k?[JOURNAL.len()..].try_into() {
                keys.push(u64::from_be_bytes(key));
            }
        }
        for key in &keys {
            match self.stored_vector(store, *key, model)? {
                Some(v) => self.index.upsert(*key, &v)?,
                None => {
                    self.index.remove(*key);
                }
            }
        }
        self.unsaved = keys.len() as u64;
        if self.index.len() != self.meta.len() {
            tracing::warn!(
                index = self.index.len(),
                stored = self.meta.len(),
                "vector index out of step with the store: rebuilding it"
            );
            self.stale = true;
        }
        Ok(())
    }

    /// The embedding of a stored chunk.
    fn stored_vector(&self, store: &Store, key: u64, model: &str) -> Result<Option<Vec<f32>>> {
        let Some(entry) = store.get::<VectorEntry>(Keyspace::Vectors, &key.to_be_bytes())? else {
            return Ok(None);
        };
        let hash = cache_key(model, &entry.text_hash);
        Ok(store
            .get_raw(Keyspace::Embeddings, &hash)?
            .map(|b| decode_vector(&b)))
    }

    /// Builds the index again from the warm tier; chunks whose embedding is missing are
    /// dropped (returned, so that their documents are queued again).
    pub(crate) fn rebuild(&mut self, store: &Store, model: &str) -> Result<Vec<u64>> {
        let mut index = HnswIndex::new(self.index.dim())?;
        let mut lost = Vec::new();
        let keys: Vec<u64> = self.meta.keys().copied().collect();
        for part in keys.chunks(REBUILD_BATCH) {
            let mut items = Vec::with_capacity(part.len());
            for &key in part {
                match self.stored_vector(store, key, model)? {
                    Some(v) => items.push((key, v)),
                    None => lost.push(key),
                }
            }
            index.extend(&items)?;
        }
        self.index = index;
        self.stale = false;
        self.unsaved = self.meta.len() as u64;
        Ok(lost)
    }

    /// Saves the index file and clears the journal (the caller holds the write lock).
    pub(crate) fn save(&mut self, store: &Store) -> Result<()> {
        if self.stale {
            return Ok(());
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
        }
        self.index.save(&self.path)?;
        // The journal is cleared in parts: a key left over after a crash here is only
        // replayed again, which changes nothing.
        let keys: Vec<Vec<u8>> = store
            .keys(Keyspace::Settings, JOURNAL)
            .collect::<eywa_storage::Result<_>>()?;
        let mut keys = keys.into_iter().peekable();
        while keys.peek().is_some() {
            let mut batch = Batch::new();
            for key in keys.by_ref().take(10_000) {
                batch.delete(Keyspace::Settings, key);
            }
            store.apply(batch)?;
        }
        self.unsaved = 0;
        Ok(())
    }

    /// Records in `batch` that `key` changed (part of the same transaction as the change).
    pub(crate) fn journal(batch: &mut Batch, key: u64) {
        batch.put_raw(Keyspace::Settings, journal_key(key), Vec::new());
    }

    /// Keeps `entry`'s metadata for `key`.
    pub(crate) fn remember(&mut self, key: u64, entry: &VectorEntry) {
        if let Some(old) = self.meta.get(&key).copied() {
            self.unlink(key, &old);
        }
        let meta = Meta {
            session: self.strings.intern(&entry.session),
            project: self.strings.intern(&entry.project),
            kind: self.strings.intern(&entry.kind),
            agent: entry.agent.as_deref().map_or(0, |a| self.strings.intern(a)),
            timestamp: entry.timestamp,
        };
        self.by_project.entry(meta.project).or_default().insert(key);
        self.by_session.entry(meta.session).or_default().insert(key);
        self.by_kind.entry(meta.kind).or_default().insert(key);
        self.meta.insert(key, meta);
    }

    /// Drops `key` from the per-project and per-session sets.
    fn unlink(&mut self, key: u64, meta: &Meta) {
        for (map, n) in [
            (&mut self.by_project, meta.project),
            (&mut self.by_session, meta.session),
            (&mut self.by_kind, meta.kind),
        ] {
            if let Some(set) = map.get_mut(&n) {
                set.remove(&key);
                if set.is_empty() {
                    map.remove(&n);
                }
            }
        }
    }

    /// Puts vectors in the index with their metadata, added over all cores.
    pub(crate) fn insert_many(&mut self, items: &[(u64, &VectorEntry, &[f32])]) -> Result<()> {
        for (key, entry, _) in items {
            self.remember(*key, entry);
        }
        self.unsaved += items.len() as u64;
        if !self.stale {
            let vectors: Vec<(u64, &[f32])> = items.iter().map(|(k, _, v)| (*k, *v)).collect();
            self.index.extend(&vectors)?;
        }
        Ok(())
    }

    pub(crate) fn remove(&mut self, key: u64) {
        if let Some(old) = self.meta.remove(&key) {
            self.unlink(key, &old);
        }
        self.index.remove(key);
        self.unsaved += 1;
    }

    /// Whether `meta` passes the filter's content type, subagent and time conditions
    /// (`kinds` and `agents` as string numbers; `None`: any).
    fn keeps(
        meta: &Meta,
        kinds: &Option<Vec<u32>>,
        agents: &Option<Vec<u32>>,
        filter: &SearchFilter,
    ) -> bool {
        kinds.as_ref().is_none_or(|k| k.contains(&meta.kind))
            && agents.as_ref().is_none_or(|a| a.contains(&meta.agent))
            && filter.since.is_none_or(|s| meta.timestamp >= s.0)
            && filter.until.is_none_or(|u| meta.timestamp < u.0)
    }

    /// The `k` chunks most similar to `query` that pass `filter`, best first.
    pub(crate) fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: &SearchFilter,
    ) -> Result<Vec<(u64, f32)>> {
        let numbers = |names: &[String]| -> Option<Vec<u32>> {
            (!names.is_empty()).then(|| {
                names
                    .iter()
                    .filter_map(|n| self.strings.number(n))
                    .collect()
            })
        };
        let kinds = numbers(&filter.kinds);
        let agents = numbers(&filter.agent_types);
        let projects = numbers(&filter.project_keys());
        let keep = |key: u64| {
            self.meta.get(&key).is_some_and(|m| {
                projects.as_ref().is_none_or(|ps| ps.contains(&m.project))
                    && Self::keeps(m, &kinds, &agents, filter)
            })
        };
        // A search among few vectors is answered exactly: the same answer however the
        // graph was built, and still a few milliseconds; a broader one walks the graph.
        let candidates = match &projects {
            None => self.meta.len(),
            Some(ps) => ps
                .iter()
                .map(|p| {
                    self.by_project
                        .get(p)
                        .map_or(0, std::collections::HashSet::len)
                })
                .sum(),
        };
        // Few vectors of the types asked for (memories among session chunks): exactly
        // among them, where a graph walk filtering for them would wander.
        let of_kinds = kinds.as_ref().map(|ks| {
            ks.iter()
                .map(|t| self.by_kind.get(t).map_or(0, HashSet::len))
                .sum::<usize>()
        });
        if let (Some(ks), Some(n)) = (&kinds, of_kinds)
            && n <= EXACT_LIMIT
            && n < candidates
        {
            let mut keys = ks
                .iter()
                .filter_map(|t| self.by_kind.get(t))
                .flat_map(|s| s.iter().copied())
                .filter(|key| keep(*key));
            return self.index.search_among(query, k, &mut keys);
        }
        match &projects {
            _ if candidates > EXACT_LIMIT => self.index.search(query, k, &keep),
            None => self.index.search_exact(query, k, &keep),
            Some(ps) => {
                let mut keys = ps
                    .iter()
                    .filter_map(|p| self.by_project.get(p))
                    .flat_map(|s| s.iter().copied())
                    .filter(|key| keep(*key));
                self.index.search_among(query, k, &mut keys)
            }
        }
    }

    /// The `k` chunks most similar to chunk `key` outside its own session (any other
    /// chunk, for a chunk of no session), best first; `None` when `key` has no vector.
    pub(crate) fn near(&self, key: u64, k: usize) -> Result<Option<Vec<(u64, f32)>>> {
        let (Some(vector), Some(own)) = (self.index.get(key), self.meta.get(&key)) else {
            return Ok(None);
        };
        let session = own.session;
        let keep = |other: u64| {
            other != key
                && (session == 0 || self.meta.get(&other).is_some_and(|m| m.session != session))
        };
        let hits = if self.meta.len() > EXACT_LIMIT {
            self.index.search(&vector, k, &keep)?
        } else {
            self.index.search_exact(&vector, k, &keep)?
        };
        Ok(Some(hits))
    }

    /// The mean of a session's chunk vectors, normalized; `None` without chunks.
    pub(crate) fn centroid(&self, session: &str) -> Option<Vec<f32>> {
        let keys = self.by_session.get(&self.strings.number(session)?)?;
        let mut sum = vec![0f32; self.index.dim()];
        for key in keys {
            if let Some(x) = self.index.get(*key) {
                sum.iter_mut().zip(&x).for_each(|(s, x)| *s += x);
            }
        }
        let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
        (norm > 0.0).then(|| sum.iter().map(|x| x / norm).collect())
    }
}

/// The warm-tier key of an embedding: sha256 of the model and the text's hash.
pub(super) fn cache_key(model: &str, text_hash: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(model.as_bytes());
    h.update([0]);
    h.update(text_hash.as_bytes());
    h.finalize().into()
}
