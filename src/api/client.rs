//! A client of a running eywa server, speaking domain types. The CLI uses it when the
//! store is locked by `eywa serve`.

use tonic::transport::Channel;

use super::pb;
use crate::engine::{GetOutcome, IngestReport};
use crate::retrieve::GetOptions;

#[derive(Debug, Clone)]
pub struct RemoteClient {
    retrieval: pb::retrieval_client::RetrievalClient<Channel>,
    ingest: pb::ingest_client::IngestClient<Channel>,
}

impl RemoteClient {
    /// Connects to `addr` (`HOST:PORT`).
    pub async fn connect(addr: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        let channel = Channel::from_shared(format!("http://{addr}"))?
            .connect()
            .await?;
        Ok(RemoteClient {
            retrieval: pb::retrieval_client::RetrievalClient::new(channel.clone()),
            ingest: pb::ingest_client::IngestClient::new(channel),
        })
    }

    pub async fn get_handoffs(
        &mut self,
        query: &str,
        options: &GetOptions,
    ) -> Result<GetOutcome, tonic::Status> {
        let request = pb::GetHandoffsRequest {
            query: query.to_owned(),
            days_back: Some(i32::try_from(options.days_back).unwrap_or(i32::MAX)),
            limit: Some(i32::try_from(options.limit).unwrap_or(i32::MAX)),
            projects: options.projects.clone(),
        };
        let response = self.retrieval.get_handoffs(request).await?.into_inner();
        response.try_into()
    }

    /// Asks the server to ingest its Claude dir.
    pub async fn ingest(&mut self) -> Result<IngestReport, tonic::Status> {
        let response = self.ingest.ingest(pb::IngestRequest {}).await?.into_inner();
        Ok(response.into())
    }
}
