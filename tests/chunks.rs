//! Chunks as records: every embedded passage is kept whole with its position, moves to the
//! cold tier when idle, reads back byte-identical (and warm again), and search shows the
//! same hits from either tier.

use std::sync::Arc;

use eywa::engine::{Embedding, Engine, EngineConfig, SearchRequest};
use eywa::model::Chunk;
use eywa::retrieve::SearchMode;
use eywa_storage::Keyspace;

use crate::support::fixture::{ClaudeHome, days_ago};
use crate::support::model::WordsEmbedder;

const COUPONS: &str = "c4000000-0000-4000-8000-000000000001";
const SEARCH: &str = "c4000000-0000-4000-8000-000000000002";
const DEPLOY: &str = "c4000000-0000-4000-8000-000000000003";

/// A long answer: three paragraphs of ~400 characters, so three chunks.
fn long_answer() -> String {
    [
        "Rounding happened per line item. ",
        "The totals now round once, at the end. ",
        "Coupons apply before tax as the spec says. ",
    ]
    .iter()
    .map(|s| s.repeat(12).trim_end().to_owned())
    .collect::<Vec<_>>()
    .join("\n\n")
}

fn home() -> ClaudeHome {
    let home = ClaudeHome::new();
    let answer = long_answer();
    home.session(
        COUPONS,
        "/w/shop",
        days_ago(9),
        &[("Fix the coupon rounding in checkout", answer.as_str())],
    );
    home.session(
        SEARCH,
        "/w/search",
        days_ago(3),
        &[(
            "Tune the search ranking",
            "Weighted titles higher than bodies.",
        )],
    );
    home.session(
        DEPLOY,
        "/w/shop",
        days_ago(1),
        &[(
            "Deploy the checkout service",
            "Rolled out with coupon totals fixed.",
        )],
    );
    home
}

fn config(data: &std::path::Path, home: &ClaudeHome, idle_days: u32) -> EngineConfig {
    EngineConfig {
        chunk_idle_days: idle_days,
        ..EngineConfig::new(data, home.root())
            .with_embedding(Embedding::Embedder(Arc::new(WordsEmbedder::default())))
    }
}

fn chunk_ids(engine: &Engine) -> Vec<String> {
    engine
        .graph()
        .store()
        .keys(Keyspace::Chunks, &[])
        .map(|k| {
            let k = k.unwrap();
            format!("{:016x}", u64::from_be_bytes(k[..].try_into().unwrap()))
        })
        .collect()
}

/// What a search shows, tier aside: session, passage type, snippet, chunk.
fn shown(
    engine: &Engine,
    query: &str,
    mode: SearchMode,
) -> Vec<(String, String, String, Option<String>)> {
    engine
        .search(&SearchRequest {
            query: query.into(),
            mode,
            ..SearchRequest::default()
        })
        .unwrap()
        .hits
        .into_iter()
        .map(|h| (h.session_id, h.kind, h.snippet, h.chunk_id))
        .collect()
}

const QUERIES: [(&str, SearchMode); 4] = [
    ("coupon totals", SearchMode::Semantic),
    ("search ranking titles", SearchMode::Semantic),
    ("checkout deploy", SearchMode::Hybrid),
    ("rounding", SearchMode::Lexical),
];

