use super::*;

fn put(store: &Store, ks: Keyspace, key: &[u8], value: &str) {
    let mut batch = Batch::new();
    batch.put(ks, key.to_vec(), value).unwrap();
    store.apply(batch).unwrap();
}

#[test]
fn values_round_trip_and_missing_keys_are_none() {
    let store = Config::new().temporary(true).open().unwrap();
    put(&store, Keyspace::Nodes, b"k1", "v1");
    assert_eq!(
        store
            .get::<String>(Keyspace::Nodes, b"k1")
            .unwrap()
            .as_deref(),
        Some("v1")
    );
    assert_eq!(store.get::<String>(Keyspace::Nodes, b"nope").unwrap(), None);
    // Keyspaces are separate trees.
    assert_eq!(store.get::<String>(Keyspace::Edges, b"k1").unwrap(), None);
}

#[test]
fn a_batch_spans_keyspaces_and_deletes() {
    let store = Config::new().temporary(true).open().unwrap();
    let mut batch = Batch::new();
    batch.put(Keyspace::Nodes, b"n".to_vec(), "node").unwrap();
    batch.put_raw(Keyspace::NodesByName, b"idx".to_vec(), Vec::new());
    store.apply(batch).unwrap();
    assert!(store.contains(Keyspace::NodesByName, b"idx").unwrap());

    let mut batch = Batch::new();
    batch.delete(Keyspace::Nodes, b"n".to_vec());
    batch.delete(Keyspace::NodesByName, b"idx".to_vec());
    store.apply(batch).unwrap();
    assert!(store.is_empty(Keyspace::Nodes));
    assert!(store.is_empty(Keyspace::NodesByName));
}

#[test]
fn scans_are_in_key_order_within_the_prefix() {
    let store = Config::new().temporary(true).open().unwrap();
    for key in [&b"b2"[..], b"a1", b"b1", b"c1"] {
        put(
            &store,
            Keyspace::Docs,
            key,
            std::str::from_utf8(key).unwrap(),
        );
    }
    let got: Vec<String> = store
        .scan::<String>(Keyspace::Docs, b"b")
        .map(|r| r.unwrap().1)
        .collect();
    assert_eq!(got, ["b1", "b2"]);
    let keys: Vec<Vec<u8>> = store
        .key_range(Keyspace::Docs, b"a", b"b2")
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(keys, [b"a1".to_vec(), b"b1".to_vec()]);
}

#[test]
fn data_survives_reopen_and_a_second_open_is_refused_while_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    {
        let store = Config::new().path(&path).open().unwrap();
        put(&store, Keyspace::Settings, b"x", "kept");
        store.flush().unwrap();
        let err = Config::new()
            .path(&path)
            .lock_wait_ms(50)
            .open()
            .unwrap_err();
        assert!(matches!(err, Error::Locked { .. }), "{err:?}");
    }
    let store = Config::new().path(&path).open().unwrap();
    assert_eq!(
        store
            .get::<String>(Keyspace::Settings, b"x")
            .unwrap()
            .as_deref(),
        Some("kept")
    );
}

#[test]
fn opening_waits_for_a_store_that_is_being_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let first = Config::new().path(&path).open().unwrap();
    let closer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(first);
    });
    let err = Config::new()
        .path(&path)
        .lock_wait_ms(0)
        .open()
        .unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err:?}");
    let second = Config::new().path(&path).lock_wait_ms(10_000).open();
    closer.join().unwrap();
    assert!(second.is_ok(), "{:?}", second.err());
}

#[cfg(unix)]
#[test]
fn the_store_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Config::new().path(&path).open().unwrap();
    put(&store, Keyspace::Nodes, b"n", "node");
    store.flush().unwrap();
    for dir in [path.clone(), path.join("keyspaces"), path.join("cold")] {
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", dir.display());
    }
    let lock = std::fs::metadata(path.join("lock"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(lock, 0o600);
}

#[test]
fn the_warm_tier_lives_in_keyspaces_and_blobs_in_cold() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Config::new().path(&path).open().unwrap();
    let info = store.blobs().put_bytes(b"cold bytes").unwrap();
    store.flush().unwrap();
    assert!(
        path.join("keyspaces/partitions/nodes").is_dir(),
        "each keyspace is a partition in keyspaces/"
    );
    assert_eq!(store.blobs().path(), path.join("cold"));
    let blob = path
        .join("cold")
        .join(&info.hash[..2])
        .join(format!("{}.zst", &info.hash[2..]));
    assert!(blob.is_file(), "{}", blob.display());
    let mut top: Vec<_> = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    top.sort();
    assert_eq!(top, ["cold", "keyspaces", "lock"]);
}

