//! Thin adapters: request → domain query → engine (on the blocking pool) → response.

use std::sync::Arc;

use tonic::transport::server::Router;
use tonic::{Request, Response, Status};

use super::convert::{GetQuery, NeighborsQuery, TouchedQuery};
use super::pb;
use crate::engine::Engine;

/// Adds eywa's `eywa.v1` services to a server.
pub fn add_services(router: Router, engine: Arc<Engine>) -> Router {
    router
        .add_service(pb::retrieval_server::RetrievalServer::new(Retrieval(
            engine.clone(),
        )))
        .add_service(pb::graph_server::GraphServer::new(Graph(engine.clone())))
        .add_service(pb::ingest_server::IngestServer::new(Ingest(engine)))
}

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

struct Retrieval(Arc<Engine>);

#[tonic::async_trait]
impl pb::retrieval_server::Retrieval for Retrieval {
    async fn get_handoffs(
        &self,
        request: Request<pb::GetHandoffsRequest>,
    ) -> Result<Response<pb::GetHandoffsResponse>, Status> {
        let GetQuery { query, options } = request.into_inner().try_into()?;
        let outcome = blocking(&self.0, move |e| e.get_handoffs(&query, &options)).await?;
        Ok(Response::new(outcome.into()))
    }
}

struct Graph(Arc<Engine>);

#[tonic::async_trait]
impl pb::graph_server::Graph for Graph {
    async fn neighbors(
        &self,
        request: Request<pb::NeighborsRequest>,
    ) -> Result<Response<pb::NeighborsResponse>, Status> {
        let q: NeighborsQuery = request.into_inner().try_into()?;
        let (node, neighbors) = blocking(&self.0, move |e| {
            e.neighbors(&q.node, q.direction, Some(&q.relation), q.limit)
        })
        .await?;
        Ok(Response::new(pb::NeighborsResponse {
            node: Some(node.into()),
            neighbors: neighbors.into_iter().map(Into::into).collect(),
        }))
    }

    async fn what_touched(
        &self,
        request: Request<pb::WhatTouchedRequest>,
    ) -> Result<Response<pb::WhatTouchedResponse>, Status> {
        let q: TouchedQuery = request.into_inner().try_into()?;
        let touches = blocking(&self.0, move |e| {
            let mut touches = e.what_touched(&q.entity, q.since, q.until)?;
            touches.truncate(q.limit);
            Ok(touches)
        })
        .await?;
        Ok(Response::new(pb::WhatTouchedResponse {
            touches: touches.into_iter().map(Into::into).collect(),
        }))
    }
}

struct Ingest(Arc<Engine>);

#[tonic::async_trait]
impl pb::ingest_server::Ingest for Ingest {
    async fn ingest(
        &self,
        request: Request<pb::IngestRequest>,
    ) -> Result<Response<pb::IngestResponse>, Status> {
        let pb::IngestRequest {} = request.into_inner();
        let report = blocking(&self.0, Engine::ingest).await?;
        Ok(Response::new(report.into()))
    }
}
