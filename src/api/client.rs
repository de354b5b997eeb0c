//! A client of a running eywa server, speaking domain types: every RPC the CLI needs, so
//! each command answers the same whether it asks a server or opens the store itself.

use tonic::transport::Channel;

mod documents;
mod memories;

use super::convert::graph::{
    FindQuery, NodeQuery, PathQuery, RelatedQuery, TouchedQuery, WalkQuery, path_from_wire,
};
use super::convert::ingest::ImportQuery;
use super::convert::model::node_from_wire;
use super::convert::retrieval::{ChunkQuery, ContextQuery, GetQuery};
use super::convert::sessions::{ExportQuery, ListQuery, MigrateQuery};
use super::pb;
use crate::embed::ModelStatus;
use crate::engine::{
    Context, ContextMode, EmbedReport, ExportFormat, GetOutcome, ImportReport, IngestReport,
    MatchPage, MigrateMode, MigrateResult, SearchRequest, SearchResults, SessionIngest,
    SessionPage, SessionSearch, Stats,
};
use crate::engine::{EdgeFilter, Neighbor, PathStep, Related, Touch, Walk};
use crate::model::{Handoff, Node};
use crate::retrieve::GetOptions;

/// A client of a running eywa server: one tonic client per service, over one channel that
/// sends the token.
#[derive(Debug, Clone)]
pub struct RemoteClient {
    retrieval: pb::retrieval_client::RetrievalClient<Authed>,
    graph: pb::graph_client::GraphClient<Authed>,
    sessions: pb::sessions_client::SessionsClient<Authed>,
    ingest: pb::ingest_client::IngestClient<Authed>,
    admin: pb::admin_client::AdminClient<Authed>,
    memory: pb::memory_client::MemoryClient<Authed>,
    documents: pb::documents_client::DocumentsClient<Authed>,
}

/// How to reach a server that takes remote callers: the certificate to trust (PEM; a
/// self-signed server's own) and the token to send.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    /// The certificate to trust (PEM); `None` connects in plaintext.
    pub tls_ca_pem: Option<Vec<u8>>,
    /// The bearer token sent with every call; `None` sends none.
    pub token: Option<String>,
}

/// A channel that sends `authorization: Bearer <token>` with every call, when it has one.
#[derive(Debug, Clone)]
pub(super) struct Authed {
    inner: Channel,
    authorization: Option<http::HeaderValue>,
}

impl tower::Service<http::Request<tonic::body::Body>> for Authed {
    type Response = http::Response<tonic::body::Body>;
    type Error = tonic::transport::Error;
    type Future = <Channel as tower::Service<http::Request<tonic::body::Body>>>::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        tower::Service::poll_ready(&mut self.inner, cx)
    }

    fn call(&mut self, mut request: http::Request<tonic::body::Body>) -> Self::Future {
        if let Some(value) = &self.authorization {
            request
                .headers_mut()
                .insert(http::header::AUTHORIZATION, value.clone());
        }
        tower::Service::call(&mut self.inner, request)
    }
}

impl RemoteClient {
    /// Connects to `addr` (`HOST:PORT`), in plaintext, without a token.
    pub async fn connect(addr: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        RemoteClient::connect_with(addr, &Connection::default()).await
    }

