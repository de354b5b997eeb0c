//! Semantic memory: what ingest queues for embedding, the embedder taking it newest first,
//! the embedding cache, the vector index across restarts (journal replay, rebuild), search
//! modes, graph signals around a focus, and related sessions by content.

use std::sync::Arc;

use eywa::embed::Embedder;
use eywa::engine::{Embedding, Engine, EngineConfig, SearchRequest};
use eywa::retrieve::SearchMode;

use crate::support::fixture::{ClaudeHome, append, days_ago, session_lines};
use crate::support::model::{WordsEmbedder, minilm};

const OLD: &str = "5e300000-0000-4000-8000-000000000001";
const NEW: &str = "5e300000-0000-4000-8000-000000000002";
const AUTH: &str = "5e300000-0000-4000-8000-000000000003";
const DEPLOY: &str = "5e300000-0000-4000-8000-000000000004";
const BLOG: &str = "5e300000-0000-4000-8000-000000000005";

fn words() -> Arc<WordsEmbedder> {
    Arc::new(WordsEmbedder::default())
}

fn open(home: &ClaudeHome, embedder: Arc<dyn Embedder>) -> Engine {
    Engine::open(EngineConfig::temporary(home.root()).with_embedding(Embedding::Embedder(embedder)))
        .unwrap()
}

fn search(engine: &Engine, query: &str, mode: SearchMode) -> eywa::Result<Vec<String>> {
    Ok(engine
        .search(&SearchRequest {
            query: query.into(),
            mode,
            ..SearchRequest::default()
        })?
        .hits
        .into_iter()
        .map(|h| h.session_id)
        .collect())
}

fn two_sessions() -> ClaudeHome {
    let home = ClaudeHome::new();
    home.session(
        OLD,
        "/w/shop",
        days_ago(10),
        &[("Fix the coupon rounding", "Rounded coupon totals to cents.")],
    );
    home.session(
        NEW,
        "/w/search",
        days_ago(1),
        &[(
            "Tune the search ranking",
            "Weighted titles higher than bodies.",
        )],
    );
    home
}

#[test]
fn ingest_queues_prose_and_the_embedder_takes_it_newest_first() {
    let home = two_sessions();
    let model = words();
    let engine = open(&home, model.clone());
    engine.ingest().unwrap();
    // Ingest never waits for the model: everything is queued, nothing embedded yet.
    let status = engine.semantic_status();
    assert_eq!(status.vectors, 0);
    assert!(status.backlog > 0);
    assert!(model.seen.lock().unwrap().is_empty());

    let report = engine.embed_pending(&mut |_, _| {}).unwrap();
    let seen = model.seen.lock().unwrap().clone();
    assert_eq!(report.chunks, status.backlog);
    assert_eq!(report.embedded as usize, seen.len());
    // Prompts, answers and handoffs; never tool calls.
    for text in [
        "Fix the coupon rounding",
        "Rounded coupon totals to cents.",
        "Tune the search ranking",
        "Weighted titles higher than bodies.",
    ] {
        // An answer is embedded after the end of what it answers.
        assert!(
            seen.iter().any(|s| s.ends_with(text)),
            "{text} was not embedded: {seen:?}"
        );
    }
    assert!(
        !seen.iter().any(|s| s.starts_with("Read ")),
        "a tool call was embedded: {seen:?}"
    );
    // Newest first: the newer session's prompt before the older one's.
    let at = |t: &str| seen.iter().position(|s| s == t).unwrap();
    assert!(at("Tune the search ranking") < at("Fix the coupon rounding"));
    let status = engine.semantic_status();
    assert_eq!((status.vectors, status.backlog), (report.chunks, 0));

    // Nothing changed: nothing queued, nothing embedded.
    engine.ingest().unwrap();
    assert_eq!(engine.semantic_status().backlog, 0);
    // A turn appended: only what is new (and the handoff, which changed) is queued.
    let path = home
        .root()
        .join("projects/-w-search")
        .join(format!("{NEW}.jsonl"));
    let all = session_lines(
        NEW,
        "/w/search",
        days_ago(1),
        &[
            (
                "Tune the search ranking",
                "Weighted titles higher than bodies.",
            ),
            ("Now boost recent sessions", "Added a recency boost."),
        ],
    );
    append(&path, &all[all.len() / 2..]);
    engine.ingest().unwrap();
    let queued = engine.semantic_status().backlog;
    let before = model.seen.lock().unwrap().len();
    engine.embed_pending(&mut |_, _| {}).unwrap();
    let fresh: Vec<String> = model.seen.lock().unwrap()[before..].to_vec();
    assert!(
        fresh
            .iter()
            .any(|s| s.ends_with("Now boost recent sessions")),
        "{fresh:?}"
    );
    assert!(
        !fresh.iter().any(|s| s == "Tune the search ranking"),
        "an unchanged prompt was embedded again: {fresh:?}"
    );
    assert!(queued as usize >= fresh.len());

    // The file rewritten with its answer changed: it is read whole again; the prompt's
    // chunk is kept, the answer's old vector is dropped and the new one embedded.
    let rewritten = session_lines(
        OLD,
        "/w/shop",
        days_ago(10),
        &[(
            "Fix the coupon rounding",
            "Rounded coupon totals to whole dollars.",
        )],
    );
    let old_path = home
        .root()
        .join("projects/-w-shop")
        .join(format!("{OLD}.jsonl"));
    std::fs::write(&old_path, rewritten.join("\n") + "\n").unwrap();
    engine.ingest().unwrap();
    let before = model.seen.lock().unwrap().len();
    engine.embed_pending(&mut |_, _| {}).unwrap();
    let fresh: Vec<String> = model.seen.lock().unwrap()[before..].to_vec();
    assert!(
        fresh
            .iter()
            .any(|s| s.ends_with("Rounded coupon totals to whole dollars.")),
        "{fresh:?}"
    );
    assert!(
        !fresh.iter().any(|s| s == "Fix the coupon rounding"),
        "an unchanged prompt was embedded again: {fresh:?}"
    );
    let hits = engine
        .search(&SearchRequest {
            query: "Rounded coupon totals".into(),
            mode: SearchMode::Semantic,
            filter: eywa::model::SearchFilter {
                kinds: vec!["assistant_response".into()],
                ..Default::default()
            },
            ..SearchRequest::default()
        })
        .unwrap()
        .hits;
    assert_eq!(hits[0].session_id, OLD);
    assert!(
        hits[0]
            .snippet
            .ends_with("Rounded coupon totals to whole dollars."),
        "the old answer is gone: {}",
        hits[0].snippet
    );
    // Every stored chunk is in the index, once.
    let stored = engine
        .graph()
        .store()
        .len(eywa_storage::Keyspace::Vectors)
        .unwrap() as u64;
    assert_eq!(engine.semantic_status().vectors, stored);
}

