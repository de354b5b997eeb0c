//! What the hooks hand an agent. At SessionStart, the project's best handoffs with their
//! open threads and its memories, fitted to a token budget, each block whole or left out:
//! one presenter for the hook and the web view's `/context`, which shows the same text
//! and what did not fit. At a prompt, the earlier sessions about it ([`prompt_context`]).

use chrono::NaiveDate;

use crate::memory::MemoryItem;
use crate::model::{Handoff, Timestamp, age};

use super::handoff::resume_line;
use crate::retrieve::context::{estimate_tokens, staleness};
use crate::retrieve::search::SearchHit;

/// How many handoffs SessionStart hands over: the project's most recent, at any age (a
/// project picked up again after months needs them most).
pub const START_HANDOFFS: usize = 3;
/// How many of the project's memories SessionStart adds.
pub const START_MEMORIES: usize = 5;

/// Where the blocks come from: the engine, or a client of a running server.
pub trait StartSource {
    /// What a failed read says.
    type Error;
    /// The project's best handoffs for an empty query, best first, at most `limit`.
    fn best_handoffs(&self, project: &str, limit: usize) -> Result<Vec<Handoff>, Self::Error>;
    /// The stored handoff of a session, with its sections (a ranked handoff may carry its
    /// headline alone).
    fn stored_handoff(&self, session_id: &str) -> Result<Option<Handoff>, Self::Error>;
    /// The project's memories, most recently changed first, at most `limit`.
    fn memories(&self, project: &str, limit: usize) -> Result<Vec<MemoryItem>, Self::Error>;
}

/// One block SessionStart considered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartBlock {
    /// What it is: a handoff's headline, or "Memories".
    pub title: String,
    /// Its text, redacted, as it would go in.
    pub text: String,
    /// Its cost in tokens.
    pub tokens: usize,
    /// Whether it fit.
    pub included: bool,
}

/// What a session starting in a project is handed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartContext {
    /// The project's name, as the hook takes it from the cwd.
    pub project: String,
    /// The text handed over; `None` when the project has no handoff or none fits.
    pub text: Option<String>,
    /// Its tokens (0 when none).
    pub tokens: usize,
    /// The budget it was fitted to.
    pub budget: usize,
    /// Every block considered, in order.
    pub blocks: Vec<StartBlock>,
}

/// What SessionStart hands a session `session_id` (not handed its own handoff) starting
/// in `project`, within `max_tokens`, telling ages by `now` (in `today`, the local date).
pub fn session_start<S: StartSource>(
    source: &S,
    project: &str,
    session_id: &str,
    max_tokens: usize,
    thresholds: Option<[u32; 3]>,
    now: Timestamp,
    today: NaiveDate,
) -> Result<StartContext, S::Error> {
    let mut handoffs = Vec::new();
    // One more: the session being resumed is not news to itself.
    for h in source.best_handoffs(project, START_HANDOFFS + 1)? {
        if crate::claude::claude_id(&h.session_id) == session_id {
            continue;
        }
        if handoffs.len() == START_HANDOFFS {
            break;
        }
        handoffs.push(full(source, h)?);
    }
    let mut blocks: Vec<(String, String)> = handoffs
        .iter()
        .map(|h| (h.headline.clone(), handoff_block(h, thresholds, now, today)))
        .collect();
    if !blocks.is_empty() {
        // The project's memories are a bonus: a store without them (or a listing that
        // fails) still hands off.
        let memories = source
            .memories(project, START_MEMORIES * 4)
            .unwrap_or_default();
        let lines: Vec<String> = memories
            .iter()
            // CLAUDE.md is in the agent's context already.
            .filter(|m| {
                !m.origin
                    .as_deref()
                    .is_some_and(|o| o.ends_with("CLAUDE.md"))
            })
            .take(START_MEMORIES)
            .map(|m| {
                format!(
                    "- [{}] {} (`{}`)",
                    m.memory_type.as_str(),
                    m.content.trim(),
                    m.id
                )
            })
            .collect();
        if !lines.is_empty() {
            // After the best handoff, before the others.
            blocks.insert(
                1,
                (
                    "Memories".to_owned(),
                    format!("### Memories\n{}", lines.join("\n")),
                ),
            );
        }
    }
    let header = format!(
        "## eywa: what earlier sessions of {project} left\n(eywa_get, eywa_search and \
         eywa_session read more)\n"
    );
    let (text, tokens, blocks) = fit(&header, blocks, max_tokens);
    Ok(StartContext {
        project: project.to_owned(),
        text,
        tokens,
        budget: max_tokens,
        blocks,
    })
}

