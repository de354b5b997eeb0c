//! Thin adapters: request → domain query → engine (on the blocking pool) → response.

use std::sync::Arc;

use tonic::transport::server::Router;
use tonic::{Request, Response, Status};

use super::pb;
use super::requests::{
    FindQuery, GetQuery, NeighborsQuery, PathQuery, RelatedQuery, TouchedQuery, WalkQuery,
};
use crate::engine::Engine;

/// Adds eywa's `eywa.v1` services to a server.
pub fn add_services<L>(router: Router<L>, engine: Arc<Engine>) -> Router<L> {
    router
        .add_service(pb::retrieval_server::RetrievalServer::new(Retrieval(
            engine.clone(),
        )))
        .add_service(pb::graph_server::GraphServer::new(Graph(engine.clone())))
        .add_service(pb::ingest_server::IngestServer::new(Ingest(engine.clone())))
        .add_service(pb::sessions_server::SessionsServer::new(Sessions(
            engine.clone(),
        )))
        .add_service(pb::admin_server::AdminServer::new(Admin(engine)))
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
        Ok(Response::new((*outcome).clone().into()))
    }

    async fn retrieve_context(
        &self,
        request: Request<pb::RetrieveContextRequest>,
    ) -> Result<Response<pb::RetrieveContextResponse>, Status> {
        let pb::RetrieveContextRequest {
            sessions,
            mode,
            max_tokens,
            dry_run,
        } = request.into_inner();
        let mode = crate::engine::ContextMode::parse(&mode)?;
        let max_tokens = super::requests::count(
            "max_tokens",
            max_tokens,
            crate::engine::DEFAULT_MAX_TOKENS,
            i32::MAX as usize,
        )?;
        let c = blocking(&self.0, move |e| {
            e.retrieve_context(&sessions, mode, max_tokens, dry_run)
        })
        .await?;
        let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        Ok(Response::new(pb::RetrieveContextResponse {
            budget: n(c.budget),
            used: n(c.used),
            remaining: n(c.budget.saturating_sub(c.used)),
            warnings: c.warnings,
            text: c.text,
            sessions: c
                .sessions
                .into_iter()
                .map(|s| pb::ContextSession {
                    session_id: s.session_id,
                    title: s.title,
                    project: s.project,
                    age_days: s.age_days,
                    staleness: s.staleness.unwrap_or_default(),
                    dropped: s.dropped,
                    tokens: n(s.tokens),
                    items: s
                        .items
                        .into_iter()
                        .map(|i| pb::ContextItem {
                            r#type: i.kind,
                            tokens: n(i.tokens),
                            included: i.included,
                            text: i.text,
                        })
                        .collect(),
                })
                .collect(),
        }))
    }

    async fn search(
        &self,
        request: Request<pb::SearchRequest>,
    ) -> Result<Response<pb::SearchResponse>, Status> {
        let search: crate::engine::SearchRequest = request.into_inner().try_into()?;
        let results = blocking(&self.0, move |e| e.search(&search)).await?;
        let now = crate::model::Timestamp::now();
        Ok(Response::new(pb::SearchResponse {
            hits: results
                .hits
                .into_iter()
                .map(|h| super::convert::search_hit(h, now))
                .collect(),
            mode: results.mode.as_str().to_owned(),
            notices: results.notices,
        }))
    }
}

struct Graph(Arc<Engine>);

#[tonic::async_trait]
impl pb::graph_server::Graph for Graph {
    async fn get_node(
        &self,
        request: Request<pb::GetNodeRequest>,
    ) -> Result<Response<pb::GetNodeResponse>, Status> {
        let pb::GetNodeRequest { node } = request.into_inner();
        let (node, handoff) = blocking(&self.0, move |e| {
            let node = e.resolve_one(&node)?;
            let handoff = match node.episode() {
                Some(ep) => e.graph().handoff(&ep.session_id)?,
                None => None,
            };
            Ok((node, handoff))
        })
        .await?;
        Ok(Response::new(pb::GetNodeResponse {
            node: Some((*node).clone().into()),
            handoff: handoff.map(Into::into),
        }))
    }

