//! Ingesting synthetic `~/.claude` trees into a fresh store, end to end: discovery,
//! parsing, redaction, archiving (sha256 + zstd), graph writes, the text index, handoff
//! files, flush.
//!
//! - `synthetic_500mb`: 260 sessions of ~2 MB, many with base64 images, in process.
//! - `realistic_200mb`: ~700 sessions whose sizes spread around 250 KB (no images), and
//!   `small_7000`: 7,000 sessions of ~17 KB. Both through the `eywa ingest` binary, as a
//!   user runs it: a fresh process and data directory each time.

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

/// `eywa ingest` of a tree into a fresh data directory: wall time and peak RSS.
fn cli_ingest(root: &std::path::Path, sessions: u32) -> (Duration, f64) {
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
    let (status, peak) = scale::wait_with_peak_rss(&mut child);
    let took = started.elapsed();
    assert!(status.success());
    assert_eq!(report["counts"]["sessions"], sessions, "{report}");
    (took, peak)
}

fn ingest_cli_trees(c: &mut Criterion) {
    let trees = [
        (
            "realistic_200mb",
            fixture::claude_tree_shaped("claude-real-700-v1", 700, 250e3, 0.6),
        ),
        (
            "small_7000",
            // A session is written a whole turn (~7 KB) past its drawn size: a 10 KB median
            // gives files of ~17 KB on average.
            fixture::claude_tree_shaped("claude-small-7000-v2", 7_000, 10e3, 0.25),
        ),
    ];
    let mut group = c.benchmark_group("ingest_cli");
    group.sample_size(10);
    for (name, (root, bytes, sessions)) in &trees {
        eprintln!("{name}: {sessions} sessions, {:.0} MB", *bytes as f64 / 1e6);
        let mut peak = 0f64;
        let mut runs: Vec<Duration> = Vec::new();
        group.throughput(Throughput::Bytes(*bytes));
        group.bench_function(*name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let (took, rss) = cli_ingest(root, *sessions);
                    peak = peak.max(rss);
                    runs.push(took);
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
        let median = runs[runs.len() / 2].as_secs_f64();
        println!(
            "ingest_cli/{name}: median {median:.2} s = {:.1} MB/s, {:.0} sessions/s; peak RSS {peak:.0} MiB ({} runs)",
            *bytes as f64 / 1e6 / median,
            f64::from(*sessions) / median,
            runs.len()
        );
    }
    group.finish();
}

criterion_group!(benches, ingest_corpus, ingest_cli_trees);
criterion_main!(benches);
