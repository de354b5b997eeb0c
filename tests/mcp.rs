//! eywa's MCP server, driven by real clients: the official Python SDK over stdio (`eywa
//! mcp`) and over streamable HTTP (`serve`'s `/mcp`), and Claude Code's own CLI.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::clients;
use crate::support::fixture::{ClaudeHome, days_ago};
use crate::support::serve::Serve;

const LOGIN: &str = "a1b2c3d4-0000-4000-8000-000000000001";
const BILLING: &str = "b2c3d4e5-0000-4000-8000-000000000002";

/// Two sessions of one project and one of another, read into a store.
struct Env {
    home: ClaudeHome,
    data: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let home = ClaudeHome::new();
        home.session(
            LOGIN,
            "/w/webapp",
            days_ago(2),
            &[
                (
                    "Fix the login redirect loop in the webapp",
                    "The session cookie was set on the wrong path; fixed the login redirect.",
                ),
                (
                    "Add a test for the login redirect",
                    "Added a regression test for the redirect loop.",
                ),
            ],
        );
        home.session(
            BILLING,
            "/w/webapp",
            days_ago(1),
            &[(
                "Wire invoices into the billing page after the login redirect",
                "The billing page now lists invoices from the ledger; the login redirect \
                 lands there.",
            )],
        );
        home.session(
            "c3d4e5f6-0000-4000-8000-000000000003",
            "/w/garden",
            days_ago(3),
            &[("Sketch the herb beds", "Drew three beds by the fence.")],
        );
        let env = Env {
            home,
            data: tempfile::tempdir().unwrap(),
        };
        crate::support::succeed(env.eywa().arg("ingest"));
        env
    }

    fn eywa(&self) -> Command {
        crate::support::eywa_command(self.data.path(), self.home.root())
    }

    fn serve(&self) -> Serve {
        let mut cmd = self.eywa();
        cmd.args(["serve", "--addr", "127.0.0.1:0", "--watch-interval-ms", "0"]);
        Serve::spawn(cmd)
    }

    /// Runs `tests/mcp/drive.py` over `transport` (`stdio`, or `http` with a URL).
    fn drive(&self, python: &Path, target: &[&str], calls: &Value) -> Value {
        let file = self.data.path().join("calls.json");
        std::fs::write(&file, calls.to_string()).unwrap();
        let mut cmd = Command::new(python);
        cmd.arg(clients::script("drive.py")).args(target).arg(&file);
        crate::support::eywa_env(&mut cmd, self.data.path(), self.home.root());
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "drive.py failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "drive.py printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }
}

const TOOLS: [&str; 12] = [
    "eywa_get",
    "eywa_extract",
    "eywa_search",
    "eywa_context",
    "eywa_related",
    "eywa_what_touched",
    "eywa_walk",
    "eywa_session",
    "eywa_remember",
    "eywa_recall",
    "eywa_forget",
    "eywa_docs",
];

/// A call to every tool that must answer, with a text its answer must hold.
fn good_calls() -> Vec<(Value, &'static str)> {
    vec![
        (
            json!({"tool": "eywa_get", "arguments": {}}),
            "## Eywa: 3 past sessions\n# ",
        ),
        (
            json!({"tool": "eywa_get", "arguments":
                {"query": "billing invoices", "days_back": "30", "max_handoffs": 9}}),
            "## Eywa: 1 past session\n# Wire invoices into the billing page",
        ),
        (
            json!({"tool": "eywa_extract", "arguments": {"session_id": LOGIN}}),
            "Handoff extracted: a1b2c3d4.md",
        ),
        (
            json!({"tool": "eywa_search", "arguments": {"query": "redirect loop"}}),
            "claude --resume a1b2c3d4-0000-4000-8000-000000000001",
        ),
        (
            json!({"tool": "eywa_context", "arguments": {"sessions": "a1b2c3d4", "max_tokens": 800}}),
            "Fix the login redirect loop",
        ),
        (
            json!({"tool": "eywa_related", "arguments": {"session": "a1b2c3d4"}}),
            "session `b2c3d4e5`",
        ),
        (
            json!({"tool": "eywa_what_touched", "arguments": {"entity": "project:webapp"}}),
            "session `a1b2c3d4`",
        ),
        (
            json!({"tool": "eywa_walk", "arguments": {"node": "project:webapp", "depth": 1}}),
            "session `b2c3d4e5`",
        ),
        (
            json!({"tool": "eywa_session", "arguments": {"session": "b2c3d4e5"}}),
            "cd /w/webapp && claude --resume b2c3d4e5-0000-4000-8000-000000000002",
        ),
        (
            json!({"tool": "eywa_remember", "arguments": {"content":
                "Deploys of the webapp need the VPN up", "type": "LTM", "importance": 0.8,
                "project": "webapp", "tags": ["ops"]}}),
            "Remembered `",
        ),
        (
            json!({"tool": "eywa_recall", "arguments": {"query": "deploys VPN"}}),
            "Deploys of the webapp need the VPN up",
        ),
        (
            json!({"tool": "eywa_docs", "arguments": {}}),
            "## eywa: 0 document(s)",
        ),
    ]
}

