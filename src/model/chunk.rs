//! A chunk as read back: one embedded passage whole, where it comes from, and the chunks
//! of other sessions most like it.

use serde::Serialize;

use super::Timestamp;

/// One passage as it is embedded (seed 002's Chunk).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Chunk {
    /// 16 lowercase hex digits: the chunk's vector key.
    pub id: String,
    /// The text-index document the chunk is part of: `<source>#<line>.<part>` for a
    /// transcript message, `<source>#doc` for a plan or memory file, `<source>#handoff`.
    pub doc_id: String,
    /// The session a hit on it leads to (a subagent's leads to its parent); empty for a
    /// project memory file.
    pub session_id: String,
    /// Content type: `user_message`, `assistant_response`, `plan`, …
    pub kind: String,
    /// The transcript message it is part of (its uuid), if any.
    pub message: Option<String>,
    /// The page of a paged document, counted from 1.
    pub page: Option<u32>,
    /// The characters of the passage (a message's text, a document's content) the chunk
    /// covers: `start_char..end_char`.
    pub start_char: u64,
    /// See `start_char`.
    pub end_char: u64,
    /// The chunk's whole text, as embedded: prose with code blocks left out.
    pub content: String,
    /// When the passage was written.
    pub timestamp: Timestamp,
    /// The chunk has a vector in the index (false while it waits for the embedder).
    pub embedded: bool,
    /// The most similar chunks of other sessions (or documents), best first, as the
    /// vector index has them now.
    pub neighbors: Vec<ChunkNeighbor>,
}

/// A chunk near another one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChunkNeighbor {
    /// Its chunk id.
    pub id: String,
    /// The document it is part of.
    pub doc_id: String,
    /// The session it leads to.
    pub session_id: String,
    /// Its content type.
    pub kind: String,
    /// Cosine similarity of the two chunks' vectors.
    pub score: f32,
}
