//! The bounds a graph query is held to: how many nodes it may ask for, how deep a walk or
//! a path may go, which relations it names and what time window it spans.

use super::EdgeFilter;
use crate::model::Relation;
use crate::{Error, Result};

/// Largest `limit` a query may ask for.
pub const MAX_LIMIT: usize = 1_000;
/// Deepest walk or path.
pub const MAX_DEPTH: u32 = 6;

/// Parses relation names; empty names are ignored.
pub fn parse_relations(names: &[String]) -> Result<Vec<Relation>> {
    names
        .iter()
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
        .map(|n| {
            Relation::parse(n).ok_or_else(|| {
                let known: Vec<&str> = Relation::ALL.iter().map(|r| r.as_str()).collect();
                Error::InvalidArgument(format!(
                    "unknown relation {n}; known: {}",
                    known.join(", "),
                    n = crate::error::quote(n)
                ))
            })
        })
        .collect()
}

/// Refuses a time window that ends before it starts.
pub(crate) fn check_window(filter: &EdgeFilter) -> Result<()> {
    if let (Some(f), Some(u)) = (filter.from, filter.until)
        && f > u
    {
        return Err(Error::InvalidArgument(format!(
            "empty time window: since {f} is after until {u}"
        )));
    }
    Ok(())
}

/// Refuses a depth outside 1 to [`MAX_DEPTH`].
pub(crate) fn check_depth(depth: u32) -> Result<()> {
    if depth == 0 || depth > MAX_DEPTH {
        return Err(Error::InvalidArgument(format!(
            "depth must be between 1 and {MAX_DEPTH}, got {depth}"
        )));
    }
    Ok(())
}

/// Refuses a limit outside 1 to [`MAX_LIMIT`].
pub(crate) fn check_limit(limit: usize) -> Result<()> {
    if limit == 0 || limit > MAX_LIMIT {
        return Err(Error::InvalidArgument(format!(
            "limit must be between 1 and {MAX_LIMIT}, got {limit}"
        )));
    }
    Ok(())
}
