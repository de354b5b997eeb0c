//! Secrets out of a transcript's text before anything is built from it.

use super::{RedactionCounts, redact};
use crate::claude::{ReadPoint, Transcript};

/// Redacts every piece of text the extractors read (prompts, assistant prose, the final
/// report and last text, titles, summary labels, compact summaries, todos, subagent
/// descriptions, and the same in inline subagent runs); returns what was redacted.
pub fn scrub(t: &mut Transcript) -> RedactionCounts {
    let mut counts = RedactionCounts::default();
    scrub_into(t, &mut counts);
    counts
}

fn scrub_into(t: &mut Transcript, counts: &mut RedactionCounts) {
    t.visit_texts(&mut |s: &mut String| redact_in_place(s, counts));
}

/// Redacts the text a saved read state holds, so that the cold tier keeps no secret in
/// derived data (the archive itself is the source, served redacted).
pub fn scrub_read_point(point: &mut ReadPoint) -> RedactionCounts {
    let mut counts = RedactionCounts::default();
    point.visit_texts(&mut |s: &mut String| redact_in_place(s, &mut counts));
    counts
}

/// Redacts every text of a handoff (headline, projects, keywords, model, sections), for
/// handoffs that were not built from a scrubbed transcript: a summarizer's answer, an
/// imported Python Eywa handoff, a store written before documents and memories were
/// redacted.
pub fn redact_handoff(h: &mut crate::model::Handoff, counts: &mut RedactionCounts) {
    let sections = &mut h.sections;
    let lists = [
        &mut h.projects,
        &mut h.keywords,
        &mut sections.what_happened,
        &mut sections.key_files,
        &mut sections.open_threads,
    ];
    for text in lists.into_iter().flatten() {
        redact_in_place(text, counts);
    }
    for (topic, explanation) in &mut sections.insights {
        redact_in_place(topic, counts);
        redact_in_place(explanation, counts);
    }
    redact_in_place(&mut h.headline, counts);
    if let Some(model) = &mut h.model {
        redact_in_place(model, counts);
    }
}

/// Redacts `text` where it stands, counting what it found.
pub fn redact_in_place(text: &mut String, counts: &mut RedactionCounts) {
    if let std::borrow::Cow::Owned(redacted) = redact(text, counts) {
        *text = redacted;
    }
}
