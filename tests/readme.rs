//! The README's examples beyond its "Use it" block (issue 31), read from the README itself
//! so that an edit there changes what runs: the grpcurl calls against a running `eywa
//! serve`, `eywa setup claude` and its `--uninstall` on a home Claude Code never
//! configured, and the check, backup and restore block. `parity.rs` runs the "Use it"
//! block; what no test runs as written is listed in [`NOT_RUN`], with the reason.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::parity::{World, build_world, readme_commands, words};
use crate::support::grpcurl;
use crate::support::serve::Serve;

const README: &str = include_str!("../README.md");

/// The address the README's grpcurl lines ask: `eywa serve`'s default.
const README_ADDR: &str = "localhost:50051";

/// Commands the README shows that no test runs as written, and why.
const NOT_RUN: [(&str, &str); 7] = [
    (
        "cargo run --release -- serve",
        "builds, then serves until Ctrl-C: the tests run the built `eywa serve` instead",
    ),
    ("cargo test", "the suite this test belongs to"),
    (
        "claude plugin marketplace add /path/to/this/clone",
        "needs Claude Code's CLI: tests/setup.rs adds this clone when `claude` is installed",
    ),
    (
        "claude plugin install eywa@eywa",
        "needs Claude Code's CLI: tests/setup.rs installs it when `claude` is installed",
    ),
    (
        "claude mcp add --transport http eywa http://127.0.0.1:50051/mcp",
        "needs Claude Code's CLI: tests/mcp.rs adds the endpoint when `claude` is installed",
    ),
    (
        "claude mcp remove eywa",
        "needs Claude Code's CLI, and undoes only what the line above did",
    ),
    (
        "grpcurl -cacert <data>/tls/cert.pem",
        "a template (`<data>`, `…`) for a server run with --allow-remote: tests/remote.rs \
         makes such calls",
    ),
];

/// The body of the first sh block after `lead_in`.
fn sh_block(lead_in: &str) -> &'static str {
    README
        .split_once(lead_in)
        .unwrap_or_else(|| panic!("the README says {lead_in:?}"))
        .1
        .split("```sh")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap_or_else(|| panic!("a sh block follows {lead_in:?}"))
}

