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

use std::sync::LazyLock;

use chrono::{DateTime, Datelike, Days, Months, NaiveDate, TimeZone, Utc, Weekday};
use regex::Regex;

use crate::model::Timestamp;

const DAY_MS: i64 = 86_400_000;

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

/// What a passage says that a question may ask for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Said {
    /// The speaker its text starts with (`Caroline: …`), lowercased.
    pub speaker: Option<String>,
    /// A user's message.
    pub user: bool,
    /// An assistant's reply.
    pub assistant: bool,
    /// It says a time: "yesterday", "last week", "two days ago", a month, a date.
    pub time: bool,
    /// The user speaks of themself ("I", "my").
    pub self_statement: bool,
    /// The user says what they like, prefer, or changed to.
    pub preference: bool,
    /// Its own text says one of the question's content words.
    pub on_topic: bool,
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
        r"(?i)\b(yesterday|today|tonight|tomorrow|recently|the other day|last (night|week|weekend|month|year|summer|winter|spring|fall|autumn|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|next (week|weekend|month|year|summer|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|this (morning|afternoon|evening|week|weekend|month|year|summer)|(\d+|a|an|one|two|three|four|five|six|few|couple of) (days?|weeks?|months?|years?) ago|ago|january|february|march|april|june|july|august|september|october|november|december|monday|tuesday|wednesday|thursday|friday|saturday|sunday|(19|20)\d\d|\d{1,2}/\d{1,2})\b",
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

    /// What the passage says that this question asks for, weighed.
    pub fn boost(&self, said: &Said, w: &QuestionWeights) -> Boost {
        if !said.on_topic {
            return Boost::default();
        }
        let named = said.speaker.as_ref().is_some_and(|s| {
            self.names
                .iter()
                .any(|n| s.split(' ').any(|part| part == n))
        });
        let speaker = named
            || (self.asks_assistant && said.assistant)
            || (self.about_user && said.user && said.self_statement);
        Boost {
            speaker: if speaker { w.speaker } else { 0.0 },
            time: if self.asks_when && said.time {
                w.time
            } else {
                0.0
            },
            preference: if self.asks_suggestion && said.preference {
                w.preference
            } else {
                0.0
            },
        }
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

    /// Whether anything in the question can raise a passage.
    pub fn asks_anything(&self) -> bool {
        !self.names.is_empty()
            || self.about_user
            || self.asks_assistant
            || self.asks_when
            || self.asks_suggestion
    }
}

/// The weights of what a question asks; part of [`super::Weights`].
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QuestionWeights {
    pub speaker: f64,
    pub time: f64,
    pub preference: f64,
}

impl Said {
    /// What a passage of `kind` says to `question`; `text` is the passage's own text
    /// (without the message before it).
    pub fn read(question: &Question, kind: &str, text: &str) -> Said {
        let user = kind == "user_message";
        let head = cut(text, 600);
        Said {
            // A long passage (a plan, a document) is read at its start only.
            on_topic: mentions(cut(text, 4096), &question.terms),
            speaker: SPEAKER.captures(head).map(|c| c[1].to_lowercase()),
            user,
            assistant: kind == "assistant_response",
            time: TIME_SAID.is_match(head),
            self_statement: user && FIRST_PERSON.is_match(head),
            preference: user && PREFERENCE.is_match(head),
        }
    }
}

/// Common words of questions that say nothing of their topic.
const COMMON: [&str; 60] = [
    "what",
    "when",
    "where",
    "which",
    "who",
    "whom",
    "whose",
    "why",
    "how",
    "did",
    "does",
    "the",
    "and",
    "for",
    "with",
    "was",
    "were",
    "are",
    "has",
    "have",
    "had",
    "that",
    "this",
    "his",
    "her",
    "their",
    "they",
    "them",
    "you",
    "your",
    "can",
    "could",
    "would",
    "should",
    "will",
    "any",
    "some",
    "about",
    "from",
    "into",
    "after",
    "before",
    "during",
    "many",
    "much",
    "kind",
    "type",
    "remind",
    "tell",
    "know",
    "mentioned",
    "said",
    "told",
    "our",
    "previous",
    "conversation",
    "also",
    "been",
    "being",
    "there",
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

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

fn is_calendar_word(w: &str) -> bool {
    MONTHS.contains(&w) || WEEKDAYS.contains(&w) || w == "sept"
}

fn month_of(word: &str) -> Option<u32> {
    let word = word.to_lowercase();
    MONTHS
        .iter()
        .position(|m| *m == word || (word.len() >= 3 && m.starts_with(&word)))
        .map(|i| i as u32 + 1)
}

fn number(word: &str) -> Option<u32> {
    const WORDS: [&str; 13] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    match word {
        "a" | "an" => Some(1),
        "couple" | "a couple of" | "couple of" => Some(2),
        "few" | "a few" => Some(3),
        w => w
            .parse()
            .ok()
            .or_else(|| WORDS.iter().position(|n| *n == w).map(|i| i as u32)),
    }
}

const MONTH: &str = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)";
const COUNT: &str = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|couple of|a few|few)";

