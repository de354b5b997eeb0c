//! Which session wrote each message uuid, held in memory: a resumed session replays its
//! predecessor's lines under the same uuids (Q9), so every line read is looked up here.

use std::collections::HashMap;

use crate::Result;
use crate::graph::Graph;

/// Message uuid → the session that wrote it, loaded once from the store and kept in step
/// with every session written after. About 24 bytes per message.
#[derive(Debug, Default)]
pub(super) struct Owners {
    sessions: Vec<String>,
    index: HashMap<String, u32>,
    owner: HashMap<u128, u32>,
}

impl Owners {
    pub(super) fn load(graph: &Graph) -> Result<Owners> {
        let mut owners = Owners::default();
        for (session, uuids) in graph.session_uuids()? {
            owners.record(&session, &uuids);
        }
        Ok(owners)
    }

    /// The session that wrote `uuid`.
    pub(super) fn owner(&self, uuid: u128) -> Option<&str> {
        self.owner
            .get(&uuid)
            .map(|&i| self.sessions[i as usize].as_str())
    }

    /// Records the messages `session` wrote; a uuid already owned keeps its owner.
    pub(super) fn record(&mut self, session: &str, uuids: &[u128]) {
        let next = u32::try_from(self.sessions.len()).expect("fewer than 2^32 sessions");
        let i = *self.index.entry(session.to_owned()).or_insert(next);
        if i == next {
            self.sessions.push(session.to_owned());
        }
        self.owner.reserve(uuids.len());
        for &uuid in uuids {
            self.owner.entry(uuid).or_insert(i);
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
    }
}