/// A block's command lines, comments dropped (as `parity::readme_commands` reads them).
fn commands(block: &str) -> Vec<String> {
    block
        .lines()
        .map(|l| match l.find(" #") {
            Some(at) => l[..at].trim(),
            None => l.trim(),
        })
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// The grpcurl lines under "Over gRPC, with [grpcurl]".
fn grpcurl_lines() -> Vec<String> {
    commands(sh_block("Over gRPC, with [grpcurl]"))
}

/// The lines of "To verify the store, copy it and bring a copy back:".
fn check_lines() -> Vec<String> {
    commands(sh_block(
        "To verify the store, copy it and bring a copy back:",
    ))
}

/// The setup lines of "Use it from Claude Code": its sh block, and the uninstall its prose
/// tells the reader to run.
fn setup_lines() -> (Vec<String>, String) {
    let section = README
        .split_once("## Use it from Claude Code")
        .expect("the README has a Use it from Claude Code section")
        .1;
    let section = section.split("\n## ").next().unwrap();
    let install = commands(sh_block("## Use it from Claude Code"));
    let uninstall = section
        .split("run `")
        .skip(1)
        .filter_map(|s| s.split('`').next())
        .find(|c| c.starts_with("eywa setup claude") && c.contains("--uninstall"))
        .expect("the section says to run `eywa setup claude --uninstall`")
        .to_owned();
    (install, uninstall)
}

/// Every command of every sh block in the README is run by a test (parity.rs or this file)
/// or listed in [`NOT_RUN`] with the reason, and every command `NOT_RUN` lists is still in
/// the README: a new example cannot go unrun unnoticed.
#[test]
fn every_command_the_readme_shows_is_run_or_listed_as_not_run() {
    let mut run = readme_commands();
    run.extend(grpcurl_lines());
    run.extend(check_lines());
    let (install, uninstall) = setup_lines();
    run.extend(install);
    run.push(uninstall);
    let blocks: Vec<&str> = README
        .split("```sh")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert!(blocks.len() >= 5, "{blocks:#?}");
    for line in blocks.iter().copied().flat_map(commands) {
        assert!(
            run.contains(&line) || NOT_RUN.iter().any(|(c, _)| *c == line),
            "the README shows `{line}`, which no test runs: run it, or list it in NOT_RUN"
        );
    }
    let prose = README.split_whitespace().collect::<Vec<_>>().join(" ");
    for (command, _) in NOT_RUN {
        assert!(
            prose.contains(command),
            "NOT_RUN lists `{command}`, which the README no longer shows"
        );
    }
}

/// Every grpcurl line of the README, run as written against `eywa serve` on a store of the
/// README's projects (only `localhost:50051` changed for the server's address), answers
/// what the line asks for: `list` names eywa's services (reflection is on); every call
/// exits 0 and prints JSON; `GetHandoffs` finds handoffs that hold a query word (not the
/// most-recent fallback); `Search` finds a session that says the query's words, only of
/// the types asked for; a focus on a project the store holds is taken (not "left out") and
/// ranks that project first; `WhatTouched` finds the project's sessions; health is
/// SERVING.
#[test]
fn every_readme_grpcurl_call_answers_on_a_store_with_the_readmes_projects() {
    let Some(bin) = grpcurl::grpcurl() else {
        return;
    };
    let lines = grpcurl_lines();
    assert!(lines.len() >= 6, "{lines:#?}");
    let Some(world) = build_world() else { return };
    let mut serve = world.eywa();
    serve.args(["serve", "--addr", "127.0.0.1:0", "--watch-interval-ms", "0"]);
    let server = Serve::spawn(serve);
    for line in &lines {
        let args: Vec<String> = words(line)
            .into_iter()
            .skip(1)
            .map(|w| {
                if w == README_ADDR {
                    server.addr.clone()
                } else {
                    w
                }
            })
            .collect();
        assert!(
            words(line)[0] == "grpcurl" && args.contains(&server.addr),
            "`{line}` is a grpcurl call to {README_ADDR}"
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_answer(line, &args, &grpcurl::run(&bin, &args));
    }
    server.stop();
}

/// What one README grpcurl line promises, read from its method and request.
fn assert_answer(line: &str, args: &[&str], out: &grpcurl::Output) {
    assert!(out.success, "`{line}` failed: {}", out.stderr);
    let method = *args.last().unwrap();
    if method == "list" {
        for service in [
            "eywa.v1.Retrieval",
            "eywa.v1.Graph",
            "grpc.health.v1.Health",
        ] {
            assert!(
                out.stdout.lines().any(|l| l.trim() == service),
                "`{line}` lists {service}: {}",
                out.stdout
            );
        }
        return;
    }
    let request: Value = args
        .iter()
        .position(|a| *a == "-d")
        .map(|at| serde_json::from_str(args[at + 1]).expect("the README's request is JSON"))
        .unwrap_or(Value::Null);
    let answer = out.json();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_lowercase)
            .collect()
    };
    match method.rsplit_once('/').map_or(method, |(_, m)| m) {
        "GetHandoffs" => {
            let handoffs = answer["handoffs"].as_array().cloned().unwrap_or_default();
            assert!(!handoffs.is_empty(), "`{line}` finds handoffs: {answer:#}");
            assert_ne!(
                answer["fallbackRecent"], true,
                "`{line}` matches, not the most recent: {answer:#}"
            );
            let tokens = strings(&answer["tokens"]);
            let top = &handoffs[0]["handoff"];
            let held = strings(&top["keywords"])
                .into_iter()
                .chain(strings(&top["projects"]))
                .any(|v| tokens.iter().any(|t| v.contains(t.as_str())));
            assert!(
                held,
                "`{line}`: the best handoff holds a query token: {answer:#}"
            );
        }
        "Search" => {
            let hits = answer["hits"].as_array().cloned().unwrap_or_default();
            assert!(!hits.is_empty(), "`{line}` finds hits: {answer:#}");
            let query = request["query"].as_str().unwrap().to_lowercase();
            let snippet = hits[0]["snippet"].as_str().unwrap_or("").to_lowercase();
            assert!(
                query.split_whitespace().any(|w| snippet.contains(w)),
                "`{line}`: the best hit says a query word: {answer:#}"
            );
            let types = strings(&request["types"]);
            if !types.is_empty() {
                for hit in &hits {
                    let kind = hit["type"].as_str().unwrap_or("").to_lowercase();
                    assert!(
                        types.contains(&kind),
                        "`{line}` finds only {types:?}: {answer:#}"
                    );
                }
            }
            if let Some(focus) = request["focus"].as_str() {
                let notices = strings(&answer["notices"]);
                assert!(
                    !notices.iter().any(|n| n.starts_with("focus left out")),
                    "`{line}`: the focus names something in the store: {answer:#}"
                );
                if let Some(project) = focus.strip_prefix("project:") {
                    assert_eq!(
                        hits[0]["project"], project,
                        "`{line}` ranks the focused project first: {answer:#}"
                    );
                }
            }
        }
        "WhatTouched" => {
            let touches = answer["touches"].as_array().cloned().unwrap_or_default();
            assert!(!touches.is_empty(), "`{line}` finds sessions: {answer:#}");
            for touch in &touches {
                assert_eq!(touch["episode"]["kind"], "Episode", "`{line}`: {answer:#}");
            }
        }
        "Check" => assert_eq!(answer["status"], "SERVING", "`{line}`: {answer:#}"),
        // Any other call: that it answered JSON, checked above.
        _ => {}
    }
}

