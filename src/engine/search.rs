//! Search over sessions: lexical (BM25 passages grouped per session), semantic (chunk
//! vectors grouped per session) or hybrid (both, fused), re-ranked by graph signals
//! around an optional focus and by recency; every hit says what scored it.

use std::collections::HashMap;

use super::Engine;
use crate::index::TextQuery;
use crate::model::{NodeId, NodeKind, Timestamp};
use crate::retrieve::{Best, GraphEvidence, Ranked, SearchMode, Signals, Weights, ranks, score};
use crate::semantic::Semantic;
use crate::semantic::VectorFilter;
use crate::{Error, Result};

/// Most hits a search returns.
pub const MAX_SEARCH_LIMIT: usize = 200;
/// A session's lexical score is its passages' BM25 scores, best first, the i-th weighted
/// by this to the power i: the best passage counts most, and more matching passages
/// count for more. Chosen on the LoCoMo dev split (`scripts/eval-locomo`): 0 (best
/// passage only) gave R@5 0.928 / MRR 0.813, 0.3 gives 0.929 / 0.817, 0.5 gives 0.927 /
/// 0.816, and 1 (a plain sum) favours long sessions.
const SESSION_DECAY: f32 = 0.3;
/// The same for a session's semantic score over its chunks' cosine similarities.
const SEMANTIC_DECAY: f32 = 0.3;
/// Passages (or chunks) collected per session asked for, before grouping.
const PASSAGES_PER_HIT: usize = 25;
/// Hops from the focus within which graph distance counts, and nodes visited at most.
const FOCUS_DEPTH: u32 = 3;
const FOCUS_NODES: usize = 200_000;

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
    /// Lexical, semantic or hybrid (the default).
    pub mode: SearchMode,
    /// A node the search is about (`project:eywa`, `session:7acd37a8`, a file…): sessions
    /// of its project, sharing its entities, or near it in the graph rank higher.
    pub focus: Option<String>,
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

/// One session found: its best passage, its score, and why.
#[derive(Debug, Clone)]
pub struct SearchHit {
    /// The session a hit leads to (a subagent's passage leads to its parent's session);
    /// empty for a project memory file.
    pub session_id: String,
    pub title: String,
    pub project: String,
    /// The total of [`Signals`].
    pub score: f32,
    /// The best passage's content type, text around the match, and time.
    pub kind: String,
    pub snippet: String,
    pub timestamp: Timestamp,
    /// The subagent the passage came from, if any.
    pub agent: Option<String>,
    /// Passages (lexical) or chunks (semantic) of this session that matched, among
    /// those collected.
    pub matches: u32,
    pub signals: Signals,
}

/// What a search found, in which mode, and what the caller should know.
#[derive(Debug, Clone)]
pub struct SearchResults {
    pub hits: Vec<SearchHit>,
    /// The mode that ran (hybrid falls back to lexical without the model).
    pub mode: SearchMode,
    /// Why results may be partial: semantic search unavailable, chunks still waiting to
    /// be embedded, a query without indexable words.
    pub notices: Vec<String>,
}

/// A session found by one retriever: its score and best passage.
#[derive(Debug, Clone)]
struct Found {
    session_id: String,
    /// The document of the passage: it stands for the session when there is none (a
    /// project memory file).
    doc: String,
    project: String,
    score: f32,
    kind: String,
    /// The passage's text (lexical), to cut the snippet from.
    text: String,
    timestamp: i64,
    agent: Option<String>,
    matches: u32,
    /// The best chunk's vector key (semantic), for its snippet.
    chunk: Option<u64>,
}

/// Where the snippet of a hit comes from, cut only for the hits returned.
enum Snippet {
    /// The passage's text: the fragment around the matched words.
    Passage(String),
    /// The chunk's stored start.
    Chunk(u64),
}

/// A session as each retriever found it.
#[derive(Default)]
struct Both {
    lexical: Option<(Found, Ranked)>,
    semantic: Option<(Found, Ranked)>,
}

