//! Context for an agent about to start work (seed 001): what earlier sessions left behind,
//! in priority order, fitted to a token budget without ever cutting a text.

use super::Engine;
use crate::claude::{Mode, read_transcript_with};
use crate::graph::{Direction, EdgeFilter};
use crate::model::{NodeKind, Relation, Timestamp};
use crate::{Error, Result};

/// Default token budget (seed 001).
pub const DEFAULT_MAX_TOKENS: usize = 15_000;
/// Sessions one request may ask for.
pub const MAX_CONTEXT_SESSIONS: usize = 20;

/// What to retrieve of each session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextMode {
    /// Plan, subagent summaries, the first three prompts, summary labels.
    Smart,
    /// The plan only.
    Plan,
    /// Summary labels only.
    Labels,
    /// Subagent summaries only.
    Agents,
    /// Everything, the transcript's messages included.
    Full,
}

impl ContextMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ContextMode::Smart => "smart",
            ContextMode::Plan => "plan",
            ContextMode::Labels => "labels",
            ContextMode::Agents => "agents",
            ContextMode::Full => "full",
        }
    }

    pub fn parse(s: &str) -> Result<ContextMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "smart" => Ok(ContextMode::Smart),
            "plan" => Ok(ContextMode::Plan),
            "labels" => Ok(ContextMode::Labels),
            "agents" => Ok(ContextMode::Agents),
            "full" => Ok(ContextMode::Full),
            other => Err(Error::InvalidArgument(format!(
                "unknown mode `{other}`: use smart, plan, labels, agents or full"
            ))),
        }
    }
}

/// One piece of context and what it costs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ContextItem {
    /// `plan`, `subagent_summary`, `user_message`, `summary_labels` or `message`.
    pub kind: String,
    pub tokens: usize,
    pub included: bool,
    /// The rendered block (empty in a dry run).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// A session's part of the context.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ContextSession {
    pub session_id: String,
    pub title: String,
    pub project: String,
    pub age_days: i64,
    /// The staleness notice its age calls for (none under 7 days).
    pub staleness: Option<String>,
    /// Left out whole: the budget could not hold even its must-haves.
    pub dropped: bool,
    /// Tokens of what was included of it, its header counted.
    pub tokens: usize,
    pub items: Vec<ContextItem>,
}

/// Context for one or more sessions, with its token accounting.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Context {
    pub budget: usize,
    pub used: usize,
    pub sessions: Vec<ContextSession>,
    pub warnings: Vec<String>,
    /// The context to inject (empty in a dry run).
    pub text: String,
}

/// Seed 001's estimate: about four characters a token, rounded up.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// Where an item sits in seed 001's priority order (lower first).
fn rank(kind: &str, nth: usize) -> (u8, usize) {
    match kind {
        "plan" => (1, nth),
        "subagent_summary" => (2, nth),
        "user_message" if nth < 3 => (3, nth),
        "summary_labels" => (4, nth),
        "user_message" => (5, nth),
        _ => (6, nth),
    }
}

fn staleness(age_days: i64) -> Option<String> {
    match age_days {
        d if d < 7 => None,
        d if d < 30 => Some(format!(
            "This context is {d} days old. Code may have changed: verify the current state \
             if anything seems off."
        )),
        d if d < 90 => Some(format!(
            "STALENESS NOTICE: this context is {d} days old. Code, APIs or project structure \
             may have changed. Use it as a starting point for WHERE to look, not WHAT is \
             there now."
        )),
        d => Some(format!(
            "OLD CONTEXT WARNING: this context is {d} days old (~{} months). Significant \
             changes are likely: treat it as history and re-explore before changing code.",
            d / 30
        )),
    }
}

const FRAME_END: &str = "=== END PREVIOUS SESSION CONTEXT ===\n";

fn frame_top(budget: usize, used: usize, remaining: usize) -> String {
    format!(
        "=== CONTEXT FROM PREVIOUS SESSIONS ===\nToken budget: {budget} | Used: {used} | \
         Remaining: {remaining}\n\n"
    )
}

/// A session's candidate items, in the order they are shown.
struct Candidates {
    header: String,
    items: Vec<(String, String)>,
}

