//! A full disk never leaves a store eywa cannot open (issue 14): the data dir on a small
//! tmpfs is filled during an ingest and during an open, then moved to a larger disk,
//! where it opens and a re-ingest converges to a clean run's counts and backlog.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::fixture::{ClaudeHome, days_ago};

/// A tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None`, with the reason printed, where mounting is not allowed (not root, no
    /// CAP_SYS_ADMIN): CI runs as root.
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match out {
            Ok(out) if out.status.success() => Some(Tmpfs { dir }),
            Ok(out) => {
                eprintln!(
                    "skipped: cannot mount a tmpfs here: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("skipped: cannot run mount: {e}");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Words that zstd cannot shrink much: a session's text fills the disk as it would.
fn prose(seed: u64, words: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ten", "var", "os", "qui", "dra", "pel", "sun", "ix", "bo", "ner", "tha",
        "gu", "fe",
    ];
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = String::with_capacity(words * 8);
    for _ in 0..words {
        for _ in 0..3 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            out.push_str(SYLLABLES[(x >> 60) as usize]);
        }
        out.push(' ');
    }
    out
}

fn home() -> ClaudeHome {
    let home = ClaudeHome::new();
    for i in 0..40u64 {
        let a = prose(i * 2, 6_000);
        let b = prose(i * 2 + 1, 6_000);
        home.session(
            &format!("d15cf011-0000-4000-8000-{i:012}"),
            &format!("/w/project-{}", i % 4),
            days_ago(i as i64 + 1),
            &[
                (a.as_str(), b.as_str()),
                ("thanks, and the tests?", "All green."),
            ],
        );
    }
    home
}

fn eywa(data: &Path, claude: &Path, min_free_mb: u64, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_eywa"))
        .env("EYWA_DATA_DIR", data)
        .env("EYWA_CLAUDE_DIR", claude)
        .env("EYWA_MIN_FREE_MB", min_free_mb.to_string())
        .env("EYWA_MODEL_INSTALL", "never")
        .env_remove("EYWA_ADDR")
        .env_remove("EYWA_LOG")
        .args(args)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Failed as a command fails, not as a panic.
fn failed_cleanly(out: &Output, what: &str) {
    assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(out));
    assert!(
        !stderr(out).contains("panicked at"),
        "{what}: {}",
        stderr(out)
    );
}

/// Counts and backlog of a store, as `eywa stats --json` gives them.
fn state(data: &Path, claude: &Path) -> (Value, Value, Value, Value) {
    let out = eywa(data, claude, 0, &["stats", "--json"]);
    assert!(out.status.success(), "stats: {}", stderr(&out));
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        stats["counts"].clone(),
        stats["nodes_by_kind"].clone(),
        stats["edges_by_relation"].clone(),
        stats["semantic"]["backlog"].clone(),
    )
}

