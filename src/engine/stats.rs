//! What the store holds, and how its tiers and caches are doing.

use std::collections::BTreeMap;

use eywa_storage::{CacheStats, TierStats};

use super::Engine;
use crate::Result;
use crate::graph::Counts;

/// What the store holds and how its tiers and caches are doing.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// What the graph holds: sessions, episodes, entities, edges, sources.
    pub counts: Counts,
    /// Nodes per kind: `Episode`, `Project`, `Tool`, …
    pub kinds: BTreeMap<String, u64>,
    /// Current edges per relation.
    pub relations: BTreeMap<String, u64>,
    /// Sizes of the warm and cold tiers.
    pub tiers: TierStats,
    /// This process's hot caches: the graph's, `get` results', and semantic memory's once
    /// opened.
    pub caches: Vec<CacheStats>,
    /// How far semantic memory is.
    pub semantic: super::SemanticStatus,
    /// Files that could not be read as documents, most recent first (at most
    /// twenty).
    pub failed_documents: Vec<crate::docs::FailedDocument>,
    /// How many files could not be read as documents.
    pub failed_document_count: u64,
}

/// Files that failed to be read that stats lists at most (`eywa docs list --failed` has
/// them all).
pub(crate) const FAILED_IN_STATS: usize = 20;

impl Engine {
    /// What the store holds, and how its tiers and caches are doing.
    pub fn stats(&self) -> Result<Stats> {
        let graph = &self.graph;
        let mut caches = graph.cache_stats();
        caches.push(self.results.stats());
        // Semantic memory's caches, when this process opened it.
        if let Some(semantic) = self.semantic.get() {
            caches.extend(semantic.cache_stats());
        }
        let (failed_documents, failed_document_count) =
            self.failed_documents(FAILED_IN_STATS, 0)?;
        Ok(Stats {
            counts: graph.counts()?,
            kinds: graph
                .kind_counts()?
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
            relations: graph
                .relation_counts()?
                .into_iter()
                .map(|(r, v)| (r.as_str().to_owned(), v))
                .collect(),
            tiers: graph.store().tier_stats()?,
            caches,
            semantic: self.semantic_status(),
            failed_documents,
            failed_document_count,
        })
    }
}
