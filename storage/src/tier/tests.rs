use super::*;
use crate::Config;

const MINUTE: i64 = 60 * 1000;
const HOUR: i64 = 60 * MINUTE;

fn put_chunk(store: &Store, key: &[u8], bytes: &[u8], now_ms: i64) {
    let mut batch = Batch::new();
    batch.put_chunk(key.to_vec(), bytes, now_ms).unwrap();
    store.apply(batch).unwrap();
}

fn slot(store: &Store, key: &[u8]) -> ChunkSlot {
    store
        .get::<ChunkSlot>(Keyspace::Chunks, key)
        .unwrap()
        .expect("the chunk exists")
}

fn text(seed: &str, lines: usize) -> Vec<u8> {
    (0..lines)
        .map(|i| format!("{seed} line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect::<String>()
        .into_bytes()
}

#[test]
fn a_chunk_reads_back_and_a_missing_one_is_none() {
    let store = Config::new().temporary(true).open().unwrap();
    put_chunk(&store, b"c1", b"hello", 0);
    assert_eq!(
        store.get_chunk(b"c1", 0).unwrap().as_deref(),
        Some(&b"hello"[..])
    );
    assert_eq!(store.get_chunk(b"nope", 0).unwrap(), None);
    assert_eq!(
        slot(&store, b"c1"),
        ChunkSlot::Warm {
            bytes: b"hello".to_vec(),
            last_access: 0
        }
    );
}

#[test]
fn warm_bytes_are_encoded_as_one_byte_per_byte() {
    let bytes = vec![0xFF; 1000];
    let encoded = encode_warm(&bytes, 0).unwrap();
    assert!(encoded.len() < 1050, "{} bytes", encoded.len());
    let decoded: ChunkSlot = codec::decode(Keyspace::Chunks, &encoded).unwrap();
    assert_eq!(
        decoded,
        ChunkSlot::Warm {
            bytes,
            last_access: 0
        }
    );
}

#[test]
fn a_sweep_moves_only_idle_chunks() {
    let store = Config::new().temporary(true).open().unwrap();
    let (a, b, c) = (text("a", 50), text("b", 70), text("c", 30));
    put_chunk(&store, b"a", &a, 0);
    put_chunk(&store, b"b", &b, 10 * MINUTE);
    put_chunk(&store, b"c", &c, 50 * MINUTE);

    let report = store.sweep_chunks(30 * MINUTE, 60 * MINUTE).unwrap();
    assert_eq!(
        report,
        SweepReport {
            moved: 2,
            bytes: (a.len() + b.len()) as u64
        }
    );
    for (key, bytes, last_access) in [(&b"a"[..], &a, 0), (b"b", &b, 10 * MINUTE)] {
        let ChunkSlot::Cold {
            hash,
            raw_len,
            last_access: kept,
        } = slot(&store, key)
        else {
            panic!("{key:?} should be cold");
        };
        assert_eq!((raw_len, kept), (bytes.len() as u64, last_access));
        assert_eq!(store.blobs().read(&hash).unwrap().as_ref(), Some(bytes));
        let info = store
            .blob_info(&hash)
            .unwrap()
            .expect("the blob is recorded");
        assert_eq!(info.raw_len, bytes.len() as u64);
    }
    assert!(matches!(slot(&store, b"c"), ChunkSlot::Warm { .. }));
    assert!(store.orphan_blobs().unwrap().is_empty());
}

#[test]
fn reading_a_cold_chunk_brings_it_back_warm_with_the_same_bytes() {
    let store = Config::new().temporary(true).open().unwrap();
    let bytes = text("x", 200);
    put_chunk(&store, b"x", &bytes, 0);
    store.sweep_chunks(HOUR, 2 * HOUR).unwrap();
    assert!(matches!(slot(&store, b"x"), ChunkSlot::Cold { .. }));

    let now = 3 * HOUR;
    assert_eq!(store.get_chunk(b"x", now).unwrap(), Some(bytes.clone()));
    assert_eq!(
        slot(&store, b"x"),
        ChunkSlot::Warm {
            bytes,
            last_access: now
        }
    );
}

#[test]
fn a_warm_read_refreshes_last_access_only_when_it_is_over_an_hour_old() {
    let store = Config::new().temporary(true).open().unwrap();
    put_chunk(&store, b"k", b"v", 0);
    store.get_chunk(b"k", 30 * MINUTE).unwrap();
    assert_eq!(slot(&store, b"k").last_access(), 0);
    store.get_chunk(b"k", 2 * HOUR).unwrap();
    assert_eq!(slot(&store, b"k").last_access(), 2 * HOUR);
}

#[test]
fn sweeping_again_moves_nothing() {
    let store = Config::new().temporary(true).open().unwrap();
    for i in 0..5u8 {
        put_chunk(&store, &[i], &text(&i.to_string(), 20), 0);
    }
    assert_eq!(store.sweep_chunks(MINUTE, HOUR).unwrap().moved, 5);
    let before = store.tier_stats().unwrap();
    let files = store.blobs().list().unwrap();
    assert_eq!(
        store.sweep_chunks(MINUTE, HOUR).unwrap(),
        SweepReport::default()
    );
    let after = store.tier_stats().unwrap();
    assert_eq!(
        (after.cold_chunks, after.blobs, after.blob_stored_bytes),
        (before.cold_chunks, before.blobs, before.blob_stored_bytes)
    );
    assert_eq!(store.blobs().list().unwrap(), files);
}

#[test]
fn identical_chunks_share_a_blob_that_outlives_either_coming_back() {
    let store = Config::new().temporary(true).open().unwrap();
    let bytes = text("same", 40);
    put_chunk(&store, b"one", &bytes, 0);
    put_chunk(&store, b"two", &bytes, 0);
    assert_eq!(store.sweep_chunks(MINUTE, HOUR).unwrap().moved, 2);
    assert_eq!(store.blobs().list().unwrap().len(), 1);

    assert_eq!(store.get_chunk(b"one", HOUR).unwrap(), Some(bytes.clone()));
    assert_eq!(store.get_chunk(b"two", HOUR).unwrap(), Some(bytes));
}

#[test]
fn tier_stats_add_up() {
    let store = Config::new().temporary(true).open().unwrap();
    let empty = store.tier_stats().unwrap();
    assert_eq!(
        (empty.warm_chunks, empty.cold_chunks, empty.blobs),
        (0, 0, 0)
    );
    assert_eq!(empty.compression_ratio(), 0.0);

    let chunks: Vec<Vec<u8>> = (0..6).map(|i| text(&format!("chunk {i}"), 100)).collect();
    for (i, bytes) in chunks.iter().enumerate() {
        // Chunks 0, 2 and 4 are old; a duplicate of chunk 0 is old too.
        let at = if i % 2 == 0 { 0 } else { 2 * HOUR };
        put_chunk(&store, format!("k{i}").as_bytes(), bytes, at);
    }
    put_chunk(&store, b"k0-copy", &chunks[0], 0);
    let total: u64 = chunks.iter().map(|c| c.len() as u64).sum::<u64>() + chunks[0].len() as u64;

    let report = store.sweep_chunks(HOUR, 2 * HOUR + MINUTE).unwrap();
    let stats = store.tier_stats().unwrap();
    assert_eq!(report.moved, 4);
    assert_eq!(stats.warm_chunks, 3);
    assert_eq!(stats.cold_chunks, 4);
    assert_eq!(stats.warm_bytes + stats.cold_raw_bytes, total);
    assert_eq!(stats.cold_raw_bytes, report.bytes);
    assert_eq!(stats.blobs, 3, "the copy shares chunk 0's blob");
    assert_eq!(
        stats.blob_raw_bytes,
        stats.cold_raw_bytes - chunks[0].len() as u64
    );
    assert!(stats.blob_stored_bytes < stats.blob_raw_bytes);
    assert!(stats.compression_ratio() > 1.0, "{stats:?}");
    assert!(stats.warm_disk_bytes > 0);

    let stored: u64 = store
        .blobs()
        .list()
        .unwrap()
        .iter()
        .map(|h| {
            std::fs::metadata(store.blobs().path_of(h).unwrap())
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(stats.blob_stored_bytes, stored);
}

#[test]
fn a_cold_chunk_whose_blob_is_gone_is_an_error() {
    let store = Config::new().temporary(true).open().unwrap();
    put_chunk(&store, b"k", b"some bytes", 0);
    store.sweep_chunks(MINUTE, HOUR).unwrap();
    let ChunkSlot::Cold { hash, .. } = slot(&store, b"k") else {
        panic!("the chunk should be cold");
    };
    assert!(store.blobs().delete(&hash).unwrap());
    let err = store.get_chunk(b"k", HOUR).unwrap_err();
    assert!(
        matches!(&err, Error::MissingBlob { hash: h } if *h == hash),
        "{err:?}"
    );
}

#[test]
fn a_chunk_changed_after_it_was_read_is_not_overwritten() {
    let store = Config::new().temporary(true).open().unwrap();
    put_chunk(&store, b"k", b"old", 0);
    let read = store.get_raw(Keyspace::Chunks, b"k").unwrap().unwrap();
    put_chunk(&store, b"k", b"new", 0);

    let mut batch = Batch::new();
    batch.put_chunk(b"k".to_vec(), b"stale", 0).unwrap();
    let applied = store
        .apply_if_unchanged(&batch, Keyspace::Chunks, b"k", Some(&read))
        .unwrap();
    assert!(!applied);
    assert_eq!(
        store.get_chunk(b"k", 0).unwrap().as_deref(),
        Some(&b"new"[..])
    );
}

#[test]
fn kept_sums_match_a_count_of_the_store_after_every_kind_of_write() {
    let dir = tempfile::tempdir().unwrap();
    let open = || Config::new().path(dir.path().join("store")).open().unwrap();
    let store = open();
    put_chunk(&store, b"before", &text("counted by the walk", 10), 0);
    // The first call counts; every write after it keeps the sums.
    store.tier_stats().unwrap();
    let chunks: Vec<Vec<u8>> = (0..5)
        .map(|i| text(&format!("chunk {i}"), 20 + i))
        .collect();
    for (i, bytes) in chunks.iter().enumerate() {
        put_chunk(&store, format!("k{i}").as_bytes(), bytes, 0);
    }
    // Written again, longer; one deleted; two written in one batch, one of them twice.
    put_chunk(&store, b"k1", &text("longer now", 60), 0);
    let mut batch = Batch::new();
    batch.delete(Keyspace::Chunks, b"k2".to_vec());
    batch.put_chunk(b"k5".to_vec(), b"short", 0).unwrap();
    batch
        .put_chunk(b"k5".to_vec(), b"shorter still", 0)
        .unwrap();
    batch.put_chunk(b"k6".to_vec(), &chunks[0], 0).unwrap();
    store.apply(batch).unwrap();
    // Moved cold (blobs recorded), one read back warm, one blob record dropped.
    let moved = store.sweep_chunks(HOUR, 2 * HOUR).unwrap();
    assert!(moved.moved >= 5, "{moved:?}");
    store.get_chunk(b"k3", 3 * HOUR).unwrap().unwrap();
    let ChunkSlot::Cold { hash, .. } = slot(&store, b"k4") else {
        panic!("k4 is cold")
    };
    let mut batch = Batch::new();
    batch.delete_blob(&hash);
    store.apply(batch).unwrap();

    let kept = store.tier_stats().unwrap();
    assert!(
        kept.warm_chunks > 0 && kept.cold_chunks > 0 && kept.blobs > 0,
        "{kept:?}"
    );
    drop(store);
    // A new process counts from the store itself.
    let counted = open().tier_stats().unwrap();
    assert_eq!(
        TierStats {
            warm_disk_bytes: 0,
            ..kept
        },
        TierStats {
            warm_disk_bytes: 0,
            ..counted
        }
    );
}
