//! A session's handoff (seed 000): headline, keywords, projects, substance and sections.

use crate::claude::{EventKind, Transcript};

/// Words a headline keeps at most (seed 000: "action-oriented, 5-10 words").
const HEADLINE_WORDS: usize = 10;
/// Words a headline derived from the session's events needs (seed 000: at least 5).
const MIN_DERIVED_WORDS: usize = 5;

/// The session's headline (seed 000: "action-oriented, 5-10 words"), from the first
/// source that gives one:
/// 1. a custom title (`/rename`), the last AI title, the `summary` label of the
///    conversation's latest labelled message (from any file), or the title
///    `sessions-index.json` gives it: Claude Code's own words;
/// 2. the subject of the session's main commit (conventional prefixes dropped);
/// 3. the title of the plan it made;
/// 4. the heading of its final report;
/// 5. the task as the assistant restated it ("I'll help you add …");
/// 6. the first prompt, cleaned of greetings and "please", "can you".
///
/// Each is cut to its first sentence and ten words; `Session <id8>` when none gives one.
pub fn headline(t: &Transcript) -> String {
    let titled = t
        .custom_title
        .as_deref()
        .or(t.ai_title.as_deref())
        .or(t.summaries.last().map(String::as_str))
        .or(t.index_summary.as_deref())
        .map(str::to_owned);
    // Derived ones shorter than five words give way to the next source; the request is
    // the last resort, whatever its length.
    let derived = || {
        let candidates = [
            main_commit(t),
            t.plans
                .last()
                .filter(|p| super::is_plan(p))
                .and_then(|p| plan_title(p)),
            t.final_report.as_deref().and_then(report_title),
            t.assistant_text.first().and_then(|a| restated_task(a)),
        ];
        candidates
            .into_iter()
            .flatten()
            .map(|c| words_of(first_sentence(&c), HEADLINE_WORDS))
            .find(|c| c.split_whitespace().count() >= MIN_DERIVED_WORDS)
            .or_else(|| t.prompts.first().and_then(|p| cleaned_request(p)))
    };
    let source = titled.or_else(derived).unwrap_or_default();
    let text = words_of(first_sentence(&source), HEADLINE_WORDS);
    if text.is_empty() {
        let short: String = t.session_id.chars().take(8).collect();
        format!("Session {short}")
    } else {
        upper_first(&text)
    }
}

/// At most `n` words of `text`, without trailing punctuation.
fn words_of(text: &str, n: usize) -> String {
    let words: Vec<&str> = text.split_whitespace().take(n).collect();
    words
        .join(" ")
        .trim_end_matches(['.', ',', ':', ';', '!', '?', '-'])
        .trim_end()
        .to_owned()
}

/// The subject of the session's main commit: the first that is a feature or a fix, else
/// the first, with its conventional prefix (`feat(x): `) dropped.
fn main_commit(t: &Transcript) -> Option<String> {
    let subjects: Vec<(&str, &str)> = t
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Commit && e.ok == Some(true))
        .map(|e| split_conventional(&e.text))
        .collect();
    let main = subjects
        .iter()
        .find(|(kind, _)| matches!(*kind, "feat" | "fix" | "perf" | "refactor"))
        .or(subjects.first())?;
    let subject = main.1.trim();
    (subject.split_whitespace().count() >= 2).then(|| upper_first(subject))
}

/// `feat(parser): add x` → (`feat`, `add x`); a subject without a prefix → (``, subject).
fn split_conventional(subject: &str) -> (&str, &str) {
    if let Some((head, rest)) = subject.split_once(": ") {
        let kind = head.split('(').next().unwrap_or(head).trim_end_matches('!');
        if !kind.is_empty() && kind.len() <= 12 && kind.bytes().all(|b| b.is_ascii_lowercase()) {
            return (kind, rest);
        }
    }
    ("", subject)
}

/// Headings that name no subject ("Summary", "Done").
const GENERIC_HEADINGS: [&str; 14] = [
    "summary",
    "done",
    "results",
    "result",
    "findings",
    "conclusion",
    "overview",
    "changes",
    "changes made",
    "next steps",
    "status",
    "report",
    "summary report",
    "plan",
];

/// A plan's title: its first markdown heading (`# Plan: Add X` → `Add X`), when it names
/// something.
pub(super) fn plan_title(plan: &str) -> Option<String> {
    heading_of(plan)
}

/// The heading a final report opens with, in its first lines (`## Summary Report:
/// Claude-Jacked Codebase Exploration` → `Claude-Jacked Codebase Exploration`).
fn report_title(report: &str) -> Option<String> {
    report
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(REPORT_OPENING_LINES)
        .find_map(named_heading)
}

/// Non-empty lines of a final report its title may be on.
const REPORT_OPENING_LINES: usize = 3;

/// The first markdown heading among a text's first lines that names something: three
/// words or more, not a generic one.
fn heading_of(text: &str) -> Option<String> {
    text.lines().take(HEADING_LINES).find_map(named_heading)
}

/// Lines of a report or plan searched for its heading.
const HEADING_LINES: usize = 12;

