//! Moves a store of layouts 1 to 3, whose warm tier was a sled database in `warm/`, into
//! the fjall keyspace of layout 4: every tree of [`Keyspace::ALL`] copied as it is.

use std::path::Path;

use fjall::{PartitionCreateOptions, PersistMode};

use super::{KEYSPACES_DIR, private_files};
use crate::{Error, Keyspace, Result};

/// Where sled kept the warm tier before layout 4.
const SLED_DIR: &str = "warm";
/// The keyspace being filled from sled: renamed to `keyspaces/` once whole.
pub(super) const PARTIAL_DIR: &str = "keyspaces.partial";
/// Entries per batch of the copy.
const COPY_BATCH: usize = 10_000;

/// What a move from sled copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moved {
    /// Keys copied, every keyspace together.
    pub entries: u64,
    pub elapsed: std::time::Duration,
}

/// Copies a sled warm tier into a new fjall keyspace, if the store has one and no keyspace
/// yet; `Some` when this call copied it. The copy is built beside and renamed into place when whole, and sled's directory
/// is removed only after that, so a crash at any point leaves either the old store or the
/// new one, and the next open finishes the move. Called with the store's lock held.
pub(super) fn from_sled(store: &Path) -> Result<Option<Moved>> {
    let sled_dir = store.join(SLED_DIR);
    let done = store.join(KEYSPACES_DIR);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    if !sled_dir.join("db").exists() && !sled_dir.join("conf").exists() {
        return Ok(None);
    }
    let mut moved = None;
    if !done.exists() {
        let started = std::time::Instant::now();
        let partial = store.join(PARTIAL_DIR);
        if partial.exists() {
            std::fs::remove_dir_all(&partial).map_err(io(&partial))?;
        }
        let entries = copy(&sled_dir, &partial)?;
        std::fs::rename(&partial, &done).map_err(io(&done))?;
        moved = Some(Moved {
            entries,
            elapsed: started.elapsed(),
        });
    }
    std::fs::remove_dir_all(&sled_dir).map_err(io(&sled_dir))?;
    Ok(moved)
}

/// Returns the keys copied.
fn copy(sled_dir: &Path, to: &Path) -> Result<u64> {
    let db = sled::Config::new().path(sled_dir).open()?;
    let keyspace = fjall::Config::new(to).open()?;
    let mut entries = 0;
    for name in Keyspace::ALL.iter().map(|ks| ks.name()) {
        if !db
            .tree_names()
            .iter()
            .any(|n| n.as_ref() == name.as_bytes())
        {
            continue;
        }
        let tree = db.open_tree(name)?;
        let partition = keyspace.open_partition(name, PartitionCreateOptions::default())?;
        let mut batch = keyspace.batch();
        let mut held = 0;
        for entry in tree.iter() {
            let (key, value) = entry?;
            batch.insert(&partition, key.to_vec(), value.to_vec());
            held += 1;
            entries += 1;
            if held == COPY_BATCH {
                std::mem::replace(&mut batch, keyspace.batch()).commit()?;
                held = 0;
            }
        }
        batch.commit()?;
    }
    keyspace.persist(PersistMode::SyncAll)?;
    drop(keyspace);
    drop(db);
    private_files(to)?;
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    /// A store of layout 3 (sled in `warm/`) opens with every entry, and sled's directory
    /// is gone.
    #[test]
    fn a_sled_store_moves_into_the_keyspace_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store_dir = dir.path().join("store");
        {
            let db = sled::Config::new()
                .path(store_dir.join(SLED_DIR))
                .open()
                .unwrap();
            let settings = db.open_tree(Keyspace::Settings.name()).unwrap();
            let version = crate::codec::encode(Keyspace::Settings, &3u32).unwrap();
            settings.insert(super::super::FORMAT_KEY, version).unwrap();
            let nodes = db.open_tree(Keyspace::Nodes.name()).unwrap();
            for i in 0..25_000u32 {
                nodes
                    .insert(i.to_be_bytes(), format!("node {i}").into_bytes())
                    .unwrap();
            }
            // A tree of an older layout is left behind.
            db.open_tree("edges_by_relation")
                .unwrap()
                .insert(b"k", b"v".as_slice())
                .unwrap();
            db.flush().unwrap();
        }
        let store = Config::new().path(&store_dir).open().unwrap();
        let moved = store.moved_from_sled().expect("this open moved the store");
        assert_eq!(moved.entries, 25_001, "the nodes and the format record");
        assert_eq!(store.len(Keyspace::Nodes).unwrap(), 25_000);
        assert_eq!(
            store
                .get_raw(Keyspace::Nodes, &24_999u32.to_be_bytes())
                .unwrap(),
            Some(b"node 24999".to_vec())
        );
        let version: u32 = store
            .get(Keyspace::Settings, super::super::FORMAT_KEY)
            .unwrap()
            .unwrap();
        assert_eq!(version, super::super::FORMAT_VERSION);
        assert!(!store_dir.join(SLED_DIR).exists());
        assert!(!store_dir.join(PARTIAL_DIR).exists());
        drop(store);
        // Opened again, nothing moves twice.
        let store = Config::new().path(&store_dir).open().unwrap();
        assert_eq!(store.moved_from_sled(), None);
        assert_eq!(store.len(Keyspace::Nodes).unwrap(), 25_000);
    }

    /// A copy cut short is thrown away and made again; one renamed into place before the
    /// crash only has sled's directory left to remove.
    #[test]
    fn a_move_cut_short_is_finished_by_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let store_dir = dir.path().join("store");
        {
            let db = sled::Config::new()
                .path(store_dir.join(SLED_DIR))
                .open()
                .unwrap();
            let settings = db.open_tree(Keyspace::Settings.name()).unwrap();
            let version = crate::codec::encode(Keyspace::Settings, &3u32).unwrap();
            settings.insert(super::super::FORMAT_KEY, version).unwrap();
            db.open_tree(Keyspace::Docs.name())
                .unwrap()
                .insert(b"d", b"doc".as_slice())
                .unwrap();
            db.flush().unwrap();
        }
        // A partial copy holding a stray entry.
        {
            let partial = fjall::Config::new(store_dir.join(PARTIAL_DIR))
                .open()
                .unwrap();
            let docs = partial
                .open_partition(Keyspace::Docs.name(), PartitionCreateOptions::default())
                .unwrap();
            docs.insert(b"stray", b"x").unwrap();
            partial.persist(PersistMode::SyncAll).unwrap();
        }
        let store = Config::new().path(&store_dir).open().unwrap();
        assert_eq!(
            store.get_raw(Keyspace::Docs, b"d").unwrap(),
            Some(b"doc".to_vec())
        );
        assert_eq!(store.get_raw(Keyspace::Docs, b"stray").unwrap(), None);
        assert!(!store_dir.join(SLED_DIR).exists());
    }
}