#[test]
fn idle_chunks_go_cold_read_back_byte_identical_and_search_is_unchanged() {
    let home = home();
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("eywa");

    // Ingest and embed: every chunk is a warm record with its position.
    let (before, searches) = {
        let engine = Engine::open(config(&dir, &home, 30)).unwrap();
        engine.ingest().unwrap();
        engine.embed_pending(&mut |_, _| {}).unwrap();
        let ids = chunk_ids(&engine);
        assert_eq!(ids.len() as u64, engine.semantic_status().vectors);
        let chunks: Vec<Chunk> = ids.iter().map(|id| engine.chunk(id, 3).unwrap()).collect();
        let tiers = engine.stats().unwrap().tiers;
        assert_eq!(tiers.warm_chunks, ids.len() as u64);
        assert_eq!(tiers.cold_chunks, 0);

        // The long answer is three chunks of one message, each covering its paragraph.
        let answer: Vec<char> = long_answer().chars().collect();
        let mut parts: Vec<&Chunk> = chunks
            .iter()
            .filter(|c| c.session_id == COUPONS && c.kind == "assistant_response")
            .collect();
        parts.sort_by_key(|c| c.start_char);
        assert_eq!(parts.len(), 3, "{parts:#?}");
        assert!(parts.iter().all(|c| c.message.is_some() && c.embedded));
        assert_eq!(parts[0].message, parts[2].message);
        for c in &parts[1..] {
            let covered: String = answer[c.start_char as usize..c.end_char as usize]
                .iter()
                .collect();
            assert_eq!(covered, c.content);
        }
        assert_eq!(parts[2].end_char as usize, answer.len());
        // Neighbors are chunks of other sessions.
        let prompt = chunks
            .iter()
            .find(|c| c.content == "Fix the coupon rounding in checkout")
            .unwrap();
        assert!(!prompt.neighbors.is_empty());
        assert!(prompt.neighbors.iter().all(|n| n.session_id != COUPONS));
        assert_eq!(
            prompt.neighbors[0].session_id, DEPLOY,
            "{:?}",
            prompt.neighbors
        );

        let searches: Vec<_> = QUERIES.iter().map(|(q, m)| shown(&engine, q, *m)).collect();
        assert!(searches[0].iter().any(|h| h.3.is_some()), "{searches:?}");
        (chunks, searches)
    };

    // The mover, with chunks idle for more than 0 days: all of them go cold.
    {
        let engine = Engine::open(config(&dir, &home, 0)).unwrap();
        engine.ingest().unwrap();
        let tiers = engine.stats().unwrap().tiers;
        assert_eq!(tiers.warm_chunks, 0);
        assert_eq!(tiers.cold_chunks, before.len() as u64);
        assert!(tiers.blobs >= tiers.cold_chunks.min(1));
    }

    // A new process: search reads its snippets from the cold tier and shows the same.
    let engine = Engine::open(config(&dir, &home, 30)).unwrap();
    let again: Vec<_> = QUERIES.iter().map(|(q, m)| shown(&engine, q, *m)).collect();
    assert_eq!(again, searches);
    let tiers = engine.stats().unwrap().tiers;
    assert!(tiers.warm_chunks > 0, "chunks read come back warm");
    assert!(tiers.cold_chunks < before.len() as u64);

    // Every chunk reads back byte-identical, and is warm again.
    for chunk in &before {
        let read = engine.chunk(&chunk.id, 3).unwrap();
        assert_eq!(&read, chunk);
    }
    let tiers = engine.stats().unwrap().tiers;
    assert_eq!(tiers.warm_chunks, before.len() as u64);
    assert_eq!(tiers.cold_chunks, 0);
}

#[test]
fn a_reread_session_replaces_its_chunks_and_bad_ids_are_refused() {
    let home = ClaudeHome::new();
    let path = home.session(
        SEARCH,
        "/w/search",
        days_ago(2),
        &[(
            "Tune the search ranking",
            "Weighted titles higher than bodies.",
        )],
    );
    let data = tempfile::tempdir().unwrap();
    let engine = Engine::open(config(&data.path().join("eywa"), &home, 30)).unwrap();
    engine.ingest().unwrap();
    let first = chunk_ids(&engine);
    assert_eq!(first.len(), 3, "prompt, answer and handoff");
    let answer = first
        .iter()
        .map(|id| engine.chunk(id, 0).unwrap())
        .find(|c| c.kind == "assistant_response")
        .unwrap();
    assert!(!answer.embedded, "queued, not embedded yet");
    assert!(
        answer
            .content
            .ends_with("Weighted titles higher than bodies.")
    );

    // The file rewritten with another answer: the old chunk record is gone.
    std::fs::remove_file(&path).unwrap();
    home.session(
        SEARCH,
        "/w/search",
        days_ago(2),
        &[("Tune the search ranking", "Boosted exact phrase matches.")],
    );
    engine.ingest().unwrap();
    let contents: Vec<String> = chunk_ids(&engine)
        .iter()
        .map(|id| engine.chunk(id, 0).unwrap().content)
        .collect();
    assert!(
        contents.iter().any(|c| c.contains("Boosted exact phrase")),
        "{contents:?}"
    );
    assert!(
        !contents.iter().any(|c| c.contains("Weighted titles")),
        "{contents:?}"
    );

    for bad in ["", "xyz", "0123456789abcdefff"] {
        let e = engine.chunk(bad, 0).unwrap_err();
        assert!(matches!(e, eywa::Error::InvalidArgument(_)), "{bad}: {e}");
    }
    let e = engine.chunk("0000000000000000", 0).unwrap_err();
    assert!(matches!(e, eywa::Error::NotFound(_)), "{e}");
    let e = engine.chunk(&first[0], 51).unwrap_err();
    assert!(matches!(e, eywa::Error::InvalidArgument(_)), "{e}");
}

