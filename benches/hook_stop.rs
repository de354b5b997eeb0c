//! The Stop hook as Claude Code runs it (a fresh `eywa hook stop` process fed the hook's
//! JSON, timed from spawn to exit) on a 100 MB transcript (issue 30):
//!
//! - without a server, the session never read before: the hook reads for at most 8 s and
//!   hands the rest over to a process of its own (how long that one takes is shown too);
//! - without a server, one exchange appended to the session read before;
//! - beside `eywa serve` whose watcher is reading the 100 MB session, the Stop hook of
//!   another, small session: it waits at most 1 s, then the server reads on (how long
//!   until that session is found is shown too).
//!
//! The hook must return within 10 s in every case, and wait at most a second behind the
//! watcher.
//!
//! ```sh
//! cargo bench --bench hook_stop
//! ```

mod fixture;
mod scale;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Bump to write the transcript again.
const TREE_VERSION: u32 = 1;
const BIG: &str = "b16b16b1-0000-4000-8000-00000000b16b";
const SMALL: &str = "5a115a11-0000-4000-8000-000000005a11";

fn stop_input(session: &str, transcript: &Path) -> String {
    serde_json::json!({
        "session_id": session, "transcript_path": transcript.display().to_string(),
        "cwd": "/w/big", "hook_event_name": "Stop", "stop_hook_active": false,
    })
    .to_string()
}

/// A Claude dir holding one 100 MB session (no images: text the reader must go through).
fn big_tree() -> (PathBuf, PathBuf) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!(
        "target/bench-data/claude-stop-100mb-v{TREE_VERSION}"
    ));
    let file = root.join("projects/-w-big").join(format!("{BIG}.jsonl"));
    if root.join(".done").exists() {
        return (root, file);
    }
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
    let mut rng = fixture::Rng::new(30);
    let mut turn = 0;
    let start = eywa::model::Timestamp::now().0 - 86_400_000;
    fixture::session_lines_of(
        &mut out,
        &mut rng,
        BIG,
        "/w/big",
        start,
        &mut turn,
        100 << 20,
        false,
    );
    drop(out);
    std::fs::write(root.join(".done"), b"").unwrap();
    (root, file)
}

/// A copy of the tree in a scratch folder (appends and new sessions change it).
fn scratch_tree(from: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(from.join("projects"))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    dir
}

/// One hook run: how long it took, and the line it logged.
fn hook(data: &Path, claude: &Path, input: &str) -> (Duration, String) {
    let (took, out) = scale::run_with_stdin(data, claude, &["hook", "stop"], input);
    assert_eq!(out, "", "a Stop hook prints nothing");
    let log = std::fs::read_to_string(data.join("logs/hooks.log")).unwrap();
    (took, log.lines().last().unwrap_or_default().to_owned())
}

/// Waits for a process that is not ours to end (a zombie counts as ended).
fn wait_for(pid: u32) {
    loop {
        let running = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit(") ").next().map(|s| !s.starts_with('Z')))
            .unwrap_or(false);
        if !running {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn main() {
    let (tree, _) = big_tree();
    let mb = std::fs::metadata(tree.join(format!("projects/-w-big/{BIG}.jsonl")))
        .unwrap()
        .len() as f64
        / 1e6;

    // Without a server, never read before.
    let claude = scratch_tree(&tree);
    let transcript = claude.path().join(format!("projects/-w-big/{BIG}.jsonl"));
    let data = tempfile::tempdir().unwrap();
    let (took, line) = hook(data.path(), claude.path(), &stop_input(BIG, &transcript));
    let handed = line
        .split("read on in the background (pid ")
        .nth(1)
        .and_then(|rest| rest.trim_end_matches(')').parse::<u32>().ok());
    let after = Instant::now();
    if let Some(pid) = handed {
        wait_for(pid);
    }
    println!(
        "hook_stop/no server/first read of {mb:.0} MB: the hook returned in {took:.2?} ({}); \
         the read was done {:.2?} later",
        line.split(" ms ").nth(1).unwrap_or_default(),
        after.elapsed()
    );

    // Without a server, one exchange appended.
    let mut turn = 1_000_000;
    let mut rng = fixture::Rng::new(31);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&transcript)
        .unwrap();
    fixture::session_lines_of(
        &mut file,
        &mut rng,
        BIG,
        "/w/big",
        eywa::model::Timestamp::now().0,
        &mut turn,
        1,
        false,
    );
    drop(file);
    let (took, line) = hook(data.path(), claude.path(), &stop_input(BIG, &transcript));
    println!(
        "hook_stop/no server/one exchange appended to {mb:.0} MB: {took:.2?} ({})",
        line.split(" ms ").nth(1).unwrap_or_default()
    );

    // Beside a server whose watcher reads the big session: another session's Stop hook.
    let claude = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(claude.path().join("projects/-w-big")).unwrap();
    std::fs::create_dir_all(claude.path().join("projects/-w-small")).unwrap();
    let small = claude
        .path()
        .join(format!("projects/-w-small/{SMALL}.jsonl"));
    let mut out = std::fs::File::create(&small).unwrap();
    let mut turn = 0;
    fixture::session_lines_of(
        &mut out,
        &mut rng,
        SMALL,
        "/w/small",
        eywa::model::Timestamp::now().0,
        &mut turn,
        20_000,
        false,
    );
    drop(out);
    let data = tempfile::tempdir().unwrap();
    let server = scale::Serve::start_with(
        data.path(),
        claude.path(),
        &["--no-ingest", "--watch-interval-ms", "100"],
    );
    // The big session appears; the watcher's next look starts reading it.
    std::fs::copy(
        tree.join(format!("projects/-w-big/{BIG}.jsonl")),
        claude.path().join(format!("projects/-w-big/{BIG}.jsonl")),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let (took, line) = hook(data.path(), claude.path(), &stop_input(SMALL, &small));
    let after = Instant::now();
    // Found once the server read it: the session's own id finds it.
    loop {
        let out = scale::eywa()
            .arg("--data-dir")
            .arg(data.path())
            .arg("--claude-dir")
            .arg(claude.path())
            .args([
                "graph",
                "node",
                &format!("session:{}", &SMALL[..8]),
                "--json",
            ])
            .output()
            .unwrap();
        if out.status.success() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "hook_stop/server reading {mb:.0} MB/another session's Stop: the hook returned in \
         {took:.2?} ({}); that session was read {:.2?} later",
        line.split(" ms ").nth(1).unwrap_or_default(),
        after.elapsed()
    );
    drop(server);
}