static DAY_MONTH: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b(\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s*{MONTH}\b,?\s*(\d{{4}})?"
    ))
});
static MONTH_DAY: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b{MONTH}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s*(\d{{4}}))?"
    ))
});
static MONTH_YEAR: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b(?:(beginning|start|early|first half|middle|mid|second half|end|late)(?:\s+of)?\s+)?{MONTH}\b(?:,?\s*(\d{{4}}))?"
    ))
});
static YEAR: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:in|during|of|since)\s+((?:19|20)\d\d)\b"));
static BEFORE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:the\s+)?(day|week|weekend|month|friday|saturday|sunday|monday|tuesday|wednesday|thursday)\s+(before|after)\s*$",
    )
});
static AGO: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b{COUNT}\s+(days?|weeks?|months?|years?)\s+ago\b"
    ))
});
static PAST: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b(?:in\s+)?(?:the\s+)?(?:past|last)\s+(?:{COUNT}\s+)?(days?|weeks?|months?|years?)\b"
    ))
});
static LAST_WEEKDAY: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)\blast\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|night)\b")
});
static SIMPLE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(yesterday|today|this week|this month|this year|start of the year|beginning of the year)\b",
    )
});

fn utc(date: NaiveDate) -> i64 {
    Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0).expect("midnight exists"))
        .timestamp_millis()
}

fn day_span(date: NaiveDate, days: i64) -> (i64, i64) {
    let start = utc(date);
    (start, start + days * DAY_MS)
}

/// The latest year in which the day falls on or before `asked`.
fn year_for(month: u32, day: u32, asked: NaiveDate) -> i32 {
    match NaiveDate::from_ymd_opt(asked.year(), month, day.max(1)) {
        Some(d) if d > asked => asked.year() - 1,
        _ => asked.year(),
    }
}

fn month_span(year: i32, month: u32, part: Option<&str>) -> Option<(i64, i64)> {
    let first = NaiveDate::from_ymd_opt(year, month, 1)?;
    let next = first.checked_add_months(Months::new(1))?;
    let days = (next - first).num_days();
    let (from, to) = match part.map(str::to_lowercase).as_deref() {
        Some("beginning" | "start" | "early") => (0, 10),
        Some("first half") => (0, 15),
        Some("middle" | "mid") => (10, 20),
        Some("second half") => (15, days),
        Some("end" | "late") => (20, days),
        _ => (0, days),
    };
    let start = first.checked_add_days(Days::new(from as u64))?;
    Some(day_span(start, to - from))
}

/// The period a question names, resolved against when it is asked; the first form
/// found wins, the most precise forms first.
pub fn period(query: &str, asked: Timestamp) -> Option<(i64, i64)> {
    let now: DateTime<Utc> = Utc.timestamp_millis_opt(asked.0).single()?;
    let today = now.date_naive();
    let before_after = |at: usize, span: (i64, i64)| -> (i64, i64) {
        // "the week before 16 November": the days before, up to that day.
        match BEFORE.captures(&query[..at]) {
            Some(c) => {
                let unit = match c[1].to_lowercase().as_str() {
                    "day" => 2,
                    "month" => 31,
                    "week" | "weekend" => 8,
                    _ => 7,
                };
                match c[2].eq_ignore_ascii_case("before") {
                    true => (span.0 - unit * DAY_MS, span.1),
                    false => (span.0, span.1 + unit * DAY_MS),
                }
            }
            None => span,
        }
    };
    let dated = |month: &str, day: &str, year: Option<&str>| -> Option<(i64, i64)> {
        let month = month_of(month)?;
        let day: u32 = day.parse().ok()?;
        let year = match year {
            Some(y) => y.parse().ok()?,
            None => year_for(month, day, today),
        };
        NaiveDate::from_ymd_opt(year, month, day).map(|d| day_span(d, 1))
    };
    if let Some(c) = DAY_MONTH.captures(query)
        && let Some(span) = dated(&c[2], &c[1], c.get(3).map(|m| m.as_str()))
    {
        return Some(before_after(c.get(0)?.start(), span));
    }
    if let Some(c) = MONTH_DAY.captures(query)
        && let Some(span) = dated(&c[1], &c[2], c.get(3).map(|m| m.as_str()))
    {
        return Some(before_after(c.get(0)?.start(), span));
    }
    if let Some(c) = AGO.captures(query) {
        let n = i64::from(number(&c[1].to_lowercase())?);
        let (unit, slack) = unit_days(&c[2]);
        let at = today - chrono::Duration::days(n * unit);
        return Some((utc(at) - slack * DAY_MS, utc(at) + (slack + 1) * DAY_MS));
    }
    if let Some(c) = LAST_WEEKDAY.captures(query) {
        let word = c[1].to_lowercase();
        let (day, days) = match word.as_str() {
            "night" => (today - chrono::Duration::days(1), 1),
            "weekend" => (last_weekday(today, Weekday::Sat), 2),
            w => (last_weekday(today, weekday(w)?), 1),
        };
        return Some(day_span(day, days));
    }
    if let Some(c) = PAST.captures(query) {
        let n = match c.get(1) {
            Some(m) => i64::from(number(&m.as_str().to_lowercase())?),
            None => 1,
        };
        let (unit, _) = unit_days(&c[2]);
        return Some((
            utc(today - chrono::Duration::days(n * unit)),
            utc(today) + DAY_MS,
        ));
    }
    if let Some(c) = MONTH_YEAR.captures_iter(query).find(|c| {
        // "may" is a month only when capitalised or beside a year or part.
        let m = &c[2];
        !m.eq_ignore_ascii_case("may")
            || m.starts_with('M')
            || c.get(3).is_some()
            || c.get(1).is_some()
    }) {
        let month = month_of(&c[2])?;
        let year = match c.get(3) {
            Some(y) => y.as_str().parse().ok()?,
            None => year_for(month, 1, today),
        };
        let span = month_span(year, month, c.get(1).map(|m| m.as_str()))?;
        return Some(before_after(c.get(0)?.start(), span));
    }
    if let Some(c) = YEAR.captures(query) {
        let year: i32 = c[1].parse().ok()?;
        let start = NaiveDate::from_ymd_opt(year, 1, 1)?;
        let end = NaiveDate::from_ymd_opt(year + 1, 1, 1)?;
        return Some((utc(start), utc(end)));
    }
    if let Some(c) = SIMPLE.captures(query) {
        let start = match c[1].to_lowercase().as_str() {
            "yesterday" => return Some(day_span(today - chrono::Duration::days(1), 1)),
            "today" => return Some(day_span(today, 1)),
            "this week" => today - chrono::Duration::days(7),
            "this month" => today.with_day(1)?,
            _ => NaiveDate::from_ymd_opt(today.year(), 1, 1)?,
        };
        return Some((utc(start), utc(today) + DAY_MS));
    }
    None
}

