//! Shared helpers: locating `../shared`, writing Claude Code fixtures, finding grpcurl.

#![allow(dead_code)]

pub(crate) mod clients;
pub(crate) mod fixture;
pub(crate) mod fuzz;
pub(crate) mod grpcurl;
pub(crate) mod http;
pub(crate) mod model;
pub(crate) mod raw;
pub(crate) mod serve;
pub(crate) mod server;
pub(crate) mod stdio_mcp;

use std::path::PathBuf;

/// True when running under CI (`CI=true`), where missing inputs fail instead of skipping.
pub(crate) fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A folder of `../shared`, or `None` (with the reason printed) when it is absent outside
/// CI. Under CI a missing folder fails the test.
pub(crate) fn shared(relative: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared")
        .join(relative);
    if path.exists() {
        return Some(path);
    }
    let reason = format!("{} is missing", path.display());
    assert!(!in_ci(), "{reason} (required under CI)");
    eprintln!("skipped: {reason}");
    None
}

/// Gives a command the environment of an `eywa` on this data dir and Claude dir, and
/// nothing of the caller's that would change its answers: no server address, log filter,
/// model folder or hook budget of its own; `serve` never fetches the embedding model
/// (tests that want it say so).
pub(crate) fn eywa_env(
    cmd: &mut std::process::Command,
    data_dir: &std::path::Path,
    claude_dir: &std::path::Path,
) {
    cmd.env("EYWA_DATA_DIR", data_dir)
        .env("EYWA_CLAUDE_DIR", claude_dir)
        .env_remove("EYWA_ADDR")
        .env_remove("EYWA_LOG")
        .env_remove("EYWA_MODEL_DIR")
        .env_remove("EYWA_HOOK_MAX_TOKENS")
        .env("EYWA_MODEL_INSTALL", "never")
        .env("HF_HUB_OFFLINE", "1");
}

/// The `eywa` binary on this data dir and Claude dir (see [`eywa_env`]).
pub(crate) fn eywa_command(
    data_dir: &std::path::Path,
    claude_dir: &std::path::Path,
) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_eywa"));
    eywa_env(&mut cmd, data_dir, claude_dir);
    cmd
}

/// Runs a command that must succeed (its stderr is the failure message): its output.
pub(crate) fn succeed(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs the `eywa` binary with a data dir and a Claude dir: (succeeded, stdout, stderr).
pub(crate) fn eywa_cli(
    data_dir: &std::path::Path,
    claude_dir: &std::path::Path,
    args: &[&str],
) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_eywa"))
        .env("EYWA_DATA_DIR", data_dir)
        .env("EYWA_CLAUDE_DIR", claude_dir)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Copies the tree `from` to `to`, each file writable and with its mtime (ingest orders
/// files by them).
pub(crate) fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            // A read-only source (the shared corpus may be) gives a copy tests can write.
            let mut perms = std::fs::metadata(&target).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&target, perms).unwrap();
            // Keep mtimes: ingest orders files by them.
            let modified = entry.metadata().unwrap().modified().unwrap();
            std::fs::File::options()
                .write(true)
                .open(&target)
                .unwrap()
                .set_modified(modified)
                .unwrap();
        }
    }
}

/// A Claude home whose `projects/` is a copy of `real_projects` (the shared corpus stays
/// untouched, and eywa does not follow a symlink out of the Claude dir).
pub(crate) fn corpus_home(real_projects: &std::path::Path) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    copy_tree(real_projects, &home.path().join("projects"));
    home
}

/// What an episode says, without the times eywa recorded it at: to compare an episode
/// read in steps with one read whole.
pub(crate) fn episode_summary(node: &eywa::model::Node) -> String {
    let e = node.episode().unwrap();
    format!(
        "{} {} {} {} {} {} {:?} {:?} {}",
        e.title,
        e.prompts,
        e.tool_calls,
        e.user_messages,
        e.assistant_messages,
        e.start.0,
        e.end,
        e.tokens,
        e.active_minutes
    )
}
