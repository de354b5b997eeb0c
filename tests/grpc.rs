//! End to end: the real server on 127.0.0.1:0 and the real `grpcurl` binary.

use chrono::NaiveDate;
use eywa::engine::{Engine, EngineConfig};
use serde_json::Value;

use crate::support::fixture::{ClaudeHome, days_ago};
use crate::support::grpcurl::{self, Output};
use crate::support::server::TestServer;

const A: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const B: &str = "bbbbbbbb-0000-4000-8000-000000000002";
const C: &str = "cccccccc-0000-4000-8000-000000000003";
const D: &str = "dddddddd-0000-4000-8000-000000000004";
const E: &str = "eeeeeeee-0000-4000-8000-000000000005";

/// Five sessions, each two exchanges over 3 minutes (3 active minutes).
fn home() -> ClaudeHome {
    let home = ClaudeHome::new();
    let two = |a: &'static str, b: &'static str| [(a, "Done, see the diff."), (b, "Done again.")];
    home.session(
        A,
        "/w/tokenizer-service",
        days_ago(1),
        &two("Add a caching layer", "Cache the lookups"),
    );
    home.session(
        B,
        "/w/tokenizer-lab",
        days_ago(20),
        &two("Run the benchmarks", "Plot the benchmarks"),
    );
    home.session(
        C,
        "/w/webapp",
        days_ago(2),
        &two(
            "The tokenizer splits emoji",
            "Make the tokenizer keep emoji",
        ),
    );
    home.session(
        D,
        "/w/webapp",
        days_ago(5),
        &two("Ledger reconciliation fails", "Fix ledger reconciliation"),
    );
    home.session(
        E,
        "/w/eywa",
        days_ago(3),
        &two("Graph walks are slow", "Speed up graph walks"),
    );
    home
}

struct Fixture {
    _home: ClaudeHome,
    server: TestServer,
    grpcurl: std::path::PathBuf,
}

impl Fixture {
    fn start() -> Option<Fixture> {
        let grpcurl = grpcurl::grpcurl()?;
        let home = home();
        let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
        engine.ingest().unwrap();
        Some(Fixture {
            _home: home,
            server: TestServer::start(engine),
            grpcurl,
        })
    }

    fn call(&self, method: &str, data: &str) -> Output {
        let addr = self.server.addr();
        grpcurl::run(&self.grpcurl, &["-plaintext", "-d", data, &addr, method])
    }

    fn plain(&self, args: &[&str]) -> Output {
        let addr = self.server.addr();
        let mut all = vec!["-plaintext", addr.as_str()];
        all.extend_from_slice(args);
        grpcurl::run(&self.grpcurl, &all)
    }
}

