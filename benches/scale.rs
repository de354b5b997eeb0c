//! Stores at the scale of a heavy user, built the way a user builds them: a Python Eywa
//! folder written by `../shared/bench/handoff_index.py` (the shape the Python Eywa was
//! timed on), brought in with `eywa import`, then served by a real `eywa serve`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The queries the Python Eywa was timed with (`handoff_index.py`), and the empty query
/// (the most-recent fallback). Benches append a token never seen before to each.
pub(crate) const QUERIES: [&str; 6] = [
    "project-12 kw3 kw77",
    "kw1 kw2",
    "refactor project-400 kw999",
    "kw5000 kw12",
    "project-7",
    "",
];

/// Sizes to run: `EYWA_BENCH_SIZES` (comma-separated), else 1k, 10k and 100k.
pub(crate) fn sizes() -> Vec<usize> {
    match std::env::var("EYWA_BENCH_SIZES") {
        Ok(list) => list
            .split(',')
            .map(|s| s.trim().parse().expect("EYWA_BENCH_SIZES: numbers"))
            .collect(),
        Err(_) => vec![1_000, 10_000, 100_000],
    }
}

pub(crate) fn eywa() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_eywa"));
    cmd.env_remove("EYWA_ADDR")
        .env_remove("EYWA_LOG")
        .env("EYWA_MODEL_INSTALL", "never")
        .env("HF_HUB_OFFLINE", "1");
    cmd
}

pub(crate) fn bench_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data")
}

/// The Python Eywa folder of `n` sessions, written once.
pub(crate) fn eywa_folder(n: usize) -> PathBuf {
    let dir = bench_data().join(format!("eywa-folder-{n}"));
    if dir.join("handoff-index.json").is_file() {
        return dir;
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/handoff_index.py");
    assert!(
        script.is_file(),
        "{} is missing: the scale benches build their stores from it",
        script.display()
    );
    let status = Command::new("python3")
        .arg(&script)
        .arg(n.to_string())
        .arg(&dir)
        .status()
        .expect("python3 runs");
    assert!(status.success(), "{} failed", script.display());
    dir
}

/// The 55 LongMemEval questions' conversations as Claude Code sessions
/// (`../shared/eval/lme-dev55.tar.xz`: 55 projects of ~47 sessions of ~10 messages),
/// unpacked once; `None` without `../shared`.
pub(crate) fn lme_tree() -> Option<std::path::PathBuf> {
    let archive =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/eval/lme-dev55.tar.xz");
    let root = bench_data().join("claude-lme-dev55");
    if root.join("projects").is_dir() {
        return Some(root);
    }
    if !archive.is_file() {
        return None;
    }
    let unpacked = bench_data().join("lme-dev55-unpacked");
    let _ = std::fs::remove_dir_all(&unpacked);
    std::fs::create_dir_all(&unpacked).unwrap();
    let status = std::process::Command::new("tar")
        .arg("-xJf")
        .arg(&archive)
        .arg("-C")
        .arg(&unpacked)
        .status()
        .unwrap();
    assert!(status.success(), "cannot unpack {}", archive.display());
    std::fs::create_dir_all(&root).unwrap();
    std::fs::rename(unpacked.join("dev55/projects"), root.join("projects")).unwrap();
    let _ = std::fs::remove_dir_all(&unpacked);
    Some(root)
}

/// `copies` of the LongMemEval tree side by side, every uuid (session and message) made
/// new in each copy: a tree of the same shape, `copies` times the sessions.
pub(crate) fn lme_copies(lme: &std::path::Path, copies: u32) -> std::path::PathBuf {
    let root = bench_data().join(format!("claude-lme-x{copies}"));
    if root.join("projects").is_dir() {
        return root;
    }
    let uuid =
        regex::Regex::new("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    let building = bench_data().join(format!("claude-lme-x{copies}.partial"));
    let _ = std::fs::remove_dir_all(&building);
    for copy in 0..copies {
        let renamed = |text: &str| {
            uuid.replace_all(text, |m: &regex::Captures| {
                let name = format!("{copy}:{}", &m[0]);
                uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, name.as_bytes()).to_string()
            })
            .into_owned()
        };
        for project in std::fs::read_dir(lme.join("projects")).unwrap() {
            let project = project.unwrap().path();
            let name = project.file_name().unwrap().to_string_lossy().into_owned();
            let into = building.join("projects").join(format!("{name}-{copy}"));
            std::fs::create_dir_all(&into).unwrap();
            for file in std::fs::read_dir(&project).unwrap() {
                let file = file.unwrap().path();
                if !file.is_file() {
                    continue;
                }
                let text = std::fs::read_to_string(&file).unwrap();
                let file_name = file.file_name().unwrap().to_string_lossy().into_owned();
                std::fs::write(into.join(renamed(&file_name)), renamed(&text)).unwrap();
            }
        }
    }
    std::fs::rename(&building, &root).unwrap();
    root
}

/// An empty Claude Code home, so `serve` has nothing to ingest but still watches.
pub(crate) fn empty_claude_dir() -> PathBuf {
    let dir = bench_data().join("claude-empty");
    std::fs::create_dir_all(dir.join("projects")).unwrap();
    dir
}

/// What `eywa import` of `n` sessions took.
pub(crate) struct Imported {
    pub data_dir: PathBuf,
    pub seconds: f64,
    pub peak_rss_mib: f64,
}

/// A store holding the import of `n` sessions; imported now when `fresh` or missing.
pub(crate) fn import(n: usize, fresh: bool) -> Imported {
    let folder = eywa_folder(n);
    let data_dir = bench_data().join(format!("eywa-import-{n}"));
    let done = data_dir.join("imported");
    if !fresh && done.is_file() {
        return Imported {
            data_dir,
            seconds: f64::NAN,
            peak_rss_mib: f64::NAN,
        };
    }
    let _ = std::fs::remove_dir_all(&data_dir);
    let started = Instant::now();
    let mut child = eywa()
        .arg("--data-dir")
        .arg(&data_dir)
        .arg("--claude-dir")
        .arg(empty_claude_dir())
        .args(["import", "--json"])
        .arg(&folder)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let (status, peak) = wait_with_peak_rss(&mut child);
    let seconds = started.elapsed().as_secs_f64();
    assert!(status.success(), "eywa import failed");
    std::fs::write(&done, b"").unwrap();
    Imported {
        data_dir,
        seconds,
        peak_rss_mib: peak,
    }
}

/// The store of `n` imported sessions (imported once, then reused).
pub(crate) fn imported_store(n: usize) -> Imported {
    import(n, false)
}

/// Waits for a child; its exit status and peak RSS in MiB (from the kernel's accounting).
pub(crate) fn wait_with_peak_rss(child: &mut Child) -> (std::process::ExitStatus, f64) {
    use std::os::unix::process::ExitStatusExt;
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a pid we spawned and have not waited for; both out-pointers are valid.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4 failed");
    (
        std::process::ExitStatus::from_raw(status),
        usage.ru_maxrss as f64 / 1024.0,
    )
}

/// Bytes of everything under `dir`.
pub(crate) fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                total += meta.len();
            }
        }
    }
    total
}