/// `handoff` with its stored sections when the ranked one carries none.
pub fn full<S: StartSource>(source: &S, handoff: Handoff) -> Result<Handoff, S::Error> {
    let s = &handoff.sections;
    let bare = s.what_happened.is_empty()
        && s.insights.is_empty()
        && s.key_files.is_empty()
        && s.open_threads.is_empty();
    if !bare || handoff.substance == 0 {
        return Ok(handoff);
    }
    Ok(source
        .stored_handoff(&handoff.session_id)?
        .unwrap_or(handoff))
}

/// A handoff for the start of a session: headline, the notice its age calls for (as
/// `eywa context` gives it), what happened, open threads, resume.
pub fn handoff_block(
    h: &Handoff,
    thresholds: Option<[u32; 3]>,
    now: Timestamp,
    today: NaiveDate,
) -> String {
    let days = (today - h.date).num_days().max(0);
    let when = match days {
        0 => "today".to_owned(),
        1 => "yesterday".to_owned(),
        n => age(Timestamp(now.0 - n * 86_400_000), now),
    };
    let mut out = format!(
        "### {} · {} (session `{}`, {when})\n",
        h.date, h.headline, h.short_id
    );
    if let Some(notice) = staleness(days, thresholds) {
        out.push_str(&format!("{notice}\n"));
    }
    for item in h.sections.what_happened.iter().take(3) {
        out.push_str(&format!("- {}\n", item.trim()));
    }
    if !h.sections.open_threads.is_empty() {
        out.push_str("Open threads:\n");
        for item in &h.sections.open_threads {
            out.push_str(&format!("- [ ] {}\n", item.trim()));
        }
    }
    out.push_str(&resume_line(h));
    out
}

/// `header` and the blocks (each a title and its text) that fit in `budget` tokens, in
/// order, each whole or left out: the text (`None` when not even one fits), its tokens,
/// and every block with whether it went in.
pub fn fit(
    header: &str,
    blocks: Vec<(String, String)>,
    budget: usize,
) -> (Option<String>, usize, Vec<StartBlock>) {
    let mut text = header.to_owned();
    let mut used = estimate_tokens(header);
    let mut considered = Vec::new();
    for (title, block) in blocks {
        // What eywa stores is redacted as it comes in; this is the last look before it
        // goes into a session (a store from before documents and memories were redacted,
        // a server of an older version), and before it is measured.
        let block = crate::extract::redact(&block, &mut crate::extract::RedactionCounts::default());
        let tokens = estimate_tokens(&block) + 1;
        let included = used + tokens <= budget;
        if included {
            text.push('\n');
            text.push_str(&block);
            text.push('\n');
            used += tokens;
        }
        considered.push(StartBlock {
            title,
            text: block.into_owned(),
            tokens,
            included,
        });
    }
    if considered.iter().any(|b| b.included) {
        (Some(text), used, considered)
    } else {
        (None, 0, considered)
    }
}

/// What the prompt hook adds to a prompt: the earlier sessions `hits` found about it, as
/// they read to an agent ([`super::hit::markdown`]), those that fit in `budget` tokens.
pub fn prompt_context(hits: &[&SearchHit], now: Timestamp, budget: usize) -> Option<String> {
    if hits.is_empty() {
        return None;
    }
    let blocks: Vec<String> = hits
        .iter()
        .map(|h| format!("- {}", super::hit::markdown(h, now)))
        .collect();
    fit_blocks("## eywa: earlier sessions about this\n", &blocks, budget)
}

/// [`fit`] for blocks without titles: the text alone.
pub fn fit_blocks(header: &str, blocks: &[String], budget: usize) -> Option<String> {
    let titled = blocks.iter().map(|b| (String::new(), b.clone())).collect();
    fit(header, titled, budget).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_that_do_not_fit_are_left_out_whole() {
        let blocks = vec!["a".repeat(40), "b".repeat(400), "c".repeat(40)];
        let out = fit_blocks("h\n", &blocks, 40).unwrap();
        assert!(out.contains(&"a".repeat(40)) && out.contains(&"c".repeat(40)));
        assert!(!out.contains('b'));
        assert!(estimate_tokens(&out) <= 40);
        assert_eq!(fit_blocks("h\n", &["x".repeat(400)], 40), None);
        let (_, used, considered) = fit("h\n", vec![("b".into(), "b".repeat(400))], 40);
        assert_eq!(used, 0);
        assert!(!considered[0].included);
    }
}