fn copy_tree(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_full_disk_leaves_a_store_that_opens_elsewhere_and_converges() {
    let Some(small) = Tmpfs::mount("2m") else {
        return;
    };
    let home = home();
    let data = small.path().join("eywa");

    // Below the floor, an ingest is refused before it writes, naming the path and the room.
    let out = eywa(&data, home.root(), 64, &["ingest"]);
    failed_cleanly(&out, "ingest below the floor");
    let said = stderr(&out);
    assert!(
        said.contains(&data.join("store").display().to_string()),
        "{said}"
    );
    assert!(said.contains("64.0 MiB"), "{said}");

    // With no floor, the ingest fills the disk: it fails as a full disk, never as files
    // it could not read.
    let out = eywa(&data, home.root(), 0, &["ingest"]);
    failed_cleanly(&out, "ingest on a disk that fills");
    let said = stderr(&out);
    assert!(
        ["is full", "No space left", "index writer was killed"]
            .iter()
            .any(|s| said.contains(s)),
        "{said}"
    );
    assert!(!said.contains("cannot read transcript"), "{said}");

    // Opening while the disk is full: sled writes a snapshot as it opens, which cannot
    // land. It fails, or it works; either way the store survives.
    let out = eywa(&data, home.root(), 0, &["stats", "--json"]);
    assert_ne!(out.status.code(), Some(101), "{}", stderr(&out));

    // Moved to a larger disk, the store opens and a re-ingest converges.
    let big = tempfile::tempdir().unwrap();
    let moved: PathBuf = big.path().join("eywa");
    copy_tree(&data, &moved);
    drop(small);
    let out = eywa(&moved, home.root(), 64, &["ingest", "--json"]);
    assert!(out.status.success(), "re-ingest: {}", stderr(&out));
    let clean = big.path().join("clean");
    let out = eywa(&clean, home.root(), 64, &["ingest", "--json"]);
    assert!(out.status.success(), "clean: {}", stderr(&out));
    let expected = state(&clean, home.root());
    assert_eq!(expected.0["sessions"], 40);
    assert_eq!(state(&moved, home.root()), expected);
}

/// The same for `eywa embed`: the disk fills while vectors are written and the index
/// saved; moved to a larger disk, embedding what is left gives a clean run's vectors and
/// an empty backlog.
#[test]
fn a_disk_that_fills_while_embedding_leaves_a_store_that_converges() {
    let Some(model) = crate::support::model::model_dir() else {
        return;
    };
    let Some(small) = Tmpfs::mount("6m") else {
        return;
    };
    let home = ClaudeHome::new();
    for i in 0..12u64 {
        let prompt = prose(i, 400);
        home.session(
            &format!("e3bedf11-0000-4000-8000-{i:012}"),
            "/w/embed",
            days_ago(i as i64 + 1),
            &[
                (prompt.as_str(), "Noted."),
                ("and the export?", "It streams now."),
            ],
        );
    }
    // The model lives off the small disk, installed once and linked in.
    let models = tempfile::tempdir().unwrap();
    let installed = Command::new(env!("CARGO_BIN_EXE_eywa"))
        .args(["model", "install", "--offline", "--from"])
        .arg(model.path())
        .env("EYWA_DATA_DIR", models.path())
        .output()
        .unwrap();
    assert!(installed.status.success(), "{}", stderr(&installed));
    let link = |data: &Path| {
        std::fs::create_dir_all(data).unwrap();
        std::os::unix::fs::symlink(models.path().join("models"), data.join("models")).unwrap();
    };
    let data = small.path().join("eywa");
    link(&data);
    let out = eywa(&data, home.root(), 0, &["ingest"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Fill what is left, bar a few KiB.
    let free = eywa_storage::free_bytes(small.path()).unwrap();
    let filler = small.path().join("filler");
    std::fs::write(&filler, vec![0u8; free.saturating_sub(16 * 1024) as usize]).unwrap();
    let out = eywa(&data, home.root(), 0, &["embed"]);
    failed_cleanly(&out, "embed on a full disk");

    let big = tempfile::tempdir().unwrap();
    let moved = big.path().join("eywa");
    std::fs::remove_file(data.join("models")).unwrap();
    copy_tree(&data, &moved);
    drop(small);
    link(&moved);
    for args in [&["ingest"][..], &["embed"]] {
        let out = eywa(&moved, home.root(), 64, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    let clean = big.path().join("clean");
    link(&clean);
    for args in [&["ingest"][..], &["embed"]] {
        let out = eywa(&clean, home.root(), 64, args);
        assert!(out.status.success(), "clean {args:?}: {}", stderr(&out));
    }
    let vectors = |data: &Path| {
        let out = eywa(data, home.root(), 64, &["stats", "--json"]);
        let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            stats["semantic"]["vectors"].clone(),
            stats["semantic"]["backlog"].clone(),
        )
    };
    let expected = vectors(&clean);
    assert!(expected.0.as_u64().unwrap() > 20, "{expected:?}");
    assert_eq!(expected.1, 0);
    assert_eq!(vectors(&moved), expected);
    assert_eq!(state(&moved, home.root()), state(&clean, home.root()));
}
