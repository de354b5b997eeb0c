//! A session's keywords: the terms its person typed and its assistant wrote most.

use std::sync::LazyLock;

use rustc_hash::{FxHashMap, FxHashSet};

use super::ProjectPath;
use crate::claude::Transcript;

/// Keywords a handoff keeps at most.
const MAX_KEYWORDS: usize = 8;
/// Weight of a term typed by the person, against 1 for assistant prose.
const PROMPT_WEIGHT: u32 = 3;

/// The session's keywords: the terms the person typed and the assistant wrote most,
/// prompts weighted ×3, common words and the project's own name left out. Deterministic:
/// ties go to the alphabetically first term.
pub fn keywords(t: &Transcript, projects: &[ProjectPath]) -> Vec<String> {
    let lowered_prompts: Vec<String> = t.prompts.iter().map(|p| p.to_lowercase()).collect();
    let lowered_text: Vec<String> = t.assistant_text.iter().map(|p| p.to_lowercase()).collect();
    let weighted = lowered_prompts
        .iter()
        .map(|p| (p, PROMPT_WEIGHT))
        .chain(lowered_text.iter().map(|p| (p, 1)));
    let mut counts: FxHashMap<&str, u32> = FxHashMap::default();
    for (text, weight) in weighted {
        for term in terms(text) {
            *counts.entry(term).or_insert(0) += weight;
        }
    }
    let project_names: Vec<String> = projects.iter().map(|p| p.name.to_lowercase()).collect();
    let mut ranked: Vec<(&str, u32)> = counts
        .into_iter()
        .filter(|(term, n)| *n >= 2 && !project_names.iter().any(|p| p == term))
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked
        .into_iter()
        .take(MAX_KEYWORDS)
        .map(|(term, _)| term.to_owned())
        .collect()
}

/// The terms a document says most (at least twice), most first: its key concepts.
pub fn text_keywords(text: &str) -> Vec<String> {
    let lowered = text.to_lowercase();
    let mut counts: FxHashMap<&str, u32> = FxHashMap::default();
    for term in terms(&lowered) {
        *counts.entry(term).or_insert(0) += 1;
    }
    let mut ranked: Vec<(&str, u32)> = counts.into_iter().filter(|(_, n)| *n >= 2).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked
        .into_iter()
        .take(MAX_KEYWORDS)
        .map(|(term, _)| term.to_owned())
        .collect()
}

/// Lowercase text split as `eywa get` splits queries (runs outside `[a-z0-9-]`), with
/// hyphens trimmed at the ends, short, numeric and common words dropped.
fn terms(lowered: &str) -> impl Iterator<Item = &str> {
    lowered
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
        .map(|w| w.trim_matches('-'))
        .filter(|w| {
            (3..=32).contains(&w.len())
                && !w.bytes().all(|b| b.is_ascii_digit() || b == b'-')
                && !STOPWORD_SET.contains(w)
        })
}

/// [`STOPWORDS`], looked up once per term of every message a session holds.
static STOPWORD_SET: LazyLock<FxHashSet<&'static str>> =
    LazyLock::new(|| STOPWORDS.iter().copied().collect());

/// English function words and words that every coding session says.
const STOPWORDS: &[&str] = &[
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "already",
    "also",
    "always",
    "and",
    "another",
    "any",
    "anything",
    "are",
    "aren",
    "around",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "can",
    "cannot",
    "could",
    "did",
    "didn",
    "does",
    "doesn",
    "doing",
    "done",
    "don",
    "down",
    "during",
    "each",
    "either",
    "else",
    "even",
    "every",
    "few",
    "for",
    "from",
    "further",
    "get",
    "gets",
    "getting",
    "give",
    "going",
    "good",
    "got",
    "great",
    "had",
    "has",
    "have",
    "having",
    "her",
    "here",
    "hers",
    "him",
    "his",
    "how",
    "however",
    "into",
    "isn",
    "its",
    "itself",
    "just",
    "know",
    "let",
    "lets",
    "like",
    "look",
    "looks",
    "make",
    "makes",
    "may",
    "might",
    "more",
    "most",
    "much",
    "must",
    "need",
    "needs",
    "new",
    "not",
    "now",
    "off",
    "okay",
    "once",
    "one",
    "only",
    "other",
    "our",
    "ours",
    "out",
    "over",
    "own",
    "please",
    "really",
    "same",
    "see",
    "should",
    "since",
    "some",
    "something",
    "still",
    "such",
    "sure",
    "take",
    "than",
    "thank",
    "thanks",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "think",
    "this",
    "those",
    "through",
    "too",
    "try",
    "two",
    "under",
    "until",
    "use",
    "used",
    "using",
    "very",
    "want",
    "was",
    "wasn",
    "way",
    "well",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "within",
    "without",
    "won",
    "would",
    "yes",
    "yet",
    "you",
    "your",
    "yours",
    "i'll",
    "i'm",
    "let's",
    "it's",
    "that's",
    "there's",
    "we'll",
    "you're",
    "file",
    "files",
    "code",
    "first",
    "next",
    "check",
    "work",
    "works",
    "working",
    "run",
    "running",
    "add",
    "added",
    "change",
    "changes",
    "update",
    "updated",
    "create",
    "created",
    "following",
    "current",
    "able",
    "help",
    "claude",
    "user",
    "ide",
    "opened",
    "selected",
    "lines",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_terms_outweigh_prose_and_stopwords_and_projects_drop() {
        let t = Transcript {
            prompts: vec!["Refactor the tokenizer; the tokenizer drops hyphens".into()],
            assistant_text: vec!["I will update the lexer. The lexer and the tokenizer.".into()],
            ..Transcript::default()
        };
        let projects = [ProjectPath {
            path: "/w/lexer".into(),
            name: "lexer".into(),
        }];
        let k = keywords(&t, &projects);
        assert_eq!(k[0], "tokenizer");
        assert!(!k.contains(&"lexer".to_owned()), "{k:?}");
        assert!(!k.contains(&"the".to_owned()), "{k:?}");
        assert!(k.contains(&"refactor".to_owned()), "{k:?}");
    }

    #[test]
    fn hyphenated_terms_survive_and_numbers_do_not() {
        let t = Transcript {
            prompts: vec!["day-plan 2026 day-plan -- 12-34".into()],
            ..Transcript::default()
        };
        assert_eq!(keywords(&t, &[]), ["day-plan"]);
    }
}
