//! Seed 004's Claude Code data: tool outputs kept in `tool-results` files, sessions that
//! only `sessions-index.json` still lists, index updates that re-title sessions, and
//! `messageCount` as a way to rank.

use eywa::engine::{Engine, EngineConfig, SearchRequest, SessionOrder};
use serde_json::json;

use crate::handoff_quality::chain;
use crate::support::fixture::{ClaudeHome, days_ago};

const BIG: &str = "fa000000-0000-4000-8000-000000000001";
const GONE: &str = "fa000000-0000-4000-8000-000000000002";
const LIVE: &str = "fa000000-0000-4000-8000-000000000003";

/// A Bash call whose 40,000-character output Claude Code moved to a `tool-results` file,
/// the transcript keeping a preview; a word is only in the file, past the preview.
fn tool_results_home() -> (ClaudeHome, String) {
    let home = ClaudeHome::new();
    let preview = "<persisted-output>\nOutput too large (40.0KB). Full output saved to: \
                   /home/u/.claude/projects/-w-ops/fa000000-0000-4000-8000-000000000001/\
                   tool-results/toolu_big1.txt\n\nPreview (first 2KB):\nline 1\n</persisted-output>";
    let lines = chain(
        BIG,
        "/w/ops",
        &[
            ("user", json!("Why does the deploy log fail?")),
            (
                "assistant",
                json!([{"type": "tool_use", "id": "toolu_big1", "name": "Bash",
                        "input": {"command": "gh run view --log"}}]),
            ),
            (
                "user",
                json!([{"type": "tool_result", "tool_use_id": "toolu_big1", "content": preview}]),
            ),
            (
                "assistant",
                json!([{"type": "text", "text": "The log shows a timeout."}]),
            ),
        ],
    );
    home.write_raw("-w-ops", &format!("{BIG}.jsonl"), &lines);
    let mut output = "deploy step ok\n".repeat(600); // 9,000 characters
    output.push_str("error: ZEBRAFISH77 handshake timed out\n");
    output.push_str(&"teardown ok\n".repeat(2_500));
    home.write_raw(
        &format!("-w-ops/{BIG}/tool-results"),
        "toolu_big1.txt",
        &output,
    );
    (home, output)
}

#[test]
fn tool_results_files_are_searchable_and_served_with_their_call() {
    let (home, output) = tool_results_home();
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let found = engine
        .search(&SearchRequest {
            query: "ZEBRAFISH77".into(),
            filter: eywa::model::SearchFilter {
                kinds: vec!["tool_result".into()],
                ..Default::default()
            },
            mode: eywa::retrieve::SearchMode::Lexical,
            ..SearchRequest::default()
        })
        .unwrap()
        .hits;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].session_id, BIG);
    assert_eq!(found[0].kind, "tool_result");

    let session = engine.session(BIG).unwrap();
    let call = session
        .messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .find(|c| c.id == "toolu_big1")
        .unwrap();
    let result = call.result.as_deref().unwrap();
    assert!(result.contains("ZEBRAFISH77"), "the file, not the preview");
    assert!(
        output.starts_with(result),
        "the file's text, cut like every result"
    );
    assert_eq!(result.chars().count(), 16_000);
}

/// A Claude home with one live session of the billing project.
fn billing_home() -> ClaudeHome {
    let home = ClaudeHome::new();
    home.write_raw(
        "-w-billing",
        &format!("{LIVE}.jsonl"),
        &chain(
            LIVE,
            "/w/billing",
            &[
                ("user", json!("Fix the invoice footer")),
                ("assistant", json!([{"type": "text", "text": "Fixed."}])),
            ],
        ),
    );
    home
}

fn write_index(home: &ClaudeHome, entries: serde_json::Value) {
    home.write_raw(
        "-w-billing",
        "sessions-index.json",
        &json!({"version": 1, "originalPath": "/w/billing", "entries": entries}).to_string(),
    );
}

fn entry(
    id: &str,
    summary: &str,
    first_prompt: &str,
    messages: u64,
    days: i64,
) -> serde_json::Value {
    json!({
        "sessionId": id,
        "fullPath": format!("/nowhere/-w-billing/{id}.jsonl"),
        "firstPrompt": first_prompt,
        "summary": summary,
        "messageCount": messages,
        "created": days_ago(days).to_rfc3339(),
        "modified": days_ago(days).to_rfc3339(),
        "gitBranch": "main",
        "projectPath": "/w/billing",
        "isSidechain": false,
    })
}