#[test]
fn get_chunk_over_grpc_and_the_cli_gives_the_chunk_whole() {
    use crate::support::{eywa_cli, grpcurl, server::TestServer};
    let home = home();
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("eywa");
    // The CLI on the store alone: ingest, then a chunk by id (no model: no neighbors).
    let (ok, _, err) = eywa_cli(&dir, home.root(), &["ingest"]);
    assert!(ok, "{err}");
    let ids = chunk_ids(&Engine::open(config(&dir, &home, 30)).unwrap());
    let answer = long_answer();
    let first_paragraph = answer.split("\n\n").next().unwrap();
    let (ok, out, err) = eywa_cli(&dir, home.root(), &["chunk", &ids[0], "--json"]);
    assert!(ok, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["id"], ids[0].as_str());
    assert!(json["position"]["start_char"].is_u64() && json["content"].is_string());
    let (ok, _, err) = eywa_cli(&dir, home.root(), &["chunk", "not-a-chunk"]);
    assert!(!ok && err.contains("16 hex digits"), "{err}");

    // Over gRPC, with semantic search: a hit names its chunk; GetChunk reads it whole.
    let Some(grpcurl) = grpcurl::grpcurl() else {
        return;
    };
    let engine = Engine::open(config(&dir, &home, 30)).unwrap();
    engine.embed_pending(&mut |_, _| {}).unwrap();
    let server = TestServer::start(engine);
    let addr = server.addr();
    let call = |method: &str, body: &str| {
        grpcurl::run(&grpcurl, &["-plaintext", "-d", body, &addr, method])
    };
    let found = call(
        "eywa.v1.Retrieval/Search",
        r#"{"query": "totals round once at the end", "mode": "semantic"}"#,
    )
    .json();
    let hit = &found["hits"][0];
    assert_eq!(hit["sessionId"], COUPONS, "{found}");
    let id = hit["chunkId"].as_str().unwrap();
    let chunk = call(
        "eywa.v1.Retrieval/GetChunk",
        &format!(r#"{{"chunk_id": "{id}", "neighbors": 2}}"#),
    )
    .json();
    let chunk = &chunk["chunk"];
    assert_eq!(chunk["sessionId"], COUPONS);
    assert_eq!(chunk["type"], "assistant_response");
    assert!(
        chunk["content"].as_str().unwrap().len() > 240,
        "whole, not a snippet"
    );
    assert!(hit["snippet"].as_str().unwrap().len() <= 240 * 4);
    assert!(
        answer.contains(chunk["content"].as_str().unwrap())
            || chunk["content"].as_str().unwrap().contains(first_paragraph)
    );
    let neighbors = chunk["neighbors"].as_array().unwrap();
    assert!(!neighbors.is_empty() && neighbors.len() <= 2);
    assert!(neighbors.iter().all(|n| n["sessionId"] != COUPONS));

    for (body, code) in [
        (r#"{"chunk_id": "nope"}"#, "InvalidArgument"),
        (r#"{"chunk_id": "0000000000000000"}"#, "NotFound"),
        (
            &format!(r#"{{"chunk_id": "{id}", "neighbors": 51}}"#) as &str,
            "InvalidArgument",
        ),
    ] {
        let out = call("eywa.v1.Retrieval/GetChunk", body);
        assert!(
            !out.success && out.stderr.contains(&format!("Code: {code}")),
            "{body}: {}",
            out.stderr
        );
    }
}

#[test]
fn a_store_from_before_chunk_records_gets_them_at_its_next_ingest() {
    use eywa_storage::{Batch, Keyspace};
    let home = home();
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("eywa");
    let expected = {
        let engine = Engine::open(config(&dir, &home, 30)).unwrap();
        engine.ingest().unwrap();
        let ids = chunk_ids(&engine);
        // What an older eywa left: no chunk records, and no mark that they were written.
        let store = engine.graph().store();
        let mut batch = Batch::new();
        for key in store.keys(Keyspace::Chunks, &[]) {
            batch.delete(Keyspace::Chunks, key.unwrap());
        }
        batch.delete(Keyspace::Settings, b"chunks_recorded".to_vec());
        store.apply(batch).unwrap();
        assert!(chunk_ids(&engine).is_empty());
        ids
    };
    // The CLI's path: a plain ingest, semantic memory opened only part-way through it.
    let engine = Engine::open(EngineConfig::new(&dir, home.root())).unwrap();
    engine.ingest().unwrap();
    assert_eq!(chunk_ids(&engine), expected);
}
