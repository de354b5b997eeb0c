//! Key layouts of the graph's keyspaces.

use eywa_storage::key::KeyBuf;

use crate::model::{Edge, EdgeId, Node, NodeId, NodeKind};

pub fn node(id: NodeId) -> Vec<u8> {
    id.as_bytes().to_vec()
}

pub fn edge(id: EdgeId) -> Vec<u8> {
    id.as_bytes().to_vec()
}

/// `node id | edge id`, for edges by source and by destination.
pub fn adjacency(node: NodeId, edge: EdgeId) -> Vec<u8> {
    KeyBuf::new()
        .bytes(node.as_bytes())
        .bytes(edge.as_bytes())
        .finish()
}

pub fn edge_of_adjacency(key: &[u8]) -> Option<EdgeId> {
    EdgeId::from_slice(key.get(16..32)?)
}

pub fn normalize_name(name: &str) -> String {
    name.trim().to_lowercase()
}

/// `kind tag | normalized name` — the prefix of every node of that kind and name.
pub fn name_prefix(tag: u8, name: &str) -> Vec<u8> {
    KeyBuf::new().u8(tag).str(&normalize_name(name)).finish()
}

/// `start | episode id`.
pub fn episode_time(start_ms: i64, id: NodeId) -> Vec<u8> {
    KeyBuf::new().i64(start_ms).bytes(id.as_bytes()).finish()
}

/// The last 16 bytes of an index key: the node id it points at.
pub fn trailing_node(key: &[u8]) -> Option<NodeId> {
    NodeId::from_slice(key.get(key.len().checked_sub(16)?..)?)
}

/// Index entries a node owns: (keyspace, key).
pub fn node_index(node: &Node) -> Vec<(eywa_storage::Keyspace, Vec<u8>)> {
    use eywa_storage::Keyspace;
    let mut keys = Vec::new();
    match &node.kind {
        NodeKind::Episode(e) => {
            keys.push((Keyspace::EpisodesByTime, episode_time(e.start.0, node.id)));
        }
        NodeKind::Entity(e) => {
            let tag = node.kind.tag();
            for name in std::iter::once(&node.name).chain(&e.aliases) {
                let mut key = name_prefix(tag, name);
                key.extend_from_slice(node.id.as_bytes());
                keys.push((Keyspace::NodesByName, key));
            }
            if let Some(path) = &e.path {
                let mut key = name_prefix(tag, path);
                key.extend_from_slice(node.id.as_bytes());
                keys.push((Keyspace::NodesByName, key));
            }
        }
        NodeKind::Document(_) | NodeKind::Memory(_) => {
            let mut key = name_prefix(node.kind.tag(), &node.name);
            key.extend_from_slice(node.id.as_bytes());
            keys.push((Keyspace::NodesByName, key));
        }
    }
    keys.sort();
    keys.dedup();
    keys
}

pub fn edge_index(edge: &Edge) -> [(eywa_storage::Keyspace, Vec<u8>); 2] {
    use eywa_storage::Keyspace;
    [
        (Keyspace::EdgesBySrc, adjacency(edge.src, edge.id)),
        (Keyspace::EdgesByDst, adjacency(edge.dst, edge.id)),
    ]
}