    async fn find_entities(
        &self,
        request: Request<pb::FindEntitiesRequest>,
    ) -> Result<Response<pb::FindEntitiesResponse>, Status> {
        let q: FindQuery = request.into_inner().try_into()?;
        let nodes = blocking(&self.0, move |e| {
            e.find_entities(&q.name, Some(&q.entity_type), q.prefix, q.limit)
        })
        .await?;
        Ok(Response::new(pb::FindEntitiesResponse {
            entities: nodes.into_iter().map(|n| (*n).clone().into()).collect(),
        }))
    }

    async fn neighbors(
        &self,
        request: Request<pb::NeighborsRequest>,
    ) -> Result<Response<pb::NeighborsResponse>, Status> {
        let q: NeighborsQuery = request.into_inner().try_into()?;
        let (node, neighbors) =
            blocking(&self.0, move |e| e.neighbors(&q.node, &q.filter, q.limit)).await?;
        Ok(Response::new(pb::NeighborsResponse {
            node: Some((*node).clone().into()),
            neighbors: neighbors.into_iter().map(Into::into).collect(),
        }))
    }

    async fn what_touched(
        &self,
        request: Request<pb::WhatTouchedRequest>,
    ) -> Result<Response<pb::WhatTouchedResponse>, Status> {
        let q: TouchedQuery = request.into_inner().try_into()?;
        let touches = blocking(&self.0, move |e| {
            e.what_touched(&q.entity, &q.filter, q.limit)
        })
        .await?;
        Ok(Response::new(pb::WhatTouchedResponse {
            touches: touches.into_iter().map(Into::into).collect(),
        }))
    }

    async fn walk(
        &self,
        request: Request<pb::WalkRequest>,
    ) -> Result<Response<pb::WalkResponse>, Status> {
        let q: WalkQuery = request.into_inner().try_into()?;
        let walk = blocking(&self.0, move |e| {
            e.walk(&q.node, q.depth, q.max_nodes, &q.filter)
        })
        .await?;
        Ok(Response::new(walk.into()))
    }

    async fn path(
        &self,
        request: Request<pb::PathRequest>,
    ) -> Result<Response<pb::PathResponse>, Status> {
        let q: PathQuery = request.into_inner().try_into()?;
        let path = blocking(&self.0, move |e| {
            e.path(&q.from, &q.to, q.max_depth, &q.filter)
        })
        .await?;
        Ok(Response::new(path.into()))
    }