fn named_heading(line: &str) -> Option<String> {
    let line = line.trim();
    let heading = if line.starts_with('#') {
        line.trim_start_matches('#').trim()
    } else {
        return None;
    };
    let heading = heading.replace("**", "").replace('`', "");
    // Emoji and numbering in front (`✅ Done`, `1. Setup`) are not part of a title.
    let heading = heading.trim_start_matches(|c: char| !c.is_alphabetic());
    let heading = heading.trim_end_matches(':').trim();
    // "Summary Report: X", "Plan: X" → X.
    let heading = match heading.split_once(": ") {
        Some((label, rest)) if GENERIC_HEADINGS.contains(&label.to_lowercase().as_str()) => rest,
        _ => heading,
    };
    let words = heading.split_whitespace().count();
    let generic = GENERIC_HEADINGS.contains(&heading.to_lowercase().as_str());
    (!generic && words >= 3).then(|| heading.to_owned())
}

/// The task as the assistant restated it in its first reply: "I'll help you add a GitHub
/// Action …" → "Add a GitHub Action …".
fn restated_task(reply: &str) -> Option<String> {
    const OPENERS: [&str; 6] = [
        "i'll help you ",
        "i will help you ",
        "i can help you ",
        "let me help you ",
        "i'll help ",
        "i'll ",
    ];
    /// Verbs of a first step, not of the task ("I'll start by reading …").
    const STEPS: [&str; 14] = [
        "start", "begin", "first", "look", "check", "read", "take", "now", "go", "use", "run",
        "need", "also", "continue",
    ];
    let sentence = first_sentence(reply);
    let lowered = sentence.to_lowercase();
    let opener = OPENERS.iter().find(|o| lowered.starts_with(*o))?;
    let task = sentence[opener.len()..].trim();
    let task = task
        .strip_prefix("with ")
        .map_or(task, |rest| rest.trim_start());
    let verb = task.split_whitespace().next()?.to_lowercase();
    let words = task.split_whitespace().count();
    let task = task.trim_end_matches(['.', '!', ':']);
    (!STEPS.contains(&verb.as_str()) && words >= 4).then(|| upper_first(task))
}

/// Greetings and politeness a request opens with, removed from a headline.
const FILLERS: [&str; 31] = [
    "hey claude",
    "hi claude",
    "hello claude",
    "hello",
    "hey",
    "hi",
    "ok so",
    "okay so",
    "ok",
    "okay",
    "so",
    "alright",
    "now",
    "great",
    "thanks",
    "please",
    "can you",
    "could you",
    "would you",
    "will you",
    "can we",
    "could we",
    "i'd like you to",
    "i would like you to",
    "i'd like your help with",
    "i'd like to",
    "i want you to",
    "i need you to",
    "help me",
    "let's",
    "we're going to",
];

/// The first prompt's request, cleaned: greetings, "please", "can you" and the like taken
/// off its front, its first sentence, first letter upper case. `None` when nothing is
/// left.
pub(super) fn cleaned_request(prompt: &str) -> Option<String> {
    let mut text = prompt.trim();
    loop {
        // `[Image #1]` placeholders Claude Code puts where an image was pasted.
        if let Some(rest) = text.strip_prefix("[Image #")
            && let Some((_, rest)) = rest.split_once(']')
        {
            text = rest.trim_start();
            continue;
        }
        let lowered = text.to_lowercase();
        let Some(filler) = FILLERS.iter().find(|f| {
            lowered.starts_with(*f)
                && lowered[f.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric())
        }) else {
            break;
        };
        text = text[filler.len()..].trim_start_matches([',', ' ', '-', '!', '.', ':']);
    }
    let text = first_sentence(text)
        .trim_end_matches(['?', '.', '!'])
        .trim();
    (!text.is_empty()).then(|| upper_first(text))
}

pub(super) fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
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
            "One two three four five six seven eight nine ten"
        );
        assert_eq!(headline(&transcript(&[])), "Session 01234567");
    }

    #[test]
    fn requests_are_cleaned_of_greetings_and_politeness() {
        let cases = [
            (
                "Hey Claude, can you please add a Github Action?",
                "Add a Github Action",
            ),
            (
                "[Image #1] Can you please add margin-bottom to it?",
                "Add margin-bottom to it",
            ),
            (
                "OK, so we're going to make an experiment.",
                "Make an experiment",
            ),
            ("please", ""),
        ];
        for (prompt, cleaned) in cases {
            assert_eq!(
                cleaned_request(prompt).unwrap_or_default(),
                cleaned,
                "{prompt}"
            );
        }
    }

    #[test]
    fn headings_name_plans_and_reports_unless_generic() {
        assert_eq!(
            plan_title("# Plan: Report corrupted archives\n\n1. Do it").as_deref(),
            Some("Report corrupted archives")
        );
        assert_eq!(plan_title("# Summary\n\ntext"), None);
        assert_eq!(
            report_title("## ✅ AudioWorklet Migration Complete\n\nDone.").as_deref(),
            Some("AudioWorklet Migration Complete")
        );
        assert_eq!(
            report_title("Intro.\n\nMore.\n\nEven more.\n\n## Late Heading Here"),
            None
        );
        assert_eq!(
            restated_task("I'll help you add a GitHub Action to run the tests. First…").as_deref(),
            Some("Add a GitHub Action to run the tests")
        );
        assert_eq!(restated_task("I'll start by reading the files."), None);
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
