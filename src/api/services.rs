//! Thin adapters: request → domain query → engine (on the blocking pool) → response.

use std::sync::Arc;
use std::time::Duration;

use tonic::transport::server::Router;
use tonic::{Request, Response, Status};

use super::convert::documents::{AddQuery, DocumentListQuery, DocumentQuery, FollowQuery};
use super::convert::graph::{
    FindQuery, NodeQuery, PathQuery, RelatedQuery, TouchedQuery, WalkQuery,
};
use super::convert::ingest::ImportQuery;
use super::convert::memory::{ForgetQuery, MemoryListQuery, UpdateQuery};
use super::convert::retrieval::{ChunkQuery, ContextQuery, GetQuery};
use super::convert::sessions::{
    ExportQuery, ListQuery, MigrateQuery, PartQuery, export_part, session_part,
};
use super::pb;
use crate::cancel::Cancel;
use crate::engine::{Engine, SearchRequest, SessionSearch};
use crate::memory::{NewMemory, RecallQuery};

/// What a handler answers.
type Answer<T> = Result<Response<T>, Status>;

/// Adds eywa's `eywa.v1` services to a server. Once `stopping` is cancelled, the work of
/// every request still running ends at its next checkpoint (see [`crate::cancel`]).
pub fn add_services<L>(router: Router<L>, engine: Arc<Engine>, stopping: Cancel) -> Router<L> {
    let scans = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    let services = Services(
        engine,
        stopping,
        Arc::new(tokio::sync::Semaphore::new(scans)),
    );
    router
        .add_service(pb::retrieval_server::RetrievalServer::new(services.clone()))
        .add_service(pb::graph_server::GraphServer::new(services.clone()))
        .add_service(pb::ingest_server::IngestServer::new(services.clone()))
        .add_service(pb::sessions_server::SessionsServer::new(services.clone()))
        .add_service(pb::admin_server::AdminServer::new(services.clone()))
        .add_service(pb::memory_server::MemoryServer::new(services.clone()))
        .add_service(pb::documents_server::DocumentsServer::new(services))
}

/// Every service of `eywa.v1`, over one engine; the token the server cancels when it
/// stops; and the turns of scans (one a core).
#[derive(Clone)]
struct Services(Arc<Engine>, Cancel, Arc<tokio::sync::Semaphore>);

/// Calls that read every message of every session: they take turns, one a core, so
/// that however many are asked at once, other calls (a client's write, a lookup) still
/// find a core.
const SCANS: [&str; 1] = ["search_sessions"];

/// Calls that write what a client gives: they go ahead of reads and of background work
/// (see [`crate::priority`]), each on a thread of its own at the normal priority.
const WRITES: [&str; 5] = [
    "remember",
    "update",
    "forget",
    "add_document",
    "ingest_session",
];

/// Runs a synchronous engine call (file I/O, CPU work) off the async workers, its result
/// as the wire answer: a write on a thread of its own, a read on the blocking pool a step
/// below it in priority; scans take turns (see `SCANS`). The call is cancelled (at its
/// next checkpoint) when the server stops, or when this answer is no longer awaited: the
/// caller's deadline passed, or it hung up.
async fn answer<T, R, E, F>(services: &Services, method: &str, f: F) -> Answer<R>
where
    T: Send + 'static,
    R: From<T>,
    E: Into<Status> + Send + 'static,
    F: FnOnce(&Engine) -> Result<T, E> + Send + 'static,
{
    /// Cancels the request's work when its answer is dropped, whether or not it is done.
    struct GiveUp(Cancel);
    impl Drop for GiveUp {
        fn drop(&mut self) {
            self.0.cancel();
        }
    }
    let Services(engine, stopping, readers) = services.clone();
    let write = WRITES.contains(&method);
    let _turn = if !SCANS.contains(&method) {
        None
    } else {
        Some(
            readers
                .acquire_owned()
                .await
                .map_err(|_| Status::unavailable("the server is stopping"))?,
        )
    };
    let request = GiveUp(Cancel::new());
    let cancel = request.0.clone();
    let work = move || stopping.within(|| cancel.within(|| f(&engine)));
    let reply = if write {
        on_write_thread(work).await?
    } else {
        tokio::task::spawn_blocking(move || {
            crate::priority::lower_to(crate::priority::READS);
            work()
        })
        .await
        .map_err(failed_task)?
    }
    .map_err(Into::into)?;
    drop(request);
    Ok(Response::new(reply.into()))
}

