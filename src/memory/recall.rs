//! Ranking a recall's candidates: relevance (words and meaning) × the weight decay left
//! each memory, best first. The engine gathers the candidates from the text index and
//! semantic memory.

use std::collections::{BTreeSet, HashMap};

use super::{Memories, RecallHit, RecallQuery, weight};
use crate::Result;
use crate::model::Timestamp;

/// Share of a recall's relevance that comes from words (BM25 over the best); the rest is
/// the cosine similarity of meaning, as in hybrid search.
const LEXICAL_SHARE: f32 = 0.6;

impl Memories<'_> {
    /// The memories found by words (`lexical`: BM25 over the best, by memory id) or by
    /// meaning (`meaning`: the best cosine similarity, by memory id; only counted
    /// `with_meaning`) that `q` keeps (not forgotten, of its types, with all its tags),
    /// each as it is at `now`: relevance × the weight decay left it, best first, `q.limit`
    /// at most. Nothing is recorded as recalled (see [`Memories::recalled`]).
    pub(crate) fn rank(
        &self,
        q: &RecallQuery,
        lexical: &HashMap<String, f32>,
        meaning: &HashMap<String, f32>,
        with_meaning: bool,
        now: Timestamp,
    ) -> Result<Vec<RecallHit>> {
        let mut hits = Vec::new();
        let ids: BTreeSet<&String> = lexical.keys().chain(meaning.keys()).collect();
        for id in ids {
            let Some(m) = self.latest(id, now)? else {
                continue;
            };
            if m.forgotten_at.is_some()
                || !(q.types.is_empty() || q.types.contains(&m.memory_type))
                || !q.tags.iter().all(|t| m.tags.contains(&t.to_lowercase()))
            {
                continue;
            }
            let words = lexical.get(id).copied().unwrap_or(0.0);
            let relevance = if with_meaning {
                LEXICAL_SHARE * words
                    + (1.0 - LEXICAL_SHARE) * meaning.get(id).copied().unwrap_or(0.0)
            } else {
                words
            };
            let w = weight(m.memory_type, m.importance, m.decay.last_access, now);
            hits.push(RecallHit {
                relevance,
                weight: w,
                score: relevance * w,
                memory: m,
            });
        }
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.memory.id.cmp(&b.memory.id))
        });
        hits.truncate(q.limit);
        Ok(hits)
    }
}
