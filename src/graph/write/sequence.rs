//! The sequence pass: FOLLOWS and CONTINUES edges derived from the order of each
//! project's sessions, kept in step with what writes queued.

use std::collections::{HashMap, HashSet};

use eywa_storage::{Batch, Keyspace};

use super::super::view::EdgeMeta;
use super::super::{EdgeRef, Graph};
use super::Pending;
use crate::Result;
use crate::model::{Edge, EdgeId, NodeId, Relation, Timestamp};

/// Docs keyspace prefix of projects whose FOLLOWS chain awaits the sequence pass. Set in
/// the batch that wrote a session, cleared in the batch of the pass: a crash in between
/// leaves the work queued, not lost.
pub(super) const SEQUENCE_PREFIX: u8 = b'q';

/// Writes per batch of the sequence pass. sled keeps the leaf copies a transaction
/// replaces until it ends: at 30,000 writes the 100k import peaked at 753 MiB, at 5,000 at
/// 630 MiB, no slower (`benches/README.md`, `cli_scale`).
const SEQUENCE_BATCH: usize = 5_000;

impl Graph {
    /// Brings FOLLOWS (a session → the previous session of a project) and CONTINUES (a
    /// resumed session → the one before it with the same slug) in step for the sessions
    /// of every project a write queued: missing edges are added, edges that no longer hold
    /// are expired. Subagent runs take no part. Returns how many edges changed.
    pub fn derive_sequences(&self) -> Result<u64> {
        if !self
            .store
            .keys(Keyspace::Docs, &[SEQUENCE_PREFIX])
            .any(|_| true)
        {
            return Ok(0);
        }
        let mut generation = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        // The pass reads the view when it is in memory, else the adjacency index (an import
        // or a CLI ingest never pays for the whole graph). Loading the view takes the
        // writer lock, so this holds for the whole pass.
        let from_view = self.view_loaded();
        let now = Timestamp::now();
        let mut projects = Vec::new();
        let mut markers = Vec::new();
        for key in self.store.keys(Keyspace::Docs, &[SEQUENCE_PREFIX]) {
            let key = key?;
            if let Some(id) = NodeId::from_slice(&key[1..]) {
                projects.push(id);
            }
            markers.push(key);
        }
        if projects.is_empty() {
            return Ok(0);
        }
        let mut sessions: Vec<(i64, NodeId, Option<String>, Vec<String>)> = Vec::new();
        let mut listed: HashSet<NodeId> = HashSet::new();
        let mut desired: HashMap<NodeId, Vec<Edge>> = HashMap::new();
        for &project in &projects {
            let mut chain: Vec<(i64, NodeId)> = Vec::new();
            let members = match from_view {
                true => self.episodes_touching(project)?,
                false => self.touching_project(project)?,
            };
            for (_, id) in members {
                let Some(node) = self.node(id)? else { continue };
                let Some(episode) = node.episode().filter(|e| e.agent.is_none()) else {
                    continue;
                };
                let start = episode.start.0;
                chain.push((start, id));
                if listed.insert(id) {
                    sessions.push((start, id, episode.slug.clone(), episode.resumes.clone()));
                }
            }
            chain.sort();
            for pair in chain.windows(2) {
                let (start, later) = pair[1];
                let edge = Edge::new(later, Relation::Follows, pair[0].1, Timestamp(start));
                desired.entry(later).or_default().push(edge);
            }
        }
        sessions.sort();
        let mut last_of_slug: HashMap<&str, NodeId> = HashMap::new();
        for (start, id, slug, resumes) in &sessions {
            let wanted = desired.entry(*id).or_default();
            if let Some(slug) = slug.as_deref()
                && let Some(previous) = last_of_slug.insert(slug, *id)
            {
                wanted.push(Edge::new(
                    *id,
                    Relation::Continues,
                    previous,
                    Timestamp(*start),
                ));
            }
            // A resume replays the lines of the session it continues (Q9).
            for resumed in resumes {
                let edge = Edge::new(
                    *id,
                    Relation::Continues,
                    NodeId::episode(resumed),
                    Timestamp(*start),
                );
                if !wanted.iter().any(|e| e.id == edge.id) {
                    wanted.push(edge);
                }
            }
        }
        // What each episode holds now, from the view: derived edges and their windows.
        // Only what differs is read from the store and written.
        let mut stale: Vec<EdgeRef> = Vec::new();
        let mut fresh: Vec<Edge> = Vec::new();
        // Edges out of each episode with a stored version (expired included), when read
        // from the index: an edge not among them is written without looking it up.
        let mut scanned: HashMap<NodeId, HashSet<EdgeId>> = HashMap::new();
        {
            let view = match from_view {
                true => Some(self.view()?),
                false => None,
            };
            for (episode, edges) in desired {
                // (edge, valid_from, valid_to) of each current derived edge out of
                // `episode`.
                let current: Vec<(EdgeRef, i64, i64)> = match &view {
                    Some(view) => view
                        .adjacent(episode, true, false)
                        .filter(|(m, _, _)| {
                            matches!(m.relation, Relation::Follows | Relation::Continues)
                        })
                        .map(|(m, other, _): (EdgeMeta, _, _)| {
                            let edge = EdgeRef {
                                id: m.id,
                                src: episode,
                                relation: m.relation,
                                dst: other.id,
                            };
                            (edge, m.valid_from, m.valid_to)
                        })
                        .collect(),
                    None => {
                        let links = self.links_under(Keyspace::EdgesBySrc, episode, None)?;
                        scanned.insert(episode, links.iter().map(|l| l.edge).collect());
                        links
                            .iter()
                            .filter(|l| {
                                l.adjacency.is_current()
                                    && matches!(l.relation, Relation::Follows | Relation::Continues)
                            })
                            .map(|l| (l.edge_ref(), l.adjacency.valid_from, l.adjacency.valid_to))
                            .collect()
                    }
                };
                let wanted: HashSet<EdgeId> = edges.iter().map(|e| e.id).collect();
                stale.extend(
                    current
                        .iter()
                        .map(|m| m.0)
                        .filter(|edge| !wanted.contains(&edge.id)),
                );
                // Derived edges carry no evidence and full confidence: the same id and
                // window is the same fact.
                fresh.extend(edges.into_iter().filter(|edge| {
                    !current.iter().any(|&(current, from, to)| {
                        current.id == edge.id
                            && from == edge.valid_from.0
                            && to == edge.valid_to.map_or(i64::MAX, |t| t.0)
                    })
                }));
            }
        }
        // Written in bounded batches; the queue markers go with the last, so a crash
        // part-way leaves the pass queued, to be redone (what landed is then the same fact).
        let mut changed = 0;
        let mut pending = Pending::new(Batch::new());
        pending.scanned = scanned;
        for edge in stale {
            if let Some(old) = self.edge(edge)? {
                self.expire_edge(&mut pending, &old, now)?;
                changed += 1;
            }
            if pending.batch.len() >= SEQUENCE_BATCH {
                self.commit_part(&mut pending, &mut generation)?;
            }
        }
        for edge in fresh {
            self.put_edge(&mut pending, edge, now)?;
            changed += 1;
            if pending.batch.len() >= SEQUENCE_BATCH {
                self.commit_part(&mut pending, &mut generation)?;
            }
        }
        for key in markers {
            pending.batch.delete(Keyspace::Docs, key);
        }
        self.commit(pending, &mut generation)?;
        let mut queued = self.queued.lock().unwrap_or_else(|p| p.into_inner());
        for project in &projects {
            queued.remove(project);
        }
        Ok(changed)
    }

    /// Commits what `pending` holds and leaves it empty but for its scans: the pass
    /// writes each edge once, so what landed is never looked up again and the scans still
    /// tell the rest apart.
    fn commit_part(&self, pending: &mut Pending, generation: &mut u64) -> Result<()> {
        let mut full = std::mem::replace(pending, Pending::new(Batch::new()));
        pending.scanned = std::mem::take(&mut full.scanned);
        self.commit(full, generation)
    }

    /// The episodes with a current TOUCHED edge to `project` (the only relation from an
    /// episode to a project), from the adjacency index, each once (the `i64` is 0: callers
    /// read each node).
    fn touching_project(&self, project: NodeId) -> Result<Vec<(i64, NodeId)>> {
        let mut others: Vec<(i64, NodeId)> = self
            .links_under(Keyspace::EdgesByDst, project, Some(Relation::Touched))?
            .into_iter()
            .filter(|l| l.adjacency.is_current())
            .map(|l| (0, l.other))
            .collect();
        others.sort_unstable();
        others.dedup();
        Ok(others)
    }
}
