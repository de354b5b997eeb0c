//! A full consistency check of the stored graph: every edge's endpoints exist and every
//! index keyspace agrees with its primary, both ways. Used after crashes and by tests.

use std::collections::{BTreeSet, HashMap};

use eywa_storage::Keyspace;

use super::keys::{self, Adjacency};
use super::write::HANDOFF_PREFIX;
use super::{Graph, SourceRecord};
use crate::Result;
use crate::model::{Edge, EdgeId, Handoff, Node, NodeId};

impl Graph {
    /// Every inconsistency found, described; empty when the store is consistent.
    pub fn check(&self) -> Result<Vec<String>> {
        let mut problems = Vec::new();
        let store = &self.store;

        // The counters kept by writes (or stored for this generation) equal a recount.
        let generation = *self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let kept = match self
            .counters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
        {
            Some(kept) => Some(kept),
            None => super::counts::Counters::load(store, generation)?,
        };
        if let Some(kept) = kept {
            let fresh = super::counts::Counters::recount(store, generation)?;
            if kept != fresh {
                problems.push(format!("counters {kept:?} differ from a recount {fresh:?}"));
            }
        }

        let mut nodes: HashMap<NodeId, Node> = HashMap::new();
        let mut node_keys: BTreeSet<(Keyspace, Vec<u8>)> = BTreeSet::new();
        for entry in store.scan::<Node>(Keyspace::Nodes, &[]) {
            let (key, node) = entry?;
            if key != keys::node(node.id) {
                problems.push(format!("node {} stored under a foreign key", node.id));
            }
            node_keys.extend(keys::node_index(&node));
            nodes.insert(node.id, node);
        }
        for keyspace in [
            Keyspace::NodesByName,
            Keyspace::EpisodesByTime,
            Keyspace::SessionsByActivity,
        ] {
            let mut stored = BTreeSet::new();
            for key in store.keys(keyspace, &[]) {
                stored.insert((keyspace, key?));
            }
            let wanted: BTreeSet<_> = node_keys
                .iter()
                .filter(|(k, _)| *k == keyspace)
                .cloned()
                .collect();
            for missing in wanted.difference(&stored) {
                problems.push(format!("{keyspace}: missing entry {:02x?}", missing.1));
            }
            for extra in stored.difference(&wanted) {
                problems.push(format!("{keyspace}: entry without a node {:02x?}", extra.1));
            }
        }

        // Each edge's latest version lives in its `edges_by_src` entry, the versions
        // before it in `edges`.
        let mut latest: HashMap<EdgeId, Edge> = HashMap::new();
        for entry in store.entries(Keyspace::EdgesBySrc, &[]) {
            let (key, value) = entry?;
            let Some(edge) = keys::latest_edge(&key, &value) else {
                problems.push(format!("edges_by_src: unreadable entry {key:02x?}"));
                continue;
            };
            if edge.id != EdgeId::derive(edge.src, edge.relation.as_str(), edge.dst) {
                problems.push(format!("edge {} stored under a foreign key", edge.id));
            }
            for end in [edge.src, edge.dst] {
                if !nodes.contains_key(&end) {
                    problems.push(format!("edge {} points at missing node {end}", edge.id));
                }
            }
            latest.insert(edge.id, edge);
        }
        for entry in store.scan::<Edge>(Keyspace::Edges, &[]) {
            let (key, edge) = entry?;
            if key != keys::edge_version(edge.id, edge.recorded_at) {
                problems.push(format!("edge {} stored under a foreign key", edge.id));
            }
            let superseded = latest.get(&edge.id).is_some_and(|l| {
                l.src == edge.src
                    && l.dst == edge.dst
                    && l.relation == edge.relation
                    && l.recorded_at > edge.recorded_at
                    && edge.expired_at.is_some()
            });
            if !superseded {
                problems.push(format!(
                    "edge {} keeps a version recorded at {} that no later version superseded",
                    edge.id, edge.recorded_at.0
                ));
            }
        }
        let wanted: BTreeSet<(Vec<u8>, Vec<u8>)> = latest
            .values()
            .map(|edge| (keys::by_dst(edge), Adjacency::of(edge).encode()))
            .collect();
        let mut stored = BTreeSet::new();
        for entry in store.entries(Keyspace::EdgesByDst, &[]) {
            stored.insert(entry?);
        }
        for missing in wanted.difference(&stored) {
            problems.push(format!(
                "edges_by_dst: missing or stale entry {:02x?}",
                missing.0
            ));
        }
        for extra in stored.difference(&wanted) {
            problems.push(format!(
                "edges_by_dst: entry without its edge {:02x?}",
                extra.0
            ));
        }

        for entry in store.scan::<SourceRecord>(Keyspace::Sources, &[]) {
            let (key, mut source) = entry?;
            source.path = String::from_utf8_lossy(&key).into_owned();
            if let Some(episode) = source.episode
                && !nodes.contains_key(&episode)
            {
                problems.push(format!(
                    "source {} names missing episode {episode}",
                    source.path
                ));
            }
            for hash in source.blobs() {
                if store.blob_info(hash)?.is_none() {
                    problems.push(format!("source {} names missing blob {hash}", source.path));
                }
            }
        }
        for entry in store.scan::<Handoff>(Keyspace::Docs, &[HANDOFF_PREFIX]) {
            let (_, handoff) = entry?;
            if !nodes.contains_key(&handoff.episode) {
                problems.push(format!(
                    "handoff {} names a missing episode",
                    handoff.session_id
                ));
            }
        }
        Ok(problems)
    }
}

