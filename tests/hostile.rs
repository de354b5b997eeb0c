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
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_eywa"));
        cmd.env("EYWA_DATA_DIR", self.data_dir())
            .env("EYWA_CLAUDE_DIR", self.home.root())
            .env_remove("EYWA_ADDR")
            .env_remove("EYWA_LOG")
            .env_remove("EYWA_MODEL_DIR")
            .env("EYWA_MODEL_INSTALL", "never")
            .env("HF_HUB_OFFLINE", "1");
        cmd
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
fn a_tilde_starts_a_path_only_at_its_start() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    // Quoted, as a shell leaves it: `--data-dir='~/store'`.
    let out = env
        .eywa()
        .env("HOME", home.path())
        .env_remove("EYWA_DATA_DIR")
        .args(["--data-dir", "~/store", "ingest", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(home.path().join("store").is_dir(), "~/store under HOME");

    // The environment too, and the Claude dir.
    let link = home.path().join("claude");
    std::os::unix::fs::symlink(env.home.root(), &link).unwrap();
    let report = {
        let out = env
            .eywa()
            .env("HOME", home.path())
            .env("EYWA_DATA_DIR", "~/env-store")
            .env("EYWA_CLAUDE_DIR", "~/claude")
            .args(["ingest", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    assert_eq!(report["files_read"], 2, "{report}");
    assert!(home.path().join("env-store").is_dir());

    // Elsewhere it is a plain character: a relative path under the working directory.
    let cwd = tempfile::tempdir().unwrap();
    let out = env
        .eywa()
        .env("HOME", home.path())
        .current_dir(cwd.path())
        .args(["--data-dir", "a/~/b", "stats", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
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
