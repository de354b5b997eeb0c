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
        // Asked before any of it was written.
        json!({"qid": "c", "query": "coupon math", "as_of": "2001-01-01T00:00:00Z"}),
    ];
    let text: Vec<String> = lines.iter().map(std::string::ToString::to_string).collect();
    std::fs::write(&queries, text.join("\n")).unwrap();
    let (ok, out, err) = eywa(&["search", "--queries", queries.to_str().unwrap()]);
    assert!(ok, "{err}");
    let results: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["qid"], "a");
    assert_eq!(results[0]["ranked_session_ids"], json!([CART, OLD]));
    assert_eq!(results[1]["ranked_session_ids"], json!([]));
    assert_eq!(results[2]["ranked_session_ids"], json!([]));

    // `--as-of`: the old session was written 40 days ago, the others since.
    let as_of = (chrono::Utc::now() - chrono::Duration::days(20)).to_rfc3339();
    let (ok, text, err) = eywa(&["search", "coupon", "--as-of", &as_of, "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["hits"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["hits"][0]["session_id"], OLD);
    let (ok, _, err) = eywa(&["search", "coupon", "--as-of", "last tuesday"]);
    assert!(!ok);
    assert!(err.contains("is not RFC 3339 or YYYY-MM-DD"), "{err}");
    std::fs::write(
        &queries,
        r#"{"qid": "d", "query": "coupon", "as_of": "soon"}"#,
    )
    .unwrap();
    let (ok, _, err) = eywa(&["search", "--queries", queries.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("q.jsonl:1: as_of:"), "{err}");

    let (ok, _, err) = eywa(&["search", "x", "--type", "emails"]);
    assert!(!ok);
    assert!(err.contains("unknown content type `emails`"), "{err}");
}

/// A question asked at a time (`as_of`): what was written after it is left out, the date
/// it names is resolved against it and raises the sessions near that date, and a passage
/// that says a time ranks higher for a question asking when. Each signal is the shipped
/// weight (`scripts/fit-ranking`) times what the question and passage say.
#[test]
fn a_question_asked_at_a_time_reads_its_dates_and_what_passages_say() {
    use chrono::TimeZone;
    const JULY: &str = "5ea00000-0000-4000-8000-0000000000a1";
    const AUGUST: &str = "5ea00000-0000-4000-8000-0000000000a2";
    const LATER: &str = "5ea00000-0000-4000-8000-0000000000a3";
    let day = |m, d| chrono::Utc.with_ymd_and_hms(2023, m, d, 12, 0, 0).unwrap();
    let home = ClaudeHome::new();
    home.session(
        JULY,
        "/w/trips",
        day(7, 3),
        &[("Planning the hiking trip to the lakes", "Packed the tent.")],
    );
    home.session(
        AUGUST,
        "/w/trips",
        day(8, 20),
        &[(
            "I went on the hiking trip yesterday",
            "Glad the hiking went well.",
        )],
    );
    home.session(
        LATER,
        "/w/trips",
        day(9, 10),
        &[("Another hiking trip, to the coast", "Booked it.")],
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let weights = eywa::retrieve::Weights::default();
    let ask = |query: &str, as_of: (u32, u32)| {
        engine
            .search(&SearchRequest {
                query: query.into(),
                as_of: Some(Timestamp(day(as_of.0, as_of.1).timestamp_millis())),
                ..SearchRequest::default()
            })
            .unwrap()
            .hits
    };

    // Asked on 1 September: the 10 September session is not known yet.
    let hits = ask("the hiking trip in early July", (9, 1));
    let ids: Vec<&str> = hits.iter().map(|h| h.session_id.as_str()).collect();
    assert!(!ids.contains(&LATER), "{ids:?}");
    assert_eq!(ids.len(), 2, "{ids:?}");
    // "early July" is 1–10 July 2023: the July session is inside it, the August one 40.5
    // days past its end (nearness halves every 7 days).
    let july = hits.iter().find(|h| h.session_id == JULY).unwrap();
    let august = hits.iter().find(|h| h.session_id == AUGUST).unwrap();
    assert_eq!(july.signals.date, weights.date);
    let far = weights.date * 0.5f64.powf(40.5 / weights.date_half_life_days);
    assert!(
        (august.signals.date - far).abs() < 1e-3,
        "{}",
        august.signals.date
    );
    if weights.date > 0.0 {
        assert_eq!(ids[0], JULY, "{ids:?}");
    }

    // "two months ago" from 20 September is 22 July ± 10 days: the July session is 9 days
    // before it, the September one 39 days after.
    let hits = ask("the hiking trip two months ago", (9, 20));
    let date_of = |id: &str| {
        hits.iter()
            .find(|h| h.session_id == id)
            .map(|h| h.signals.date)
            .unwrap()
    };
    assert!(date_of(JULY) > date_of(LATER) || weights.date == 0.0);

    // Asked when: the passage that says "yesterday" is raised by the time weight; the
    // others, which say no time, are not.
    let hits = ask("When did I go on the hiking trip?", (9, 30));
    let said = hits.iter().find(|h| h.session_id == AUGUST).unwrap();
    assert_eq!(said.signals.time, weights.question.time);
    for h in hits.iter().filter(|h| h.session_id != AUGUST) {
        assert_eq!(h.signals.time, 0.0, "{}", h.session_id);
    }
}
