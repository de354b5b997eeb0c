//! Random puts, deletes, scans and restarts, applied to a store on disk and to a
//! `BTreeMap` model: after every operation the store must read exactly like the model.

use std::collections::BTreeMap;
use std::path::Path;

use eywa_storage::{Batch, Config, Keyspace, Store};
use proptest::prelude::*;

const KEYSPACES: [Keyspace; 3] = [Keyspace::Nodes, Keyspace::Docs, Keyspace::Sources];

type Model = BTreeMap<(usize, Vec<u8>), String>;

#[derive(Debug, Clone)]
enum Op {
    Put {
        keyspace: usize,
        key: Vec<u8>,
        value: String,
    },
    Delete {
        keyspace: usize,
        key: Vec<u8>,
    },
    Scan {
        keyspace: usize,
        prefix: Vec<u8>,
    },
    Restart,
}

/// Keys of `min_len` to `max_len` bytes over a four-letter alphabet (with 0x00 and 0xFF,
/// the edges of byte order), so that ops often hit the same keys and prefixes. A key is at
/// least one byte (an empty one is refused); a scan's prefix may be empty.
fn key(min_len: usize, max_len: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(vec![0x00u8, b'a', b'b', 0xFF]),
        min_len..=max_len,
    )
}

fn op() -> impl Strategy<Value = Op> {
    let keyspace = 0..KEYSPACES.len();
    prop_oneof![
        6 => (keyspace.clone(), key(1, 3), "[a-z]{0,6}")
            .prop_map(|(keyspace, key, value)| Op::Put { keyspace, key, value }),
        3 => (keyspace.clone(), key(1, 3)).prop_map(|(keyspace, key)| Op::Delete { keyspace, key }),
        2 => (keyspace, key(0, 2)).prop_map(|(keyspace, prefix)| Op::Scan { keyspace, prefix }),
        1 => Just(Op::Restart),
    ]
}

fn open(path: &Path) -> Store {
    Config::new().path(path).open().expect("the store opens")
}

fn scan_store(store: &Store, keyspace: usize, prefix: &[u8]) -> Vec<(Vec<u8>, String)> {
    store
        .scan::<String>(KEYSPACES[keyspace], prefix)
        .collect::<Result<_, _>>()
        .expect("the scan reads")
}

fn scan_model(model: &Model, keyspace: usize, prefix: &[u8]) -> Vec<(Vec<u8>, String)> {
    model
        .iter()
        .filter(|((ks, key), _)| *ks == keyspace && key.starts_with(prefix))
        .map(|((_, key), value)| (key.clone(), value.clone()))
        .collect()
}

/// Every keyspace scans like the model, and every key the model has (or just lost) reads
/// like it too.
fn check_all(
    store: &Store,
    model: &Model,
    touched: Option<(usize, &[u8])>,
) -> Result<(), TestCaseError> {
    for keyspace in 0..KEYSPACES.len() {
        prop_assert_eq!(
            scan_store(store, keyspace, &[]),
            scan_model(model, keyspace, &[])
        );
    }
    let touched = touched.map(|(ks, key)| (ks, key.to_vec()));
    for (keyspace, key) in model.keys().cloned().chain(touched) {
        let got: Option<String> = store.get(KEYSPACES[keyspace], &key).expect("the get reads");
        prop_assert_eq!(
            got.as_ref(),
            model.get(&(keyspace, key.clone())),
            "key {:?}",
            key
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_store_reads_like_a_btreemap_across_restarts(ops in prop::collection::vec(op(), 0..60)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        let mut store = open(&path);
        let mut model = Model::new();
        for op in ops {
            match op {
                Op::Put { keyspace, key, value } => {
                    let mut batch = Batch::new();
                    batch.put(KEYSPACES[keyspace], key.clone(), &value).unwrap();
                    store.apply(batch).unwrap();
                    model.insert((keyspace, key.clone()), value);
                    check_all(&store, &model, Some((keyspace, &key)))?;
                }
                Op::Delete { keyspace, key } => {
                    let mut batch = Batch::new();
                    batch.delete(KEYSPACES[keyspace], key.clone());
                    store.apply(batch).unwrap();
                    model.remove(&(keyspace, key.clone()));
                    check_all(&store, &model, Some((keyspace, &key)))?;
                }
                Op::Scan { keyspace, prefix } => {
                    prop_assert_eq!(
                        scan_store(&store, keyspace, &prefix),
                        scan_model(&model, keyspace, &prefix),
                        "prefix {:?}", prefix
                    );
                }
                Op::Restart => {
                    store.flush().unwrap();
                    drop(store);
                    store = open(&path);
                    check_all(&store, &model, None)?;
                }
            }
        }
    }
}