impl Graph {
    /// Holds back every graph write until the guard is dropped (a backup's copy).
    pub(crate) fn hold_writes(&self) -> std::sync::MutexGuard<'_, u64> {
        self.writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Rebuilds every index keyspace (names, episode times, session activity, the
    /// by-destination adjacency index) and the counters from the primaries (nodes, the
    /// edges' latest versions in `edges_by_src`, sources), and drops the view's snapshot,
    /// which was built from them. For a store
    /// [`Graph::check`] found inconsistent; the caller holds the store alone (no server).
    /// Returns the index entries written.
    pub fn rebuild_indexes(&self) -> Result<u64> {
        const BATCH: usize = 50_000;
        // It empties and refills the keyspaces a view is built from, in batches with no
        // change for the view to record: no view is built meanwhile (the same lock order
        // as a load's: loading, then the writer).
        let _loading = self
            .loading
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut generation = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let store = &self.store;
        let flush = |batch: &mut eywa_storage::Batch| -> Result<()> {
            store.apply(std::mem::take(batch))?;
            Ok(())
        };
        let mut batch = eywa_storage::Batch::new();
        for keyspace in [
            Keyspace::NodesByName,
            Keyspace::EpisodesByTime,
            Keyspace::SessionsByActivity,
            Keyspace::EdgesByDst,
        ] {
            for key in store.keys(keyspace, &[]) {
                batch.delete(keyspace, key?);
                if batch.len() >= BATCH {
                    flush(&mut batch)?;
                }
            }
        }
        flush(&mut batch)?;
        let mut written = 0u64;
        for entry in store.scan::<Node>(Keyspace::Nodes, &[]) {
            let (_, node) = entry?;
            for (keyspace, key) in keys::node_index(&node) {
                batch.put_raw(keyspace, key, Vec::new());
                written += 1;
            }
            if batch.len() >= BATCH {
                flush(&mut batch)?;
            }
        }
        for entry in store.entries(Keyspace::EdgesBySrc, &[]) {
            let (key, value) = entry?;
            // An unreadable entry stays as it is: check names it.
            if let Some(edge) = keys::latest_edge(&key, &value) {
                batch.put_raw(
                    Keyspace::EdgesByDst,
                    keys::by_dst(&edge),
                    Adjacency::of(&edge).encode(),
                );
                written += 1;
                if batch.len() >= BATCH {
                    flush(&mut batch)?;
                }
            }
        }
        flush(&mut batch)?;
        // The generation moves on: what was derived from the old indexes is stale. The
        // counters are recounted from the rebuilt indexes.
        *generation += 1;
        super::snapshot::bump(&mut batch, *generation)?;
        flush(&mut batch)?;
        let counters = super::counts::Counters::recount(store, *generation)?;
        counters.save(store)?;
        *self
            .counters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(counters);
        let snapshot = super::snapshot::path(store);
        match std::fs::remove_file(&snapshot) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(crate::Error::io(&snapshot)(e)),
        }
        store.flush()?;
        Ok(written)
    }
}
