//! One client for every command: the server `--addr`/`EYWA_ADDR` names, else the one a
//! running `eywa serve` announced in `<data>/serve.json`, else the store opened in this
//! process. Finding the server costs no waiting, and every command prints the same from
//! either: the remote side answers in the same domain types the local engine returns.

use std::path::Path;

use anyhow::Context as _;
use eywa::api::{NodeQuery, TouchedQuery};
use eywa::embed::ModelStatus;
use eywa::engine::{
    Context, ContextMode, EmbedReport, Engine, ExportFormat, GetOutcome, ImportReport,
    IngestReport, MatchPage, MigrateMode, MigrateResult, Progress, SearchRequest, SearchResults,
    SessionIngest, SessionPage, SessionSearch, Stats,
};
use eywa::engine::{EdgeFilter, Neighbor, PathStep, Related, Touch, Walk};
use eywa::memory::{
    ConsolidateReport, MemoryFilter, MemoryItem, MemoryUpdate, NewMemory, RecallHit, RecallQuery,
};
use eywa::model::{Chunk, Handoff, Node};
use eywa::retrieve::GetOptions;

mod connect;

pub(crate) use self::connect::RemoteError;
use self::connect::{Local, Remote};

pub(crate) enum Client {
    Local(Local),
    Remote(Box<Remote>),
}

impl Client {
    /// Reads one session now and returns its handoff (see `Engine::ingest_session`).
    pub(crate) fn ingest_session(&self, session: &str) -> anyhow::Result<SessionIngest> {
        match self.ingest_session_within(session, None)? {
            Some(read) => Ok(read),
            None => anyhow::bail!("the server answered a read as pending"),
        }
    }

    /// [`Client::ingest_session`], a server waited for at most `wait`: `None` when it still
    /// reads the session (it finishes alone). A local read is always waited for.
    pub(crate) fn ingest_session_within(
        &self,
        session: &str,
        wait: Option<std::time::Duration>,
    ) -> anyhow::Result<Option<SessionIngest>> {
        match self {
            Client::Local(l) => Ok(Some(l.engine()?.ingest_session(session)?)),
            Client::Remote(r) => {
                let session = match session.contains('/') {
                    true => absolute_reference(session),
                    false => session.to_owned(),
                };
                r.call(async |c| c.ingest_session_within(&session, wait).await)
            }
        }
    }

    pub(crate) fn get(&self, query: &str, options: &GetOptions) -> anyhow::Result<GetOutcome> {
        match self {
            Client::Local(l) => {
                if !l.is_open()
                    && let Some(outcome) =
                        Engine::get_handoffs_from_files(&l.paths.data_dir, query, options)?
                {
                    return Ok(outcome);
                }
                Ok((*l.engine()?.get_handoffs(query, options)?).clone())
            }
            Client::Remote(r) => r.call(async |c| c.get_handoffs(query, options).await),
        }
    }

    pub(crate) fn search(&self, request: &SearchRequest) -> anyhow::Result<SearchResults> {
        match self {
            Client::Local(l) => Ok(l.engine()?.search(request)?),
            Client::Remote(r) => r.call(async |c| c.search(request).await),
        }
    }

    pub(crate) fn chunk(&self, id: &str, neighbors: usize) -> anyhow::Result<Chunk> {
        match self {
            Client::Local(l) => Ok(l.engine()?.chunk(id, neighbors)?),
            Client::Remote(r) => r.call(async |c| c.chunk(id, neighbors).await),
        }
    }

    pub(crate) fn remember(&self, new: &NewMemory) -> anyhow::Result<MemoryItem> {
        match self {
            Client::Local(l) => Ok(l.engine()?.remember(new.clone())?),
            Client::Remote(r) => r.call(async |c| c.remember(new).await),
        }
    }

    pub(crate) fn recall(&self, query: &RecallQuery) -> anyhow::Result<Vec<RecallHit>> {
        match self {
            Client::Local(l) => Ok(l.engine()?.recall(query)?),
            Client::Remote(r) => r.call(async |c| c.recall(query).await),
        }
    }

    pub(crate) fn update_memory(
        &self,
        id: &str,
        update: &MemoryUpdate,
    ) -> anyhow::Result<MemoryItem> {
        match self {
            Client::Local(l) => Ok(l.engine()?.update_memory(id, update)?),
            Client::Remote(r) => r.call(async |c| c.update_memory(id, update).await),
        }
    }

    pub(crate) fn forget_memory(
        &self,
        id: &str,
        reason: Option<String>,
    ) -> anyhow::Result<MemoryItem> {
        match self {
            Client::Local(l) => Ok(l.engine()?.forget_memory(id, reason)?),
            Client::Remote(r) => r.call(async |c| c.forget_memory(id, reason.clone()).await),
        }
    }

