//! The episodes written through a graph, in order: what a reader that keeps something
//! derived from every session (the web view's overview of projects) re-reads instead of
//! every session. In memory and bounded; a reader whose place fell out of it reads all.

use std::collections::VecDeque;

use super::Graph;
use crate::model::NodeId;

/// Episodes written kept at most.
const KEPT: usize = 1 << 16;

/// The log: the ids written, the first of them numbered `start`.
#[derive(Debug, Default)]
pub(super) struct EpisodeLog {
    start: u64,
    ids: VecDeque<NodeId>,
}

impl EpisodeLog {
    pub(super) fn push(&mut self, id: NodeId) {
        self.ids.push_back(id);
        if self.ids.len() > KEPT {
            self.ids.pop_front();
            self.start += 1;
        }
    }

    fn end(&self) -> u64 {
        self.start + self.ids.len() as u64
    }

    /// The ids written from `cursor` on, each once; `None` when the log no longer holds
    /// them all.
    fn since(&self, cursor: u64) -> Option<Vec<NodeId>> {
        if cursor < self.start || cursor > self.end() {
            return None;
        }
        let mut ids: Vec<NodeId> = self
            .ids
            .iter()
            .skip((cursor - self.start) as usize)
            .copied()
            .collect();
        ids.sort_unstable();
        ids.dedup();
        Some(ids)
    }
}

impl Graph {
    /// Where the log of episodes written ends now: what [`Graph::episodes_written_since`]
    /// takes. Episodes written after it are in the log; a scan of the store begun after
    /// it sees at least what was written before.
    pub fn episodes_cursor(&self) -> u64 {
        self.episode_log().end()
    }

    /// The episodes written through this graph since `cursor` (each once, their writes
    /// landed and their nodes current in the caches), and the cursor after them; `None`
    /// when the log no longer reaches back to `cursor`.
    pub fn episodes_written_since(&self, cursor: u64) -> Option<(Vec<NodeId>, u64)> {
        let log = self.episode_log();
        Some((log.since(cursor)?, log.end()))
    }

    pub(super) fn episode_log(&self) -> std::sync::MutexGuard<'_, EpisodeLog> {
        self.episodes_written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_hands_each_id_once_and_says_when_it_no_longer_reaches_back() {
        let mut log = EpisodeLog::default();
        let (a, b) = (NodeId::episode("a"), NodeId::episode("b"));
        log.push(a);
        log.push(b);
        log.push(a);
        let mut both = vec![a, b];
        both.sort_unstable();
        assert_eq!(log.since(0), Some(both));
        assert_eq!(log.since(2), Some(vec![a]));
        assert_eq!(log.since(3), Some(vec![]));
        assert_eq!(log.since(4), None);
        for _ in 0..KEPT {
            log.push(b);
        }
        assert_eq!(log.since(0), None);
        assert_eq!(log.since(log.end()), Some(vec![]));
    }
}
