//! Full-text search over sessions: what ingest puts in the text index, how the index is
//! rebuilt from the store, and `search` (passages ranked by BM25, grouped per session).

use std::collections::HashMap;

use eywa_storage::{Batch, Keyspace};

use super::Engine;
use crate::claude::{Mode, NoHistory, Passage, read_transcript_with};
use crate::index::{TextDoc, TextQuery};
use crate::model::{Handoff, Node, NodeId, NodeKind, Timestamp};
use crate::{Error, Result};

/// Settings key set while the text index may lack what the warm tier holds (an ingest
/// wrote sessions and has not committed the index yet); found set at open, the index is
/// rebuilt.
const DIRTY: &[u8] = b"text_index_dirty";
/// Most hits a search returns.
pub const MAX_SEARCH_LIMIT: usize = 200;
/// A session's score is its passages' scores, best first, the i-th weighted by this to
/// the power i: the best passage counts most, and more matching passages count for
/// more. Chosen on the LoCoMo dev split (`scripts/eval-locomo`): 0 (best passage only)
/// gave R@5 0.928 / MRR 0.813, 0.3 gives 0.929 / 0.817, 0.5 gives 0.927 / 0.816, and 1
/// (a plain sum) favours long sessions.
const SESSION_DECAY: f32 = 0.3;
/// Passages collected per session asked for, before grouping.
const PASSAGES_PER_HIT: usize = 25;

/// What to search, and where (`eywa search`, `Retrieval/Search`).
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    pub query: String,
    /// Content types (`user_message`, `assistant_response`, `compact_summary`,
    /// `tool_call`, `subagent_summary`, `summary_label`, `handoff`, `plan`, `memory`).
    pub kinds: Vec<String>,
    /// Project names; a session matches when its project is one of them.
    pub projects: Vec<String>,
    /// Subagent types (`Explore`, `Plan`, …): only passages of those subagents.
    pub agent_types: Vec<String>,
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
    /// Sessions to return (default 10).
    pub limit: usize,
}

/// The content types the index holds.
pub const CONTENT_TYPES: [&str; 9] = [
    "user_message",
    "assistant_response",
    "compact_summary",
    "tool_call",
    "subagent_summary",
    "summary_label",
    "handoff",
    "plan",
    "memory",
];

/// One session found: its best passage and its score.
#[derive(Debug, Clone)]
pub struct SearchHit {
    /// The session a hit leads to (a subagent's passage leads to its parent's session);
    /// empty for a project memory file.
    pub session_id: String,
    pub title: String,
    pub project: String,
    pub score: f32,
    /// The best passage's content type, text around the match, and time.
    pub kind: String,
    pub snippet: String,
    pub timestamp: Timestamp,
    /// The subagent the passage came from, if any.
    pub agent: Option<String>,
    /// Passages of this session that matched (among those collected).
    pub matches: u32,
}

impl Engine {
    /// The full-text index.
    pub fn text_index(&self) -> &crate::index::TextIndex {
        &self.text
    }

    /// Puts the passages a read of `source` produced, and the session-level documents,
    /// into the text index (committed at the end of the ingest run). `whole` drops what the
    /// source had before (the file was read from its start).
    pub(super) fn index_session(&self, input: IndexInput<'_>) -> Result<()> {
        self.mark_text_dirty()?;
        let text = &self.text;
        if input.whole {
            text.delete_source(input.source);
        }
        let mut docs = passage_docs(&input, input.passages);
        docs.extend(session_docs(&input));
        text.put(&docs)
    }

    /// Puts a plan or memory Document into the text index.
    pub(super) fn index_document(&self, source: &str, node: &Node, session: &str) -> Result<()> {
        self.mark_text_dirty()?;
        self.text.delete_source(source);
        self.text.put(&document_docs(source, node, session))
    }

