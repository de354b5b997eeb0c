//! `eywa hook <event>` fed the JSON Claude Code writes on a hook's stdin: the answer's
//! shape, its budget, the empty case, and that nothing (bad input, a dead server, a locked
//! store) makes a hook fail Claude Code.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::fixture::{ClaudeHome, append, days_ago, session_lines};
use crate::support::serve::Serve;

const LOGIN: &str = "a1b2c3d4-0000-4000-8000-000000000001";
const BILLING: &str = "b2c3d4e5-0000-4000-8000-000000000002";

struct Env {
    home: ClaudeHome,
    data: tempfile::TempDir,
    login: PathBuf,
}

impl Env {
    fn new() -> Env {
        let home = ClaudeHome::new();
        let login = home.session(
            LOGIN,
            "/w/webapp",
            days_ago(2),
            &[
                (
                    "Fix the login redirect loop in the webapp",
                    "The session cookie was set on the wrong path; fixed the login redirect.",
                ),
                ("Add a test for the redirect", "Added a regression test."),
            ],
        );
        home.session(
            BILLING,
            "/w/webapp",
            days_ago(1),
            &[(
                "Wire invoices into the billing page",
                "The billing page now lists invoices from the ledger.",
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
            login,
        };
        crate::support::succeed(env.eywa().arg("ingest"));
        env
    }

    fn eywa(&self) -> Command {
        crate::support::eywa_command(self.data.path(), self.home.root())
    }

    /// A long-term memory of the webapp project.
    fn remember_the_vpn(&self) {
        crate::support::succeed(self.eywa().args([
            "memory",
            "add",
            "Deploys need the VPN up",
            "--type",
            "LTM",
            "--project",
            "webapp",
        ]));
    }

    /// Runs `eywa hook <args…>` with `stdin`: (stdout, how long it took). It must exit 0.
    fn hook(&self, args: &[&str], stdin: &str) -> (String, Duration) {
        let started = Instant::now();
        let mut child = self
            .eywa()
            .arg("hook")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let took = started.elapsed();
        assert_eq!(
            out.status.code(),
            Some(0),
            "hook {args:?} exited {:?}",
            out.status
        );
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (String::from_utf8(out.stdout).unwrap(), took)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.data.path().join("logs/hooks.log")).unwrap_or_default()
    }

    fn search(&self, word: &str) -> Value {
        let out = crate::support::succeed(
            self.eywa()
                .args(["search", word, "--mode", "lexical", "--json"]),
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// What Claude Code writes on a hook's stdin.
fn stdin(event: &str, session: &str, transcript: &Path, cwd: &str, extra: Value) -> String {
    let mut input = json!({
        "session_id": session,
        "transcript_path": transcript.display().to_string(),
        "cwd": cwd,
        "hook_event_name": event,
        "permission_mode": "default",
    });
    for (k, v) in extra.as_object().unwrap() {
        input[k] = v.clone();
    }
    input.to_string()
}

/// SessionStart's stdin for a session starting (`source`) in `cwd`.
fn start_input(session: &str, transcript: &Path, cwd: &str, source: &str) -> String {
    stdin(
        "SessionStart",
        session,
        transcript,
        cwd,
        json!({ "source": source }),
    )
}

fn context_of(stdout: &str, event: &str) -> String {
    let answer: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("not one JSON answer ({e}): {stdout}"));
    assert_eq!(
        answer["hookSpecificOutput"]["hookEventName"], event,
        "{answer}"
    );
    answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

#[test]
fn session_start_hands_over_the_projects_sessions_within_the_budget() {
    let env = Env::new();
    env.remember_the_vpn();
    let new_session = env.home.root().join("projects/-w-webapp/new.jsonl");
    for source in ["startup", "resume", "clear", "compact"] {
        let input = start_input("new", &new_session, "/w/webapp", source);
        let (stdout, _) = env.hook(&["session-start"], &input);
        let context = context_of(&stdout, "SessionStart");
        assert!(
            context.contains("Wire invoices into the billing page"),
            "{context}"
        );
        assert!(context.contains("Fix the login redirect loop"), "{context}");
        assert!(
            context
                .contains("cd /w/webapp && claude --resume b2c3d4e5-0000-4000-8000-000000000002")
        );
        assert!(context.contains("Deploys need the VPN up"), "{context}");
        assert!(
            !context.contains("herb beds"),
            "another project's session: {context}"
        );
        assert!(tokens(&context) <= 2_000);
    }
    // Resuming a session does not hand it to itself.
    let input = start_input(LOGIN, &env.login, "/w/webapp", "resume");
    let context = context_of(&env.hook(&["session-start"], &input).0, "SessionStart");
    assert!(
        !context.contains("Fix the login redirect loop"),
        "{context}"
    );
    // A small budget keeps what fits, whole: the best handoff, not the rest.
    let input = start_input("new", &new_session, "/w/webapp", "startup");
    let (stdout, _) = env.hook(&["session-start", "--max-tokens", "150"], &input);
    let context = context_of(&stdout, "SessionStart");
    assert!(
        tokens(&context) <= 150,
        "{} tokens: {context}",
        tokens(&context)
    );
    assert!(
        context.contains("Wire invoices into the billing page"),
        "{context}"
    );
    assert!(
        !context.contains("Fix the login redirect loop"),
        "{context}"
    );
    // A project picked up again after months gets its handoffs too, with their age.
    env.home.session(
        "d4e5f6a7-0000-4000-8000-000000000004",
        "/w/orchard",
        days_ago(200),
        &[("Prune the pear trees", "Pruned them back to three leaders.")],
    );
    crate::support::succeed(env.eywa().arg("ingest"));
    let input = start_input("new", &new_session, "/w/orchard", "startup");
    let context = context_of(&env.hook(&["session-start"], &input).0, "SessionStart");
    assert!(context.contains("Prune the pear trees"), "{context}");
    assert!(context.contains("months ago)"), "{context}");
}

#[test]
fn session_start_says_nothing_for_a_project_eywa_has_never_seen() {
    let env = Env::new();
    let transcript = env.home.root().join("projects/-w-elsewhere/new.jsonl");
    let input = start_input("new", &transcript, "/w/elsewhere", "startup");
    let (stdout, _) = env.hook(&["session-start"], &input);
    assert_eq!(stdout, "");
    assert!(env.log().contains("SessionStart"), "{}", env.log());
}

#[test]
fn a_hook_never_fails_claude_code() {
    let env = Env::new();
    let transcript = env.home.root().join("projects/-w-webapp/new.jsonl");
    let input = start_input("new", &transcript, "/w/webapp", "startup");
    // Bad input.
    for bad in ["", "not json", "[1, 2]"] {
        assert_eq!(env.hook(&["session-start"], bad).0, "");
    }
    assert!(
        env.log().contains("failed: stdin is not JSON"),
        "{}",
        env.log()
    );
    // A server announced but dead: its port closed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let announcement = eywa::server::Announcement::of_this_process(closed);
    announcement.write(env.data.path()).unwrap();
    let (stdout, took) = env.hook(&["session-start"], &input);
    assert_eq!(stdout, "");
    assert!(took < Duration::from_secs(2), "{took:?}");
    eywa::server::Announcement::withdraw(env.data.path()).unwrap();
    // A store another process holds.
    let held = eywa::engine::Engine::open(eywa::engine::EngineConfig::new(
        env.data.path(),
        env.home.root(),
    ))
    .unwrap();
    for event in ["session-start", "stop"] {
        let input = stdin("Stop", LOGIN, &env.login, "/w/webapp", json!({}));
        let (stdout, took) = env.hook(&[event, "--timeout-ms", "900"], &input);
        assert_eq!(stdout, "");
        assert!(took < Duration::from_secs(2), "{event}: {took:?}");
    }
    drop(held);
    assert!(
        env.log().lines().filter(|l| l.contains("failed")).count() >= 6,
        "{}",
        env.log()
    );
    // The log is private.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&env.data.path().join("logs")), 0o700);
    assert_eq!(mode(&env.data.path().join("logs/hooks.log")), 0o600);
    // And a well-formed hook works again.
    assert!(!env.hook(&["session-start"], &input).0.is_empty());
}

#[test]
fn stop_and_pre_compact_make_the_session_searchable_at_once() {
    let env = Env::new();
    // A new exchange: its own uuids and message ids.
    let exchange = |word: &str, at: i64| -> Vec<String> {
        session_lines(
            LOGIN,
            "/w/webapp",
            days_ago(0) + chrono::Duration::minutes(at),
            &[(&format!("Now the {word} question"), "Answered.")],
        )
        .into_iter()
        .map(|l| {
            l.replace(&format!("\"{LOGIN}-"), &format!("\"{LOGIN}-{word}-"))
                .replace(&format!("_{LOGIN}_"), &format!("_{word}_"))
        })
        .collect()
    };
    // Without a server.
    append(&env.login, &exchange("zeppelin", 0));
    assert!(
        env.search("zeppelin")["hits"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let input = stdin(
        "Stop",
        LOGIN,
        &env.login,
        "/w/webapp",
        json!({"stop_hook_active": false}),
    );
    assert_eq!(env.hook(&["stop"], &input).0, "");
    assert_eq!(env.search("zeppelin")["hits"][0]["session_id"], LOGIN);
    // With one (that does not watch the Claude dir itself).
    let mut cmd = env.eywa();
    cmd.args([
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--watch-interval-ms",
        "0",
        "--no-ingest",
    ]);
    let server = Serve::spawn(cmd);
    append(&env.login, &exchange("quokka", 10));
    assert!(env.search("quokka")["hits"].as_array().unwrap().is_empty());
    let input = stdin(
        "PreCompact",
        LOGIN,
        &env.login,
        "/w/webapp",
        json!({"trigger": "auto"}),
    );
    assert_eq!(env.hook(&["pre-compact"], &input).0, "");
    assert_eq!(env.search("quokka")["hits"][0]["session_id"], LOGIN);
    append(&env.login, &exchange("narwhal", 20));
    let input = stdin(
        "SessionEnd",
        LOGIN,
        &env.login,
        "/w/webapp",
        json!({"reason": "exit"}),
    );
    assert_eq!(env.hook(&["session-end"], &input).0, "");
    assert_eq!(env.search("narwhal")["hits"][0]["session_id"], LOGIN);
    server.stop();
}

#[test]
fn user_prompt_submit_adds_sessions_only_above_the_threshold() {
    let env = Env::new();
    let transcript = env.home.root().join("projects/-w-webapp/new.jsonl");
    let prompt = json!({"prompt": "the login redirect loop is back"});
    let input = stdin(
        "UserPromptSubmit",
        "new",
        &transcript,
        "/w/webapp",
        prompt.clone(),
    );
    let (stdout, _) = env.hook(&["user-prompt-submit", "--min-bm25", "0.1"], &input);
    let context = context_of(&stdout, "UserPromptSubmit");
    assert!(
        context.contains("claude --resume a1b2c3d4-0000-4000-8000-000000000001"),
        "{context}"
    );
    assert!(!context.contains("herb beds"), "{context}");
    let (stdout, _) = env.hook(&["user-prompt-submit", "--min-bm25", "1000"], &input);
    assert_eq!(stdout, "");
    // The prompt is never logged.
    assert!(
        !env.log().contains("redirect loop is back"),
        "{}",
        env.log()
    );
}

/// A new exchange in session `LOGIN`, with uuids of its own, saying `word`.
fn exchange(word: &str, at: i64, answer: &str) -> Vec<String> {
    session_lines(
        LOGIN,
        "/w/webapp",
        days_ago(0) + chrono::Duration::minutes(at),
        &[(&format!("Now the {word} question"), answer)],
    )
    .into_iter()
    .map(|l| {
        l.replace(&format!("\"{LOGIN}-"), &format!("\"{LOGIN}-{word}-"))
            .replace(&format!("_{LOGIN}_"), &format!("_{word}_"))
    })
    .collect()
}

#[test]
fn issue_30_a_read_behind_a_running_ingest_is_left_to_the_server() {
    use eywa::api::pb;
    let env = Env::new();
    let engine = std::sync::Arc::new(
        eywa::engine::Engine::open(eywa::engine::EngineConfig::new(
            env.data.path(),
            env.home.root(),
        ))
        .unwrap(),
    );
    let server = crate::support::server::TestServer::start_shared(engine.clone());
    append(&env.login, &exchange("pelican", 0, "Answered."));
    // An ingest that holds the writer until the test lets it go.
    let held = crate::support::server::HeldIngest::start(&engine);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let url = format!("http://{}", server.addr());
    runtime.block_on(async {
        let mut client = pb::ingest_client::IngestClient::connect(url).await.unwrap();
        let request = |wait_ms| pb::IngestSessionRequest {
            session: env.login.display().to_string(),
            wait_ms,
        };
        // Behind the running ingest: the answer comes when the wait is up, and says so.
        let answer = client
            .ingest_session(request(300))
            .await
            .unwrap()
            .into_inner();
        assert!(answer.pending && answer.report.is_none(), "{answer:?}");
        held.finish();
        // The server read on: a caller that waits finds the read done.
        let answer = client
            .ingest_session(request(0))
            .await
            .unwrap()
            .into_inner();
        assert!(!answer.pending && answer.handoff.is_some(), "{answer:?}");
    });
    drop(server);
    drop(engine);
    assert_eq!(env.search("pelican")["hits"][0]["session_id"], LOGIN);
}

#[test]
fn issue_30_a_read_longer_than_the_hook_goes_on_in_the_background() {
    let env = Env::new();
    // Thirty megabytes more of the session: longer to read than the hook may take.
    let long_answer = "a long answer about the redirect loop and its cookie path ".repeat(2_000);
    for i in 0..250 {
        append(&env.login, &exchange(&format!("tern{i}"), i, &long_answer));
    }
    let input = stdin("Stop", LOGIN, &env.login, "/w/webapp", json!({}));
    // Its data dir given by flag, as `eywa setup claude` writes a hook for one not the
    // default: the read handed over must go to the same store.
    let elsewhere = tempfile::tempdir().unwrap();
    let mut hook = env
        .eywa()
        .env("EYWA_DATA_DIR", elsewhere.path())
        .arg("--data-dir")
        .arg(env.data.path())
        .args(["hook", "stop", "--timeout-ms", "2000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    hook.stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = hook.wait_with_output().unwrap();
    assert!(out.status.success() && out.stdout.is_empty());
    let log = env.log();
    let pid: u32 = log
        .lines()
        .rev()
        .find_map(|l| l.split("read on in the background (pid ").nth(1))
        .and_then(|rest| rest.trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("no hand-over in the log:\n{log}"));
    // The read it handed over finishes alone; then the session is found.
    let deadline = Instant::now() + Duration::from_secs(600);
    let running = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| stat.rsplit(") ").next().map(|s| !s.starts_with('Z')))
            .unwrap_or(false)
    };
    while running() {
        assert!(
            Instant::now() < deadline,
            "the handed-over read is still running"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The process it handed the read to logged its end in the same store's log.
    let log = env.log();
    let after: Vec<&str> = log
        .lines()
        .skip_while(|l| !l.contains("read on in the background"))
        .skip(1)
        .collect();
    assert!(
        after
            .iter()
            .any(|l| l.contains(" Stop ") && l.contains(" ok")),
        "{log}"
    );
    assert_eq!(env.search("tern249")["hits"][0]["session_id"], LOGIN);
}

/// The web view's `/context` is what SessionStart hands over, byte for byte (the hook
/// asking the running server, the page its engine), and shows what a small budget left
/// out.
#[test]
fn the_web_views_context_page_is_what_session_start_hands_over() {
    let env = Env::new();
    env.remember_the_vpn();
    let server = Serve::spawn({
        let mut serve = env.eywa();
        serve.args(["serve", "--addr", "127.0.0.1:0", "--no-ingest"]);
        serve
    });
    let addr = server.socket();
    // What the page shows as the context, unescaped.
    let shown = |body: &str| {
        body.split(r#"<pre class="context">"#)
            .nth(1)
            .and_then(|rest| rest.split("</pre>").next())
            .map(|t| {
                t.replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&quot;", "\"")
                    .replace("&#39;", "'")
                    .replace("&amp;", "&")
            })
            .unwrap_or_else(|| panic!("no context on the page: {body}"))
    };
    let new_session = env.home.root().join("projects/-w-webapp/new.jsonl");
    let input = start_input("new", &new_session, "/w/webapp", "startup");
    for (hook_args, query) in [
        (vec!["session-start"], "cwd=/w/webapp"),
        (vec!["session-start"], "project=webapp"),
        (
            vec!["session-start", "--max-tokens", "150"],
            "cwd=/w/webapp&tokens=150",
        ),
    ] {
        let handed = context_of(&env.hook(&hook_args, &input).0, "SessionStart");
        let page = crate::support::http::get(addr, &format!("/context?{query}"));
        assert_eq!(page.status, 200, "{}", page.body);
        assert_eq!(shown(&page.body), handed, "{query}");
        assert!(page.body.contains("Deploys need the VPN up") || query.contains("150"));
    }
    // The small budget's page lists what it left out, with its tokens.
    let small = crate::support::http::get(addr, "/context?project=webapp&tokens=150");
    let left = small
        .body
        .split("<h2>Left out</h2>")
        .nth(1)
        .expect("a Left out list");
    assert!(left.contains("Fix the login redirect loop"), "{left}");
    assert!(left.contains(" tokens"), "{left}");
    // A project eywa never saw: the hook adds nothing, and the page says so.
    let none = crate::support::http::get(addr, "/context?cwd=/w/nowhere");
    assert_eq!(none.status, 200);
    assert!(
        none.body.contains("eywa has no handoff of this project"),
        "{}",
        none.body
    );
    let bad = crate::support::http::get(addr, "/context?project=webapp&tokens=lots");
    assert_eq!(bad.status, 400, "{}", bad.body);
    server.stop();
}
