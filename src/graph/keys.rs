//! Key layouts of the graph's keyspaces.
//!
//! | keyspace | key | value |
//! |---|---|---|
//! | nodes | node id | node |
//! | edges_by_src | src, relation tag, dst, edge id | the latest version: [`Adjacency`], then [`LatestTail`] |
//! | edges_by_dst | dst, relation tag, src, edge id | [`Adjacency`] of the latest version |
//! | edges | edge id, recorded_at | a version a later one superseded |
//!
//! An edge is stored once: its latest version in its `edges_by_src` entry (the key holds
//! its ends and relation), the versions before it in `edges`.
//! | nodes_by_name | kind tag, normalized name, node id | empty |
//! | episodes_by_time | start, episode id | empty |
//! | sessions_by_activity | end, episode id (main sessions) | empty |

use eywa_storage::Keyspace;
use eywa_storage::key::{KeyBuf, decode_i64, encode_i64};
use serde::{Deserialize, Serialize};

use crate::model::{DocRef, Edge, EdgeId, Node, NodeId, NodeKind, Relation, Timestamp};

pub(super) const ID_LEN: usize = 16;
/// `node | tag | node | edge`.
pub(super) const ADJACENCY_LEN: usize = ID_LEN * 3 + 1;
/// Tags of index keys for episodes (nodes_by_name holds entities at 16 + type).
pub(super) const EPISODE_TAG: u8 = 1;
pub(super) const ENTITY_TAG_BASE: u8 = 16;

pub(super) fn node(id: NodeId) -> Vec<u8> {
    id.as_bytes().to_vec()
}

/// Prefix of every version of an edge.
pub(super) fn edge_versions(id: EdgeId) -> Vec<u8> {
    id.as_bytes().to_vec()
}

pub(super) fn edge_version(id: EdgeId, recorded_at: Timestamp) -> Vec<u8> {
    KeyBuf::new()
        .bytes(id.as_bytes())
        .i64(recorded_at.0)
        .finish()
}

fn adjacency(first: NodeId, relation: Relation, second: NodeId, edge: EdgeId) -> Vec<u8> {
    KeyBuf::new()
        .bytes(first.as_bytes())
        .u8(relation.tag())
        .bytes(second.as_bytes())
        .bytes(edge.as_bytes())
        .finish()
}

pub(super) fn by_src(edge: &Edge) -> Vec<u8> {
    adjacency(edge.src, edge.relation, edge.dst, edge.id)
}

pub(super) fn by_dst(edge: &Edge) -> Vec<u8> {
    adjacency(edge.dst, edge.relation, edge.src, edge.id)
}

/// The `edges_by_src` key of an edge known by its ends (its id comes along: deriving it
/// again would hash its ends).
pub(super) fn by_ref(edge: super::EdgeRef) -> Vec<u8> {
    adjacency(edge.src, edge.relation, edge.dst, edge.id)
}

/// What an `edges_by_src` entry holds after its [`Adjacency`]: the rest of the latest
/// version (its ends, relation and id are in the key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct LatestTail {
    pub confidence: f32,
    pub recorded_at: i64,
    pub evidence: Vec<DocRef>,
}

/// The `edges_by_src` value of `edge`, its latest version.
pub(super) fn latest_value(edge: &Edge) -> eywa_storage::Result<Vec<u8>> {
    let mut value = Adjacency::of(edge).encode();
    let tail = LatestTail {
        confidence: edge.confidence,
        recorded_at: edge.recorded_at.0,
        evidence: edge.evidence.clone(),
    };
    value.extend(eywa_storage::encode(Keyspace::EdgesBySrc, &tail)?);
    Ok(value)
}

/// The edge an `edges_by_src` entry holds; `None` when the key or value is malformed.
pub(super) fn latest_edge(key: &[u8], value: &[u8]) -> Option<Edge> {
    let key = parse_adjacency(key)?;
    let adjacency = Adjacency::decode(value.get(..ADJACENCY_VALUE_LEN)?)?;
    let tail: LatestTail =
        eywa_storage::decode(Keyspace::EdgesBySrc, &value[ADJACENCY_VALUE_LEN..]).ok()?;
    let at = |t: i64| (t != i64::MAX).then_some(Timestamp(t));
    Some(Edge {
        id: key.edge,
        src: key.node,
        dst: key.other,
        relation: key.relation,
        confidence: tail.confidence,
        valid_from: Timestamp(adjacency.valid_from),
        valid_to: at(adjacency.valid_to),
        recorded_at: Timestamp(tail.recorded_at),
        expired_at: at(adjacency.expired_at),
        evidence: tail.evidence,
    })
}

/// An adjacency key read back: the node it is filed under, the relation, the node at the
/// other end and the edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct AdjacencyKey {
    pub node: NodeId,
    pub relation: Relation,
    pub other: NodeId,
    pub edge: EdgeId,
}

pub(super) fn parse_adjacency(key: &[u8]) -> Option<AdjacencyKey> {
    if key.len() != ADJACENCY_LEN {
        return None;
    }
    Some(AdjacencyKey {
        node: NodeId::from_slice(&key[..16])?,
        relation: Relation::from_tag(key[16])?,
        other: NodeId::from_slice(&key[17..33])?,
        edge: EdgeId::from_slice(&key[33..49])?,
    })
}

/// Bytes of an encoded [`Adjacency`].
pub(super) const ADJACENCY_VALUE_LEN: usize = 24;

/// What the adjacency indexes keep of an edge's latest version, so the in-memory view can
/// be built from index keyspaces alone: 24 bytes, big-endian (an `edges_by_src` value
/// starts with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Adjacency {
    pub valid_from: i64,
    /// `i64::MAX` when open.
    pub valid_to: i64,
    /// `i64::MAX` while current.
    pub expired_at: i64,
}

