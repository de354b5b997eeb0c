//! Ranking: Eywa handoff scoring (`get`), and hybrid search's fusion of lexical and
//! semantic rankings with graph signals.

mod eywa;
mod hybrid;

pub use self::eywa::{
    DEFAULT_DAYS_BACK, DEFAULT_LIMIT, GetOptions, GetResult, HandoffIndex, KeyKind, Rebuilt,
    Scored, Segment, SegmentError, build_segment, query_tokens,
};
pub use self::hybrid::{Best, GraphEvidence, Ranked, SearchMode, Signals, Weights, ranks, score};
