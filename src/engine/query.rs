//! Queries over the graph and the handoffs: `get`, resolving references, entities,
//! neighbours, what touched a node, walks, paths and related sessions.

use std::sync::Arc;

use chrono::NaiveDate;

use super::Engine;
use crate::graph::{
    EdgeFilter, MAX_LIMIT, Neighbor, PathStep, Related, Touch, Walk, check_depth, check_limit,
    check_window,
};
use crate::model::{Attribution, EntityType, Handoff, Node, NodeId};
use crate::retrieve::GetOptions;
use crate::{Error, Result};

/// Largest `days_back` (100 years).
pub const MAX_DAYS_BACK: u32 = 36_500;

/// A handoff returned by `get`, with its score (`None` from the most-recent fallback).
#[derive(Debug, Clone, PartialEq)]
pub struct HandoffHit {
    /// The handoff (its body empty when read from the index files alone).
    pub handoff: Handoff,
    /// How well it matched the query; `None` from the most-recent fallback.
    pub score: Option<f64>,
}

/// What `eywa get` found: the handoffs, best first, and how they were chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct GetOutcome {
    /// The query tokens that were scored.
    pub tokens: Vec<String>,
    /// The handoffs found, best first (newest first in the fallback).
    pub hits: Vec<HandoffHit>,
    /// True when no token scored and the most recent handoffs were returned instead.
    pub fallback_recent: bool,
    /// When nothing was found: handoffs beyond the `days_back` window (to suggest a wider
    /// window).
    pub older: usize,
    /// The date of the newest of them.
    pub newest_older: Option<NaiveDate>,
}

impl Engine {
    /// `eywa get` as of the local date.
    pub fn get_handoffs(&self, query: &str, options: &GetOptions) -> Result<Arc<GetOutcome>> {
        self.get_handoffs_at(query, options, chrono::Local::now().date_naive())
    }

    /// `eywa get` from the index files of the store in `data_dir`, without opening the
    /// store: what a fresh process asks first. `None` when the files are missing or behind
    /// the store (a write is under way or was cut short): open the store then. Hits carry
    /// what `get` prints, not the handoff bodies.
    pub fn get_handoffs_from_files(
        data_dir: &std::path::Path,
        query: &str,
        options: &GetOptions,
    ) -> Result<Option<GetOutcome>> {
        check_get(options)?;
        let query = &crate::retrieve::clean_query(query);
        let files = crate::index::HandoffFiles::new(&data_dir.join("store").join("index"));
        let Some(index) = files.load() else {
            return Ok(None);
        };
        let result = index.get(query, options, chrono::Local::now().date_naive());
        Ok(Some(GetOutcome {
            tokens: result.tokens,
            fallback_recent: result.fallback_recent,
            older: result.older,
            newest_older: result.newest_older,
            hits: result
                .hits
                .into_iter()
                .map(|s| HandoffHit {
                    handoff: s.handoff,
                    score: s.score,
                })
                .collect(),
        }))
    }

    /// `eywa get` as of `today`. Results are cached until the next ingest.
    pub fn get_handoffs_at(
        &self,
        query: &str,
        options: &GetOptions,
        today: NaiveDate,
    ) -> Result<Arc<GetOutcome>> {
        check_get(options)?;
        let query = &crate::retrieve::clean_query(query);
        let key = format!(
            "{query}\u{0}{}\u{0}{}\u{0}{}\u{0}{}\u{0}{}\u{0}{today}",
            options.days_back,
            options.limit,
            options.projects.join("\u{1}"),
            options.authors.users.join("\u{1}"),
            options.authors.machines.join("\u{1}"),
        );
        if let Some(hit) = self.results.get(&key) {
            return Ok(hit);
        }
        let result = self.handoff_index()?.get(query, options, today);
        let mut hits = Vec::with_capacity(result.hits.len());
        for scored in result.hits {
            // The index keeps what `get` ranks and prints; the body is in the store.
            let handoff = match self.graph.handoff(&scored.handoff.session_id)? {
                Some(stored) => stored,
                None => scored.handoff,
            };
            hits.push(HandoffHit {
                handoff,
                score: scored.score,
            });
        }
        let outcome = Arc::new(GetOutcome {
            tokens: result.tokens,
            fallback_recent: result.fallback_recent,
            older: result.older,
            newest_older: result.newest_older,
            hits,
        });
        self.results.insert(key, outcome.clone());
        Ok(outcome)
    }

