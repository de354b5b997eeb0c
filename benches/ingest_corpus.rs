//! Ingesting synthetic `~/.claude` trees into a fresh store, end to end: discovery,
//! parsing, redaction, archiving (sha256 + zstd), graph writes, the text index, handoff
//! files, flush.
//!
//! - `synthetic_500mb`: 260 sessions of ~2 MB, many with base64 images, in process.
//! - `realistic_200mb`: ~700 sessions whose sizes spread around 250 KB (no images);
//!   `small_7000`: 7,000 sessions of ~17 KB; `lme_dev55`: the LongMemEval conversations of
//!   `../shared/eval` (2,603 sessions of ~10 messages in 55 projects) and `lme_x3`, three
//!   copies of it with new uuids; `synth_200mb`: `../shared/bench/synth_claude.py`'s 200 MB
//!   tree. All through the `eywa ingest` binary, as a user runs it: a fresh process and
//!   data directory each time.

mod fixture;
mod scale;

use std::process::Stdio;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eywa::engine::{Engine, EngineConfig};

fn ingest_corpus(c: &mut Criterion) {
    let (root, bytes) = fixture::claude_tree();
    eprintln!(
        "synthetic tree: {} sessions, {:.0} MB",
        fixture::TREE_SESSIONS,
        bytes as f64 / 1e6
    );
    let mut group = c.benchmark_group("ingest_corpus");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("synthetic_500mb", |b| {
        b.iter(|| {
            let engine = Engine::open(EngineConfig::temporary(&root)).unwrap();
            let report = engine.ingest().unwrap();
            assert_eq!(report.counts.sessions, u64::from(fixture::TREE_SESSIONS));
            report
        });
    });
    group.finish();
    println!("ingest_corpus: peak RSS {:.0} MiB", fixture::peak_rss_mib());
}

/// `eywa ingest` of a tree into a fresh data directory: wall time, peak RSS (MiB), CPU
/// time (user + system, s) and the sessions it counted, which must be `sessions` when
/// given. The data directory goes into `kept`, removed when the caller drops it: on ext4
/// without a journal (this machine's disk) each new file is checked against the files
/// deleted in the last minutes, and a run after a removed one paid for it (`small_7000`'s
/// system time grew from 1.8 s to 7.1 s over four runs, each removing the last one's).
fn cli_ingest(
    root: &std::path::Path,
    sessions: Option<u64>,
    kept: &mut Vec<tempfile::TempDir>,
) -> (Duration, f64, f64, u64) {
    let data = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut child = scale::eywa()
        .arg("--data-dir")
        .arg(data.path())
        .arg("--claude-dir")
        .arg(root)
        .args(["ingest", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let report: serde_json::Value = serde_json::from_reader(stdout).unwrap();
    let (status, peak, cpu) = wait_with_usage(&mut child);
    let took = started.elapsed();
    assert!(status.success());
    let counted = report["counts"]["sessions"].as_u64().unwrap();
    if let Some(sessions) = sessions {
        assert_eq!(counted, sessions, "{report}");
    }
    kept.push(data);
    (took, peak, cpu, counted)
}

/// Waits for `child`: its exit status, peak RSS (MiB) and CPU time (s).
fn wait_with_usage(child: &mut std::process::Child) -> (std::process::ExitStatus, f64, f64) {
    use std::os::unix::process::ExitStatusExt;
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a pid we spawned and have not waited for; both out-pointers are valid.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4 failed");
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (
        std::process::ExitStatus::from_raw(status),
        usage.ru_maxrss as f64 / 1024.0,
        seconds(usage.ru_utime) + seconds(usage.ru_stime),
    )
}

/// `python3 ../shared/bench/synth_claude.py OUT 200`'s tree (200 MB of ~284 KB sessions),
/// written once; `None` without `../shared`.
fn synth_tree() -> Option<std::path::PathBuf> {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/synth_claude.py");
    let root = scale::bench_data().join("claude-synth-200");
    if root.join("projects").is_dir() {
        return Some(root);
    }
    if !script.is_file() {
        return None;
    }
    let building = scale::bench_data().join("claude-synth-200.partial");
    let _ = std::fs::remove_dir_all(&building);
    let status = std::process::Command::new("python3")
        .arg(&script)
        .arg(&building)
        .arg("200")
        .status()
        .unwrap();
    assert!(status.success(), "synth_claude.py failed");
    // It writes `<out>/projects/…`.
    std::fs::rename(&building, &root).unwrap();
    Some(root)
}

fn ingest_cli_trees(c: &mut Criterion) {
    // (name, root, bytes, sessions when the fixture knows them)
    let mut trees: Vec<(&str, std::path::PathBuf, u64, Option<u64>)> = Vec::new();
    let (root, bytes, sessions) =
        fixture::claude_tree_shaped("claude-real-700-v1", 700, 250e3, 0.6);
    trees.push(("realistic_200mb", root, bytes, Some(u64::from(sessions))));
    // A session is written a whole turn (~7 KB) past its drawn size: a 10 KB median gives
    // files of ~17 KB on average.
    let (root, bytes, sessions) =
        fixture::claude_tree_shaped("claude-small-7000-v2", 7_000, 10e3, 0.25);
    trees.push(("small_7000", root, bytes, Some(u64::from(sessions))));
    match scale::lme_tree() {
        Some(lme) => {
            let copies = scale::lme_copies(&lme, 3);
            trees.push(("lme_dev55", lme.clone(), scale::dir_bytes(&lme), None));
            trees.push(("lme_x3", copies.clone(), scale::dir_bytes(&copies), None));
        }
        None => eprintln!("lme_dev55, lme_x3: skipped, ../shared/eval is missing"),
    }
    match synth_tree() {
        Some(synth) => trees.push(("synth_200mb", synth.clone(), scale::dir_bytes(&synth), None)),
        None => eprintln!("synth_200mb: skipped, ../shared/bench is missing"),
    }
    let mut group = c.benchmark_group("ingest_cli");
    group.sample_size(10);
    // Every run's data directory, removed once all trees are done (see `cli_ingest`).
    let mut kept = Vec::new();
    for (name, root, bytes, sessions) in &trees {
        eprintln!("{name}: {:.0} MB", *bytes as f64 / 1e6);
        let (mut peak, mut cpu, mut counted) = (0f64, Vec::new(), 0);
        let mut runs: Vec<Duration> = Vec::new();
        group.throughput(Throughput::Bytes(*bytes));
        group.bench_function(*name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let (took, rss, seconds, n) = cli_ingest(root, *sessions, &mut kept);
                    peak = peak.max(rss);
                    counted = n;
                    runs.push(took);
                    cpu.push(seconds / took.as_secs_f64());
                    total += took;
                }
                total
            });
        });
        // A filter on the command line may have left this tree out.
        if runs.is_empty() {
            continue;
        }
        runs.sort();
        cpu.sort_by(f64::total_cmp);
        let median = runs[runs.len() / 2].as_secs_f64();
        println!(
            "ingest_cli/{name}: median {median:.2} s = {:.1} MB/s, {:.0} sessions/s ({counted} sessions); \
             CPU {:.0}% (median); peak RSS {peak:.0} MiB ({} runs)",
            *bytes as f64 / 1e6 / median,
            counted as f64 / median,
            cpu[cpu.len() / 2] * 100.0,
            runs.len()
        );
    }
    group.finish();
}

criterion_group!(benches, ingest_corpus, ingest_cli_trees);
criterion_main!(benches);
