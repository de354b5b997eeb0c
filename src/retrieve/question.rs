//! What a question asks, read from its words with no model call, and what a passage says
//! that answers to it:
//! - who the question is about: a person it names (a passage's speaker is the `Name:`
//!   its text starts with, as chat logs write it), the user themself ("I", "my": the
//!   user's own statements about themself), or what the assistant said ("you told me");
//! - whether it asks when something happened (a passage that says a time: "yesterday",
//!   "last week", a date);
//! - whether it asks for a suggestion that rests on what the user likes (a passage where
//!   the user says what they like, prefer or switched to);
//! - the period it names ("on 3 July 2023", "in May", "two weeks ago", "the week before
//!   16 November 2023"), resolved against the time the question is asked.

mod period;

use std::sync::LazyLock;

use regex::Regex;

pub use self::period::period;
use self::period::{DAY_MS, is_calendar_word};
use crate::model::Timestamp;

/// What a question asks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Question {
    /// People the question names, lowercased: a passage spoken by one of them answers it.
    pub names: Vec<String>,
    /// It asks about the user (first person, not what the assistant said).
    pub about_user: bool,
    /// It asks what the assistant said ("you told me", "you recommended").
    pub asks_assistant: bool,
    /// It asks when something happened.
    pub asks_when: bool,
    /// It asks for a suggestion that rests on the user's tastes.
    pub asks_suggestion: bool,
    /// The period it names, resolved: [start, end) in milliseconds since the epoch.
    pub period: Option<(i64, i64)>,
    /// The starts of its content words (lowercased, names and common words left out): a
    /// passage answers only where its own text says one of them, not only the message
    /// before it that it is indexed with.
    pub terms: Vec<String>,
}

/// A passage as a question reads it: what it says is read only when a question asks for
/// it (each is a pattern run over the passage's start, on a search's hot path).
#[derive(Debug, Clone, Copy)]
pub struct Said<'a> {
    kind: &'a str,
    /// The passage's own text, without the message before it.
    text: &'a str,
}

/// How much each thing a passage says that the question asks for raises its score.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Boost {
    /// Spoken by whom the question is about.
    pub speaker: f64,
    /// Says a time, for a question that asks when.
    pub time: f64,
    /// States a taste of the user, for a question that asks for a suggestion.
    pub preference: f64,
}

impl Boost {
    /// The factor a passage's score is multiplied by.
    pub fn factor(&self) -> f64 {
        1.0 + self.speaker + self.time + self.preference
    }
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a fixed pattern compiles")
}

static FIRST_PERSON: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(i|i'm|i've|i'd|my|me|mine|myself)\b"));
static ASKS_ASSISTANT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\byou\s+(told|said|mentioned|suggested|recommended|gave|provided|listed|shared|explained|described|wrote|came up with)\b|\byour\s+(suggestion|recommendation|advice|answer|list)\b",
    )
});
static ASKS_WHEN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^\s*when\b|\bwhen (did|was|were|is|will|do|does|had|has)\b|\b(what|which)\s+(date|day|time|year|month|week|weekend)\b|\bhow (long|many \w+) ago\b|\bhow long (has|have|had|did)\b",
    )
});
static ASKS_SUGGESTION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(suggest|suggestions?|recommend|recommendations?|ideas?|tips|advice|any thoughts)\b|\bwhat should i\b|\bgood idea\b|\bwould i (like|enjoy|prefer)\b|\bi might (like|enjoy|find)\b",
    )
});
/// A speaker label: one to three capitalised words and a colon at the start.
static SPEAKER: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\s*([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}):\s"));
/// Capitalised words of a question, past its first word.
static NAME: LazyLock<Regex> = LazyLock::new(|| re(r"\b([A-Z][a-z]+)(?:'s)?\b"));
static TIME_SAID: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(yesterday|today|tonight|tomorrow|recently|the other day|last (night|week|weekend|month|year|summer|winter|spring|fall|autumn|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|next (week|weekend|month|year|summer|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|this (morning|afternoon|evening|week|weekend|month|year|summer)|ago|january|february|march|april|june|july|august|september|october|november|december|monday|tuesday|wednesday|thursday|friday|saturday|sunday|(19|20)\d\d|\d{1,2}/\d{1,2})\b",
    )
});
static PREFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(i|i'm|i've|i'd|my)\b[^.!?]{0,40}\b(like|likes|love|loved|prefer|preferred|enjoy|enjoyed|favou?rite|into|fan of|switched|changed to|moved to|hate|can't stand|interested in|passionate about|obsessed)\b",
    )
});