fn auth_and_deploy() -> ClaudeHome {
    let home = ClaudeHome::new();
    home.session(
        AUTH,
        "/w/shop",
        days_ago(3),
        &[(
            "The login page crashes when the password field is empty",
            "Guarded the empty password before hashing it.",
        )],
    );
    home.session(
        DEPLOY,
        "/w/blog",
        days_ago(2),
        &[(
            "Deploy the blog to production",
            "Pushed the static site to the bucket.",
        )],
    );
    home
}

#[test]
fn semantic_search_finds_what_the_words_miss() {
    let Some(model) = minilm() else { return };
    let home = auth_and_deploy();
    let engine = open(&home, model);
    engine.ingest().unwrap();
    engine.embed_pending(&mut |_, _| {}).unwrap();
    // No word in common with the session (after stemming), the same meaning.
    let query = "sign-in screen breaks with a blank passphrase";
    assert!(
        search(&engine, query, SearchMode::Lexical)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        search(&engine, query, SearchMode::Semantic).unwrap()[0],
        AUTH
    );
    let results = engine
        .search(&SearchRequest {
            query: query.into(),
            ..SearchRequest::default()
        })
        .unwrap();
    assert_eq!(results.mode, SearchMode::Hybrid);
    assert!(results.notices.is_empty(), "{:?}", results.notices);
    let top = &results.hits[0];
    assert_eq!(top.session_id, AUTH);
    assert!(top.signals.lexical.is_none());
    let semantic = top.signals.semantic.unwrap();
    assert_eq!(semantic.rank, 1);
    assert!(semantic.score > 0.3, "{semantic:?}");
    // Found by meaning alone: the semantic share of the fused score, as the best.
    assert!(
        (top.signals.retrieval - 0.4).abs() < 1e-6,
        "{:?}",
        top.signals
    );
    assert!(!top.snippet.is_empty());
    // Words and meaning: both retrievers rank the deploy session first.
    let both = engine
        .search(&SearchRequest {
            query: "ship the blog to production".into(),
            ..SearchRequest::default()
        })
        .unwrap();
    let top = &both.hits[0];
    assert_eq!(top.session_id, DEPLOY);
    assert_eq!(top.signals.lexical.unwrap().rank, 1);
    assert_eq!(top.signals.semantic.unwrap().rank, 1);
    assert!(
        (top.signals.retrieval - 1.0).abs() < 1e-6,
        "{:?}",
        top.signals
    );
    // The query's vector comes from the hot tier the second time.
    let hits = |engine: &Engine| {
        engine
            .stats()
            .unwrap()
            .caches
            .iter()
            .find(|c| c.name == "query_vectors")
            .unwrap()
            .hits
    };
    let before = hits(&engine);
    search(&engine, query, SearchMode::Semantic).unwrap();
    assert_eq!(hits(&engine), before + 1);
}

