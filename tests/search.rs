//! Full-text search: what ingest indexes, one hit per session, filters, incremental updates
//! as sessions grow, and a rebuild from the store when the index is lost.

use eywa::engine::{Engine, EngineConfig, SearchRequest};
use eywa::model::Timestamp;
use serde_json::json;

use crate::support::fixture::{ClaudeHome, append, days_ago, session_lines};

const CART: &str = "5ea00000-0000-4000-8000-000000000001";
const BLOG: &str = "5ea00000-0000-4000-8000-000000000002";
const OLD: &str = "5ea00000-0000-4000-8000-000000000003";

fn home() -> ClaudeHome {
    let home = ClaudeHome::new();
    home.session(
        CART,
        "/w/shop",
        days_ago(2),
        &[
            (
                "The checkout total is wrong for coupons",
                "Looking at the coupon math.",
            ),
            (
                "Also the cart badge flickers",
                "Fixed the flicker in the cart badge.",
            ),
        ],
    );
    home.session(
        BLOG,
        "/w/blog",
        days_ago(1),
        &[(
            "Write a post about the checkout redesign",
            "Drafted the post.",
        )],
    );
    home.session(
        OLD,
        "/w/shop",
        days_ago(40),
        &[("Migrate the coupon table", "Migrated.")],
    );
    home
}

fn search(engine: &Engine, query: &str) -> Vec<(String, String)> {
    engine
        .search(&SearchRequest {
            query: query.into(),
            ..SearchRequest::default()
        })
        .unwrap()
        .hits
        .into_iter()
        .map(|h| (h.session_id, h.kind))
        .collect()
}

#[test]
fn search_finds_sessions_by_their_words_one_hit_each() {
    let home = home();
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();

    // Two sessions talk about coupons; the one that also says "math" ranks first, and
    // each session comes once, however many of its passages match.
    let hits = engine
        .search(&SearchRequest {
            query: "coupon math".into(),
            ..SearchRequest::default()
        })
        .unwrap()
        .hits;
    let sessions: Vec<&str> = hits.iter().map(|h| h.session_id.as_str()).collect();
    assert_eq!(sessions, [CART, OLD]);
    assert!(hits[0].matches >= 2, "{}", hits[0].matches);
    assert_eq!(hits[0].project, "shop");
    assert_eq!(hits[0].title, "The checkout total is wrong for coupons");
    assert!(hits[0].snippet.contains("**coupon"), "{}", hits[0].snippet);

    // Filters: content type, project, time.
    let only = |kinds: &[&str], projects: &[&str], since: Option<Timestamp>| SearchRequest {
        query: "checkout".into(),
        filter: eywa::model::SearchFilter {
            kinds: kinds.iter().map(std::string::ToString::to_string).collect(),
            projects: projects
                .iter()
                .map(std::string::ToString::to_string)
                .collect(),
            since,
            ..Default::default()
        },
        ..SearchRequest::default()
    };
    let ids = |r: SearchRequest| -> Vec<String> {
        engine
            .search(&r)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.session_id)
            .collect()
    };
    assert_eq!(ids(only(&[], &["blog"], None)), [BLOG]);
    assert_eq!(ids(only(&[], &["SHOP"], None)), [CART]);
    let week = Timestamp(Timestamp::now().0 - 7 * 86_400_000);
    assert_eq!(
        search(&engine, "coupon table").len(),
        2,
        "both coupon sessions"
    );
    let recent = SearchRequest {
        query: "coupon table".into(),
        filter: eywa::model::SearchFilter {
            since: Some(week),
            ..Default::default()
        },
        ..SearchRequest::default()
    };
    assert_eq!(
        engine
            .search(&recent)
            .unwrap()
            .hits
            .iter()
            .map(|h| h.session_id.as_str())
            .collect::<Vec<_>>(),
        [CART]
    );
    // Handoffs are indexed too: the headline of the blog session.
    let handoffs = ids(only(&["handoff"], &[], None));
    assert!(handoffs.contains(&BLOG.to_owned()), "{handoffs:?}");
    // Tool calls: the fixture's answers call Read.
    let tools = search(&engine, "Read");
    assert!(
        tools.iter().all(|(_, kind)| kind == "tool_call"),
        "{tools:?}"
    );

    // Bad requests.
    for bad in [
        SearchRequest {
            query: "?!".into(),
            ..SearchRequest::default()
        },
        SearchRequest {
            query: "x".into(),
            filter: eywa::model::SearchFilter {
                kinds: vec!["emails".into()],
                ..Default::default()
            },
            ..SearchRequest::default()
        },
        SearchRequest {
            query: "x".into(),
            limit: 100_000,
            ..SearchRequest::default()
        },
    ] {
        assert!(matches!(
            engine.search(&bad),
            Err(eywa::Error::InvalidArgument(_))
        ));
    }
}

