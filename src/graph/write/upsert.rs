//! Upserts: a node merged with its stored (or staged) version and its index entries kept
//! in step; an edge versioned against its current version, or expired.

use std::sync::Arc;

use eywa_storage::Keyspace;

use super::super::keys::{self, Adjacency};
use super::super::view::{EdgeMeta, NodeMeta};
use super::super::{EdgeRef, Graph};
use super::Pending;
use crate::Result;
use crate::model::{Edge, Node, NodeKind, Timestamp};

impl Graph {
    pub(super) fn put_node(&self, pending: &mut Pending, mut node: Node) -> Result<()> {
        let old = match pending.staged.get(&node.id) {
            Some(staged) => Some(Arc::new(staged.clone())),
            None => self.node(node.id)?,
        };
        if old.is_none() {
            let session = node.episode().is_some_and(|e| e.agent.is_none());
            pending
                .change
                .node_created(node.id, node_meta(&node).tag, session);
        }
        let old_keys = match &old {
            Some(old) => {
                merge_shared(old, &mut node);
                if **old == node {
                    return Ok(());
                }
                keys::node_index(old)
            }
            None => Vec::new(),
        };
        let new_keys = keys::node_index(&node);
        for stale in old_keys.iter().filter(|k| !new_keys.contains(k)) {
            pending.batch.delete(stale.0, stale.1.clone());
        }
        // Index entries the node already has stay as they are.
        for (keyspace, key) in new_keys.into_iter().filter(|k| !old_keys.contains(k)) {
            pending.batch.put_raw(keyspace, key, Vec::new());
        }
        pending
            .batch
            .put(Keyspace::Nodes, keys::node(node.id), &node)?;
        pending.delta.nodes.push(node_meta(&node));
        pending.staged.insert(node.id, node);
        Ok(())
    }

    /// Records `edge` unless its current version states the same fact. A different fact
    /// expires the current version and records a new one.
    pub(super) fn put_edge(
        &self,
        pending: &mut Pending,
        mut edge: Edge,
        now: Timestamp,
    ) -> Result<()> {
        let unstored = pending
            .scanned
            .get(&edge.src)
            .is_some_and(|stored| !stored.contains(&edge.id));
        let latest = match pending.versions.get(&edge.id) {
            Some(staged) => Some(staged.clone()),
            None if unstored => None,
            None => self.latest_version(EdgeRef::of(&edge))?,
        };
        let recorded_at = match &latest {
            Some(old) if old.expired_at.is_none() && old.same_fact(&edge) => return Ok(()),
            Some(old) => {
                let at = Timestamp(now.0.max(old.recorded_at.0 + 1));
                // The version this one supersedes (expired now, or before) joins the
                // history; the new one takes its place as the latest.
                let mut superseded = old.clone();
                superseded.expired_at.get_or_insert(at);
                pending.batch.put(
                    Keyspace::Edges,
                    keys::edge_version(superseded.id, superseded.recorded_at),
                    &superseded,
                )?;
                at
            }
            None => now,
        };
        let was = latest.as_ref().is_some_and(|l| l.expired_at.is_none());
        pending.change.edge(edge.id, edge.relation, || was, true);
        edge.recorded_at = recorded_at;
        edge.expired_at = None;
        put_latest(pending, &edge)?;
        pending.versions.insert(edge.id, edge.clone());
        pending.delta.edges.push((
            edge.src,
            edge.dst,
            EdgeMeta {
                id: edge.id,
                relation: edge.relation,
                valid_from: edge.valid_from.0,
                valid_to: edge.valid_to.map_or(i64::MAX, |t| t.0),
            },
        ));
        pending.edges.push(edge);
        Ok(())
    }

    /// Marks the current version of `edge` expired as of `now`.
    pub(super) fn expire_edge(
        &self,
        pending: &mut Pending,
        edge: &Edge,
        now: Timestamp,
    ) -> Result<()> {
        pending.change.edge(edge.id, edge.relation, || true, false);
        let mut expired = edge.clone();
        expired.expired_at = Some(Timestamp(now.0.max(edge.recorded_at.0 + 1)));
        // Expired, it stays the latest version.
        put_latest(pending, &expired)?;
        pending.delta.expired.push(expired.id);
        pending.versions.insert(expired.id, expired);
        Ok(())
    }
}

/// Writes `edge` as the latest version of its edge: whole under its `edges_by_src` key,
/// its [`Adjacency`] under its `edges_by_dst` key.
fn put_latest(pending: &mut Pending, edge: &Edge) -> Result<()> {
    pending.batch.put_raw(
        Keyspace::EdgesBySrc,
        keys::by_src(edge),
        keys::latest_value(edge)?,
    );
    pending.batch.put_raw(
        Keyspace::EdgesByDst,
        keys::by_dst(edge),
        Adjacency::of(edge).encode(),
    );
    Ok(())
}

fn node_meta(node: &Node) -> NodeMeta {
    let (tag, start) = match &node.kind {
        NodeKind::Episode(e) => (keys::EPISODE_TAG, e.start.0),
        other => (other.tag(), 0),
    };
    NodeMeta {
        id: node.id,
        tag,
        start,
    }
}

/// Entities are shared by many sessions: what the stored one knows is kept (the earliest
/// first sighting, the latest last sighting, every alias).
fn merge_shared(old: &Node, new: &mut Node) {
    if let (NodeKind::Entity(old_e), NodeKind::Entity(new_e)) = (&old.kind, &mut new.kind) {
        new.created_at = new.created_at.min(old.created_at);
        new.updated_at = new.updated_at.max(old.updated_at);
        for alias in &old_e.aliases {
            if !new_e.aliases.contains(alias) {
                new_e.aliases.push(alias.clone());
            }
        }
        new_e.aliases.sort();
    }
}
