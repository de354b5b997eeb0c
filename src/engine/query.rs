use chrono::NaiveDate;

use super::Engine;
use crate::graph::{Direction, Neighbor, Touch};
use crate::model::{EntityType, Handoff, Node, NodeId, Relation, Timestamp};
use crate::retrieve::GetOptions;
use crate::{Error, Result};

/// Largest `limit` a query may ask for.
pub const MAX_LIMIT: usize = 1_000;
/// Largest `days_back` (100 years).
pub const MAX_DAYS_BACK: u32 = 36_500;

/// A handoff returned by `get`, with its score (`None` from the most-recent fallback).
#[derive(Debug, Clone, PartialEq)]
pub struct HandoffHit {
    pub handoff: Handoff,
    pub score: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GetOutcome {
    /// The query tokens that were scored.
    pub tokens: Vec<String>,
    pub hits: Vec<HandoffHit>,
    pub fallback_recent: bool,
}

impl Engine {
    /// `eywa get` as of the local date.
    pub fn get_handoffs(&self, query: &str, options: &GetOptions) -> Result<GetOutcome> {
        self.get_handoffs_at(query, options, chrono::Local::now().date_naive())
    }

    /// `eywa get` as of `today`.
    pub fn get_handoffs_at(
        &self,
        query: &str,
        options: &GetOptions,
        today: NaiveDate,
    ) -> Result<GetOutcome> {
        check_limit(options.limit)?;
        if options.days_back > MAX_DAYS_BACK {
            return Err(Error::InvalidArgument(format!(
                "days_back must be at most {MAX_DAYS_BACK}, got {}",
                options.days_back
            )));
        }
        let index = self.handoff_index();
        let result = index.get(query, options, today);
        Ok(GetOutcome {
            tokens: result.tokens,
            fallback_recent: result.fallback_recent,
            hits: result
                .hits
                .into_iter()
                .map(|s| HandoffHit {
                    handoff: s.handoff.clone(),
                    score: s.score,
                })
                .collect(),
        })
    }

    /// Resolves a node reference: a node id, or `project:<name>` / `tool:<name>` (name,
    /// alias or path, case-insensitive; one name may match several projects).
    pub fn resolve(&self, reference: &str) -> Result<Vec<Node>> {
        let reference = reference.trim();
        if reference.is_empty() {
            return Err(Error::InvalidArgument(
                "empty node reference: give a node id or project:<name>".into(),
            ));
        }
        if let Some((kind, name)) = reference.split_once(':')
            && let Some(entity_type) = EntityType::parse(kind)
        {
            if name.trim().is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "empty name in `{reference}`: write {kind}:<name>"
                )));
            }
            let nodes = self.graph.find_entities(entity_type, name)?;
            if nodes.is_empty() {
                return Err(Error::NotFound(format!(
                    "no {} named `{}`",
                    entity_type.as_str().to_lowercase(),
                    name.trim()
                )));
            }
            return Ok(nodes);
        }
        let id = NodeId::parse(reference).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "`{reference}` is neither a node id (uuid) nor a reference like project:<name>"
            ))
        })?;
        match self.graph.node(id)? {
            Some(node) => Ok(vec![node]),
            None => Err(Error::NotFound(format!("no node with id {id}"))),
        }
    }

    /// The node and its current neighbors, optionally of one relation.
    pub fn neighbors(
        &self,
        reference: &str,
        direction: Direction,
        relation: Option<&str>,
        limit: usize,
    ) -> Result<(Node, Vec<Neighbor>)> {
        let relation = parse_relation(relation)?;
        check_limit(limit)?;
        let mut nodes = self.resolve(reference)?;
        if nodes.len() > 1 {
            return Err(Error::InvalidArgument(format!(
                "`{reference}` names {} nodes; use one of their ids: {}",
                nodes.len(),
                nodes
                    .iter()
                    .map(|n| n.id.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let node = nodes.remove(0);
        let mut neighbors = self.graph.neighbors(node.id, direction, relation)?;
        neighbors.truncate(limit);
        Ok((node, neighbors))
    }

    /// Episodes that touched the entity within `[from, until]`, newest first.
    pub fn what_touched(
        &self,
        reference: &str,
        from: Option<Timestamp>,
        until: Option<Timestamp>,
    ) -> Result<Vec<Touch>> {
        if let (Some(f), Some(u)) = (from, until)
            && f > u
        {
            return Err(Error::InvalidArgument(format!(
                "empty time window: since {f} is after until {u}"
            )));
        }
        let mut touches = Vec::new();
        for node in self.resolve(reference)? {
            for touch in self.graph.what_touched(node.id, from, until)? {
                if !touches
                    .iter()
                    .any(|t: &Touch| t.episode.id == touch.episode.id)
                {
                    touches.push(touch);
                }
            }
        }
        touches.sort_by_key(|t| {
            let start = t.episode.episode().map_or(0, |e| e.start.0);
            (std::cmp::Reverse(start), t.episode.id)
        });
        Ok(touches)
    }
}

fn parse_relation(relation: Option<&str>) -> Result<Option<Relation>> {
    match relation.map(str::trim).filter(|r| !r.is_empty()) {
        None => Ok(None),
        Some(r) => Relation::parse(r).map(Some).ok_or_else(|| {
            let known: Vec<&str> = Relation::ALL.iter().map(|r| r.as_str()).collect();
            Error::InvalidArgument(format!(
                "unknown relation `{r}`; known: {}",
                known.join(", ")
            ))
        }),
    }
}

pub(crate) fn check_limit(limit: usize) -> Result<()> {
    if limit == 0 || limit > MAX_LIMIT {
        return Err(Error::InvalidArgument(format!(
            "limit must be between 1 and {MAX_LIMIT}, got {limit}"
        )));
    }
    Ok(())
}
