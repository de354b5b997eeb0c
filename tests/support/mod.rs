//! Shared helpers: locating `../shared`, writing Claude Code fixtures, finding grpcurl.

#![allow(dead_code)]

pub mod fixture;
pub mod grpcurl;
pub mod model;
pub mod serve;
pub mod server;

use std::path::PathBuf;

/// True when running under CI (`CI=true`), where missing inputs fail instead of skipping.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A folder of `../shared`, or `None` (with the reason printed) when it is absent outside
/// CI. Under CI a missing folder fails the test.
pub fn shared(relative: &str) -> Option<PathBuf> {
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

/// Runs the `eywa` binary with a data dir and a Claude dir: (succeeded, stdout, stderr).
pub fn eywa_cli(
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