#[test]
fn without_the_model_semantic_is_refused_and_hybrid_is_lexical() {
    let home = auth_and_deploy();
    let missing = tempfile::tempdir().unwrap();
    let engine = Engine::open(
        EngineConfig::temporary(home.root())
            .with_embedding(Embedding::Model(missing.path().join("models/none"))),
    )
    .unwrap();
    engine.ingest().unwrap();
    let status = engine.semantic_status();
    assert!(status.model.is_none());
    let why = status.unavailable.unwrap();
    assert!(why.contains("eywa model install"), "{why}");
    // What ingest read waits for a model.
    assert!(status.backlog > 0);
    match search(&engine, "blog production", SearchMode::Semantic) {
        Err(eywa::Error::FailedPrecondition(m)) => {
            assert!(m.contains("semantic search is unavailable"), "{m}");
        }
        other => panic!("expected FailedPrecondition, got {other:?}"),
    }
    let results = engine
        .search(&SearchRequest {
            query: "blog production".into(),
            ..SearchRequest::default()
        })
        .unwrap();
    assert_eq!(results.mode, SearchMode::Lexical);
    assert_eq!(results.hits[0].session_id, DEPLOY);
    assert!(
        results.notices[0].contains("lexical results"),
        "{:?}",
        results.notices
    );
    assert!(matches!(
        engine.embed_pending(&mut |_, _| {}),
        Err(eywa::Error::FailedPrecondition(_))
    ));
}

#[test]
fn the_vector_index_survives_restarts_replays_its_journal_and_rebuilds() {
    let home = auth_and_deploy();
    let data = tempfile::tempdir().unwrap();
    let model = words();
    let config = || {
        EngineConfig::new(data.path().join("eywa"), home.root())
            .with_embedding(Embedding::Embedder(model.clone()))
    };
    let query = SearchRequest {
        query: "password hashing".into(),
        mode: SearchMode::Semantic,
        ..SearchRequest::default()
    };
    let ranked = |engine: &Engine| -> Vec<(String, u32)> {
        engine
            .search(&query)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| {
                (
                    h.session_id,
                    (h.signals.semantic.unwrap().score * 1e5) as u32,
                )
            })
            .collect()
    };
    let engine = Engine::open(config()).unwrap();
    engine.ingest().unwrap();
    engine.embed_pending(&mut |_, _| {}).unwrap();
    let want = ranked(&engine);
    assert_eq!(want[0].0, AUTH);
    let vectors = engine.semantic_status().vectors;
    drop(engine);

    // Reopened: the saved index, nothing to rebuild.
    let engine = Engine::open(config()).unwrap();
    let status = engine.semantic_status();
    assert_eq!((status.vectors, status.rebuilding), (vectors, false));
    assert_eq!(ranked(&engine), want);

    // Embedded but not saved (as if the process died): the journal brings the index file
    // up to date at the next open.
    home.session(
        BLOG,
        "/w/blog",
        days_ago(1),
        &[(
            "Hash the passwords with argon2",
            "Switched password hashing to argon2.",
        )],
    );
    engine.ingest().unwrap();
    assert!(engine.embed_some(1_000).unwrap() > 0);
    let grown = engine.semantic_status().vectors;
    assert!(grown > vectors);
    drop(engine);
    let engine = Engine::open(config()).unwrap();
    let status = engine.semantic_status();
    assert_eq!((status.vectors, status.rebuilding), (grown, false));
    let argon = engine
        .search(&SearchRequest {
            query: "argon2".into(),
            mode: SearchMode::Semantic,
            ..SearchRequest::default()
        })
        .unwrap()
        .hits;
    assert_eq!(
        argon[0].session_id, BLOG,
        "the replayed vectors are searched"
    );
    let after = ranked(&engine);
    assert_eq!(after.len(), 3, "{after:?}");
    drop(engine);

    // The index file lost: rebuilt from the warm tier (no text embedded again).
    let file = data.path().join("eywa/store/index/vectors.usearch");
    std::fs::remove_file(&file).unwrap();
    let engine = Engine::open(config()).unwrap();
    assert!(engine.semantic_status().rebuilding);
    assert!(matches!(
        engine.search(&query),
        Err(eywa::Error::FailedPrecondition(_))
    ));
    let calls = model.seen.lock().unwrap().len();
    let report = engine.embed_pending(&mut |_, _| {}).unwrap();
    assert_eq!(report.embedded, 0);
    assert_eq!(model.seen.lock().unwrap().len(), calls);
    assert_eq!(engine.semantic_status().vectors, grown);
    assert_eq!(ranked(&engine), after);
    assert!(file.exists());
    drop(engine);

    // A damaged file: the same, once semantic memory opens (a server opens it at start).
    std::fs::write(&file, b"not an index").unwrap();
    let engine = Engine::open(config()).unwrap();
    assert!(engine.prepare_semantic().unwrap().rebuilding);
    engine.embed_pending(&mut |_, _| {}).unwrap();
    assert_eq!(ranked(&engine), after);
}

