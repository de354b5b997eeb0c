//! The `eywa` binary against what a careless or hostile user does: closed pipes, `~` in
//! quoted paths, symlinks out of the Claude dir, malformed lines, files others could read.

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::fixture::{ClaudeHome, days_ago};

const FIRST: &str = "aaaaaaaa-0000-4000-8000-000000000001";

struct Env {
    home: ClaudeHome,
    data: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let home = ClaudeHome::new();
        home.session(
            FIRST,
            "/w/tokenizer-service",
            days_ago(1),
            &[
                ("Fix the unicode tokenizer", "Fixed the tokenizer."),
                ("Add tests for the tokenizer", "Added."),
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

    fn data_dir(&self) -> std::path::PathBuf {
        self.data.path().join("eywa")
    }

    fn eywa(&self) -> Command {
        crate::support::eywa_command(&self.data_dir(), self.home.root())
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

/// The write end of a pipe whose read end is already closed: every write fails with
/// EPIPE, as `eywa … | head -1` sees once `head` has its line.
fn closed_pipe() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    Stdio::from(write)
}

#[test]
fn a_closed_stdout_ends_every_printing_command_quietly() {
    let env = Env::new();
    env.json(&["ingest", "--json"]);
    let commands: &[&[&str]] = &[
        &["search", "tokenizer"],
        &["search", "tokenizer", "--json"],
        &["get", "tokenizer"],
        &["get"],
        &["sessions", "list"],
        &["sessions", "show", FIRST],
        &["sessions", "export", FIRST],
        &["sessions", "export", FIRST, "--format", "json"],
        &["sessions", "search", "tokenizer"],
        &["stats"],
        &["stats", "--json"],
        &["graph", "touched", "project:tokenizer-service"],
        &["context", FIRST],
        &["context", FIRST, "--dry-run"],
        &["ingest"],
    ];
    for args in commands {
        // What the command says on stderr with somewhere to write (a missing model's
        // warning, say): a closed pipe must add nothing to it.
        let open = env
            .eywa()
            .args(*args)
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert!(open.status.success(), "eywa {args:?}");
        let out = env
            .eywa()
            .args(*args)
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "eywa {args:?} on a closed pipe: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&open.stderr),
            "eywa {args:?} on a closed pipe"
        );
    }
}

#[test]
fn a_closed_stderr_never_panics() {
    let env = Env::new();
    env.json(&["ingest", "--json"]);
    // (arguments, the exit code with somewhere to write): a notice on stderr (search
    // without the model is lexical, and says so), an error (no such session), a warning.
    let commands: &[(&[&str], i32)] = &[
        (&["search", "tokenizer"], 0),
        (&["sessions", "show", "zzzzzzzz"], 1),
        (&["context", FIRST, "--max-tokens", "10"], 0),
    ];
    for (args, code) in commands {
        let open = env.eywa().args(*args).output().unwrap();
        assert_eq!(open.status.code(), Some(*code), "eywa {args:?}");
        assert!(
            !open.stderr.is_empty(),
            "eywa {args:?} says something on stderr"
        );
        let out = env
            .eywa()
            .args(*args)
            .stdout(Stdio::piped())
            .stderr(closed_pipe())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(*code),
            "eywa {args:?} with stderr closed (101 is a panic)"
        );
        assert_eq!(out.stdout, open.stdout, "eywa {args:?}");
    }
}

#[test]
fn a_tilde_starts_a_path_only_at_its_start() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    // Quoted, as a shell leaves it: `--data-dir='~/store'`.
    crate::support::succeed(
        env.eywa()
            .env("HOME", home.path())
            .env_remove("EYWA_DATA_DIR")
            .args(["--data-dir", "~/store", "ingest", "--json"]),
    );
    assert!(home.path().join("store").is_dir(), "~/store under HOME");

