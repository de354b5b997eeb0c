//! The engine's side of memories: resolving what a client names in the graph, gathering a
//! recall's candidates from the indexes, and delegations to `crate::memory` (checks,
//! ranking, listing, history). The writes go through the one writer (`crate::ingest`).

use std::collections::HashMap;

use super::Engine;
use crate::index::TextQuery;
use crate::memory::{
    ConsolidateReport, MEMORY_TYPE, Memories, MemoryFilter, MemoryItem, MemoryUpdate, NewMemory,
    RecallHit, RecallQuery, id_bytes, memory_of,
};
use crate::model::{NodeKind, SearchFilter};
use crate::semantic::Semantic;
use crate::{Error, Result};

/// Cosine similarity under which a memory's meaning is taken as unrelated to the query
/// (all-MiniLM-L6-v2 puts unrelated sentences at about 0 to 0.2, paraphrases above 0.5).
pub const MIN_SIMILARITY: f32 = 0.3;

/// Candidates gathered from each index per memory asked for.
const CANDIDATES_PER_HIT: usize = 10;

impl Engine {
    /// Remembers `new`: checked, its session and what it is about resolved in the graph
    /// (a project that exists is one of them), then written with its node and edges and
    /// indexed for recall. The same text in the same project is one memory.
    pub fn remember(&self, new: NewMemory) -> Result<MemoryItem> {
        let new = self.checked(new)?;
        let now = self.config.clock.now();
        let m = self.write(|w| w.remember(new, now, false))?;
        // Committed outside the ingest lock, with the writes that came at the same time.
        self.writer().commit_writes()?;
        self.embed_now(Some(&crate::memory::source(&m.id)));
        Ok(m)
    }

