//! The Memory service's messages: remember, recall, update, forget, list, history and
//! consolidation.

use super::wire::wire;
use crate::api::pb;
use crate::engine::MAX_MEMORIES;
use crate::memory::{
    ConsolidateReport, MemoryFilter, MemoryItem, MemoryUpdate, NewMemory, RecallHit, RecallQuery,
};

wire! {
    NewMemory <=> pb::RememberRequest {
        content, memory_type: memory_type, importance: importance, project: trimmed,
        session: trimmed, tags, about,
    }
    // A client does not say where a memory came from: it did.
    from_wire(_m) { origin: None }
}

wire! {
    MemoryItem <=> pb::MemoryItem {
        id, version, content, memory_type: memory_type, importance, project: text,
        session: text, tags, about, origin: text, change: change, reason: text,
        created_at: time, updated_at: time, forgotten_at: maybe_time,
        decay => { last_access, weight }: decay, recalls,
    }
}

wire! {
    RecallQuery <=> pb::RecallRequest {
        query, limit: count(10, MAX_MEMORIES), project: trimmed,
        types = memory_types: memory_types, tags,
    }
}

wire! {
    RecallHit <=> pb::RecalledMemory { memory: present, relevance, weight, score }
}

/// An `Update` request, checked.
pub struct UpdateQuery {
    pub id: String,
    pub update: MemoryUpdate,
}

wire! {
    UpdateQuery <=> pb::UpdateMemoryRequest {
        id, update => { content, memory_type, importance, tags, set_tags, reason }: memory_update,
    }
}

/// A `Forget` request.
pub struct ForgetQuery {
    pub id: String,
    pub reason: Option<String>,
}

wire! {
    ForgetQuery <=> pb::ForgetRequest { id, reason: trimmed }
}

/// A `ListMemories` request, checked.
pub struct MemoryListQuery {
    pub filter: MemoryFilter,
    pub limit: usize,
    pub offset: usize,
}

wire! {
    MemoryListQuery <=> pb::ListMemoriesRequest {
        filter => { project, memory_types, tags, include_forgotten }: memory_filter,
        limit: count(50, MAX_MEMORIES), offset: size32,
    }
}

wire! {
    ConsolidateReport <=> pb::ConsolidateResponse { promoted, faded, kept }
}

impl From<MemoryItem> for pb::MemoryResponse {
    fn from(memory: MemoryItem) -> Self {
        pb::MemoryResponse {
            memory: Some(memory.into()),
        }
    }
}

impl TryFrom<pb::MemoryResponse> for MemoryItem {
    type Error = tonic::Status;

    fn try_from(r: pb::MemoryResponse) -> Result<Self, Self::Error> {
        r.memory
            .ok_or_else(|| super::bad("memory missing"))?
            .try_into()
    }
}

impl From<Vec<RecallHit>> for pb::RecallResponse {
    fn from(hits: Vec<RecallHit>) -> Self {
        pb::RecallResponse {
            memories: hits.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<(Vec<MemoryItem>, u64)> for pb::ListMemoriesResponse {
    fn from((memories, total): (Vec<MemoryItem>, u64)) -> Self {
        pb::ListMemoriesResponse {
            memories: memories.into_iter().map(Into::into).collect(),
            total,
        }
    }
}

impl From<Vec<MemoryItem>> for pb::MemoryHistoryResponse {
    fn from(versions: Vec<MemoryItem>) -> Self {
        pb::MemoryHistoryResponse {
            versions: versions.into_iter().map(Into::into).collect(),
        }
    }
}
