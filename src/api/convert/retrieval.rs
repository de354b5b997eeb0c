//! The Retrieval service's messages: handoffs for a query, search, and context to inject.

use tonic::Status;

use super::{count, n32, optional_time, resume_command, some, time, timestamp};
use crate::api::pb;
use crate::engine::{
    Context, ContextItem, ContextMode, ContextSession, DEFAULT_MAX_TOKENS, GetOutcome, HandoffHit,
    MAX_DAYS_BACK, MAX_LIMIT, MAX_SEARCH_LIMIT, SearchHit, SearchRequest, SearchResults,
};
use crate::model::{SearchFilter, Timestamp};
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

impl From<GetOutcome> for pb::GetHandoffsResponse {
    fn from(outcome: GetOutcome) -> Self {
        let GetOutcome {
            tokens,
            hits,
            fallback_recent,
        } = outcome;
        pb::GetHandoffsResponse {
            handoffs: hits
                .into_iter()
                .map(|HandoffHit { handoff, score }| pb::ScoredHandoff {
                    handoff: Some(handoff.into()),
                    score,
                })
                .collect(),
            tokens,
            fallback_recent,
        }
    }
}

impl TryFrom<pb::GetHandoffsResponse> for GetOutcome {
    type Error = Status;

    fn try_from(response: pb::GetHandoffsResponse) -> Result<Self, Status> {
        let pb::GetHandoffsResponse {
            handoffs,
            tokens,
            fallback_recent,
        } = response;
        let hits = handoffs
            .into_iter()
            .map(|pb::ScoredHandoff { handoff, score }| {
                let handoff = handoff.ok_or_else(|| Status::internal("hit without a handoff"))?;
                Ok(HandoffHit {
                    handoff: handoff.try_into()?,
                    score,
                })
            })
            .collect::<Result<_, Status>>()?;
        Ok(GetOutcome {
            tokens,
            hits,
            fallback_recent,
        })
    }
}

/// Search results for the wire, each hit's age told against `now`.
pub fn search_to_wire(results: SearchResults, now: Timestamp) -> pb::SearchResponse {
    let SearchResults {
        hits,
        mode,
        notices,
    } = results;
    pb::SearchResponse {
        hits: hits.into_iter().map(|h| search_hit(h, now)).collect(),
        mode: mode.as_str().to_owned(),
        notices,
    }
}

/// A search hit for the wire, its age told against `now`.
fn search_hit(hit: SearchHit, now: Timestamp) -> pb::SearchHit {
    let SearchHit {
        session_id,
        title,
        project,
        score,
        kind,
        snippet,
        timestamp: at,
        agent,
        matches,
        signals,
    } = hit;
    pb::SearchHit {
        short_id: session_id.chars().take(8).collect(),
        resume_command: if session_id.is_empty() {
            String::new()
        } else {
            resume_command(&session_id)
        },
        session_id,
        title,
        project,
        score: f64::from(score),
        r#type: kind,
        snippet,
        timestamp: Some(timestamp(at)),
        age: crate::model::age(at, now),
        agent: agent.unwrap_or_default(),
        matches,
        signals: Some(signals.into()),
    }
}

/// A server's search results.
impl From<pb::SearchResponse> for SearchResults {
    fn from(response: pb::SearchResponse) -> Self {
        let pb::SearchResponse {
            hits,
            mode,
            notices,
        } = response;
        let hits = hits
            .into_iter()
            .map(
                |pb::SearchHit {
                     session_id,
                     short_id: _,
                     title,
                     project,
                     score,
                     r#type,
                     snippet,
                     timestamp,
                     age: _,
                     resume_command: _,
                     agent,
                     matches,
                     signals,
                 }| SearchHit {
                    session_id,
                    title,
                    project,
                    score: score as f32,
                    kind: r#type,
                    snippet,
                    timestamp: time(timestamp),
                    agent: some(agent),
                    matches,
                    signals: signals.map(Into::into).unwrap_or_default(),
                },
            )
            .collect();
        SearchResults {
            hits,
            mode: SearchMode::parse(&mode).unwrap_or_default(),
            notices,
        }
    }
}

impl From<Signals> for pb::Signals {
    fn from(signals: Signals) -> Self {
        let Signals {
            lexical,
            semantic,
            retrieval,
            same_project,
            shared,
            distance,
            proximity,
            recency,
            total,
        } = signals;
        let ranked = |r: Option<Ranked>| {
            r.map(|r| pb::RankedSignal {
                rank: r.rank,
                score: f64::from(r.score),
            })
        };
        pb::Signals {
            lexical: ranked(lexical),
            semantic: ranked(semantic),
            retrieval,
            same_project,
            shared,
            distance,
            proximity,
            recency,
            total,
        }
    }
}

impl From<pb::Signals> for Signals {
    fn from(signals: pb::Signals) -> Self {
        let pb::Signals {
            lexical,
            semantic,
            retrieval,
            same_project,
            shared,
            distance,
            proximity,
            recency,
            total,
        } = signals;
        let ranked = |r: Option<pb::RankedSignal>| {
            r.map(|r| Ranked {
                rank: r.rank,
                score: r.score as f32,
            })
        };
        Signals {
            lexical: ranked(lexical),
            semantic: ranked(semantic),
            retrieval,
            same_project,
            shared,
            distance,
            proximity,
            recency,
            total,
        }
    }
}

impl From<Context> for pb::RetrieveContextResponse {
    fn from(c: Context) -> Self {
        let Context {
            budget,
            used,
            sessions,
            warnings,
            text,
        } = c;
        pb::RetrieveContextResponse {
            budget: n32(budget),
            used: n32(used),
            remaining: n32(budget.saturating_sub(used)),
            warnings,
            text,
            sessions: sessions
                .into_iter()
                .map(|s| pb::ContextSession {
                    session_id: s.session_id,
                    title: s.title,
                    project: s.project,
                    age_days: s.age_days,
                    staleness: s.staleness.unwrap_or_default(),
                    dropped: s.dropped,
                    tokens: n32(s.tokens),
                    items: s
                        .items
                        .into_iter()
                        .map(|i| pb::ContextItem {
                            r#type: i.kind,
                            tokens: n32(i.tokens),
                            included: i.included,
                            text: i.text,
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

/// A server's context.
impl From<pb::RetrieveContextResponse> for Context {
    fn from(c: pb::RetrieveContextResponse) -> Context {
        let pb::RetrieveContextResponse {
            budget,
            used,
            // Computed from the two above.
            remaining: _,
            sessions,
            warnings,
            text,
        } = c;
        Context {
            budget: budget as usize,
            used: used as usize,
            warnings,
            text,
            sessions: sessions
                .into_iter()
                .map(
                    |pb::ContextSession {
                         session_id,
                         title,
                         project,
                         age_days,
                         staleness,
                         dropped,
                         tokens,
                         items,
                     }| ContextSession {
                        session_id,
                        title,
                        project,
                        age_days,
                        staleness: some(staleness),
                        dropped,
                        tokens: tokens as usize,
                        items: items
                            .into_iter()
                            .map(
                                |pb::ContextItem {
                                     r#type,
                                     tokens,
                                     included,
                                     text,
                                 }| ContextItem {
                                    kind: r#type,
                                    tokens: tokens as usize,
                                    included,
                                    text,
                                },
                            )
                            .collect(),
                    },
                )
                .collect(),
        }
    }
}
