//! The cold tier keeps what Claude Code deletes: a session whose transcript is gone is
//! still served — episode, handoff, messages — from the archive.

use eywa::engine::{Engine, EngineConfig};
use eywa::graph::EdgeFilter;
use eywa::retrieve::GetOptions;

use crate::support::fixture::{ClaudeHome, days_ago};

#[test]
fn a_deleted_transcript_is_still_served_from_the_cold_tier() {
    let home = ClaudeHome::new();
    let id = "abcdef01-0000-4000-8000-000000000001";
    let path = home.session(
        id,
        "/w/archive-me",
        days_ago(2),
        &[
            ("Explain the tokenizer", "It splits on whitespace."),
            ("And emoji?", "Kept whole."),
        ],
    );
    home.session(
        "abcdef02-0000-4000-8000-000000000002",
        "/w/other",
        days_ago(1),
        &[("Hi", "Hello.")],
    );
    let data = tempfile::tempdir().unwrap();
    let config = EngineConfig::new(data.path().join("eywa"), home.root());
    let engine = Engine::open(config.clone()).unwrap();
    engine.ingest().unwrap();
    let live = engine.session("abcdef01").unwrap();
    assert!(!live.from_archive);
    assert_eq!(live.messages.len(), 4);
    let stats = engine.stats().unwrap();
    // Each transcript's archive and its saved read state.
    assert_eq!(stats.tiers.blobs, 4);
    assert!(stats.tiers.blob_raw_bytes > 0);

    std::fs::remove_file(&path).unwrap();
    let report = engine.ingest().unwrap();
    assert_eq!(report.files_scanned, 1);
    assert_eq!(report.counts.episodes, 2, "the session stays");
    drop(engine);

    // A new process: everything comes back from disk.
    let engine = Engine::open(config).unwrap();
    let archived = engine.session(id).unwrap();
    assert!(archived.from_archive);
    assert_eq!(archived.messages, live.messages);
    assert_eq!(archived.handoff, live.handoff);
    assert_eq!(archived.episode.id, live.episode.id);
    let options = GetOptions {
        days_back: 30,
        ..GetOptions::default()
    };
    let hits = engine.get_handoffs("archive-me", &options).unwrap();
    assert_eq!(hits.hits[0].handoff.session_id, id);
    assert_eq!(
        engine
            .what_touched("project:archive-me", &EdgeFilter::default(), 10)
            .unwrap()
            .len(),
        1
    );
    assert_eq!(engine.graph().check().unwrap(), Vec::<String>::new());
}

#[test]
fn an_unarchived_archive_is_reported_not_invented() {
    let home = ClaudeHome::new();
    let id = "abcdef03-0000-4000-8000-000000000003";
    let path = home.session(id, "/w/x", days_ago(1), &[("Hi", "Hello.")]);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    std::fs::remove_file(&path).unwrap();
    // Remove the archived copy behind eywa's back.
    let hash = engine.graph().sources().unwrap()[0]
        .archive
        .clone()
        .unwrap();
    // A small archive lives in its record, a larger one in a file: take both away.
    let store = engine.graph().store();
    let _ = store.blobs().delete(&hash).unwrap();
    let mut batch = eywa_storage::Batch::new();
    batch.delete_blob(&hash);
    store.apply(batch).unwrap();
    let err = engine.session(id).unwrap_err();
    assert!(matches!(err, eywa::Error::NotFound(_)), "{err:?}");
}