    /// Connects to `addr` (`HOST:PORT`), over TLS trusting `connection.tls_ca_pem` when
    /// given, sending its token when given.
    pub async fn connect_with(
        addr: &str,
        connection: &Connection,
    ) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        let channel = match &connection.tls_ca_pem {
            None => Channel::from_shared(format!("http://{addr}"))?,
            Some(ca) => {
                let host = addr
                    .rsplit_once(':')
                    .map_or(addr, |(host, _)| host)
                    .trim_start_matches('[')
                    .trim_end_matches(']');
                Channel::from_shared(format!("https://{addr}"))?.tls_config(
                    tonic::transport::ClientTlsConfig::new()
                        .ca_certificate(tonic::transport::Certificate::from_pem(ca))
                        .domain_name(host),
                )?
            }
        }
        .connect()
        .await?;
        let authorization = match &connection.token {
            Some(token) => Some(http::HeaderValue::from_str(&format!("Bearer {token}"))?),
            None => None,
        };
        let channel = Authed {
            inner: channel,
            authorization,
        };
        Ok(RemoteClient {
            retrieval: pb::retrieval_client::RetrievalClient::new(channel.clone()),
            graph: pb::graph_client::GraphClient::new(channel.clone()),
            sessions: pb::sessions_client::SessionsClient::new(channel.clone()),
            ingest: pb::ingest_client::IngestClient::new(channel.clone()),
            admin: pb::admin_client::AdminClient::new(channel.clone()),
            memory: pb::memory_client::MemoryClient::new(channel.clone()),
            documents: pb::documents_client::DocumentsClient::new(channel),
        })
    }

    /// `eywa get` on the server: the handoffs ranked for `query`.
    pub async fn get_handoffs(
        &mut self,
        query: &str,
        options: &GetOptions,
    ) -> Result<GetOutcome, tonic::Status> {
        let request = pb::GetHandoffsRequest::from(GetQuery {
            query: query.to_owned(),
            options: options.clone(),
        });
        let response = self.retrieval.get_handoffs(request).await?.into_inner();
        response.try_into()
    }

    /// Searches the server's text and vector indexes.
    pub async fn search(
        &mut self,
        request: &SearchRequest,
    ) -> Result<SearchResults, tonic::Status> {
        let request = pb::SearchRequest::from(request.clone());
        self.retrieval
            .search(request)
            .await?
            .into_inner()
            .try_into()
    }

    /// Chunk `id` whole, with up to `neighbors` of its nearest chunks in other sessions.
    pub async fn chunk(
        &mut self,
        id: &str,
        neighbors: usize,
    ) -> Result<crate::model::Chunk, tonic::Status> {
        let request = pb::GetChunkRequest::from(ChunkQuery {
            chunk_id: id.to_owned(),
            neighbors,
        });
        self.retrieval
            .get_chunk(request)
            .await?
            .into_inner()
            .try_into()
    }

    /// Context from `sessions` fitted to `max_tokens` tokens, by the server; `dry_run` gives
    /// the same accounting without the text.
    pub async fn context(
        &mut self,
        sessions: &[String],
        mode: ContextMode,
        max_tokens: usize,
        dry_run: bool,
    ) -> Result<Context, tonic::Status> {
        let request = pb::RetrieveContextRequest::from(ContextQuery {
            sessions: sessions.to_vec(),
            mode,
            max_tokens,
            dry_run,
        });
        let response = self.retrieval.retrieve_context(request).await?.into_inner();
        response.try_into()
    }

    /// A node and, for a session, its handoff.
    pub async fn node(
        &mut self,
        reference: &str,
    ) -> Result<(Node, Option<Handoff>), tonic::Status> {
        let request = pb::GetNodeRequest {
            node: reference.to_owned(),
        };
        let pb::GetNodeResponse { node, handoff } =
            self.graph.get_node(request).await?.into_inner();
        Ok((
            node_from_wire(node)?,
            handoff.map(TryInto::try_into).transpose()?,
        ))
    }

    /// Entities named `name` (or, with `prefix`, starting with it), optionally of one type, at
    /// most `limit`.
    pub async fn find_entities(
        &mut self,
        name: &str,
        entity_type: Option<&str>,
        prefix: bool,
        limit: usize,
    ) -> Result<Vec<Node>, tonic::Status> {
        let request = pb::FindEntitiesRequest::from(FindQuery {
            name: name.to_owned(),
            entity_type: entity_type.unwrap_or_default().to_owned(),
            prefix,
            limit,
        });
        let pb::FindEntitiesResponse { entities } =
            self.graph.find_entities(request).await?.into_inner();
        entities.into_iter().map(Node::try_from).collect()
    }

    /// The node `reference` names and its neighbors through edges `filter` admits, at most
    /// `limit`.
    /// A node and its neighbors along the edges `query.filter` keeps.
    pub async fn neighbors(
        &mut self,
        query: NodeQuery,
    ) -> Result<(Node, Vec<Neighbor>), tonic::Status> {
        let request = pb::NeighborsRequest::from(query);
        let pb::NeighborsResponse { node, neighbors } =
            self.graph.neighbors(request).await?.into_inner();
        Ok((
            node_from_wire(node)?,
            neighbors
                .into_iter()
                .map(Neighbor::try_from)
                .collect::<Result<_, _>>()?,
        ))
    }

    /// Episodes that touched `entity` within the filter's window, newest first, at most
    /// `limit`.
    /// The episodes that touched `query.node`, with the edges that say how.
    pub async fn what_touched(&mut self, query: TouchedQuery) -> Result<Vec<Touch>, tonic::Status> {
        let request = pb::WhatTouchedRequest::from(query);
        let pb::WhatTouchedResponse { touches } =
            self.graph.what_touched(request).await?.into_inner();
        touches.into_iter().map(Touch::try_from).collect()
    }

    /// A breadth-first walk from the node `reference` names, up to `depth` hops and
    /// `max_nodes` nodes.
    pub async fn walk(
        &mut self,
        reference: &str,
        depth: u32,
        max_nodes: usize,
        filter: &EdgeFilter,
    ) -> Result<Walk, tonic::Status> {
        let request = pb::WalkRequest::from(WalkQuery {
            node: reference.to_owned(),
            depth,
            max_nodes,
            filter: filter.clone(),
        });
        self.graph.walk(request).await?.into_inner().try_into()
    }

    /// A shortest path from `from` to `to` of at most `max_depth` edges, or `None`.
    pub async fn path(
        &mut self,
        from: &str,
        to: &str,
        max_depth: u32,
        filter: &EdgeFilter,
    ) -> Result<Option<Vec<PathStep>>, tonic::Status> {
        let request = pb::PathRequest::from(PathQuery {
            from: from.to_owned(),
            to: to.to_owned(),
            max_depth,
            filter: filter.clone(),
        });
        path_from_wire(self.graph.path(request).await?.into_inner())
    }

    /// Sessions related to `session`, most related first, at most `limit`.
    pub async fn related(
        &mut self,
        session: &str,
        limit: usize,
    ) -> Result<Vec<Related>, tonic::Status> {
        let request = pb::RelatedRequest::from(RelatedQuery {
            session: session.to_owned(),
            limit,
        });
        let pb::RelatedResponse { related } = self.graph.related(request).await?.into_inner();
        related.into_iter().map(Related::try_from).collect()
    }

    /// A page of main sessions, most recently active first; `workspace` keeps those of one
    /// project path or name.
    pub async fn list_sessions(
        &mut self,
        workspace: Option<&str>,
        authors: &crate::model::Attribution,
        limit: usize,
        offset: usize,
        order: crate::engine::SessionOrder,
    ) -> Result<SessionPage, tonic::Status> {
        let request = pb::ListSessionsRequest::from(ListQuery {
            workspace: workspace.map(str::to_owned),
            limit,
            offset,
            order,
            authors: authors.clone(),
        });
        let response = self.sessions.list_sessions(request).await?.into_inner();
        response.try_into()
    }

    /// A session as Markdown or JSON, fetched part by part until it is whole.
    pub async fn export_session(
        &mut self,
        session: &str,
        format: ExportFormat,
        thinking: bool,
    ) -> Result<String, tonic::Status> {
        // Served in parts; a session of any size comes whole.
        let mut content = String::new();
        let mut offset = 0;
        loop {
            let request = pb::ExportSessionRequest::from(ExportQuery {
                session: session.to_owned(),
                format,
                offset,
                max_bytes: 0,
                thinking,
            });
            let part = self.sessions.export_session(request).await?.into_inner();
            content.push_str(&part.content);
            if !part.has_more || part.next_offset <= offset {
                return Ok(content);
            }
            offset = part.next_offset;
        }
    }

    /// A page of the message lines that match `search`, sessions newest first.
    pub async fn search_sessions(
        &mut self,
        search: &SessionSearch,
    ) -> Result<MatchPage, tonic::Status> {
        let request = pb::SearchSessionsRequest::from(search.clone());
        let response = self.sessions.search_sessions(request).await?.into_inner();
        response.try_into()
    }

    /// Has the server migrate `sessions` to the workspace `destination`; each fails or goes
    /// on alone.
    pub async fn migrate_sessions(
        &mut self,
        sessions: &[String],
        destination: &str,
        mode: MigrateMode,
    ) -> Result<MigrateResult, tonic::Status> {
        self.migrate(MigrateQuery {
            sessions: sessions.to_vec(),
            destination: destination.to_owned(),
            mode,
            workspace: None,
        })
        .await
    }

    /// Migrates every session of a workspace.
    pub async fn migrate_workspace(
        &mut self,
        workspace: &str,
        destination: &str,
        mode: MigrateMode,
    ) -> Result<MigrateResult, tonic::Status> {
        self.migrate(MigrateQuery {
            sessions: Vec::new(),
            destination: destination.to_owned(),
            mode,
            workspace: Some(workspace.to_owned()),
        })
        .await
    }

    async fn migrate(&mut self, query: MigrateQuery) -> Result<MigrateResult, tonic::Status> {
        let request = pb::MigrateSessionsRequest::from(query);
        let response = self.sessions.migrate_sessions(request).await?.into_inner();
        response.try_into()
    }

    /// Asks the server to ingest its Claude dir.
    pub async fn ingest(&mut self) -> Result<IngestReport, tonic::Status> {
        let response = self.ingest.ingest(pb::IngestRequest {}).await?.into_inner();
        response.try_into()
    }

    /// Asks the server to read one session now and return its handoff.
    pub async fn ingest_session(&mut self, session: &str) -> Result<SessionIngest, tonic::Status> {
        let read = self.ingest_session_within(session, None).await?;
        read.ok_or_else(|| tonic::Status::internal("the server answered a read as pending"))
    }

    /// Asks the server to read one session now, waiting at most `wait` (else until it is
    /// read): its handoff, or `None` when the server still reads it (and finishes alone).
    pub async fn ingest_session_within(
        &mut self,
        session: &str,
        wait: Option<std::time::Duration>,
    ) -> Result<Option<SessionIngest>, tonic::Status> {
        let wait_ms = wait.map_or(0, |w| {
            u32::try_from(w.as_millis()).unwrap_or(u32::MAX).max(1)
        });
        let request = pb::IngestSessionRequest {
            session: session.to_owned(),
            wait_ms,
        };
        let answer = self.ingest.ingest_session(request).await?.into_inner();
        if answer.pending {
            return Ok(None);
        }
        answer.try_into().map(Some)
    }

    /// Asks the server to import an Eywa folder it can read.
    pub async fn import(&mut self, dir: &std::path::Path) -> Result<ImportReport, tonic::Status> {
        let request = pb::ImportRequest::from(ImportQuery {
            path: dir.to_owned(),
        });
        self.ingest.import(request).await?.into_inner().try_into()
    }

    /// Asks the server to embed its backlog now.
    pub async fn embed(&mut self) -> Result<EmbedReport, tonic::Status> {
        self.ingest
            .embed(pb::EmbedRequest {})
            .await?
            .into_inner()
            .try_into()
    }

    /// The server's counts, tiers, caches and embedding backlog.
    pub async fn stats(&mut self) -> Result<Stats, tonic::Status> {
        let response = self.admin.stats(pb::StatsRequest {}).await?.into_inner();
        response.try_into()
    }

    /// The server's check of its store (never a repair: that needs the store alone).
    pub async fn check(&mut self) -> Result<crate::engine::CheckReport, tonic::Status> {
        self.admin
            .check(pb::CheckRequest {})
            .await?
            .into_inner()
            .try_into()
    }

    /// A backup of the server's store into `directory`, on the server's machine.
    pub async fn backup(
        &mut self,
        directory: &str,
    ) -> Result<crate::engine::BackupReport, tonic::Status> {
        let request = pb::BackupRequest {
            directory: directory.to_owned(),
        };
        self.admin.backup(request).await?.into_inner().try_into()
    }

    /// The embedding model installed in the server's data directory.
    pub async fn model_status(&mut self) -> Result<ModelStatus, tonic::Status> {
        let response = self
            .admin
            .model_status(pb::ModelStatusRequest {})
            .await?
            .into_inner();
        response.try_into()
    }
}
