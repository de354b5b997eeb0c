//! Thin adapters: request → domain query → engine (on the blocking pool) → response.

use std::sync::Arc;

use tonic::transport::server::Router;
use tonic::{Request, Response, Status};

use super::convert::graph::{FindQuery, NodeQuery, PathQuery, RelatedQuery, WalkQuery};
use super::convert::ingest::ImportQuery;
use super::convert::retrieval::{ContextQuery, GetQuery};
use super::convert::sessions::{
    ExportQuery, ListQuery, MigrateQuery, PartQuery, export_part, session_part,
};
use super::pb;
use crate::engine::{Engine, SearchRequest, SessionSearch};

/// What a handler answers.
type Answer<T> = Result<Response<T>, Status>;

/// Adds eywa's `eywa.v1` services to a server.
pub fn add_services<L>(router: Router<L>, engine: Arc<Engine>) -> Router<L> {
    let services = Services(engine);
    router
        .add_service(pb::retrieval_server::RetrievalServer::new(services.clone()))
        .add_service(pb::graph_server::GraphServer::new(services.clone()))
        .add_service(pb::ingest_server::IngestServer::new(services.clone()))
        .add_service(pb::sessions_server::SessionsServer::new(services.clone()))
        .add_service(pb::admin_server::AdminServer::new(services))
}

/// Every service of `eywa.v1`, over one engine.
#[derive(Clone)]
struct Services(Arc<Engine>);

/// Runs a synchronous engine call (sled, file I/O) off the async workers.
async fn blocking<T, F>(engine: &Arc<Engine>, f: F) -> Result<T, Status>
where
    T: Send + 'static,
    F: FnOnce(&Engine) -> crate::Result<T> + Send + 'static,
{
    let engine = engine.clone();
    tokio::task::spawn_blocking(move || f(&engine))
        .await
        .map_err(|e| Status::internal(format!("engine task failed: {e}")))?
        .map_err(Status::from)
}

/// Runs an engine call off the async workers, its result as the wire answer.
async fn answer<T, R, F>(engine: &Arc<Engine>, f: F) -> Answer<R>
where
    T: Send + 'static,
    R: From<T>,
    F: FnOnce(&Engine) -> crate::Result<T> + Send + 'static,
{
    Ok(Response::new(blocking(engine, f).await?.into()))
}

#[tonic::async_trait]
impl pb::retrieval_server::Retrieval for Services {
    async fn get_handoffs(
        &self,
        r: Request<pb::GetHandoffsRequest>,
    ) -> Answer<pb::GetHandoffsResponse> {
        let GetQuery { query, options } = r.into_inner().try_into()?;
        let outcome = blocking(&self.0, move |e| e.get_handoffs(&query, &options)).await?;
        Ok(Response::new((*outcome).clone().into()))
    }

    async fn retrieve_context(
        &self,
        r: Request<pb::RetrieveContextRequest>,
    ) -> Answer<pb::RetrieveContextResponse> {
        let q: ContextQuery = r.into_inner().try_into()?;
        answer(&self.0, move |e| {
            e.retrieve_context(&q.sessions, q.mode, q.max_tokens, q.dry_run)
        })
        .await
    }

    async fn search(&self, r: Request<pb::SearchRequest>) -> Answer<pb::SearchResponse> {
        let search: SearchRequest = r.into_inner().try_into()?;
        let results = blocking(&self.0, move |e| e.search(&search)).await?;
        Ok(Response::new(results.into()))
    }
}

#[tonic::async_trait]
impl pb::graph_server::Graph for Services {
    async fn get_node(&self, r: Request<pb::GetNodeRequest>) -> Answer<pb::GetNodeResponse> {
        let pb::GetNodeRequest { node } = r.into_inner();
        answer(&self.0, move |e| {
            let node = e.resolve_one(&node)?;
            let handoff = match node.episode() {
                Some(ep) => e.graph().handoff(&ep.session_id)?,
                None => None,
            };
            Ok((node, handoff))
        })
        .await
    }

    async fn find_entities(
        &self,
        r: Request<pb::FindEntitiesRequest>,
    ) -> Answer<pb::FindEntitiesResponse> {
        let q: FindQuery = r.into_inner().try_into()?;
        answer(&self.0, move |e| {
            e.find_entities(&q.name, Some(&q.entity_type), q.prefix, q.limit)
        })
        .await
    }

    async fn neighbors(&self, r: Request<pb::NeighborsRequest>) -> Answer<pb::NeighborsResponse> {
        let q: NodeQuery = r.into_inner().try_into()?;
        answer(&self.0, move |e| e.neighbors(&q.node, &q.filter, q.limit)).await
    }

    async fn what_touched(
        &self,
        r: Request<pb::WhatTouchedRequest>,
    ) -> Answer<pb::WhatTouchedResponse> {
        let q: NodeQuery = r.into_inner().try_into()?;
        answer(&self.0, move |e| {
            e.what_touched(&q.node, &q.filter, q.limit)
        })
        .await
    }

