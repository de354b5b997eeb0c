//! Ranking: Eywa handoff scoring (`get`).

mod eywa;

pub use self::eywa::{
    DEFAULT_DAYS_BACK, DEFAULT_LIMIT, GetOptions, GetResult, HandoffIndex, Scored, query_tokens,
};