    pub(super) fn mark_text_dirty(&self) -> Result<()> {
        if !self.graph.store().contains(Keyspace::Settings, DIRTY)? {
            let mut batch = Batch::new();
            batch.put(Keyspace::Settings, DIRTY.to_vec(), &true)?;
            self.graph.store().apply(batch)?;
        }
        Ok(())
    }

    /// Commits the text index and clears the mark that says it may lag the store.
    pub(super) fn commit_text(&self) -> Result<()> {
        self.text.commit()?;
        if self.graph.store().contains(Keyspace::Settings, DIRTY)? {
            let mut batch = Batch::new();
            batch.delete(Keyspace::Settings, DIRTY.to_vec());
            self.graph.store().apply(batch)?;
        }
        Ok(())
    }

    /// Whether the text index must be rebuilt: an ingest stopped before committing it.
    pub(super) fn text_index_lags(&self) -> Result<bool> {
        Ok(self.graph.store().contains(Keyspace::Settings, DIRTY)?)
    }

    /// Rebuilds the text index from the store: every transcript from its archive, every
    /// session's handoff and labels, every plan and memory file. Waits for a running ingest.
    /// Returns the documents.
    pub fn reindex(&self) -> Result<u64> {
        let _ingest = self
            .ingest_lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.reindex_locked()
    }

    /// [`Engine::reindex`], the caller holding the ingest lock.
    pub(super) fn reindex_locked(&self) -> Result<u64> {
        self.mark_text_dirty()?;
        self.text.clear()?;
        for record in self.graph.sources()? {
            let Some(node) = record
                .episode
                .map(|id| self.graph.node(id))
                .transpose()?
                .flatten()
            else {
                if let Some(node) = self.source_document(&record.path)? {
                    let session = self.document_session(&node)?;
                    self.text
                        .put(&document_docs(&record.path, &node, &session))?;
                }
                continue;
            };
            let Some(reader) = self.archive_reader(&record)? else {
                continue;
            };
            let mode = if record.agent {
                Mode::Agent
            } else {
                Mode::Main
            };
            let mut transcript = read_transcript_with(reader, &record.session_id, mode, &NoHistory)
                .map_err(Error::io(&record.path))?;
            crate::extract::scrub(&mut transcript);
            let episode = node
                .episode()
                .expect("a source's episode node is an episode");
            let handoff = self.graph.handoff(&episode.session_id)?;
            let input = IndexInput {
                source: &record.path,
                node: &node,
                handoff: handoff.as_ref(),
                passages: &transcript.passages,
                labels: &transcript.summaries,
                whole: true,
            };
            self.text.put(&passage_docs(&input, input.passages))?;
            self.text.put(&session_docs(&input))?;
            // Inline subagent runs: their report.
            for run in &transcript.inline_agents {
                let id = NodeId::agent(&episode.session_id, &run.session_id);
                if let Some(child) = self.graph.node(id)? {
                    let input = IndexInput {
                        source: &record.path,
                        node: &child,
                        handoff: None,
                        passages: &[],
                        labels: &[],
                        whole: false,
                    };
                    self.text.put(&session_docs(&input))?;
                }
            }
        }
        self.commit_text()?;
        Ok(self.text.len())
    }

