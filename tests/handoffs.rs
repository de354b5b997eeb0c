//! Files and handoff documents: what a session read and changed becomes File entities,
//! and its handoff is written in Eywa's format beside an index Eywa's reader accepts.

use eywa::engine::{Engine, EngineConfig};
use eywa::extract::{parse_index, parse_markdown};
use eywa::graph::{Direction, EdgeFilter};
use eywa::model::{NodeId, Relation};
use serde_json::json;

use crate::support::fixture::{ClaudeHome, days_ago, session_lines};

const ID: &str = "f11e0000-0000-4000-8000-000000000001";

fn tool_line(n: u32, name: &str, input: serde_json::Value) -> String {
    let at = days_ago(1) + chrono::Duration::minutes(i64::from(n) + 10);
    json!({"type": "assistant", "uuid": format!("t{n}"), "sessionId": ID, "cwd": "/w/shop",
           "timestamp": at.to_rfc3339(),
           "message": {"id": format!("msg_t{n}"), "role": "assistant", "model": "claude-opus-4-1",
                       "content": [{"type": "tool_use", "id": format!("toolu_t{n}"), "name": name, "input": input}]}})
    .to_string()
}

fn home() -> ClaudeHome {
    let home = ClaudeHome::new();
    let mut lines = session_lines(
        ID,
        "/w/shop",
        days_ago(1),
        &[
            (
                "Fix the cart total rounding. It is off by a cent.",
                "Looking.",
            ),
            ("Add a test for it", "Added."),
        ],
    );
    lines.push(tool_line(
        1,
        "Read",
        json!({"file_path": "/w/shop/src/cart.rs"}),
    ));
    lines.push(tool_line(
        2,
        "Edit",
        json!({"file_path": "/w/shop/src/cart.rs", "old_string": "a", "new_string": "b"}),
    ));
    lines.push(tool_line(
        3,
        "Write",
        json!({"file_path": "tests/cart_total.rs", "content": "#[test] fn t() {}"}),
    ));
    lines.push(tool_line(4, "Read", json!({"file_path": "/etc/hosts"})));
    lines.push(tool_line(
        5,
        "TodoWrite",
        json!({"todos": [
        {"content": "Fix rounding", "status": "completed"},
        {"content": "Check the tax path too", "status": "pending"},
        {"content": "Update the changelog", "status": "in_progress"}]}),
    ));
    let dir = home.root().join("projects/-w-shop");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{ID}.jsonl")), lines.join("\n") + "\n").unwrap();
    home
}

#[test]
fn files_become_entities_with_what_the_session_did_to_them() {
    let home = home();
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let filter = |relation| EdgeFilter {
        direction: Direction::Out,
        relations: vec![relation],
        ..EdgeFilter::default()
    };
    let names = |relation| {
        let mut n: Vec<String> = engine
            .graph()
            .neighbors(NodeId::episode(ID), &filter(relation), 100)
            .unwrap()
            .into_iter()
            .map(|n| n.node.name)
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(Relation::Read), ["/etc/hosts", "src/cart.rs"]);
    assert_eq!(names(Relation::Edited), ["src/cart.rs"]);
    assert_eq!(
        names(Relation::Created),
        ["tests/cart_total.rs"],
        "relative paths join the cwd"
    );
    // Files inside the project are PART_OF it; /etc/hosts is not.
    let (_, parts) = engine
        .neighbors(
            "project:shop",
            &EdgeFilter {
                relations: vec![Relation::PartOf],
                ..EdgeFilter::default()
            },
            100,
        )
        .unwrap();
    let mut parts: Vec<&str> = parts.iter().map(|n| n.node.name.as_str()).collect();
    parts.sort();
    assert_eq!(parts, ["src/cart.rs", "tests/cart_total.rs"]);
    let touched = engine
        .what_touched("file:src/cart.rs", &EdgeFilter::default(), 10)
        .unwrap();
    assert_eq!(touched.len(), 1);
    assert!(engine.graph().check().unwrap().is_empty());
}

