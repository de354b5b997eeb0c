//! Ids: deterministic UUIDv5 node and edge ids, and 128-bit keys of message uuids.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The UUIDv5 namespace of every id eywa derives from a source.
const NAMESPACE: Uuid = Uuid::from_u128(0x6579_7761_2d6e_732d_8000_0000_0000_0001);

fn derive(kind: &str, name: &str) -> Uuid {
    let mut bytes = Vec::with_capacity(kind.len() + 1 + name.len());
    bytes.extend_from_slice(kind.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(name.as_bytes());
    Uuid::new_v5(&NAMESPACE, &bytes)
}

/// Id of a node. Derived deterministically (UUIDv5) for everything read from a source, so
/// re-ingesting the same source yields the same ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub Uuid);

impl NodeId {
    /// The Episode of a Claude Code session, from its session uuid (the file stem).
    pub fn episode(session_id: &str) -> Self {
        NodeId(derive("episode", session_id))
    }

    /// The Episode of a subagent run: its parent session and its agent id (agent ids are
    /// short and only unique within a parent).
    pub fn agent(parent_session: &str, agent_id: &str) -> Self {
        NodeId(derive("agent", &format!("{parent_session}/{agent_id}")))
    }

    /// A Project entity, from its canonical path.
    pub fn project(canonical_path: &str) -> Self {
        NodeId(derive("project", canonical_path))
    }

    /// A Tool entity, from the tool's name as Claude Code spells it.
    pub fn tool(name: &str) -> Self {
        NodeId(derive("tool", name))
    }

    /// A File entity, from its canonical (project-relative or absolute) path.
    pub fn file(path: &str) -> Self {
        NodeId(derive("file", path))
    }

    /// A Concept entity, from its normalized term.
    pub fn concept(term: &str) -> Self {
        NodeId(derive("concept", term))
    }

    /// A Person entity, from their name (case does not make another person).
    pub fn person(name: &str) -> Self {
        NodeId(derive("person", &name.to_lowercase()))
    }

    /// An Organization entity, from its mail domain.
    pub fn organization(domain: &str) -> Self {
        NodeId(derive("organization", &domain.to_ascii_lowercase()))
    }

    /// A plan Document, from its file stem (`<slug>` or `<slug>-agent-<id>`).
    pub fn plan(stem: &str) -> Self {
        NodeId(derive("plan", stem))
    }

    /// A project memory Document, from its file's path.
    pub fn memory_doc(path: &str) -> Self {
        NodeId(derive("memory-doc", path))
    }

    /// A Memory, from its id (16 hex digits).
    pub fn memory(id: &str) -> Self {
        NodeId(derive("memory", id))
    }

    /// A Document a user added, from its id (16 hex digits, from its path).
    pub fn document(id: &str) -> Self {
        NodeId(derive("document", id))
    }

    /// The handoff Document of a session.
    pub fn handoff(session_id: &str) -> Self {
        NodeId(derive("handoff", session_id))
    }

    /// The uuid's 16 bytes, as index keys hold them.
    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }

    /// An id from its 16 bytes; `None` for any other length.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        Uuid::from_slice(bytes).ok().map(NodeId)
    }

    /// Parses a uuid in any of its text forms, surrounding whitespace ignored.
    pub fn parse(s: &str) -> Option<Self> {
        Uuid::parse_str(s.trim()).ok().map(NodeId)
    }
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Id of an edge: derived from its source, relation and destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EdgeId(pub Uuid);

impl EdgeId {
    /// The id of the edge `src` → `dst` under the relation named `relation` (`TOUCHED`, …).
    pub fn derive(src: NodeId, relation: &str, dst: NodeId) -> Self {
        let name = format!("{}|{relation}|{}", src.0, dst.0);
        EdgeId(derive("edge", &name))
    }

    /// The uuid's 16 bytes, as index keys hold them.
    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }

    /// An id from its 16 bytes; `None` for any other length.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        Uuid::from_slice(bytes).ok().map(EdgeId)
    }

    /// Parses a uuid in any of its text forms, surrounding whitespace ignored.
    pub fn parse(s: &str) -> Option<Self> {
        Uuid::parse_str(s.trim()).ok().map(EdgeId)
    }
}

impl std::fmt::Display for EdgeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A message uuid as a 128-bit key: the UUID's own bits when it parses as one (every real
/// transcript), else a 128-bit FNV-1a hash of the text. Stable across runs and builds.
pub fn uuid_key(uuid: &str) -> u128 {
    if let Ok(parsed) = uuid::Uuid::try_parse(uuid) {
        return parsed.as_u128();
    }
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    uuid.bytes()
        .fold(OFFSET, |h, b| (h ^ u128::from(b)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_ids_are_stable_and_distinct_per_kind() {
        let a = NodeId::episode("fe869ecb-c176-478f-9734-7e4b8ef12cff");
        assert_eq!(a, NodeId::episode("fe869ecb-c176-478f-9734-7e4b8ef12cff"));
        assert_ne!(a, NodeId::handoff("fe869ecb-c176-478f-9734-7e4b8ef12cff"));
        assert_eq!(a.0.get_version_num(), 5);
        // Pinned: changing the derivation silently orphans every stored node.
        // (Computed independently with Python's uuid.uuid5.)
        assert_eq!(
            NodeId::project("/work/eywa").to_string(),
            "04936f33-0001-568d-bf87-742195de7c09"
        );
        let e = EdgeId::derive(a, "TOUCHED", NodeId::project("/work/eywa"));
        assert_eq!(
            e,
            EdgeId::derive(a, "TOUCHED", NodeId::project("/work/eywa"))
        );
        assert_ne!(e, EdgeId::derive(a, "USED", NodeId::project("/work/eywa")));
    }
}