/// A bad call to every tool, with what its tool error must say.
fn bad_calls() -> Vec<(Value, &'static str)> {
    vec![
        (
            json!({"tool": "eywa_get", "arguments": {"days_back": "soon"}}),
            "days_back must be an integer",
        ),
        (
            json!({"tool": "eywa_get", "arguments": {"max_handoffs": 0}}),
            "max_handoffs must be from 1",
        ),
        (
            json!({"tool": "eywa_get", "arguments": {"qurey": "x"}}),
            "takes no argument `qurey`",
        ),
        (
            json!({"tool": "eywa_extract", "arguments": {"session_id": "ffffffff-nope"}}),
            "no session transcript",
        ),
        (
            json!({"tool": "eywa_search", "arguments": {}}),
            "eywa_search needs \"query\"",
        ),
        (
            json!({"tool": "eywa_search", "arguments": {"query": "x", "mode": "fuzzy"}}),
            "mode must be hybrid, lexical or semantic",
        ),
        (
            json!({"tool": "eywa_context", "arguments": {"sessions": []}}),
            "at least one session",
        ),
        (
            json!({"tool": "eywa_related", "arguments": {"session": 5}}),
            "session must be a string",
        ),
        (
            json!({"tool": "eywa_what_touched", "arguments": {"entity": "project:nowhere"}}),
            "no project named `nowhere`",
        ),
        (
            json!({"tool": "eywa_walk", "arguments": {"node": "project:webapp", "depth": 99}}),
            "depth must be from 1 to 4",
        ),
        (
            json!({"tool": "eywa_session", "arguments": {"session": "0f0f0f0f"}}),
            "0f0f0f0f",
        ),
        (
            json!({"tool": "eywa_remember", "arguments": {"content": "x", "importance": 3}}),
            "importance must be a number from 0 to 1",
        ),
        (
            json!({"tool": "eywa_recall", "arguments": {"query": " "}}),
            "query must not be empty",
        ),
        (
            json!({"tool": "eywa_forget", "arguments": {"id": "0000000000000000"}}),
            "0000000000000000",
        ),
        (
            json!({"tool": "eywa_docs", "arguments": {"document": "/no/such/file.md"}}),
            "/no/such/file.md",
        ),
    ]
}

/// Every tool listed and described, every good call answered with what it must hold, every
/// bad one a tool error saying what was wrong (never a protocol error); then a memory
/// forgotten through the tools is no longer recalled.
fn exercise(env: &Env, python: &Path, target: &[&str]) -> Value {
    let good = good_calls();
    let bad = bad_calls();
    let calls: Vec<Value> = good.iter().chain(&bad).map(|(c, _)| c.clone()).collect();
    let out = env.drive(python, target, &Value::Array(calls));
    assert_eq!(out["server"], "eywa");
    let listed: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, TOOLS);
    for tool in out["tools"].as_array().unwrap() {
        assert!(tool["description"].as_str().unwrap().len() > 40, "{tool}");
        assert_eq!(tool["schema"]["type"], "object");
    }
    let results = out["results"].as_array().unwrap();
    for ((call, want), result) in good.iter().chain(&bad).zip(results) {
        let bad_call = bad.iter().any(|(c, _)| c == call);
        assert!(result.get("protocol_error").is_none(), "{call}: {result}");
        assert_eq!(result["is_error"], bad_call, "{call}: {result}");
        let text = result["text"].as_str().unwrap();
        assert!(text.contains(want), "{call}: wanted {want:?} in:\n{text}");
    }
    // Forgetting, with the id remembering gave.
    let remembered = results[9]["text"].as_str().unwrap();
    let id = remembered.split('`').nth(1).unwrap();
    let again = env.drive(
        python,
        target,
        &json!([
            {"tool": "eywa_forget", "arguments": {"id": id, "reason": "moved to LDAP"}},
            {"tool": "eywa_recall", "arguments": {"query": "deploys VPN"}},
        ]),
    );
    assert_eq!(again["results"][0]["is_error"], false, "{again}");
    let recalled = again["results"][1]["text"].as_str().unwrap();
    assert!(!recalled.contains("VPN up"), "{recalled}");
    out
}