    async fn walk(&self, r: Request<pb::WalkRequest>) -> Answer<pb::WalkResponse> {
        let q: WalkQuery = r.into_inner().try_into()?;
        answer(&self.0, move |e| {
            e.walk(&q.node, q.depth, q.max_nodes, &q.filter)
        })
        .await
    }

    async fn path(&self, r: Request<pb::PathRequest>) -> Answer<pb::PathResponse> {
        let q: PathQuery = r.into_inner().try_into()?;
        answer(&self.0, move |e| {
            e.path(&q.from, &q.to, q.max_depth, &q.filter)
        })
        .await
    }

    async fn related(&self, r: Request<pb::RelatedRequest>) -> Answer<pb::RelatedResponse> {
        let q: RelatedQuery = r.into_inner().try_into()?;
        answer(&self.0, move |e| e.related(&q.session, q.limit)).await
    }
}

#[tonic::async_trait]
impl pb::ingest_server::Ingest for Services {
    async fn ingest(&self, r: Request<pb::IngestRequest>) -> Answer<pb::IngestResponse> {
        let pb::IngestRequest {} = r.into_inner();
        answer(&self.0, Engine::ingest).await
    }

    async fn import(&self, r: Request<pb::ImportRequest>) -> Answer<pb::ImportResponse> {
        let ImportQuery { path } = r.into_inner().try_into()?;
        answer(&self.0, move |e| e.import_eywa(&path)).await
    }

    async fn embed(&self, r: Request<pb::EmbedRequest>) -> Answer<pb::EmbedResponse> {
        let pb::EmbedRequest {} = r.into_inner();
        answer(&self.0, |e| e.embed_pending(&mut |_, _| {})).await
    }
}

#[tonic::async_trait]
impl pb::sessions_server::Sessions for Services {
    async fn get_session(
        &self,
        r: Request<pb::GetSessionRequest>,
    ) -> Answer<pb::GetSessionResponse> {
        let q: PartQuery = r.into_inner().try_into()?;
        let session = blocking(&self.0, move |e| e.session(&q.session)).await?;
        Ok(Response::new(session_part(session, q.from, q.max_bytes)?))
    }

    async fn list_sessions(
        &self,
        r: Request<pb::ListSessionsRequest>,
    ) -> Answer<pb::ListSessionsResponse> {
        let q: ListQuery = r.into_inner().try_into()?;
        answer(&self.0, move |e| {
            e.list_sessions(q.workspace.as_deref(), q.limit, q.offset)
        })
        .await
    }

    async fn export_session(
        &self,
        r: Request<pb::ExportSessionRequest>,
    ) -> Answer<pb::ExportSessionResponse> {
        let ExportQuery {
            session,
            format,
            offset,
            max_bytes,
        } = r.into_inner().try_into()?;
        let content = blocking(&self.0, move |e| e.export_session(&session, format)).await?;
        Ok(Response::new(export_part(
            content, format, offset, max_bytes,
        )?))
    }

    async fn migrate_sessions(
        &self,
        r: Request<pb::MigrateSessionsRequest>,
    ) -> Answer<pb::MigrateSessionsResponse> {
        let q: MigrateQuery = r.into_inner().try_into()?;
        answer(&self.0, move |e| {
            e.migrate_sessions(&q.sessions, &q.destination, q.mode)
        })
        .await
    }

    async fn search_sessions(
        &self,
        r: Request<pb::SearchSessionsRequest>,
    ) -> Answer<pb::SearchSessionsResponse> {
        let search: SessionSearch = r.into_inner().try_into()?;
        answer(&self.0, move |e| e.search_sessions(&search)).await
    }
}

#[tonic::async_trait]
impl pb::admin_server::Admin for Services {
    async fn stats(&self, r: Request<pb::StatsRequest>) -> Answer<pb::StatsResponse> {
        let pb::StatsRequest {} = r.into_inner();
        answer(&self.0, Engine::stats).await
    }

    async fn check(&self, r: Request<pb::CheckRequest>) -> Answer<pb::CheckResponse> {
        let pb::CheckRequest {} = r.into_inner();
        answer(&self.0, |e| e.check(false)).await
    }

    async fn backup(&self, r: Request<pb::BackupRequest>) -> Answer<pb::BackupResponse> {
        let pb::BackupRequest { directory } = r.into_inner();
        answer(&self.0, move |e| e.backup(std::path::Path::new(&directory))).await
    }

    async fn model_status(
        &self,
        r: Request<pb::ModelStatusRequest>,
    ) -> Answer<pb::ModelStatusResponse> {
        let pb::ModelStatusRequest {} = r.into_inner();
        answer(&self.0, |e| {
            let dir = e.model_dir().ok_or_else(|| {
                crate::Error::FailedPrecondition(
                    "this server has no data directory for a model".into(),
                )
            })?;
            crate::embed::ModelStatus::of(&dir)
        })
        .await
    }
}
