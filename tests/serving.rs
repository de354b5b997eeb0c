//! A running server announces itself and is the one every command asks (issue 13): a stale
//! announcement is ignored, a second server on the same store is refused, and an idle
//! server's log stays quiet.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::support::fixture::{ClaudeHome, days_ago, session_lines};
use crate::support::serve::Serve;

struct Env {
    home: ClaudeHome,
    data: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let home = ClaudeHome::new();
        home.session(
            "c0ffee00-0000-4000-8000-000000000001",
            "/w/roaster",
            days_ago(1),
            &[
                ("Tune the roast profile", "Tuned."),
                ("Log the temperatures", "Logged."),
            ],
        );
        Env {
            home,
            data: tempfile::tempdir().unwrap(),
        }
    }

    fn eywa(&self) -> Command {
        crate::support::eywa_command(self.data.path(), self.home.root())
    }

    /// Adds a session of one exchange to the roaster project, written beside the tree
    /// and renamed in: a watcher never sees half a file.
    fn add_session(&self, id: &str, exchange: (&str, &str)) {
        let lines = session_lines(id, "/w/roaster", days_ago(0), &[exchange]);
        let staged = self.home.root().join("staged.jsonl");
        std::fs::write(&staged, lines.join("\n") + "\n").unwrap();
        let target = format!("projects/-w-roaster/{id}.jsonl");
        std::fs::rename(&staged, self.home.root().join(target)).unwrap();
    }

    fn serve(&self, extra: &[&str]) -> Command {
        let mut cmd = self.eywa();
        cmd.args(["serve", "--addr", "127.0.0.1:0"]).args(extra);
        cmd
    }

    fn get_json(&self) -> Value {
        let out = crate::support::succeed(self.eywa().args(["get", "roast", "--json"]));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// An announcement whose process is gone, or whose pid now belongs to another process, is
/// ignored: commands open the store themselves.
#[test]
fn a_stale_announcement_is_ignored() {
    let env = Env::new();
    let out = env.eywa().args(["ingest"]).output().unwrap();
    assert!(out.status.success());
    let answer = env.get_json();
    assert_eq!(answer["handoffs"][0]["short_id"], "c0ffee00");

    // A server that died without removing its file: its pid is no process now.
    let child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    let _ = child.wait_with_output();
    let stale = |pid: u32, process_start: Option<u64>| {
        serde_json::json!({
            "addr": "127.0.0.1:9", "pid": pid, "started": "2026-01-01T00:00:00.000Z",
            "version": "0.1.0", "process_start": process_start,
        })
    };
    let file = env.data.path().join("serve.json");
    std::fs::write(&file, stale(dead, None).to_string()).unwrap();
    assert_eq!(env.get_json(), answer);
    // A pid that lives, but started after the announcement was written: reused.
    std::fs::write(&file, stale(std::process::id(), Some(1)).to_string()).unwrap();
    assert_eq!(env.get_json(), answer);
    crate::support::succeed(env.eywa().args(["graph", "touched", "project:roaster"]));
    // A damaged file is no announcement either.
    std::fs::write(&file, b"{\"addr\": 12").unwrap();
    assert_eq!(env.get_json(), answer);

    // A live server replaces it, and is asked.
    let server = Serve::spawn(env.serve(&["--watch-interval-ms", "0"]));
    let announced: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(announced["pid"], server.pid());
    assert_eq!(env.get_json(), answer);
    server.stop();
    assert!(!file.exists());
}

/// One server per store: a second `serve` on the same data directory is refused, saying
/// which server holds it; without an announcement, the store's lock refuses it too.
#[test]
fn a_second_server_on_one_store_is_refused() {
    let env = Env::new();
    let first = Serve::spawn(env.serve(&["--watch-interval-ms", "0"]));
    let out = env.serve(&[]).output().unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("eywa serve is already running")
            && said.contains(&first.pid().to_string())
            && said.contains(&first.addr),
        "{said}"
    );
    // The announcement gone (removed by hand), the store's lock still refuses.
    std::fs::remove_file(env.data.path().join("serve.json")).unwrap();
    let out = env.serve(&[]).output().unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("in use by another eywa process"), "{said}");
    first.stop();
}

