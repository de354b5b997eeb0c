//! Seed 003: per-message fields in `GetSession` and exports (thinking on request), a whole
//! workspace migrated at once, and sessions named by their row in the last listing.

use serde_json::{Value, json};

use crate::handoff_quality::chain;
use crate::support::fixture::ClaudeHome;

const SHOP_A: &str = "e9000000-0000-4000-8000-000000000001";
const SHOP_B: &str = "e9000000-0000-4000-8000-000000000002";
const BLOG: &str = "e9000000-0000-4000-8000-000000000003";

fn home() -> ClaudeHome {
    let home = ClaudeHome::new();
    let mut lines = String::new();
    for l in chain(
        SHOP_A,
        "/w/shop",
        &[
            ("user", json!("Why is the total off by a cent?")),
            (
                "assistant",
                json!([{"type": "thinking", "thinking": "Floats summed before rounding, probably."}]),
            ),
            ("assistant", json!([{"type": "text", "text": "Floats are summed before rounding."}])),
        ],
    )
    .lines()
    {
        let mut v: Value = serde_json::from_str(l).unwrap();
        v["gitBranch"] = json!("fix/rounding");
        if v["type"] == "assistant" {
            v["message"]["stop_reason"] = json!("end_turn");
            v["message"]["usage"] = json!({"input_tokens": 12, "output_tokens": 34,
                "cache_creation_input_tokens": 5, "cache_read_input_tokens": 6});
        }
        lines.push_str(&(v.to_string() + "\n"));
    }
    home.write_raw("-w-shop", &format!("{SHOP_A}.jsonl"), &lines);
    home.write_raw(
        "-w-shop",
        &format!("{SHOP_B}.jsonl"),
        &chain(
            SHOP_B,
            "/w/shop/api",
            &[
                ("user", json!("Add a refund endpoint")),
                ("assistant", json!([{"type": "text", "text": "Added."}])),
            ],
        ),
    );
    home.write_raw(
        "-w-blog",
        &format!("{BLOG}.jsonl"),
        &chain(
            BLOG,
            "/w/blog",
            &[
                ("user", json!("Write the release post")),
                ("assistant", json!([{"type": "text", "text": "Written."}])),
            ],
        ),
    );
    home
}

struct Env {
    home: ClaudeHome,
    data: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let env = Env {
            home: home(),
            data: tempfile::tempdir().unwrap(),
        };
        let (ok, _, err) = env.run(&["ingest"]);
        assert!(ok, "{err}");
        env
    }

    fn run(&self, args: &[&str]) -> (bool, String, String) {
        crate::support::eywa_cli(&self.data.path().join("eywa"), self.home.root(), args)
    }

    fn json(&self, args: &[&str]) -> Value {
        let (ok, out, err) = self.run(args);
        assert!(ok, "eywa {args:?}: {err}");
        serde_json::from_str(&out).unwrap()
    }
}

