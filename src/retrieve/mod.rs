//! Ranking: Eywa handoff scoring (`get`), hybrid search's fusion of lexical and semantic
//! rankings with graph signals, and what of a context fits its token budget.

pub mod context;
mod eywa;
mod hybrid;
pub mod question;
pub mod search;

pub use self::eywa::{
    DEFAULT_DAYS_BACK, DEFAULT_LIMIT, GetOptions, GetResult, HandoffIndex, KeyKind, Rebuilt,
    Scored, Segment, SegmentError, build_segment, query_tokens,
};
pub use self::hybrid::{
    Best, GraphEvidence, Ranked, SearchMode, Signals, Weights, When, ranks, score,
};

use std::borrow::Cow;

/// The longest query read, in characters (seed 001): the rest is dropped, silently.
pub const MAX_QUERY_CHARS: usize = 2_000;

/// A query as `get` and `search` read it (seed 001): control characters (newlines and
/// tabs included) become spaces, so the words on either side stay apart, and it is cut
/// to [`MAX_QUERY_CHARS`] characters.
pub fn clean_query(query: &str) -> Cow<'_, str> {
    let long = query.len() > MAX_QUERY_CHARS && query.chars().nth(MAX_QUERY_CHARS).is_some();
    if !long && !query.chars().any(char::is_control) {
        return Cow::Borrowed(query);
    }
    Cow::Owned(
        query
            .chars()
            .take(MAX_QUERY_CHARS)
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect(),
    )
}

#[cfg(test)]
mod query_tests {
    use super::*;

    #[test]
    fn queries_are_cut_at_2000_characters_and_lose_control_characters() {
        assert!(matches!(clean_query("fix the tokenizer"), Cow::Borrowed(_)));
        assert_eq!(
            clean_query("fix\nthe\ttokenizer\u{7}"),
            "fix the tokenizer "
        );
        let long = "ü".repeat(5_000);
        let cut = clean_query(&long);
        assert_eq!(cut.chars().count(), MAX_QUERY_CHARS);
        assert_eq!(clean_query(&"a".repeat(2_000)).len(), 2_000);
    }
}
