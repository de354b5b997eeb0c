//! Moves a store of layouts 1 to 3, whose warm tier was a sled database in `warm/`, into
//! the fjall keyspace of layout 4: every tree of [`Keyspace::ALL`] copied as it is.

use std::path::Path;

use super::{KEYSPACES_DIR, build_keyspace, copy_entries};
use crate::{Config, Error, Keyspace, Result};

/// Where sled kept the warm tier before layout 4.
const SLED_DIR: &str = "warm";

/// What a move from sled copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moved {
    /// Keys copied, every keyspace together.
    pub entries: u64,
    /// How long the move took, from opening sled to the new keyspace renamed into place.
    pub elapsed: std::time::Duration,
}

/// Copies a sled warm tier into a new fjall keyspace, if the store has one and no keyspace
/// yet; `Some` when this call copied it. The keyspace is built beside its place and
/// renamed in when whole ([`build_keyspace`]), and sled's directory is removed only after
/// that, so a crash at any point leaves either the old store or the new one, and the next
/// open finishes the move. Called with the store's lock held.
pub(super) fn from_sled(store: &Path, config: &Config) -> Result<Option<Moved>> {
    let sled_dir = store.join(SLED_DIR);
    if !sled_dir.join("db").exists() && !sled_dir.join("conf").exists() {
        return Ok(None);
    }
    let mut moved = None;
    if !store.join(KEYSPACES_DIR).exists() {
        let started = std::time::Instant::now();
        let db = sled::Config::new().path(&sled_dir).open()?;
        let mut entries = 0;
        build_keyspace(store, config, |keyspace, partitions| {
            for (ks, partition) in Keyspace::ALL.iter().zip(partitions) {
                if !db
                    .tree_names()
                    .iter()
                    .any(|n| n.as_ref() == ks.name().as_bytes())
                {
                    continue;
                }
                let tree = db.open_tree(ks.name())?;
                let pairs = tree.iter().map(|entry| {
                    let (key, value) = entry?;
                    Ok((key.to_vec(), value.to_vec()))
                });
                entries += copy_entries(keyspace, partition, pairs)?;
            }
            Ok(())
        })?;
        moved = Some(Moved {
            entries,
            elapsed: started.elapsed(),
        });
    }
    std::fs::remove_dir_all(&sled_dir).map_err(|source| Error::Io {
        path: sled_dir.clone(),
        source,
    })?;
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use fjall::{PartitionCreateOptions, PersistMode};

    use super::super::NEW_KEYSPACES_DIR;
    use super::*;

    /// A sled store of layout 3 in `store_dir`, its format record written, its trees
    /// filled by `fill`.
    fn sled_store(store_dir: &Path, fill: impl FnOnce(&sled::Db)) {
        let db = sled::Config::new()
            .path(store_dir.join(SLED_DIR))
            .open()
            .unwrap();
        let settings = db.open_tree(Keyspace::Settings.name()).unwrap();
        let version = crate::codec::encode(Keyspace::Settings, &3u32).unwrap();
        settings.insert(super::super::FORMAT_KEY, version).unwrap();
        fill(&db);
        db.flush().unwrap();
    }

    /// A store of layout 3 (sled in `warm/`) opens with every entry, and sled's directory
    /// is gone.
    #[test]
    fn a_sled_store_moves_into_the_keyspace_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store_dir = dir.path().join("store");
        sled_store(&store_dir, |db| {
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
        });
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
        assert!(!store_dir.join(NEW_KEYSPACES_DIR).exists());
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
        sled_store(&store_dir, |db| {
            db.open_tree(Keyspace::Docs.name())
                .unwrap()
                .insert(b"d", b"doc".as_slice())
                .unwrap();
        });
        // A partial copy holding a stray entry.
        {
            let partial = fjall::Config::new(store_dir.join(NEW_KEYSPACES_DIR))
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
