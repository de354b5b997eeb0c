//! What the graph holds, counted as it is written: nodes per kind, current edges per
//! relation, and the source records' totals. Every batch carries the counters it leaves
//! behind, tagged with its generation, so reading them is one key; counters from another
//! generation (a store written by an older build) are recounted from the index keyspaces.

use std::collections::{BTreeMap, HashMap};

use eywa_storage::{Batch, Keyspace, Store};
use serde::{Deserialize, Serialize};

use super::keys::{self, Adjacency};
use super::{Counts, SourceRecord, tag_label};
use crate::Result;
use crate::model::{EdgeId, NodeId, Relation};

/// Version 2 counts sessions as main episodes (a moved session has two source records;
/// a copy, its own episode); counters stored under the first key are recounted once.
const COUNTERS_KEY: &[u8] = b"graph_counters_2";

/// The counters as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Counters {
    /// The graph generation these describe.
    pub generation: u64,
    /// Nodes per index tag (1 = Episode, 2 = Document, 3 = Memory, 16 + entity type).
    pub nodes: BTreeMap<u8, u64>,
    /// Current edges per relation tag.
    pub edges: BTreeMap<u8, u64>,
    pub sources: u64,
    /// Main sessions: episodes that are not a subagent's run.
    pub sessions: u64,
    pub agents: u64,
    pub skipped_lines: u64,
}

impl Counters {
    /// The stored counters, if they describe `generation`.
    pub(super) fn load(store: &Store, generation: u64) -> Result<Option<Counters>> {
        let stored: Option<Counters> = store.get(Keyspace::Settings, COUNTERS_KEY)?;
        Ok(stored.filter(|c| c.generation == generation))
    }

    /// Counts everything from the index keyspaces and the source records.
    pub(super) fn recount(store: &Store, generation: u64) -> Result<Counters> {
        let mut counters = Counters {
            generation,
            ..Counters::default()
        };
        let episodes = store.keys(Keyspace::EpisodesByTime, &[]).count() as u64;
        if episodes > 0 {
            counters.nodes.insert(keys::EPISODE_TAG, episodes);
        }
        // A node is filed under each of its names: count each id once per tag.
        let mut named: HashMap<u8, std::collections::HashSet<NodeId>> = HashMap::new();
        for key in store.keys(Keyspace::NodesByName, &[]) {
            let key = key?;
            if let Some(id) = keys::trailing_node(&key) {
                named.entry(key[0]).or_default().insert(id);
            }
        }
        for (tag, ids) in named {
            counters.nodes.insert(tag, ids.len() as u64);
        }
        for entry in store.entries(Keyspace::EdgesByDst, &[]) {
            let (key, value) = entry?;
            if let (Some(adjacency), Some(parsed)) =
                (Adjacency::decode(&value), keys::parse_adjacency(&key))
                && adjacency.is_current()
            {
                *counters.edges.entry(parsed.relation.tag()).or_default() += 1;
            }
        }
        let mut sessions = std::collections::HashSet::new();
        for record in store.scan::<SourceRecord>(Keyspace::Sources, &[]) {
            let (_, record) = record?;
            counters.add_source(&record, 1);
            if let Some(episode) = record.episode.filter(|_| !record.agent) {
                sessions.insert(episode);
            }
        }
        // One activity key per main episode (the check holds the index to the nodes);
        // before the index is built, the episodes the source records name.
        counters.sessions = if store.contains(Keyspace::Settings, super::ACTIVITY_BUILT)? {
            store.keys(Keyspace::SessionsByActivity, &[]).count() as u64
        } else {
            sessions.len() as u64
        };
        Ok(counters)
    }

