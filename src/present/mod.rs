//! How eywa shows what it holds, decided once for every front: a search hit
//! ([`hit`]), a handoff ([`handoff`]), a session row ([`session`]) and the context an
//! agent is handed ([`context`]). The CLI prints their lines, the MCP tools and the hooks
//! their markdown, and the web view builds its HTML from the same pieces (titles, counts,
//! durations, score terms), escaping them itself. JSON for scripts is data, not a
//! presentation: it stays with each front.

pub mod context;
pub mod handoff;
pub mod hit;
pub mod session;

/// `score` as a share of `best`, in whole percent (100 for the best itself): seed 001's
/// `1. [85%] …`.
pub fn percent(score: f32, best: f32) -> u32 {
    if best <= 0.0 {
        return 0;
    }
    ((score / best).clamp(0.0, 1.0) * 100.0).round() as u32
}

/// `n` things, counted: "1 session", "1,204 sessions".
pub fn counted(n: u64, thing: &str) -> String {
    format!("{} {thing}{}", thousands(n), if n == 1 { "" } else { "s" })
}

pub use crate::model::{minutes, thousands};

/// Text with its runs of whitespace (newlines too) made single spaces.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What a thing with no title is called.
pub const UNTITLED: &str = "(untitled)";

/// `title`, or [`UNTITLED`] when it is empty.
pub fn title_or_untitled(title: &str) -> &str {
    if title.is_empty() { UNTITLED } else { title }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(counted(1, "session"), "1 session");
        assert_eq!(counted(1_204, "session"), "1,204 sessions");
        assert_eq!(minutes(0), "<1m");
        assert_eq!(minutes(45), "45m");
        assert_eq!(minutes(120), "2h");
        assert_eq!(minutes(125), "2h 5m");
        assert_eq!(percent(0.5, 2.0), 25);
        assert_eq!(percent(1.0, 0.0), 0);
        assert_eq!(one_line(" a\n\n b\tc "), "a b c");
    }
}
