//! Search results: what a search asks and finds, grouping a retriever's passages into
//! sessions, and fusing the lexical and semantic rankings with graph signals and age.

use std::collections::HashMap;

use super::question::{Boost, Question};
use super::{Best, GraphEvidence, Ranked, SearchMode, Signals, Weights, When, ranks, score};
use crate::model::{NodeId, SearchFilter, Timestamp};

/// Most hits a search returns.
pub const MAX_SEARCH_LIMIT: usize = 200;
/// A session's lexical score is its passages' BM25 scores, best first, the i-th weighted
/// by this to the power i: the best passage counts most, and more matching passages
/// count for more. Chosen on the LoCoMo dev split (`scripts/eval-locomo`): 0 (best
/// passage only) gave R@5 0.928 / MRR 0.813, 0.3 gives 0.929 / 0.817, 0.5 gives 0.927 /
/// 0.816, and 1 (a plain sum) favours long sessions.
pub(crate) const SESSION_DECAY: f32 = 0.3;
/// The same for a session's semantic score over its chunks' cosine similarities.
pub(crate) const SEMANTIC_DECAY: f32 = 0.3;
/// What to search, and where (`eywa search`, `Retrieval/Search`).
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    pub query: String,
    /// What a passage must be to count: content types, projects, subagent types, time.
    pub filter: SearchFilter,
    /// Sessions to return (default 10).
    pub limit: usize,
    /// Lexical, semantic or hybrid (the default).
    pub mode: SearchMode,
    /// A node the search is about (`project:eywa`, `session:7acd37a8`, a file…): sessions
    /// of its project, sharing its entities, or near it in the graph rank higher.
    pub focus: Option<String>,
    /// When the question is asked: it anchors the dates the query says ("two weeks
    /// ago") and recency, and passages written after it are left out. Default: now.
    pub as_of: Option<Timestamp>,
}

/// The content types the index holds.
pub const CONTENT_TYPES: [&str; 12] = [
    "user_message",
    "assistant_response",
    "compact_summary",
    "tool_call",
    "tool_result",
    "subagent_summary",
    "summary_label",
    "handoff",
    "plan",
    "memory",
    crate::model::MEMORY_TYPE,
    crate::model::DOCUMENT_TYPE,
];

/// The types a search without types looks in: the conversation (seed 001 searches
/// `subagent_summary`, `summary_label` and `user_message`; the replies, handoffs and plans
/// are added because in conversational memory the replies hold half the answers), not the
/// tool calls and results, compaction summaries, memories or documents.
pub const DEFAULT_TYPES: [&str; 6] = [
    "user_message",
    "assistant_response",
    "subagent_summary",
    "summary_label",
    "handoff",
    "plan",
];

/// Names a search's types may also be given by (seed 002's `chunk | doc | memory`): `doc`
/// is a user's documents, `memory` both memories and project memory files, `chunk` every
/// type that is cut into embedded chunks.
pub const TYPE_ALIASES: [(&str, &[&str]); 3] = [
    ("doc", &[crate::model::DOCUMENT_TYPE]),
    ("memory", &["memory", crate::model::MEMORY_TYPE]),
    ("chunk", &crate::model::EMBEDDED_TYPES),
];