#[test]
fn messages_carry_their_line_fields_and_thinking_on_request() {
    let env = Env::new();
    let plain = env.json(&["sessions", "show", SHOP_A, "--json"]);
    let messages = plain["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        2,
        "the thinking-only response is left out: {plain:#}"
    );
    let (prompt, answer) = (&messages[0], &messages[1]);
    assert_eq!(prompt["cwd"], "/w/shop");
    assert_eq!(prompt["git_branch"], "fix/rounding");
    assert_eq!(prompt["parent_uuid"], Value::Null);
    assert_eq!(answer["parent_uuid"], format!("{SHOP_A}-1"));
    assert_eq!(answer["model"], "claude-sonnet-4-5");
    assert_eq!(answer["stop_reason"], "end_turn");
    assert_eq!(
        answer["usage"],
        json!({"input_tokens": 12, "output_tokens": 34,
               "cache_creation_input_tokens": 5, "cache_read_input_tokens": 6})
    );
    assert!(answer.get("thinking").is_none());
    assert_eq!(
        prompt["is_sidechain"], false,
        "seed 003's isSidechain, false too"
    );

    let with = env.json(&["sessions", "show", SHOP_A, "--json", "--thinking"]);
    let messages = with["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[1]["thinking"],
        "Floats summed before rounding, probably."
    );
    let (ok, markdown, _) = env.run(&["sessions", "export", SHOP_A, "--thinking"]);
    assert!(ok);
    assert!(
        markdown.contains("> Floats summed before rounding, probably."),
        "{markdown}"
    );
    assert!(
        markdown.contains("## Assistant · claude-sonnet-4-5"),
        "{markdown}"
    );
    let (_, markdown, _) = env.run(&["sessions", "export", SHOP_A]);
    assert!(!markdown.contains("Floats summed before rounding, probably."));

    // GetSession carries the same fields; the CLI through a server prints the same JSON.
    let engine = eywa::engine::Engine::open(eywa::engine::EngineConfig::new(
        env.data.path().join("eywa"),
        env.home.root(),
    ))
    .unwrap();
    let server = crate::support::server::TestServer::start(engine);
    let url = format!("http://{}", server.addr());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let part = runtime.block_on(async {
        let mut sessions = eywa::api::pb::sessions_client::SessionsClient::connect(url)
            .await
            .unwrap();
        sessions
            .get_session(eywa::api::pb::GetSessionRequest {
                session: SHOP_A.into(),
                include_thinking: true,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
    });
    let thought = &part.messages[1];
    assert_eq!(thought.thinking, "Floats summed before rounding, probably.");
    let answer = &part.messages[2];
    assert_eq!(answer.model, "claude-sonnet-4-5");
    assert_eq!(answer.stop_reason, "end_turn");
    assert_eq!(answer.git_branch, "fix/rounding");
    assert_eq!(answer.parent_uuid, format!("{SHOP_A}-1"));
    assert_eq!(answer.usage.unwrap().output_tokens, 34);
    let served = env.json(&[
        "sessions",
        "show",
        SHOP_A,
        "--json",
        "--thinking",
        "--addr",
        &server.addr(),
    ]);
    assert_eq!(served["messages"], with["messages"]);
}

#[test]
fn a_whole_workspace_migrates_at_once() {
    let env = Env::new();
    let result = env.json(&[
        "sessions",
        "migrate",
        "--workspace",
        "/w/shop",
        "--to",
        "/w/shop-v2",
        "--json",
    ]);
    assert_eq!(result["success_count"], 2, "{result:#}");
    assert_eq!(result["failed_count"], 0);
    let target = env.home.root().join("projects/-w-shop-v2");
    for id in [SHOP_A, SHOP_B] {
        assert!(target.join(format!("{id}.jsonl")).is_file(), "{id}");
    }
    assert!(!target.join(format!("{BLOG}.jsonl")).exists());
    // Sessions and a workspace together are refused; an unknown workspace is named.
    let (ok, _, err) = env.run(&[
        "sessions",
        "migrate",
        SHOP_A,
        "--workspace",
        "/w/shop",
        "--to",
        "/w/x",
    ]);
    assert!(!ok);
    assert!(err.contains("cannot be used with"), "{err}");
    let (ok, _, err) = env.run(&[
        "sessions",
        "migrate",
        "--workspace",
        "/w/nowhere",
        "--to",
        "/w/x",
    ]);
    assert!(!ok);
    assert!(err.contains("no workspace `/w/nowhere`"), "{err}");
}

#[test]
fn sessions_are_named_by_their_row_in_the_last_listing() {
    let env = Env::new();
    let (ok, _, err) = env.run(&["sessions", "show", "2"]);
    assert!(!ok);
    assert!(err.contains("run it first"), "{err}");

    let (ok, listed, _) = env.run(&["sessions", "list", "--limit", "2", "--offset", "1"]);
    assert!(ok);
    let page = env.json(&[
        "sessions", "list", "--limit", "2", "--offset", "1", "--json",
    ]);
    let second = page["sessions"][0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        listed.contains(&format!("  2. {}", &second[..8])),
        "{listed}"
    );
    let by_number = env.json(&["sessions", "show", "2", "--json"]);
    assert_eq!(by_number["session_id"], second.as_str());
    let (ok, _, err) = env.run(&["sessions", "show", "1"]);
    assert!(!ok);
    assert!(err.contains("showed rows 2-3, not 1"), "{err}");
    let (ok, context, _) = env.run(&["context", "3", "--max-tokens", "4000"]);
    assert!(ok);
    let third = page["sessions"][1]["session_id"].as_str().unwrap();
    assert!(
        context.contains(&format!("--- Session {}", &third[..8])),
        "{context}"
    );
}