/// A running `eywa serve` on a free loopback port; stopped (SIGINT, then waited) on drop.
pub(crate) struct Serve {
    pub addr: String,
    child: Child,
}

impl Serve {
    pub(crate) fn start(data_dir: &Path) -> Serve {
        Serve::start_with(data_dir, &empty_claude_dir(), &[])
    }

    /// A server reading `claude`, with more `serve` flags.
    pub(crate) fn start_with(data_dir: &Path, claude: &Path, flags: &[&str]) -> Serve {
        let mut child = eywa()
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--claude-dir")
            .arg(claude)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("eywa: serving gRPC on ")
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(addr.trim().to_owned());
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(600))
            .expect("serve reports its address");
        Serve { addr, child }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's resident memory now, in MiB.
    pub(crate) fn rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let _ = self.child.wait();
    }
}

/// A store ingested from `claude` (a tree of `fixture::claude_tree_shaped`), once, into
/// `target/bench-data/<name>`: the data dir.
pub(crate) fn ingested_store(name: &str, claude: &Path) -> PathBuf {
    let data_dir = bench_data().join(name);
    let done = data_dir.join("ingested");
    if done.is_file() {
        return data_dir;
    }
    let _ = std::fs::remove_dir_all(&data_dir);
    let status = eywa()
        .arg("--data-dir")
        .arg(&data_dir)
        .arg("--claude-dir")
        .arg(claude)
        .arg("ingest")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "eywa ingest failed");
    std::fs::write(&done, b"").unwrap();
    data_dir
}

/// Runs `eywa <args…>` on a store with `stdin`, as a fresh process: its wall time and
/// stdout. It must succeed.
pub(crate) fn run_with_stdin(
    data_dir: &Path,
    claude: &Path,
    args: &[&str],
    stdin: &str,
) -> (Duration, String) {
    use std::io::Write;
    let started = Instant::now();
    let mut child = eywa()
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--claude-dir")
        .arg(claude)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let took = started.elapsed();
    assert!(out.status.success(), "eywa {args:?} failed");
    (took, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `p50 p95` of durations, in milliseconds.
pub(crate) fn p50_p95(times: &mut [Duration]) -> String {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    format!(
        "p50 {:.1} ms, p95 {:.1} ms (n={})",
        at(0.5).as_secs_f64() * 1e3,
        at(0.95).as_secs_f64() * 1e3,
        times.len()
    )
}
