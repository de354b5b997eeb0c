//! Walks: neighbors, what touched an entity, bounded breadth-first walks, shortest paths
//! and related episodes. The current view walks the in-memory graph; an as-of view walks
//! the adjacency indexes and reads the versions it needs.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use super::view::overlaps;
use super::{AsOf, Direction, EdgeRef, Graph, Neighbor, Touch};
use crate::Result;
use crate::model::{Attribution, Edge, Node, NodeId, Relation, Timestamp};

/// Which edges a walk may follow.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EdgeFilter {
    pub direction: Direction,
    /// Only these relations; empty = all.
    pub relations: Vec<Relation>,
    /// Only facts that held at some point within `[from, until]`.
    pub from: Option<Timestamp>,
    pub until: Option<Timestamp>,
    pub as_of: AsOf,
}

impl EdgeFilter {
    fn admits(&self, relation: Relation, valid_from: i64, valid_to: i64) -> bool {
        (self.relations.is_empty() || self.relations.contains(&relation))
            && overlaps(
                valid_from,
                valid_to,
                self.from.map(|t| t.0),
                self.until.map(|t| t.0),
            )
    }
}

/// Edges an entity may have for its timeline to be read from the store rather than from
/// the view (each costs reading its episode's node).
const STORE_TIMELINE_MOST: usize = 2_000;

/// Newest episode first; ties by id so an episode's edges sit together.
fn newest_first(a: &Hop, b: &Hop) -> std::cmp::Ordering {
    b.start.cmp(&a.start).then(a.other.cmp(&b.other))
}

/// One entry of an entity's timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TimelineEntry {
    hop: Hop,
    relation: Relation,
    valid_from: i64,
    valid_to: i64,
}

/// One hop seen by a walk: the edge and the node at its other end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hop {
    edge: EdgeRef,
    other: NodeId,
    start: i64,
    is_episode: bool,
}

/// A node reached by a walk.
#[derive(Debug, Clone, PartialEq)]
pub struct WalkStep {
    pub node: Arc<Node>,
    pub depth: u32,
    /// The edge it was reached through, and the node it was reached from.
    pub via: Option<(Edge, NodeId)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Walk {
    pub steps: Vec<WalkStep>,
    /// True when `max_nodes` stopped the walk before `depth` did.
    pub truncated: bool,
}

/// One node of a path and the edge that led to it.
#[derive(Debug, Clone, PartialEq)]
pub struct PathStep {
    pub node: Arc<Node>,
    pub via: Option<Edge>,
}

impl Graph {
    /// Edges at `id` that `filter` admits, with the node at the other end.
    fn hops(&self, id: NodeId, filter: &EdgeFilter) -> Result<Vec<Hop>> {
        let mut hops = Vec::new();
        self.hops_into(id, filter, |hop| {
            hops.push(hop);
            true
        })?;
        Ok(hops)
    }

    /// Hands each admitted edge at `id` to `take` until it returns false, so a walk that has
    /// what it needs stops early even at a node with tens of thousands of edges.
    fn hops_into(
        &self,
        id: NodeId,
        filter: &EdgeFilter,
        mut take: impl FnMut(Hop) -> bool,
    ) -> Result<()> {
        if filter.as_of.is_current() {
            let view = self.view()?;
            let (out, inc) = (
                filter.direction != Direction::In,
                filter.direction != Direction::Out,
            );
            for (edge, other, outgoing) in view.adjacent(id, out, inc) {
                if filter.admits(edge.relation, edge.valid_from, edge.valid_to)
                    && !take(Hop {
                        edge: EdgeRef::at(id, edge.id, edge.relation, other.id, outgoing),
                        other: other.id,
                        start: other.start,
                        is_episode: other.is_episode(),
                    })
                {
                    break;
                }
            }
            return Ok(());
        }
        for link in self.stored_links(id, filter.direction)? {
            let Some(edge) = self.edge_as_of(link.edge_ref(), filter.as_of)? else {
                continue;
            };
            let valid_to = edge.valid_to.map_or(i64::MAX, |t| t.0);
            if filter.admits(edge.relation, edge.valid_from.0, valid_to) {
                let meta = self.view()?.node(link.other);
                let hop = Hop {
                    edge: link.edge_ref(),
                    other: link.other,
                    start: meta.map_or(0, |m| m.start),
                    is_episode: meta.is_some_and(|m| m.is_episode()),
                };
                if !take(hop) {
                    break;
                }
            }
        }
        Ok(())
    }