/// Runs a client's write on a thread of its own, at the priority the server started with:
/// the blocking pool's threads may have been lowered by the reads they ran.
async fn on_write_thread<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Status> {
    let (done, answer) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("eywa-write".into())
        .spawn(move || {
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            // The caller may have gone (its deadline passed): the write stands all the same.
            let _ = done.send(ran);
        })
        .map_err(|e| Status::unavailable(format!("cannot start a thread for the write: {e}")))?;
    match answer.await {
        Ok(Ok(reply)) => Ok(reply),
        Ok(Err(panic)) => Err(failed_write(&panic)),
        Err(_) => Err(failed_write(&"the write's thread ended without an answer")),
    }
}

/// A write whose thread panicked: as [`failed_task`] says of a pool task.
fn failed_write(panic: &(dyn std::any::Any + Send)) -> Status {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned());
    let why = crate::error::status_message(&what);
    tracing::error!(error = %why, "an engine write failed");
    Status::internal("the server failed on this request (a bug: its log says where)")
}

/// An engine task that panicked: a bug, never the caller's input. The status says so and
/// nothing of the panic (which may quote the request); the log has it, bounded.
fn failed_task(e: tokio::task::JoinError) -> Status {
    let why = crate::error::status_message(&e.to_string());
    tracing::error!(error = %why, "an engine task failed");
    Status::internal("the server failed on this request (a bug: its log says where)")
}

/// A service's handlers, one row an RPC: the request message, the answer message, and the
/// engine call. A request with a query type is read into it (checked); one without is
/// taken apart, its fields named. The call runs off the async workers.
macro_rules! serve {
    ($service:path { $($rows:tt)* }) => {
        serve!(@rows $service [] $($rows)*);
    };
    // Every row written: the impl, whole (the attribute must see every method).
    (@rows $service:path [$($done:tt)*]) => {
        #[tonic::async_trait]
        impl $service for Services {
            $($done)*
        }
    };
    (@rows $service:path [$($done:tt)*] $method:ident($request:ident) -> $reply:ident:
        |$e:ident, $q:ident: $query:ty| $call:expr; $($rest:tt)*) => {
        serve!(@rows $service [$($done)*
            async fn $method(&self, r: Request<pb::$request>) -> Answer<pb::$reply> {
                let $q: $query = r.into_inner().try_into()?;
                answer(self, stringify!($method), move |$e: &Engine| $call).await
            }
        ] $($rest)*);
    };
    (@rows $service:path [$($done:tt)*] $method:ident($request:ident) -> $reply:ident:
        within $handler:ident; $($rest:tt)*) => {
        serve!(@rows $service [$($done)*
            async fn $method(&self, r: Request<pb::$request>) -> Answer<pb::$reply> {
                $handler(self, r.into_inner()).await
            }
        ] $($rest)*);
    };
    (@rows $service:path [$($done:tt)*] $method:ident($request:ident { $($field:ident),* })
        -> $reply:ident: |$e:ident| $call:expr; $($rest:tt)*) => {
        serve!(@rows $service [$($done)*
            async fn $method(&self, r: Request<pb::$request>) -> Answer<pb::$reply> {
                let pb::$request { $($field),* } = r.into_inner();
                answer(self, stringify!($method), move |$e: &Engine| $call).await
            }
        ] $($rest)*);
    };
}

