//! Docs-keyspace records beside the graph: spawn records of subagents and the slug index
//! of episodes.

use eywa_storage::{Batch, Keyspace};

use super::super::Graph;
use crate::Result;
use crate::model::{NodeId, Spawn};

/// Docs keyspace prefix of spawn records.
const SPAWN_PREFIX: u8 = b's';
/// Docs keyspace prefix of the slug index: `g | slug | 0x00 | episode id`.
const SLUG_PREFIX: u8 = b'g';

pub(super) fn slug_key(slug: &str, episode: NodeId) -> Vec<u8> {
    let mut key = vec![SLUG_PREFIX];
    key.extend_from_slice(slug.as_bytes());
    key.push(0);
    key.extend_from_slice(episode.as_bytes());
    key
}

fn spawn_key(agent_episode: NodeId) -> Vec<u8> {
    let mut key = vec![SPAWN_PREFIX];
    key.extend_from_slice(agent_episode.as_bytes());
    key
}

/// A subagent as its parent's `Task`/`Agent` call described it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SpawnRecord {
    pub parent_session: String,
    pub agent_id: String,
    pub tool_use_id: Option<String>,
    pub agent_type: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub duration_ms: Option<u64>,
    #[serde(default)]
    pub tokens: Option<u64>,
    #[serde(default)]
    pub tool_uses: Option<u64>,
}

impl Graph {
    /// Episodes (sessions and their agents) whose lines carry `slug`.
    pub fn episodes_with_slug(&self, slug: &str) -> Result<Vec<NodeId>> {
        let mut prefix = vec![SLUG_PREFIX];
        prefix.extend_from_slice(slug.as_bytes());
        prefix.push(0);
        let mut ids = Vec::new();
        for key in self.store.keys(Keyspace::Docs, &prefix) {
            if let Some(id) = key?.get(prefix.len()..).and_then(NodeId::from_slice) {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    /// Records the subagents a session started, so their transcripts can find the call
    /// that started them (type, description, tool call id).
    pub fn put_spawns(batch: &mut Batch, parent_session: &str, spawns: &[Spawn]) -> Result<()> {
        for spawn in spawns {
            let key = spawn_key(NodeId::agent(parent_session, &spawn.agent_id));
            let record = SpawnRecord {
                parent_session: parent_session.to_owned(),
                agent_id: spawn.agent_id.clone(),
                tool_use_id: spawn.tool_use_id.clone(),
                agent_type: spawn.agent_type.clone(),
                description: spawn.description.clone(),
                duration_ms: spawn.duration_ms,
                tokens: spawn.tokens,
                tool_uses: spawn.tool_uses,
            };
            batch.put(Keyspace::Docs, key, &record)?;
        }
        Ok(())
    }

    /// The spawn record of a subagent episode, if its parent was read.
    pub fn spawn(&self, agent_episode: NodeId) -> Result<Option<SpawnRecord>> {
        Ok(self.store.get(Keyspace::Docs, &spawn_key(agent_episode))?)
    }
}