    /// The plan or memory Document read from `path`.
    fn source_document(&self, path: &str) -> Result<Option<std::sync::Arc<Node>>> {
        let name = std::path::Path::new(path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for id in [NodeId::memory_doc(path), NodeId::plan(&name)] {
            if let Some(node) = self.graph.node(id)?
                && matches!(&node.kind, NodeKind::Document(d) if d.path == path)
            {
                return Ok(Some(node));
            }
        }
        Ok(None)
    }

    /// The session a plan leads to: the latest with its slug (memory files lead to none).
    pub(super) fn document_session(&self, node: &Node) -> Result<String> {
        let Some(slug) = node.properties.get("slug") else {
            return Ok(String::new());
        };
        let mut latest: Option<(Timestamp, String)> = None;
        for id in self.graph.episodes_with_slug(slug)? {
            if let Some(n) = self.graph.node(id)?
                && let Some(e) = n.episode().filter(|e| e.agent.is_none())
                && latest.as_ref().is_none_or(|(t, _)| e.start > *t)
            {
                latest = Some((e.start, e.session_id.clone()));
            }
        }
        Ok(latest.map(|(_, s)| s).unwrap_or_default())
    }

    /// Sessions whose passages best match the query (BM25), best first, each with its best
    /// passage.
    pub fn search(&self, request: &SearchRequest) -> Result<Vec<SearchHit>> {
        let limit = match request.limit {
            0 => 10,
            n if n > MAX_SEARCH_LIMIT => {
                return Err(Error::InvalidArgument(format!(
                    "limit {n} is over the maximum of {MAX_SEARCH_LIMIT}"
                )));
            }
            n => n,
        };
        for kind in &request.kinds {
            if !CONTENT_TYPES.contains(&kind.as_str()) {
                return Err(Error::InvalidArgument(format!(
                    "unknown content type `{kind}`; known: {}",
                    CONTENT_TYPES.join(", ")
                )));
            }
        }
        if let (Some(since), Some(until)) = (request.since, request.until)
            && since > until
        {
            return Err(Error::InvalidArgument(
                "`since` is after `until`".to_owned(),
            ));
        }
        // An index left behind by a stopped ingest is rebuilt first; one that lags only
        // because an ingest is running now is searched as committed.
        if self.text_index_lags()?
            && let Ok(_ingest) = self.ingest_lock.try_lock()
            && self.text_index_lags()?
        {
            self.reindex_locked()?;
        }
        let hits = self.text.search(&TextQuery {
            query: request.query.clone(),
            kinds: request.kinds.clone(),
            projects: request.projects.iter().map(|p| p.to_lowercase()).collect(),
            agents: request.agent_types.clone(),
            since: request.since.map(|t| t.0),
            until: request.until.map(|t| t.0),
            limit: limit * PASSAGES_PER_HIT,
        })?;
        let mut order: Vec<String> = Vec::new();
        let mut by_session: HashMap<String, SearchHit> = HashMap::new();
        for hit in hits {
            let key = if hit.doc.session.is_empty() {
                format!("doc:{}", hit.doc.id)
            } else {
                hit.doc.session.clone()
            };
            if let Some(found) = by_session.get_mut(&key) {
                found.score += hit.score * SESSION_DECAY.powi(found.matches as i32);
                found.matches += 1;
                continue;
            }
            order.push(key.clone());
            by_session.insert(
                key,
                SearchHit {
                    session_id: hit.doc.session,
                    title: String::new(),
                    project: hit.doc.project,
                    score: hit.score,
                    kind: hit.doc.kind,
                    snippet: hit.snippet,
                    timestamp: Timestamp(hit.doc.timestamp),
                    agent: hit.doc.agent,
                    matches: 1,
                },
            );
        }
        order.sort_by(|a, b| by_session[b].score.total_cmp(&by_session[a].score));
        let mut out = Vec::with_capacity(limit);
        for key in order.into_iter().take(limit) {
            let mut hit = by_session.remove(&key).expect("every key was inserted");
            hit.title = match self.graph.node(NodeId::episode(&hit.session_id))? {
                Some(node) if !hit.session_id.is_empty() => node.name.clone(),
                _ => String::new(),
            };
            out.push(hit);
        }
        Ok(out)
    }
}

/// What one read of a transcript gives the text index.
pub(super) struct IndexInput<'a> {
    pub source: &'a str,
    /// The episode (a session or a subagent run).
    pub node: &'a Node,
    pub handoff: Option<&'a Handoff>,
    pub passages: &'a [Passage],
    /// `summary` labels of the session's messages.
    pub labels: &'a [String],
    /// The source was read from its start.
    pub whole: bool,
}

