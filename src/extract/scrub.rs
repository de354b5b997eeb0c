//! Secrets out of a transcript's text before anything is built from it.

use super::{RedactionCounts, redact};
use crate::claude::Transcript;

/// Redacts every piece of text the extractors read (prompts, assistant prose, the final
/// report and last text, titles, summary labels, compact summaries, todos, subagent
/// descriptions, and the same in inline subagent runs); returns what was redacted.
pub fn scrub(t: &mut Transcript) -> RedactionCounts {
    let mut counts = RedactionCounts::default();
    scrub_into(t, &mut counts);
    counts
}

fn scrub_into(t: &mut Transcript, counts: &mut RedactionCounts) {
    let mut clean = |s: &mut String| {
        if let std::borrow::Cow::Owned(redacted) = redact(s, counts) {
            *s = redacted;
        }
    };
    t.prompts.iter_mut().for_each(&mut clean);
    t.assistant_text.iter_mut().for_each(&mut clean);
    t.summaries.iter_mut().for_each(&mut clean);
    t.foreign_labels
        .iter_mut()
        .for_each(|(_, label)| clean(label));
    t.todos.iter_mut().for_each(|(content, _)| clean(content));
    t.compactions
        .iter_mut()
        .filter_map(|c| c.summary.as_mut())
        .for_each(&mut clean);
    t.spawns
        .iter_mut()
        .filter_map(|s| s.description.as_mut())
        .for_each(&mut clean);
    for text in [&mut t.final_report, &mut t.last_text, &mut t.index_summary]
        .into_iter()
        .flatten()
    {
        clean(text);
    }
    if let Some(title) = &mut t.custom_title {
        clean(title);
    }
    if let Some(title) = &mut t.ai_title {
        clean(title);
    }
    for run in &mut t.inline_agents {
        scrub_into(run, counts);
    }
}
