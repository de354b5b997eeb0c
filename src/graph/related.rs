//! Sessions related to a session: those sharing its entities (projects, files, tools,
//! concepts), each shared entity weighted by its rarity.

use std::collections::HashMap;
use std::sync::Arc;

use super::Graph;
use crate::Result;
use crate::model::{Node, NodeId};

/// A related episode's score so far, and the entities (with weights) behind it.
type Score = (f64, Vec<(NodeId, f64)>);

/// An entity two episodes share, and what it weighed (IDF over episodes).
#[derive(Debug, Clone, PartialEq)]
pub struct Shared {
    pub entity: Arc<Node>,
    pub weight: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Related {
    pub episode: Arc<Node>,
    pub score: f64,
    pub shared: Vec<Shared>,
    /// Cosine similarity of the two sessions' content (semantic memory); 0 when unknown.
    pub similarity: f64,
}

impl Graph {
    /// How much each other episode shares with `episode`: the sum, over the entities
    /// (projects, files, tools, concepts) both have, of ln(episodes / episodes touching
    /// the entity), with those entities and their weights.
    pub fn shared_scores(&self, episode: NodeId) -> Result<HashMap<NodeId, Score>> {
        let view = self.view()?;
        let total = view.episode_count().max(1) as f64;
        let mut scores: HashMap<NodeId, Score> = HashMap::new();
        let mut entities: Vec<NodeId> = view
            .adjacent(episode, true, true)
            .filter(|(_, n, _)| !n.is_episode())
            .map(|(_, n, _)| n.id)
            .collect();
        entities.sort_unstable();
        entities.dedup();
        for entity in entities {
            let weight = (total / view.episode_degree(entity).max(1) as f64).ln();
            if weight <= 0.0 {
                continue;
            }
            let mut others: Vec<NodeId> = view
                .adjacent(entity, true, true)
                .filter(|(_, n, _)| n.is_episode() && n.id != episode)
                .map(|(_, n, _)| n.id)
                .collect();
            others.sort_unstable();
            others.dedup();
            for other in others {
                let entry = scores.entry(other).or_default();
                entry.0 += weight;
                entry.1.push((entity, weight));
            }
        }
        Ok(scores)
    }

    /// Episodes that share entities (projects, files, tools, concepts) with `episode`,
    /// each shared entity weighted by its rarity: ln(episodes / episodes touching it).
    pub fn related(&self, episode: NodeId, limit: usize) -> Result<Vec<Related>> {
        let scores = self.shared_scores(episode)?;
        let view = self.view()?;
        let start = |id: &NodeId| view.node(*id).map_or(0, |n| n.start);
        let mut ranked: Vec<(NodeId, Score)> = scores.into_iter().collect();
        // Best first; equal scores: the newer session first.
        ranked.sort_by(|a, b| {
            b.1.0
                .partial_cmp(&a.1.0)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(start(&b.0).cmp(&start(&a.0)))
                .then(a.0.cmp(&b.0))
        });
        drop(view);
        ranked.truncate(limit);
        let mut out = Vec::new();
        for (id, (score, mut shared)) in ranked {
            let Some(node) = self.node(id)? else { continue };
            shared.sort_by(|a, b| {
                b.1.partial_cmp(&a.1)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(a.0.cmp(&b.0))
            });
            let mut shared_nodes = Vec::new();
            for (entity, weight) in shared {
                if let Some(entity) = self.node(entity)? {
                    shared_nodes.push(Shared { entity, weight });
                }
            }
            out.push(Related {
                episode: node,
                score,
                shared: shared_nodes,
                similarity: 0.0,
            });
        }
        Ok(out)
    }
}