    pub(crate) fn list_memories(
        &self,
        filter: &MemoryFilter,
        limit: usize,
        offset: usize,
    ) -> anyhow::Result<(Vec<MemoryItem>, u64)> {
        match self {
            Client::Local(l) => Ok(l.engine()?.list_memories(filter, limit, offset)?),
            Client::Remote(r) => r.call(async |c| c.list_memories(filter, limit, offset).await),
        }
    }

    pub(crate) fn memory_history(&self, id: &str) -> anyhow::Result<Vec<MemoryItem>> {
        match self {
            Client::Local(l) => Ok(l.engine()?.memory_history(id)?),
            Client::Remote(r) => r.call(async |c| c.memory_history(id).await),
        }
    }

    pub(crate) fn consolidate_memories(&self) -> anyhow::Result<ConsolidateReport> {
        match self {
            Client::Local(l) => Ok(l.engine()?.consolidate_memories()?),
            Client::Remote(r) => r.call(async |c| c.consolidate_memories().await),
        }
    }

    pub(crate) fn add_documents(
        &self,
        paths: &[std::path::PathBuf],
        project: Option<&str>,
    ) -> anyhow::Result<Vec<eywa::engine::DocumentOutcome>> {
        match self {
            Client::Local(l) => Ok(l.engine()?.add_documents(paths, project)?),
            Client::Remote(r) => {
                let paths = absolute_paths(paths);
                r.call(async |c| c.add_documents(&paths, project).await)
            }
        }
    }

    pub(crate) fn follow_folders(
        &self,
        folders: &[std::path::PathBuf],
        project: Option<&str>,
        stop: bool,
    ) -> anyhow::Result<eywa::engine::Followed> {
        match self {
            Client::Local(l) => {
                let engine = l.engine()?;
                let outcomes = match folders.is_empty() {
                    true => Vec::new(),
                    false => engine.follow_folders(folders, project, stop)?,
                };
                Ok(eywa::engine::Followed {
                    outcomes,
                    folders: engine.followed_folders()?,
                })
            }
            Client::Remote(r) => {
                let paths = absolute_paths(folders);
                r.call(async |c| c.follow_folders(&paths, project, stop).await)
            }
        }
    }

    pub(crate) fn document(
        &self,
        document: &str,
        version: Option<u32>,
        as_of: Option<eywa::model::Timestamp>,
    ) -> anyhow::Result<eywa::docs::DocumentText> {
        match self {
            Client::Local(l) => Ok(l.engine()?.document(document, version, as_of)?),
            Client::Remote(r) => {
                let document = absolute_reference(document);
                r.call(async |c| c.document(&document, version, as_of).await)
            }
        }
    }

    pub(crate) fn list_documents(
        &self,
        limit: usize,
        offset: usize,
    ) -> anyhow::Result<(Vec<eywa::docs::DocumentInfo>, u64)> {
        match self {
            Client::Local(l) => Ok(l.engine()?.list_documents(limit, offset)?),
            Client::Remote(r) => r.call(async |c| c.list_documents(limit, offset).await),
        }
    }

    pub(crate) fn failed_documents(
        &self,
        limit: usize,
        offset: usize,
    ) -> anyhow::Result<(Vec<eywa::docs::FailedDocument>, u64)> {
        match self {
            Client::Local(l) => Ok(l.engine()?.failed_documents(limit, offset)?),
            Client::Remote(r) => r.call(async |c| c.failed_documents(limit, offset).await),
        }
    }

    pub(crate) fn document_history(
        &self,
        document: &str,
    ) -> anyhow::Result<Vec<eywa::docs::DocumentInfo>> {
        match self {
            Client::Local(l) => Ok(l.engine()?.document_history(document)?),
            Client::Remote(r) => {
                let document = absolute_reference(document);
                r.call(async |c| c.document_history(&document).await)
            }
        }
    }

    pub(crate) fn context(
        &self,
        sessions: &[String],
        mode: ContextMode,
        max_tokens: usize,
        dry_run: bool,
    ) -> anyhow::Result<Context> {
        match self {
            Client::Local(l) => Ok(l
                .engine()?
                .retrieve_context(sessions, mode, max_tokens, dry_run)?),
            Client::Remote(r) => {
                r.call(async |c| c.context(sessions, mode, max_tokens, dry_run).await)
            }
        }
    }

    /// A node, and its handoff when it is a session.
    pub(crate) fn node(&self, reference: &str) -> anyhow::Result<(Node, Option<Handoff>)> {
        match self {
            Client::Local(l) => {
                let engine = l.engine()?;
                let node = engine.resolve_one(reference)?;
                let handoff = match node.episode() {
                    Some(e) => engine.graph().handoff(&e.session_id)?,
                    None => None,
                };
                Ok(((*node).clone(), handoff))
            }
            Client::Remote(r) => r.call(async |c| c.node(reference).await),
        }
    }

