//! The web view in a real browser (Debian's chromium, driven by playwright-core from
//! `tests/browser/web.mjs`) against the real `eywa serve`, with `$HOME` a scratch folder:
//! projects, a session, a tool call and a subagent, ⌘K search, a node and its drawing,
//! a session appearing while serving, no console error or failed request. Screenshots go
//! to `target/web-screenshots/`.

use std::path::Path;

use crate::agents::{PARENT, agent_lines, parent_lines, report, write};
use crate::support::clients::{chromium, playwright};
use crate::support::fixture::{ClaudeHome, days_ago, session_lines};
use crate::support::serve::Serve;

const AGENT: &str = "a1b2c3d4e5f6a7b8c";
const NEW: &str = "a0000000-0000-4000-8000-0000000000ff";

#[test]
fn a_person_browses_what_eywa_knows() {
    let (Some(chromium), Some(playwright)) = (chromium(), playwright()) else {
        return;
    };
    let home = ClaudeHome::new();
    write(
        &home,
        &format!("-w-app/{PARENT}.jsonl"),
        &parent_lines(AGENT, true),
    );
    write(
        &home,
        &format!("-w-app/{PARENT}/subagents/agent-{AGENT}.jsonl"),
        &agent_lines(AGENT, "/w/app", &report()),
    );
    home.session(
        "b0000000-0000-4000-8000-000000000002",
        "/w/blog",
        days_ago(3),
        &[("Write the <b>release</b> post", "Drafted it.")],
    );
    // The session the test writes while the server runs, staged beside the tree.
    let staged = home.root().join("staged.jsonl");
    let lines = session_lines(NEW, "/w/app", days_ago(0), &[("Ship the fix", "Shipped.")]);
    std::fs::write(&staged, lines.join("\n") + "\n").unwrap();
    let target = home.root().join(format!("projects/-w-app/{NEW}.jsonl"));
    // A turn the test appends to the parent's transcript while its page is open.
    let appended = home.root().join("appended.jsonl");
    let more = session_lines(
        PARENT,
        "/w/app",
        days_ago(0),
        &[("One more check", "Checked.")],
    );
    let more: Vec<String> = more
        .into_iter()
        .map(|l| {
            l.replace(&format!("{PARENT}-u0"), "late-u")
                .replace(&format!("{PARENT}-a0"), "late-a")
        })
        .collect();
    std::fs::write(&appended, more.join("\n") + "\n").unwrap();

    let data = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let mut serve = crate::support::eywa_command(data.path(), home.root());
    serve.env("HOME", scratch.path()).args([
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--watch-interval-ms",
        "100",
    ]);
    let server = Serve::spawn(serve);
    let url = server.web_url();

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("node")
        .arg(root.join("tests/browser/web.mjs"))
        .env("EYWA_URL", &url)
        .env("CHROMIUM", &chromium)
        .env("PLAYWRIGHT", &playwright)
        .env("SHOTS", root.join("target/web-screenshots"))
        .env("STAGED", &staged)
        .env("TARGET", &target)
        .env("PARENT", PARENT)
        .env("NEW", NEW)
        .env("PROJECT", "app")
        .env(
            "PARENT_PATH",
            home.root().join(format!("projects/-w-app/{PARENT}.jsonl")),
        )
        .env("APPENDED", &appended)
        .env("APPENDED_UUID", "late-u")
        .env("HOME", scratch.path())
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    println!("{said}");
    server.stop();
    assert!(out.status.success(), "the browser run failed:\n{said}");
}