/// The content types `given` names, aliases expanded, each once; an unknown name is the
/// error, saying which are known.
pub fn content_types(given: &[String]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for name in given {
        let name = name.trim();
        let expanded: Vec<&str> = match TYPE_ALIASES.iter().find(|(alias, _)| *alias == name) {
            Some((_, types)) => types.to_vec(),
            None if CONTENT_TYPES.contains(&name) => vec![name],
            None => {
                return Err(format!(
                    "unknown content type `{name}`; known: {}, and {}",
                    CONTENT_TYPES.join(", "),
                    TYPE_ALIASES.map(|(a, _)| a).join(", ")
                ));
            }
        };
        for t in expanded {
            if !out.iter().any(|o| o == t) {
                out.push(t.to_owned());
            }
        }
    }
    Ok(out)
}

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
    /// The best chunk's id, when the passage shown is a chunk semantic search found
    /// (`eywa chunk ID` reads it whole).
    pub chunk_id: Option<String>,
    /// The document the passage is from, when it is one a user added (its id), and its
    /// page, for a PDF.
    pub document_id: Option<String>,
    /// See `document_id`.
    pub page: Option<u32>,
    /// Passages (lexical) or chunks (semantic) of this session that matched, among
    /// those collected.
    pub matches: u32,
    pub signals: Signals,
    /// How to take the session up again in Claude Code; `None` when Claude Code cannot
    /// (a project memory file, a subagent whose parent session is not known).
    pub resume_command: Option<String>,
    /// Who wrote the session, and on which machine; empty for a hit of no session.
    pub user: String,
    /// See `user`.
    pub machine: String,
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
pub(crate) struct Found {
    pub(crate) session_id: String,
    /// The document of the passage: it stands for the session when there is none (a
    /// project memory file).
    pub(crate) doc: String,
    pub(crate) project: String,
    pub(crate) score: f32,
    pub(crate) kind: String,
    /// The passage's text (lexical), to cut the snippet from.
    pub(crate) text: String,
    pub(crate) timestamp: i64,
    pub(crate) agent: Option<String>,
    pub(crate) matches: u32,
    /// The best chunk's vector key (semantic), for its snippet.
    pub(crate) chunk: Option<u64>,
    /// What the passage says that the question asks for (lexical), already in `score`.
    pub(crate) boost: Boost,
}

/// Where the snippet of a hit comes from, cut only for the hits returned.
pub(crate) enum Snippet {
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
pub(crate) struct Focus {
    pub(crate) project: Option<String>,
    /// Hops from the focus node to nodes near it.
    pub(crate) distances: HashMap<NodeId, u32>,
    /// Entities shared with the focus session, relative to the most (0 to 1).
    pub(crate) shared: HashMap<NodeId, f64>,
}

/// What a subagent's passage weighs against its parent session's own.
const SUBAGENT_WEIGHT: f32 = 0.7;

/// Groups retrieved passages by session (or document, for passages of no session), in
/// order of their summed, decayed scores.
pub(crate) fn group(found: impl IntoIterator<Item = Found>, decay: f32) -> Vec<(String, Found)> {
    let mut order: Vec<String> = Vec::new();
    let mut by_key: HashMap<String, Found> = HashMap::new();
    for mut f in found {
        // Seed 004: a subagent's passages count less than its parent's own (the parent
        // holds the context); its report (seed 001's gold) counts in full.
        if f.agent.is_some() && f.kind != "subagent_summary" {
            f.score *= SUBAGENT_WEIGHT;
        }
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

/// Merges the retrievers' sessions, scores them (Eywa-style signals over both ranks, the
/// graph evidence around the focus, and age), best first.
pub(crate) fn fuse(
    mode: SearchMode,
    lexical: Vec<(String, Found)>,
    semantic: Vec<(String, Found)>,
    focus: Option<&Focus>,
    question: &Question,
    asked: Timestamp,
) -> Vec<(SearchHit, Snippet)> {
    let weights = Weights::current();
    let now = asked.0;
    let lexical_ranks = ranks(&lexical.iter().map(|(_, f)| f.score).collect::<Vec<_>>());
    let semantic_ranks = ranks(&semantic.iter().map(|(_, f)| f.score).collect::<Vec<_>>());
    let top = |found: &[(String, Found)]| found.iter().map(|(_, f)| f.score).fold(0.0, f32::max);
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
        let boost = both
            .lexical
            .as_ref()
            .map(|(f, _)| f.boost)
            .unwrap_or_default();
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
        let nearness = question.nearness(best.timestamp, weights.date_half_life_days);
        let mut signals = score(
            mode,
            lex_rank,
            sem_rank,
            bests,
            graph,
            When { age_days, nearness },
            &weights,
        );
        signals.set_boost(boost);
        let snippet = match best.chunk {
            Some(key) => Snippet::Chunk(key),
            None => Snippet::Passage(best.text),
        };
        let (document_id, page) = match crate::model::document_passage(&best.doc) {
            Some((id, page)) => (Some(id), page),
            None => (None, None),
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
            chunk_id: None,
            document_id,
            page,
            matches: best.matches,
            signals,
            // Set once the session is looked up.
            resume_command: None,
            user: String::new(),
            machine: String::new(),
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