impl Engine {
    /// Context from `sessions` (ids or unique prefixes, in the caller's order of
    /// preference), fitted to `max_tokens`: each session's must-haves (its header, plan,
    /// first subagent summary and first prompt) first, sessions dropped last-first when
    /// even those do not fit; then the rest by priority (subagent summaries, the first
    /// three prompts, summary labels, further prompts, then messages in `full` mode). An
    /// item that does not fit is left out whole, never cut. `dry_run` gives the same
    /// accounting without the text.
    pub fn retrieve_context(
        &self,
        sessions: &[String],
        mode: ContextMode,
        max_tokens: usize,
        dry_run: bool,
    ) -> Result<Context> {
        if sessions.is_empty() {
            return Err(Error::InvalidArgument("give at least one session".into()));
        }
        if sessions.len() > MAX_CONTEXT_SESSIONS {
            return Err(Error::InvalidArgument(format!(
                "at most {MAX_CONTEXT_SESSIONS} sessions at once, got {}",
                sessions.len()
            )));
        }
        if max_tokens == 0 {
            return Err(Error::InvalidArgument("max_tokens must be positive".into()));
        }
        let now = Timestamp::now();
        let mut out: Vec<ContextSession> = Vec::new();
        let mut candidates: Vec<Candidates> = Vec::new();
        for reference in sessions {
            let (session, c) = self.context_candidates(reference, mode, now)?;
            out.push(session);
            candidates.push(c);
        }
        let cost = |c: &Candidates, items: &[usize]| -> usize {
            estimate_tokens(&c.header)
                + items
                    .iter()
                    .map(|&i| estimate_tokens(&c.items[i].1))
                    .sum::<usize>()
        };
        // Must-haves: the first item of each of plan, subagent summary and user message.
        let must: Vec<Vec<usize>> = candidates
            .iter()
            .map(|c| {
                let mut seen = Vec::new();
                let mut picked = Vec::new();
                for (i, (kind, _)) in c.items.iter().enumerate() {
                    let essential =
                        matches!(kind.as_str(), "plan" | "subagent_summary" | "user_message");
                    if essential && !seen.contains(kind) {
                        seen.push(kind.clone());
                        picked.push(i);
                    }
                }
                picked
            })
            .collect();
        let mut warnings = Vec::new();
        // The frame around the context is part of what is injected: reserve it first,
        // at its widest (every number as wide as the budget).
        let frame = estimate_tokens(&frame_top(max_tokens, max_tokens, max_tokens))
            + estimate_tokens(FRAME_END);
        let Some(max_tokens_inner) = max_tokens.checked_sub(frame) else {
            for s in &mut out {
                s.dropped = true;
            }
            return Ok(Context {
                budget: max_tokens,
                used: 0,
                sessions: out,
                warnings: vec![format!(
                    "a budget of {max_tokens} tokens cannot hold any context (the frame \
                     alone takes {frame})"
                )],
                text: String::new(),
            });
        };
        let budget = max_tokens;
        let max_tokens = max_tokens_inner;
        let mut kept = candidates.len();
        let must_total =
            |kept: usize| -> usize { (0..kept).map(|s| cost(&candidates[s], &must[s])).sum() };
        while kept > 1 && must_total(kept) > max_tokens {
            kept -= 1;
        }
        if kept < candidates.len() {
            warnings.push(format!(
                "Reduced to {kept} of {} sessions to fit the {budget}-token budget",
                candidates.len()
            ));
            for s in &mut out[kept..] {
                s.dropped = true;
            }
        }
        // Fill: must-haves (each only if it fits), then the rest by priority.
        let mut included: Vec<Vec<bool>> = candidates
            .iter()
            .map(|c| vec![false; c.items.len()])
            .collect();
        let mut used = 0;
        for s in 0..kept {
            let header = estimate_tokens(&candidates[s].header);
            if used + header > max_tokens {
                out[s].dropped = true;
                continue;
            }
            used += header;
            for &i in &must[s] {
                let t = estimate_tokens(&candidates[s].items[i].1);
                if used + t <= max_tokens {
                    included[s][i] = true;
                    used += t;
                } else {
                    warnings.push(format!(
                        "{}: its {} ({t} tokens) does not fit and is left out",
                        out[s].session_id, candidates[s].items[i].0
                    ));
                }
            }
        }
        let mut rest: Vec<((u8, usize), usize, usize)> = Vec::new();
        for s in 0..kept {
            if out[s].dropped {
                continue;
            }
            let mut nth: std::collections::HashMap<&str, usize> = Default::default();
            for (i, (kind, _)) in candidates[s].items.iter().enumerate() {
                let n = nth.entry(kind.as_str()).or_default();
                if !included[s][i] {
                    rest.push((rank(kind, *n), s, i));
                }
                *n += 1;
            }
        }
        rest.sort();
        for (_, s, i) in rest {
            let t = estimate_tokens(&candidates[s].items[i].1);
            if used + t <= max_tokens {
                included[s][i] = true;
                used += t;
            }
        }
        // Accounting and text.
        let mut text = String::new();
        for (s, c) in candidates.iter().enumerate() {
            let session = &mut out[s];
            session.items = c
                .items
                .iter()
                .enumerate()
                .map(|(i, (kind, block))| ContextItem {
                    kind: kind.clone(),
                    tokens: estimate_tokens(block),
                    included: included[s][i] && !session.dropped,
                    text: if dry_run || !included[s][i] {
                        String::new()
                    } else {
                        block.clone()
                    },
                })
                .collect();
            if session.dropped {
                continue;
            }
            let picked: Vec<usize> = (0..c.items.len()).filter(|&i| included[s][i]).collect();
            session.tokens = cost(c, &picked);
            if !dry_run {
                text.push_str(&c.header);
                for &i in &picked {
                    text.push_str(&c.items[i].1);
                }
            }
        }
        let used = used + frame;
        let text = if dry_run {
            text
        } else {
            format!(
                "{}{text}{FRAME_END}",
                frame_top(budget, used, budget - used)
            )
        };
        Ok(Context {
            budget,
            used,
            sessions: out,
            warnings,
            text,
        })
    }

