//! What the first open of a store written by an earlier eywa does once, each step marked
//! done in the settings keyspace: its files made private, its text index marked for a
//! rebuild that fills what earlier layouts lacked, and whether its secrets still need a
//! scrub ([`needs_scrub`]; the scrub itself is [`super::Writer::scrub_store`]).

use std::path::Path;

use eywa_storage::{Batch, Keyspace, Store};

use super::{SCRUBBED, TEXT_DIRTY};
use crate::Result;

/// Set once every file under the data dir has been made private.
const PRIVATE_FILES: &[u8] = b"private_files";
/// Set once a store's chunks are known to be listed in semantic memory.
const CHUNKS_LISTED: &[u8] = b"chunks_listed";
/// Set once a store's text index holds every file's labels and index-only sessions.
const LABELS_INDEXED: &[u8] = b"labels_indexed";
/// Set once a store's chunks are known to have their records (`semantic/chunks.rs`).
const CHUNKS_RECORDED: &[u8] = b"chunks_recorded";

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

/// Sets `flag` in the settings keyspace.
fn mark(store: &Store, flag: &[u8]) -> Result<()> {
    let mut batch = Batch::new();
    batch.put(Keyspace::Settings, flag.to_vec(), &true)?;
    Ok(store.apply(batch)?)
}