#[test]
fn appended_words_are_found_and_nothing_is_indexed_twice() {
    let home = home();
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let before = engine.text_index().unwrap().len();
    assert!(search(&engine, "refund").is_empty());

    let path = home.root().join(format!("projects/-w-blog/{BLOG}.jsonl"));
    let more = session_lines(
        BLOG,
        "/w/blog",
        days_ago(1),
        &[
            ("x", "y"),
            (
                "Explain the refund policy in the post",
                "Added a refund section.",
            ),
        ],
    );
    append(&path, &more[2..]);
    let report = engine.ingest().unwrap();
    assert!(report.bytes_read < std::fs::metadata(&path).unwrap().len());
    let hits = search(&engine, "refund");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].0, BLOG);
    // Two messages and a tool call were added; the handoff was replaced, not doubled.
    assert_eq!(engine.text_index().unwrap().len(), before + 3);
}

#[test]
fn a_lost_index_is_rebuilt_from_the_store() {
    let home = home();
    let data = tempfile::tempdir().unwrap();
    let config = EngineConfig::new(data.path().join("eywa"), home.root());
    let engine = Engine::open(config.clone()).unwrap();
    engine.ingest().unwrap();
    let expected = search(&engine, "coupon flicker");
    let docs = engine.text_index().unwrap().len();
    drop(engine);
    // The index tier is rebuildable: remove it; the next search rebuilds it, the same.
    std::fs::remove_dir_all(data.path().join("eywa/store/index/text")).unwrap();
    // The transcripts are gone too: the rebuild reads the archives.
    std::fs::remove_dir_all(home.root().join("projects")).unwrap();
    std::fs::create_dir_all(home.root().join("projects")).unwrap();
    let engine = Engine::open(config).unwrap();
    assert_eq!(search(&engine, "coupon flicker"), expected);
    assert_eq!(engine.text_index().unwrap().len(), docs);
}

#[test]
fn the_cli_searches_and_runs_query_files() {
    let home = home();
    let data = tempfile::tempdir().unwrap();
    let eywa =
        |args: &[&str]| crate::support::eywa_cli(&data.path().join("eywa"), home.root(), args);
    assert!(eywa(&["ingest"]).0);
    let (ok, text, _) = eywa(&["search", "cart", "badge"]);
    assert!(ok);
    assert!(
        text.starts_with(&format!(" 1. [100%] {}", &CART[..8])),
        "{text}"
    );
    assert!(text.contains(&format!("claude --resume {CART}")), "{text}");
    assert!(text.contains(" ago"), "{text}");

    let (ok, text, _) = eywa(&["search", "checkout", "--json", "--project", "blog"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["hits"][0]["session_id"], BLOG);
    assert_eq!(
        v["hits"][0]["resume_command"],
        format!("claude --resume {BLOG}")
    );
    assert_eq!(v["hits"].as_array().unwrap().len(), 1);

    let queries = data.path().join("q.jsonl");
    let lines = [
        json!({"qid": "a", "query": "coupon math", "project": "shop"}),
        json!({"qid": "b", "query": "the of"}),
    ];
    let text: Vec<String> = lines.iter().map(std::string::ToString::to_string).collect();
    std::fs::write(&queries, text.join("\n")).unwrap();
    let (ok, out, err) = eywa(&["search", "--queries", queries.to_str().unwrap()]);
    assert!(ok, "{err}");
    let results: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["qid"], "a");
    assert_eq!(results[0]["ranked_session_ids"], json!([CART, OLD]));
    assert_eq!(results[1]["ranked_session_ids"], json!([]));

    let (ok, _, err) = eywa(&["search", "x", "--type", "emails"]);
    assert!(!ok);
    assert!(err.contains("unknown content type `emails`"), "{err}");
}