/// Words of a question that are capitalised without naming anyone.
const NOT_NAMES: [&str; 40] = [
    "what", "when", "where", "which", "who", "whom", "whose", "why", "how", "did", "does", "do",
    "is", "was", "were", "are", "can", "could", "would", "should", "will", "has", "have", "had",
    "the", "a", "an", "in", "on", "at", "i", "i'm", "my", "you", "answer", "yes", "no", "and",
    "or", "if",
];

impl Question {
    /// Reads a question asked at `asked` (now, or the search's `as_of`).
    pub fn read(query: &str, asked: Timestamp) -> Question {
        let asks_assistant = ASKS_ASSISTANT.is_match(query);
        let names = NAME
            .captures_iter(query)
            .map(|c| c[1].to_lowercase())
            .filter(|n| !NOT_NAMES.contains(&n.as_str()) && !is_calendar_word(n))
            .fold(Vec::new(), |mut names, n| {
                if !names.contains(&n) {
                    names.push(n);
                }
                names
            });
        let terms = content_terms(query, &names);
        Question {
            terms,
            names,
            about_user: !asks_assistant && FIRST_PERSON.is_match(query),
            asks_assistant,
            asks_when: ASKS_WHEN.is_match(query),
            asks_suggestion: ASKS_SUGGESTION.is_match(query),
            period: period(query, asked),
        }
    }

    /// What the passage says that this question asks for, weighed. Only what a weight
    /// counts is read, and the question's words last: a passage is raised only where its
    /// own text says one of them.
    pub fn boost(&self, said: &Said, w: &QuestionWeights) -> Boost {
        let speaker = w.speaker > 0.0 && self.spoken_by(said);
        let time = w.time > 0.0 && self.asks_when && said.time();
        let preference = w.preference > 0.0 && self.asks_suggestion && said.preference();
        if !(speaker || time || preference) || !said.says_any(&self.terms) {
            return Boost::default();
        }
        let weight = |counts: bool, w: f64| if counts { w } else { 0.0 };
        Boost {
            speaker: weight(speaker, w.speaker),
            time: weight(time, w.time),
            preference: weight(preference, w.preference),
        }
    }

    /// Whether the passage is spoken by whom the question is about: a person it names,
    /// the assistant it asks about, or the user speaking of themself.
    fn spoken_by(&self, said: &Said) -> bool {
        let named = !self.names.is_empty()
            && said.speaker().is_some_and(|s| {
                self.names
                    .iter()
                    .any(|n| s.split(' ').any(|part| part == n))
            });
        named
            || (self.asks_assistant && said.assistant())
            || (self.about_user && said.self_statement())
    }

    /// How near a moment is to the period the question names: 1 inside it, halving every
    /// `half_life_days` outside; 0 when it names none.
    pub fn nearness(&self, at: i64, half_life_days: f64) -> f64 {
        let Some((start, end)) = self.period else {
            return 0.0;
        };
        let off = if at < start {
            start - at
        } else if at >= end {
            at - end
        } else {
            0
        };
        0.5f64.powf(off as f64 / DAY_MS as f64 / half_life_days)
    }
}

/// The weights of what a question asks; part of [`super::Weights`].
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QuestionWeights {
    pub speaker: f64,
    pub time: f64,
    pub preference: f64,
}

impl<'a> Said<'a> {
    /// A passage of `kind`; `text` is its own text (without the message before it).
    pub fn new(kind: &'a str, text: &'a str) -> Said<'a> {
        Said { kind, text }
    }

    /// Where its patterns are looked for.
    fn head(&self) -> &'a str {
        cut(self.text, 600)
    }

    /// A user's message.
    pub fn user(&self) -> bool {
        self.kind == "user_message"
    }

    /// An assistant's reply.
    pub fn assistant(&self) -> bool {
        self.kind == "assistant_response"
    }

    /// The speaker its text starts with (`Caroline: …`), lowercased. Only a message has
    /// a speaker: a handoff or a label that starts `Name:` quotes one.
    pub fn speaker(&self) -> Option<String> {
        (self.user() || self.assistant())
            .then(|| SPEAKER.captures(self.head()).map(|c| c[1].to_lowercase()))
            .flatten()
    }

    /// It says a time: "yesterday", "last week", "two days ago", a month, a date.
    pub fn time(&self) -> bool {
        TIME_SAID.is_match(self.head())
    }

    /// The user speaks of themself ("I", "my").
    pub fn self_statement(&self) -> bool {
        self.user() && FIRST_PERSON.is_match(self.head())
    }

    /// The user says what they like, prefer, or changed to.
    pub fn preference(&self) -> bool {
        self.user() && PREFERENCE.is_match(self.head())
    }

    /// Its own text says one of `terms` (a long passage, a plan or a document, is read at
    /// its start only); no terms put no condition.
    pub fn says_any(&self, terms: &[String]) -> bool {
        mentions(cut(self.text, 4096), terms)
    }
}

