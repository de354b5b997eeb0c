//! Which session wrote each message uuid, held in memory: a resumed session replays its
//! predecessor's lines under the same uuids (Q9), so every line read is looked up here.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::RwLock;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::Result;
use crate::claude::{History, claude_id};
use crate::graph::Graph;

/// Who wrote each message uuid, loaded from the store on first use and kept in step by
/// every session written after.
#[derive(Debug, Default)]
pub(crate) struct Authors {
    slot: RwLock<Option<Owners>>,
}

impl Authors {
    /// Loads the owners of every stored message, once.
    pub(crate) fn load(&self, graph: &Graph) -> Result<()> {
        if self
            .slot
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some()
        {
            return Ok(());
        }
        let loaded = Owners::load(graph)?;
        let mut slot = self
            .slot
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(loaded);
        }
        Ok(())
    }

    /// Records the messages `session` wrote (when loaded; else the next load reads them).
    pub(crate) fn record(&self, session: &str, uuids: &[u128]) {
        let mut slot = self
            .slot
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(owners) = slot.as_mut() {
            owners.record(session, uuids);
        }
    }

    /// The owners as loaded (`None` before [`Authors::load`]), read-locked.
    pub(crate) fn owners(&self) -> std::sync::RwLockReadGuard<'_, Option<Owners>> {
        self.slot
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Forgets what was loaded: a failed write run may have recorded messages whose writes
    /// never landed.
    pub(crate) fn forget(&self) {
        *self
            .slot
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    /// What other transcripts said: these owners, and the summary labels in `labels`.
    pub(crate) fn history<'a>(&'a self, labels: &'a HashMap<u128, String>) -> Known<'a> {
        Known {
            authors: self,
            labels,
        }
    }
}

/// What other transcripts said, as the store and a write run know it.
pub(crate) struct Known<'a> {
    authors: &'a Authors,
    labels: &'a HashMap<u128, String>,
}

impl History for Known<'_> {
    fn owner(&self, uuid: u128, reading: &str) -> Option<String> {
        self.authors
            .owners()
            .as_ref()?
            .owner(uuid)
            // A copy of a session in another workspace holds its lines as its own.
            .filter(|o| claude_id(o) != claude_id(reading))
            .map(str::to_owned)
    }

    fn label(&self, uuid: u128) -> Option<String> {
        self.labels.get(&uuid).cloned()
    }
}

/// Message uuid → the session that wrote it, loaded once from the store and kept in step
/// with every session written after. About 24 bytes per message.
#[derive(Debug, Default)]
pub(crate) struct Owners {
    sessions: Vec<String>,
    index: HashMap<String, u32>,
    owner: FxHashMap<u128, u32>,
    /// The messages more than one session wrote (a resumed session's replay, a copy).
    shared: FxHashSet<u128>,
}

impl Owners {
    fn load(graph: &Graph) -> Result<Owners> {
        let mut owners = Owners::default();
        for (session, uuids) in graph.session_uuids()? {
            owners.record(&session, &uuids);
        }
        Ok(owners)
    }

    /// The session that wrote `uuid`.
    pub(crate) fn owner(&self, uuid: u128) -> Option<&str> {
        self.owner
            .get(&uuid)
            .map(|&i| self.sessions[i as usize].as_str())
    }

    /// Whether more than one session wrote `uuid`: only then can its owner be another
    /// session than the one a transcript holding it is read as.
    pub(crate) fn is_shared(&self, uuid: u128) -> bool {
        self.shared.contains(&uuid)
    }

    /// Whether any message was written by more than one session.
    pub(crate) fn any_shared(&self) -> bool {
        !self.shared.is_empty()
    }

    /// Records the messages `session` wrote; a uuid already owned keeps its owner.
    fn record(&mut self, session: &str, uuids: &[u128]) {
        let next = u32::try_from(self.sessions.len()).expect("fewer than 2^32 sessions");
        let i = *self.index.entry(session.to_owned()).or_insert(next);
        if i == next {
            self.sessions.push(session.to_owned());
        }
        self.owner.reserve(uuids.len());
        for &uuid in uuids {
            match self.owner.entry(uuid) {
                Entry::Vacant(e) => {
                    e.insert(i);
                }
                Entry::Occupied(e) if *e.get() != i => {
                    self.shared.insert(uuid);
                }
                Entry::Occupied(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_writer_owns_a_message() {
        let mut owners = Owners::default();
        owners.record("a", &[1, 2]);
        owners.record("b", &[2, 3]);
        owners.record("a", &[4]);
        assert_eq!(owners.owner(1), Some("a"));
        assert_eq!(owners.owner(2), Some("a"));
        assert_eq!(owners.owner(3), Some("b"));
        assert_eq!(owners.owner(4), Some("a"));
        assert_eq!(owners.owner(5), None);
        assert_eq!(owners.sessions.len(), 2);
        assert!(owners.is_shared(2) && !owners.is_shared(1) && !owners.is_shared(3));
        owners.record("a", &[1]);
        assert!(!owners.is_shared(1), "written again by its owner");
        assert!(owners.any_shared());
    }
}
