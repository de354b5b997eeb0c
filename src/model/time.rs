//! Moments in time: [`Timestamp`], and how long ago one was as people say it.

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch, UTC. Stored as a plain integer so that keys and
/// values stay compact and sort by time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The current time.
    pub fn now() -> Self {
        Timestamp(Utc::now().timestamp_millis())
    }

    /// Parses RFC 3339 (`2026-02-16T10:48:03.529Z`) or a bare date (`2026-02-16`, midnight UTC).
    pub fn parse(s: &str) -> Option<Self> {
        if let Ok(dt) = DateTime::parse_from_rfc3339(s.trim()) {
            return Some(Timestamp(dt.timestamp_millis()));
        }
        let date = NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d").ok()?;
        Some(Timestamp(
            date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis(),
        ))
    }

    /// Milliseconds since the Unix epoch.
    pub fn millis(self) -> i64 {
        self.0
    }

    /// As a chrono UTC time; the epoch when out of chrono's range.
    pub fn to_datetime(self) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(self.0).unwrap_or_default()
    }

    /// The UTC calendar date.
    pub fn date(self) -> NaiveDate {
        self.to_datetime().date_naive()
    }

    /// RFC 3339 in UTC, with milliseconds and `Z` (`2026-02-16T10:48:03.529Z`).
    pub fn to_rfc3339(self) -> String {
        self.to_datetime()
            .to_rfc3339_opts(SecondsFormat::Millis, true)
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

/// A time as people give one: RFC 3339, a date, or an age before `now` (`7d`, `12h`,
/// `30m`, `2w`); the error says which forms are taken.
pub fn parse_since(s: &str, now: Timestamp) -> Result<Timestamp, String> {
    let s = s.trim();
    if let Some(t) = Timestamp::parse(s) {
        return Ok(t);
    }
    // The unit is the last character, which need not be one byte.
    let (n, unit) = s.split_at(s.char_indices().last().map_or(0, |(i, _)| i));
    let n: i64 = n
        .parse()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| format!("`{s}` is not RFC 3339, a date, or an age like 7d"))?;
    let ms = match unit {
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        _ => return Err(format!("`{s}`: an age ends in m, h, d or w")),
    };
    Ok(Timestamp(now.0.saturating_sub(n.saturating_mul(ms))))
}

/// How long before `now` a moment was, as people say it: "just now", "5 minutes ago",
/// "3 days ago", "2 months ago".
pub fn age(at: Timestamp, now: Timestamp) -> String {
    let seconds = (now.0 - at.0).max(0) / 1000;
    let (n, unit) = match seconds {
        s if s < 60 => return "just now".to_owned(),
        s if s < 3600 => (s / 60, "minute"),
        s if s < 86_400 => (s / 3600, "hour"),
        s if s < 7 * 86_400 => (s / 86_400, "day"),
        s if s < 30 * 86_400 => (s / (7 * 86_400), "week"),
        s if s < 365 * 86_400 => (s / (30 * 86_400), "month"),
        s => (s / (365 * 86_400), "year"),
    };
    format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" })
}

/// `n` with commas between thousands: 1,234,567.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A span of minutes as people read it (seed 000's duration): `<1m`, `45m`, `2h`,
/// `2h 5m`.
pub fn minutes(m: u32) -> String {
    match m {
        0 => "<1m".to_owned(),
        m if m < 60 => format!("{m}m"),
        m if m % 60 == 0 => format!("{}h", m / 60),
        m => format!("{}h {}m", m / 60, m % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_claude_timestamps_and_dates() {
        let t = Timestamp::parse("2025-07-02T10:20:30.123Z").unwrap();
        assert_eq!(t.to_rfc3339(), "2025-07-02T10:20:30.123Z");
        assert_eq!(t.date().to_string(), "2025-07-02");
        let d = Timestamp::parse("2025-07-02").unwrap();
        assert_eq!(d.to_rfc3339(), "2025-07-02T00:00:00.000Z");
        assert_eq!(Timestamp::parse("yesterday"), None);
    }

    #[test]
    fn since_takes_a_time_a_date_or_an_age() {
        let now = Timestamp::parse("2026-11-28T12:00:00Z").unwrap();
        let at = |s: &str| parse_since(s, now).map(Timestamp::to_rfc3339);
        assert_eq!(at("2026-11-01").unwrap(), "2026-11-01T00:00:00.000Z");
        assert_eq!(at(" 7d ").unwrap(), "2026-11-21T12:00:00.000Z");
        assert_eq!(at("2w").unwrap(), "2026-11-14T12:00:00.000Z");
        assert_eq!(at("90m").unwrap(), "2026-11-28T10:30:00.000Z");
        for bad in ["", "notadate", "7y", "-3d", "d", "7é", "é"] {
            assert!(at(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ages_read_as_people_say_them() {
        let now = Timestamp(1_000_000_000_000);
        let ago = |ms: i64| age(Timestamp(now.0 - ms), now);
        assert_eq!(ago(-5_000), "just now");
        assert_eq!(ago(59_000), "just now");
        assert_eq!(ago(60_000), "1 minute ago");
        assert_eq!(ago(3 * 3_600_000 + 5), "3 hours ago");
        assert_eq!(ago(86_400_000), "1 day ago");
        assert_eq!(ago(6 * 86_400_000), "6 days ago");
        assert_eq!(ago(7 * 86_400_000), "1 week ago");
        assert_eq!(ago(13 * 86_400_000), "1 week ago");
        assert_eq!(ago(29 * 86_400_000), "4 weeks ago");
        assert_eq!(ago(95 * 86_400_000), "3 months ago");
        assert_eq!(ago(800 * 86_400_000), "2 years ago");
    }
}

/// Where the engine reads the time from: the system clock, or a clock a test sets (decay
/// and consolidation of memories are tested across weeks in milliseconds).
#[derive(Clone, Default)]
pub struct Clock(Option<std::sync::Arc<std::sync::atomic::AtomicI64>>);

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock(None)
    }

    /// A clock that reads `start` until moved with [`Clock::advance`] or [`Clock::set`].
    pub fn manual(start: Timestamp) -> Clock {
        Clock(Some(std::sync::Arc::new(
            std::sync::atomic::AtomicI64::new(start.0),
        )))
    }

    /// The time now, by this clock.
    pub fn now(&self) -> Timestamp {
        match &self.0 {
            None => Timestamp::now(),
            Some(t) => Timestamp(t.load(std::sync::atomic::Ordering::SeqCst)),
        }
    }

    /// Moves a manual clock forward by `ms` milliseconds (the system clock is not moved).
    pub fn advance(&self, ms: i64) {
        if let Some(t) = &self.0 {
            t.fetch_add(ms, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// Sets a manual clock to `at`.
    pub fn set(&self, at: Timestamp) {
        if let Some(t) = &self.0 {
            t.store(at.0, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            None => f.write_str("Clock::system"),
            Some(t) => write!(
                f,
                "Clock::manual({})",
                t.load(std::sync::atomic::Ordering::SeqCst)
            ),
        }
    }
}
