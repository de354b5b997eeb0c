//! The view's snapshot in the index tier: every node's and current edge's metadata in a
//! compact binary file, tagged with the graph generation it was taken at. Every write batch
//! bumps the generation in the same transaction as its data, so a snapshot whose generation
//! matches the store's describes exactly what the store holds; any other is rebuilt.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use eywa_storage::{Batch, Keyspace, Store};

use super::view::{EdgeMeta, NodeMeta, View};
use crate::model::{EdgeId, NodeId, Relation};
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"EYWAVW01";
const GENERATION_KEY: &[u8] = b"graph_generation";
/// The graph generation of the last batch that wrote a handoff.
const HANDOFF_GENERATION_KEY: &[u8] = b"handoff_generation";
/// The graph generation of the last batch that wrote a source record.
const SOURCES_GENERATION_KEY: &[u8] = b"sources_generation";
const NODE_BYTES: usize = 16 + 1 + 8;
const EDGE_BYTES: usize = 4 + 4 + 16 + 1 + 8 + 8;

pub(super) fn path(store: &Store) -> PathBuf {
    store.path().join("index").join("graph-view.bin")
}

/// The store's graph generation (0 for a store never written by a graph).
pub(super) fn generation(store: &Store) -> Result<u64> {
    Ok(store
        .get::<u64>(Keyspace::Settings, GENERATION_KEY)?
        .unwrap_or(0))
}

/// The generation of the last batch that wrote a handoff (0: none since this was kept).
pub(super) fn handoff_generation(store: &Store) -> Result<u64> {
    Ok(store
        .get::<u64>(Keyspace::Settings, HANDOFF_GENERATION_KEY)?
        .unwrap_or(0))
}

/// The generation of the last batch that wrote a source record (0: none since this was
/// kept).
pub(super) fn sources_generation(store: &Store) -> Result<u64> {
    Ok(store
        .get::<u64>(Keyspace::Settings, SOURCES_GENERATION_KEY)?
        .unwrap_or(0))
}

/// Records in a batch that it writes source records, at generation `next`.
pub(super) fn bump_sources(batch: &mut Batch, next: u64) -> Result<()> {
    Ok(batch.put(Keyspace::Settings, SOURCES_GENERATION_KEY.to_vec(), &next)?)
}

/// Records in a batch that it writes handoffs, at generation `next`.
pub(super) fn bump_handoffs(batch: &mut Batch, next: u64) -> Result<()> {
    Ok(batch.put(Keyspace::Settings, HANDOFF_GENERATION_KEY.to_vec(), &next)?)
}

/// Adds the generation bump to a batch.
pub(super) fn bump(batch: &mut Batch, next: u64) -> Result<()> {
    Ok(batch.put(Keyspace::Settings, GENERATION_KEY.to_vec(), &next)?)
}

/// The snapshot of `view` at `generation`, as [`write`] puts it in a file.
pub(super) fn encode(view: &View, generation: u64) -> Vec<u8> {
    let nodes: Vec<NodeMeta> = view.nodes().copied().collect();
    let index: std::collections::HashMap<NodeId, u32> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id, i as u32))
        .collect();
    let edges: Vec<(NodeId, NodeId, EdgeMeta)> = view.edge_triples().collect();
    let mut buf = Vec::with_capacity(32 + nodes.len() * NODE_BYTES + edges.len() * EDGE_BYTES);
    buf.extend_from_slice(MAGIC);
    buf.extend_from_slice(&generation.to_le_bytes());
    buf.extend_from_slice(&(nodes.len() as u64).to_le_bytes());
    buf.extend_from_slice(&(edges.len() as u64).to_le_bytes());
    for n in &nodes {
        buf.extend_from_slice(n.id.as_bytes());
        buf.push(n.tag);
        buf.extend_from_slice(&n.start.to_le_bytes());
    }
    for (src, dst, e) in &edges {
        buf.extend_from_slice(&index[src].to_le_bytes());
        buf.extend_from_slice(&index[dst].to_le_bytes());
        buf.extend_from_slice(e.id.as_bytes());
        buf.push(e.relation.tag());
        buf.extend_from_slice(&e.valid_from.to_le_bytes());
        buf.extend_from_slice(&e.valid_to.to_le_bytes());
    }
    buf
}

/// Puts `encoded` (see [`encode`]) in `file`: to a temporary file, synced, then renamed.
pub(super) fn write(file: &Path, encoded: &[u8]) -> Result<()> {
    let dir = file.parent().expect("the snapshot lives in a directory");
    std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
    let tmp = file.with_extension("tmp");
    let mut out = std::fs::File::create(&tmp).map_err(Error::io(&tmp))?;
    out.write_all(encoded).map_err(Error::io(&tmp))?;
    out.sync_all().map_err(Error::io(&tmp))?;
    std::fs::rename(&tmp, file).map_err(Error::io(file))?;
    Ok(())
}

/// Loads the snapshot if it was taken at `generation`; `None` when it is missing, stale or
/// unreadable (the caller rebuilds from the index keyspaces).
pub(super) fn load(file: &Path, generation: u64) -> Option<View> {
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .ok()?
        .read_to_end(&mut bytes)
        .ok()?;
    let mut r = Reader(&bytes);
    if r.take(8)? != MAGIC || r.u64()? != generation {
        return None;
    }
    let (node_count, edge_count) = (r.u64()? as usize, r.u64()? as usize);
    if bytes.len() != 32 + node_count * NODE_BYTES + edge_count * EDGE_BYTES {
        return None;
    }
    let mut nodes = Vec::with_capacity(node_count);
    for _ in 0..node_count {
        nodes.push(NodeMeta {
            id: NodeId::from_slice(r.take(16)?)?,
            tag: r.take(1)?[0],
            start: r.i64()?,
        });
    }
    let mut edges = Vec::with_capacity(edge_count);
    for _ in 0..edge_count {
        let src = nodes.get(r.u32()? as usize)?.id;
        let dst = nodes.get(r.u32()? as usize)?.id;
        edges.push((
            src,
            dst,
            EdgeMeta {
                id: EdgeId::from_slice(r.take(16)?)?,
                relation: Relation::from_tag(r.take(1)?[0])?,
                valid_from: r.i64()?,
                valid_to: r.i64()?,
            },
        ));
    }
    Some(View::from_parts(nodes, edges))
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
}