    // The environment too, and the Claude dir.
    let link = home.path().join("claude");
    std::os::unix::fs::symlink(env.home.root(), &link).unwrap();
    let report = {
        let out = crate::support::succeed(
            env.eywa()
                .env("HOME", home.path())
                .env("EYWA_DATA_DIR", "~/env-store")
                .env("EYWA_CLAUDE_DIR", "~/claude")
                .args(["ingest", "--json"]),
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    assert_eq!(report["files_read"], 2, "{report}");
    assert!(home.path().join("env-store").is_dir());

    // Elsewhere it is a plain character: a relative path under the working directory.
    let cwd = tempfile::tempdir().unwrap();
    crate::support::succeed(
        env.eywa()
            .env("HOME", home.path())
            .current_dir(cwd.path())
            .args(["--data-dir", "a/~/b", "stats", "--json"]),
    );
    assert!(cwd.path().join("a/~/b").is_dir());
    assert!(!home.path().join("b").exists());
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

/// Every folder and file under `root` that is not 0700 / 0600, with its mode.
fn public_entries(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let want = if meta.is_dir() {
                stack.push(path.clone());
                0o700
            } else {
                0o600
            };
            if mode(&path) != want {
                found.push(format!("{:o} {}", mode(&path), path.display()));
            }
        }
    }
    found
}

#[test]
fn every_file_under_the_data_dir_is_private() {
    let env = Env::new();
    env.json(&["ingest", "--json"]);
    for args in [
        &["get", "tokenizer", "--json"][..],
        &["search", "tokenizer", "--json"],
        &["graph", "walk", "project:ledger", "--json"],
        &["context", FIRST, "--json"],
        &["stats", "--json"],
    ] {
        env.json(args);
    }
    let serve = crate::support::serve::Serve::spawn({
        let mut cmd = env.eywa();
        cmd.args(["--addr", "127.0.0.1:0", "serve"]);
        cmd
    });
    assert!(env.data_dir().join("serve.json").is_file());
    env.json(&["ingest", "--json"]);
    // Looked at while the server runs: serve.json and sled's files are there.
    let served = public_entries(&env.data_dir());
    serve.stop();
    assert_eq!(mode(&env.data_dir()), 0o700);
    assert!(
        served.is_empty(),
        "readable by others while serving: {served:#?}"
    );
    let left = public_entries(&env.data_dir());
    assert!(left.is_empty(), "readable by others: {left:#?}");
    assert!(
        env.data_dir().join("handoffs").is_dir(),
        "handoff files were written"
    );
}

#[test]
fn a_store_from_before_private_files_is_made_private_on_open() {
    use eywa_storage::{Batch, Keyspace};
    let env = Env::new();
    env.json(&["ingest", "--json"]);
    // As an older eywa left it: readable handoffs and indexes, and no mark of the walk.
    let mut opened = Vec::new();
    let mut stack = vec![env.data_dir()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let want = if path.is_dir() {
                stack.push(path.clone());
                0o755
            } else {
                0o644
            };
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(want)).unwrap();
            opened.push(path);
        }
    }
    assert!(opened.len() > 10, "{opened:?}");
    {
        let store = eywa_storage::Config::new()
            .path(env.data_dir().join("store"))
            .open()
            .unwrap();
        let mut batch = Batch::new();
        batch.delete(Keyspace::Settings, b"private_files".to_vec());
        store.apply(batch).unwrap();
    }
    assert!(!public_entries(&env.data_dir()).is_empty());
    env.json(&["stats", "--json"]);
    let left = public_entries(&env.data_dir());
    assert!(left.is_empty(), "still readable by others: {left:#?}");
}

