//! `eywa check [--repair]`, `eywa backup` and `eywa restore` (issue 14), run as a person
//! would: a damaged store is found out and repaired, a backup taken while `serve` runs
//! restores to the same sessions.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::fixture::{ClaudeHome, days_ago};
use crate::support::serve::Serve;

/// Text zstd cannot shrink much, so that a transcript's archive is a blob file.
fn prose(seed: u64, words: usize) -> String {
    let mut x = seed;
    (0..words)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            format!("w{:x}", x >> 40)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn home() -> ClaudeHome {
    let home = ClaudeHome::new();
    for i in 0..4u64 {
        let long = prose(i, 8_000);
        home.session(
            &format!("c4ec0000-0000-4000-8000-{i:012}"),
            &format!("/w/p{}", i % 2),
            days_ago(i as i64 + 1),
            &[(long.as_str(), "Read it."), ("and now?", "Done.")],
        );
    }
    home
}

fn eywa(home: &ClaudeHome, data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_eywa"))
        .env("EYWA_DATA_DIR", data)
        .env("EYWA_CLAUDE_DIR", home.root())
        .env("EYWA_MODEL_INSTALL", "never")
        .env_remove("EYWA_ADDR")
        .env_remove("EYWA_LOG")
        .args(args)
        .output()
        .unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}): {} / {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn sessions(home: &ClaudeHome, data: &Path) -> Value {
    let out = eywa(home, data, &["sessions", "list", "--json"]);
    assert!(out.status.success());
    let mut ids: Vec<Value> = json(&out)["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].clone())
        .collect();
    ids.sort_by_key(std::string::ToString::to_string);
    Value::Array(ids)
}

#[test]
fn check_finds_damage_and_repair_fixes_it() {
    use eywa_storage::{Batch, Keyspace};
    let home = home();
    let data_dir = tempfile::tempdir().unwrap();
    let data = data_dir.path().join("eywa");
    assert!(eywa(&home, &data, &["ingest"]).status.success());
    let clean = eywa(&home, &data, &["check", "--json"]);
    assert!(
        clean.status.success(),
        "{}",
        String::from_utf8_lossy(&clean.stdout)
    );
    assert_eq!(json(&clean)["problems"], 0);
    assert_eq!(json(&clean)["blobs_checked"], 4);
    let before = sessions(&home, &data);

    // Damage: an adjacency entry lost, a name entry without its node, one archived
    // transcript's blob file overwritten.
    let damaged_blob = {
        let store = eywa_storage::Config::new()
            .path(data.join("store"))
            .open()
            .unwrap();
        let mut batch = Batch::new();
        let lost = store
            .keys(Keyspace::EdgesBySrc, &[])
            .next()
            .unwrap()
            .unwrap();
        batch.delete(Keyspace::EdgesBySrc, lost);
        batch.put_raw(Keyspace::NodesByName, b"\x10stray".to_vec(), Vec::new());
        store.apply(batch).unwrap();
        let hash = store
            .scan::<eywa::graph::SourceRecord>(Keyspace::Sources, &[])
            .map(|e| e.unwrap().1)
            .find_map(|s| s.archive)
            .unwrap();
        let file = data
            .join("store/cold")
            .join(&hash[..2])
            .join(format!("{}.zst", &hash[2..]));
        assert!(
            file.is_file(),
            "a transcript this size is archived as a file"
        );
        std::fs::write(&file, b"not what was archived").unwrap();
        hash
    };
    let found = eywa(&home, &data, &["check", "--json"]);
    assert_eq!(found.status.code(), Some(1));
    let report = json(&found);
    assert!(report["graph"].as_array().unwrap().len() >= 2, "{report}");
    let archive = report["archive"].as_array().unwrap();
    assert_eq!(archive.len(), 1, "{report}");
    assert!(
        archive[0].as_str().unwrap().contains(&damaged_blob),
        "{report}"
    );

    // Repaired: indexes rebuilt, the transcript read again by the next ingest.
    let repaired = eywa(&home, &data, &["check", "--repair", "--json"]);
    assert!(
        repaired.status.success(),
        "{}",
        String::from_utf8_lossy(&repaired.stdout)
    );
    assert_eq!(json(&repaired)["unrepaired"], 0);
    let ingest = eywa(&home, &data, &["ingest", "--json"]);
    assert_eq!(
        json(&ingest)["files_read"],
        1,
        "the damaged session is read again"
    );
    let after = eywa(&home, &data, &["check", "--json"]);
    assert!(
        after.status.success(),
        "{}",
        String::from_utf8_lossy(&after.stdout)
    );
    assert_eq!(json(&after)["problems"], 0);
    assert_eq!(sessions(&home, &data), before);
}

#[test]
fn a_backup_taken_while_serving_restores_the_same_store() {
    let home = home();
    let data_dir = tempfile::tempdir().unwrap();
    let data = data_dir.path().join("eywa");
    assert!(eywa(&home, &data, &["ingest"]).status.success());
    let before = sessions(&home, &data);
    let backup = data_dir.path().join("backup");

    let serve = Serve::spawn({
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_eywa"));
        cmd.env("EYWA_DATA_DIR", &data)
            .env("EYWA_CLAUDE_DIR", home.root())
            .env("EYWA_MODEL_INSTALL", "never")
            .env_remove("EYWA_LOG")
            .args(["--addr", "127.0.0.1:0", "serve", "--no-ingest"]);
        cmd
    });
    let out = eywa(
        &home,
        &data,
        &["backup", backup.to_str().unwrap(), "--json"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json(&out)["manifest"]["sessions"], 4);
    // A second backup into the same folder is refused: nothing is overwritten.
    let again = eywa(&home, &data, &["backup", backup.to_str().unwrap()]);
    assert!(!again.status.success());
    // Beside the server: check works, a repair and a restore are refused.
    assert!(eywa(&home, &data, &["check"]).status.success());
    let repair = eywa(&home, &data, &["check", "--repair"]);
    assert!(String::from_utf8_lossy(&repair.stderr).contains("stop the server"));
    let restore = eywa(&home, &data, &["restore", backup.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&restore.stderr).contains("stop it before restoring"));
    serve.stop();

    // Into a new data dir, and over the old one (which is moved aside, not lost).
    let other = data_dir.path().join("other");
    let out = eywa(
        &home,
        &other,
        &["restore", backup.to_str().unwrap(), "--json"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json(&out)["previous_store"], Value::Null);
    assert_eq!(sessions(&home, &other), before);
    assert!(eywa(&home, &other, &["check"]).status.success());
    let out = eywa(
        &home,
        &data,
        &["restore", backup.to_str().unwrap(), "--json"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let aside = json(&out)["previous_store"].as_str().unwrap().to_owned();
    assert!(Path::new(&aside).join("store").is_dir());
    assert_eq!(sessions(&home, &data), before);
    // Restored, the store goes on: an ingest finds nothing new.
    assert_eq!(
        json(&eywa(&home, &data, &["ingest", "--json"]))["files_read"],
        0
    );
}
