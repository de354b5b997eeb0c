//! A handoff's insights: what the session found out, from its checks and from what the
//! assistant stated as a finding.

use super::{Check, INSIGHT_CHARS, INSIGHTS, clip, plan_title};
use crate::claude::Transcript;

/// What the session found out: each check that failed before it passed, then findings
/// the assistant stated; [`INSIGHTS`] at most.
pub(super) fn insights(t: &Transcript, checks: &[Check]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for c in checks
        .iter()
        .filter(|c| c.failed > 0 && c.last_ok == Some(true))
    {
        let times = if c.failed == 1 {
            "once".to_owned()
        } else {
            format!("{} times", c.failed)
        };
        out.push((
            format!("`{}`", c.label),
            format!("failed {times} before passing: the errors it hit were fixed in this session"),
        ));
    }
    if let Some(plan) = t
        .plans
        .last()
        .filter(|p| crate::extract::is_plan(p))
        .and_then(|p| plan_title(p))
    {
        out.push(("Plan".to_owned(), plan));
    }
    out.truncate(INSIGHTS - 1);
    for (topic, sentence) in stated_findings(t) {
        if out.len() >= INSIGHTS {
            break;
        }
        if out.iter().all(|(_, e)| *e != sentence) {
            out.push((topic, sentence));
        }
    }
    out
}

/// Phrases that mark a finding or a decision in assistant prose, with the topic they give
/// it. The first that a sentence holds wins.
const INSIGHT_CUES: [(&str, &str); 24] = [
    ("root cause", "Root cause"),
    ("the bug was", "Bug"),
    ("the bug is", "Bug"),
    ("the issue was", "Issue"),
    ("the issue is", "Issue"),
    ("the problem was", "Problem"),
    ("the problem is", "Problem"),
    ("caused by", "Cause"),
    ("turns out", "Finding"),
    ("it turned out", "Finding"),
    ("i found that", "Finding"),
    ("found that", "Finding"),
    ("the fix is", "Fix"),
    ("the fix was", "Fix"),
    ("fixed by", "Fix"),
    ("lesson", "Lesson"),
    ("decided to", "Decision"),
    ("instead of", "Decision"),
    ("i chose", "Decision"),
    ("we chose", "Decision"),
    ("the reason", "Reason"),
    ("because", "Reason"),
    ("this means", "Implication"),
    ("important:", "Note"),
];

/// Phrases that mark a conclusion in the session's last answer: what works, what does
/// not, what is needed.
const ANSWER_CUES: [(&str, &str); 12] = [
    ("recommend", "Recommendation"),
    ("you should", "Recommendation"),
    ("does not ", "Finding"),
    ("doesn't ", "Finding"),
    ("cannot ", "Finding"),
    ("can't ", "Finding"),
    ("not supported", "Finding"),
    ("supports ", "Finding"),
    ("requires ", "Requirement"),
    ("works ", "Finding"),
    ("is available", "Finding"),
    ("is not available", "Finding"),
];

/// Findings and decisions the assistant stated, first ones first: sentences of its prose
/// (the last message's first) that hold one of [`INSIGHT_CUES`], or of the last answer
/// that hold one of [`ANSWER_CUES`]. Quoted, not paraphrased.
fn stated_findings(t: &Transcript) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let last = t.last_text.iter().map(|text| (text, true));
    let texts = last.chain(t.assistant_text.iter().map(|text| (text, false)));
    for (text, is_last) in texts {
        for sentence in sentences(text) {
            if !is_statement(sentence) {
                continue;
            }
            let lowered = sentence.to_lowercase();
            let cues = INSIGHT_CUES
                .iter()
                .chain(ANSWER_CUES.iter().filter(|_| is_last));
            let Some((_, topic)) = cues.clone().find(|(cue, _)| lowered.contains(cue)) else {
                continue;
            };
            let explanation = clip(&sentence.replace("**", ""), INSIGHT_CHARS);
            if out.iter().all(|(_, e)| *e != explanation) {
                out.push(((*topic).to_owned(), explanation));
            }
            if out.len() == INSIGHTS {
                return out;
            }
        }
    }
    out
}

/// A sentence that states something: long enough, not a question, not code, not the
/// assistant saying what it is about to do.
fn is_statement(sentence: &str) -> bool {
    const ABOUT_TO: [&str; 6] = ["let me", "i'll ", "i will", "now let", "first,", "next,"];
    let lowered = sentence.to_lowercase();
    sentence.chars().count() >= 30
        && !sentence.ends_with('?')
        && !sentence.ends_with(':')
        && !sentence.contains("```")
        && !ABOUT_TO.iter().any(|p| lowered.starts_with(p))
}

/// Sentences of prose: split at `.`, `!` or `?` before whitespace and at line ends, with
/// markdown bullets and emphasis markers trimmed.
pub(in crate::extract) fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.lines().flat_map(|line| {
        let mut out = Vec::new();
        let mut rest = line.trim();
        while !rest.is_empty() {
            let bytes = rest.as_bytes();
            let end = (0..bytes.len())
                .find(|&i| {
                    matches!(bytes[i], b'.' | b'!' | b'?')
                        && bytes.get(i + 1).is_none_or(u8::is_ascii_whitespace)
                })
                .map_or(rest.len(), |i| i + 1);
            let sentence = rest[..end]
                .trim_start_matches(['-', '*', '#', ' ', '>'])
                .trim();
            if sentence.len() > 12 {
                out.push(sentence);
            }
            rest = rest[end..].trim_start();
        }
        out
    })
}