    /// Remembers every memory of `news` in one run: all are checked before any is
    /// written (one bad memory, and nothing is), and the text index is committed once.
    /// Returns each as stored, in order; `progress` is told how many are written so far.
    pub fn remember_all(
        &self,
        news: Vec<NewMemory>,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Vec<MemoryItem>> {
        let checked = news
            .into_iter()
            .enumerate()
            .map(|(i, new)| {
                self.checked(new).map_err(|e| match e {
                    Error::InvalidArgument(why) => {
                        Error::InvalidArgument(format!("memory {}: {why}", i + 1))
                    }
                    other => other,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let now = self.config.clock.now();
        let out = self.write(|w| {
            let mut out = Vec::with_capacity(checked.len());
            for new in checked {
                out.push(w.remember(new, now, false)?);
                progress(out.len());
            }
            Ok(out)
        })?;
        self.writer().commit_writes()?;
        self.embed_now(None);
        Ok(out)
    }

    /// A new version of memory `id`: what `update` gives replaces the memory's, and its
    /// text is indexed and embedded again. The old version stays in its history.
    pub fn update_memory(&self, id: &str, update: &MemoryUpdate) -> Result<MemoryItem> {
        id_bytes(id)?;
        let update = update.checked()?;
        let now = self.config.clock.now();
        let m = self.write(|w| w.update_memory(id, &update, now))?;
        self.writer().commit_writes()?;
        self.embed_now(Some(&crate::memory::source(&m.id)));
        Ok(m)
    }

    /// Forgets memory `id`: recall no longer finds it, its edges expire, its history
    /// stays (nothing is deleted).
    pub fn forget_memory(&self, id: &str, reason: Option<String>) -> Result<MemoryItem> {
        id_bytes(id)?;
        let now = self.config.clock.now();
        let m =
            self.write(|w| w.forget_memory(id, crate::memory::Change::Forgotten, reason, now))?;
        self.writer().commit_writes()?;
        Ok(m)
    }

    /// Memory `id` as it is now, its weight at this moment.
    pub fn memory(&self, id: &str) -> Result<MemoryItem> {
        self.memories()
            .latest(id, self.config.clock.now())?
            .ok_or_else(|| Error::NotFound(format!("no memory {}", crate::error::quote(id.trim()))))
    }

    /// Every version of memory `id`, oldest first.
    pub fn memory_history(&self, id: &str) -> Result<Vec<MemoryItem>> {
        let versions = self.memories().history(id)?;
        if versions.is_empty() {
            return Err(Error::NotFound(format!(
                "no memory {}",
                crate::error::quote(id.trim())
            )));
        }
        Ok(versions)
    }

    /// The memories `filter` keeps, most recently changed first: `limit` of them from
    /// `offset`, and how many there are.
    pub fn list_memories(
        &self,
        filter: &MemoryFilter,
        limit: usize,
        offset: usize,
    ) -> Result<(Vec<MemoryItem>, u64)> {
        self.memories()
            .page(filter, limit, offset, self.config.clock.now())
    }

    /// Promotes short-term memories recalled often or important to long-term, and lets
    /// go of those whose weight decay took under the threshold (see
    /// [`crate::memory::verdict`]). `serve` runs it hourly.
    pub fn consolidate_memories(&self) -> Result<ConsolidateReport> {
        let now = self.config.clock.now();
        self.write(|w| w.consolidate(now))
    }

    /// The memories that best match `q`: relevance (words and meaning) × the weight decay
    /// left each, best first. Each one returned counts as recalled now: its last access
    /// moves to now (its weight is whole again) and its recalls go up by one.
    pub fn recall(&self, q: &RecallQuery) -> Result<Vec<RecallHit>> {
        let query = q.checked()?;
        let now = self.config.clock.now();
        let filter = SearchFilter {
            kinds: vec![MEMORY_TYPE.to_owned()],
            projects: q.project.iter().cloned().collect(),
            ..SearchFilter::default()
        };
        let candidates = q.limit.saturating_mul(CANDIDATES_PER_HIT).max(50);
        let mut lexical: HashMap<String, f32> = HashMap::new();
        match self.text()?.search_passages(&TextQuery {
            query: query.to_owned(),
            filter: filter.clone(),
            limit: candidates,
        }) {
            Ok(hits) => {
                let best = hits.iter().map(|h| h.score).fold(0f32, f32::max);
                for h in hits {
                    if let Some(id) = memory_of(&h.doc.id) {
                        let score = if best > 0.0 { h.score / best } else { 0.0 };
                        lexical.entry(id).or_insert(score);
                    }
                }
            }
            // Only common words: meaning may still match.
            Err(Error::InvalidArgument(_)) => {}
            Err(e) => return Err(e),
        }
        let semantic = self.semantic()?;
        let mut meaning: HashMap<String, f32> = HashMap::new();
        let with_meaning = semantic.not_ready().is_none();
        if with_meaning {
            let vector = semantic.embed_query(query)?;
            let store = self.graph.store();
            for hit in semantic.search(&vector, candidates, &filter)? {
                if hit.score < MIN_SIMILARITY {
                    continue;
                }
                if let Some(entry) = Semantic::entry(store, hit.key)?
                    && let Some(id) = memory_of(&entry.doc)
                {
                    let best = meaning.entry(id).or_insert(0.0);
                    *best = best.max(hit.score);
                }
            }
        }
        let memories = self.memories();
        let hits = memories.rank(q, &lexical, &meaning, with_meaning, now)?;
        let recalled: Vec<String> = hits.iter().map(|h| h.memory.id.clone()).collect();
        memories.recalled(&recalled, now)?;
        Ok(hits)
    }

    /// Embeds what a client write just queued, ahead of the backlog, so that it is found
    /// by meaning from the next search on, from this process or a server alike: the
    /// chunks of `source` when given (a memory embeds its own text, not the backlog's),
    /// else the newest (a document just added is among them). Beside `serve` the write
    /// answers first (see `semantic::writes`). Without a model, or when it fails, the
    /// chunk waits for the embedder as any other.
    pub(super) fn embed_now(&self, source: Option<&str>) {
        let Ok(semantic) = self.semantic() else {
            return;
        };
        if semantic.embedder().is_none() || semantic.not_ready().is_some() {
            return;
        }
        let wanted = match source {
            Some(source) => crate::semantic::Wanted::Source(source.to_owned()),
            None => crate::semantic::Wanted::Newest,
        };
        if let Err(e) = semantic.embed_written(self.graph.store(), wanted) {
            tracing::warn!(error = %e, "a new memory waits for the embedder");
        }
    }

    fn memories(&self) -> Memories<'_> {
        Memories {
            store: self.graph.store(),
        }
    }

    /// `new` checked, with its session's full id and the ids of what it is about.
    fn checked(&self, new: NewMemory) -> Result<NewMemory> {
        let mut new = new.checked_fields()?;
        if let Some(session) = new
            .session
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let node = self.resolve_one(&format!(
                "session:{}",
                session.strip_prefix("session:").unwrap_or(session)
            ))?;
            let Some(episode) = node.episode() else {
                return Err(Error::InvalidArgument(format!(
                    "{session} is not a session",
                    session = crate::error::quote(session)
                )));
            };
            new.session = Some(episode.session_id.clone());
        } else {
            new.session = None;
        }
        let mut about = Vec::new();
        for reference in new.about.iter().map(|r| r.trim()).filter(|r| !r.is_empty()) {
            about.push(self.resolve_one(reference)?.id.to_string());
        }
        if let Some(project) = &new.project
            && let Ok(nodes) = self.resolve(&format!("project:{project}"))
        {
            about.extend(
                nodes
                    .iter()
                    .filter(|n| matches!(n.kind, NodeKind::Entity(_)))
                    .map(|n| n.id.to_string()),
            );
        }
        about.sort();
        about.dedup();
        new.about = about;
        Ok(new)
    }
}
