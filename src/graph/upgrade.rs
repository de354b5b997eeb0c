//! Brings the graph of an older store layout up to this one, on open.

use eywa_storage::{Batch, Keyspace, Store};

use super::keys::{self, ADJACENCY_VALUE_LEN};
use crate::Result;
use crate::model::Edge;

/// Set once every edge's latest version lives in its `edges_by_src` entry (store layout
/// 3); before, each version sat in `edges` and `edges_by_src` held its adjacency alone.
const EDGES_INLINE: &[u8] = b"edges_inline";

/// Entries moved per batch.
const BATCH: usize = 10_000;

/// Moves the latest version of each edge from `edges` into its `edges_by_src` entry,
/// unless that was done. Each batch is atomic and an entry already moved is left alone,
/// so a crash part-way is finished by the next open. Returns the edges moved.
pub(super) fn inline_edges(store: &Store) -> Result<u64> {
    if store.contains(Keyspace::Settings, EDGES_INLINE)? {
        return Ok(0);
    }
    let mut moved = 0;
    let mut batch = Batch::new();
    for entry in store.entries(Keyspace::EdgesBySrc, &[]) {
        let (key, value) = entry?;
        if value.len() != ADJACENCY_VALUE_LEN {
            continue;
        }
        let Some(link) = keys::parse_adjacency(&key) else {
            continue;
        };
        // Versions sort by record time: the last is the latest. An entry without any is
        // left for `check` to name.
        let Some(latest) = store
            .scan::<Edge>(Keyspace::Edges, &keys::edge_versions(link.edge))
            .next_back()
        else {
            continue;
        };
        let (version_key, latest) = latest?;
        batch.delete(Keyspace::Edges, version_key);
        batch.put_raw(Keyspace::EdgesBySrc, key, keys::latest_value(&latest)?);
        moved += 1;
        if batch.len() >= BATCH {
            store.apply(std::mem::take(&mut batch))?;
        }
    }
    batch.put(Keyspace::Settings, EDGES_INLINE.to_vec(), &true)?;
    store.apply(batch)?;
    if moved > 0 {
        store.flush()?;
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use eywa_storage::Config;

    use super::*;
    use crate::graph::{EdgeRef, Graph};
    use crate::model::{NodeId, Relation, Timestamp};

    /// Puts the graph's edges back in layout 2: every version in `edges`, adjacency alone
    /// in `edges_by_src`.
    fn to_layout_2(store: &Store) {
        let mut batch = Batch::new();
        for entry in store.entries(Keyspace::EdgesBySrc, &[]) {
            let (key, value) = entry.unwrap();
            let edge = keys::latest_edge(&key, &value).unwrap();
            batch
                .put(
                    Keyspace::Edges,
                    keys::edge_version(edge.id, edge.recorded_at),
                    &edge,
                )
                .unwrap();
            batch.put_raw(
                Keyspace::EdgesBySrc,
                key,
                keys::Adjacency::of(&edge).encode(),
            );
        }
        batch.delete(Keyspace::Settings, EDGES_INLINE.to_vec());
        store.apply(batch).unwrap();
    }

    #[test]
    fn a_layout_2_graph_keeps_every_version_when_its_edges_move_inline() {
        let store = Config::new().temporary(true).open().unwrap();
        let graph = Graph::open(store.clone()).unwrap();
        let (a, b, p) = (
            NodeId::episode("a"),
            NodeId::episode("b"),
            NodeId::project("/p"),
        );
        let touched = Edge::new(a, Relation::Touched, p, Timestamp(10));
        let follows = Edge::new(b, Relation::Follows, a, Timestamp(20));
        for edge in [&touched, &follows] {
            graph.supersede(EdgeRef::of(edge), edge.clone()).unwrap();
        }
        // A second version of `touched`: its window closed.
        let closed = Edge {
            valid_to: Some(Timestamp(15)),
            ..touched.clone()
        };
        graph.supersede(EdgeRef::of(&touched), closed).unwrap();
        let refs = [EdgeRef::of(&touched), EdgeRef::of(&follows)];
        let before: Vec<Vec<Edge>> = refs
            .iter()
            .map(|r| graph.edge_versions(*r).unwrap())
            .collect();
        assert_eq!(before[0].len(), 2, "{before:#?}");
        assert_eq!(before[1].len(), 1);
        drop(graph);

        to_layout_2(&store);
        assert_eq!(store.len(Keyspace::Edges).unwrap(), 3);
        let graph = Graph::open(store.clone()).unwrap();
        let after: Vec<Vec<Edge>> = refs
            .iter()
            .map(|r| graph.edge_versions(*r).unwrap())
            .collect();
        assert_eq!(after, before);
        // Only the versions before the latest stay in `edges`.
        assert_eq!(store.len(Keyspace::Edges).unwrap(), 1);
        assert!(store.contains(Keyspace::Settings, EDGES_INLINE).unwrap());
        // Done once: moved entries are left alone even without the mark.
        let mut batch = Batch::new();
        batch.delete(Keyspace::Settings, EDGES_INLINE.to_vec());
        store.apply(batch).unwrap();
        assert_eq!(inline_edges(&store).unwrap(), 0);
        assert_eq!(
            refs.iter()
                .map(|r| graph.edge_versions(*r).unwrap())
                .collect::<Vec<_>>(),
            before
        );
    }
}
