//! What the first open of a store written by an earlier eywa does once, each step marked
//! done in the settings keyspace: its files made private, its text index marked for a
//! rebuild that fills what earlier layouts lacked, and whether its secrets still need a
//! scrub ([`needs_scrub`]; the scrub itself is [`super::Writer::scrub_store`]), and its
//! sessions attributed to this machine's user ([`attribute_once`]).

use std::path::Path;

use eywa_storage::{Batch, Keyspace, Store};

use super::{SCRUBBED, TEXT_DIRTY};
use crate::Result;
use crate::graph::HANDOFF_PREFIX;
use crate::model::{Handoff, Identity, Node, NodeKind};

/// Set once every file under the data dir has been made private.
const PRIVATE_FILES: &[u8] = b"private_files";
/// Set once a store's chunks are known to be listed in semantic memory.
const CHUNKS_LISTED: &[u8] = b"chunks_listed";
/// Set once a store's text index holds every file's labels and index-only sessions.
const LABELS_INDEXED: &[u8] = b"labels_indexed";
/// Set once a store's chunks are known to have their records (`semantic/chunks.rs`).
const CHUNKS_RECORDED: &[u8] = b"chunks_recorded";
/// Set once every episode of a store names its user and machine.
const ATTRIBUTED: &[u8] = b"attributed";
/// Episodes rewritten per transaction when a store's sessions are attributed.
const ATTRIBUTE_BATCH: usize = 2_000;

/// The upkeep of every open: the data dir's files made private (`data_dir`: none for a
/// temporary store), and the text index marked for the rebuilds the store has not had.
pub(crate) fn on_open(store: &Store, data_dir: Option<&Path>) -> Result<()> {
    if let Some(data_dir) = data_dir {
        make_private_once(store, data_dir)?;
    }
    // Stores written before a session's chunks were queued in its own transaction may
    // have lost queue entries to a crash (their sessions then read as unchanged): the
    // rebuild queues every chunk semantic memory lacks.
    rebuild_once(store, CHUNKS_LISTED)?;
    // Stores written before chunks were records: the rebuild writes every chunk's record.
    rebuild_once(store, CHUNKS_RECORDED)?;
    // Stores written before every label of a file was its session's, and before sessions
    // known from `sessions-index.json` only were searchable: the rebuild indexes both.
    rebuild_once(store, LABELS_INDEXED)
}

/// Stores written before eywa kept its files private held handoffs and indexes others
/// could read: the first open walks the data dir once and tightens them.
fn make_private_once(store: &Store, data_dir: &Path) -> Result<()> {
    if store.contains(Keyspace::Settings, PRIVATE_FILES)? {
        return Ok(());
    }
    let changed = crate::fs::make_tree_private(data_dir)?;
    if changed > 0 {
        tracing::info!(changed, dir = %data_dir.display(), "made the data dir's files private");
    }
    mark(store, PRIVATE_FILES)
}

/// The first open of a store without `flag` marks its text index for a rebuild (when it
/// holds sources), then sets `flag`. A new store is marked at once.
fn rebuild_once(store: &Store, flag: &[u8]) -> Result<()> {
    if store.contains(Keyspace::Settings, flag)? {
        return Ok(());
    }
    let mut batch = Batch::new();
    if !store.is_empty(Keyspace::Sources) {
        batch.put(Keyspace::Settings, TEXT_DIRTY.to_vec(), &true)?;
    }
    batch.put(Keyspace::Settings, flag.to_vec(), &true)?;
    Ok(store.apply(batch)?)
}

/// Whether the store may hold secrets from before documents, memories, imported
/// handoffs and summaries were redacted. A store with nothing in them is marked scrubbed
/// at once.
pub(crate) fn needs_scrub(store: &Store) -> Result<bool> {
    if store.contains(Keyspace::Settings, SCRUBBED)? {
        return Ok(false);
    }
    let empty = [Keyspace::Sources, Keyspace::Docs, Keyspace::Memories]
        .iter()
        .all(|k| store.is_empty(*k));
    if empty {
        mark(store, SCRUBBED)?;
        return Ok(false);
    }
    Ok(true)
}

/// Stores written before sessions named who wrote them: the first open attributes every
/// episode and handoff without a user or machine to `identity` (this machine's), in
/// transactions of [`ATTRIBUTE_BATCH`], then marks the store. Stopped midway, the next
/// open goes on: what is attributed already is left as it is. Returns the episodes and
/// the handoffs attributed.
pub(crate) fn attribute_once(store: &Store, identity: &Identity) -> Result<(u64, u64)> {
    if store.contains(Keyspace::Settings, ATTRIBUTED)? {
        return Ok((0, 0));
    }
    let mut writes = Writes {
        store,
        batch: Batch::new(),
        pending: 0,
    };
    let mut episodes = 0;
    for entry in store.scan::<Node>(Keyspace::Nodes, &[]) {
        let (key, mut node) = entry?;
        let NodeKind::Episode(e) = &mut node.kind else {
            continue;
        };
        if fill(&mut e.user, &mut e.machine, identity) {
            writes.put(Keyspace::Nodes, key, &node)?;
            episodes += 1;
        }
    }
    let mut handoffs = 0;
    for entry in store.scan::<Handoff>(Keyspace::Docs, &[HANDOFF_PREFIX]) {
        let (key, mut h) = entry?;
        if fill(&mut h.user, &mut h.machine, identity) {
            writes.put(Keyspace::Docs, key, &h)?;
            handoffs += 1;
        }
    }
    writes
        .batch
        .put(Keyspace::Settings, ATTRIBUTED.to_vec(), &true)?;
    store.apply(writes.batch)?;
    Ok((episodes, handoffs))
}

