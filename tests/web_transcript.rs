//! A session's page shows what Claude Code kept beside the conversation: a tool result it
//! moved to a `tool-results` file (whole, not its preview), the plan handed to
//! `ExitPlanMode` as Markdown, the plan files the session carries, and where the
//! conversation was compacted.

use std::sync::Arc;

use eywa::engine::{Engine, EngineConfig};
use eywa::model::{Clock, Timestamp};
use serde_json::json;

use crate::handoff_quality::chain;
use crate::support::fixture::{ClaudeHome, days_ago, with_slug};
use crate::support::http;
use crate::support::server::TestServer;

const ID: &str = "fb000000-0000-4000-8000-000000000001";
const SLUG: &str = "quiet-harbor-lamp";

fn home() -> ClaudeHome {
    let home = ClaudeHome::new();
    let preview = format!(
        "<persisted-output>\nOutput too large (40.0KB). Full output saved to: \
         /home/u/.claude/projects/-w-ops/{ID}/tool-results/toolu_log1.txt\n\n\
         Preview (first 2KB):\nline 1\n</persisted-output>"
    );
    let plan = "# Fix the deploy\n\n1. Raise the **handshake** timeout\n2. Rerun the job\n";
    let lines = chain(
        ID,
        "/w/ops",
        &[
            ("user", json!("Why does the deploy log fail?")),
            (
                "assistant",
                json!([{"type": "tool_use", "id": "toolu_log1", "name": "Bash",
                        "input": {"command": "gh run view --log"}}]),
            ),
            (
                "user",
                json!([{"type": "tool_result", "tool_use_id": "toolu_log1", "content": preview}]),
            ),
            (
                "assistant",
                json!([{"type": "tool_use", "id": "toolu_plan1", "name": "ExitPlanMode",
                        "input": {"plan": plan}}]),
            ),
            (
                "user",
                json!([{"type": "tool_result", "tool_use_id": "toolu_plan1", "content": "User approved the plan"}]),
            ),
        ],
    );
    let mut lines: Vec<String> = lines.lines().map(str::to_owned).collect();
    // Compacted, then one more turn on the new root.
    let at = days_ago(1) + chrono::Duration::minutes(30);
    lines.push(
        json!({"type": "system", "subtype": "compact_boundary", "uuid": "cb-1",
               "parentUuid": null, "logicalParentUuid": format!("{ID}-4"), "sessionId": ID,
               "cwd": "/w/ops", "timestamp": at.to_rfc3339(),
               "compactMetadata": {"trigger": "auto", "preTokens": 155_000}})
        .to_string(),
    );
    lines.push(
        json!({"type": "user", "uuid": "cs-1", "parentUuid": "cb-1", "sessionId": ID,
               "cwd": "/w/ops", "isCompactSummary": true, "timestamp": at.to_rfc3339(),
               "message": {"role": "user", "content": "This session is being continued from a previous conversation. The deploy timed out in the handshake."}})
        .to_string(),
    );
    let lines = with_slug(lines, SLUG);
    home.write_raw("-w-ops", &format!("{ID}.jsonl"), &(lines.join("\n") + "\n"));
    let mut output = "deploy step ok\n".repeat(600);
    output.push_str("error: ZEBRAFISH77 handshake timed out\n");
    output.push_str(&"teardown ok\n".repeat(2_500));
    home.write_raw(
        &format!("-w-ops/{ID}/tool-results"),
        "toolu_log1.txt",
        &output,
    );
    let plans = home.root().join("plans");
    std::fs::create_dir_all(&plans).unwrap();
    std::fs::write(
        plans.join(format!("{SLUG}.md")),
        "# Deploy handshake plan\n\n- Raise the timeout to 30 s\n- Watch the next run\n",
    )
    .unwrap();
    home
}

#[test]
fn a_session_page_shows_tool_results_files_plans_and_compactions() {
    let home = home();
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let clock = Clock::manual(Timestamp(days_ago(0).timestamp_millis()));
    let server = TestServer::start_web(Arc::new(engine), clock, &[]);
    let page = http::get(server.addr, &format!("/sessions/{ID}"));
    assert_eq!(page.status, 200, "{}", page.body);
    let body = &page.body;

    // The result Claude Code moved out of the transcript, from its file.
    assert!(body.contains("ZEBRAFISH77 handshake timed out"), "{body}");
    assert!(!body.contains("Preview (first 2KB)"), "{body}");

    // The plan handed to ExitPlanMode, as Markdown, open.
    let call = body
        .split(r#"<details class="tool plan" open>"#)
        .nth(1)
        .expect("the plan's call, open");
    assert!(call.contains("<h1>Fix the deploy</h1>"), "{call}");
    assert!(call.contains("<strong>handshake</strong>"), "{call}");
    assert!(call.contains("User approved the plan"), "{call}");

    // The plan file the session carries (its slug), with its text and its node.
    let plans = body
        .split(r#"<section class="plans">"#)
        .nth(1)
        .expect("the plans");
    assert!(plans.contains("Deploy handshake plan"), "{plans}");
    assert!(
        plans.contains("<li>Raise the timeout to 30 s</li>"),
        "{plans}"
    );
    assert!(plans.contains(r#"href="/nodes/"#), "{plans}");

    // Where the conversation was compacted, before the summary it continues from.
    let boundary = body
        .find(r#"<p class="boundary" role="separator">"#)
        .expect("the compaction marked");
    let summary = body
        .find("The deploy timed out in the handshake.")
        .expect("the summary");
    assert!(boundary < summary);
    assert_eq!(body.matches(r#"class="boundary""#).count(), 1);
}