#[test]
fn index_only_sessions_are_listed_found_and_shown() {
    let home = billing_home();
    write_index(
        &home,
        json!([
            entry(
                GONE,
                "Move the billing cron to the queue worker",
                "Can you move the billing cron to the queue worker?",
                12,
                3
            ),
            entry(LIVE, "Invoice footer fix", "Fix the invoice footer", 2, 1),
        ]),
    );
    let data = tempfile::tempdir().unwrap();
    let engine = Engine::open(EngineConfig::new(data.path().join("eywa"), home.root())).unwrap();
    engine.ingest().unwrap();

    let page = engine.list_sessions(None, 10, 0).unwrap();
    let listed: Vec<(&str, &str, u32)> = page
        .sessions
        .iter()
        .map(|s| (s.session_id.as_str(), s.title.as_str(), s.message_count))
        .collect();
    assert_eq!(
        listed,
        [
            (LIVE, "Invoice footer fix", 2),
            (GONE, "Move the billing cron to the queue worker", 12)
        ]
    );
    // messageCount ranks: the deeper conversation first.
    let deep = engine
        .list_sessions_by(None, 10, 0, SessionOrder::Messages)
        .unwrap();
    assert_eq!(deep.sessions[0].session_id, GONE);

    let got = engine
        .get_handoffs("billing cron", &eywa::retrieve::GetOptions::default())
        .unwrap();
    assert_eq!(got.hits[0].handoff.session_id, GONE);
    let h = &got.hits[0].handoff;
    assert_eq!(h.headline, "Move the billing cron to the queue worker");
    assert!(
        h.sections.what_happened[0].starts_with("Asked: Move the billing cron"),
        "{:?}",
        h.sections
    );
    assert!(
        h.sections
            .what_happened
            .iter()
            .any(|b| b.contains("sessions-index.json (12 messages)"))
    );

    let shown = engine.session(GONE).unwrap();
    assert_eq!(shown.messages.len(), 1);
    assert_eq!(
        shown.messages[0].text,
        "Can you move the billing cron to the queue worker?"
    );
    assert_eq!(shown.messages[0].git_branch.as_deref(), Some("main"));

    // Read again: nothing new.
    let again = engine.ingest().unwrap();
    assert_eq!(again.files_read, 0);
    assert_eq!(engine.list_sessions(None, 10, 0).unwrap().total, 2);
    drop(engine);

    // The CLI ranks the same way, and refuses an order it does not know.
    let cli =
        |args: &[&str]| crate::support::eywa_cli(&data.path().join("eywa"), home.root(), args);
    let (ok, out, err) = cli(&["sessions", "list", "--sort", "messages", "--json"]);
    assert!(ok, "{err}");
    let page: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(page["sessions"][0]["session_id"], GONE);
    assert_eq!(page["sessions"][0]["message_count"], 12);
    let (ok, _, err) = cli(&["sessions", "list", "--sort", "size"]);
    assert!(!ok);
    assert!(err.contains("unknown order `size`"), "{err}");
    let engine = Engine::open(EngineConfig::new(data.path().join("eywa"), home.root())).unwrap();
    let server = crate::support::server::TestServer::start(engine);
    let addr = server.addr();
    let (ok, served, err) = cli(&[
        "sessions", "list", "--sort", "messages", "--json", "--addr", &addr,
    ]);
    assert!(ok, "{err}");
    assert_eq!(served, out, "the same through a server");
}

#[test]
fn an_updated_index_retitles_the_sessions_it_lists() {
    let home = billing_home();
    write_index(
        &home,
        json!([entry(
            LIVE,
            "Invoice footer fix",
            "Fix the invoice footer",
            2,
            1
        )]),
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let title = |e: &Engine| {
        e.session(LIVE)
            .unwrap()
            .episode
            .episode()
            .unwrap()
            .title
            .clone()
    };
    assert_eq!(title(&engine), "Invoice footer fix");
    let unchanged = engine.ingest().unwrap();
    assert_eq!(unchanged.files_read, 0, "an unchanged index reads nothing");
    let footer = || {
        entry(
            LIVE,
            "Footer totals for invoices",
            "Fix the invoice footer",
            4,
            1,
        )
    };

    write_index(
        &home,
        json!([
            footer(),
            entry(GONE, "Billing cron", "Move the billing cron", 3, 2)
        ]),
    );
    let report = engine.ingest().unwrap();
    assert_eq!(report.files_read, 1, "the session the index changed, again");
    assert_eq!(title(&engine), "Footer totals for invoices");
    // A session only the index knows is re-titled when its entry changes, too.
    let gone = |e: &Engine| {
        e.session(GONE)
            .unwrap()
            .episode
            .episode()
            .unwrap()
            .title
            .clone()
    };
    assert_eq!(gone(&engine), "Billing cron");
    write_index(
        &home,
        json!([
            footer(),
            entry(
                GONE,
                "Billing cron moved to the queue",
                "Move the billing cron",
                5,
                2
            )
        ]),
    );
    engine.ingest().unwrap();
    assert_eq!(gone(&engine), "Billing cron moved to the queue");
    assert_eq!(engine.list_sessions(None, 10, 0).unwrap().total, 2);
    assert_eq!(
        engine.graph().handoff(LIVE).unwrap().unwrap().headline,
        "Footer totals for invoices"
    );
}

/// A store whose sessions an older extraction read (a smaller `extracted` in their source
/// records) reads them again, whole, on the next ingest; then they are current.
#[test]
fn sessions_read_by_an_older_extraction_are_read_again() {
    let home = billing_home();
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let path = home
        .root()
        .join(format!("projects/-w-billing/{LIVE}.jsonl"))
        .to_string_lossy()
        .into_owned();
    let mut record = engine.graph().source(&path).unwrap().unwrap();
    assert_eq!(record.extracted, eywa::extract::EXTRACT_VERSION);
    record.extracted -= 1;
    let mut batch = eywa_storage::Batch::new();
    batch
        .put(
            eywa_storage::Keyspace::Sources,
            path.as_bytes().to_vec(),
            &record,
        )
        .unwrap();
    engine.graph().store().apply(batch).unwrap();
    let report = engine.ingest().unwrap();
    assert_eq!(report.files_read, 1, "read again");
    let record = engine.graph().source(&path).unwrap().unwrap();
    assert_eq!(record.extracted, eywa::extract::EXTRACT_VERSION);
    assert_eq!(record.versions.len(), 0, "the same file: no new version");
    assert_eq!(engine.ingest().unwrap().files_read, 0);
}