#[test]
fn symlinks_are_followed_only_inside_the_claude_dir() {
    use crate::support::fixture::session_lines;
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    let projects = env.home.root().join("projects");
    // A transcript-shaped file outside, linked in as a session.
    let secret = "cccccccc-0000-4000-8000-000000000003";
    let lines = session_lines(
        secret,
        "/w/outside",
        days_ago(3),
        &[("read the outside", "ok")],
    );
    std::fs::write(outside.path().join("x.jsonl"), lines.join("\n") + "\n").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("x.jsonl"),
        projects.join("-w-ledger").join(format!("{secret}.jsonl")),
    )
    .unwrap();
    // /etc/passwd named like a transcript.
    std::os::unix::fs::symlink(
        "/etc/passwd",
        projects
            .join("-w-ledger")
            .join("dddddddd-0000-4000-8000-000000000004.jsonl"),
    )
    .unwrap();
    // A whole project folder outside.
    let far = outside.path().join("far-project");
    std::fs::create_dir_all(&far).unwrap();
    let lines = session_lines(
        "eeeeeeee-0000-4000-8000-000000000005",
        "/w/far",
        days_ago(3),
        &[("far away", "ok")],
    );
    std::fs::write(
        far.join("eeeeeeee-0000-4000-8000-000000000005.jsonl"),
        lines.join("\n") + "\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&far, projects.join("-w-far")).unwrap();
    // A link that stays inside: a second name for a session folder's file is followed.
    let inside = "ffffffff-0000-4000-8000-000000000006";
    let lines = session_lines(
        inside,
        "/w/inner",
        days_ago(4),
        &[("inside the home", "ok")],
    );
    let kept = env.home.root().join("kept");
    std::fs::create_dir_all(&kept).unwrap();
    std::fs::write(kept.join("s.jsonl"), lines.join("\n") + "\n").unwrap();
    std::fs::create_dir_all(projects.join("-w-inner")).unwrap();
    std::os::unix::fs::symlink(
        kept.join("s.jsonl"),
        projects.join("-w-inner").join(format!("{inside}.jsonl")),
    )
    .unwrap();

    let report = env.json(&["ingest", "--json"]);
    assert_eq!(report["files_scanned"], 3, "{report}");
    assert_eq!(report["counts"]["sessions"], 3, "{report}");
    let listed = env.json(&["sessions", "list", "--json"]);
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&inside), "{ids:?}");
    assert!(!ids.contains(&secret), "{ids:?}");
    let skipped: Vec<String> = report["skipped_files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["reason"].as_str().unwrap().contains("symlink"))
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(skipped.len(), 3, "{report}");
    assert!(skipped.iter().any(|p| p.ends_with("-w-far")), "{skipped:?}");
}

#[test]
fn ingest_names_the_files_it_read_in_part_with_and_without_a_server() {
    use crate::support::fixture::session_lines;
    let check = |report: &Value, env: &Env| {
        assert_eq!(report["files_skipped"], 1, "{report}");
        let file = &report["skipped_files"][0];
        assert_eq!(file["lines"], 2, "{report}");
        assert!(
            file["path"]
                .as_str()
                .unwrap()
                .ends_with("99999999-0000-4000-8000-000000000009.jsonl"),
            "{report}"
        );
        let reason = file["reason"].as_str().unwrap();
        assert!(reason.starts_with("line 2: not JSON"), "{reason}");
        assert_eq!(report["counts"]["skipped_lines"], 2, "{report}");
        let _ = env;
    };
    let broken = |env: &Env| {
        let id = "99999999-0000-4000-8000-000000000009";
        let mut lines = session_lines(id, "/w/broken", days_ago(1), &[("one", "two")]);
        lines.insert(1, "{not json".into());
        lines.push("[1, 2]".into());
        env.home.write_raw(
            "-w-broken",
            &format!("{id}.jsonl"),
            &(lines.join("\n") + "\n"),
        );
    };

    let env = Env::new();
    broken(&env);
    let report = env.json(&["ingest", "--json"]);
    check(&report, &env);
    let human = env.eywa().arg("ingest").output().unwrap();
    assert!(human.status.success());
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        !text.contains("read in part"),
        "an unchanged file is not read again, so not reported: {text}"
    );

    // The same report through a running server, in words this time.
    let env = Env::new();
    broken(&env);
    let serve = crate::support::serve::Serve::spawn({
        let mut cmd = env.eywa();
        cmd.args([
            "--addr",
            "127.0.0.1:0",
            "serve",
            "--no-ingest",
            "--watch-interval-ms",
            "0",
        ]);
        cmd
    });
    let human = env.eywa().arg("ingest").output().unwrap();
    assert!(human.status.success());
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("read in part or not at all:"), "{text}");
    assert!(
        text.contains("-w-broken/99999999-0000-4000-8000-000000000009.jsonl: 2 lines skipped, first line 2: not JSON"),
        "{text}"
    );
    serve.stop();
}