#[test]
fn handoffs_are_written_in_eywa_format_with_an_index() {
    let home = home();
    let data = tempfile::tempdir().unwrap();
    let root = data.path().join("eywa");
    let engine = Engine::open(EngineConfig::new(&root, home.root())).unwrap();
    engine.ingest().unwrap();
    let handoff = engine.graph().handoff(ID).unwrap().unwrap();
    assert_eq!(
        handoff.sections.key_files,
        ["src/cart.rs", "tests/cart_total.rs"],
        "grouped by directory"
    );
    assert_eq!(
        handoff.sections.open_threads,
        ["Check the tax path too", "Update the changelog"]
    );
    assert_eq!(
        handoff.sections.what_happened,
        [
            "Asked: Fix the cart total rounding (1 more prompts followed)",
            "Edited 1 file: src/cart.rs; created 1 file: tests/cart_total.rs",
            "Completed 1 of 3 todos: Fix rounding"
        ]
    );

    let date = handoff.date;
    let file = root.join(format!("handoffs/{}/{ID:.8}.md", date.format("%Y/%m/%d")));
    let text = std::fs::read_to_string(&file).unwrap();
    let (front, sections) = parse_markdown(&text).unwrap();
    assert_eq!(front.session_id, &ID[..8]);
    assert_eq!(front.headline, handoff.headline);
    assert_eq!(front.projects, ["shop"]);
    assert_eq!(front.substance, handoff.substance);
    assert_eq!(sections.open_threads, handoff.sections.open_threads);

    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("handoff-index.json")).unwrap()).unwrap();
    assert_eq!(index["meta"]["handoff_count"], 1);
    assert_eq!(index["by_project"]["shop"], json!([&ID[..8]]));
    let entries = parse_index(&index).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].headline, handoff.headline);
}

/// A tool result line answering call `n`.
fn result_line(n: u32, is_error: bool) -> String {
    let at = days_ago(1) + chrono::Duration::minutes(i64::from(n) + 10);
    json!({"type": "user", "uuid": format!("r{n}"), "sessionId": ID, "cwd": "/w/shop",
           "timestamp": at.to_rfc3339(),
           "message": {"role": "user", "content": [{"type": "tool_result",
               "tool_use_id": format!("toolu_t{n}"), "is_error": is_error, "content": "x"}]}})
    .to_string()
}

#[test]
fn confidence_counts_the_messages_that_support_a_fact() {
    let home = ClaudeHome::new();
    let mut lines = session_lines(
        ID,
        "/w/shop",
        days_ago(1),
        &[(
            "Fix the cart rounding in cart.rs",
            "The cart rounding is fixed.",
        )],
    );
    for (n, tool, path, ok) in [
        (1, "Read", "/w/shop/src/cart.rs", true),
        (2, "Read", "/w/shop/src/cart.rs", true),
        (3, "Read", "/w/shop/src/cart.rs", true),
        (4, "Read", "/w/shop/src/missing.rs", false),
        (5, "Edit", "/w/shop/src/cart.rs", false),
    ] {
        lines.push(tool_line(n, tool, json!({"file_path": path})));
        lines.push(result_line(n, !ok));
    }
    home.write_raw(
        "-w-shop",
        &format!("{ID}.jsonl"),
        &(lines.join("\n") + "\n"),
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let (_, out) = engine
        .neighbors(&format!("session:{ID}"), &EdgeFilter::default(), 100)
        .unwrap();
    let confidence = |relation: Relation, name: &str| {
        out.iter()
            .find(|n| n.edge.relation == relation && n.node.name == name)
            .map(|n| n.edge.confidence)
            .unwrap_or_else(|| panic!("no {relation:?} {name}: {out:#?}"))
    };
    // Three clean reads: 1 - 0.5^4. One read that failed: 0.25.
    assert_eq!(confidence(Relation::Read, "src/cart.rs"), 0.9375);
    assert_eq!(confidence(Relation::Read, "src/missing.rs"), 0.25);
    // Its one Edit failed: the EDITED fact is doubtful, the reads are not.
    assert_eq!(confidence(Relation::Edited, "src/cart.rs"), 0.25);
    // Read: five calls (the fixture's exchange makes one, without a file), one failed.
    assert_eq!(confidence(Relation::Used, "Read"), 0.96875);
    // The session is in its project: structure, not inference.
    assert_eq!(confidence(Relation::Touched, "shop"), 1.0);
    // "rounding" is said by the prompt and the reply.
    assert_eq!(confidence(Relation::Mentions, "rounding"), 0.875);
}