/// An idle server logs nothing while it looks for changes; a change is logged once.
#[test]
fn an_idle_server_is_quiet_and_a_change_is_logged() {
    let env = Env::new();
    let mut command = env.serve(&["--watch-interval-ms", "20"]);
    command.env("EYWA_LOG", "eywa=debug");
    let server = Serve::spawn(command);
    let looks = |lines: &[String]| {
        lines
            .iter()
            .filter(|l| l.contains("DEBUG") && l.contains("ingest done"))
            .count()
    };
    let lines = server.wait_for(Duration::from_secs(60), |l| looks(l) >= 5);
    assert!(looks(&lines) >= 5, "the watcher did not run: {lines:#?}");
    let serving = lines
        .iter()
        .position(|l| l.starts_with("eywa: serving gRPC on "))
        .unwrap();
    let loud: Vec<&String> = lines[serving + 1..]
        .iter()
        .filter(|l| !l.contains("DEBUG"))
        .collect();
    assert!(loud.is_empty(), "an idle server logged: {loud:#?}");
    // The web view is on the same listener, at the address it prints.
    let web = server.socket();
    assert_eq!(server.web_url(), format!("http://{web}/"));
    let before = crate::support::http::get(web, "/");
    assert_eq!(before.status, 200, "{}", before.body);
    assert!(
        before.body.contains("1 project, 1 session"),
        "{}",
        before.body
    );

    // A new session is news.
    env.add_session(
        "c0ffee00-0000-4000-8000-000000000002",
        ("Add a cooling stage", "Added."),
    );
    let lines = server.wait_for(Duration::from_secs(60), |l| {
        l.iter()
            .any(|l| l.contains("INFO") && l.contains("ingested changes"))
    });
    let news: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("INFO") && l.contains("ingested changes"))
        .collect();
    assert_eq!(news.len(), 1, "{lines:#?}");
    // And on the web view's projects at the next load.
    let after = crate::support::http::get(web, "/");
    assert!(
        after.body.contains("1 project, 2 sessions"),
        "{}",
        after.body
    );
    server.stop();
}

/// While `serve` runs, its look for changed transcripts does not save the graph view's
/// snapshot after a client's write (it read nothing, so nothing was flushed); stopping
/// saves it, so the next start loads the snapshot instead of rebuilding the view.
#[test]
fn a_stopped_server_leaves_the_graph_view_snapshot_current() {
    let env = Env::new();
    let server = Serve::spawn(env.serve(&["--watch-interval-ms", "20"]));
    // A walk loads the server's view of the graph (a server that never walked has none
    // to save).
    crate::support::succeed(env.eywa().args(["graph", "walk", "project:roaster"]));
    crate::support::succeed(env.eywa().args([
        "memory",
        "add",
        "Roast the beans at 205 degrees",
        "--project",
        "roaster",
    ]));
    server.stop();
    let engine = eywa::engine::Engine::open(eywa::engine::EngineConfig::new(
        env.data.path(),
        env.home.root(),
    ))
    .unwrap();
    assert!(
        engine.graph().view_from_snapshot().unwrap(),
        "the view is loaded from the snapshot the stop saved"
    );
}

/// `--allow-host` names a host the server answers besides loopback names; any other
/// `Host` (a page whose name was made to resolve here) is refused, the web view and `/mcp`
/// alike.
#[test]
fn allow_host_opens_the_web_view_and_mcp_to_that_name_alone() {
    use crate::support::http;
    let env = Env::new();
    let server = Serve::spawn(env.serve(&["--allow-host", "eywa.internal"]));
    let web = server.socket();
    assert_eq!(server.web_url(), format!("http://{web}/"));
    let named = http::request(web, "GET", "/", "eywa.internal");
    assert_eq!(named.status, 200, "{}", named.body);
    assert!(named.body.contains("roaster"));
    let other = http::request(web, "GET", "/", "evil.example");
    assert_eq!(other.status, 421, "{}", other.body);
    assert!(!other.body.contains("roaster"));
    // `/mcp` is refused a `Host` it does not know before it reads the call (by the server,
    // and by the MCP SDK's own check behind it); the allowed name gets past both, to the
    // SDK's answer for a call without a body.
    let other = http::request(web, "POST", "/mcp", "evil.example");
    assert_eq!(other.status, 421, "{}", other.body);
    let named = http::request(web, "POST", "/mcp", "eywa.internal");
    assert!(
        !named.body.contains("Host header is not allowed"),
        "{} {}",
        named.status,
        named.body
    );
    let local = http::request(web, "POST", "/mcp", &web.to_string());
    assert_eq!(named.status, local.status, "{}", named.body);
    server.stop();
}