/// What the query is about, resolved in the graph.
struct Focus {
    project: Option<String>,
    /// Hops from the focus node to nodes near it.
    distances: HashMap<NodeId, u32>,
    /// Entities shared with the focus session, relative to the most (0 to 1).
    shared: HashMap<NodeId, f64>,
}

/// Groups retrieved passages by session (or document, for passages of no session), in
/// order of their summed, decayed scores.
fn group(found: impl IntoIterator<Item = Found>, decay: f32) -> Vec<(String, Found)> {
    let mut order: Vec<String> = Vec::new();
    let mut by_key: HashMap<String, Found> = HashMap::new();
    for f in found {
        let key = if f.session_id.is_empty() {
            format!("doc:{}", f.doc)
        } else {
            f.session_id.clone()
        };
        if let Some(seen) = by_key.get_mut(&key) {
            seen.score += f.score * decay.powi(seen.matches as i32);
            seen.matches += 1;
            continue;
        }
        order.push(key.clone());
        by_key.insert(key, f);
    }
    order.sort_by(|a, b| by_key[b].score.total_cmp(&by_key[a].score));
    order
        .into_iter()
        .map(|k| {
            let f = by_key.remove(&k).expect("every key was inserted");
            (k, f)
        })
        .collect()
}

impl Engine {
    /// Sessions that best match the query, best first, each with its best passage and the
    /// signals that scored it. Semantic mode without the model is `FailedPrecondition`;
    /// hybrid mode without it is lexical, with a notice.
    pub fn search(&self, request: &SearchRequest) -> Result<SearchResults> {
        let cleaned;
        let request = match crate::retrieve::clean_query(&request.query) {
            std::borrow::Cow::Borrowed(_) => request,
            std::borrow::Cow::Owned(query) => {
                cleaned = SearchRequest {
                    query,
                    ..request.clone()
                };
                &cleaned
            }
        };
        let limit = self.check_search(request)?;
        let mut notices = Vec::new();
        let mode = match (request.mode, self.semantic()?.not_ready()) {
            (SearchMode::Semantic, Some(why)) => return Err(Error::FailedPrecondition(why)),
            (SearchMode::Hybrid, Some(why)) => {
                notices.push(format!("{why}; these are lexical results"));
                SearchMode::Lexical
            }
            (mode, _) => mode,
        };
        let (lexical, semantic) = match mode {
            SearchMode::Lexical => (self.lexical(request, limit)?, Vec::new()),
            SearchMode::Semantic => (Vec::new(), self.semantic_found(request, limit)?),
            // The query's embedding (~15 ms on the CPU when not cached) runs beside BM25.
            SearchMode::Hybrid => {
                let (lexical, semantic) = std::thread::scope(|s| {
                    let semantic = s.spawn(|| self.semantic_found(request, limit));
                    let lexical = self.lexical(request, limit);
                    let semantic = semantic
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                    (lexical, semantic)
                });
                let lexical = match lexical {
                    Ok(found) => found,
                    // Only common words: nothing to match by words, but meaning may match.
                    Err(Error::InvalidArgument(why)) => {
                        notices.push(why);
                        Vec::new()
                    }
                    Err(e) => return Err(e),
                };
                (lexical, semantic?)
            }
        };
        if mode != SearchMode::Lexical && self.semantic()?.backlog() > 0 {
            notices.push(format!(
                "{} chunks are still waiting to be embedded: semantic results may miss them",
                self.semantic()?.backlog()
            ));
        }
        let focus = request
            .focus
            .as_deref()
            .map(|f| self.focus(f))
            .transpose()?;
        let mut ranked = self.rank(mode, lexical, semantic, focus.as_ref());
        ranked.truncate(limit);
        let snippets = match ranked.iter().any(|(_, s)| matches!(s, Snippet::Passage(_))) {
            true => Some(self.text()?.snippets(&request.query)?),
            false => None,
        };
        let store = self.graph.store();
        let mut hits = Vec::with_capacity(ranked.len());
        for (mut hit, snippet) in ranked {
            hit.snippet = match snippet {
                Snippet::Passage(text) => snippets
                    .as_ref()
                    .map(|s| s.snippet(&text))
                    .unwrap_or_default(),
                Snippet::Chunk(key) => Semantic::entry(store, key)?
                    .map(|e| e.snippet)
                    .unwrap_or_default(),
            };
            if !hit.session_id.is_empty()
                && let Some(node) = self.graph.node(NodeId::episode(&hit.session_id))?
            {
                hit.title = node.name.clone();
            }
            hits.push(hit);
        }
        Ok(SearchResults {
            hits,
            mode,
            notices,
        })
    }

