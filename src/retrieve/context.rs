//! Context budgets (seed 001): which of the sessions' candidate items fit a token budget,
//! in priority order, never cutting a text; and the frame the context is injected in.

use crate::model::{Timestamp, thousands};
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
                "unknown mode {other}: use smart, plan, labels, agents or full",
                other = crate::error::quote(other)
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
    /// A command that prints the item whole, for one left out.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub fetch: String,
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
        "document" => (3, nth),
        _ => (6, nth),
    }
}

/// The notice an age calls for, by `thresholds` (mild, stale, old; seed 001's are 7, 30
/// and 90 days); none under the first, or without thresholds.
pub fn staleness(age_days: i64, thresholds: Option<[u32; 3]>) -> Option<String> {
    let [mild, stale, old] = thresholds?.map(i64::from);
    match age_days {
        d if d < mild => None,
        d if d < stale => Some(format!(
            "This context is {d} days old. Code may have changed: verify the current state \
             if anything seems off."
        )),
        d if d < old => Some(format!(
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

/// Where a session's header says how many tokens the session takes, filled in by [`fit`].
pub const SESSION_TOKENS: &str = "{session tokens}";

fn frame_top(budget: usize, used: usize, remaining: usize) -> String {
    format!(
        "=== CONTEXT FROM PREVIOUS SESSIONS ===\nToken budget: {budget} | Used: {used} | \
         Remaining: {remaining}\n\n"
    )
}

/// A session's candidate items, in the order they are shown: its header, and each item's
/// kind and rendered block.
#[derive(Debug, Clone, Default)]
pub struct Candidates {
    pub header: String,
    pub items: Vec<(String, String)>,
    /// For each item, a command that prints it whole (empty: none).
    pub fetch: Vec<String>,
}

/// Tokens the frame around a context takes at most, with budgets up to a billion: what a
/// budget that must hold some items needs on top of them.
pub const FRAME_TOKENS: usize = 48;

/// The line that stands for an item left out: its kind, its size and how to get it.
fn left_out_line(kind: &str, tokens: usize, fetch: &str) -> String {
    format!("[LEFT OUT · {kind} · {tokens} tokens, whole with: {fetch}]\n\n")
}

/// Fits the sessions' candidates to `max_tokens` (`out[i]` describes the session of
/// `candidates[i]`, in the caller's order of preference): each session's must-haves (its
/// header, plan, first subagent summary and first prompt) first, sessions dropped
/// last-first when even those do not fit; then the rest by priority (subagent summaries,
/// the first three prompts, summary labels, further prompts, then messages). An item that
/// does not fit is left out whole, never cut. `dry_run` gives the same accounting without
/// the text.
pub fn fit(
    mut out: Vec<ContextSession>,
    candidates: &[Candidates],
    max_tokens: usize,
    dry_run: bool,
) -> Context {
    // A header says what its session takes (seed 001's `(8,200 tokens)`): counted at its
    // widest (a count as wide as the budget) until the count is known.
    let widest = format!("{} tokens", thousands(max_tokens as u64));
    let headers: Vec<String> = candidates
        .iter()
        .map(|c| c.header.replace(SESSION_TOKENS, &widest))
        .collect();
    let cost = |s: usize, items: &[usize]| -> usize {
        estimate_tokens(&headers[s])
            + items
                .iter()
                .map(|&i| estimate_tokens(&candidates[s].items[i].1))
                .sum::<usize>()
    };
    // Must-haves: the first item of each of plan, subagent summary and user message.
    let must: Vec<Vec<usize>> = candidates
        .iter()
        .map(|c| {
            let mut seen = Vec::new();
            let mut picked = Vec::new();
            for (i, (kind, _)) in c.items.iter().enumerate() {
                let essential = matches!(
                    kind.as_str(),
                    "plan" | "subagent_summary" | "user_message" | "document"
                );
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
        return Context {
            budget: max_tokens,
            used: 0,
            sessions: out,
            warnings: vec![format!(
                "a budget of {max_tokens} tokens cannot hold any context (the frame \
                 alone takes {frame})"
            )],
            text: String::new(),
        };
    };
    let budget = max_tokens;
    let max_tokens = max_tokens_inner;
    let mut kept = candidates.len();
    let must_total = |kept: usize| -> usize { (0..kept).map(|s| cost(s, &must[s])).sum() };
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
        let header = estimate_tokens(&headers[s]);
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
    // Items that can never fit the budget, and must-haves that did not: a line each that
    // names them, their size and the command that prints them whole, while lines fit.
    let mut listed: Vec<Vec<String>> = vec![Vec::new(); candidates.len()];
    for s in 0..kept {
        if out[s].dropped {
            continue;
        }
        let c = &candidates[s];
        for (i, (kind, block)) in c.items.iter().enumerate() {
            let fetch = c.fetch.get(i).map_or("", String::as_str);
            let t = estimate_tokens(block);
            if included[s][i] || fetch.is_empty() || (t <= max_tokens && !must[s].contains(&i)) {
                continue;
            }
            let line = left_out_line(kind, t, fetch);
            let cost = estimate_tokens(&line);
            if used + cost <= max_tokens {
                used += cost;
                listed[s].push(line);
            }
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
                fetch: if included[s][i] {
                    String::new()
                } else {
                    c.fetch.get(i).cloned().unwrap_or_default()
                },
            })
            .collect();
        if session.dropped {
            continue;
        }
        let picked: Vec<usize> = (0..c.items.len()).filter(|&i| included[s][i]).collect();
        session.tokens =
            cost(s, &picked) + listed[s].iter().map(|l| estimate_tokens(l)).sum::<usize>();
        if !dry_run {
            let count = format!("{} tokens", thousands(session.tokens as u64));
            text.push_str(&c.header.replace(SESSION_TOKENS, &count));
            for &i in &picked {
                text.push_str(&c.items[i].1);
            }
            for line in &listed[s] {
                text.push_str(line);
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
    Context {
        budget,
        used,
        sessions: out,
        warnings,
        text,
    }
}

/// A document's header and its pages (its text whole, for a file without pages), the
/// first of them a must-have: each whole or left out.
pub(crate) fn document_candidates(
    doc: &crate::docs::DocumentText,
    now: Timestamp,
) -> (ContextSession, Candidates) {
    let d = &doc.info;
    let age_days = (now.0 - d.modified_at.0).max(0) / 86_400_000;
    let header = format!(
        "--- Document {} · {} · v{} ---\nPath: {} · Changed: {}\n\n",
        d.id,
        d.title,
        d.version,
        d.path,
        crate::model::age(d.modified_at, now)
    );
    let paged = d.pages > 0;
    let items: Vec<(String, String)> = doc
        .pages
        .iter()
        .enumerate()
        .filter(|(_, text)| !text.trim().is_empty())
        .map(|(i, text)| {
            let label = if paged {
                format!("[DOCUMENT · page {}]", i + 1)
            } else {
                "[DOCUMENT]".to_owned()
            };
            (
                "document".to_owned(),
                format!("{label}\n{}\n\n", text.trim()),
            )
        })
        .collect();
    let session = ContextSession {
        session_id: format!("doc:{}", d.id),
        title: d.title.clone(),
        project: d.project.clone().unwrap_or_default(),
        age_days,
        staleness: None,
        dropped: false,
        tokens: 0,
        items: Vec::new(),
    };
    let fetch = vec![format!("eywa docs show {}", d.id); items.len()];
    (
        session,
        Candidates {
            header,
            items,
            fetch,
        },
    )
}

/// For each item, a command that prints it whole: `eywa context` in the mode that gives
/// only its kind, with a budget that holds all of them (plans, subagent summaries), or
/// `eywa sessions show` (prompts and replies).
pub(crate) fn fetch_commands(
    session_id: &str,
    header: &str,
    items: &[(String, String)],
) -> Vec<String> {
    let id8 = &session_id[..session_id.len().min(8)];
    let all = |kind: &str| -> usize {
        items
            .iter()
            .filter(|(k, _)| k == kind)
            .map(|(_, block)| estimate_tokens(block))
            .sum()
    };
    let budget = |kind: &str| FRAME_TOKENS + estimate_tokens(header) + all(kind);
    items
        .iter()
        .map(|(kind, _)| match kind.as_str() {
            "plan" => format!(
                "eywa context {id8} --mode plan --max-tokens {}",
                budget(kind)
            ),
            "subagent_summary" => {
                format!(
                    "eywa context {id8} --mode agents --max-tokens {}",
                    budget(kind)
                )
            }
            "summary_labels" => {
                format!(
                    "eywa context {id8} --mode labels --max-tokens {}",
                    budget(kind)
                )
            }
            _ => format!("eywa sessions show {session_id}"),
        })
        .collect()
}

/// A context item under its tag, with its size (seed 001's `[PLAN - 3,100 tokens]`).
pub(crate) fn tagged(tag: &str, body: &str) -> String {
    let body = body.trim();
    let tokens = estimate_tokens(body);
    format!("[{tag} · {} tokens]\n{body}\n\n", thousands(tokens as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str) -> ContextSession {
        ContextSession {
            session_id: id.into(),
            title: id.into(),
            project: "p".into(),
            age_days: 0,
            staleness: None,
            dropped: false,
            tokens: 0,
            items: Vec::new(),
        }
    }

    fn candidates(items: &[(&str, usize)]) -> Candidates {
        Candidates {
            header: "h".repeat(40),
            items: items
                .iter()
                .map(|(kind, chars)| ((*kind).to_owned(), "x".repeat(*chars)))
                .collect(),
            fetch: Vec::new(),
        }
    }

    #[test]
    fn must_haves_come_first_then_priority_and_nothing_is_cut() {
        let c = [
            candidates(&[("user_message", 400), ("user_message", 400), ("plan", 200)]),
            candidates(&[("summary_labels", 80), ("subagent_summary", 120)]),
        ];
        let frame = estimate_tokens(&frame_top(400, 400, 400)) + estimate_tokens(FRAME_END);
        // Headers (10 each), the plan (50), the first prompt (100), the summary (30) and
        // the labels (20) fit; the second prompt (100) does not, and is left out whole.
        let budget = frame + 10 + 50 + 100 + 10 + 30 + 20 + 60;
        let context = fit(vec![session("a"), session("b")], &c, budget, false);
        let included: Vec<Vec<bool>> = context
            .sessions
            .iter()
            .map(|s| s.items.iter().map(|i| i.included).collect())
            .collect();
        assert_eq!(included, [vec![true, false, true], vec![true, true]]);
        assert!(context.used <= budget);
        assert!(context.text.contains(&"x".repeat(400)));
        assert!(context.warnings.is_empty(), "{:?}", context.warnings);
        // A dry run says the same without the text.
        let dry = fit(vec![session("a"), session("b")], &c, budget, true);
        assert_eq!(dry.used, context.used);
        assert!(dry.text.is_empty());
    }

    #[test]
    fn sessions_are_dropped_last_first_when_their_must_haves_do_not_fit() {
        let c = [
            candidates(&[("user_message", 400)]),
            candidates(&[("user_message", 400)]),
        ];
        let frame = estimate_tokens(&frame_top(200, 200, 200)) + estimate_tokens(FRAME_END);
        let context = fit(vec![session("a"), session("b")], &c, frame + 150, false);
        assert!(!context.sessions[0].dropped);
        assert!(context.sessions[1].dropped);
        assert_eq!(context.warnings.len(), 1, "{:?}", context.warnings);
    }
}