    pub(super) fn counts(&self) -> Counts {
        Counts {
            sessions: self.sessions,
            agents: self.agents,
            episodes: self.nodes.get(&keys::EPISODE_TAG).copied().unwrap_or(0),
            entities: self
                .nodes
                .iter()
                .filter(|(tag, _)| **tag >= keys::ENTITY_TAG_BASE)
                .map(|(_, n)| n)
                .sum(),
            edges: self.edges.values().sum(),
            sources: self.sources,
            skipped_lines: self.skipped_lines,
        }
    }

    pub(super) fn kinds(&self) -> HashMap<&'static str, u64> {
        let mut kinds = HashMap::new();
        for (&tag, &n) in &self.nodes {
            *kinds.entry(tag_label(tag)).or_insert(0) += n;
        }
        kinds
    }

    pub(super) fn relations(&self) -> HashMap<Relation, u64> {
        self.edges
            .iter()
            .filter_map(|(&tag, &n)| Some((Relation::from_tag(tag)?, n)))
            .collect()
    }

    fn add_source(&mut self, record: &SourceRecord, sign: i64) {
        let add = |v: &mut u64, by: u64| *v = v.saturating_add_signed(sign * by as i64);
        add(&mut self.sources, 1);
        add(&mut self.agents, record.agents);
        add(&mut self.skipped_lines, record.skipped_lines);
    }

    /// Stores the counters (for the generation they describe).
    pub(super) fn save(&self, store: &Store) -> Result<()> {
        let mut batch = Batch::new();
        batch.put(Keyspace::Settings, COUNTERS_KEY.to_vec(), self)?;
        Ok(store.apply(batch)?)
    }

    /// Applies a batch's changes and adds the result, at `generation`, to the batch.
    pub(super) fn apply(
        &mut self,
        change: &Change,
        generation: u64,
        batch: &mut Batch,
    ) -> Result<()> {
        for (&tag, &n) in &change.new_nodes {
            *self.nodes.entry(tag).or_default() += n;
        }
        for (relation, before, after) in change.edges.values() {
            let count = self.edges.entry(relation.tag()).or_default();
            match (before, after) {
                (false, true) => *count += 1,
                (true, false) => *count = count.saturating_sub(1),
                _ => {}
            }
        }
        self.sessions += change.sessions;
        for (old, new) in &change.sources {
            if let Some(old) = old {
                self.add_source(old, -1);
            }
            self.add_source(new, 1);
        }
        self.nodes.retain(|_, n| *n > 0);
        self.edges.retain(|_, n| *n > 0);
        self.generation = generation;
        batch.put(Keyspace::Settings, COUNTERS_KEY.to_vec(), &*self)?;
        Ok(())
    }
}

/// What one batch changes in the counters.
#[derive(Debug, Default)]
pub(super) struct Change {
    /// Nodes the batch creates, per tag.
    new_nodes: BTreeMap<u8, u64>,
    created: std::collections::HashSet<NodeId>,
    /// Main-session episodes among them.
    sessions: u64,
    /// Per edge touched: its relation, whether it was current before the batch, after it.
    edges: HashMap<EdgeId, (Relation, bool, bool)>,
    /// Source records replaced (the old one, if any) and written.
    sources: Vec<(Option<SourceRecord>, SourceRecord)>,
}

impl Change {
    /// A node the store did not hold.
    pub(super) fn node_created(&mut self, id: NodeId, tag: u8, session: bool) {
        if self.created.insert(id) {
            *self.new_nodes.entry(tag).or_default() += 1;
            self.sessions += u64::from(session);
        }
    }

    /// An edge that is current after the batch or not; `was` = current before it (asked
    /// only the first time the batch touches the edge).
    pub(super) fn edge(
        &mut self,
        id: EdgeId,
        relation: Relation,
        was: impl FnOnce() -> bool,
        is: bool,
    ) {
        self.edges
            .entry(id)
            .and_modify(|e| e.2 = is)
            .or_insert_with(|| (relation, was(), is));
    }

    pub(super) fn source(&mut self, old: Option<SourceRecord>, new: SourceRecord) {
        self.sources.push((old, new));
    }
}