    fn edge_for(&self, edge: EdgeRef, as_of: AsOf) -> Result<Option<Edge>> {
        self.edge_as_of(edge, as_of)
    }

    /// Edges at `id` that `filter` admits, with the nodes at their other ends, at most
    /// `limit`.
    pub fn neighbors(
        &self,
        id: NodeId,
        filter: &EdgeFilter,
        limit: usize,
    ) -> Result<Vec<Neighbor>> {
        let mut out = Vec::new();
        let mut failed = None;
        // Stops at `limit`: a project or a file can have tens of thousands of edges.
        self.hops_into(id, filter, |hop| {
            if out.len() >= limit {
                return false;
            }
            let read = self
                .edge_for(hop.edge, filter.as_of)
                .and_then(|edge| Ok((edge, self.node(hop.other)?)));
            match read {
                Ok((Some(edge), Some(node))) => out.push(Neighbor {
                    edge,
                    node: (*node).clone(),
                }),
                Ok(_) => {}
                Err(e) => {
                    failed = Some(e);
                    return false;
                }
            }
            out.len() < limit
        })?;
        match failed {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// Episodes with an edge to `entity` that held within the filter's window, newest
    /// first, each once, at most `limit`, of the users and machines `authors` keeps.
    pub fn what_touched(
        &self,
        entity: NodeId,
        filter: &EdgeFilter,
        authors: &Attribution,
        limit: usize,
    ) -> Result<Vec<Touch>> {
        // Which episodes an author filter keeps is known once each is read: every
        // candidate is a hop until then.
        let hops_wanted = if authors.is_empty() {
            limit
        } else {
            usize::MAX
        };
        let hops: Vec<Hop> = if filter.as_of.is_current() {
            // The entity's timeline, newest first; read only until `limit` are found.
            let timeline = self.timeline(entity, filter.direction)?;
            timeline
                .iter()
                .filter(|t| {
                    (filter.relations.is_empty() || filter.relations.contains(&t.relation))
                        && overlaps(
                            t.valid_from,
                            t.valid_to,
                            filter.from.map(|t| t.0),
                            filter.until.map(|t| t.0),
                        )
                })
                .map(|t| t.hop)
                .fold(Vec::new(), |mut kept: Vec<Hop>, hop| {
                    if kept.len() < hops_wanted && kept.last().is_none_or(|k| k.other != hop.other)
                    {
                        kept.push(hop);
                    }
                    kept
                })
        } else {
            let mut hops: Vec<Hop> = Vec::new();
            self.hops_into(entity, filter, |hop| {
                if hop.is_episode {
                    hops.push(hop);
                }
                true
            })?;
            hops.sort_by(newest_first);
            hops.dedup_by_key(|h| h.other);
            hops.truncate(hops_wanted);
            hops
        };
        let mut touches = Vec::new();
        for hop in hops {
            if touches.len() == limit {
                break;
            }
            let Some(node) = self.node(hop.other)? else {
                continue;
            };
            if !authors.is_empty()
                && !node
                    .episode()
                    .is_some_and(|e| authors.keeps(&e.user, &e.machine))
            {
                continue;
            }
            if let Some(edge) = self.edge_for(hop.edge, filter.as_of)? {
                touches.push(Touch {
                    episode: (*node).clone(),
                    edge,
                });
            }
        }
        Ok(touches)
    }

    /// (start, id) of every episode with a current edge to `entity`.
    pub(super) fn episodes_touching(&self, entity: NodeId) -> Result<Vec<(i64, NodeId)>> {
        let mut out: Vec<(i64, NodeId)> = self
            .view()?
            .adjacent(entity, true, true)
            .filter(|(_, n, _)| n.is_episode())
            .map(|(_, n, _)| (n.start, n.id))
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Current edges between `entity` and episodes, newest episode first (an episode's
    /// edges next to each other), cached until the next write.
    fn timeline(&self, entity: NodeId, direction: Direction) -> Result<Arc<Vec<TimelineEntry>>> {
        let key = (entity, direction as u8);
        if let Some(timeline) = self.timelines.get(&key) {
            return Ok(timeline);
        }
        let generation = self.timelines.generation();
        let entries = match self.timeline_from_store(entity, direction)? {
            Some(entries) => entries,
            None => self.timeline_from_view(entity, direction)?,
        };
        let mut entries = entries;
        entries.sort_by(|a, b| newest_first(&a.hop, &b.hop));
        let timeline = Arc::new(entries);
        self.timelines.insert_at(generation, key, timeline.clone());
        Ok(timeline)
    }

    /// The entity's timeline from the view.
    fn timeline_from_view(
        &self,
        entity: NodeId,
        direction: Direction,
    ) -> Result<Vec<TimelineEntry>> {
        let view = self.view()?;
        let (out, inc) = (direction != Direction::In, direction != Direction::Out);
        Ok(view
            .adjacent(entity, out, inc)
            .filter(|(_, other, _)| other.is_episode())
            .map(|(edge, other, outgoing)| TimelineEntry {
                hop: Hop {
                    edge: EdgeRef::at(entity, edge.id, edge.relation, other.id, outgoing),
                    other: other.id,
                    start: other.start,
                    is_episode: true,
                },
                relation: edge.relation,
                valid_from: edge.valid_from,
                valid_to: edge.valid_to,
            })
            .collect())
    }

    /// The entity's timeline from the adjacency indexes and the episodes' nodes, when the
    /// view is not in memory and the entity has few enough edges that reading their
    /// episodes costs less than loading the view. `None`: load the view.
    fn timeline_from_store(
        &self,
        entity: NodeId,
        direction: Direction,
    ) -> Result<Option<Vec<TimelineEntry>>> {
        if self.view_loaded() {
            return Ok(None);
        }
        let links = self.stored_links(entity, direction)?;
        let current: Vec<_> = links
            .into_iter()
            .filter(|l| l.adjacency.is_current())
            .collect();
        if current.len() > STORE_TIMELINE_MOST {
            return Ok(None);
        }
        let mut entries = Vec::with_capacity(current.len());
        for link in current {
            let Some(node) = self.node(link.other)? else {
                continue;
            };
            let Some(episode) = node.episode() else {
                continue;
            };
            entries.push(TimelineEntry {
                hop: Hop {
                    edge: link.edge_ref(),
                    other: link.other,
                    start: episode.start.0,
                    is_episode: true,
                },
                relation: link.relation,
                valid_from: link.adjacency.valid_from,
                valid_to: link.adjacency.valid_to,
            });
        }
        Ok(Some(entries))
    }

    /// Breadth-first from `start` up to `depth` hops, visiting at most `max_nodes` nodes
    /// (the start included).
    pub fn walk(
        &self,
        start: NodeId,
        depth: u32,
        max_nodes: usize,
        filter: &EdgeFilter,
    ) -> Result<Walk> {
        let Some(first) = self.node(start)? else {
            return Ok(Walk {
                steps: Vec::new(),
                truncated: false,
            });
        };
        let mut seen = HashSet::from([start]);
        let mut steps = vec![WalkStep {
            node: first,
            depth: 0,
            via: None,
        }];
        let mut queue = VecDeque::from([(start, 0u32)]);
        let mut truncated = false;
        'walk: while let Some((id, d)) = queue.pop_front() {
            if d >= depth {
                continue;
            }
            // Take only what the node budget allows (one more shows it was cut short).
            let budget = max_nodes.saturating_sub(steps.len()) + 1;
            let mut fresh: Vec<Hop> = Vec::new();
            self.hops_into(id, filter, |hop| {
                if !seen.contains(&hop.other) && !fresh.iter().any(|h| h.other == hop.other) {
                    fresh.push(hop);
                }
                fresh.len() < budget
            })?;
            for hop in fresh {
                if steps.len() >= max_nodes {
                    truncated = true;
                    break 'walk;
                }
                seen.insert(hop.other);
                let (Some(node), Some(edge)) = (
                    self.node(hop.other)?,
                    self.edge_for(hop.edge, filter.as_of)?,
                ) else {
                    continue;
                };
                steps.push(WalkStep {
                    node,
                    depth: d + 1,
                    via: Some((edge, id)),
                });
                queue.push_back((hop.other, d + 1));
            }
        }
        Ok(Walk { steps, truncated })
    }

    /// A shortest path from `from` to `to` of at most `max_depth` edges, or `None`.
    pub fn path(
        &self,
        from: NodeId,
        to: NodeId,
        max_depth: u32,
        filter: &EdgeFilter,
    ) -> Result<Option<Vec<PathStep>>> {
        let mut parent: HashMap<NodeId, (NodeId, EdgeRef)> = HashMap::new();
        let mut queue = VecDeque::from([(from, 0u32)]);
        let mut seen = HashSet::from([from]);
        let mut found = from == to;
        while let Some((id, d)) = queue.pop_front() {
            if found || d >= max_depth {
                if found {
                    break;
                }
                continue;
            }
            for hop in self.hops(id, filter)? {
                if seen.insert(hop.other) {
                    parent.insert(hop.other, (id, hop.edge));
                    if hop.other == to {
                        found = true;
                        break;
                    }
                    queue.push_back((hop.other, d + 1));
                }
            }
        }
        if !found {
            return Ok(None);
        }
        let mut chain = vec![(to, None)];
        let mut at = to;
        while let Some(&(prev, edge)) = parent.get(&at) {
            chain.push((prev, Some(edge)));
            at = prev;
        }
        chain.reverse();
        // chain[i] = (node, edge leading *out* of it); shift edges onto the node they reach.
        let mut steps = Vec::with_capacity(chain.len());
        let mut via = None;
        for (id, out_edge) in chain {
            let Some(node) = self.node(id)? else {
                return Ok(None);
            };
            steps.push(PathStep {
                node,
                via: via.take(),
            });
            via = match out_edge {
                Some(e) => self.edge_for(e, filter.as_of)?,
                None => None,
            };
        }
        Ok(Some(steps))
    }

    /// Hops from `start` to every node within `max_depth` of it (edges in either
    /// direction, current view), visiting at most `max_nodes`; `start` is at 0.
    pub fn distances(
        &self,
        start: NodeId,
        max_depth: u32,
        max_nodes: usize,
    ) -> Result<HashMap<NodeId, u32>> {
        let view = self.view()?;
        let mut seen = HashMap::from([(start, 0u32)]);
        let mut queue = VecDeque::from([(start, 0u32)]);
        while let Some((id, d)) = queue.pop_front() {
            if d >= max_depth {
                continue;
            }
            for (_, other, _) in view.adjacent(id, true, true) {
                if seen.len() >= max_nodes {
                    return Ok(seen);
                }
                if let std::collections::hash_map::Entry::Vacant(slot) = seen.entry(other.id) {
                    slot.insert(d + 1);
                    queue.push_back((other.id, d + 1));
                }
            }
        }
        Ok(seen)
    }
}