#[test]
fn a_warm_tier_whose_creation_was_cut_short_is_laid_out_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    {
        let store = Config::new().path(&path).open().unwrap();
        put(&store, Keyspace::Settings, b"x", "written");
        store.flush().unwrap();
    }
    assert!(
        !path.join("keyspaces.creating").exists(),
        "a whole warm tier carries no mark"
    );
    // Killed while fjall laid it out: the mark is there, and what is in the keyspace is
    // not to be trusted (here, a file fjall cannot read).
    std::fs::write(path.join("keyspaces.creating"), b"").unwrap();
    std::fs::write(path.join("keyspaces/version"), b"garbage").unwrap();
    let store = Config::new().path(&path).open().unwrap();
    assert_eq!(store.get::<String>(Keyspace::Settings, b"x").unwrap(), None);
    put(&store, Keyspace::Settings, b"y", "after");
    store.flush().unwrap();
    drop(store);
    assert!(!path.join("keyspaces.creating").exists());
    let store = Config::new().path(&path).open().unwrap();
    assert_eq!(
        store
            .get::<String>(Keyspace::Settings, b"y")
            .unwrap()
            .as_deref(),
        Some("after")
    );
}

#[test]
fn a_temporary_store_has_the_same_layout() {
    let store = Config::new().temporary(true).open().unwrap();
    assert!(store.path().join("keyspaces").is_dir());
    assert!(store.path().join("cold/tmp").is_dir());
    assert_eq!(store.blobs().path(), store.path().join("cold"));
}

#[test]
fn keyspace_names_are_pinned_and_distinct() {
    // Tree names are on-disk layout: renaming one orphans its data.
    let names: Vec<&str> = Keyspace::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(
        names,
        [
            "nodes",
            "edges",
            "docs",
            "chunks",
            "memories",
            "settings",
            "edges_by_src",
            "edges_by_dst",
            "nodes_by_name",
            "episodes_by_time",
            "sources",
            "blobs",
            "messages",
            "embeddings",
            "vectors",
            "embed_queue",
            "vectors_by_source",
            "sessions_by_activity",
        ]
    );
    for (i, keyspace) in Keyspace::ALL.iter().enumerate() {
        assert_eq!(keyspace.index(), i);
    }
}

#[test]
fn a_guarded_batch_applies_only_while_the_value_is_unchanged() {
    let store = Config::new().temporary(true).open().unwrap();
    let mut batch = Batch::new();
    batch.put_raw(Keyspace::Docs, b"other".to_vec(), b"written".to_vec());
    // Expecting the key to be absent.
    assert!(
        store
            .apply_if_unchanged(&batch, Keyspace::Nodes, b"k", None)
            .unwrap()
    );
    put(&store, Keyspace::Nodes, b"k", "v");
    let mut batch = Batch::new();
    batch.delete(Keyspace::Docs, b"other".to_vec());
    assert!(
        !store
            .apply_if_unchanged(&batch, Keyspace::Nodes, b"k", None)
            .unwrap()
    );
    assert!(
        store.contains(Keyspace::Docs, b"other").unwrap(),
        "nothing was written"
    );
    let current = store.get_raw(Keyspace::Nodes, b"k").unwrap().unwrap();
    assert!(
        store
            .apply_if_unchanged(&batch, Keyspace::Nodes, b"k", Some(&current))
            .unwrap()
    );
    assert!(!store.contains(Keyspace::Docs, b"other").unwrap());
}

#[test]
fn a_newer_format_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    {
        let store = Config::new().path(&path).open().unwrap();
        let mut batch = Batch::new();
        batch
            .put(
                Keyspace::Settings,
                FORMAT_KEY.to_vec(),
                &(FORMAT_VERSION + 1),
            )
            .unwrap();
        store.apply(batch).unwrap();
        store.flush().unwrap();
    }
    let err = Config::new().path(&path).open().unwrap_err();
    assert!(
        matches!(err, Error::NewerFormat { found, supported } if found == FORMAT_VERSION + 1 && supported == FORMAT_VERSION),
        "{err:?}"
    );
    assert!(err.to_string().contains("upgrade eywa"), "{err}");
}

