//! Issue 31: what the seeds and the README promise, on every path: a copied session is a
//! session of its own; every label, subagent transcript and index-only session is found;
//! searches look in the conversation by default; old handoffs carry their age's notice.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::eywa_command;
use crate::support::fixture::{ClaudeHome, days_ago, session_lines};

const ID: &str = "c0b1e500-0000-4000-8000-000000000001";
const AGENT: &str = "a31c0b1e5a31c0b1e";

/// Runs `cmd`, failing the test when it has not exited within `limit`: what it printed.
fn within(limit: Duration, cmd: &mut Command) -> Output {
    fed(limit, cmd, None)
}

/// [`within`], with `stdin` written to the command's standard input.
fn fed(limit: Duration, cmd: &mut Command, stdin: Option<&[u8]>) -> Output {
    use std::io::Write;
    let input = if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    let mut child = cmd
        .stdin(input)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(bytes) = stdin {
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    let pid = child.id();
    let (done, out) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    if let Ok(output) = out.recv_timeout(limit) {
        return output.unwrap();
    }
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    panic!("{cmd:?} did not finish within {limit:?}");
}

struct Env {
    home: ClaudeHome,
    data: tempfile::TempDir,
}

impl Env {
    fn new(home: ClaudeHome) -> Env {
        Env {
            home,
            data: tempfile::tempdir().unwrap(),
        }
    }

    fn eywa(&self, args: &[&str]) -> Command {
        let mut cmd = eywa_command(self.data.path(), self.home.root());
        cmd.args(args);
        cmd
    }

    /// Runs eywa within 60 s: (succeeded, stdout, stderr).
    fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = within(Duration::from_secs(60), &mut self.eywa(args));
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Runs eywa within 60 s; it must succeed. Its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "eywa {args:?} failed: {err}\n{out}");
        out
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.ok(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
    }

    /// `field` of each hit of `eywa search QUERY --mode lexical --json` and `extra`.
    fn hit_fields(&self, query: &str, extra: &[&str], field: &str) -> Vec<String> {
        let mut args = vec!["search", query, "--mode", "lexical", "--json"];
        args.extend_from_slice(extra);
        self.json(&args)["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h[field].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

/// A session in /w/app with a nested subagent, whose words are its own.
fn app_home() -> ClaudeHome {
    let home = ClaudeHome::new();
    let lines = session_lines(
        ID,
        "/w/app",
        days_ago(2),
        &[
            (
                "Tune the heron scheduler backoff",
                "Raised the backoff to 40 ms.",
            ),
            ("Now document the heron retry rules", "Documented them."),
        ],
    );
    home.write_raw("-w-app", &format!("{ID}.jsonl"), &(lines.join("\n") + "\n"));
    let agent = [
        json!({"type": "user", "uuid": "ag31-u", "isSidechain": true, "sessionId": ID,
               "agentId": AGENT, "cwd": "/w/app", "timestamp": days_ago(2).to_rfc3339(),
               "message": {"role": "user", "content": "Find every heron retry call"}}),
        json!({"type": "assistant", "uuid": "ag31-a", "parentUuid": "ag31-u",
               "isSidechain": true, "sessionId": ID, "agentId": AGENT, "cwd": "/w/app",
               "timestamp": days_ago(2).to_rfc3339(),
               "message": {"id": "m-ag31", "role": "assistant",
                           "content": [{"type": "text", "text": "Three calls, all in retry.rs."}]}}),
    ]
    .map(|l| l.to_string())
    .join("\n");
    home.write_raw(
        &format!("-w-app/{ID}/subagents"),
        &format!("agent-{AGENT}.jsonl"),
        &(agent + "\n"),
    );
    home
}

fn session_ids(listing: &Value) -> Vec<String> {
    listing["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap().to_owned())
        .collect()
}

fn touched_sessions(touched: &Value) -> Vec<String> {
    touched["touches"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["episode"]["episode"]["session_id"].as_str())
        .map(str::to_owned)
        .collect()
}

#[test]
fn issue_31_a_copied_session_is_a_session_of_its_own_on_every_path() {
    let env = Env::new(app_home());
    env.ok(&["ingest"]);
    env.ok(&["sessions", "migrate", &ID[..8], "--to", "/x/copy"]);
    env.ok(&["ingest"]);

    // Every request ends, and the store checks clean.
    let found = env.json(&["sessions", "search", "heron", "--json"]);
    let mut hits: Vec<&str> = found["matches"]
        .as_array()
        .unwrap_or_else(|| panic!("{found}"))
        .iter()
        .filter_map(|m| m["session_id"].as_str())
        .collect();
    hits.dedup();
    assert!(hits.contains(&ID), "{found}");
    let copy = hits
        .iter()
        .find(|s| **s != ID && s.starts_with(ID))
        .unwrap_or_else(|| panic!("the copy is found as a session of its own: {found}"))
        .to_string();
    let (ok, out, err) = env.run(&["check"]);
    assert!(ok, "check after a copy: {out}{err}");

    // Listed once each, the totals agreeing with the pages.
    let all = env.json(&["sessions", "list", "--json"]);
    assert_eq!(all["total"], 2, "{all}");
    assert_eq!(session_ids(&all).len(), 2, "{all}");
    let next = env.json(&["sessions", "list", "--json", "--offset", "2"]);
    assert_eq!(session_ids(&next).len(), 0);
    assert_eq!(next["has_more"], false);
    // Each in its own workspace, touching its own project.
    let app = env.json(&["sessions", "list", "--workspace", "/w/app", "--json"]);
    assert_eq!(session_ids(&app), [ID], "{app}");
    let copied = env.json(&["sessions", "list", "--workspace", "/x/copy", "--json"]);
    assert_eq!(
        session_ids(&copied),
        std::slice::from_ref(&copy),
        "{copied}"
    );
    let touched = env.json(&["graph", "touched", "project:app", "--json"]);
    assert!(
        touched_sessions(&touched).contains(&ID.to_owned()),
        "{touched}"
    );
    assert!(!touched_sessions(&touched).contains(&copy), "{touched}");
    let touched = env.json(&["graph", "touched", "project:copy", "--json"]);
    assert!(touched_sessions(&touched).contains(&copy), "{touched}");

    // The short id names both: the answer says so and how to pick one.
    let (ok, _, err) = env.run(&["sessions", "show", &ID[..8]]);
    assert!(!ok);
    assert!(err.contains("copies") && err.contains("-x-copy"), "{err}");
    // A whole id, or a listing number, picks one; each holds every message.
    let original = env.json(&["sessions", "show", ID, "--json"]);
    let twin = env.json(&["sessions", "show", &copy, "--json"]);
    let count = |s: &Value| s["messages"].as_array().unwrap().len();
    assert_eq!(count(&original), 4, "{original}");
    assert_eq!(count(&twin), 4, "{twin}");
    assert_eq!(twin["cwd"], "/x/copy");
    // Listed by a short id of its own.
    let listed = env.ok(&["sessions", "list", "--workspace", "/x/copy"]);
    assert!(listed.contains(&eywa::claude::short_id(&copy)), "{listed}");
    assert!(eywa::claude::short_id(&copy).contains('~'));
    let first = env.json(&["sessions", "show", "1", "--json"]);
    assert_eq!(first["session_id"], copy.as_str());
    // Resumed by Claude Code's id, from its own workspace.
    let export = env.ok(&["sessions", "export", &copy]);
    assert!(
        export.contains(&format!("cd /x/copy && claude --resume {ID}`")),
        "{export}"
    );
    // Its subagent is the copy's, and shows its messages.
    let agents = twin["agent_ids"].as_array().cloned().unwrap_or_default();
    assert!(
        agents.is_empty() || agents.iter().any(|a| a == AGENT),
        "{twin}"
    );

    // Beside a running server: the same answers, and SIGTERM stops it within its grace
    // with a request on the wire.
    let serve = crate::support::serve::Serve::spawn(env.eywa(&["serve", "--addr", "127.0.0.1:0"]));
    let through = env.json(&["sessions", "search", "heron", "--json"]);
    assert_eq!(through, found);
    let (ok, out, err) = env.run(&["check"]);
    assert!(ok, "check beside serve: {out}{err}");
    let in_flight = held_request(&serve.addr);
    let started = Instant::now();
    let pid = serve.pid().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let lines = serve.wait_for(Duration::from_secs(20), |_| false);
    let took = started.elapsed();
    assert!(
        took < eywa::server::SHUTDOWN_GRACE,
        "serve took {took:?} to stop: {lines:#?}"
    );
    drop(in_flight);
}

/// A gRPC request whose body never ends: in flight until the server closes it.
fn held_request(addr: &str) -> std::net::TcpStream {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    // The HTTP/2 preface, an empty SETTINGS, then HEADERS for a call with no END_STREAM.
    stream
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .unwrap();
    stream.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).unwrap();
    let mut block = Vec::new();
    for (name, value) in [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/eywa.v1.Sessions/SearchSessions"),
        (":authority", addr),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ] {
        // Literal header field without indexing, new name (RFC 7541 §6.2.2).
        block.push(0);
        block.push(name.len() as u8);
        block.extend_from_slice(name.as_bytes());
        block.push(value.len() as u8);
        block.extend_from_slice(value.as_bytes());
    }
    let len = block.len() as u32;
    let mut frame = vec![
        (len >> 16) as u8,
        (len >> 8) as u8,
        len as u8,
        1,
        0x4,
        0,
        0,
        0,
        1,
    ];
    frame.extend_from_slice(&block);
    stream.write_all(&frame).unwrap();
    stream
}

#[test]
fn issue_31_a_moved_session_stays_one_session_and_the_store_checks_clean() {
    let env = Env::new(app_home());
    env.ok(&["ingest"]);
    env.ok(&[
        "sessions",
        "migrate",
        &ID[..8],
        "--to",
        "/x/moved",
        "--move",
    ]);
    env.ok(&["ingest"]);
    let (ok, out, err) = env.run(&["check"]);
    assert!(ok, "check after a move: {out}{err}");
    let all = env.json(&["sessions", "list", "--json"]);
    assert_eq!(session_ids(&all), [ID], "{all}");
    assert_eq!(all["total"], 1);
    let moved = env.json(&["sessions", "show", &ID[..8], "--json"]);
    assert_eq!(moved["cwd"], "/x/moved");
}

/// A file of summary lines: one labels a message of another file, one a message in no
/// file, one has no leaf at all.
#[test]
fn issue_31_every_summary_label_of_a_file_is_found_and_still_titles_its_leaf() {
    let home = ClaudeHome::new();
    let labelled = "d31ab000-0000-4000-8000-000000000001";
    let labeller = "d31ab000-0000-4000-8000-000000000002";
    home.session(
        labelled,
        "/w/lab",
        days_ago(3),
        &[("Fix the quilt", "Fixed.")],
    );
    let leaf = format!("{labelled}-a0");
    let mut lines = vec![
        json!({"type": "summary", "summary": "Walrus ledger reconciliation", "leafUuid": leaf})
            .to_string(),
        json!({"type": "summary", "summary": "Narwhal invoice export",
               "leafUuid": "99999999-9999-4999-8999-999999999999"})
        .to_string(),
        json!({"type": "summary", "summary": "Ocelot cache warmup"}).to_string(),
    ];
    lines.extend(session_lines(
        labeller,
        "/w/lab",
        days_ago(1),
        &[("Carry on with the ledgers", "Carried on.")],
    ));
    home.write_raw(
        "-w-lab",
        &format!("{labeller}.jsonl"),
        &(lines.join("\n") + "\n"),
    );
    let env = Env::new(home);
    env.ok(&["ingest"]);
    let labels = |query: &str| env.hit_fields(query, &["-t", "summary_label"], "session_id");
    // Each label of the file is its session's.
    assert_eq!(labels("narwhal"), [labeller]);
    assert_eq!(labels("ocelot"), [labeller]);
    assert!(labels("walrus").contains(&labeller.to_owned()));
    // A label whose leaf is in another file still titles that file's session.
    assert!(labels("walrus").contains(&labelled.to_owned()));
    let shown = env.json(&["sessions", "show", labelled, "--json"]);
    assert_eq!(shown["title"], "Walrus ledger reconciliation", "{shown}");

    // A text index built again from the store holds them all too.
    std::fs::remove_dir_all(env.data.path().join("store/index/text")).unwrap();
    assert_eq!(labels("narwhal"), [labeller]);
    assert!(labels("walrus").contains(&labelled.to_owned()));
}

#[test]
fn issue_31_a_subagent_transcript_shows_its_messages_in_every_layout() {
    let home = ClaudeHome::new();
    let parent = "e31a0000-0000-4000-8000-000000000001";
    let main = home.session(
        parent,
        "/w/sub",
        days_ago(1),
        &[("Delegate the scan", "Delegated.")],
    );
    // ≤ 1.0.x: a run's sidechain lines inside the parent's own file.
    crate::support::fixture::append(
        &main,
        &[
            json!({"type": "user", "uuid": "ee66a1b2-0000-4000-8000-000000000001",
                   "parentUuid": null, "isSidechain": true, "sessionId": parent,
                   "cwd": "/w/sub", "timestamp": days_ago(1).to_rfc3339(),
                   "message": {"role": "user", "content": "Scan for okapis"}})
            .to_string(),
            json!({"type": "assistant", "uuid": "ee66a1b2-0000-4000-8000-000000000002",
                   "parentUuid": "ee66a1b2-0000-4000-8000-000000000001", "isSidechain": true,
                   "sessionId": parent, "cwd": "/w/sub", "timestamp": days_ago(1).to_rfc3339(),
                   "message": {"id": "m-inline-31", "role": "assistant",
                               "content": [{"type": "text", "text": "Found okapis."}]}})
            .to_string(),
        ],
    );
    let agent_lines = |agent: &str, word: &str| {
        [
            json!({"type": "user", "uuid": format!("{agent}-u"), "isSidechain": true,
                   "sessionId": parent, "agentId": agent, "cwd": "/w/sub",
                   "timestamp": days_ago(1).to_rfc3339(),
                   "message": {"role": "user", "content": format!("Scan for {word}")}}),
            json!({"type": "assistant", "uuid": format!("{agent}-a"),
                   "parentUuid": format!("{agent}-u"), "isSidechain": true,
                   "sessionId": parent, "agentId": agent, "cwd": "/w/sub",
                   "timestamp": days_ago(1).to_rfc3339(),
                   "message": {"id": format!("m-{agent}"), "role": "assistant",
                               "content": [{"type": "text", "text": format!("Found {word}.")}]}}),
        ]
        .map(|l| l.to_string())
        .join("\n")
            + "\n"
    };
    // 2.1+: nested; 2.0.x: beside the session; a workflow run; and a meta file's.
    home.write_raw(
        &format!("-w-sub/{parent}/subagents"),
        "agent-aa11nested.jsonl",
        &agent_lines("aa11nested", "pumas"),
    );
    home.write_raw(
        "-w-sub",
        "agent-bb22legacy.jsonl",
        &agent_lines("bb22legacy", "lynxes"),
    );
    home.write_raw(
        &format!("-w-sub/{parent}/subagents/workflows/run7"),
        "agent-cc33flow.jsonl",
        &agent_lines("cc33flow", "ibexes"),
    );
    home.write_raw(
        &format!("-w-sub/{parent}/subagents"),
        "agent-dd44meta.jsonl",
        &agent_lines("dd44meta", "tapirs"),
    );
    home.write_raw(
        &format!("-w-sub/{parent}/subagents"),
        "agent-dd44meta.meta.json",
        r#"{"agentType":"Explore","description":"Scan for tapirs"}"#,
    );
    let env = Env::new(home);
    env.ok(&["ingest"]);
    let listed = env.json(&["sessions", "show", parent, "--json"]);
    assert!(
        listed["agent_ids"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "inline-ee66a1b2"),
        "{listed}"
    );
    for (agent, word) in [
        ("inline-ee66a1b2", "okapis"),
        ("aa11nested", "pumas"),
        ("bb22legacy", "lynxes"),
        ("cc33flow", "ibexes"),
        ("dd44meta", "tapirs"),
    ] {
        // By the id listings give, and by its `agent-` name.
        let mut references = vec![agent.to_owned()];
        if !agent.starts_with("inline-") {
            references.push(format!("agent-{agent}"));
        }
        for reference in references {
            let shown = env.json(&["sessions", "show", &reference, "--json"]);
            let texts: Vec<&str> = shown["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|m| m["text"].as_str())
                .collect();
            assert_eq!(
                texts,
                [format!("Scan for {word}"), format!("Found {word}.")],
                "{reference}: {shown}"
            );
        }
        let export = env.ok(&["sessions", "export", agent]);
        assert!(export.contains(&format!("Found {word}.")), "{export}");
    }
}

#[test]
fn issue_31_a_session_known_only_from_the_index_is_found_by_its_summary_and_prompt() {
    let home = ClaudeHome::new();
    let gone = "f31e0000-0000-4000-8000-000000000001";
    home.session(
        "f31e0000-0000-4000-8000-000000000002",
        "/w/billing",
        days_ago(1),
        &[("Look at the invoices", "Looked.")],
    );
    let index = json!({"version": 1, "entries": [{
        "sessionId": gone,
        "fullPath": format!("{}/projects/-w-billing/{gone}.jsonl", home.root().display()),
        "firstPrompt": "Move the zebracron job onto quokkaworker",
        "summary": "Relocate platypusbilling scheduler",
        "messageCount": 12,
        "created": days_ago(40).to_rfc3339(),
        "modified": days_ago(40).to_rfc3339(),
        "projectPath": "/w/billing",
        "isSidechain": false
    }]});
    home.write_raw("-w-billing", "sessions-index.json", &index.to_string());
    let env = Env::new(home);
    env.ok(&["ingest"]);
    let sessions = |query: &str, kind: &str| env.hit_fields(query, &["-t", kind], "session_id");
    assert_eq!(sessions("platypusbilling", "summary_label"), [gone]);
    assert_eq!(sessions("zebracron", "user_message"), [gone]);
    // The default types hold both.
    let found = env.json(&["search", "quokkaworker", "--mode", "lexical", "--json"]);
    assert_eq!(found["hits"][0]["session_id"], gone, "{found}");
    // Built again from the store, the index holds it still.
    std::fs::remove_dir_all(env.data.path().join("store/index/text")).unwrap();
    assert_eq!(sessions("platypusbilling", "summary_label"), [gone]);
}

#[test]
fn issue_31_a_search_without_types_looks_in_the_conversation_not_the_tools() {
    let home = ClaudeHome::new();
    let id = "a31d0000-0000-4000-8000-000000000001";
    let mut lines = session_lines(
        id,
        "/w/shop",
        days_ago(1),
        &[(
            "Why does the coupon rounding bug happen?",
            "Coupons round half down.",
        )],
    );
    lines.push(
        json!({"type": "assistant", "uuid": "tool-31", "parentUuid": format!("{id}-a0"),
               "sessionId": id, "cwd": "/w/shop", "timestamp": days_ago(1).to_rfc3339(),
               "message": {"id": "m-tool-31", "role": "assistant", "content": [
                   {"type": "tool_use", "id": "t-31", "name": "Bash",
                    "input": {"command": "grep -rn zanzibar src/"}}]}})
        .to_string(),
    );
    home.write_raw(
        "-w-shop",
        &format!("{id}.jsonl"),
        &(lines.join("\n") + "\n"),
    );
    let env = Env::new(home);
    env.ok(&["ingest"]);
    let default = env.hit_fields("coupon rounding bug", &[], "type");
    assert!(!default.is_empty());
    assert!(
        default
            .iter()
            .all(|k| k != "tool_call" && k != "tool_result"),
        "{default:?}"
    );
    // A word only a tool call holds is not found by default; named, the tools are.
    assert!(env.hit_fields("zanzibar", &[], "type").is_empty());
    let tools = env.hit_fields("zanzibar", &["-t", "tool_call"], "type");
    assert_eq!(tools, ["tool_call"]);
    // A focus that names nothing is reported and left out.
    let found = env.json(&[
        "search",
        "coupon",
        "--focus",
        "project:nowhere",
        "--mode",
        "lexical",
        "--json",
    ]);
    assert_eq!(found["hits"][0]["session_id"], id, "{found}");
    assert!(found["notices"].to_string().contains("nowhere"), "{found}");
}

#[test]
fn issue_31_session_start_warns_of_an_old_handoff_as_context_does() {
    let home = ClaudeHome::new();
    let id = "b31e0000-0000-4000-8000-000000000001";
    home.session(
        id,
        "/w/old",
        days_ago(400),
        &[
            (
                "Rework the gannet parser and its tests",
                "Reworked and tested.",
            ),
            ("Ship the gannet parser", "Shipped."),
        ],
    );
    let env = Env::new(home);
    env.ok(&["ingest"]);
    let context = env.ok(&["context", &id[..8]]);
    assert!(context.contains("OLD CONTEXT WARNING"), "{context}");
    let hook = json!({"hook_event_name": "SessionStart", "session_id": "new-one",
                      "cwd": "/w/old", "source": "startup"});
    let out = fed(
        Duration::from_secs(60),
        &mut env.eywa(&["hook", "session-start"]),
        Some(hook.to_string().as_bytes()),
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("gannet"), "{said}");
    assert!(said.contains("OLD CONTEXT WARNING"), "{said}");
}

#[test]
fn issue_31_readme_promises_graph_node_docs_add_and_a_kept_project() {
    let home = ClaudeHome::new();
    let id = "c31e0000-0000-4000-8000-000000000001";
    home.session(
        id,
        "/w/node",
        days_ago(1),
        &[
            (
                "Refactor the osprey cache and add tests",
                "Refactored, tests pass.",
            ),
            ("Now wire the osprey cache into the server", "Wired."),
        ],
    );
    let env = Env::new(home);
    env.ok(&["ingest"]);
    // `graph node` prints the handoff, as its --json holds it.
    let text = env.ok(&["graph", "node", &format!("session:{id}")]);
    assert!(text.contains("## What Happened"), "{text}");
    let node = env.json(&["graph", "node", &format!("session:{id}"), "--json"]);
    assert!(
        node["handoff"]["body"]
            .as_str()
            .unwrap()
            .contains("What Happened"),
        "{node}"
    );

    // A folder with one file that is not UTF-8: the rest is added, and said so.
    let notes = tempfile::tempdir().unwrap();
    std::fs::write(
        notes.path().join("money.md"),
        "# Money\n\nBudget for the osprey.\n",
    )
    .unwrap();
    std::fs::write(notes.path().join("bad.txt"), [0xff, 0xfe, 0x00, 0xc3]).unwrap();
    let folder = notes.path().to_str().unwrap();
    let (ok, out, err) = env.run(&["docs", "add", folder, "--project", "ledger"]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("money.md"), "{out}");
    assert!(err.contains("bad.txt"), "{err}");
    // Named alone, a file that cannot be read is the command's failure.
    let bad = notes.path().join("bad.txt");
    let (ok, _, _) = env.run(&["docs", "add", bad.to_str().unwrap()]);
    assert!(!ok);
    // Changed and added again without --project: it keeps its project.
    let money = notes.path().join("money.md");
    std::fs::write(&money, "# Money\n\nBudget for the osprey, revised.\n").unwrap();
    env.ok(&["docs", "add", money.to_str().unwrap()]);
    let listed = env.json(&["docs", "list", "--json"]);
    let doc = listed["documents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["path"].as_str().is_some_and(|p| p.ends_with("money.md")))
        .unwrap_or_else(|| panic!("{listed}"))
        .clone();
    assert_eq!(doc["version"], 2, "{doc}");
    assert_eq!(doc["project"], "ledger", "{doc}");
}

/// The shared corpus: every `summary` line of every file is searchable as a label.
#[test]
fn issue_31_every_summary_line_of_the_corpus_is_searchable() {
    let Some(projects) = crate::support::shared("corpus/claude-code/real_projects") else {
        return;
    };
    let home = crate::support::corpus_home(&projects);
    let mut labels: Vec<(String, String)> = Vec::new();
    walk_jsonl(&home.path().join("projects"), &mut |path, line| {
        // Main session files: `projects/<folder>/<uuid>.jsonl`.
        let projects = home.path().join("projects");
        let main = path
            .parent()
            .and_then(Path::parent)
            .is_some_and(|p| p == projects)
            && !path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("agent-");
        if !main {
            return;
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return;
        };
        if value["type"] == "summary"
            && let Some(text) = value["summary"].as_str()
        {
            labels.push((path.display().to_string(), text.to_owned()));
        }
    });
    assert!(
        labels.len() >= 20,
        "the corpus has its summary lines: {labels:?}"
    );
    let data = tempfile::tempdir().unwrap();
    let eywa = |args: &[&str]| {
        let out = within(
            Duration::from_secs(120),
            eywa_command(data.path(), home.path()).args(args),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    eywa(&["ingest"]);
    let mut missing = Vec::new();
    for (path, text) in &labels {
        let found: Value = serde_json::from_str(&eywa(&[
            "search",
            text,
            "--type",
            "summary_label",
            "--mode",
            "lexical",
            "--json",
            "--limit",
            "50",
        ]))
        .unwrap();
        let file_session = Path::new(path)
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let hits: Vec<&str> = found["hits"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|h| h["session_id"].as_str())
            .collect();
        // A file with no messages is no session: its labels have nothing to name.
        let has_messages = std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .any(|l| l.contains(r#""type":"user""#) || l.contains(r#""type": "user""#));
        if has_messages && !hits.contains(&file_session.as_str()) {
            missing.push(format!("{text} ({file_session})"));
        }
    }
    assert!(missing.is_empty(), "labels not found: {missing:#?}");
}

fn walk_jsonl(dir: &Path, f: &mut dyn FnMut(&Path, &str)) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk_jsonl(&path, f);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            for line in std::fs::read_to_string(&path).unwrap_or_default().lines() {
                f(&path, line);
            }
        }
    }
}

/// Seed 003's session and message shapes: the fields a session names, slash commands,
/// summary labels and file-history snapshots among the messages.
#[test]
fn issue_31_show_serves_seed_003s_fields_commands_labels_and_snapshots() {
    let home = app_home();
    let id = "b31f0000-0000-4000-8000-000000000001";
    let mut lines = vec![
        json!({"type": "user", "uuid": "cmd-31", "sessionId": id, "cwd": "/w/app",
               "gitBranch": "main", "version": "2.1.20", "timestamp": days_ago(1).to_rfc3339(),
               "message": {"role": "user", "content":
                   "<command-message>init is analyzing your codebase…</command-message>\n<command-name>/init</command-name>"}})
        .to_string(),
        json!({"type": "file-history-snapshot", "messageId": "cmd-31", "isSnapshotUpdate": false,
               "snapshot": {"messageId": "cmd-31", "timestamp": days_ago(1).to_rfc3339(),
                            "trackedFileBackups": {"/w/app/src/lib.rs": {"version": 1}}}})
        .to_string(),
        json!({"type": "summary", "summary": "Kestrel setup", "leafUuid": "nowhere-31"})
            .to_string(),
    ];
    lines.extend(session_lines(
        id,
        "/w/app",
        days_ago(1),
        &[("Set up the kestrel", "Set up.")],
    ));
    home.write_raw("-w-app", &format!("{id}.jsonl"), &(lines.join("\n") + "\n"));
    let env = Env::new(home);
    env.ok(&["ingest"]);
    let shown = env.json(&["sessions", "show", id, "--json"]);
    assert_eq!(shown["encoded_path"], "-w-app", "{shown}");
    assert!(shown["message_count"].as_u64().unwrap() >= 2, "{shown}");
    // The version of the last line that names one.
    assert_eq!(shown["version"], "2.0.55");
    assert_eq!(shown["git_branch"], "main");
    assert_eq!(shown["agent_ids"], json!([]));
    let messages = shown["messages"].as_array().unwrap();
    let of = |kind: &str| {
        messages
            .iter()
            .find(|m| m["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind}: {shown}"))
    };
    assert_eq!(of("command")["text"], "/init");
    assert_eq!(of("summary")["text"], "Kestrel setup");
    assert_eq!(
        of("file_history_snapshot")["tracked_files"],
        json!(["/w/app/src/lib.rs"])
    );
    assert!(messages.iter().all(|m| m["is_sidechain"] == false));
    // The session with a subagent lists it, and the subagent says what it was asked.
    let parent = env.json(&["sessions", "show", ID, "--json"]);
    assert_eq!(parent["agent_ids"], json!([AGENT]), "{parent}");
    let agent = env.json(&["sessions", "show", AGENT, "--json"]);
    assert_eq!(
        agent["agent"]["prompt"], "Find every heron retry call",
        "{agent}"
    );
    assert_eq!(agent["agent"]["parent_session_id"], ID);
}

/// Seed 001's command shapes: selections of the listing, short flags, percentages, and
/// seed 000's EYWA_SESSIONS_DIR; `config reset`.
#[test]
fn issue_31_seed_001s_selections_flags_percentages_and_settings() {
    let home = ClaudeHome::new();
    for (n, word) in ["alpha", "bravo", "charlie"].iter().enumerate() {
        home.session(
            &format!("a31e000{n}-0000-4000-8000-000000000001"),
            "/w/sel",
            days_ago(n as i64 + 1),
            &[(&format!("Tune the {word} pelican"), "Tuned.")],
        );
    }
    let env = Env::new(home);
    env.ok(&["ingest"]);
    env.ok(&["sessions", "list"]);
    let chosen = |selection: &str| {
        let c = env.json(&["context", selection, "-m", "smart", "--dry-run", "--json"]);
        c["sessions"].as_array().unwrap().len()
    };
    assert_eq!(chosen("1"), 1);
    assert_eq!(chosen("1,3"), 2);
    assert_eq!(chosen("1-3"), 3);
    assert_eq!(chosen("all"), 3);
    let (ok, out, _) = env.run(&["context", "skip"]);
    assert!(ok && out.is_empty(), "{out}");
    // Each session's header says what it takes (seed 001's `(8,200 tokens)`).
    let context = env.json(&["context", "1", "--json"]);
    let tokens = context["sessions"][0]["tokens"].as_u64().unwrap();
    let text = context["text"].as_str().unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("--- Session ")
                && l.ends_with(&format!(" ({tokens} tokens) ---"))),
        "{text}"
    );

    // Results are numbered, each with its share of the best score.
    let text = env.ok(&[
        "search",
        "pelican",
        "-t",
        "user_message",
        "--mode",
        "lexical",
    ]);
    assert!(text.starts_with(" 1. [100%] "), "{text}");
    assert!(text.contains(" 2. ["), "{text}");

    // EYWA_SESSIONS_DIR names the projects folder; the Claude dir holds it.
    let shown = |extra: &[(&str, &str)]| {
        let mut cmd = env.eywa(&["config", "show", "--json"]);
        cmd.env_remove("EYWA_CLAUDE_DIR");
        for (k, v) in extra {
            cmd.env(k, v);
        }
        within(Duration::from_secs(30), &mut cmd)
    };
    let projects = env.home.root().join("projects");
    let out = shown(&[("EYWA_SESSIONS_DIR", projects.to_str().unwrap())]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let settings: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        settings["settings"]["claude_dir"]["value"],
        env.home.root().to_str().unwrap()
    );
    let out = shown(&[("EYWA_SESSIONS_DIR", "/tmp/not-a-projects-folder")]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("EYWA_CLAUDE_DIR"));

    // `config reset` moves the file aside: the defaults apply again.
    let file = env.data.path().join("config.toml");
    std::fs::write(&file, "chunk_idle_days = 3\n").unwrap();
    let before = env.json(&["config", "show", "--json"]);
    assert_eq!(before["settings"]["chunk_idle_days"]["value"], 3);
    env.ok(&["config", "reset"]);
    assert!(!file.exists());
    assert!(env.data.path().join("config.toml.bak").is_file());
    let after = env.json(&["config", "show", "--json"]);
    assert_eq!(after["file_exists"], false);
    assert_eq!(after["settings"]["chunk_idle_days"]["source"], "default");
}

/// A store whose text index was written before every label of a file was indexed gets
/// them at its next open, without a word from the user.
#[test]
fn issue_31_a_store_from_before_gets_its_labels_indexed_on_open() {
    let home = ClaudeHome::new();
    let id = "d31f0000-0000-4000-8000-000000000001";
    let mut lines = vec![
        json!({"type": "summary", "summary": "Gecko payroll audit", "leafUuid": "gone-31"})
            .to_string(),
    ];
    lines.extend(session_lines(
        id,
        "/w/old",
        days_ago(2),
        &[("Audit the payroll", "Audited.")],
    ));
    let path = home.write_raw("-w-old", &format!("{id}.jsonl"), &(lines.join("\n") + "\n"));
    let env = Env::new(home);
    env.ok(&["ingest"]);
    let found = || {
        let hits = env.json(&[
            "search",
            "gecko",
            "--type",
            "summary_label",
            "--mode",
            "lexical",
            "--json",
        ]);
        hits["hits"].as_array().unwrap().len()
    };
    assert_eq!(found(), 1);
    // What an older eywa left: the session indexed without that label, and no mark.
    {
        let config = eywa::engine::EngineConfig::new(env.data.path(), env.home.root());
        let engine = eywa::engine::Engine::open(config).unwrap();
        let mut batch = eywa_storage::Batch::new();
        batch.delete(eywa_storage::Keyspace::Settings, b"labels_indexed".to_vec());
        engine.graph().store().apply(batch).unwrap();
    }
    {
        let dir = env.data.path().join("store/index/text");
        let (text, _) = eywa::index::TextIndex::open(&dir).unwrap();
        text.delete_source(path.to_str().unwrap());
        text.commit().unwrap();
    }
    // The next open rebuilds the text index from the store (which holds the transcript).
    assert_eq!(found(), 1);
}

/// The rule for projects a session changed from its own, written in the README, held on
/// sessions built here: a sibling repository edited counts; a read, a file in /tmp, a
/// hidden folder and a file directly in the parent folder do not.
#[test]
fn issue_31_a_repository_edited_from_another_is_a_project_of_the_session() {
    let home = ClaudeHome::new();
    let id = "f31b0000-0000-4000-8000-000000000001";
    let mut lines = session_lines(
        id,
        "/w/src/app",
        days_ago(1),
        &[("Move the retry helper into the shared lib", "Moved it.")],
    );
    let tool = |n: usize, name: &str, path: &str| {
        json!({"type": "assistant", "uuid": format!("edit-31-{n}"), "parentUuid": format!("{id}-a0"),
               "sessionId": id, "cwd": "/w/src/app", "timestamp": days_ago(1).to_rfc3339(),
               "message": {"id": format!("m-edit-31-{n}"), "role": "assistant", "content": [
                   {"type": "tool_use", "id": format!("t-31-{n}"), "name": name,
                    "input": {"file_path": path, "content": "x", "old_string": "a", "new_string": "b"}}]}})
        .to_string()
    };
    lines.push(tool(1, "Edit", "/w/src/app/src/main.rs"));
    lines.push(tool(2, "Edit", "/w/src/shared-lib/src/retry.rs"));
    lines.push(tool(3, "Read", "/w/src/docs-site/index.md"));
    lines.push(tool(4, "Write", "/tmp/scratch/notes.md"));
    lines.push(tool(5, "Write", "/w/src/.config/tool.toml"));
    lines.push(tool(6, "Write", "/w/src/README.md"));
    home.write_raw(
        "-w-src-app",
        &format!("{id}.jsonl"),
        &(lines.join("\n") + "\n"),
    );
    let env = Env::new(home);
    env.ok(&["ingest"]);
    let node = env.json(&["graph", "node", &format!("session:{id}"), "--json"]);
    assert_eq!(
        node["handoff"]["projects"],
        json!(["app", "shared-lib"]),
        "{node}"
    );
    let touched = env.json(&["graph", "touched", "project:shared-lib", "--json"]);
    assert_eq!(touched_sessions(&touched), [id], "{touched}");
}

/// A hit from a subagent whose parent session eywa never had, or from an imported
/// handoff, gives no resume command Claude Code would refuse.
#[test]
fn issue_31_no_resume_command_for_a_session_claude_code_does_not_have() {
    let home = ClaudeHome::new();
    let orphan_parent = "0f31a000-0000-4000-8000-000000000001";
    home.session(
        "0f31a000-0000-4000-8000-000000000002",
        "/w/orph",
        days_ago(1),
        &[("Count the capybaras", "Counted.")],
    );
    let agent = json!({"type": "user", "uuid": "orphan-31-u", "isSidechain": true,
        "sessionId": orphan_parent, "agentId": "ee55orphan", "cwd": "/w/orph",
        "timestamp": days_ago(1).to_rfc3339(),
        "message": {"role": "user", "content": "Survey the wombats"}});
    home.write_raw(
        "-w-orph",
        "agent-ee55orphan.jsonl",
        &(agent.to_string() + "\n"),
    );
    let env = Env::new(home);
    env.ok(&["ingest"]);
    // A missing command reads as "".
    let orphan = env.hit_fields("wombats", &[], "resume_command");
    assert_eq!(orphan, [""], "{orphan:?}");
    let own = env.hit_fields("capybaras", &[], "resume_command");
    assert_eq!(
        own[0],
        "claude --resume 0f31a000-0000-4000-8000-000000000002"
    );
}

/// Item 1: a request stuck behind the writer (a long ingest) ends at its caller's
/// deadline, and when the server stops; the stuck work gives up and never runs after.
#[test]
fn issue_31_a_request_stuck_behind_the_writer_ends_at_its_deadline_and_at_shutdown() {
    use eywa::api::pb;
    use std::sync::{Arc, mpsc};
    let env = Env::new(app_home());
    let engine = Arc::new(
        eywa::engine::Engine::open(eywa::engine::EngineConfig::new(
            env.data.path(),
            env.home.root(),
        ))
        .unwrap(),
    );
    // An ingest that holds the writer until the test lets it go.
    let held = crate::support::server::HeldIngest::start(&engine);
    // The server, stopped when the test says.
    let (addr_tx, addr_rx) = mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (ended_tx, ended) = mpsc::channel();
    let server = {
        let engine = engine.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                eywa::server::run(listener, engine, async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
                ended_tx.send(Instant::now()).unwrap();
            });
            // What a request left on a blocking thread is not waited for.
            runtime.shutdown_background();
        })
    };
    let url = format!("http://{}", addr_rx.recv().unwrap());
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut client = client_runtime
        .block_on(pb::ingest_client::IngestClient::connect(url))
        .unwrap();

    // A caller's deadline: answered when it passes, not when the writer is free.
    let mut request = tonic::Request::new(pb::IngestRequest {});
    request.set_timeout(Duration::from_millis(300));
    let asked = Instant::now();
    let status = client_runtime
        .block_on(client.ingest(request))
        .expect_err("the writer is held");
    assert!(
        matches!(
            status.code(),
            tonic::Code::DeadlineExceeded | tonic::Code::Cancelled
        ),
        "{status:?}"
    );
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "{:?}",
        asked.elapsed()
    );

    // A request with no deadline, still stuck when the server is told to stop: its work
    // gives up, it is answered, and the server ends well within its grace.
    let stuck = {
        let mut client = client.clone();
        client_runtime.spawn(async move { client.ingest(pb::IngestRequest {}).await })
    };
    // A session that only a run started after now would read.
    let late = "c0b1e500-0000-4000-8000-00000000be7e";
    let lines = session_lines(
        late,
        "/w/late",
        days_ago(1),
        &[("Paint the egret", "Painted.")],
    );
    env.home.write_raw(
        "-w-late",
        &format!("{late}.jsonl"),
        &(lines.join("\n") + "\n"),
    );
    let stopping = Instant::now();
    stop.send(()).unwrap();
    let answer = client_runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), stuck).await })
        .expect("the stuck request is answered once the server stops")
        .unwrap();
    let status = answer.expect_err("a stopping server cancels the stuck work");
    assert_eq!(status.code(), tonic::Code::Cancelled, "{status:?}");
    assert!(
        status.message().contains("server is stopping"),
        "{status:?}"
    );
    let took = ended.recv().unwrap() - stopping;
    assert!(
        took < Duration::from_secs(2),
        "the server took {took:?} to stop"
    );
    server.join().unwrap();

    // Once the writer is free, neither cancelled request runs: the late session stays
    // unread, and the held ingest ends as it would have.
    held.finish();
    let late_sessions = || match engine.what_touched("project:late", &Default::default(), 10) {
        Ok(touched) => touched.len(),
        Err(eywa::Error::NotFound(_)) => 0,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(
        late_sessions(),
        0,
        "a cancelled ingest ran once the writer was free"
    );
    assert_eq!(
        engine.ingest().unwrap().files_read,
        1,
        "the late session, now"
    );
    assert_eq!(late_sessions(), 1);
}

