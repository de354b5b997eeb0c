//! Chunks as records: each embedded passage whole, with the document, message and range
//! of characters it comes from. A chunk lives under its vector key in the `chunks`
//! keyspace (warm), moves to a zstd blob when idle (cold, [`eywa_storage::Store::sweep_chunks`])
//! and comes back warm when read; the chunks read last are kept decoded in a hot LRU.
//! Its neighbors, the most similar chunks of other sessions and documents, are looked up
//! in the vector index when it is read, so they follow the index as it changes.

use std::num::NonZeroUsize;
use std::sync::Arc;

use eywa_storage::{Batch, GenerationalCache, Keyspace, Store};
use serde::{Deserialize, Serialize};

use super::vectors::VectorEntry;
use super::{SNIPPET_CHARS, Semantic};
use crate::embed::Span;
use crate::index::TextDoc;
use crate::model::{Chunk, ChunkNeighbor, Timestamp};
use crate::{Error, Result};

/// Chunks kept decoded in the hot tier.
pub(super) const CHUNK_CACHE: usize = 2_048;

/// A hot chunk is read through to the warm tier at most this often, so that the warm
/// copy's last access follows its reads and a chunk in use is not moved to the cold tier:
/// one hour, in milliseconds.
const READ_THROUGH_MS: i64 = 60 * 60 * 1000;

/// Candidates looked at per neighbor asked for: chunks of the same session or document
/// are passed over.
const NEIGHBOR_CANDIDATES: usize = 8;

/// The stored form of a chunk: the bytes of its slot in the `chunks` keyspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ChunkRecord {
    /// The text-index document the chunk is part of.
    pub doc: String,
    /// The session a hit leads to (empty for a project memory file).
    pub session: String,
    pub kind: String,
    /// The transcript message it is part of (its uuid), if any.
    pub message: Option<String>,
    /// The page of a paged document, counted from 1.
    pub page: Option<u32>,
    /// Characters of the passage (a message's text, a document's content) before the
    /// chunk, and up to its end.
    pub start_char: u32,
    /// See `start_char`.
    pub end_char: u32,
    /// The chunk's whole text, as embedded.
    pub content: String,
    /// When the passage was written (ms since the epoch).
    #[serde(default)]
    pub timestamp: i64,
}

impl ChunkRecord {
    /// The record of chunk `span` of `doc`. Positions count from the passage itself, past
    /// what it is embedded with (`doc.lead`): a chunk of that lead alone starts at 0.
    pub(super) fn new(doc: &TextDoc, span: &Span) -> ChunkRecord {
        let at = |chars: usize| u32::try_from(chars.saturating_sub(doc.lead)).unwrap_or(u32::MAX);
        ChunkRecord {
            doc: doc.id.clone(),
            session: doc.session.clone(),
            kind: doc.kind.clone(),
            message: doc.message.clone(),
            page: doc.page,
            start_char: at(span.start_char),
            end_char: at(span.end_char),
            content: span.text.clone(),
            timestamp: doc.timestamp,
        }
    }

    /// Adds the record to `batch` as a warm chunk under `key`.
    pub(super) fn put(&self, batch: &mut Batch, key: u64) -> Result<()> {
        let bytes = eywa_storage::encode(Keyspace::Chunks, self)?;
        batch.put_chunk(key.to_be_bytes(), &bytes, Timestamp::now().0)?;
        Ok(())
    }
}

/// The hot tier of chunks: decoded records, and when each was last read through to the
/// warm tier. A batch that writes or drops chunks invalidates it once applied.
pub(super) type ChunkCache = GenerationalCache<u64, (Arc<ChunkRecord>, i64)>;

pub(super) fn chunk_cache() -> ChunkCache {
    GenerationalCache::new("chunks", NonZeroUsize::new(CHUNK_CACHE).expect("positive"))
}

/// A chunk id as shown to clients: its vector key in 16 lowercase hex digits.
pub(crate) fn chunk_id(key: u64) -> String {
    format!("{key:016x}")
}

/// The vector key a chunk id names.
pub(crate) fn parse_chunk_id(id: &str) -> Result<u64> {
    let id = id.trim();
    if id.len() != 16 {
        return Err(Error::InvalidArgument(format!(
            "chunk id {id} is not 16 hex digits",
            id = crate::error::quote(id)
        )));
    }
    u64::from_str_radix(id, 16).map_err(|_| {
        Error::InvalidArgument(format!(
            "chunk id {id} is not 16 hex digits",
            id = crate::error::quote(id)
        ))
    })
}

