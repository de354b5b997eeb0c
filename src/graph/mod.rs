//! The graph store over `eywa-storage`: idempotent upserts that keep every index
//! keyspace in step with its primary in one batch, and the walks queries need.

mod keys;
mod store;

pub use self::store::{Counts, Direction, Graph, Neighbor, SourceRecord, Touch};
