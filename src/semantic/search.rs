//! Searching semantic memory: a query embedded (through its cache) and the nearest
//! chunks found, and the sessions nearest one session.

use std::collections::HashSet;
use std::sync::Arc;

use super::{Semantic, VectorHit, on_pool};
use crate::{Error, Result};

impl Semantic {
    /// The query's vector, through the query cache.
    pub(crate) fn embed_query(&self, query: &str) -> Result<Arc<Vec<f32>>> {
        let embedder = self
            .embedder
            .as_ref()
            .ok_or_else(|| Error::FailedPrecondition(self.not_ready().unwrap_or_default()))?;
        if let Some(v) = self.queries.get(query) {
            return Ok(v);
        }
        let v = Arc::new(on_pool(self.reads.as_ref(), || embedder.embed(&[query]))?.remove(0));
        self.queries.insert(query.to_owned(), v.clone());
        Ok(v)
    }

    /// The chunks most like `query` among those `filter` keeps, best first, with what
    /// each belongs to (session, project, content type, agent, time).
    pub(crate) fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: &crate::model::SearchFilter,
    ) -> Result<Vec<VectorHit>> {
        if let Some(why) = self.not_ready() {
            return Err(Error::FailedPrecondition(why));
        }
        // What a client wrote before this search is found by it.
        self.settle();
        let guard = self.vectors();
        let Some(v) = guard.as_ref() else {
            return Ok(Vec::new());
        };
        let hits = v.search(query, k, filter)?;
        Ok(hits
            .into_iter()
            .filter_map(|(key, score)| {
                let m = v.meta.get(&key)?;
                Some(VectorHit {
                    key,
                    score,
                    session: v.strings.name(m.session).to_owned(),
                    project: v.strings.name(m.project).to_owned(),
                    kind: v.strings.name(m.kind).to_owned(),
                    agent: (m.agent != 0).then(|| v.strings.name(m.agent).to_owned()),
                    timestamp: m.timestamp,
                })
            })
            .collect())
    }

    /// Sessions whose content is most like `session`'s: cosine similarity of the mean
    /// vectors of their chunks, best first, among the sessions of the `candidates` chunks
    /// nearest to that mean. Empty when semantic search is not ready or the session has
    /// no chunks.
    pub(crate) fn similar_sessions(&self, session: &str, candidates: usize) -> Vec<(String, f64)> {
        if self.not_ready().is_some() {
            return Vec::new();
        }
        let guard = self.vectors();
        let Some(v) = guard.as_ref() else {
            return Vec::new();
        };
        let Some(center) = v.centroid(session) else {
            return Vec::new();
        };
        let Ok(near) = v.search(&center, candidates, &crate::model::SearchFilter::default()) else {
            return Vec::new();
        };
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for (key, _) in near {
            let Some(m) = v.meta.get(&key) else { continue };
            let other = v.strings.name(m.session);
            if other.is_empty() || other == session || !seen.insert(m.session) {
                continue;
            }
            if let Some(c) = v.centroid(other) {
                let cos: f32 = c.iter().zip(&center).map(|(a, b)| a * b).sum();
                out.push((other.to_owned(), f64::from(cos)));
            }
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }
}