    pub(crate) fn find_entities(
        &self,
        name: &str,
        entity_type: Option<&str>,
        prefix: bool,
        limit: usize,
    ) -> anyhow::Result<Vec<Node>> {
        match self {
            Client::Local(l) => Ok(l
                .engine()?
                .find_entities(name, entity_type, prefix, limit)?
                .into_iter()
                .map(|n| (*n).clone())
                .collect()),
            Client::Remote(r) => {
                r.call(async |c| c.find_entities(name, entity_type, prefix, limit).await)
            }
        }
    }

    pub(crate) fn neighbors(
        &self,
        reference: &str,
        filter: &EdgeFilter,
        limit: usize,
    ) -> anyhow::Result<(Node, Vec<Neighbor>)> {
        match self {
            Client::Local(l) => {
                let (node, neighbors) = l.engine()?.neighbors(reference, filter, limit)?;
                Ok(((*node).clone(), neighbors))
            }
            Client::Remote(r) => {
                let query = NodeQuery::new(reference, filter, limit);
                r.call(async |c| c.neighbors(query).await)
            }
        }
    }

    pub(crate) fn what_touched(
        &self,
        entity: &str,
        filter: &EdgeFilter,
        authors: &eywa::model::Attribution,
        limit: usize,
    ) -> anyhow::Result<Vec<Touch>> {
        match self {
            Client::Local(l) => Ok(l
                .engine()?
                .what_touched_by(entity, filter, authors, limit)?),
            Client::Remote(r) => {
                let query = TouchedQuery {
                    node: entity.to_owned(),
                    filter: filter.clone(),
                    limit,
                    authors: authors.clone(),
                };
                r.call(async |c| c.what_touched(query).await)
            }
        }
    }

    pub(crate) fn walk(
        &self,
        reference: &str,
        depth: u32,
        max_nodes: usize,
        filter: &EdgeFilter,
    ) -> anyhow::Result<Walk> {
        match self {
            Client::Local(l) => Ok(l.engine()?.walk(reference, depth, max_nodes, filter)?),
            Client::Remote(r) => {
                r.call(async |c| c.walk(reference, depth, max_nodes, filter).await)
            }
        }
    }

    pub(crate) fn path(
        &self,
        from: &str,
        to: &str,
        max_depth: u32,
        filter: &EdgeFilter,
    ) -> anyhow::Result<Option<Vec<PathStep>>> {
        match self {
            Client::Local(l) => Ok(l.engine()?.path(from, to, max_depth, filter)?),
            Client::Remote(r) => r.call(async |c| c.path(from, to, max_depth, filter).await),
        }
    }

    pub(crate) fn related(&self, session: &str, limit: usize) -> anyhow::Result<Vec<Related>> {
        match self {
            Client::Local(l) => Ok(l.engine()?.related(session, limit)?),
            Client::Remote(r) => r.call(async |c| c.related(session, limit).await),
        }
    }

    pub(crate) fn list_sessions(
        &self,
        workspace: Option<&str>,
        authors: &eywa::model::Attribution,
        limit: usize,
        offset: usize,
        order: eywa::engine::SessionOrder,
    ) -> anyhow::Result<SessionPage> {
        match self {
            Client::Local(l) => Ok(l
                .engine()?
                .list_sessions_of(workspace, authors, limit, offset, order)?),
            Client::Remote(r) => r.call(async |c| {
                c.list_sessions(workspace, authors, limit, offset, order)
                    .await
            }),
        }
    }

    pub(crate) fn export_session(
        &self,
        session: &str,
        format: ExportFormat,
        thinking: bool,
    ) -> anyhow::Result<String> {
        match self {
            Client::Local(l) => Ok(l.engine()?.export_session_with(session, format, thinking)?),
            Client::Remote(r) => {
                r.call(async |c| c.export_session(session, format, thinking).await)
            }
        }
    }

    pub(crate) fn search_sessions(&self, search: &SessionSearch) -> anyhow::Result<MatchPage> {
        match self {
            Client::Local(l) => Ok(l.engine()?.search_sessions(search)?),
            Client::Remote(r) => r.call(async |c| c.search_sessions(search).await),
        }
    }

    pub(crate) fn migrate_sessions(
        &self,
        sessions: &[String],
        destination: &str,
        mode: MigrateMode,
    ) -> anyhow::Result<MigrateResult> {
        match self {
            Client::Local(l) => Ok(l.engine()?.migrate_sessions(sessions, destination, mode)?),
            Client::Remote(r) => {
                r.call(async |c| c.migrate_sessions(sessions, destination, mode).await)
            }
        }
    }