serve!(pb::retrieval_server::Retrieval {
    get_handoffs(GetHandoffsRequest) -> GetHandoffsResponse:
        |e, q: GetQuery| e.get_handoffs(&q.query, &q.options).map(|o| (*o).clone());
    retrieve_context(RetrieveContextRequest) -> RetrieveContextResponse:
        |e, q: ContextQuery| e.retrieve_context(&q.sessions, q.mode, q.max_tokens, q.dry_run);
    search(SearchRequest) -> SearchResponse: |e, q: SearchRequest| e.search(&q);
    get_chunk(GetChunkRequest) -> GetChunkResponse: |e, q: ChunkQuery| e.chunk(&q.chunk_id, q.neighbors);
});

serve!(pb::graph_server::Graph {
    get_node(GetNodeRequest { node }) -> GetNodeResponse: |e| node_and_handoff(e, &node);
    find_entities(FindEntitiesRequest) -> FindEntitiesResponse:
        |e, q: FindQuery| e.find_entities(&q.name, Some(&q.entity_type), q.prefix, q.limit);
    neighbors(NeighborsRequest) -> NeighborsResponse:
        |e, q: NodeQuery| e.neighbors(&q.node, &q.filter, q.limit);
    what_touched(WhatTouchedRequest) -> WhatTouchedResponse:
        |e, q: TouchedQuery| e.what_touched_by(&q.node, &q.filter, &q.authors, q.limit);
    walk(WalkRequest) -> WalkResponse:
        |e, q: WalkQuery| e.walk(&q.node, q.depth, q.max_nodes, &q.filter);
    path(PathRequest) -> PathResponse: |e, q: PathQuery| e.path(&q.from, &q.to, q.max_depth, &q.filter);
    related(RelatedRequest) -> RelatedResponse: |e, q: RelatedQuery| e.related(&q.session, q.limit);
});

serve!(pb::ingest_server::Ingest {
    ingest(IngestRequest {}) -> IngestResponse: |e| e.ingest();
    import(ImportRequest) -> ImportResponse: |e, q: ImportQuery| e.import_eywa(&q.path);
    embed(EmbedRequest {}) -> EmbedResponse: |e| e.embed_pending(&mut |_, _| {});
    ingest_session(IngestSessionRequest) -> IngestSessionResponse: within ingest_session_within;
});

/// `IngestSession`: the read runs on a write's thread (see `WRITES`); a caller that gave `wait_ms` gets
/// `pending` once that passed, and the read goes on (a hook never waits behind a long
/// ingest).
async fn ingest_session_within(
    services: &Services,
    request: pb::IngestSessionRequest,
) -> Answer<pb::IngestSessionResponse> {
    let pb::IngestSessionRequest { session, wait_ms } = request;
    let Services(engine, stopping, _) = services.clone();
    // Not the caller's to cancel: the read goes on after a `pending` answer, until done
    // or until the server stops.
    let read = on_write_thread(move || stopping.within(|| engine.ingest_session(&session)));
    let done = match wait_ms {
        0 => read.await,
        ms => match tokio::time::timeout(Duration::from_millis(u64::from(ms)), read).await {
            Ok(done) => done,
            Err(_) => {
                return Ok(Response::new(pb::IngestSessionResponse {
                    pending: true,
                    ..pb::IngestSessionResponse::default()
                }));
            }
        },
    };
    let reply = done?.map_err(Status::from)?;
    Ok(Response::new(reply.into()))
}

serve!(pb::sessions_server::Sessions {
    get_session(GetSessionRequest) -> GetSessionResponse:
        |e, q: PartQuery| {
            session_part(e.session_with(&q.session, q.thinking)?, q.from, q.max_bytes)
        };
    list_sessions(ListSessionsRequest) -> ListSessionsResponse:
        |e, q: ListQuery| {
            e.list_sessions_of(q.workspace.as_deref(), &q.authors, q.limit, q.offset, q.order)
        };
    export_session(ExportSessionRequest) -> ExportSessionResponse: |e, q: ExportQuery| {
        let content = e.export_session_with(&q.session, q.format, q.thinking)?;
        export_part(content, q.format, q.offset, q.max_bytes)
    };
    migrate_sessions(MigrateSessionsRequest) -> MigrateSessionsResponse:
        |e, q: MigrateQuery| match &q.workspace {
            Some(_) if !q.sessions.is_empty() => Err(crate::Error::InvalidArgument(
                "give sessions or a workspace, not both".into(),
            )),
            Some(workspace) => e.migrate_workspace(workspace, &q.destination, q.mode),
            None => e.migrate_sessions(&q.sessions, &q.destination, q.mode),
        };
    search_sessions(SearchSessionsRequest) -> SearchSessionsResponse:
        |e, q: SessionSearch| e.search_sessions(&q);
});