/// A layout-1 store (sled in `warm/`, named values, an `edges_by_relation` tree) opens
/// as this layout: its values read as they are and the retired tree is gone.
#[test]
fn a_layout_1_store_is_upgraded_on_open() {
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Value {
        name: String,
        count: u32,
    }
    let value = Value {
        name: "kept".into(),
        count: 3,
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    {
        let db = sled::Config::new().path(path.join("warm")).open().unwrap();
        let old = db.open_tree("edges_by_relation").unwrap();
        old.insert(b"\x01edge", b"").unwrap();
        db.open_tree(Keyspace::Settings.name())
            .unwrap()
            .insert(FORMAT_KEY, rmp_serde::to_vec_named(&1u32).unwrap())
            .unwrap();
        db.open_tree(Keyspace::Nodes.name())
            .unwrap()
            .insert(b"n", rmp_serde::to_vec_named(&value).unwrap())
            .unwrap();
        db.flush().unwrap();
    }
    let store = Config::new().path(&path).open().unwrap();
    let read: Option<Value> = store.get(Keyspace::Nodes, b"n").unwrap();
    assert_eq!(read, Some(value));
    assert!(
        !store
            .warm
            .keyspace
            .list_partitions()
            .iter()
            .any(|t| t.as_ref() == "edges_by_relation")
    );
    let version: Option<u32> = store.get(Keyspace::Settings, FORMAT_KEY).unwrap();
    assert_eq!(version, Some(FORMAT_VERSION));
}

#[test]
fn data_without_a_format_record_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    {
        let store = Config::new().path(&path).open().unwrap();
        put(&store, Keyspace::Nodes, b"n", "node");
        let mut batch = Batch::new();
        batch.delete(Keyspace::Settings, FORMAT_KEY.to_vec());
        store.apply(batch).unwrap();
        store.flush().unwrap();
    }
    let err = Config::new().path(&path).open().unwrap_err();
    assert!(matches!(err, Error::MissingFormat), "{err:?}");
}

#[test]
fn a_temporary_store_removes_its_directory_on_drop() {
    let store = Config::new().temporary(true).open().unwrap();
    let path = store.path().to_path_buf();
    assert!(path.exists());
    drop(store);
    assert!(!path.exists());
}

#[test]
fn an_empty_or_oversized_key_is_refused_and_nothing_is_written() {
    let store = Config::new().temporary(true).open().unwrap();
    for key in [Vec::new(), vec![b'k'; 65_536], vec![b'k'; 70_000]] {
        let mut batch = Batch::new();
        batch.put(Keyspace::Docs, b"fine".to_vec(), &"v").unwrap();
        batch.put(Keyspace::Nodes, key.clone(), &"v").unwrap();
        let err = store.apply(batch).unwrap_err();
        assert!(
            matches!(err, Error::KeyLength { keyspace: "nodes", len } if len == key.len()),
            "{err:?}"
        );
        assert!(!store.contains(Keyspace::Docs, b"fine").unwrap());
    }
}

#[test]
fn reads_of_keys_too_long_to_store_find_nothing() {
    let store = Config::new().temporary(true).open().unwrap();
    let mut batch = Batch::new();
    let longest = vec![b'k'; 65_535];
    batch.put(Keyspace::Nodes, longest.clone(), &"v").unwrap();
    store.apply(batch).unwrap();
    assert_eq!(
        store.get::<String>(Keyspace::Nodes, &longest).unwrap(),
        Some("v".to_owned())
    );
    for key in [vec![b'k'; 65_536], vec![b'k'; 70_000]] {
        assert_eq!(store.get::<String>(Keyspace::Nodes, &key).unwrap(), None);
        assert_eq!(store.get_raw(Keyspace::Nodes, &key).unwrap(), None);
        assert!(!store.contains(Keyspace::Nodes, &key).unwrap());
        assert_eq!(store.scan::<String>(Keyspace::Nodes, &key).count(), 0);
        assert_eq!(store.keys(Keyspace::Nodes, &key).count(), 0);
        assert_eq!(store.entries(Keyspace::Nodes, &key).rev().count(), 0);
        assert_eq!(store.key_range(Keyspace::Nodes, b"a", &key).count(), 0);
    }
    assert_eq!(store.get::<String>(Keyspace::Nodes, b"").unwrap(), None);
    assert_eq!(store.keys(Keyspace::Nodes, b"k").count(), 1);
}