/// Common words of questions that say nothing of their topic.
#[rustfmt::skip]
const COMMON: [&str; 60] = [
    "what", "when", "where", "which", "who", "whom", "whose", "why", "how", "did", "does",
    "the", "and", "for", "with", "was", "were", "are", "has", "have", "had", "that", "this",
    "his", "her", "their", "they", "them", "you", "your", "can", "could", "would", "should",
    "will", "any", "some", "about", "from", "into", "after", "before", "during", "many", "much",
    "kind", "type", "remind", "tell", "know", "mentioned", "said", "told", "our", "previous",
    "conversation", "also", "been", "being", "there",
];

/// The starts (five characters at most) of a question's content words.
fn content_terms(query: &str, names: &[String]) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in query
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
    {
        if COMMON.contains(&word) || names.iter().any(|n| n == word) || is_calendar_word(word) {
            continue;
        }
        let start: String = word.chars().take(5).collect();
        if !terms.contains(&start) {
            terms.push(start);
        }
    }
    terms
}

/// Whether a word of `text` starts with one of `terms` (a question without content
/// words puts no condition).
fn mentions(text: &str, terms: &[String]) -> bool {
    terms.is_empty()
        || text
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| terms.iter().any(|t| w.starts_with(t.as_str())))
}

/// The first `n` bytes of `text`, at a character boundary.
fn cut(text: &str, n: usize) -> &str {
    if text.len() <= n {
        return text;
    }
    let mut end = n;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::period::tests::{at, day};
    use super::*;

    #[test]
    fn a_question_says_whom_it_asks_about_and_what() {
        let asked = at("2023-10-22T10:02:00Z");
        let q = Question::read("When did Caroline go to the LGBTQ support group?", asked);
        assert_eq!(q.names, vec!["caroline"]);
        assert!(q.asks_when && !q.about_user && !q.asks_suggestion);
        let q = Question::read("Can you remind me what you recommended for dinner?", asked);
        assert!(q.asks_assistant && !q.about_user);
        let q = Question::read(
            "Can you suggest a hotel for my upcoming trip to Miami?",
            asked,
        );
        assert!(q.about_user && q.asks_suggestion && !q.asks_when);
        assert_eq!(q.names, vec!["miami"]);
    }

    #[test]
    fn a_passage_says_its_speaker_times_and_tastes() {
        let asked = at("2023-10-22T10:02:00Z");
        let q = Question::read("When did Caroline go to the support group?", asked);
        let s = Said::new(
            "user_message",
            "Caroline: I went to a LGBTQ support group yesterday.",
        );
        assert_eq!(s.speaker().as_deref(), Some("caroline"));
        assert!(s.time() && s.self_statement() && !s.preference());
        let s = Said::new(
            "user_message",
            "I really prefer boutique hotels near the beach.",
        );
        assert!(s.preference() && s.speaker().is_none() && !s.says_any(&q.terms));
        let s = Said::new("handoff", "Caroline: Hey Mel. caroline support group");
        assert_eq!(s.speaker(), None);
        let s = Said::new("assistant_response", "Here is a plan: first, tests.");
        assert!(!s.time() && !s.preference() && !s.self_statement() && s.assistant());

        let w = QuestionWeights {
            speaker: 0.5,
            time: 0.25,
            preference: 1.0,
        };
        let said = Said::new;
        let caroline = said("user_message", "Caroline: I went to the group yesterday.");
        let melanie = said(
            "assistant_response",
            "Melanie: Caroline went to a group yesterday!",
        );
        // What a passage says counts only where it says what the question is about.
        let aside = said("user_message", "Caroline: I baked bread yesterday.");
        assert_eq!(q.terms, ["suppo", "group"]);
        assert_eq!(q.boost(&caroline, &w).factor(), 1.75);
        assert_eq!(q.boost(&melanie, &w).factor(), 1.25);
        assert_eq!(q.boost(&aside, &w).factor(), 1.0);
        assert_eq!(q.nearness(day("2023-06-01"), 7.0), 0.0);
    }
}
