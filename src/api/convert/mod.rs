//! proto ↔ domain: a file per service, each with its requests validated and its answers
//! both ways (for the server and for the client), and one for the model types they share;
//! here, the pieces all of them use. Messages are destructured exhaustively, so that a
//! field added to the proto is either carried or named as left out.

pub(super) mod admin;
pub(super) mod codec;
pub(super) mod documents;
pub(super) mod graph;
pub(super) mod ingest;
pub(super) mod memory;
pub(super) mod model;
pub(super) mod retrieval;
pub(super) mod sessions;
pub(super) mod wire;

use tonic::Status;

use super::pb;
use crate::model::{NodeId, Timestamp};

/// A moment on the wire.
pub(super) fn timestamp(t: Timestamp) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: t.0.div_euclid(1000),
        nanos: (t.0.rem_euclid(1000) * 1_000_000) as i32,
    }
}

/// A moment a server sent; none is the epoch. Saturating: a moment past what milliseconds
/// hold reads as the last one.
pub(super) fn time(t: Option<prost_types::Timestamp>) -> Timestamp {
    t.map_or(Timestamp(0), |t| {
        Timestamp(
            t.seconds
                .saturating_mul(1000)
                .saturating_add(i64::from(t.nanos / 1_000_000)),
        )
    })
}

/// A request's moment, checked: INVALID_ARGUMENT naming `field` when out of range.
pub(super) fn optional_time(
    field: &str,
    t: Option<prost_types::Timestamp>,
) -> Result<Option<Timestamp>, Status> {
    t.map(|prost_types::Timestamp { seconds, nanos }| {
        if !(0..1_000_000_000).contains(&nanos) {
            return Err(Status::invalid_argument(format!(
                "{field}: nanos must be within 0..1e9"
            )));
        }
        // Milliseconds since the epoch hold ±292 million years; dates are kept to years
        // 0 to 9999, what RFC 3339 can say.
        if !(-62_167_219_200..=253_402_300_799).contains(&seconds) {
            return Err(Status::invalid_argument(format!(
                "{field}: the time is outside the years 0 to 9999"
            )));
        }
        seconds
            .checked_mul(1000)
            .and_then(|ms| ms.checked_add(i64::from(nanos / 1_000_000)))
            .map(Timestamp)
            .ok_or_else(|| Status::invalid_argument(format!("{field}: timestamp out of range")))
    })
    .transpose()
}

/// `optional int32` → a number within `min..=max`, or `default` when absent.
pub(super) fn bounded(
    field: &str,
    value: Option<i32>,
    default: usize,
    min: usize,
    max: usize,
) -> Result<usize, Status> {
    match value {
        None => Ok(default),
        Some(v) if v >= 0 && (min..=max).contains(&(v as usize)) => Ok(v as usize),
        Some(v) => Err(Status::invalid_argument(format!(
            "{field} must be between {min} and {max}, got {v}"
        ))),
    }
}

/// A size or an index for a `uint32` field, saturating.
pub(super) fn n32(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Where a page sits in the whole list.
pub(super) fn pagination(
    total: u64,
    limit: usize,
    offset: usize,
    has_more: bool,
) -> pb::Pagination {
    pb::Pagination {
        total,
        limit: n32(limit),
        offset: n32(offset),
        has_more,
    }
}

/// Where a page a server sent sits: total, limit, offset, has_more.
pub(super) fn page_of(p: Option<pb::Pagination>) -> (u64, usize, usize, bool) {
    let pb::Pagination {
        total,
        limit,
        offset,
        has_more,
    } = p.unwrap_or_default();
    (total, limit as usize, offset as usize, has_more)
}

/// How to take a session up again in Claude Code.
pub(super) fn resume_command(session_id: &str) -> String {
    crate::claude::resume_command(session_id, None).unwrap_or_default()
}

/// A server's answer that does not read as the domain's.
pub(super) fn bad(what: &str) -> Status {
    Status::internal(crate::error::status_message(&format!(
        "the server sent a bad {what}"
    )))
}

/// A proto string whose empty means none.
pub(super) fn some(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// A node id a server sent.
pub(super) fn node_id(s: &str) -> Result<NodeId, Status> {
    NodeId::parse(s).ok_or_else(|| bad("node id"))
}
