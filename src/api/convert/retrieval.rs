//! The Retrieval service's messages: handoffs for a query, search, and context to inject.

use super::n32;
use super::wire::wire;
use crate::api::pb;
use crate::engine::{
    Context, ContextItem, ContextMode, ContextSession, DEFAULT_MAX_TOKENS, Engine, GetOutcome,
    HandoffHit, MAX_SEARCH_LIMIT, SearchHit, SearchRequest, SearchResults,
};
use crate::model::{Chunk, ChunkNeighbor, Timestamp, age};
use crate::retrieve::{GetOptions, Ranked, Signals};

/// A `GetHandoffs` request, validated.
pub struct GetQuery {
    pub query: String,
    pub options: GetOptions,
}

wire! {
    GetQuery <=> pb::GetHandoffsRequest {
        query, options => { days_back, limit, projects, users, machines }: get_options,
    }
}

wire! {
    SearchRequest <=> pb::SearchRequest {
        query: words, limit: count(10, MAX_SEARCH_LIMIT), mode: strict_mode, focus: trimmed,
        filter => { types, projects, agent_types, since, until, users, machines }: search_filter,
        as_of: maybe_time,
    }
}

/// A `RetrieveContext` request, validated.
pub struct ContextQuery {
    pub sessions: Vec<String>,
    pub mode: ContextMode,
    pub max_tokens: usize,
    pub dry_run: bool,
}

wire! {
    ContextQuery <=> pb::RetrieveContextRequest {
        sessions, mode: named, max_tokens: count(DEFAULT_MAX_TOKENS, i32::MAX as usize),
        dry_run,
    }
}

wire! {
    GetOutcome <=> pb::GetHandoffsResponse {
        tokens, hits = handoffs: messages, fallback_recent, older = older_sessions: size32,
        newest_older = newest_older_date: maybe_date,
    }
}

wire! {
    HandoffHit <=> pb::ScoredHandoff { handoff: present, score }
}

wire! {
    SearchResults <=> pb::SearchResponse { hits: messages, mode: search_mode, notices }
}

// A hit's age is told against the moment it is sent.
wire! {
    SearchHit <=> pb::SearchHit {
        title, project, score: float, kind = r#type, snippet, timestamp: time, agent: text,
        matches, signals: required, session_id, chunk_id: text, document_id: text,
        page: page_number, resume_command: text, user, machine,
    }
    to_wire(h) {
        short_id: crate::claude::short_id(&h.session_id),
        age: age(h.timestamp, Timestamp::now()),
    }
}

wire! {
    Signals <=> pb::Signals {
        lexical: maybe, semantic: maybe, retrieval, same_project, shared, distance,
        proximity, recency, total, speaker, time, preference, date,
    }
}

wire! {
    Ranked <=> pb::RankedSignal { rank, score: float }
}

wire! {
    Context <=> pb::RetrieveContextResponse {
        budget: size32, used: size32, sessions: messages, warnings, text,
    }
    to_wire(c) { remaining: n32(c.budget.saturating_sub(c.used)) }
}

wire! {
    ContextSession <=> pb::ContextSession {
        session_id, title, project, age_days, staleness: text, dropped, tokens: size32,
        items: messages,
    }
}

wire! {
    ContextItem <=> pb::ContextItem { kind = r#type, tokens: size32, included, text, fetch }
}

/// A `GetChunk` request, validated.
pub struct ChunkQuery {
    pub chunk_id: String,
    pub neighbors: usize,
}

wire! {
    ChunkQuery <=> pb::GetChunkRequest {
        chunk_id, neighbors: bounded(0, 0, Engine::MAX_CHUNK_NEIGHBORS),
    }
}

wire! {
    Chunk <=> pb::Chunk {
        id, doc_id, session_id, kind = r#type, message: text, page: page_number,
        start_char, end_char, content, timestamp: time, embedded, neighbors: messages,
    }
}

wire! {
    ChunkNeighbor <=> pb::ChunkNeighbor { id, doc_id, session_id, kind = r#type, score: float }
}

impl From<Chunk> for pb::GetChunkResponse {
    fn from(chunk: Chunk) -> Self {
        pb::GetChunkResponse {
            chunk: Some(chunk.into()),
        }
    }
}

impl TryFrom<pb::GetChunkResponse> for Chunk {
    type Error = tonic::Status;

    fn try_from(response: pb::GetChunkResponse) -> Result<Self, Self::Error> {
        response
            .chunk
            .ok_or_else(|| super::bad("chunk missing"))?
            .try_into()
    }
}