    /// Resolves a node reference: a node id, `session:<id or prefix>`, or `<type>:<name>`
    /// such as `project:eywa` or `tool:Read` (name, alias or path, case-insensitive; one name
    /// may match several).
    pub fn resolve(&self, reference: &str) -> Result<Vec<Arc<Node>>> {
        let reference = reference.trim();
        if reference.is_empty() {
            return Err(Error::InvalidArgument(
                "empty node reference: give a node id or project:<name>".into(),
            ));
        }
        if let Some(session) = reference.strip_prefix("session:") {
            // A whole id names its episode at once; a prefix is looked for among sources.
            if let Some(node) = self.graph.node(NodeId::episode(session.trim()))?
                && node
                    .episode()
                    .is_some_and(|e| e.session_id == session.trim())
            {
                return Ok(vec![node]);
            }
            let source = self.library().session_source(session)?;
            let id = source
                .episode
                .unwrap_or_else(|| NodeId::episode(&source.session_id));
            return match self.graph.node(id)? {
                Some(node) => Ok(vec![node]),
                None => Err(Error::NotFound(format!(
                    "no episode for {reference}",
                    reference = crate::error::quote(reference)
                ))),
            };
        }
        if let Some((kind, name)) = reference.split_once(':')
            && let Some(entity_type) = EntityType::parse(kind)
        {
            if name.trim().is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "empty name in {reference}: write {kind}:<name>",
                    reference = crate::error::quote(reference)
                )));
            }
            let nodes = self.graph.find_entities(entity_type, name)?;
            if nodes.is_empty() {
                return Err(Error::NotFound(format!(
                    "no {} named {}",
                    entity_type.as_str().to_lowercase(),
                    crate::error::quote(name.trim())
                )));
            }
            return Ok(nodes);
        }
        let id = NodeId::parse(reference).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{reference} is neither a node id (uuid) nor a reference like project:<name>",
                reference = crate::error::quote(reference)
            ))
        })?;
        match self.graph.node(id)? {
            Some(node) => Ok(vec![node]),
            None => Err(Error::NotFound(format!("no node with id {id}"))),
        }
    }

    /// Resolves a reference that must name exactly one node.
    pub fn resolve_one(&self, reference: &str) -> Result<Arc<Node>> {
        let mut nodes = self.resolve(reference)?;
        if nodes.len() > 1 {
            return Err(Error::InvalidArgument(format!(
                "{reference} names {} nodes; use one of their ids: {}",
                nodes.len(),
                nodes
                    .iter()
                    .map(|n| n.id.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                reference = crate::error::quote(reference)
            )));
        }
        Ok(nodes.remove(0))
    }

    /// Entities by name or name prefix, optionally of one type.
    pub fn find_entities(
        &self,
        name: &str,
        entity_type: Option<&str>,
        prefix: bool,
        limit: usize,
    ) -> Result<Vec<Arc<Node>>> {
        check_limit(limit)?;
        if name.trim().is_empty() {
            return Err(Error::InvalidArgument("empty name".into()));
        }
        let tag = match entity_type.map(str::trim).filter(|t| !t.is_empty()) {
            None => None,
            Some(t) => Some(
                16 + EntityType::parse(t).ok_or_else(|| {
                    let known: Vec<&str> = EntityType::ALL.iter().map(|t| t.as_str()).collect();
                    Error::InvalidArgument(format!(
                        "unknown entity type {t}; known: {}",
                        known.join(", "),
                        t = crate::error::quote(t)
                    ))
                })? as u8,
            ),
        };
        let mut nodes = self.graph.find_by_name(tag, name, prefix)?;
        nodes.retain(|n| n.entity().is_some());
        nodes.truncate(limit);
        Ok(nodes)
    }

    /// The node and its neighbors through edges `filter` admits.
    pub fn neighbors(
        &self,
        reference: &str,
        filter: &EdgeFilter,
        limit: usize,
    ) -> Result<(Arc<Node>, Vec<Neighbor>)> {
        check_limit(limit)?;
        check_window(filter)?;
        let node = self.resolve_one(reference)?;
        let neighbors = self.graph.neighbors(node.id, filter, limit)?;
        Ok((node, neighbors))
    }

    /// The plans `episode` carries (HAS_PLAN): plan documents with their text, at most
    /// `limit`.
    pub fn plans(&self, episode: NodeId, limit: usize) -> Result<Vec<Node>> {
        self.graph.plans(episode, limit)
    }

    /// Episodes that touched the entity within the filter's window, newest first.
    pub fn what_touched(
        &self,
        reference: &str,
        filter: &EdgeFilter,
        limit: usize,
    ) -> Result<Vec<Touch>> {
        self.what_touched_by(reference, filter, &Attribution::default(), limit)
    }

    /// [`what_touched`](Self::what_touched), keeping only the sessions `authors` keeps
    /// (some users, some machines).
    pub fn what_touched_by(
        &self,
        reference: &str,
        filter: &EdgeFilter,
        authors: &Attribution,
        limit: usize,
    ) -> Result<Vec<Touch>> {
        check_limit(limit)?;
        check_window(filter)?;
        let mut touches: Vec<Touch> = Vec::new();
        for node in self.resolve(reference)? {
            for touch in self.graph.what_touched(node.id, filter, authors, limit)? {
                if !touches.iter().any(|t| t.episode.id == touch.episode.id) {
                    touches.push(touch);
                }
            }
        }
        touches.sort_by_key(|t| {
            let start = t.episode.episode().map_or(0, |e| e.start.0);
            (std::cmp::Reverse(start), t.episode.id)
        });
        touches.truncate(limit);
        Ok(touches)
    }

    /// Walks breadth-first from the node `reference` names, up to `depth` hops and
    /// `max_nodes` nodes, through edges `filter` admits.
    pub fn walk(
        &self,
        reference: &str,
        depth: u32,
        max_nodes: usize,
        filter: &EdgeFilter,
    ) -> Result<Walk> {
        check_depth(depth)?;
        check_limit(max_nodes)?;
        check_window(filter)?;
        let node = self.resolve_one(reference)?;
        self.graph.walk(node.id, depth, max_nodes, filter)
    }

    /// A shortest path between the nodes `from` and `to` name, of at most `max_depth` edges
    /// `filter` admits, or `None`.
    pub fn path(
        &self,
        from: &str,
        to: &str,
        max_depth: u32,
        filter: &EdgeFilter,
    ) -> Result<Option<Vec<PathStep>>> {
        check_depth(max_depth)?;
        check_window(filter)?;
        let (a, b) = (self.resolve_one(from)?, self.resolve_one(to)?);
        self.graph.path(a.id, b.id, max_depth, filter)
    }

    /// Sessions related to a session: by the entities they share (rarity-weighted), and,
    /// with semantic memory, by how alike their content is. A similarity `s` adds
    /// `s × ln(episodes)`: a session of identical content counts as much as sharing the
    /// rarest entity there can be.
    pub fn related(&self, reference: &str, limit: usize) -> Result<Vec<Related>> {
        check_limit(limit)?;
        let node = self.resolve_one(reference)?;
        let Some(episode) = node.episode() else {
            return Err(Error::InvalidArgument(format!(
                "{reference} is a {}, not a session (Episode)",
                node.kind.label(),
                reference = crate::error::quote(reference)
            )));
        };
        let similar = self
            .semantic()?
            .similar_sessions(&episode.session_id, (limit * 20).max(200));
        if similar.is_empty() {
            return self.graph.related(node.id, limit);
        }
        let mut related = self.graph.related(node.id, MAX_LIMIT)?;
        let weight = (self.graph.counts()?.episodes.max(2) as f64).ln();
        for (session, similarity) in similar {
            let id = NodeId::episode(&session);
            if id == node.id {
                continue;
            }
            if let Some(r) = related.iter_mut().find(|r| r.episode.id == id) {
                r.similarity = similarity;
            } else {
                let Some(other) = self.graph.node(id)? else {
                    continue;
                };
                related.push(Related {
                    episode: other,
                    score: 0.0,
                    shared: Vec::new(),
                    similarity,
                });
            }
        }
        for r in &mut related {
            r.score += weight * r.similarity.max(0.0);
        }
        let start = |r: &Related| r.episode.episode().map_or(0, |e| e.start.0);
        related.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(start(b).cmp(&start(a)))
                .then(a.episode.id.cmp(&b.episode.id))
        });
        related.truncate(limit);
        Ok(related)
    }
}

fn check_get(options: &GetOptions) -> Result<()> {
    check_limit(options.limit)?;
    if options.days_back > MAX_DAYS_BACK {
        return Err(Error::InvalidArgument(format!(
            "days_back must be at most {MAX_DAYS_BACK}, got {}",
            options.days_back
        )));
    }
    Ok(())
}