/// An `eywa` on a home of its own and nothing else of the caller's environment, as on a
/// fresh machine: `~/.claude` and `~/.eywa` are the home's.
fn fresh_eywa(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_eywa"));
    cmd.env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(home);
    cmd
}

/// Runs a README line (`eywa …`) with `cmd`: its output, having asserted it exit 0.
fn run_line(mut cmd: Command, line: &str, args: &[String]) -> Output {
    assert_eq!(words(line)[0], "eywa", "`{line}` runs eywa");
    let out = cmd.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "`{line}` exited {:?}: {}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// A JSON file, parsed.
fn json_file(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The hook commands of one event in a `settings.json`.
fn hook_commands(settings: &Value, event: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|e| e["hooks"].as_array().into_iter().flatten())
        .filter_map(|h| h["command"].as_str().map(str::to_owned))
        .collect()
}

/// The README's `eywa setup claude`, run as written on a home Claude Code never configured
/// (no `~/.claude`, no `~/.eywa`, none of the caller's environment), exits 0 and puts
/// eywa's hooks in `~/.claude/settings.json` (one per event, the prompt hook off) and its
/// MCP server in `~/.claude.json` (not in `settings.json`); the `eywa setup claude
/// --uninstall` the README tells the reader to run exits 0 and takes both files out again
/// (setup created them, so nothing of them is left).
#[test]
fn the_readme_setup_claude_installs_and_its_uninstall_takes_it_out() {
    let (install, uninstall) = setup_lines();
    assert!(!install.is_empty(), "the section has an `eywa setup` line");
    let home = tempfile::tempdir().unwrap();
    let settings = home.path().join(".claude/settings.json");
    let user_mcp = home.path().join(".claude.json");
    let eywa = env!("CARGO_BIN_EXE_eywa");

    for line in &install {
        let out = run_line(fresh_eywa(home.path()), line, &words(line)[1..]);
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains("set up"), "`{line}`: {said}");
    }
    let written = json_file(&settings);
    for (event, arg) in [
        ("SessionStart", "session-start"),
        ("Stop", "stop"),
        ("SessionEnd", "session-end"),
        ("PreCompact", "pre-compact"),
    ] {
        let hooks = hook_commands(&written, event);
        assert_eq!(hooks.len(), 1, "one {event} hook: {written:#}");
        assert!(
            hooks[0].contains(eywa) && hooks[0].ends_with(&format!(" hook {arg}")),
            "the {event} hook runs this eywa: {written:#}"
        );
    }
    if !install.iter().any(|l| l.contains("--prompt-hook")) {
        assert!(
            hook_commands(&written, "UserPromptSubmit").is_empty(),
            "the prompt hook is off by default: {written:#}"
        );
    }
    assert!(written.get("mcpServers").is_none(), "{written:#}");
    let registered = json_file(&user_mcp);
    let server = &registered["mcpServers"]["eywa"];
    assert_eq!(server["command"], eywa, "{registered:#}");
    assert_eq!(server["args"], serde_json::json!(["mcp"]), "{registered:#}");

    let out = run_line(fresh_eywa(home.path()), &uninstall, &words(&uninstall)[1..]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("removed eywa from"), "`{uninstall}`: {said}");
    for file in [&settings, &user_mcp] {
        assert!(
            !file.exists(),
            "setup created {}, so `{uninstall}` removes it: {}",
            file.display(),
            std::fs::read_to_string(file).unwrap_or_default()
        );
    }
}

