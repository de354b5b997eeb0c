//! Search over sessions: lexical (BM25 passages grouped per session), semantic (chunk
//! vectors grouped per session) or hybrid (both, fused), re-ranked by graph signals
//! around an optional focus and by recency; every hit says what scored it.

use std::collections::HashMap;

use super::Engine;
use crate::index::TextQuery;
use crate::model::{NodeId, NodeKind, Timestamp};
use crate::retrieve::SearchMode;
use crate::retrieve::question::{Question, Said};
use crate::retrieve::search::{
    Focus, Found, MAX_SEARCH_LIMIT, SEMANTIC_DECAY, SearchRequest, SearchResults, Snippet, fuse,
    group,
};
use crate::semantic::Semantic;
use crate::{Error, Result};

/// Passages (or chunks) collected per session asked for, before grouping.
const PASSAGES_PER_HIT: usize = 25;
/// Hops from the focus within which graph distance counts, and nodes visited at most.
const FOCUS_DEPTH: u32 = 3;
const FOCUS_NODES: usize = 200_000;

impl Engine {
    /// Sessions that best match the query, best first, each with its best passage and the
    /// signals that scored it. Semantic mode without the model is `FailedPrecondition`;
    /// hybrid mode without it is lexical, with a notice.
    pub fn search(&self, request: &SearchRequest) -> Result<SearchResults> {
        let cleaned;
        let mut kinds = crate::retrieve::search::content_types(&request.filter.kinds)
            .map_err(Error::InvalidArgument)?;
        if kinds.is_empty() {
            kinds = crate::retrieve::search::DEFAULT_TYPES
                .map(str::to_owned)
                .to_vec();
        }
        let request = match crate::retrieve::clean_query(&request.query) {
            std::borrow::Cow::Borrowed(_)
                if kinds == request.filter.kinds && request.as_of.is_none() =>
            {
                request
            }
            query => {
                let mut filter = request.filter.clone();
                filter.kinds = kinds;
                // Asked at `as_of`: what was written after it is not known yet.
                if let Some(as_of) = request.as_of {
                    filter.until = Some(filter.until.map_or(as_of, |u| u.min(as_of)));
                }
                cleaned = SearchRequest {
                    query: query.into_owned(),
                    filter,
                    ..request.clone()
                };
                &cleaned
            }
        };
        let limit = self.check_search(request)?;
        let asked = request.as_of.unwrap_or_else(Timestamp::now);
        let question = Question::read(&request.query, asked);
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
            SearchMode::Lexical => (self.lexical(request, limit, &question)?, Vec::new()),
            SearchMode::Semantic => (Vec::new(), self.semantic_found(request, limit)?),
            // The query's embedding (~15 ms on the CPU when not cached) runs beside BM25.
            SearchMode::Hybrid => {
                let (lexical, semantic) = std::thread::scope(|s| {
                    let semantic = s.spawn(|| self.semantic_found(request, limit));
                    let lexical = self.lexical(request, limit, &question);
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
        // A focus that names nothing is reported and left out; the search stands.
        let focus = match request.focus.as_deref().map(|f| self.focus(f)).transpose() {
            Ok(focus) => focus,
            Err(Error::NotFound(why)) => {
                notices.push(format!("focus left out: {why}"));
                None
            }
            Err(e) => return Err(e),
        };
        let mut ranked = fuse(mode, lexical, semantic, focus.as_ref(), &question, asked);
        let authors = request.filter.authors();
        if !authors.is_empty() {
            let mut kept = Vec::with_capacity(limit);
            for (hit, snippet) in ranked {
                if kept.len() == limit {
                    break;
                }
                let node = match hit.session_id.is_empty() {
                    true => None,
                    false => self.graph.node(NodeId::episode(&hit.session_id))?,
                };
                if node
                    .as_ref()
                    .and_then(|n| n.episode())
                    .is_some_and(|e| authors.keeps(&e.user, &e.machine))
                {
                    kept.push((hit, snippet));
                }
            }
            ranked = kept;
        }
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
                Snippet::Chunk(key) => {
                    hit.chunk_id = Some(crate::semantic::chunk_id(key));
                    self.semantic()?.snippet(store, key)?
                }
            };
            if !hit.session_id.is_empty()
                && let Some(node) = self.graph.node(NodeId::episode(&hit.session_id))?
            {
                hit.title = node.name.clone();
                if let Some(e) = node.episode() {
                    hit.user.clone_from(&e.user);
                    hit.machine.clone_from(&e.machine);
                }
                // Resumable when Claude Code had it (an index-only session's file is
                // gone, but Claude Code may still know it; an import is not).
                hit.resume_command = crate::claude::resume_command(&hit.session_id, None);
            } else if let Some(id) = &hit.document_id
                && let Some(info) = (crate::docs::Documents { store }).latest(id)?
            {
                hit.title = info.title;
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
        if let (Some(since), Some(until)) = (request.filter.since, request.filter.until)
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

    /// Sessions by BM25 over their passages, each passage raised by what it says that the
    /// question asks for.
    fn lexical(
        &self,
        request: &SearchRequest,
        limit: usize,
        question: &Question,
    ) -> Result<Vec<(String, Found)>> {
        // An index left behind by a stopped ingest is rebuilt first; one that lags only
        // because an ingest is running now is searched as committed.
        if self.writer().text_index_lags()?
            && let Some(_ingest) = self.ingest_lock.try_lock()
            && self.writer().text_index_lags()?
        {
            self.writer().reindex()?;
        }
        let hits = self.text()?.search_passages(&TextQuery {
            query: request.query.clone(),
            filter: request.filter.clone(),
            limit: limit * PASSAGES_PER_HIT,
        })?;
        let all = crate::retrieve::Weights::current();
        let mut found: Vec<Found> = hits
            .into_iter()
            .map(|h| {
                let own = h.doc.text.char_indices().nth(h.doc.lead);
                let own = own.map_or("", |(at, _)| &h.doc.text[at..]);
                let boost = question.boost(&Said::new(&h.doc.kind, own), &all.question);
                Found {
                    session_id: h.doc.session,
                    doc: h.doc.id,
                    project: h.doc.project,
                    score: h.score * boost.factor() as f32,
                    kind: h.doc.kind,
                    text: h.doc.text,
                    timestamp: h.doc.timestamp,
                    agent: h.doc.agent,
                    matches: 1,
                    chunk: None,
                    boost,
                }
            })
            .collect();
        // Best first again: a session's passages are summed in that order, decaying.
        found.sort_by(|a, b| b.score.total_cmp(&a.score));
        Ok(group(found, all.passage_decay as f32))
    }

    /// Sessions by the cosine similarity of their chunks to the query.
    fn semantic_found(
        &self,
        request: &SearchRequest,
        limit: usize,
    ) -> Result<Vec<(String, Found)>> {
        let query = self.semantic()?.embed_query(&request.query)?;
        let hits = self
            .semantic()?
            .search(&query, limit * PASSAGES_PER_HIT, &request.filter)?;
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
                boost: Default::default(),
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
}