impl Semantic {
    /// The record of chunk `key`, from the hot tier, else the warm or cold tier (a cold
    /// chunk comes back warm); `None` when there is none.
    pub(crate) fn chunk_record(&self, store: &Store, key: u64) -> Result<Option<Arc<ChunkRecord>>> {
        let now = Timestamp::now().0;
        if let Some((record, read)) = self.chunks.get(&key)
            && now.saturating_sub(read) < READ_THROUGH_MS
        {
            return Ok(Some(record));
        }
        let generation = self.chunks.generation();
        let Some(bytes) = store.get_chunk(&key.to_be_bytes(), now)? else {
            return Ok(None);
        };
        let record: Arc<ChunkRecord> = Arc::new(eywa_storage::decode(Keyspace::Chunks, &bytes)?);
        self.chunks
            .insert_at(generation, key, (record.clone(), now));
        Ok(Some(record))
    }

    /// What a search hit on chunk `key` shows: the start of its content, read from the
    /// chunk tiers (a store whose chunks are not records yet shows the start kept with
    /// its vector).
    pub(crate) fn snippet(&self, store: &Store, key: u64) -> Result<String> {
        match self.chunk_record(store, key) {
            Ok(Some(record)) => return Ok(record.content.chars().take(SNIPPET_CHARS).collect()),
            Ok(None) => {}
            // A damaged cold chunk does not fail the search: its vector's start is shown.
            Err(e) => tracing::warn!(chunk = %chunk_id(key), error = %e, "a chunk cannot be read"),
        }
        Ok(Semantic::entry(store, key)?
            .map(|e| e.snippet)
            .unwrap_or_default())
    }

    /// Chunk `id` whole, with up to `neighbors` of the most similar chunks of other
    /// sessions and documents (none while semantic search is unavailable).
    pub(crate) fn chunk(&self, store: &Store, id: &str, neighbors: usize) -> Result<Chunk> {
        let key = parse_chunk_id(id)?;
        let Some(record) = self.chunk_record(store, key)? else {
            return Err(Error::NotFound(format!("no chunk {}", chunk_id(key))));
        };
        let entry: Option<VectorEntry> = Semantic::entry(store, key)?;
        let neighbors = match neighbors {
            0 => Vec::new(),
            n => self.neighbors(store, key, &record, n)?,
        };
        Ok(Chunk {
            id: chunk_id(key),
            doc_id: record.doc.clone(),
            session_id: record.session.clone(),
            kind: record.kind.clone(),
            message: record.message.clone(),
            page: record.page,
            start_char: u64::from(record.start_char),
            end_char: u64::from(record.end_char),
            content: record.content.clone(),
            timestamp: Timestamp(entry.as_ref().map_or(record.timestamp, |e| e.timestamp)),
            embedded: self
                .vectors()
                .as_ref()
                .is_some_and(|v| v.meta.contains_key(&key)),
            neighbors,
        })
    }

    /// The chunks nearest to chunk `key` in the vector index that belong to another
    /// session (or, for a chunk of no session, another document), best first.
    fn neighbors(
        &self,
        store: &Store,
        key: u64,
        record: &ChunkRecord,
        n: usize,
    ) -> Result<Vec<ChunkNeighbor>> {
        if self.not_ready().is_some() {
            return Ok(Vec::new());
        }
        let guard = self.vectors();
        let Some(v) = guard.as_ref() else {
            return Ok(Vec::new());
        };
        let Some(near) = v.near(key, n.saturating_mul(NEIGHBOR_CANDIDATES))? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (other, score) in near {
            let Some(entry) = Semantic::entry(store, other)? else {
                continue;
            };
            let same = if record.session.is_empty() {
                entry.doc == record.doc
            } else {
                entry.session == record.session
            };
            if same {
                continue;
            }
            out.push(ChunkNeighbor {
                id: chunk_id(other),
                doc_id: entry.doc,
                session_id: entry.session,
                kind: entry.kind,
                score,
            });
            if out.len() == n {
                break;
            }
        }
        Ok(out)
    }
}
