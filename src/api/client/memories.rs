//! The memory service's calls, in domain types.

use super::RemoteClient;
use crate::api::convert::memory::{ForgetQuery, MemoryListQuery, UpdateQuery};
use crate::api::pb;
use crate::memory::{
    ConsolidateReport, MemoryFilter, MemoryItem, MemoryUpdate, NewMemory, RecallHit, RecallQuery,
};

impl RemoteClient {
    /// Has the server remember `new`.
    pub async fn remember(&mut self, new: &NewMemory) -> Result<MemoryItem, tonic::Status> {
        let request = pb::RememberRequest::from(new.clone());
        self.memory.remember(request).await?.into_inner().try_into()
    }

    /// The server's memories that best match `query`.
    pub async fn recall(&mut self, query: &RecallQuery) -> Result<Vec<RecallHit>, tonic::Status> {
        let request = pb::RecallRequest::from(query.clone());
        let pb::RecallResponse { memories } = self.memory.recall(request).await?.into_inner();
        memories.into_iter().map(RecallHit::try_from).collect()
    }

    /// A new version of memory `id`.
    pub async fn update_memory(
        &mut self,
        id: &str,
        update: &MemoryUpdate,
    ) -> Result<MemoryItem, tonic::Status> {
        let request = pb::UpdateMemoryRequest::from(UpdateQuery {
            id: id.to_owned(),
            update: update.clone(),
        });
        self.memory.update(request).await?.into_inner().try_into()
    }

    /// Forgets memory `id`.
    pub async fn forget_memory(
        &mut self,
        id: &str,
        reason: Option<String>,
    ) -> Result<MemoryItem, tonic::Status> {
        let request = pb::ForgetRequest::from(ForgetQuery {
            id: id.to_owned(),
            reason,
        });
        self.memory.forget(request).await?.into_inner().try_into()
    }

    /// A page of the server's memories and how many the filter keeps.
    pub async fn list_memories(
        &mut self,
        filter: &MemoryFilter,
        limit: usize,
        offset: usize,
    ) -> Result<(Vec<MemoryItem>, u64), tonic::Status> {
        let request = pb::ListMemoriesRequest::from(MemoryListQuery {
            filter: filter.clone(),
            limit,
            offset,
        });
        let pb::ListMemoriesResponse { memories, total } =
            self.memory.list_memories(request).await?.into_inner();
        let memories = memories
            .into_iter()
            .map(MemoryItem::try_from)
            .collect::<Result<_, _>>()?;
        Ok((memories, total))
    }

    /// Every version of memory `id`, oldest first.
    pub async fn memory_history(&mut self, id: &str) -> Result<Vec<MemoryItem>, tonic::Status> {
        let request = pb::MemoryHistoryRequest { id: id.to_owned() };
        let pb::MemoryHistoryResponse { versions } =
            self.memory.memory_history(request).await?.into_inner();
        versions.into_iter().map(MemoryItem::try_from).collect()
    }

    /// Has the server consolidate its memories.
    pub async fn consolidate_memories(&mut self) -> Result<ConsolidateReport, tonic::Status> {
        self.memory
            .consolidate(pb::ConsolidateRequest {})
            .await?
            .into_inner()
            .try_into()
    }
}