/// `eywa open` prints the web view's address of a page on the running server, which
/// serves it; without a server, where `serve` would listen, and says none runs.
#[test]
fn eywa_open_prints_the_address_of_a_session_a_node_or_a_search() {
    use crate::support::http;
    let env = Env::new();
    let open = |args: &[&str]| {
        let out = crate::support::succeed(env.eywa().arg("open").args(args));
        (
            String::from_utf8(out.stdout).unwrap().trim().to_owned(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (url, said) = open(&["c0ffee00"]);
    assert_eq!(url, "http://127.0.0.1:50051/sessions/c0ffee00");
    assert!(said.contains("no eywa serve is running"), "{said}");

    let server = Serve::spawn(env.serve(&[]));
    let addr = server.socket();
    for (args, path, shows) in [
        (vec![], "/".to_owned(), "roaster"),
        (
            vec!["c0ffee00"],
            "/sessions/c0ffee00".to_owned(),
            "Tune the roast profile",
        ),
        (
            vec!["project:roaster"],
            "/nodes/project:roaster".to_owned(),
            "What touched it",
        ),
        (
            vec!["--search", "roast profile"],
            "/search?q=roast+profile".to_owned(),
            "c0ffee00-0000-4000-8000-000000000001",
        ),
    ] {
        let (url, said) = open(&args);
        assert_eq!(url, format!("http://{addr}{path}"), "{args:?}");
        assert!(!said.contains("no eywa serve"), "{said}");
        let page = http::get(addr, &path);
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        assert!(page.body.contains(shows), "{path}: {}", page.body);
    }
    let out = crate::support::succeed(env.eywa().args(["open", "file:src/a b.rs", "--json"]));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["url"],
        format!("http://{addr}/nodes/file:src/a%20b.rs")
    );
    assert_eq!(json["serving"], true);
    server.stop();
}

/// An open page hears of a new session over `/events` (the watcher looks often while a
/// page listens, though its interval here is a minute), and a stopping server ends the
/// stream at once instead of waiting out the connections' grace.
#[test]
fn an_open_page_hears_of_a_new_session_and_stopping_ends_its_stream() {
    use std::io::{Read, Write};
    let env = Env::new();
    let server = Serve::spawn(env.serve(&["--watch-interval-ms", "60000"]));
    let addr = server.socket();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(stream, "GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut said = Vec::new();
    // Reads until the stream has said `needle` (or ends, or 20 s pass without a byte).
    let mut until = |needle: &str, said: &mut Vec<u8>| {
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(said).contains(needle) {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => said.extend_from_slice(&buf[..n]),
            }
        }
        String::from_utf8_lossy(said).contains(needle)
    };
    assert!(
        until("event: ready", &mut said),
        "{}",
        String::from_utf8_lossy(&said)
    );
    let text = String::from_utf8_lossy(&said).into_owned();
    assert!(text.contains("content-type: text/event-stream"), "{text}");

    // A new session, written while the page listens.
    env.add_session(
        "c0ffee00-0000-4000-8000-000000000003",
        ("Chart the first crack", "Charted."),
    );
    assert!(
        until("event: changed", &mut said),
        "no change heard: {}",
        String::from_utf8_lossy(&said)
    );
    let page = crate::support::http::get(addr, "/projects/roaster");
    assert!(page.body.contains("Chart the first crack"), "{}", page.body);
    assert!(
        page.body
            .contains(r#"id="s-c0ffee00-0000-4000-8000-000000000003""#)
    );

    // Stopping ends the open stream itself: no connection is left for the grace to close.
    let said_at_stop = server.stop();
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    assert!(
        !said_at_stop
            .iter()
            .any(|l| l.contains("connections still open")),
        "{said_at_stop:#?}"
    );
}