    pub(crate) fn migrate_workspace(
        &self,
        workspace: &str,
        destination: &str,
        mode: MigrateMode,
    ) -> anyhow::Result<MigrateResult> {
        match self {
            Client::Local(l) => Ok(l
                .engine()?
                .migrate_workspace(workspace, destination, mode)?),
            Client::Remote(r) => {
                r.call(async |c| c.migrate_workspace(workspace, destination, mode).await)
            }
        }
    }

    /// Reads new and changed sessions. A local run shows its progress through `progress`;
    /// a server ingests its own Claude dir.
    pub(crate) fn ingest(
        &self,
        progress: &mut dyn FnMut(Progress),
    ) -> anyhow::Result<IngestReport> {
        match self {
            Client::Local(l) => Ok(l.engine()?.ingest_with_progress(progress)?),
            Client::Remote(r) => r.call(async |c| c.ingest().await),
        }
    }

    pub(crate) fn import(&self, dir: &Path) -> anyhow::Result<ImportReport> {
        match self {
            Client::Local(l) => Ok(l.engine()?.import_eywa(dir)?),
            Client::Remote(r) => {
                // The server reads the folder: give it a path that means the same there.
                let dir = std::path::absolute(dir)
                    .with_context(|| format!("cannot resolve {}", dir.display()))?;
                r.call(async |c| c.import(&dir).await)
            }
        }
    }

    /// Embeds the backlog now; a local run reports (done, left) through `progress`.
    pub(crate) fn embed(&self, progress: &mut dyn FnMut(u64, u64)) -> anyhow::Result<EmbedReport> {
        match self {
            Client::Local(l) => Ok(l.engine()?.embed_pending(progress)?),
            Client::Remote(r) => r.call(async |c| c.embed().await),
        }
    }

    pub(crate) fn stats(&self) -> anyhow::Result<Stats> {
        match self {
            Client::Local(l) => Ok(l.engine()?.stats()?),
            Client::Remote(r) => r.call(async |c| c.stats().await),
        }
    }

    /// Checks the store; a repair needs it alone, so not through a server.
    pub(crate) fn check(&self, repair: bool) -> anyhow::Result<eywa::engine::CheckReport> {
        match self {
            Client::Local(l) => Ok(l.engine()?.check(repair)?),
            Client::Remote(r) if repair => anyhow::bail!(
                "eywa serve at {} holds the store: a repair needs it alone; stop the server, \
                 then run `eywa check --repair` (`eywa check` works beside it)",
                r.addr
            ),
            Client::Remote(r) => r.call(async |c| c.check().await),
        }
    }

    pub(crate) fn backup(&self, dir: &Path) -> anyhow::Result<eywa::engine::BackupReport> {
        match self {
            Client::Local(l) => Ok(l.engine()?.backup(dir)?),
            Client::Remote(r) => {
                let dir = dir.display().to_string();
                r.call(async |c| c.backup(&dir).await)
            }
        }
    }

    pub(crate) fn model_status(&self) -> anyhow::Result<ModelStatus> {
        match self {
            // Reading the model's folder needs no store.
            Client::Local(l) => Ok(ModelStatus::of(&l.paths.model_dir())?),
            Client::Remote(r) => r.call(async |c| c.model_status().await),
        }
    }
}

/// Paths as a server must be given them: absolute (it reads them, and its working
/// directory is not the caller's).
fn absolute_paths(paths: &[std::path::PathBuf]) -> Vec<String> {
    paths
        .iter()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
        .map(|p| p.display().to_string())
        .collect()
}

/// A document reference as the server must see it: an id as it is, a path made absolute
/// here (the server's working directory is not the caller's).
fn absolute_reference(reference: &str) -> String {
    let is_id = reference.len() == 16 && reference.bytes().all(|b| b.is_ascii_hexdigit());
    if is_id {
        return reference.to_owned();
    }
    std::path::absolute(reference)
        .map_or_else(|_| reference.to_owned(), |p| p.display().to_string())
}

/// SessionStart's blocks, asked of the running server or the store.
impl eywa::present::context::StartSource for Client {
    type Error = anyhow::Error;

    fn best_handoffs(&self, project: &str, limit: usize) -> anyhow::Result<Vec<Handoff>> {
        let options = GetOptions {
            days_back: eywa::engine::MAX_DAYS_BACK,
            limit,
            projects: vec![project.to_owned()],
            ..GetOptions::default()
        };
        let outcome = self.get("", &options)?;
        Ok(outcome.hits.iter().map(|h| h.handoff.clone()).collect())
    }

    fn stored_handoff(&self, session_id: &str) -> anyhow::Result<Option<Handoff>> {
        Ok(self.node(&format!("session:{session_id}"))?.1)
    }

    fn memories(&self, project: &str, limit: usize) -> anyhow::Result<Vec<MemoryItem>> {
        let filter = MemoryFilter {
            project: Some(project.to_owned()),
            ..Default::default()
        };
        Ok(self.list_memories(&filter, limit, 0)?.0)
    }
}
