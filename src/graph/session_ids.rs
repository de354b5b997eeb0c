//! Every session's id (and a subagent's `<id>` without `agent-`) with its source's path,
//! kept sorted for prefix lookups: built from every source record once, then kept in step
//! by the graph's own writes (each write's sources read back as it lands). A write the
//! index did not see (another process, a repair) leaves it behind the store's sources
//! generation, and the next lookup builds it again.

use std::collections::{BTreeSet, HashMap};

use super::Graph;
use super::sources::SourceRecord;
use crate::Result;

/// The index, as of a sources generation.
#[derive(Debug, Default)]
pub(super) struct SessionIds {
    /// The sources generation it holds every record of.
    generation: u64,
    /// (id, path), sorted.
    ids: BTreeSet<(String, String)>,
    /// The ids each path is indexed under.
    by_path: HashMap<String, Vec<String>>,
}

impl SessionIds {
    /// The ids `record` is found by: none without an episode.
    fn ids_of(record: &SourceRecord) -> Vec<String> {
        if record.episode.is_none() {
            return Vec::new();
        }
        let mut ids = vec![record.session_id.clone()];
        if record.agent
            && let Some(id) = record.session_id.strip_prefix("agent-")
        {
            ids.push(id.to_owned());
        }
        ids
    }

    /// Indexes `record` at `path` in place of what the path was indexed under; `None`
    /// (the record is gone) only drops it.
    fn put(&mut self, path: &str, record: Option<&SourceRecord>) {
        if let Some(old) = self.by_path.remove(path) {
            for id in old {
                self.ids.remove(&(id, path.to_owned()));
            }
        }
        let ids = record.map(SessionIds::ids_of).unwrap_or_default();
        if ids.is_empty() {
            return;
        }
        for id in &ids {
            self.ids.insert((id.clone(), path.to_owned()));
        }
        self.by_path.insert(path.to_owned(), ids);
    }

    /// The paths indexed under an id starting with `prefix`, sorted, each once.
    fn paths(&self, prefix: &str) -> Vec<String> {
        let mut paths: Vec<String> = self
            .ids
            .range((prefix.to_owned(), String::new())..)
            .take_while(|(id, _)| id.starts_with(prefix))
            .map(|(_, path)| path.clone())
            .collect();
        paths.sort_unstable();
        paths.dedup();
        paths
    }
}

impl Graph {
    /// The source records of sessions (with an episode) whose id starts with `prefix`, or
    /// for a subagent's own transcript (`agent-<id>`) whose `<id>` does. Found in an
    /// index of every session's id: a reference to one session reads its records, not all
    /// of them.
    pub fn sources_of_sessions(&self, prefix: &str) -> Result<Vec<SourceRecord>> {
        let paths = {
            let mut index = self.session_ids_index();
            self.current_session_ids(&mut index)?;
            index.as_ref().map(|i| i.paths(prefix)).unwrap_or_default()
        };
        let mut out = Vec::with_capacity(paths.len());
        for path in paths {
            out.extend(self.source(&path)?);
        }
        Ok(out)
    }

    /// Builds the index of session ids now, if it is not current: a server does it as it
    /// starts, so that the first session asked for does not wait for it.
    pub fn prepare_session_ids(&self) -> Result<()> {
        self.current_session_ids(&mut self.session_ids_index())
    }

    /// Brings `index` to the store's sources generation, read under the lock a write
    /// holds while it lands (the index and the store are then at the same one, or the
    /// index is behind): built whole when it is not there.
    fn current_session_ids(&self, index: &mut Option<SessionIds>) -> Result<()> {
        let generation = self.sources_generation()?;
        if index.as_ref().is_none_or(|i| i.generation != generation) {
            *index = Some(self.build_session_ids(generation)?);
        }
        Ok(())
    }

    fn build_session_ids(&self, generation: u64) -> Result<SessionIds> {
        let mut index = SessionIds {
            generation,
            ..SessionIds::default()
        };
        for record in self.sources()? {
            let path = record.path.clone();
            index.put(&path, Some(&record));
        }
        Ok(index)
    }

    /// Taken by a write that lands sources, before it lands: the index, held until the
    /// write hands it what it wrote ([`HeldIds::written`]), so a lookup sees both or
    /// neither. `None` when there is no index to keep in step (it is built on first use).
    pub(super) fn hold_session_ids(&self) -> Result<Option<HeldIds<'_>>> {
        let index = self.session_ids_index();
        if index.is_none() {
            return Ok(None);
        }
        let before = self.sources_generation()?;
        Ok(Some(HeldIds { index, before }))
    }

    fn session_ids_index(&self) -> std::sync::MutexGuard<'_, Option<SessionIds>> {
        self.session_ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The index held by a write that lands sources, and the sources generation the store
/// was at before it.
pub(super) struct HeldIds<'g> {
    index: std::sync::MutexGuard<'g, Option<SessionIds>>,
    before: u64,
}

impl HeldIds<'_> {
    /// Takes in the sources at `paths` the write landed, moving the store to sources
    /// generation `after`. An index that was not at the generation before the write is
    /// left to be built again, and so is one whose records could not be read back.
    pub(super) fn written(
        mut self,
        graph: &Graph,
        paths: &std::collections::HashSet<String>,
        after: u64,
    ) {
        let before = self.before;
        let Some(current) = self.index.as_mut().filter(|i| i.generation == before) else {
            return;
        };
        for path in paths {
            match graph.source(path) {
                Ok(record) => current.put(path, record.as_ref()),
                Err(e) => {
                    tracing::debug!(error = %e, "the session id index will be built again");
                    *self.index = None;
                    return;
                }
            }
        }
        current.generation = after;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, agent: bool) -> SourceRecord {
        SourceRecord {
            session_id: id.to_owned(),
            agent,
            episode: Some(crate::model::NodeId::episode(id)),
            ..SourceRecord::default()
        }
    }

    #[test]
    fn paths_are_found_by_a_prefix_of_their_ids_and_follow_what_is_written() {
        let mut index = SessionIds::default();
        index.put("a.jsonl", Some(&record("0b5e-one", false)));
        index.put("b.jsonl", Some(&record("0b5f-two", false)));
        index.put("c.jsonl", Some(&record("agent-0b5e-sub", true)));
        assert_eq!(index.paths("0b5e"), ["a.jsonl", "c.jsonl"]);
        assert_eq!(index.paths("agent-"), ["c.jsonl"]);
        assert_eq!(index.paths("0b5"), ["a.jsonl", "b.jsonl", "c.jsonl"]);
        // A path read as another session, then gone.
        index.put("a.jsonl", Some(&record("1111-moved", false)));
        assert_eq!(index.paths("0b5e"), ["c.jsonl"]);
        assert_eq!(index.paths("1111"), ["a.jsonl"]);
        index.put("a.jsonl", None);
        assert!(index.paths("1111").is_empty());
        // A record with no episode is not a session.
        let mut unread = record("2222-unread", false);
        unread.episode = None;
        index.put("d.jsonl", Some(&unread));
        assert!(index.paths("2222").is_empty());
    }
}
