//! Secrets out of a transcript's text before anything is built from it.

use super::{RedactionCounts, redact};
use crate::claude::Transcript;

/// Redacts every piece of text the extractors read (prompts, assistant prose, the final
/// report, titles and summary labels, and the same in inline subagent runs); returns what
/// was redacted.
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
    if let Some(report) = &mut t.final_report {
        clean(report);
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