/// Sets an empty user or machine to `identity`'s; whether either was empty.
fn fill(user: &mut String, machine: &mut String, identity: &Identity) -> bool {
    let empty = user.is_empty() || machine.is_empty();
    if user.is_empty() {
        user.clone_from(&identity.user);
    }
    if machine.is_empty() {
        machine.clone_from(&identity.machine);
    }
    empty
}

/// A batch applied every [`ATTRIBUTE_BATCH`] writes.
struct Writes<'a> {
    store: &'a Store,
    batch: Batch,
    pending: usize,
}

impl Writes<'_> {
    fn put<V: serde::Serialize>(
        &mut self,
        keyspace: Keyspace,
        key: Vec<u8>,
        value: &V,
    ) -> Result<()> {
        self.batch.put(keyspace, key, value)?;
        self.pending += 1;
        if self.pending == ATTRIBUTE_BATCH {
            self.store.apply(std::mem::take(&mut self.batch))?;
            self.pending = 0;
        }
        Ok(())
    }
}

/// Sets `flag` in the settings keyspace.
fn mark(store: &Store, flag: &[u8]) -> Result<()> {
    let mut batch = Batch::new();
    batch.put(Keyspace::Settings, flag.to_vec(), &true)?;
    Ok(store.apply(batch)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Episode, NodeId};

    fn episode(session: &str, user: &str, machine: &str) -> Node {
        let mut e: Episode = serde_json::from_value(serde_json::json!({
            "session_id": session, "short_id": &session[..8], "source_path": "", "project": "shop",
            "project_path": "/w/shop", "cwd": "/w/shop", "start": 0, "end": 0,
            "user_messages": 1, "assistant_messages": 1, "prompts": 1, "tool_calls": 0,
            "title": "t", "substance": 1,
        }))
        .unwrap();
        e.user = user.to_owned();
        e.machine = machine.to_owned();
        Node::from_episode(NodeId::episode(session), "t".into(), e)
    }

    fn handoff(session: &str) -> Handoff {
        Handoff {
            session_id: session.to_owned(),
            short_id: session[..8].to_owned(),
            episode: NodeId::episode(session),
            date: chrono::NaiveDate::from_ymd_opt(2026, 2, 16).unwrap(),
            started_at: crate::model::Timestamp(0),
            duration_minutes: None,
            model: None,
            headline: "h".into(),
            projects: vec!["shop".into()],
            keywords: Vec::new(),
            substance: 1,
            cwd: String::new(),
            sections: Default::default(),
            user: String::new(),
            machine: String::new(),
        }
    }

    fn who(store: &Store, key: &[u8]) -> (String, String) {
        let node: Node = store.get(Keyspace::Nodes, key).unwrap().unwrap();
        let e = node.episode().unwrap();
        (e.user.clone(), e.machine.clone())
    }

    /// A store from before attribution: its episodes get this machine's identity once,
    /// keeping any part an episode already has; a second open changes nothing.
    #[test]
    fn sessions_written_before_attribution_are_attributed_once() {
        let store = eywa_storage::Config::new().temporary(true).open().unwrap();
        let mut batch = Batch::new();
        batch
            .put(
                Keyspace::Nodes,
                b"a".to_vec(),
                &episode("aaaaaaaa-1", "", ""),
            )
            .unwrap();
        batch
            .put(
                Keyspace::Nodes,
                b"b".to_vec(),
                &episode("bbbbbbbb-2", "bo", ""),
            )
            .unwrap();
        batch
            .put(
                Keyspace::Nodes,
                b"c".to_vec(),
                &episode("cccccccc-3", "cy", "desk"),
            )
            .unwrap();
        let handoff_key = [HANDOFF_PREFIX, b'a'].to_vec();
        batch
            .put(Keyspace::Docs, handoff_key.clone(), &handoff("aaaaaaaa-1"))
            .unwrap();
        store.apply(batch).unwrap();
        let here = Identity::new("ana", "laptop").unwrap();

        assert_eq!(attribute_once(&store, &here).unwrap(), (2, 1));
        assert_eq!(who(&store, b"a"), ("ana".into(), "laptop".into()));
        assert_eq!(who(&store, b"b"), ("bo".into(), "laptop".into()));
        assert_eq!(who(&store, b"c"), ("cy".into(), "desk".into()));
        let h: Handoff = store.get(Keyspace::Docs, &handoff_key).unwrap().unwrap();
        assert_eq!((h.user.as_str(), h.machine.as_str()), ("ana", "laptop"));

        let elsewhere = Identity::new("dee", "tower").unwrap();
        batch = Batch::new();
        batch
            .put(
                Keyspace::Nodes,
                b"d".to_vec(),
                &episode("dddddddd-4", "", ""),
            )
            .unwrap();
        store.apply(batch).unwrap();
        assert_eq!(
            attribute_once(&store, &elsewhere).unwrap(),
            (0, 0),
            "marked done"
        );
        assert_eq!(who(&store, b"a"), ("ana".into(), "laptop".into()));
    }
}