    /// A session's header and its candidate items in display order.
    fn context_candidates(
        &self,
        reference: &str,
        mode: ContextMode,
        now: Timestamp,
    ) -> Result<(ContextSession, Candidates)> {
        let record = self.session_source(reference)?;
        let node = self
            .graph
            .node(crate::model::NodeId::episode(&record.session_id))?
            .ok_or_else(|| Error::NotFound(format!("no session `{reference}`")))?;
        let e = node.episode().expect("a session node is an episode");
        let age_days = (now.0 - e.end.0).max(0) / 86_400_000;
        let stale = staleness(age_days);
        let mut header = format!(
            "--- Session {} · {} ---\nProject: {} · Age: {}\n",
            &e.session_id[..e.session_id.len().min(8)],
            e.title,
            e.project,
            crate::model::age(e.end, now)
        );
        if let Some(notice) = &stale {
            header.push_str(&format!("{notice}\n"));
        }
        header.push('\n');

        let mut items: Vec<(String, String)> = Vec::new();
        let wants = |m: &[ContextMode]| m.contains(&mode);
        if wants(&[ContextMode::Smart, ContextMode::Plan, ContextMode::Full]) {
            let filter = EdgeFilter {
                direction: Direction::Out,
                relations: vec![Relation::HasPlan],
                ..EdgeFilter::default()
            };
            for plan in self.graph.neighbors(node.id, &filter, 10)? {
                if let (NodeKind::Document(_), Some(content)) =
                    (&plan.node.kind, &plan.node.content)
                {
                    items.push(("plan".into(), format!("[PLAN]\n{}\n\n", content.trim())));
                }
            }
        }
        if wants(&[ContextMode::Smart, ContextMode::Agents, ContextMode::Full]) {
            let filter = EdgeFilter {
                direction: Direction::Out,
                relations: vec![Relation::Spawned],
                ..EdgeFilter::default()
            };
            for child in self.graph.neighbors(node.id, &filter, 1_000)? {
                let Some(agent) = child.node.episode().and_then(|e| e.agent.as_ref()) else {
                    continue;
                };
                if let Some(summary) = &agent.summary {
                    let kind = agent.agent_type.as_deref().unwrap_or("agent");
                    items.push((
                        "subagent_summary".into(),
                        format!("[SUBAGENT SUMMARY · {kind}]\n{}\n\n", summary.trim()),
                    ));
                }
            }
        }
        if mode != ContextMode::Plan && mode != ContextMode::Agents {
            let transcript = self.context_transcript(&record)?;
            if mode != ContextMode::Labels {
                let prompts = match mode {
                    ContextMode::Full => transcript.prompts.len(),
                    _ => 3,
                };
                for p in transcript.prompts.iter().take(prompts) {
                    items.push(("user_message".into(), format!("USER: {}\n\n", p.trim())));
                }
            }
            if !transcript.summaries.is_empty() {
                let labels: Vec<String> = transcript
                    .summaries
                    .iter()
                    .map(|l| format!("• {l}"))
                    .collect();
                items.push((
                    "summary_labels".into(),
                    format!("[SUMMARY LABELS]\n{}\n\n", labels.join("\n")),
                ));
            }
            if mode == ContextMode::Full {
                for text in &transcript.assistant_text {
                    items.push(("message".into(), format!("ASSISTANT: {}\n\n", text.trim())));
                }
            }
        }
        Ok((
            ContextSession {
                session_id: e.session_id.clone(),
                title: e.title.clone(),
                project: e.project.clone(),
                age_days,
                staleness: stale,
                dropped: false,
                tokens: 0,
                items: Vec::new(),
            },
            Candidates { header, items },
        ))
    }

    /// A session's transcript, read again (live file or archive) with every label known,
    /// redacted.
    fn context_transcript(
        &self,
        record: &crate::graph::SourceRecord,
    ) -> Result<crate::claude::Transcript> {
        let reader = self.archive_reader(record)?.ok_or_else(|| {
            Error::NotFound(format!(
                "the transcript of session `{}` was not archived",
                record.session_id
            ))
        })?;
        self.load_owners()?;
        let labels = self.graph.labels()?;
        let history = super::ingest::RunHistory {
            owners: &self.owners,
            labels: &labels,
        };
        let mut t = read_transcript_with(reader, &record.session_id, Mode::Main, &history)
            .map_err(Error::io(&record.path))?;
        crate::extract::scrub(&mut t);
        Ok(t)
    }
}