    /// Checks a request; returns the limit.
    fn check_search(&self, request: &SearchRequest) -> Result<usize> {
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
        if request.query.trim().is_empty() {
            return Err(Error::InvalidArgument("the query is empty".to_owned()));
        }
        Ok(limit)
    }

    /// Sessions by BM25 over their passages.
    fn lexical(&self, request: &SearchRequest, limit: usize) -> Result<Vec<(String, Found)>> {
        // An index left behind by a stopped ingest is rebuilt first; one that lags only
        // because an ingest is running now is searched as committed.
        if self.text_index_lags()?
            && let Ok(_ingest) = self.ingest_lock.try_lock()
            && self.text_index_lags()?
        {
            self.reindex_locked()?;
        }
        let hits = self.text()?.search_passages(&TextQuery {
            query: request.query.clone(),
            kinds: request.kinds.clone(),
            projects: request.projects.iter().map(|p| p.to_lowercase()).collect(),
            agents: request.agent_types.clone(),
            since: request.since.map(|t| t.0),
            until: request.until.map(|t| t.0),
            limit: limit * PASSAGES_PER_HIT,
        })?;
        Ok(group(
            hits.into_iter().map(|h| Found {
                session_id: h.doc.session,
                doc: h.doc.id,
                project: h.doc.project,
                score: h.score,
                kind: h.doc.kind,
                text: h.doc.text,
                timestamp: h.doc.timestamp,
                agent: h.doc.agent,
                matches: 1,
                chunk: None,
            }),
            SESSION_DECAY,
        ))
    }

    /// Sessions by the cosine similarity of their chunks to the query.
    fn semantic_found(
        &self,
        request: &SearchRequest,
        limit: usize,
    ) -> Result<Vec<(String, Found)>> {
        let query = self.semantic()?.embed_query(&request.query)?;
        let filter = VectorFilter {
            projects: request.projects.iter().map(|p| p.to_lowercase()).collect(),
            kinds: request.kinds.clone(),
            agents: request.agent_types.clone(),
            since: request.since.map(|t| t.0),
            until: request.until.map(|t| t.0),
        };
        let hits = self
            .semantic()?
            .search(&query, limit * PASSAGES_PER_HIT, &filter)?;
        let store = self.graph.store();
        let mut found = Vec::with_capacity(hits.len());
        for h in hits {
            // A memory file's chunks (no session) are told apart by their document.
            let doc = if h.session.is_empty() {
                Semantic::entry(store, h.key)?
                    .map(|e| e.doc)
                    .unwrap_or_default()
            } else {
                String::new()
            };
            found.push(Found {
                session_id: h.session,
                doc,
                project: h.project,
                score: h.score,
                kind: h.kind,
                text: String::new(),
                timestamp: h.timestamp,
                agent: h.agent,
                matches: 1,
                chunk: Some(h.key),
            });
        }
        Ok(group(found, SEMANTIC_DECAY))
    }