    async fn related(
        &self,
        request: Request<pb::RelatedRequest>,
    ) -> Result<Response<pb::RelatedResponse>, Status> {
        let q: RelatedQuery = request.into_inner().try_into()?;
        let related = blocking(&self.0, move |e| e.related(&q.session, q.limit)).await?;
        Ok(Response::new(pb::RelatedResponse {
            related: related.into_iter().map(Into::into).collect(),
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

    async fn import(
        &self,
        request: Request<pb::ImportRequest>,
    ) -> Result<Response<pb::ImportResponse>, Status> {
        let pb::ImportRequest { path } = request.into_inner();
        if path.trim().is_empty() {
            return Err(Status::invalid_argument(
                "path: give the Eywa folder to import",
            ));
        }
        let report = blocking(&self.0, move |e| e.import_eywa(std::path::Path::new(&path))).await?;
        Ok(Response::new(report.into()))
    }

    async fn embed(
        &self,
        request: Request<pb::EmbedRequest>,
    ) -> Result<Response<pb::EmbedResponse>, Status> {
        let pb::EmbedRequest {} = request.into_inner();
        let report = blocking(&self.0, |e| e.embed_pending(&mut |_, _| {})).await?;
        Ok(Response::new(report.into()))
    }
}

struct Sessions(Arc<Engine>);

/// Bytes of a session part by default, and at most: under the 4 MiB a gRPC client
/// takes by default.
const PART_BYTES: usize = 1 << 20;
const MAX_PART_BYTES: usize = 3 << 20;

/// A request's `max_bytes`: 0 for the default.
fn part_bytes(max_bytes: u32) -> Result<usize, Status> {
    match max_bytes as usize {
        0 => Ok(PART_BYTES),
        n if n <= MAX_PART_BYTES => Ok(n.max(1)),
        n => Err(Status::invalid_argument(format!(
            "max_bytes {n} is over the maximum of {MAX_PART_BYTES}"
        ))),
    }
}

#[tonic::async_trait]
impl pb::sessions_server::Sessions for Sessions {
    async fn get_session(
        &self,
        request: Request<pb::GetSessionRequest>,
    ) -> Result<Response<pb::GetSessionResponse>, Status> {
        let pb::GetSessionRequest {
            session,
            max_bytes,
            from_message,
            from_offset,
        } = request.into_inner();
        let max_bytes = part_bytes(max_bytes)?;
        let session = blocking(&self.0, move |e| e.session(&session)).await?;
        let from = super::convert::SessionCursor {
            message: from_message as usize,
            offset: usize::try_from(from_offset).unwrap_or(usize::MAX),
        };
        Ok(Response::new(super::convert::session_part(
            session, from, max_bytes,
        )?))
    }

    async fn list_sessions(
        &self,
        request: Request<pb::ListSessionsRequest>,
    ) -> Result<Response<pb::ListSessionsResponse>, Status> {
        let pb::ListSessionsRequest {
            workspace,
            limit,
            offset,
        } = request.into_inner();
        let limit = super::requests::count("limit", limit, 50, crate::engine::MAX_PAGE)?;
        let page = blocking(&self.0, move |e| {
            let workspace = (!workspace.trim().is_empty()).then_some(workspace);
            e.list_sessions(workspace.as_deref(), limit, offset as usize)
        })
        .await?;
        Ok(Response::new(super::convert::session_page(page)))
    }

    async fn export_session(
        &self,
        request: Request<pb::ExportSessionRequest>,
    ) -> Result<Response<pb::ExportSessionResponse>, Status> {
        let pb::ExportSessionRequest {
            session,
            format,
            offset,
            max_bytes,
        } = request.into_inner();
        let max_bytes = part_bytes(max_bytes)?;
        let format = if format.trim().is_empty() {
            crate::engine::ExportFormat::Markdown
        } else {
            crate::engine::ExportFormat::parse(&format)?
        };
        let mut content = blocking(&self.0, move |e| e.export_session(&session, format)).await?;
        let total = content.len();
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        if start > total || !content.is_char_boundary(start) {
            return Err(Status::invalid_argument(format!(
                "offset {offset} is not a character boundary of the {total}-byte export"
            )));
        }
        let mut end = (start + max_bytes).min(total);
        while !content.is_char_boundary(end) {
            end -= 1;
        }
        content.truncate(end);
        content.drain(..start);
        Ok(Response::new(pb::ExportSessionResponse {
            format: match format {
                crate::engine::ExportFormat::Markdown => "markdown",
                crate::engine::ExportFormat::Json => "json",
            }
            .to_owned(),
            content,
            total_bytes: total as u64,
            has_more: end < total,
            next_offset: end as u64,
        }))
    }

    async fn migrate_sessions(
        &self,
        request: Request<pb::MigrateSessionsRequest>,
    ) -> Result<Response<pb::MigrateSessionsResponse>, Status> {
        let pb::MigrateSessionsRequest {
            sessions,
            destination,
            mode,
        } = request.into_inner();
        let mode = crate::engine::MigrateMode::parse(&mode)?;
        let r = blocking(&self.0, move |e| {
            e.migrate_sessions(&sessions, &destination, mode)
        })
        .await?;
        Ok(Response::new(pb::MigrateSessionsResponse {
            success_count: r.success_count,
            failed_count: r.failed_count,
            errors: r
                .errors
                .into_iter()
                .map(|e| pb::MigrateError {
                    session: e.session,
                    message: e.message,
                })
                .collect(),
            written: r.written,
            target_dir: r.target_dir,
            created_dir: r.created_dir,
        }))
    }

    async fn search_sessions(
        &self,
        request: Request<pb::SearchSessionsRequest>,
    ) -> Result<Response<pb::SearchSessionsResponse>, Status> {
        let pb::SearchSessionsRequest {
            pattern,
            regex,
            case_sensitive,
            workspace,
            context,
            limit,
            offset,
        } = request.into_inner();
        use super::requests::{bounded, count};
        let search = crate::engine::SessionSearch {
            pattern,
            regex,
            case_sensitive,
            workspace: (!workspace.trim().is_empty()).then_some(workspace),
            context: bounded("context", context, 2, 0, crate::engine::MAX_CONTEXT_LINES)?,
            limit: count("limit", limit, 50, crate::engine::MAX_MATCHES)?,
            offset: offset as usize,
        };
        let page = blocking(&self.0, move |e| e.search_sessions(&search)).await?;
        Ok(Response::new(pb::SearchSessionsResponse {
            pagination: Some(super::convert::pagination(
                page.total,
                page.limit,
                page.offset,
                page.has_more,
            )),
            matches: page
                .matches
                .into_iter()
                .map(|m| pb::SearchMatch {
                    session_id: m.session_id,
                    message_uuid: m.message_uuid,
                    message_type: m.message_type,
                    r#match: m.line,
                    context: m.context,
                    line_number: m.line_number,
                })
                .collect(),
        }))
    }
}

struct Admin(Arc<Engine>);

#[tonic::async_trait]
impl pb::admin_server::Admin for Admin {
    async fn stats(
        &self,
        request: Request<pb::StatsRequest>,
    ) -> Result<Response<pb::StatsResponse>, Status> {
        let pb::StatsRequest {} = request.into_inner();
        let stats = blocking(&self.0, Engine::stats).await?;
        Ok(Response::new(stats.into()))
    }

    async fn check(
        &self,
        request: Request<pb::CheckRequest>,
    ) -> Result<Response<pb::CheckResponse>, Status> {
        let pb::CheckRequest {} = request.into_inner();
        let r = blocking(&self.0, |e| e.check(false)).await?;
        Ok(Response::new(pb::CheckResponse {
            graph: r.graph,
            archive: r.archive,
            semantic: r.semantic,
            text: r.text,
            problems: r.problems,
            blobs_checked: r.blobs_checked,
            seconds: r.seconds,
        }))
    }

    async fn backup(
        &self,
        request: Request<pb::BackupRequest>,
    ) -> Result<Response<pb::BackupResponse>, Status> {
        let pb::BackupRequest { directory } = request.into_inner();
        let r = blocking(&self.0, move |e| e.backup(std::path::Path::new(&directory))).await?;
        Ok(Response::new(pb::BackupResponse {
            directory: r.dir,
            sessions: r.manifest.sessions,
            episodes: r.manifest.episodes,
            bytes: r.manifest.bytes,
            created: r.manifest.created,
            seconds: r.seconds,
        }))
    }

    async fn model_status(
        &self,
        request: Request<pb::ModelStatusRequest>,
    ) -> Result<Response<pb::ModelStatusResponse>, Status> {
        let pb::ModelStatusRequest {} = request.into_inner();
        let status = blocking(&self.0, |e| {
            let dir = e.model_dir().ok_or_else(|| {
                crate::Error::FailedPrecondition(
                    "this server has no data directory for a model".into(),
                )
            })?;
            crate::embed::ModelStatus::of(&dir)
        })
        .await?;
        Ok(Response::new(status.into()))
    }
}
