//! A session's handoff (seed 000): headline, keywords, projects, substance and sections.

use crate::claude::Transcript;

/// Words a headline keeps at most (seed 000: "action-oriented, 5-10 words").
const HEADLINE_WORDS: usize = 10;

/// The session's headline: a custom title (`/rename`), else the last AI title, else the
/// `summary` label of the conversation's latest labelled message (from any file), else the
/// title `sessions-index.json` gives it, else the first sentence of the first real prompt,
/// at most ten words.
pub fn headline(t: &Transcript) -> String {
    let source = t
        .custom_title
        .as_deref()
        .or(t.ai_title.as_deref())
        .or(t.summaries.last().map(String::as_str))
        .or(t.index_summary.as_deref())
        .or(t.prompts.first().map(String::as_str))
        .unwrap_or("");
    let sentence = first_sentence(source);
    let words: Vec<&str> = sentence.split_whitespace().take(HEADLINE_WORDS).collect();
    let text = words
        .join(" ")
        .trim_end_matches(['.', ',', ':', ';', '!', '?'])
        .to_owned();
    if text.is_empty() {
        let short: String = t.session_id.chars().take(8).collect();
        format!("Session {short}")
    } else {
        text
    }
}

pub(super) fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    let line_end = text.find('\n').unwrap_or(text.len());
    let line = &text[..line_end];
    // A sentence ends at `.`, `!` or `?` followed by a space (not inside `file.rs`).
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1).is_none_or(|n| *n == b' ') {
            return &line[..=i];
        }
    }
    line
}

/// Seed 000's substance: 0 = no work (no real prompt, or no answer), 2 = multi-step
/// (several prompts with tool work, or a long tool-driven run), 1 = a single task.
pub fn substance(t: &Transcript) -> u8 {
    if t.prompt_count == 0 || t.assistant_responses == 0 {
        return 0;
    }
    let multi_step = (t.prompt_count >= 3 && t.tool_calls >= 5) || t.tool_calls >= 20;
    if multi_step { 2 } else { 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript(prompts: &[&str]) -> Transcript {
        Transcript {
            session_id: "0123456789".into(),
            prompts: prompts
                .iter()
                .map(std::string::ToString::to_string)
                .collect(),
            prompt_count: prompts.len() as u32,
            ..Transcript::default()
        }
    }

    #[test]
    fn headline_is_the_first_sentence_capped_at_ten_words() {
        let t = transcript(&["Fix the flaky test in parser.rs. Then run it again."]);
        assert_eq!(headline(&t), "Fix the flaky test in parser.rs");
        let t = transcript(&["one two three four five six seven eight nine ten eleven"]);
        assert_eq!(
            headline(&t),
            "one two three four five six seven eight nine ten"
        );
        assert_eq!(headline(&transcript(&[])), "Session 01234567");
    }

    #[test]
    fn titles_win_over_prompts() {
        let mut t = transcript(&["do things"]);
        t.summaries = vec!["Summary label".into()];
        assert_eq!(headline(&t), "Summary label");
        t.ai_title = Some("AI title".into());
        assert_eq!(headline(&t), "AI title");
        t.custom_title = Some("My rename".into());
        assert_eq!(headline(&t), "My rename");
    }

    #[test]
    fn substance_levels() {
        let mut t = transcript(&["a"]);
        assert_eq!(substance(&t), 0, "no answer");
        t.assistant_responses = 1;
        assert_eq!(substance(&t), 1);
        t.tool_calls = 20;
        assert_eq!(substance(&t), 2);
        t.prompt_count = 0;
        assert_eq!(substance(&t), 0, "no real prompt");
    }
}
