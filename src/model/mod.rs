//! Domain types, no I/O: ids, timestamps, nodes, edges, handoffs.

mod chunk;
mod edge;
mod facts;
mod filter;
mod handoff;
mod identity;
mod ids;
mod kinds;
mod node;
mod time;

pub use self::chunk::{Chunk, ChunkNeighbor};
pub use self::edge::{DocRef, Edge, Relation};
pub use self::facts::{SessionFacts, Spawn};
pub use self::filter::SearchFilter;
pub use self::handoff::{Handoff, HandoffSections};
pub use self::identity::{Attribution, Identity, MAX_IDENTITY_CHARS};
pub use self::ids::{EdgeId, NodeId, uuid_key};
pub use self::kinds::{DOCUMENT_TYPE, EMBEDDED_TYPES, MEMORY_TYPE, document_passage};
pub use self::node::{
    AgentInfo, AgentLayout, Compaction, DecayState, Document, Entity, EntityType, Episode, Memory,
    MemoryType, Node, NodeKind, TokenUsage,
};
pub use self::time::{Clock, Timestamp, age, minutes, parse_since, thousands};