fn ids(response: &Value) -> Vec<String> {
    response["handoffs"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|h| h["handoff"]["sessionId"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn assert_status(out: &Output, code: &str) {
    assert!(!out.success, "expected {code}, got success: {}", out.stdout);
    assert!(
        out.stderr.contains(&format!("Code: {code}")),
        "expected {code}: {}",
        out.stderr
    );
}

#[test]
fn grpcurl_lists_the_services_and_health_is_serving() {
    let Some(f) = Fixture::start() else { return };
    let list = f.plain(&["list"]);
    assert!(list.success, "{}", list.stderr);
    for service in [
        "eywa.v1.Retrieval",
        "eywa.v1.Graph",
        "eywa.v1.Ingest",
        "grpc.health.v1.Health",
    ] {
        assert!(
            list.stdout.lines().any(|l| l == service),
            "{service} in {}",
            list.stdout
        );
    }
    let describe = f.plain(&["describe", "eywa.v1.GetHandoffsRequest"]);
    assert!(describe.stdout.contains("days_back"), "{}", describe.stdout);

    let health = f.call("grpc.health.v1.Health/Check", "{}").json();
    assert_eq!(health["status"], "SERVING");
    let health = f
        .call(
            "grpc.health.v1.Health/Check",
            r#"{"service":"eywa.v1.Graph"}"#,
        )
        .json();
    assert_eq!(health["status"], "SERVING");
}

#[test]
fn get_handoffs_returns_the_order_and_scores_the_formula_gives() {
    let Some(f) = Fixture::start() else { return };
    let response = f
        .call(
            "eywa.v1.Retrieval/GetHandoffs",
            r#"{"query": "the tokenizer", "days_back": 14, "limit": 10}"#,
        )
        .json();
    assert_eq!(response["tokens"], serde_json::json!(["tokenizer"]));
    // N = 5. A: project tokenizer-service (1 session) ×3·ln5, 1 day old (age 2).
    // C: keyword `tokenizer` (1 session) ×2·ln5, 2 days old (age 3).
    // B: project tokenizer-lab ×3·ln5, 20 days old (age 21: one half-life past 14).
    assert_eq!(ids(&response), [A, C, B]);
    let today = chrono::Local::now().date_naive();
    let length = 1.0 + 0.1 * (3f64 + 1.0).ln();
    let ln5 = 5f64.ln();
    for hit in response["handoffs"].as_array().unwrap() {
        let h = &hit["handoff"];
        assert_eq!(h["durationMinutes"], 3);
        let date = NaiveDate::parse_from_str(h["date"].as_str().unwrap(), "%Y-%m-%d").unwrap();
        let age = ((today - date).num_days() + 1) as f64;
        let recency = if age <= 14.0 {
            1.0 + 1.0 / age.sqrt()
        } else {
            0.5f64.powf((age - 14.0) / 7.0)
        };
        let weight = if h["sessionId"] == C { 2.0 } else { 3.0 };
        let want = weight * ln5 * recency * length;
        let got = hit["score"].as_f64().unwrap();
        assert!(
            (got - want).abs() < 1e-9,
            "{}: {got} vs {want}",
            h["sessionId"]
        );
    }
    assert_eq!(
        response["handoffs"][0]["handoff"]["resumeCommand"],
        format!("claude --resume {A}")
    );

    // No query: the most recent inside days_back, newest first, limit 3 by default.
    let recent = f.call("eywa.v1.Retrieval/GetHandoffs", "{}").json();
    assert_eq!(ids(&recent), [A, C, E]);
    assert_eq!(recent["fallbackRecent"], true);

    // Restricted to one project.
    let webapp = f
        .call(
            "eywa.v1.Retrieval/GetHandoffs",
            r#"{"query": "ledger tokenizer", "projects": ["webapp"], "limit": 5}"#,
        )
        .json();
    let got = ids(&webapp);
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|id| id == C || id == D), "{got:?}");
}

#[test]
fn what_touched_returns_the_projects_sessions_newest_first() {
    let Some(f) = Fixture::start() else { return };
    let response = f
        .call(
            "eywa.v1.Graph/WhatTouched",
            r#"{"entity": "project:webapp"}"#,
        )
        .json();
    let sessions: Vec<&str> = response["touches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["episode"]["episode"]["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(sessions, [C, D]);
    let touch = &response["touches"][0];
    assert_eq!(touch["edge"]["relation"], "TOUCHED");
    assert_eq!(touch["episode"]["kind"], "Episode");

    // Within a window that holds only D.
    let since = days_ago(6).to_rfc3339();
    let until = days_ago(4).to_rfc3339();
    let window = f
        .call(
            "eywa.v1.Graph/WhatTouched",
            &format!(r#"{{"entity": "project:webapp", "since": "{since}", "until": "{until}"}}"#),
        )
        .json();
    assert_eq!(window["touches"].as_array().unwrap().len(), 1);

    // By node id too, and neighbors of that episode.
    let episode_id = touch["episode"]["id"].as_str().unwrap();
    let neighbors = f
        .call(
            "eywa.v1.Graph/Neighbors",
            &format!(r#"{{"node": "{episode_id}", "relations": ["touched"]}}"#),
        )
        .json();
    let names: Vec<&str> = neighbors["neighbors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["node"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["webapp"]);
    // A project from the working directory: no one message states it.
    let touched = &neighbors["neighbors"][0]["edge"];
    assert!(touched.get("evidence").is_none(), "{touched}");

    // A fact a message showed names it: the session's first Read call.
    let used = f
        .call(
            "eywa.v1.Graph/Neighbors",
            &format!(r#"{{"node": "{episode_id}", "relations": ["used"]}}"#),
        )
        .json();
    let edge = &used["neighbors"][0]["edge"];
    assert_eq!(edge["relation"], "USED");
    let session = touch["episode"]["episode"]["sessionId"].as_str().unwrap();
    assert_eq!(
        edge["evidence"],
        serde_json::json!([{
            "docId": episode_id,
            "chunkId": format!("msg:{session}-a0"),
            "score": 1,
        }])
    );
}

#[test]
fn bad_requests_get_invalid_argument_and_unknown_ids_not_found() {
    let Some(f) = Fixture::start() else { return };
    let cases = [
        (
            "eywa.v1.Retrieval/GetHandoffs",
            r#"{"limit": 0}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Retrieval/GetHandoffs",
            r#"{"days_back": -1}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Retrieval/GetHandoffs",
            r#"{"projects": [""]}"#,
            "InvalidArgument",
        ),
        // A blank author name is refused by every request that filters by author.
        (
            "eywa.v1.Retrieval/GetHandoffs",
            r#"{"users": [" "]}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Retrieval/Search",
            r#"{"query": "x", "machines": [""]}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Sessions/ListSessions",
            r#"{"users": [""]}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Graph/WhatTouched",
            r#"{"entity": "project:x", "machines": [""]}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Graph/WhatTouched",
            r#"{"entity": ""}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Graph/WhatTouched",
            r#"{"entity": "not-a-node"}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Graph/WhatTouched",
            r#"{"entity": "project:"}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Graph/WhatTouched",
            r#"{"entity": "project:nope"}"#,
            "NotFound",
        ),
        (
            "eywa.v1.Graph/Neighbors",
            r#"{"node": "00000000-0000-4000-8000-000000000000"}"#,
            "NotFound",
        ),
        (
            "eywa.v1.Graph/Neighbors",
            r#"{"node": "project:eywa", "relations": ["LIKES"]}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Graph/Neighbors",
            r#"{"node": "project:eywa", "limit": 100000}"#,
            "InvalidArgument",
        ),
    ];
    for (method, data, code) in cases {
        let out = f.call(method, data);
        assert_status(&out, code);
        assert!(
            !out.stderr.contains("Code: Unknown"),
            "{method} {data}: {}",
            out.stderr
        );
    }
}

#[test]
fn ingest_rpc_reports_counts() {
    let Some(f) = Fixture::start() else { return };
    let response = f.call("eywa.v1.Ingest/Ingest", "{}").json();
    // uint64 fields are strings in proto3 JSON.
    assert_eq!(response["filesScanned"], "5");
    assert_eq!(response["filesUnchanged"], "5");
    assert_eq!(response["episodes"], "5");
    assert_eq!(response["sessions"], "5");
}

/// Splits a shell line on spaces, honouring single quotes (enough for the README).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut in_word = false;
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                in_word = true;
            }
            ' ' if !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            c => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(current);
    }
    words
}

#[test]
fn the_readme_grpcurl_examples_work_as_written() {
    let Some(f) = Fixture::start() else { return };
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let examples: Vec<&str> = readme
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("grpcurl "))
        .collect();
    assert!(examples.len() >= 4, "the README shows grpcurl examples");
    let addr = f.server.addr();
    for example in examples {
        let words: Vec<String> = shell_words(example)
            .into_iter()
            .skip(1)
            .map(|w| w.replace("localhost:50051", &addr))
            .collect();
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        let out = grpcurl::run(&f.grpcurl, &args);
        assert!(out.success, "`{example}` failed: {}", out.stderr);
        assert!(!out.stdout.trim().is_empty(), "`{example}` printed nothing");
    }
}

#[test]
fn graph_rpcs_answer_and_refuse_bad_requests() {
    let Some(f) = Fixture::start() else { return };
    // GetNode by reference, with the session's handoff.
    let node = f
        .call(
            "eywa.v1.Graph/GetNode",
            &format!(r#"{{"node": "session:{}"}}"#, &C[..8]),
        )
        .json();
    assert_eq!(node["node"]["episode"]["sessionId"], C);
    assert_eq!(node["handoff"]["sessionId"], C);
    let by_id = node["node"]["id"].as_str().unwrap().to_owned();
    let again = f
        .call(
            "eywa.v1.Graph/GetNode",
            &format!(r#"{{"node": "{by_id}"}}"#),
        )
        .json();
    assert_eq!(again["node"]["id"], by_id.as_str());

    // FindEntities: exact and prefix, by type.
    let found = f
        .call(
            "eywa.v1.Graph/FindEntities",
            r#"{"name": "tokenizer", "prefix": true, "entityType": "project"}"#,
        )
        .json();
    let mut names: Vec<&str> = found["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["tokenizer-lab", "tokenizer-service"]);

    // Walk: the project, its two sessions, then what they used.
    let walk = f
        .call(
            "eywa.v1.Graph/Walk",
            r#"{"node": "project:webapp", "depth": 1}"#,
        )
        .json();
    assert_eq!(walk["steps"].as_array().unwrap().len(), 3);
    assert_eq!(walk["steps"][1]["depth"], 1);

    // Path between two projects through a shared tool.
    let path = f
        .call(
            "eywa.v1.Graph/Path",
            r#"{"from": "project:webapp", "to": "project:eywa"}"#,
        )
        .json();
    assert_eq!(path["found"], true);
    let kinds: Vec<&str> = path["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["node"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["Project", "Episode", "Tool", "Episode", "Project"]);

    // Related: D shares the webapp project with C.
    let related = f
        .call(
            "eywa.v1.Graph/Related",
            &format!(r#"{{"session": "session:{}"}}"#, &C[..8]),
        )
        .json();
    assert_eq!(related["related"][0]["episode"]["episode"]["sessionId"], D);
    assert_eq!(
        related["related"][0]["shared"][0]["entity"]["name"],
        "webapp"
    );

    let cases = [
        (
            "eywa.v1.Graph/GetNode",
            r#"{"node": "session:zz"}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Graph/GetNode",
            r#"{"node": "session:ffffffff"}"#,
            "NotFound",
        ),
        (
            "eywa.v1.Graph/FindEntities",
            r#"{"name": ""}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Graph/FindEntities",
            r#"{"name": "x", "entityType": "Planet"}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Graph/Walk",
            r#"{"node": "project:webapp", "depth": 9}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Graph/Walk",
            r#"{"node": "project:nope"}"#,
            "NotFound",
        ),
        (
            "eywa.v1.Graph/Path",
            r#"{"from": "project:webapp", "to": ""}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Graph/Related",
            r#"{"session": "project:webapp"}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Graph/Related",
            r#"{"session": "session:cccc", "limit": -1}"#,
            "InvalidArgument",
        ),
        (
            "eywa.v1.Graph/WhatTouched",
            r#"{"entity": "project:webapp", "since": "2030-01-01T00:00:00Z", "until": "2020-01-01T00:00:00Z"}"#,
            "InvalidArgument",
        ),
    ];
    for (method, data, code) in cases {
        assert_status(&f.call(method, data), code);
    }
}

#[test]
fn as_of_over_grpc_sees_what_eywa_knew_then() {
    let Some(f) = Fixture::start() else { return };
    // Before anything was recorded, eywa knew of no session touching webapp.
    let before = f
        .call(
            "eywa.v1.Graph/WhatTouched",
            r#"{"entity": "project:webapp", "asOf": {"recorded": "2001-01-01T00:00:00Z"}}"#,
        )
        .json();
    assert!(
        before["touches"]
            .as_array()
            .is_none_or(std::vec::Vec::is_empty),
        "{before}"
    );
    let now = f
        .call(
            "eywa.v1.Graph/WhatTouched",
            r#"{"entity": "project:webapp", "asOf": {"recorded": "2999-01-01T00:00:00Z"}}"#,
        )
        .json();
    assert_eq!(now["touches"].as_array().unwrap().len(), 2);
}

#[test]
fn sessions_and_stats_rpcs() {
    let Some(f) = Fixture::start() else { return };
    let session = f
        .call(
            "eywa.v1.Sessions/GetSession",
            &format!(r#"{{"session": "{}"}}"#, &A[..8]),
        )
        .json();
    assert_eq!(session["episode"]["episode"]["sessionId"], A);
    let messages = session["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["text"], "Add a caching layer");
    assert_eq!(messages[1]["role"], "assistant");
    assert_status(
        &f.call("eywa.v1.Sessions/GetSession", r#"{"session": "abc"}"#),
        "InvalidArgument",
    );
    assert_status(
        &f.call("eywa.v1.Sessions/GetSession", r#"{"session": "12345678"}"#),
        "NotFound",
    );

    let stats = f.call("eywa.v1.Admin/Stats", "{}").json();
    assert_eq!(stats["episodes"], "5");
    assert_eq!(stats["nodesByKind"]["Episode"], "5");
    assert_eq!(stats["nodesByKind"]["Project"], "4", "C and D share webapp");
    assert_eq!(stats["edgesByRelation"]["TOUCHED"], "5");
    // Five archives and their read states.
    assert_eq!(stats["tiers"]["blobs"], "10");
    assert!(
        stats["tiers"]["compressionRatio"].as_f64().unwrap() > 1.0,
        "{stats}"
    );
    let caches: Vec<&str> = stats["caches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(
        caches.contains(&"nodes") && caches.contains(&"get_results"),
        "{caches:?}"
    );
}

#[test]
fn search_rpc_groups_per_session_and_refuses_bad_requests() {
    let Some(f) = Fixture::start() else { return };
    let response = f
        .call(
            "eywa.v1.Retrieval/Search",
            r#"{"query": "tokenizer emoji", "limit": 5}"#,
        )
        .json();
    let hits = response["hits"].as_array().unwrap();
    // C says both words; no other session says "emoji".
    assert_eq!(hits[0]["sessionId"], C);
    assert_eq!(hits[0]["shortId"], &C[..8]);
    assert_eq!(hits[0]["project"], "webapp");
    assert_eq!(hits[0]["resumeCommand"], format!("claude --resume {C}"));
    assert!(hits[0]["snippet"].as_str().unwrap().contains("**emoji**"));
    // Two days ago at noon: one or two days, by the time of day the test runs.
    let age = hits[0]["age"].as_str().unwrap();
    assert!(["1 day ago", "2 days ago"].contains(&age), "{age}");
    let sessions: Vec<&str> = hits
        .iter()
        .map(|h| h["sessionId"].as_str().unwrap())
        .collect();
    let mut unique = sessions.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), sessions.len(), "one hit per session");

    let only = f
        .call(
            "eywa.v1.Retrieval/Search",
            r#"{"query": "benchmarks", "types": ["user_message"], "projects": ["tokenizer-lab"]}"#,
        )
        .json();
    assert_eq!(ids_of(&only), [B]);
    assert_eq!(only["hits"][0]["type"], "user_message");

    // Asked before any session was written: nothing is known yet.
    let before = f
        .call(
            "eywa.v1.Retrieval/Search",
            r#"{"query": "tokenizer emoji", "asOf": "2001-01-01T00:00:00Z"}"#,
        )
        .json();
    // (An empty list is left out of the JSON.)
    assert!(
        before["hits"].as_array().is_none_or(Vec::is_empty),
        "{before}"
    );

    assert_status(
        &f.call(
            "eywa.v1.Retrieval/Search",
            r#"{"query": "x", "types": ["emails"]}"#,
        ),
        "InvalidArgument",
    );
    assert_status(
        &f.call("eywa.v1.Retrieval/Search", r#"{"query": "  "}"#),
        "InvalidArgument",
    );
    assert_status(
        &f.call("eywa.v1.Retrieval/Search", r#"{"query": "x", "limit": 0}"#),
        "InvalidArgument",
    );
}

fn ids_of(response: &Value) -> Vec<String> {
    response["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["sessionId"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn list_and_export_sessions_over_grpc() {
    let Some(f) = Fixture::start() else { return };
    let page = f
        .call(
            "eywa.v1.Sessions/ListSessions",
            r#"{"limit": 2, "offset": 1}"#,
        )
        .json();
    // Newest activity first: A (1 day), C (2), E (3), D (5), B (20).
    let sessions: Vec<&str> = page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(sessions, [C, E]);
    assert_eq!(page["pagination"]["total"], "5");
    assert_eq!(page["pagination"]["hasMore"], true);
    assert_eq!(
        page["sessions"][0]["resumeCommand"],
        format!("claude --resume {C}")
    );
    let webapp = f
        .call(
            "eywa.v1.Sessions/ListSessions",
            r#"{"workspace": "/w/webapp"}"#,
        )
        .json();
    assert_eq!(webapp["sessions"].as_array().unwrap().len(), 2);
    assert_status(
        &f.call(
            "eywa.v1.Sessions/ListSessions",
            r#"{"workspace": "/w/nowhere"}"#,
        ),
        "NotFound",
    );
    assert_status(
        &f.call("eywa.v1.Sessions/ListSessions", r#"{"limit": 0}"#),
        "InvalidArgument",
    );

    let md = f
        .call(
            "eywa.v1.Sessions/ExportSession",
            &format!(r#"{{"session": "{}"}}"#, &D[..8]),
        )
        .json();
    assert_eq!(md["format"], "markdown");
    assert!(
        md["content"]
            .as_str()
            .unwrap()
            .starts_with("# Ledger reconciliation fails")
    );
    let json = f
        .call(
            "eywa.v1.Sessions/ExportSession",
            &format!(r#"{{"session": "{D}", "format": "json"}}"#),
        )
        .json();
    let content: Value = serde_json::from_str(json["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["session_id"], D);
    assert_status(
        &f.call(
            "eywa.v1.Sessions/ExportSession",
            &format!(r#"{{"session": "{D}", "format": "pdf"}}"#),
        ),
        "InvalidArgument",
    );
    assert_status(
        &f.call(
            "eywa.v1.Sessions/ExportSession",
            r#"{"session": "ffffffff"}"#,
        ),
        "NotFound",
    );
}

#[test]
fn search_sessions_over_grpc() {
    let Some(f) = Fixture::start() else { return };
    let found = f
        .call(
            "eywa.v1.Sessions/SearchSessions",
            r#"{"pattern": "ledger", "context": 0}"#,
        )
        .json();
    let matches = found["matches"].as_array().unwrap();
    assert_eq!(matches.len(), 2, "{found}");
    assert!(matches.iter().all(|m| m["sessionId"] == D));
    assert_eq!(matches[0]["match"], "Ledger reconciliation fails");
    assert_eq!(matches[0]["messageType"], "user");
    assert_status(
        &f.call(
            "eywa.v1.Sessions/SearchSessions",
            r#"{"pattern": "(", "regex": true}"#,
        ),
        "InvalidArgument",
    );
    assert_status(
        &f.call(
            "eywa.v1.Sessions/SearchSessions",
            r#"{"pattern": "x", "context": 99}"#,
        ),
        "InvalidArgument",
    );
}

#[test]
fn retrieve_context_over_grpc() {
    let Some(f) = Fixture::start() else { return };
    let full = f
        .call(
            "eywa.v1.Retrieval/RetrieveContext",
            &format!(
                r#"{{"sessions": ["{}", "{}"], "maxTokens": 2000}}"#,
                &C[..8],
                B
            ),
        )
        .json();
    assert_eq!(full["budget"], 2000);
    let used = full["used"].as_u64().unwrap();
    assert!(used <= 2000 && used > 0, "{full}");
    assert_eq!(full["remaining"].as_u64().unwrap(), 2000 - used);
    let text = full["text"].as_str().unwrap();
    assert!(text.contains("USER: The tokenizer splits emoji"), "{text}");
    assert_eq!(full["sessions"][1]["sessionId"], B);
    // Twenty days old: a notice.
    assert!(
        full["sessions"][1]["staleness"]
            .as_str()
            .unwrap()
            .contains("20 days")
            || full["sessions"][1]["staleness"]
                .as_str()
                .unwrap()
                .contains("19 days")
    );
    let dry = f
        .call(
            "eywa.v1.Retrieval/RetrieveContext",
            &format!(r#"{{"sessions": ["{C}", "{B}"], "maxTokens": 2000, "dryRun": true}}"#),
        )
        .json();
    assert_eq!(dry["used"], full["used"]);
    assert!(dry.get("text").is_none_or(|t| t == ""), "{dry}");
    assert_status(
        &f.call(
            "eywa.v1.Retrieval/RetrieveContext",
            &format!(r#"{{"sessions": ["{C}"], "mode": "everything"}}"#),
        ),
        "InvalidArgument",
    );
    assert_status(
        &f.call("eywa.v1.Retrieval/RetrieveContext", r#"{"sessions": []}"#),
        "InvalidArgument",
    );
    assert_status(
        &f.call(
            "eywa.v1.Retrieval/RetrieveContext",
            r#"{"sessions": ["ffffffff"]}"#,
        ),
        "NotFound",
    );
}

#[test]
fn migrate_sessions_over_grpc() {
    let Some(f) = Fixture::start() else { return };
    let copied = f
        .call(
            "eywa.v1.Sessions/MigrateSessions",
            &format!(
                r#"{{"sessions": ["{}"], "destination": "/w/elsewhere"}}"#,
                &E[..8]
            ),
        )
        .json();
    assert_eq!(copied["successCount"], 1, "{copied}");
    let written = copied["written"][0].as_str().unwrap();
    assert!(
        written.ends_with(&format!("-w-elsewhere/{E}.jsonl")),
        "{written}"
    );
    let again = f
        .call(
            "eywa.v1.Sessions/MigrateSessions",
            &format!(r#"{{"sessions": ["{E}"], "destination": "/w/elsewhere"}}"#),
        )
        .json();
    assert_eq!(again["failedCount"], 1, "{again}");
    assert_status(
        &f.call(
            "eywa.v1.Sessions/MigrateSessions",
            &format!(r#"{{"sessions": ["{E}"], "destination": "/w/x", "mode": "teleport"}}"#),
        ),
        "InvalidArgument",
    );
    assert_status(
        &f.call(
            "eywa.v1.Sessions/MigrateSessions",
            &format!(r#"{{"sessions": ["{E}"], "destination": "not/absolute"}}"#),
        ),
        "InvalidArgument",
    );
}

#[test]
fn search_modes_signals_and_the_missing_model_over_grpc() {
    let Some(f) = Fixture::start() else { return };
    // No model on this server: semantic-only is a failed precondition, hybrid is lexical.
    let out = f.call(
        "eywa.v1.Retrieval/Search",
        r#"{"query": "tokenizer emoji", "mode": "semantic"}"#,
    );
    assert_status(&out, "FailedPrecondition");
    assert!(
        out.stderr.contains("semantic search is unavailable"),
        "{}",
        out.stderr
    );
    let lexical = f
        .call(
            "eywa.v1.Retrieval/Search",
            r#"{"query": "tokenizer emoji"}"#,
        )
        .json();
    assert_eq!(lexical["mode"], "lexical");
    assert!(
        lexical["notices"][0]
            .as_str()
            .unwrap()
            .contains("lexical results")
    );
    let signals = &lexical["hits"][0]["signals"];
    assert_eq!(signals["lexical"]["rank"], 1);
    assert!(signals["semantic"].is_null());
    assert_status(
        &f.call(
            "eywa.v1.Retrieval/Search",
            r#"{"query": "x", "mode": "fuzzy"}"#,
        ),
        "InvalidArgument",
    );
    // A focus that names nothing is reported and left out; the search stands.
    let unfocused = f.call(
        "eywa.v1.Retrieval/Search",
        r#"{"query": "tokenizer", "focus": "project:nowhere"}"#,
    );
    assert!(unfocused.success, "{}", unfocused.stderr);
    assert!(
        unfocused.stdout.contains("focus left out") && unfocused.stdout.contains("sessionId"),
        "{}",
        unfocused.stdout
    );
    // A focus on a project: its sessions rank higher, and say why.
    let focused = f
        .call(
            "eywa.v1.Retrieval/Search",
            r#"{"query": "tokenizer benchmarks", "focus": "project:tokenizer-lab", "mode": "lexical"}"#,
        )
        .json();
    let top = &focused["hits"][0];
    assert_eq!(top["sessionId"], B, "{focused}");
    assert!(top["signals"]["sameProject"].as_f64().unwrap() > 0.0);
    assert_eq!(top["signals"]["distance"], 1);
    let stats = f.call("eywa.v1.Admin/Stats", "{}").json();
    assert!(stats["semantic"]["unavailable"].as_str().unwrap().len() > 10);
    assert!(
        stats["semantic"]["backlog"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );

    // With the model: found by meaning, both rankings in the signals, related by content.
    let Some(model) = crate::support::model::minilm() else {
        return;
    };
    let home = home();
    let engine = Engine::open(
        EngineConfig::temporary(home.root())
            .with_embedding(eywa::engine::Embedding::Embedder(model)),
    )
    .unwrap();
    engine.ingest().unwrap();
    engine.embed_pending(&mut |_, _| {}).unwrap();
    let server = TestServer::start(engine);
    let call = |method: &str, data: &str| {
        grpcurl::run(
            &f.grpcurl,
            &["-plaintext", "-d", data, &server.addr(), method],
        )
    };
    let semantic = call(
        "eywa.v1.Retrieval/Search",
        r#"{"query": "emoji handling in the text splitter", "mode": "semantic"}"#,
    )
    .json();
    assert_eq!(semantic["mode"], "semantic");
    assert_eq!(semantic["hits"][0]["sessionId"], C, "{semantic}");
    let hybrid = call(
        "eywa.v1.Retrieval/Search",
        r#"{"query": "tokenizer emoji"}"#,
    )
    .json();
    assert_eq!(hybrid["mode"], "hybrid");
    assert!(hybrid["notices"].is_null(), "{hybrid}");
    let s = &hybrid["hits"][0]["signals"];
    assert_eq!(hybrid["hits"][0]["sessionId"], C);
    assert_eq!(
        (s["lexical"]["rank"].clone(), s["semantic"]["rank"].clone()),
        (1.into(), 1.into())
    );
    assert!((s["retrieval"].as_f64().unwrap() - 1.0).abs() < 1e-6, "{s}");
    let related = call(
        "eywa.v1.Graph/Related",
        &format!(r#"{{"session": "session:{C}"}}"#),
    )
    .json();
    assert!(
        related["related"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["similarity"].as_f64().is_some_and(|s| s > 0.0)),
        "{related}"
    );
    let stats = call("eywa.v1.Admin/Stats", "{}").json();
    assert!(
        stats["semantic"]["model"]
            .as_str()
            .unwrap()
            .starts_with("all-MiniLM-L6-v2@")
    );
    assert!(
        stats["semantic"]["vectors"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );
}
