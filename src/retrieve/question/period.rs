//! The period a question names ("on 3 July 2023", "in May", "two weeks ago", "the week
//! before 16 November 2023"), resolved against the time it is asked.

use std::sync::LazyLock;

use chrono::{Datelike, Days, Months, NaiveDate, TimeZone, Utc, Weekday};
use regex::Regex;

use super::re;
use crate::model::Timestamp;

pub(super) const DAY_MS: i64 = 86_400_000;

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

pub(super) fn is_calendar_word(w: &str) -> bool {
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

pub(super) fn utc(date: NaiveDate) -> i64 {
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
    let today = asked.date();
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
        let at = days_before(today, n * unit)?;
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
        return Some((utc(days_before(today, n * unit)?), utc(today) + DAY_MS));
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

/// The day `days` before `today`; `None` past the calendar's range (a question may say
/// "4000000000 years ago").
fn days_before(today: NaiveDate, days: i64) -> Option<NaiveDate> {
    today.checked_sub_signed(chrono::TimeDelta::try_days(days)?)
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
pub(super) mod tests {
    use super::*;

    pub(crate) fn at(s: &str) -> Timestamp {
        Timestamp::parse(s).expect("a time")
    }

    /// Midnight (UTC) of a `YYYY-MM-DD` day.
    pub(crate) fn day(s: &str) -> i64 {
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
        // Numbers past the calendar name no period, and nothing panics.
        assert_eq!(p("what did I do 4000000000 years ago"), None);
        assert_eq!(p("in the past 4000000000 years"), None);
        assert_eq!(p("99999999999999999999 days ago on 31 February 2023"), None);
        let long = "when 3 may 2023 two weeks ago last friday ".repeat(50);
        assert!(p(&long).is_some());
        assert_eq!(p("How did the refactor go?"), None);
    }
}