impl Adjacency {
    pub(super) fn of(edge: &Edge) -> Self {
        Adjacency {
            valid_from: edge.valid_from.0,
            valid_to: edge.valid_to.map_or(i64::MAX, |t| t.0),
            expired_at: edge.expired_at.map_or(i64::MAX, |t| t.0),
        }
    }

    pub(super) fn is_current(&self) -> bool {
        self.expired_at == i64::MAX
    }

    pub(super) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(24);
        for x in [self.valid_from, self.valid_to, self.expired_at] {
            v.extend_from_slice(&encode_i64(x));
        }
        v
    }

    /// Reads an encoded adjacency, or the one an `edges_by_src` value starts with.
    pub(super) fn decode(bytes: &[u8]) -> Option<Self> {
        let bytes = bytes.get(..ADJACENCY_VALUE_LEN)?;
        let at = |i: usize| decode_i64(bytes[i..i + 8].try_into().expect("8 bytes"));
        Some(Adjacency {
            valid_from: at(0),
            valid_to: at(8),
            expired_at: at(16),
        })
    }
}

pub(super) fn normalize_name(name: &str) -> String {
    name.trim().to_lowercase()
}

/// `kind tag | normalized name` — the prefix of every node of that kind and name.
pub(super) fn name_prefix(tag: u8, name: &str) -> Vec<u8> {
    KeyBuf::new().u8(tag).str(&normalize_name(name)).finish()
}

/// `start | episode id`.
pub(super) fn episode_time(start_ms: i64, id: NodeId) -> Vec<u8> {
    KeyBuf::new().i64(start_ms).bytes(id.as_bytes()).finish()
}

pub(super) fn parse_episode_time(key: &[u8]) -> Option<(i64, NodeId)> {
    if key.len() != 8 + ID_LEN {
        return None;
    }
    Some((
        decode_i64(key[..8].try_into().ok()?),
        NodeId::from_slice(&key[8..])?,
    ))
}

/// The last 16 bytes of an index key: the node id it points at.
pub(super) fn trailing_node(key: &[u8]) -> Option<NodeId> {
    NodeId::from_slice(key.get(key.len().checked_sub(ID_LEN)?..)?)
}

/// Index entries a node owns: (keyspace, key), sorted.
pub(super) fn node_index(node: &Node) -> Vec<(Keyspace, Vec<u8>)> {
    let mut keys = Vec::new();
    let named = |name: &str| {
        let mut key = name_prefix(node.kind.tag(), name);
        key.extend_from_slice(node.id.as_bytes());
        (Keyspace::NodesByName, key)
    };
    match &node.kind {
        NodeKind::Episode(e) => {
            keys.push((Keyspace::EpisodesByTime, episode_time(e.start.0, node.id)));
            if e.agent.is_none() {
                keys.push((Keyspace::SessionsByActivity, episode_time(e.end.0, node.id)));
            }
        }
        NodeKind::Entity(e) => {
            keys.push(named(&node.name));
            keys.extend(e.aliases.iter().map(|a| named(a)));
            keys.extend(e.path.iter().map(|p| named(p)));
        }
        NodeKind::Document(_) | NodeKind::Memory(_) => keys.push(named(&node.name)),
    }
    keys.sort();
    keys.dedup();
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacency_keys_and_values_round_trip() {
        let mut edge = Edge::new(
            NodeId::episode("s"),
            Relation::Touched,
            NodeId::project("/p"),
            Timestamp(-5),
        );
        let key = parse_adjacency(&by_dst(&edge)).unwrap();
        assert_eq!(key.node, edge.dst);
        assert_eq!(key.other, edge.src);
        assert_eq!(key.relation, Relation::Touched);
        assert_eq!(key.edge, edge.id);
        let adj = Adjacency::of(&edge);
        assert_eq!(Adjacency::decode(&adj.encode()), Some(adj));
        assert!(adj.is_current());
        edge.expired_at = Some(Timestamp(9));
        assert!(!Adjacency::of(&edge).is_current());
    }

    #[test]
    fn the_latest_version_round_trips_through_its_src_entry() {
        let mut edge = Edge::new(
            NodeId::episode("s"),
            Relation::Edited,
            NodeId::file("/p/a.rs"),
            Timestamp(-5),
        );
        edge.confidence = 0.5;
        edge.recorded_at = Timestamp(77);
        edge.evidence = vec![DocRef {
            doc_id: NodeId::episode("s"),
            chunk_id: "msg:1".into(),
            score: 1.0,
        }];
        let key = by_src(&edge);
        assert_eq!(key, by_ref(super::super::EdgeRef::of(&edge)));
        let value = latest_value(&edge).unwrap();
        assert_eq!(latest_edge(&key, &value), Some(edge.clone()));
        edge.valid_to = Some(Timestamp(100));
        edge.expired_at = Some(Timestamp(200));
        let value = latest_value(&edge).unwrap();
        assert_eq!(Adjacency::decode(&value), Some(Adjacency::of(&edge)));
        assert_eq!(latest_edge(&key, &value), Some(edge));
        assert_eq!(latest_edge(&key, &value[..10]), None);
    }

    #[test]
    fn versions_of_an_edge_sort_by_record_time() {
        let id = EdgeId::derive(NodeId::episode("a"), "USED", NodeId::tool("Read"));
        assert!(edge_version(id, Timestamp(-1)) < edge_version(id, Timestamp(0)));
        assert!(edge_version(id, Timestamp(1)) < edge_version(id, Timestamp(1 << 40)));
        assert!(edge_version(id, Timestamp(5)).starts_with(&edge_versions(id)));
    }
}