serve!(pb::admin_server::Admin {
    stats(StatsRequest {}) -> StatsResponse: |e| e.stats();
    check(CheckRequest {}) -> CheckResponse: |e| e.check(false);
    backup(BackupRequest { directory }) -> BackupResponse:
        |e| e.backup(std::path::Path::new(&directory));
    model_status(ModelStatusRequest {}) -> ModelStatusResponse: |e| model_status(e);
});

serve!(pb::memory_server::Memory {
    remember(RememberRequest) -> MemoryResponse: |e, q: NewMemory| e.remember(q);
    recall(RecallRequest) -> RecallResponse: |e, q: RecallQuery| e.recall(&q);
    update(UpdateMemoryRequest) -> MemoryResponse: |e, q: UpdateQuery| e.update_memory(&q.id, &q.update);
    forget(ForgetRequest) -> MemoryResponse: |e, q: ForgetQuery| e.forget_memory(&q.id, q.reason);
    list_memories(ListMemoriesRequest) -> ListMemoriesResponse:
        |e, q: MemoryListQuery| e.list_memories(&q.filter, q.limit, q.offset);
    memory_history(MemoryHistoryRequest { id }) -> MemoryHistoryResponse: |e| e.memory_history(&id);
    consolidate(ConsolidateRequest {}) -> ConsolidateResponse: |e| e.consolidate_memories();
});

serve!(pb::documents_server::Documents {
    add_document(AddDocumentRequest) -> AddDocumentResponse: |e, q: AddQuery| {
        let paths: Vec<std::path::PathBuf> = q.paths.iter().map(std::path::PathBuf::from).collect();
        e.add_documents(&paths, q.project.as_deref())
    };
    get_document(GetDocumentRequest) -> GetDocumentResponse:
        |e, q: DocumentQuery| e.document(&q.document, q.version, q.as_of);
    list_documents(ListDocumentsRequest) -> ListDocumentsResponse:
        |e, q: DocumentListQuery| q.answer(e);
    document_history(DocumentHistoryRequest { document }) -> DocumentHistoryResponse:
        |e| e.document_history(&document);
    follow_folders(FollowFoldersRequest) -> FollowFoldersResponse: |e, q: FollowQuery| {
        let paths: Vec<std::path::PathBuf> = q.paths.iter().map(std::path::PathBuf::from).collect();
        let outcomes = match paths.is_empty() {
            true => Vec::new(),
            false => e.follow_folders(&paths, q.project.as_deref(), q.stop)?,
        };
        Ok::<_, crate::Error>(crate::engine::Followed { outcomes, folders: e.followed_folders()? })
    };
});

/// A node by reference and, for a session, its handoff.
fn node_and_handoff(
    e: &Engine,
    reference: &str,
) -> crate::Result<(Arc<crate::model::Node>, Option<crate::model::Handoff>)> {
    let node = e.resolve_one(reference)?;
    let handoff = match node.episode() {
        Some(episode) => e.graph().handoff(&episode.session_id)?,
        None => None,
    };
    Ok((node, handoff))
}

/// The embedding model installed in the server's data directory.
fn model_status(e: &Engine) -> crate::Result<crate::embed::ModelStatus> {
    let dir = e.model_dir().ok_or_else(|| {
        crate::Error::FailedPrecondition("this server has no data directory for a model".into())
    })?;
    crate::embed::ModelStatus::of(&dir)
}
