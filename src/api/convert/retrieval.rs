//! The Retrieval service's messages: handoffs for a query, search, and context to inject.

use tonic::Status;

use super::wire::wire;
use super::{count, n32, optional_time, resume_command};
use crate::api::pb;
use crate::engine::{
    Context, ContextItem, ContextMode, ContextSession, DEFAULT_MAX_TOKENS, GetOutcome, HandoffHit,
    MAX_DAYS_BACK, MAX_LIMIT, MAX_SEARCH_LIMIT, SearchHit, SearchRequest, SearchResults,
};
use crate::model::{SearchFilter, Timestamp, age};
use crate::retrieve::{DEFAULT_DAYS_BACK, DEFAULT_LIMIT, GetOptions, Ranked, SearchMode, Signals};

/// A `GetHandoffs` request, validated.
pub struct GetQuery {
    pub query: String,
    pub options: GetOptions,
}

impl TryFrom<pb::GetHandoffsRequest> for GetQuery {
    type Error = Status;

    fn try_from(request: pb::GetHandoffsRequest) -> Result<Self, Status> {
        let pb::GetHandoffsRequest {
            query,
            days_back,
            limit,
            projects,
        } = request;
        let days_back = count(
            "days_back",
            days_back,
            DEFAULT_DAYS_BACK as usize,
            MAX_DAYS_BACK as usize,
        )? as u32;
        let limit = count("limit", limit, DEFAULT_LIMIT, MAX_LIMIT)?;
        if projects.iter().any(|p| p.trim().is_empty()) {
            return Err(Status::invalid_argument("projects: empty project name"));
        }
        Ok(GetQuery {
            query,
            options: GetOptions {
                days_back,
                limit,
                projects,
            },
        })
    }
}

impl TryFrom<pb::SearchRequest> for SearchRequest {
    type Error = Status;

    fn try_from(request: pb::SearchRequest) -> Result<Self, Status> {
        let pb::SearchRequest {
            query,
            types,
            projects,
            since,
            until,
            limit,
            agent_types,
            mode,
            focus,
        } = request;
        if query.trim().is_empty() {
            return Err(Status::invalid_argument("query: give words to search for"));
        }
        let mode = if mode.trim().is_empty() {
            SearchMode::default()
        } else {
            SearchMode::parse(&mode).ok_or_else(|| {
                Status::invalid_argument(format!(
                    "mode: `{mode}` is not lexical, semantic or hybrid"
                ))
            })?
        };
        if projects.iter().any(|p| p.trim().is_empty()) {
            return Err(Status::invalid_argument("projects: empty project name"));
        }
        Ok(SearchRequest {
            query,
            filter: SearchFilter {
                kinds: types,
                projects,
                agent_types,
                since: optional_time("since", since)?,
                until: optional_time("until", until)?,
            },
            limit: count("limit", limit, 10, MAX_SEARCH_LIMIT)?,
            mode,
            focus: Some(focus.trim().to_owned()).filter(|f| !f.is_empty()),
        })
    }
}

/// A `RetrieveContext` request, validated.
pub struct ContextQuery {
    pub sessions: Vec<String>,
    pub mode: ContextMode,
    pub max_tokens: usize,
    pub dry_run: bool,
}

impl TryFrom<pb::RetrieveContextRequest> for ContextQuery {
    type Error = Status;

    fn try_from(request: pb::RetrieveContextRequest) -> Result<Self, Status> {
        let pb::RetrieveContextRequest {
            sessions,
            mode,
            max_tokens,
            dry_run,
        } = request;
        Ok(ContextQuery {
            sessions,
            mode: ContextMode::parse(&mode)?,
            max_tokens: count(
                "max_tokens",
                max_tokens,
                DEFAULT_MAX_TOKENS,
                i32::MAX as usize,
            )?,
            dry_run,
        })
    }
}

wire! {
    GetOutcome <=> pb::GetHandoffsResponse { tokens, hits = handoffs: messages, fallback_recent }
}

wire! {
    HandoffHit <=> pb::ScoredHandoff { handoff: present, score }
}

wire! {
    SearchResults <=> pb::SearchResponse { hits: messages, mode: search_mode, notices }
}

// A hit's age is told against the moment it is sent.
wire! {
    SearchHit <=> pb::SearchHit {
        title, project, score: float, kind = r#type, snippet, timestamp: time, agent: text,
        matches, signals: required, session_id,
    }
    to_wire(h) {
        short_id: h.session_id.chars().take(8).collect(),
        resume_command: if h.session_id.is_empty() {
            String::new()
        } else {
            resume_command(&h.session_id)
        },
        age: age(h.timestamp, Timestamp::now()),
    }
}

wire! {
    Signals <=> pb::Signals {
        lexical: maybe, semantic: maybe, retrieval, same_project, shared, distance,
        proximity, recency, total,
    }
}

wire! {
    Ranked <=> pb::RankedSignal { rank, score: float }
}

wire! {
    Context <=> pb::RetrieveContextResponse {
        budget: size32, used: size32, sessions: messages, warnings, text,
    }
    to_wire(c) { remaining: n32(c.budget.saturating_sub(c.used)) }
}

wire! {
    ContextSession <=> pb::ContextSession {
        session_id, title, project, age_days, staleness: text, dropped, tokens: size32,
        items: messages,
    }
}

wire! {
    ContextItem <=> pb::ContextItem { kind = r#type, tokens: size32, included, text }
}