#[test]
fn a_focus_ranks_its_project_and_neighbours_higher() {
    let home = ClaudeHome::new();
    // The shop session says "checkout" twice: it wins on words alone.
    home.session(
        AUTH,
        "/w/shop",
        days_ago(400),
        &[("The checkout redesign: checkout buttons", "Restyled them.")],
    );
    home.session(
        BLOG,
        "/w/blog",
        days_ago(400),
        &[("Blog post on the checkout redesign", "Drafted the post.")],
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let request = |focus: Option<&str>| SearchRequest {
        query: "checkout redesign".into(),
        mode: SearchMode::Lexical,
        filter: eywa::model::SearchFilter {
            kinds: vec!["user_message".into()],
            ..Default::default()
        },
        focus: focus.map(str::to_owned),
        ..SearchRequest::default()
    };
    let plain = engine.search(&request(None)).unwrap().hits;
    assert_eq!(plain[0].session_id, AUTH);
    assert_eq!(plain[0].signals.same_project, 0.0);
    assert!(plain[0].signals.distance.is_none());

    let focused = engine.search(&request(Some("project:blog"))).unwrap().hits;
    assert_eq!(focused[0].session_id, BLOG);
    let s = &focused[0].signals;
    assert!(s.same_project > 0.0);
    assert_eq!(s.distance, Some(1), "the session TOUCHED the project");
    assert!(s.total > s.retrieval);
    let other = &focused[1].signals;
    assert_eq!(other.same_project, 0.0);
    assert!(other.distance.is_none_or(|d| d > 1));

    // A session as the focus: itself at distance 0, its project's others near.
    let around = engine
        .search(&request(Some(&format!("session:{BLOG}"))))
        .unwrap()
        .hits;
    assert_eq!(around[0].session_id, BLOG);
    assert!(around[0].signals.same_project > 0.0);
    let unfocused = engine.search(&request(Some("project:nowhere"))).unwrap();
    assert!(!unfocused.hits.is_empty());
    assert!(
        unfocused.notices.iter().any(|n| n.contains("nowhere")),
        "{:?}",
        unfocused.notices
    );
}

#[test]
fn related_sessions_are_found_by_content_too() {
    let home = ClaudeHome::new();
    let text = (
        "Profile the slow tokenizer on long inputs",
        "The tokenizer copies each buffer twice.",
    );
    home.session(AUTH, "/w/alpha", days_ago(5), &[text]);
    home.session(BLOG, "/w/beta", days_ago(4), &[text]);
    home.session(
        DEPLOY,
        "/w/gamma",
        days_ago(3),
        &[("Water the garden plants", "Watered them at dawn.")],
    );
    let model = words();
    let without = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    without.ingest().unwrap();
    let plain = without.related(&format!("session:{AUTH}"), 10).unwrap();
    assert!(plain.iter().all(|r| r.similarity == 0.0));

    let engine = open(&home, model);
    engine.ingest().unwrap();
    engine.embed_pending(&mut |_, _| {}).unwrap();
    let related = engine.related(&format!("session:{AUTH}"), 10).unwrap();
    let twin = related
        .iter()
        .find(|r| r.episode.episode().unwrap().session_id == BLOG)
        .expect("the session with the same content is related");
    assert!(twin.similarity > 0.9, "{}", twin.similarity);
    assert_eq!(
        related[0].episode.episode().unwrap().session_id,
        BLOG,
        "the twin ranks first"
    );
    let weight = (engine.graph().counts().unwrap().episodes as f64).ln();
    let shared: f64 = twin.shared.iter().map(|s| s.weight).sum();
    assert!((twin.score - (shared + weight * twin.similarity)).abs() < 1e-9);
    if let Some(garden) = related
        .iter()
        .find(|r| r.episode.episode().unwrap().session_id == DEPLOY)
    {
        assert!(garden.similarity < twin.similarity);
    }
}

/// Chunks semantic memory lists, by source and key.
fn listed(engine: &Engine) -> std::collections::BTreeSet<Vec<u8>> {
    engine
        .graph()
        .store()
        .keys(eywa_storage::Keyspace::VectorsBySource, &[])
        .map(|k| k.unwrap())
        .collect()
}

/// A store from before chunks were queued in their session's transaction may have lost
/// queue entries under their listing (found when the embedder starts) or whole listings
/// (assumed by the first open of such a store); either way the next ingest queues the
/// chunks again.
#[test]
fn chunks_that_lost_their_queue_entry_are_queued_again() {
    use eywa_storage::{Batch, Keyspace};
    let home = two_sessions();
    let data = tempfile::tempdir().unwrap();
    let config = || {
        EngineConfig::new(data.path().join("eywa"), home.root())
            .with_embedding(Embedding::Embedder(words()))
    };
    let engine = Engine::open(config()).unwrap();
    engine.ingest().unwrap();
    let all = listed(&engine);
    let backlog = engine.semantic_status().backlog;
    assert!(all.len() >= 4 && backlog as usize == all.len());
    let entries: Vec<(Vec<u8>, Vec<u8>)> = engine
        .graph()
        .store()
        .entries(Keyspace::VectorsBySource, &[])
        .map(|kv| kv.unwrap())
        .collect();
    let converged = |engine: &Engine| {
        engine.embed_pending(&mut |_, _| {}).unwrap();
        engine.ingest().unwrap();
        engine.embed_pending(&mut |_, _| {}).unwrap();
        assert_eq!(listed(engine), all);
        let status = engine.semantic_status();
        assert_eq!((status.backlog, status.vectors as usize), (0, all.len()));
    };

    // Two queue entries gone under their listing: the embedder notices as it starts.
    let mut batch = Batch::new();
    for (_, queued) in &entries[..2] {
        batch.delete(Keyspace::EmbedQueue, queued.clone());
    }
    engine.graph().store().apply(batch).unwrap();
    drop(engine);
    let engine = Engine::open(config()).unwrap();
    converged(&engine);

    // Two listings gone whole, in a store an older eywa wrote (no mark that its chunks
    // are listed): its first open has the text index rebuilt, which lists them again.
    let store = engine.graph().store();
    let mut batch = Batch::new();
    for (listing, _) in &entries[2..4] {
        batch.delete(Keyspace::VectorsBySource, listing.clone());
        let key = listing[listing.len() - 8..].to_vec();
        batch.delete(Keyspace::Vectors, key);
    }
    batch.delete(Keyspace::Settings, b"chunks_listed".to_vec());
    store.apply(batch).unwrap();
    drop(engine);
    let engine = Engine::open(config()).unwrap();
    converged(&engine);
}

/// Issue 32: a memory embeds its own text at once, and leaves the backlog to the
/// embedder: a `Remember` beside a long backlog costs its own chunks, not a step of
/// someone else's.
#[test]
fn a_memory_embeds_its_own_text_not_the_backlog() {
    let home = two_sessions();
    let model = words();
    let engine = open(&home, model.clone());
    engine.ingest().unwrap();
    let backlog = engine.semantic_status().backlog;
    assert!(backlog > 0);
    let m = engine
        .remember(eywa::memory::NewMemory::new(
            "Refund requests are answered within two days",
        ))
        .unwrap();
    let status = engine.semantic_status();
    assert_eq!(
        status.backlog, backlog,
        "the backlog waits for the embedder"
    );
    assert_eq!(status.vectors, 1, "the memory's one chunk is embedded");
    assert_eq!(
        *model.seen.lock().unwrap(),
        ["Refund requests are answered within two days"]
    );
    // Its new version too.
    engine
        .update_memory(
            &m.id,
            &eywa::memory::MemoryUpdate {
                content: Some("Refund requests are answered within one day".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(engine.semantic_status().backlog, backlog);
    assert!(
        model
            .seen
            .lock()
            .unwrap()
            .contains(&"Refund requests are answered within one day".to_owned())
    );
}