/// A README word with `~/` standing for a home of the world's own (after the README's
/// other placeholders).
fn at_home(world: &World, word: &str) -> String {
    let word = world.substitute(word);
    match word.strip_prefix("~/") {
        Some(rest) => world._root.path().join(rest).display().to_string(),
        None => word,
    }
}

/// The sessions `eywa sessions list --json` shows.
fn sessions(world: &World) -> Value {
    let line = "eywa sessions list --json";
    let out = run_line(world.eywa(), line, &words(line)[1..]);
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    listed["sessions"].clone()
}

/// The README's check, backup and restore block, run as written on a store of the README's
/// projects with no server running (`check --repair` and `restore` need the store to
/// themselves) and `~/eywa-backup` a folder that does not exist yet: each line exits 0,
/// each check finds 0 problems, the backup makes its folder, the restore moves the old
/// store aside (kept, not deleted), and the restored store then checks clean and lists the
/// same sessions as before.
#[test]
fn the_readme_check_backup_and_restore_block_gives_back_the_same_sessions() {
    let lines = check_lines();
    let verbs: Vec<String> = lines.iter().map(|l| words(l)[1].clone()).collect();
    for verb in ["check", "backup", "restore"] {
        assert!(verbs.iter().any(|v| v == verb), "{lines:#?}");
    }
    let Some(world) = build_world() else { return };
    let before = sessions(&world);
    assert!(
        before.as_array().is_some_and(|s| s.len() >= 4),
        "{before:#}"
    );

    let mut restored = false;
    for line in &lines {
        let args: Vec<String> = words(line)[1..]
            .iter()
            .map(|w| at_home(&world, w))
            .collect();
        if args[0] == "backup" {
            assert!(!Path::new(&args[1]).exists(), "{} is new", args[1]);
        }
        let out = run_line(world.eywa(), line, &args);
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        match args[0].as_str() {
            "check" => assert!(
                said.lines().any(|l| l.starts_with("0 problems;")),
                "`{line}`: {said}"
            ),
            "backup" => {
                let dir = PathBuf::from(&args[1]);
                assert!(
                    dir.is_dir() && std::fs::read_dir(&dir).unwrap().next().is_some(),
                    "`{line}` writes {}: {said}",
                    dir.display()
                );
            }
            "restore" => {
                let aside = said
                    .lines()
                    .find_map(|l| l.strip_prefix("the store it replaced is in "))
                    .unwrap_or_else(|| panic!("`{line}` says where the old store went: {said}"));
                assert!(
                    Path::new(aside.trim()).join("store").is_dir(),
                    "`{line}` keeps the old store: {said}"
                );
                let check = "eywa check";
                let out = run_line(world.eywa(), check, &words(check)[1..]);
                let said = String::from_utf8_lossy(&out.stdout);
                assert!(
                    said.lines().any(|l| l.starts_with("0 problems;")),
                    "after `{line}`: {said}"
                );
                assert_eq!(sessions(&world), before, "after `{line}`");
                restored = true;
            }
            _ => {}
        }
    }
    assert!(restored, "{lines:#?}");
}

/// Issue 31 item 12: the README's list of departures from the seeds names every one the
/// issue asked to see, each with its reason (a `because`-shaped clause after the topic).
#[test]
fn the_readme_lists_every_departure_from_the_seeds() {
    let section = README
        .split("## Where eywa differs from the seeds")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the README has its departures section");
    let items: Vec<&str> = section.split("\n- **").skip(1).collect();
    for topic in [
        "settings precedence",
        "default search types",
        "recency",
        "node ids",
        "node embeddings",
        "entity types",
        "Team fields",
        "Insights and Open Threads",
        "sessions with no user message",
        "a copied session",
        "headlines of 5–10 words",
        "subagent hits",
    ] {
        let item = items
            .iter()
            .find(|i| i.contains(topic))
            .unwrap_or_else(|| panic!("no departure names {topic:?}"));
        // A topic, then what eywa does and why: more than a heading.
        assert!(
            item.split_whitespace().count() > 25,
            "the departure {topic:?} gives no reason: {item}"
        );
    }
}