/// Item 13: a local `sessions search` (no server: the command opens the store itself)
/// ends at Ctrl-C, and leaves the store whole: local commands install no handler of
/// their own, so SIGINT ends them at once, and what they wrote is committed or not.
#[test]
fn issue_31_ctrl_c_stops_a_local_sessions_search_and_the_store_stays_whole() {
    use std::os::unix::process::ExitStatusExt;
    let env = Env::new(app_home());
    env.ok(&["ingest"]);
    for _ in 0..5 {
        let mut child = env
            .eywa(&["sessions", "search", "heron"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let interrupted = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap()
            .success();
        let (done, status) = std::sync::mpsc::channel();
        let pid = child.id();
        std::thread::spawn(move || done.send(child.wait()));
        let Ok(status) = status.recv_timeout(Duration::from_secs(5)) else {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("a local sessions search went on after Ctrl-C");
        };
        let status = status.unwrap();
        assert!(interrupted);
        assert!(
            status.signal() == Some(2) || status.code() == Some(130),
            "{status:?}"
        );
        // The store opens again at once, checks clean, and answers.
        let (ok, out, err) = env.run(&["check"]);
        assert!(ok, "{out}{err}");
        let found = env.json(&["sessions", "search", "heron", "--json"]);
        assert!(found.to_string().contains(ID), "{found}");
    }
}

/// Item 10: commit authors a session's commands name are Person entities, part of the
/// organization their address belongs to; a document names its authors the same way.
/// Programs (Claude's trailer, bots) and personal mailboxes make neither.
#[test]
fn issue_31_commit_authors_are_people_of_their_organizations() {
    const PEOPLE: &str = "c0b1e500-0000-4000-8000-0000000000a1";
    let home = ClaudeHome::new();
    let at = days_ago(1).to_rfc3339();
    let line = |uuid: &str, parent: Option<&str>, kind: &str, content: Value| {
        json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": PEOPLE,
               "cwd": "/w/people", "timestamp": at,
               "message": {"id": format!("m-{uuid}"), "role": kind, "content": content}})
        .to_string()
    };
    let call = |id: &str, command: &str| {
        json!([{"type": "tool_use", "id": id, "name": "Bash",
                                                  "input": {"command": command}}])
    };
    let result = |id: &str, text: &str| {
        json!([{"type": "tool_result", "tool_use_id": id,
                                                 "content": text}])
    };
    let lines = [
        line(
            "p1",
            None,
            "user",
            json!("Who wrote the parser? Commit the fix after."),
        ),
        line(
            "a1",
            Some("p1"),
            "assistant",
            call("t1", "git log -2 -- src/parser.rs"),
        ),
        line(
            "r1",
            Some("a1"),
            "user",
            result(
                "t1",
                "commit 1a2b3c\nAuthor: Ada Lovelace <ada@analytical.org>\nDate:   Mon Jan 5\n\n    \
             parser: read numbers\n",
            ),
        ),
        line(
            "a2",
            Some("r1"),
            "assistant",
            call(
                "t2",
                "git commit -m \"fix: parser\n\nCo-authored-by: Grace Hopper <grace@gmail.com>\n\
             Co-Authored-By: Claude <noreply@anthropic.com>\n\
             Co-authored-by: dependabot[bot] <4+dependabot[bot]@users.noreply.github.com>\"",
            ),
        ),
        line(
            "r2",
            Some("a2"),
            "user",
            result("t2", "[main 4d5e6f7] fix: parser"),
        ),
        line(
            "a3",
            Some("r2"),
            "assistant",
            json!([{"type": "text", "text": "Ada wrote the parser; the fix is committed."}]),
        ),
    ];
    home.write_raw(
        "-w-people",
        &format!("{PEOPLE}.jsonl"),
        &(lines.join("\n") + "\n"),
    );
    let env = Env::new(home);
    env.ok(&["ingest"]);

    let people = |prefix: &str| -> Vec<String> {
        let found = env.json(&[
            "graph", "find", prefix, "--prefix", "--type", "person", "--json",
        ]);
        found["entities"]
            .as_array()
            .unwrap_or_else(|| panic!("{found}"))
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(people("Ada"), ["Ada Lovelace"]);
    assert_eq!(people("Grace"), ["Grace Hopper"]);
    assert!(people("Claude").is_empty(), "a program's trailer");
    assert!(people("dependabot").is_empty());
    let ada = env.ok(&["graph", "neighbors", "person:Ada Lovelace"]);
    assert!(
        ada.contains("PART_OF") && ada.contains("Organization  analytical.org"),
        "{ada}"
    );
    assert!(
        ada.contains("MENTIONS") && ada.contains("[people]"),
        "{ada}"
    );
    let grace = env.ok(&["graph", "neighbors", "person:Grace Hopper"]);
    assert!(grace.contains("MENTIONS"), "{grace}");
    assert!(
        !grace.contains("Organization"),
        "a personal mailbox: {grace}"
    );

    // A document names its author as git does.
    let notes = env.data.path().join("runbook.md");
    std::fs::write(
        &notes,
        "# Runbook\n\nAuthor: Linus Example <linus@kernel.example>\n\nRestart the queue.\n",
    )
    .unwrap();
    env.ok(&["docs", "add", notes.to_str().unwrap()]);
    let linus = env.ok(&["graph", "neighbors", "person:Linus Example"]);
    assert!(
        linus.contains("Document") && linus.contains("kernel.example"),
        "{linus}"
    );
}