/// Days in a unit, and the slack either side of "N units ago".
fn unit_days(unit: &str) -> (i64, i64) {
    match unit.to_lowercase().trim_end_matches('s') {
        "day" => (1, 1),
        "week" => (7, 3),
        "month" => (30, 10),
        _ => (365, 60),
    }
}

fn weekday(word: &str) -> Option<Weekday> {
    WEEKDAYS
        .iter()
        .position(|w| *w == word)
        .map(|i| Weekday::try_from(i as u8).expect("0 to 6 are weekdays"))
}

/// The latest `day` strictly before `today`.
fn last_weekday(today: NaiveDate, day: Weekday) -> NaiveDate {
    let back = (today.weekday().num_days_from_monday() + 7 - day.num_days_from_monday()) % 7;
    let back = if back == 0 { 7 } else { back };
    today - chrono::Duration::days(i64::from(back))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        Timestamp::parse(s).expect("a time")
    }

    fn day(s: &str) -> i64 {
        utc(NaiveDate::parse_from_str(s, "%Y-%m-%d").expect("a date"))
    }

    #[test]
    fn dates_and_periods_resolve_against_the_time_asked() {
        let asked = at("2023-10-22T10:02:00Z");
        let p = |q: &str| period(q, asked);
        assert_eq!(
            p("What did Melanie do on 3 July 2023?"),
            Some((day("2023-07-03"), day("2023-07-04")))
        );
        assert_eq!(
            p("Where was Tim in the week before 16 November 2023?"),
            Some((day("2023-11-08"), day("2023-11-17")))
        );
        assert_eq!(
            p("When did Melanie go camping in June?"),
            Some((day("2023-06-01"), day("2023-07-01")))
        );
        // A month after the time asked is last year's.
        assert_eq!(
            p("What happened in December?"),
            Some((day("2022-12-01"), day("2023-01-01")))
        );
        assert_eq!(
            p("Which tournament did Nate win in the beginning of November 2022?"),
            Some((day("2022-11-01"), day("2022-11-11")))
        );
        assert_eq!(
            p("I mentioned a sports event two weeks ago"),
            Some((day("2023-10-05"), day("2023-10-12")))
        );
        assert_eq!(
            p("How many plants did I get in the last month?"),
            Some((day("2023-09-22"), day("2023-10-23")))
        );
        // 22 October 2023 is a Sunday.
        assert_eq!(
            p("what did I cook last Saturday"),
            Some((day("2023-10-21"), day("2023-10-22")))
        );
        assert_eq!(p("what may I have said about tests"), None);
        assert_eq!(p("How did the refactor go?"), None);
    }

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
        let s = Said::read(
            &q,
            "user_message",
            "Caroline: I went to a LGBTQ support group yesterday.",
        );
        assert_eq!(s.speaker.as_deref(), Some("caroline"));
        assert!(s.time && s.self_statement && !s.preference);
        let s = Said::read(
            &q,
            "user_message",
            "I really prefer boutique hotels near the beach.",
        );
        assert!(s.preference && s.speaker.is_none() && !s.on_topic);
        let s = Said::read(&q, "assistant_response", "Here is a plan: first, tests.");
        assert!(!s.time && !s.preference && !s.self_statement && s.assistant);

        let w = QuestionWeights {
            speaker: 0.5,
            time: 0.25,
            preference: 1.0,
        };
        let said = |kind, text| Said::read(&q, kind, text);
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
