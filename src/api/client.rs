//! A client of a running eywa server, speaking domain types. The CLI uses it when the
//! store is locked by `eywa serve`.

use tonic::transport::Channel;

use super::pb;
use crate::engine::{GetOutcome, IngestReport, SearchHit, SearchRequest, SearchResults, Stats};
use crate::retrieve::GetOptions;

#[derive(Debug, Clone)]
pub struct RemoteClient {
    retrieval: pb::retrieval_client::RetrievalClient<Channel>,
    ingest: pb::ingest_client::IngestClient<Channel>,
    admin: pb::admin_client::AdminClient<Channel>,
}

impl RemoteClient {
    /// Connects to `addr` (`HOST:PORT`).
    pub async fn connect(addr: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        let channel = Channel::from_shared(format!("http://{addr}"))?
            .connect()
            .await?;
        Ok(RemoteClient {
            retrieval: pb::retrieval_client::RetrievalClient::new(channel.clone()),
            ingest: pb::ingest_client::IngestClient::new(channel.clone()),
            admin: pb::admin_client::AdminClient::new(channel),
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

    /// Searches the server's text index.
    pub async fn search(
        &mut self,
        request: &SearchRequest,
    ) -> Result<SearchResults, tonic::Status> {
        let time = |t: Option<crate::model::Timestamp>| t.map(super::convert::timestamp);
        let request = pb::SearchRequest {
            query: request.query.clone(),
            types: request.kinds.clone(),
            projects: request.projects.clone(),
            since: time(request.since),
            until: time(request.until),
            limit: Some(i32::try_from(request.limit).unwrap_or(i32::MAX)),
            agent_types: request.agent_types.clone(),
            mode: request.mode.as_str().to_owned(),
            focus: request.focus.clone().unwrap_or_default(),
        };
        let response = self.retrieval.search(request).await?.into_inner();
        let mode = crate::retrieve::SearchMode::parse(&response.mode).unwrap_or_default();
        let hits = response
            .hits
            .into_iter()
            .map(|h| SearchHit {
                session_id: h.session_id,
                title: h.title,
                project: h.project,
                score: h.score as f32,
                kind: h.r#type,
                snippet: h.snippet,
                timestamp: h.timestamp.map_or(crate::model::Timestamp(0), |t| {
                    crate::model::Timestamp(t.seconds * 1000 + i64::from(t.nanos / 1_000_000))
                }),
                agent: (!h.agent.is_empty()).then_some(h.agent),
                matches: h.matches,
                signals: h.signals.map(Into::into).unwrap_or_default(),
            })
            .collect();
        Ok(SearchResults {
            hits,
            mode,
            notices: response.notices,
        })
    }

    /// Asks the server to ingest its Claude dir.
    pub async fn ingest(&mut self) -> Result<IngestReport, tonic::Status> {
        let response = self.ingest.ingest(pb::IngestRequest {}).await?.into_inner();
        Ok(response.into())
    }

    /// The server's counts, tiers, caches and embedding backlog.
    pub async fn stats(&mut self) -> Result<Stats, tonic::Status> {
        let response = self.admin.stats(pb::StatsRequest {}).await?.into_inner();
        Ok(response.into())
    }
}
