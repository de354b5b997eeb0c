//! The `eywa` binary, run as a person would.

use std::io::BufRead;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::fixture::{ClaudeHome, days_ago};

struct Env {
    home: ClaudeHome,
    data: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let home = ClaudeHome::new();
        home.session(
            "aaaaaaaa-0000-4000-8000-000000000001",
            "/w/tokenizer-service",
            days_ago(1),
            &[
                ("Fix the unicode tokenizer", "Fixed."),
                ("Add tests for it", "Added."),
            ],
        );
        home.session(
            "bbbbbbbb-0000-4000-8000-000000000002",
            "/w/ledger",
            days_ago(2),
            &[
                ("Reconcile the ledger", "Done."),
                ("Export to csv", "Exported."),
            ],
        );
        Env {
            home,
            data: tempfile::tempdir().unwrap(),
        }
    }

    fn eywa(&self) -> Command {
        crate::support::eywa_command(&self.data.path().join("eywa"), self.home.root())
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.eywa().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "eywa {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

#[test]
fn ingest_and_get_print_json() {
    let env = Env::new();
    let report = env.json(&["ingest", "--json"]);
    assert_eq!(report["counts"]["sessions"], 2);
    assert_eq!(report["counts"]["episodes"], 2);
    assert_eq!(report["counts"]["skipped_lines"], 0);
    assert_eq!(report["files_read"], 2);
    assert!(
        report["counts"]["entities"].as_u64().unwrap() >= 3,
        "{report}"
    );
    assert!(report["counts"]["edges"].as_u64().unwrap() >= 4, "{report}");

    let again = env.json(&["ingest", "--json"]);
    assert_eq!(again["counts"], report["counts"]);
    assert_eq!(again["files_unchanged"], 2);

    let got = env.json(&["get", "tokenizer", "--json"]);
    assert_eq!(got["tokens"], serde_json::json!(["tokenizer"]));
    assert_eq!(
        got["handoffs"][0]["session_id"],
        "aaaaaaaa-0000-4000-8000-000000000001"
    );
    assert_eq!(got["handoffs"].as_array().unwrap().len(), 1);

    let human = env.eywa().args(["get"]).output().unwrap();
    let text = String::from_utf8(human.stdout).unwrap();
    assert!(
        text.contains("claude --resume aaaaaaaa-0000-4000-8000-000000000001"),
        "{text}"
    );
    assert!(text.starts_with("1. "), "{text}");
}

#[test]
fn bad_arguments_and_missing_sources_fail_clearly() {
    let env = Env::new();
    let out = env.eywa().args(["get", "--limit", "0"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("limit must be between 1 and 1000"), "{err}");

    let out = env
        .eywa()
        .env("EYWA_CLAUDE_DIR", env.data.path().join("no-claude-here"))
        .args(["ingest"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no Claude Code projects folder"), "{err}");

    let out = env
        .eywa()
        .args(["serve", "--addr", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--allow-remote"), "{err}");
}

/// Starts `eywa serve` on a free loopback port; returns it, its address, and the thread
/// draining its stderr (so it never blocks on a full pipe).
fn spawn_serve(
    env: &Env,
    extra: &[&str],
) -> (std::process::Child, String, std::thread::JoinHandle<usize>) {
    let mut serve = env.eywa();
    serve
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(extra)
        .stderr(Stdio::piped())
        .stdout(Stdio::null());
    let (server, addr, drain, _) = spawn_and_read(serve);
    (server, addr, drain)
}

fn stop(mut server: std::process::Child, drain: std::thread::JoinHandle<usize>) {
    let status = Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = server.wait().unwrap();
    drain.join().unwrap();
    assert!(exit.success(), "serve exited with {exit:?}");
}

/// A session appended to while `serve` runs is updated without anyone asking.
#[test]
fn serve_follows_appended_sessions_live() {
    let env = Env::new();
    let (server, addr, drain) = spawn_serve(&env, &["--watch-interval-ms", "100"]);
    let minutes = |env: &Env| {
        let got = env.json(&["get", "tokenizer", "--json", "--addr", &addr]);
        got["handoffs"][0]["duration_minutes"].as_u64()
    };
    assert_eq!(minutes(&env), Some(3));

    // Twenty more minutes of work on the tokenizer session.
    let id = "aaaaaaaa-0000-4000-8000-000000000001";
    let path = env
        .home
        .root()
        .join("projects/-w-tokenizer-service")
        .join(format!("{id}.jsonl"));
    let later = days_ago(1) + chrono::Duration::minutes(4);
    let steps: Vec<(String, String)> = (0..10)
        .map(|i| (format!("step {i}"), "ok".to_owned()))
        .collect();
    let steps: Vec<(&str, &str)> = steps
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let more = crate::support::fixture::session_lines(id, "/w/tokenizer-service", later, &steps);
    let appended = std::time::Instant::now();
    crate::support::fixture::append(&path, &more);

    // Poll with a generous deadline; the watcher looks every 100 ms.
    let deadline = appended + std::time::Duration::from_secs(30);
    loop {
        if minutes(&env) == Some(23) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the appended lines never arrived"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    eprintln!("live update seen {:?} after the append", appended.elapsed());
    stop(server, drain);
}

/// `serve` holds the store; `get` then asks the server, and answers the same.
/// Nothing in the window: stdout keeps the Python Eywa's answer; stderr says how many
/// sessions are older, how old the newest is, and the `--days-back` that reaches it, with
/// or without a server. `--json` carries the same facts.
#[test]
fn get_with_nothing_in_its_window_says_why() {
    let home = ClaudeHome::new();
    home.session(
        "cccccccc-0000-4000-8000-000000000003",
        "/w/orchard",
        days_ago(20),
        &[("Prune the pear trees", "Pruned.")],
    );
    home.session(
        "dddddddd-0000-4000-8000-000000000004",
        "/w/orchard",
        days_ago(30),
        &[("Graft the apples", "Grafted.")],
    );
    let env = Env {
        home,
        data: tempfile::tempdir().unwrap(),
    };
    env.json(&["ingest", "--json"]);
    let json = env.json(&["get", "--json"]);
    assert_eq!(json["handoffs"], serde_json::json!([]));
    assert_eq!(json["older_sessions"], 2);
    let newest = json["newest_older_date"].as_str().unwrap().to_owned();
    let days = (chrono::Local::now().date_naive()
        - chrono::NaiveDate::parse_from_str(&newest, "%Y-%m-%d").unwrap())
    .num_days();
    let hint = format!(
        "eywa: nothing in the last 14 days; 2 sessions are older, the newest from {newest} \
         ({days} days ago): try --days-back {}\n",
        days + 1
    );
    let out = env.eywa().arg("get").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "No past sessions found.\n"
    );
    assert_eq!(String::from_utf8(out.stderr).unwrap(), hint);
    // The suggestion works.
    let wider = env.json(&["get", "--json", "--days-back", &(days + 1).to_string()]);
    assert_eq!(wider["handoffs"].as_array().unwrap().len(), 1);
    assert_eq!(wider["older_sessions"], 0);

    let (server, addr, drain) = spawn_serve(&env, &[]);
    let out = env.eywa().args(["get", "--addr", &addr]).output().unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "No past sessions found.\n"
    );
    assert_eq!(String::from_utf8(out.stderr).unwrap(), hint);
    stop(server, drain);
}

#[test]
fn get_asks_the_running_server_when_it_holds_the_store() {
    let env = Env::new();
    let (server, addr, drain) = spawn_serve(&env, &[]);
    let remote = env.json(&["get", "tokenizer", "--json", "--addr", &addr]);
    assert_eq!(
        remote["handoffs"][0]["session_id"],
        "aaaaaaaa-0000-4000-8000-000000000001"
    );
    let recent = env.json(&["get", "--json", "--addr", &addr]);
    assert_eq!(recent["handoffs"].as_array().unwrap().len(), 2);
    assert_eq!(recent["fallback_recent"], true);
    let ingest = env.json(&["ingest", "--json", "--addr", &addr]);
    assert_eq!(ingest["files_unchanged"], 2);
    assert_eq!(ingest["counts"]["episodes"], 2);

    // Ctrl-C stops it cleanly.
    stop(server, drain);

    // With the server gone, the CLI opens the store itself.
    let local = env.json(&["get", "tokenizer", "--json"]);
    assert_eq!(local["handoffs"], remote["handoffs"]);
}

#[test]
fn graph_and_stats_commands_print_human_and_json() {
    let env = Env::new();
    env.json(&["ingest", "--json"]);
    let touched = env.json(&["graph", "touched", "project:ledger", "--json"]);
    assert_eq!(
        touched["touches"][0]["episode"]["episode"]["session_id"],
        "bbbbbbbb-0000-4000-8000-000000000002"
    );
    let node = env.json(&["graph", "node", "session:aaaaaaaa", "--json"]);
    assert_eq!(node["node"]["kind"], "Episode");
    assert_eq!(node["handoff"]["projects"][0], "tokenizer-service");
    let find = env.json(&["graph", "find", "led", "--prefix", "--json"]);
    assert_eq!(find["entities"][0]["name"], "ledger");
    // The ingest never needed the whole graph in memory; the walk does, rebuilds it, and
    // leaves a snapshot for the next command.
    let snapshot = env.data.path().join("eywa/store/index/graph-view.bin");
    assert!(!snapshot.exists());
    let walk = env.json(&["graph", "walk", "project:ledger", "--depth", "2", "--json"]);
    assert!(walk["steps"].as_array().unwrap().len() >= 3, "{walk}");
    assert!(snapshot.is_file(), "a rebuilt view is saved");
    let again = env.json(&["graph", "walk", "project:ledger", "--depth", "2", "--json"]);
    assert_eq!(again, walk);
    let path = env.json(&[
        "graph",
        "path",
        "project:ledger",
        "project:tokenizer-service",
        "--json",
    ]);
    assert_eq!(path["found"], true);
    let related = env.json(&["graph", "related", "aaaaaaaa", "--json"]);
    assert!(
        related["related"].as_array().unwrap().is_empty(),
        "nothing rare is shared"
    );
    let neighbors = env.json(&[
        "graph",
        "neighbors",
        "tool:Read",
        "--relation",
        "used",
        "--json",
    ]);
    assert_eq!(neighbors["neighbors"].as_array().unwrap().len(), 2);
    // Each USED edge names the message of the session's first Read call.
    for n in neighbors["neighbors"].as_array().unwrap() {
        let edge = &n["edge"];
        let evidence = edge["evidence"].as_array().unwrap();
        assert_eq!(evidence.len(), 1, "{edge}");
        assert_eq!(evidence[0]["doc_id"], edge["src"]);
        assert!(
            evidence[0]["chunk_id"]
                .as_str()
                .unwrap()
                .starts_with("msg:")
        );
        assert_eq!(evidence[0]["score"], 1.0);
    }

    let human = env
        .eywa()
        .args(["graph", "touched", "project:ledger"])
        .output()
        .unwrap();
    let text = String::from_utf8(human.stdout).unwrap();
    assert!(text.starts_with("Episode  "), "{text}");

    let stats = env.json(&["stats", "--json"]);
    assert_eq!(stats["counts"]["episodes"], 2);
    // Two archives and their read states.
    assert_eq!(stats["tiers"]["blobs"], 4);
    let human = env.eywa().args(["stats"]).output().unwrap();
    let text = String::from_utf8(human.stdout).unwrap();
    assert!(text.contains("cold:") && text.contains("hot:"), "{text}");

    let bad = env
        .eywa()
        .args(["graph", "walk", "project:ledger", "--depth", "0"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("depth must be between 1 and 6"));
}

/// The model installed from a folder, the backlog embedded, searches by meaning with
/// `--explain`; then `serve` installing the model itself on first run (from
/// EYWA_MODEL_DIR), and a server without it answering lexically.
#[test]
fn semantic_search_from_the_shell_and_through_serve() {
    let Some(model) = crate::support::model::model_dir() else {
        return;
    };
    let env = Env::new();
    // No model yet: semantic is refused with the way out, hybrid says it is lexical.
    env.json(&["ingest", "--json"]);
    let out = env
        .eywa()
        .args(["search", "mending the text splitter", "--mode", "semantic"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("eywa model install"), "{err}");
    let lexical = env.json(&["search", "unicode tokenizer", "--json"]);
    assert_eq!(lexical["mode"], "lexical");
    assert!(
        lexical["notices"][0]
            .as_str()
            .unwrap()
            .contains("unavailable")
    );
    let out = env.eywa().args(["model", "status"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));

    let installed = env.json(&[
        "model",
        "install",
        "--from",
        model.path().to_str().unwrap(),
        "--offline",
        "--json",
    ]);
    assert_eq!(installed["installed"]["source"], "dir");
    let status = env.json(&["model", "status", "--json"]);
    assert_eq!(status["model_id"], installed["model_id"]);
    let stats = env.json(&["stats", "--json"]);
    assert!(
        stats["semantic"]["backlog"].as_u64().unwrap() > 0,
        "{stats}"
    );
    let embedded = env.json(&["embed", "--json"]);
    assert!(embedded["chunks"].as_u64().unwrap() > 0);
    let stats = env.json(&["stats", "--json"]);
    assert_eq!(stats["semantic"]["backlog"], 0);
    assert_eq!(stats["semantic"]["vectors"], embedded["chunks"]);

    let found = env.json(&[
        "search",
        "mending the text splitter",
        "--mode",
        "semantic",
        "--json",
    ]);
    assert_eq!(found["mode"], "semantic");
    assert_eq!(
        found["hits"][0]["session_id"], "aaaaaaaa-0000-4000-8000-000000000001",
        "{found}"
    );
    assert_eq!(found["hits"][0]["signals"]["semantic"]["rank"], 1);
    let out = env
        .eywa()
        .args(["search", "unicode tokenizer", "--explain"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("lexical #1") && text.contains("semantic #1"),
        "{text}"
    );
    let out = env
        .eywa()
        .args(["search", "tokenizer", "--mode", "fuzzy"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not lexical, semantic or hybrid"));

    // serve, first run on a fresh data dir: installs from EYWA_MODEL_DIR, then embeds
    // what it ingested in the background.
    let fresh = Env::new();
    let mut serve = fresh.eywa();
    serve
        .env("EYWA_MODEL_DIR", model.path())
        .env("EYWA_MODEL_INSTALL", "auto")
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null());
    let (server, addr, drain, said) = spawn_and_read(serve);
    assert!(
        !said.iter().any(|l| l.contains("semantic search is off")),
        "{said:?}"
    );
    assert!(
        fresh
            .data
            .path()
            .join("eywa/models/all-MiniLM-L6-v2/model.safetensors")
            .is_file()
    );
    // `eywa stats` asks the server, which holds the store, how far its embedder is.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let stats = loop {
        let stats = fresh.json(&["stats", "--json", "--addr", &addr]);
        assert_eq!(stats["semantic"]["model"], installed["model_id"], "{stats}");
        assert!(stats["counts"]["sessions"].as_u64().unwrap() > 0, "{stats}");
        if stats["semantic"]["backlog"] == 0 {
            break stats;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the backlog was never embedded: {stats}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert!(
        stats["semantic"]["vectors"].as_u64().unwrap() > 0,
        "{stats}"
    );
    let out = crate::support::succeed(fresh.eywa().args(["stats", "--addr", &addr]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("0 chunks waiting to be embedded"), "{text}");
    let remote = fresh.json(&[
        "search",
        "mending the text splitter",
        "--json",
        "--addr",
        &addr,
    ]);
    // The embedder is through: nothing is missing from the answer.
    assert_eq!(remote["notices"], serde_json::json!([]), "{remote}");
    assert_eq!(remote["mode"], "hybrid");
    assert_eq!(
        remote["hits"][0]["session_id"],
        "aaaaaaaa-0000-4000-8000-000000000001"
    );
    assert!(
        remote["hits"][0]["signals"]["semantic"]["rank"].is_u64(),
        "{remote}"
    );
    stop(server, drain);

    // A server without a model, told not to fetch one: lexical, said once.
    let bare = Env::new();
    let mut serve = bare.eywa();
    serve
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null());
    let (server, addr, drain, said) = spawn_and_read(serve);
    let off: Vec<&String> = said
        .iter()
        .filter(|l| l.contains("semantic search is off"))
        .collect();
    assert_eq!(off.len(), 1, "{said:?}");
    let out = bare
        .eywa()
        .args(["search", "tokenizer", "--mode", "semantic", "--addr", &addr])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("semantic search is unavailable"));
    let lexical = bare.json(&["search", "unicode tokenizer", "--json", "--addr", &addr]);
    assert_eq!(lexical["mode"], "lexical");
    assert_eq!(
        lexical["hits"][0]["session_id"],
        "aaaaaaaa-0000-4000-8000-000000000001"
    );
    stop(server, drain);
}

/// Spawns a prepared `serve` command; returns it, its address, the thread draining the
/// rest of its stderr, and the lines it printed before the address.
fn spawn_and_read(
    mut command: Command,
) -> (
    std::process::Child,
    String,
    std::thread::JoinHandle<usize>,
    Vec<String>,
) {
    let mut server = command.spawn().unwrap();
    let stderr = server.stderr.take().unwrap();
    let mut lines = std::io::BufReader::new(stderr).lines();
    let mut said = Vec::new();
    let addr = loop {
        let line = lines
            .next()
            .expect("serve reports its address before exiting")
            .unwrap();
        if let Some(addr) = line.strip_prefix("eywa: serving gRPC on ") {
            break addr.trim().to_owned();
        }
        said.push(line);
    };
    let drain = std::thread::spawn(move || lines.count());
    (server, addr, drain, said)
}

/// Settings come from defaults, then `<data>/config.toml`, then `EYWA_*` variables, then
/// flags; `eywa config show` says which, and the commands use them.
#[test]
fn settings_resolve_defaults_file_environment_flags_in_order() {
    let env = Env::new();
    let data = env.data.path().join("eywa");
    std::fs::create_dir_all(&data).unwrap();
    let shown = env.json(&["config", "show", "--json"]);
    assert_eq!(shown["file_exists"], false);
    let setting = |shown: &Value, key: &str| shown["settings"][key].clone();
    assert_eq!(
        setting(&shown, "chunk_idle_days"),
        serde_json::json!({"value": 30, "source": "default"})
    );
    assert_eq!(setting(&shown, "serve.model_install")["source"], "env");

    let root = env.home.root().to_str().unwrap().to_owned();
    std::fs::write(
        data.join("config.toml"),
        format!(
            "claude_dir = {root:?}\nchunk_idle_days = 7\nmin_free_mb = 8\n\n[serve]\nlisten = \"127.0.0.1:0\"\nwatch_interval_ms = 0\n"
        ),
    )
    .unwrap();
    let out = crate::support::succeed(env.eywa().env("EYWA_MIN_FREE_MB", "9").args([
        "config",
        "show",
        "--json",
        "--chunk-idle-days",
        "5",
    ]));
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["file_exists"], true);
    let expect = [
        ("chunk_idle_days", serde_json::json!(5), "flag"),
        ("min_free_mb", serde_json::json!(9), "env"),
        ("serve.listen", serde_json::json!("127.0.0.1:0"), "file"),
        ("serve.watch_interval_ms", serde_json::json!(0), "file"),
        ("claude_dir", serde_json::json!(root), "env"),
    ];
    for (key, value, source) in expect {
        assert_eq!(
            setting(&shown, key),
            serde_json::json!({"value": value, "source": source}),
            "{key}"
        );
    }

    // With no variable for it, the file's Claude dir is the one read.
    let out = crate::support::succeed(
        env.eywa()
            .env_remove("EYWA_CLAUDE_DIR")
            .args(["ingest", "--json"]),
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["counts"]["sessions"], 2, "{report}");

    // `serve` listens where the file says (port 0: any free one).
    let mut serve = env.eywa();
    serve
        .args(["serve", "--no-ingest"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null());
    // A Ctrl-C at once (as here) stops it cleanly: its handler is in place by then.
    let (server, addr, drain, _) = spawn_and_read(serve);
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    stop(server, drain);

    // A typo is an error naming the file and the key, not a setting quietly ignored.
    std::fs::write(data.join("config.toml"), "claud_dir = \"/x\"\n").unwrap();
    let out = env.eywa().args(["stats"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("config.toml") && err.contains("unknown field `claud_dir`"),
        "{err}"
    );
}