impl IndexInput<'_> {
    /// The session a hit leads to: the session, or a subagent's parent.
    fn session(&self) -> String {
        let Some(e) = self.node.episode() else {
            return String::new();
        };
        match &e.agent {
            Some(agent) => agent.parent_session.clone().unwrap_or_default(),
            None => e.session_id.clone(),
        }
    }

    fn project(&self) -> String {
        self.node
            .episode()
            .map(|e| e.project.to_lowercase())
            .unwrap_or_default()
    }

    fn agent(&self) -> Option<String> {
        let agent = self.node.episode()?.agent.as_ref()?;
        Some(
            agent
                .agent_type
                .clone()
                .unwrap_or_else(|| agent.agent_id.clone()),
        )
    }
}

fn passage_docs(input: &IndexInput<'_>, passages: &[Passage]) -> Vec<TextDoc> {
    let session = input.session();
    let project = input.project();
    let own_agent = input.agent();
    let start = input.node.created_at.0;
    passages
        .iter()
        .map(|p| {
            // A message is found with the one it answers (in a dialogue, the question and
            // the answer hold the words between them).
            let text = match &p.context {
                Some(context) => format!("{context}\n{}", p.text),
                None => p.text.clone(),
            };
            let id = match &p.agent {
                Some(run) => format!("{}#{run}#{}.{}", input.source, p.seq, p.part),
                None => format!("{}#{}.{}", input.source, p.seq, p.part),
            };
            TextDoc {
                id,
                source: input.source.to_owned(),
                session: session.clone(),
                project: project.clone(),
                kind: p.kind.as_str().to_owned(),
                agent: p.agent.clone().or_else(|| own_agent.clone()),
                timestamp: p.timestamp.map_or(start, |t| t.0),
                text,
            }
        })
        .collect()
}

/// The session-level documents: the handoff, the summary labels, a subagent's report.
fn session_docs(input: &IndexInput<'_>) -> Vec<TextDoc> {
    let session = input.session();
    let project = input.project();
    let at = input.node.updated_at.0;
    let doc = |suffix: &str, kind: &str, text: String| TextDoc {
        id: format!("{}#{suffix}", input.source),
        source: input.source.to_owned(),
        session: session.clone(),
        project: project.clone(),
        kind: kind.to_owned(),
        agent: input.agent(),
        timestamp: at,
        text,
    };
    let mut docs = Vec::new();
    if let Some(h) = input.handoff {
        let s = &h.sections;
        let mut text = vec![h.headline.clone(), h.keywords.join(" ")];
        text.extend(s.what_happened.iter().cloned());
        text.extend(s.insights.iter().map(|(t, e)| format!("{t}: {e}")));
        text.extend(s.key_files.iter().cloned());
        text.extend(s.open_threads.iter().cloned());
        docs.push(doc("handoff", "handoff", text.join("\n")));
    }
    for (i, label) in input.labels.iter().enumerate() {
        docs.push(doc(&format!("label.{i}"), "summary_label", label.clone()));
    }
    if let Some(agent) = input.node.episode().and_then(|e| e.agent.as_ref())
        && let Some(report) = &agent.summary
    {
        let suffix = format!("report.{}", agent.agent_id);
        docs.push(doc(&suffix, "subagent_summary", report.clone()));
    }
    docs
}

/// A plan or memory file's document.
fn document_docs(source: &str, node: &Node, session: &str) -> Vec<TextDoc> {
    let kind = if node.properties.get("kind").map(String::as_str) == Some("memory") {
        "memory"
    } else {
        "plan"
    };
    vec![TextDoc {
        id: format!("{source}#doc"),
        source: source.to_owned(),
        session: session.to_owned(),
        project: node
            .properties
            .get("project")
            .map(|p| p.to_lowercase())
            .unwrap_or_default(),
        kind: kind.to_owned(),
        agent: None,
        timestamp: node.updated_at.0,
        text: format!("{}\n{}", node.name, node.content.as_deref().unwrap_or("")),
    }]
}