#[test]
fn eywa_mcp_over_stdio_answers_every_tool_and_refuses_bad_arguments() {
    let Some(python) = clients::mcp_python() else {
        return;
    };
    let env = Env::new();
    let out = exercise(&env, &python, &["stdio", env!("CARGO_BIN_EXE_eywa")]);
    // Without a server, each call opened the store and closed it: the CLI still can.
    let status = env.eywa().args(["memory", "list"]).output().unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    // While a server runs, `eywa mcp` asks it, and answers the same.
    let server = env.serve();
    let calls = json!([{"tool": "eywa_get", "arguments": {}}]);
    let served = env.drive(&python, &["stdio", env!("CARGO_BIN_EXE_eywa")], &calls);
    assert_eq!(served["results"][0], out["results"][0]);
    server.stop();
}

#[test]
fn serve_answers_the_same_tools_over_streamable_http() {
    let Some(python) = clients::mcp_python() else {
        return;
    };
    let env = Env::new();
    let server = env.serve();
    let url = format!("http://{}/mcp", server.addr);
    exercise(&env, &python, &["http", &url]);
    // The gRPC services still answer on the same port.
    crate::support::succeed(env.eywa().args(["stats", "--json"]));
    server.stop();
}

#[test]
fn claude_code_lists_eywa_connected_over_stdio_and_http() {
    let Some(claude) = clients::claude() else {
        return;
    };
    let env = Env::new();
    let server = env.serve();
    let home = tempfile::tempdir().unwrap();
    let claude_cmd = |args: &[&str]| clients::run_claude(&claude, home.path(), args);
    let data = format!("EYWA_DATA_DIR={}", env.data.path().display());
    let claude_dir = format!("EYWA_CLAUDE_DIR={}", env.home.root().display());
    claude_cmd(&[
        "mcp",
        "add",
        "--scope",
        "user",
        "eywa",
        "-e",
        &data,
        "-e",
        &claude_dir,
        "--",
        env!("CARGO_BIN_EXE_eywa"),
        "mcp",
    ]);
    let url = format!("http://{}/mcp", server.addr);
    claude_cmd(&[
        "mcp",
        "add",
        "--scope",
        "user",
        "--transport",
        "http",
        "eywa-http",
        &url,
    ]);
    let listed = claude_cmd(&["mcp", "list"]);
    for name in ["eywa:", "eywa-http:"] {
        let line = listed
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} not listed:\n{listed}"));
        assert!(line.contains("Connected"), "{line}");
    }
    server.stop();
}

/// One handoff of a Python-Eywa folder: (short id, days ago, minutes, headline, projects,
/// keywords, substance).
type Fixture = (
    &'static str,
    i64,
    u32,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    u8,
);

const HANDOFFS: [Fixture; 8] = [
    (
        "1a000001",
        1,
        45,
        "Cut the river mcp latency",
        &["river"],
        &["mcp", "latency", "tokio"],
        2,
    ),
    (
        "1a000002",
        3,
        10,
        "Sorbent pricing review",
        &["sorbent"],
        &["pricing", "reasoning-tokens"],
        1,
    ),
    (
        "1a000003",
        5,
        120,
        "River ingest rewrite",
        &["river", "ingest"],
        &["parser", "mcp-server"],
        2,
    ),
    (
        "1a000004",
        9,
        0,
        "Garden irrigation timer",
        &["garden"],
        &["irrigation", "timer"],
        1,
    ),
    ("1a000005", 2, 30, "Nothing done", &["river"], &["mcp"], 0),
    (
        "1a000006",
        40,
        60,
        "Old river mcp notes",
        &["river"],
        &["mcp", "notes"],
        1,
    ),
    (
        "1a000007",
        12,
        5,
        "Sorbent reasoning tokens budget",
        &["sorbent"],
        &["reasoning-tokens", "budget"],
        2,
    ),
    (
        "1a000008",
        0,
        15,
        "Tokio runtime tuning",
        &["tooling"],
        &["tokio", "runtime"],
        1,
    ),
];