    /// Resolves the focus and gathers what the graph says around it.
    fn focus(&self, reference: &str) -> Result<Focus> {
        let node = self.resolve_one(reference)?;
        let (project, session) = match &node.kind {
            NodeKind::Episode(e) => (Some(e.project.to_lowercase()), Some(node.id)),
            NodeKind::Entity(e) if e.entity_type.as_str() == "Project" => {
                (Some(node.name.to_lowercase()), None)
            }
            _ => (None, None),
        };
        let shared = match session {
            Some(id) => {
                let scores = self.graph.shared_scores(id)?;
                let max = scores.values().map(|(s, _)| *s).fold(0.0, f64::max);
                scores
                    .into_iter()
                    .map(|(k, (s, _))| (k, if max > 0.0 { s / max } else { 0.0 }))
                    .collect()
            }
            None => HashMap::new(),
        };
        Ok(Focus {
            project,
            distances: self.graph.distances(node.id, FOCUS_DEPTH, FOCUS_NODES)?,
            shared,
        })
    }

    /// Merges the retrievers' sessions, scores them, best first.
    fn rank(
        &self,
        mode: SearchMode,
        lexical: Vec<(String, Found)>,
        semantic: Vec<(String, Found)>,
        focus: Option<&Focus>,
    ) -> Vec<(SearchHit, Snippet)> {
        let weights = Weights::default();
        let now = Timestamp::now().0;
        let lexical_ranks = ranks(&lexical.iter().map(|(_, f)| f.score).collect::<Vec<_>>());
        let semantic_ranks = ranks(&semantic.iter().map(|(_, f)| f.score).collect::<Vec<_>>());
        let top =
            |found: &[(String, Found)]| found.iter().map(|(_, f)| f.score).fold(0.0, f32::max);
        let bests = Best {
            lexical: top(&lexical),
            semantic: top(&semantic),
        };
        let mut merged: HashMap<String, Both> = HashMap::new();
        for ((key, f), rank) in lexical.into_iter().zip(lexical_ranks) {
            let score = f.score;
            merged.entry(key).or_default().lexical = Some((f, Ranked { rank, score }));
        }
        for ((key, f), rank) in semantic.into_iter().zip(semantic_ranks) {
            let score = f.score;
            merged.entry(key).or_default().semantic = Some((f, Ranked { rank, score }));
        }
        let mut hits = Vec::with_capacity(merged.len());
        for both in merged.into_values() {
            let lex_rank = both.lexical.as_ref().map(|(_, r)| *r);
            let sem_rank = both.semantic.as_ref().map(|(_, r)| *r);
            // The passage to show: the lexical one (its matched words are marked).
            let Some((best, _)) = both.lexical.or(both.semantic) else {
                continue;
            };
            let graph = match focus {
                Some(focus) => {
                    let episode =
                        (!best.session_id.is_empty()).then(|| NodeId::episode(&best.session_id));
                    GraphEvidence {
                        same_project: focus.project.as_deref() == Some(best.project.as_str()),
                        shared: episode
                            .and_then(|e| focus.shared.get(&e))
                            .copied()
                            .unwrap_or(0.0),
                        distance: episode.and_then(|e| focus.distances.get(&e)).copied(),
                    }
                }
                None => GraphEvidence::default(),
            };
            let age_days = (now - best.timestamp).max(0) as f64 / 86_400_000.0;
            let signals = score(mode, lex_rank, sem_rank, bests, graph, age_days, &weights);
            let snippet = match best.chunk {
                Some(key) => Snippet::Chunk(key),
                None => Snippet::Passage(best.text),
            };
            let hit = SearchHit {
                session_id: best.session_id,
                title: String::new(),
                project: best.project,
                score: signals.total as f32,
                kind: best.kind,
                snippet: String::new(),
                timestamp: Timestamp(best.timestamp),
                agent: best.agent,
                matches: best.matches,
                signals,
            };
            hits.push((hit, snippet));
        }
        hits.sort_by(|(a, _), (b, _)| {
            b.signals
                .total
                .total_cmp(&a.signals.total)
                .then(b.signals.retrieval.total_cmp(&a.signals.retrieval))
                .then(b.timestamp.cmp(&a.timestamp))
                .then(a.session_id.cmp(&b.session_id))
        });
        hits
    }
}
