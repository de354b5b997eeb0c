//! Real agent-side clients: the official MCP Python SDK (PyPI `mcp`, in the virtualenv
//! `.ci/install-tools` makes at `target/tools/venv`) and Claude Code's CLI (npm
//! `@anthropic-ai/claude-code`, at `target/tools/npm`). When missing, `.ci/install-tools`
//! is run once; under CI a tool it cannot provide fails the test, elsewhere the test is
//! skipped with the reason printed.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn tools() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools")
}

fn python_path() -> PathBuf {
    tools().join("venv/bin/python")
}

fn claude_path() -> PathBuf {
    tools().join("npm/node_modules/.bin/claude")
}

fn has_mcp(python: &Path) -> bool {
    std::process::Command::new(python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `.ci/install-tools` at most once per test process.
fn install_once() -> &'static std::io::Result<std::process::ExitStatus> {
    static INSTALLED: OnceLock<std::io::Result<std::process::ExitStatus>> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/install-tools");
        std::process::Command::new("bash").arg(script).status()
    })
}

fn found(what: &str, path: PathBuf, ready: impl Fn(&Path) -> bool) -> Option<PathBuf> {
    if ready(&path) {
        return Some(path);
    }
    let status = install_once();
    if ready(&path) {
        return Some(path);
    }
    let reason = format!(
        "{what} not found at {} and `bash .ci/install-tools` did not provide it ({status:?})",
        path.display()
    );
    assert!(!super::in_ci(), "{reason} (required under CI)");
    eprintln!("skipped: {reason}");
    None
}

/// A Python with the official MCP SDK.
pub(crate) fn mcp_python() -> Option<PathBuf> {
    found("the MCP Python SDK", python_path(), has_mcp)
}

/// Claude Code's `claude`.
pub(crate) fn claude() -> Option<PathBuf> {
    found("Claude Code's CLI", claude_path(), Path::is_file)
}

/// playwright-core's folder, whose `chromium` drives the browser [`chromium`] finds.
pub(crate) fn playwright() -> Option<PathBuf> {
    found(
        "playwright-core",
        tools().join("npm/node_modules/playwright-core"),
        |p| p.join("package.json").is_file(),
    )
}

/// A Chromium to drive: `$EYWA_CHROMIUM`, else `chromium` on the PATH (Debian's).
pub(crate) fn chromium() -> Option<PathBuf> {
    let on_path = || {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("chromium"))
                .find(|p| p.is_file())
        })
    };
    let path = std::env::var_os("EYWA_CHROMIUM")
        .map(PathBuf::from)
        .or_else(on_path)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    found("chromium", path, Path::is_file)
}

/// `tests/mcp/<name>`.
pub(crate) fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp")
        .join(name)
}

/// Runs `claude <args…>` with `home` as its HOME (and working directory), no updater:
/// what it printed, stdout then stderr. It must succeed.
pub(crate) fn run_claude(claude: &Path, home: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(claude)
        .args(args)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env("DISABLE_AUTOUPDATER", "1")
        .current_dir(home)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "claude {args:?}: {text}");
    text
}
