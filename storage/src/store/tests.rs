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
        let err = Config::new().path(&path).open().unwrap_err();
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

#[cfg(unix)]
#[test]
fn the_store_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let _store = Config::new().path(&path).open().unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
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
