//! Claude Code's hooks as Claude Code runs them: a fresh `eywa hook <event>` process fed
//! the hook's JSON, timed from spawn to exit, without a server and beside a running
//! `eywa serve`. Two stores: 700 sessions shaped like a real `~/.claude` (many small and
//! mid-size sessions over 60 projects), and 100,000 imported Python-Eywa sessions.
//!
//! ```sh
//! cargo bench --bench hook_session_start
//! ```

mod fixture;
mod scale;

use std::path::Path;
use std::time::Duration;

/// Hook runs per case.
const RUNS: usize = 40;

fn session_start(cwd: &str) -> String {
    serde_json::json!({
        "session_id": "bench-new-session", "transcript_path": "/nonexistent/new.jsonl",
        "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup",
        "permission_mode": "default",
    })
    .to_string()
}

fn times(data: &Path, claude: &Path, args: &[&str], stdin: &str) -> Vec<Duration> {
    (0..RUNS)
        .map(|_| {
            let (took, out) = scale::run_with_stdin(data, claude, args, stdin);
            assert!(
                out.contains("additionalContext") || args[1] != "session-start",
                "the hook gave no context: the bench would time nothing: {out}"
            );
            took
        })
        .collect()
}

fn case(label: &str, data: &Path, claude: &Path, cwd: &str, stop: Option<&str>) {
    let stdin = session_start(cwd);
    let args = ["hook", "session-start"];
    println!(
        "hook_session_start/{label}/no server: {}",
        scale::p50_p95(&mut times(data, claude, &args, &stdin))
    );
    let server = scale::Serve::start_with(data, claude, &["--watch-interval-ms", "0"]);
    println!(
        "hook_session_start/{label}/server: {}",
        scale::p50_p95(&mut times(data, claude, &args, &stdin))
    );
    if let Some(transcript) = stop {
        let input = serde_json::json!({
            "session_id": "x", "transcript_path": transcript, "cwd": cwd,
            "hook_event_name": "Stop", "stop_hook_active": false,
        })
        .to_string();
        println!(
            "hook_stop/{label}/server (an unchanged transcript): {}",
            scale::p50_p95(&mut times(data, claude, &["hook", "stop"], &input))
        );
    }
    drop(server);
}

fn main() {
    let (tree, bytes, sessions) =
        fixture::claude_tree_shaped("claude-real-700-v1", 700, 250e3, 0.6);
    println!(
        "hook_session_start: real-shaped tree, {sessions} sessions, {:.0} MB",
        bytes as f64 / 1e6
    );
    let data = scale::ingested_store("store-real-700-v1", &tree);
    // The project with the most sessions, and one of its transcripts.
    let project = std::fs::read_dir(tree.join("projects"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .max_by_key(|p| std::fs::read_dir(p).unwrap().count())
        .unwrap();
    let transcript = std::fs::read_dir(&project)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let name = project.file_name().unwrap().to_string_lossy().into_owned();
    let cwd = format!("/home/dev/{}", name.trim_start_matches("-home-dev-"));
    case("real-700", &data, &tree, &cwd, transcript.to_str());
    let imported = scale::imported_store(100_000);
    case(
        "imported-100k",
        &imported.data_dir,
        &scale::empty_claude_dir(),
        "/home/dev/project-12",
        None,
    );
}