/// The folder, its files in seed 000's format.
fn python_eywa_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let today = chrono::Local::now().date_naive();
    let mut handoffs = serde_json::Map::new();
    let mut by_project: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    let mut by_keyword: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for (id, days, minutes, headline, projects, keywords, substance) in HANDOFFS {
        let date = today - chrono::Duration::days(days);
        let folder = dir
            .path()
            .join(format!("handoffs/{}", date.format("%Y/%m/%d")));
        std::fs::create_dir_all(&folder).unwrap();
        let body = if substance == 0 {
            "No meaningful work.".to_owned()
        } else {
            let mut sections = vec![format!(
                "## What Happened\n\n- Worked on {}.\n- Measured it twice.",
                headline.to_lowercase()
            )];
            sections.push(format!(
                "## Insights\n\n- **{}** -- keep it small",
                keywords[0]
            ));
            if substance == 2 {
                sections.push(format!("## Key Files\n\n- src/{}.rs", keywords[0]));
            }
            sections.push(format!("## Open Threads\n\n- Follow up on {}", keywords[1]));
            sections.join("\n\n")
        };
        std::fs::write(
            folder.join(format!("{id}.md")),
            format!(
                "---\nsession_id: {id}\ndate: {date}\nduration: {minutes}m\nheadline: {headline}\n\
                 projects: [{}]\nkeywords: [{}]\nsubstance: {substance}\n---\n\n# {headline}\n\n{body}\n",
                projects.join(", "),
                keywords.join(", ")
            ),
        )
        .unwrap();
        handoffs.insert(
            id.to_owned(),
            json!({"date": date.to_string(), "headline": headline, "projects": projects,
                   "keywords": keywords, "substance": substance, "duration_minutes": minutes}),
        );
        for p in projects {
            by_project.entry(p).or_default().push(id);
        }
        for k in keywords {
            by_keyword.entry(k).or_default().push(id);
        }
    }
    let index = json!({"meta": {"handoff_count": HANDOFFS.len()}, "handoffs": handoffs,
                       "by_project": by_project, "by_keyword": by_keyword});
    std::fs::write(dir.path().join("handoff-index.json"), index.to_string()).unwrap();
    dir
}

/// For the same Python-Eywa folder, `eywa_get` answers the text the Python eywa-mcp does,
/// as seed 000's rules and its answer shape give it (`tests/mcp/eywa_get_reference.py`).
#[test]
fn eywa_get_answers_what_the_python_eywa_mcp_answers() {
    let Some(python) = clients::mcp_python() else {
        return;
    };
    let folder = python_eywa_folder();
    let env = Env {
        home: ClaudeHome::new(),
        data: tempfile::tempdir().unwrap(),
    };
    crate::support::succeed(env.eywa().arg("import").arg(folder.path()));
    let asks = [
        json!({}),
        json!({"query": "river mcp"}),
        json!({"query": "river mcp", "days_back": 30, "max_handoffs": 5}),
        json!({"query": "sorbent reasoning tokens"}),
        json!({"query": "tokio", "max_handoffs": 2}),
        json!({"query": "irrigation", "days_back": 3}),
        json!({"query": "nowhere-at-all"}),
        json!({"query": "mcp latency", "days_back": 60, "max_handoffs": 9}),
        json!({"days_back": 0}),
    ];
    let file = env.data.path().join("asks.json");
    std::fs::write(&file, Value::Array(asks.to_vec()).to_string()).unwrap();
    let reference = Command::new(&python)
        .arg(clients::script("eywa_get_reference.py"))
        .arg(folder.path())
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        reference.status.success(),
        "{}",
        String::from_utf8_lossy(&reference.stderr)
    );
    let expected: Vec<String> = serde_json::from_slice(&reference.stdout).unwrap();
    let calls: Vec<Value> = asks
        .iter()
        .map(|a| json!({"tool": "eywa_get", "arguments": a}))
        .collect();
    let got = env.drive(
        &python,
        &["stdio", env!("CARGO_BIN_EXE_eywa")],
        &Value::Array(calls),
    );
    for ((ask, want), result) in asks
        .iter()
        .zip(&expected)
        .zip(got["results"].as_array().unwrap())
    {
        assert_eq!(result["is_error"], false, "{ask}: {result}");
        assert_eq!(result["text"].as_str().unwrap(), want, "eywa_get({ask})");
    }
    // Every ask came out differently: the fixture tells the rules apart.
    let distinct: std::collections::HashSet<&String> = expected.iter().collect();
    assert!(distinct.len() >= 7, "{expected:#?}");
}

/// A live `eywa mcp` without a server lets the store go soon after each call: the CLI
/// and a hook beside it still work, and its next call opens the store again.
#[test]
fn an_idle_eywa_mcp_does_not_hold_the_store() {
    use std::io::{BufRead, BufReader, Write};
    let env = Env::new();
    let mut child = env
        .eywa()
        .arg("mcp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |id: u64, method: &str, params: Value| -> Value {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if id == 2 {
            // The handshake's end, once, before the first call.
            let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            writeln!(stdin, "{done}").unwrap();
        }
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "eywa mcp closed stdout"
            );
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == id {
                return answer["result"].clone();
            }
        }
    };
    ask(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "test", "version": "0"}}),
    );
    let call = json!({"name": "eywa_search", "arguments": {"query": "invoices"}});
    for id in 2..4 {
        let result = ask(id, "tools/call", call.clone());
        assert_eq!(result["isError"], false, "{result}");
        // Beside it, the CLI opens the store (waiting at most for the linger and a close).
        crate::support::succeed(env.eywa().args(["memory", "list", "--json"]));
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
