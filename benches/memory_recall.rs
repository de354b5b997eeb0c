//! Recall over N memories, in process and as a gRPC client sees it through a real
//! `eywa serve` on the same store. The memories are what agents keep: 8 to 25 words of a
//! skewed vocabulary, in 40 projects, a mix of STM, LTM and PROCEDURAL, with tags; they
//! are written with `Engine::remember_all`, 10,000 to a run. No embedding
//! model: recall is by words (BM25 over the memories, × decayed weight), so the figures
//! leave out the model's query embedding (see `embed_throughput`).
//!
//! ```sh
//! cargo bench --bench memory_recall                  # 10k and 100k memories
//! EYWA_BENCH_SIZES=100000 cargo bench --bench memory_recall
//! ```

mod fixture;
mod scale;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use eywa::api::RemoteClient;
use eywa::engine::{Engine, EngineConfig};
use eywa::memory::{NewMemory, RecallQuery};
use eywa::model::MemoryType;

/// Recalls timed per size, after a warm-up of 200.
const RECALLS: usize = 2_000;
/// Words the memories and queries are made of.
const VOCABULARY: u64 = 20_000;
/// Bump to rebuild the stores.
const STORE_VERSION: u32 = 1;

fn main() {
    let sizes = match std::env::var("EYWA_BENCH_SIZES") {
        Ok(_) => scale::sizes(),
        Err(_) => vec![10_000, 100_000],
    };
    for n in sizes {
        let dir = store(n);
        let queries = queries(RECALLS + 200);
        {
            let engine = open(&dir);
            let mut times = Vec::with_capacity(RECALLS);
            let mut found = 0;
            for (i, q) in queries.iter().enumerate() {
                let started = Instant::now();
                let hits = engine.recall(q).unwrap();
                if i >= 200 {
                    times.push(started.elapsed());
                    found += hits.len();
                }
            }
            report(&format!("memory_recall/{n}/in-process"), &mut times, found);
        }
        let server = scale::Serve::start(&dir);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (mut times, found) = runtime.block_on(async {
            let mut client = RemoteClient::connect(&server.addr).await.unwrap();
            let mut times = Vec::with_capacity(RECALLS);
            let mut found = 0;
            for (i, q) in queries.iter().enumerate() {
                let started = Instant::now();
                let hits = client.recall(q).await.unwrap();
                if i >= 200 {
                    times.push(started.elapsed());
                    found += hits.len();
                }
            }
            (times, found)
        });
        let rss = server.rss_mib();
        drop(runtime);
        drop(server);
        report(&format!("memory_recall/{n}/served"), &mut times, found);
        println!("    server RSS {rss:.0} MiB");
    }
}

fn report(label: &str, times: &mut [Duration], found: usize) {
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "{label}: n={} p50={:.3?} p95={:.3?} p99={:.3?} max={:.3?} (hits per recall {:.1})",
        times.len(),
        at(0.50),
        at(0.95),
        at(0.99),
        times[times.len() - 1],
        found as f64 / times.len() as f64
    );
}

fn open(dir: &std::path::Path) -> Engine {
    Engine::open(EngineConfig::new(dir, scale::empty_claude_dir())).unwrap()
}

/// Queries of two or three words, most of them common ones.
fn queries(n: usize) -> Vec<RecallQuery> {
    let mut rng = fixture::Rng::new(7);
    (0..n)
        .map(|i| RecallQuery {
            query: (0..2 + rng.below(2))
                .map(|_| fixture::word(rng.skewed(VOCABULARY)))
                .collect::<Vec<_>>()
                .join(" "),
            limit: 10,
            // One in four recalls is within a project.
            project: (i % 4 == 0).then(|| format!("project-{}", rng.below(40))),
            types: Vec::new(),
            tags: Vec::new(),
        })
        .collect()
}

/// A store of `n` memories, built once and kept under `target/bench-data`.
fn store(n: usize) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("target/bench-data/memories-v{STORE_VERSION}-{n}"));
    let done = dir.join("built");
    if done.exists() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let engine = open(&dir);
    let mut rng = fixture::Rng::new(n as u64);
    let started = Instant::now();
    let types = [MemoryType::Stm, MemoryType::Ltm, MemoryType::Procedural];
    const BATCH: usize = 10_000;
    for start in (0..n).step_by(BATCH) {
        let news: Vec<NewMemory> = (start..(start + BATCH).min(n))
            .map(|i| NewMemory {
                memory_type: types[[0, 0, 0, 0, 0, 0, 0, 1, 1, 2][i % 10]],
                importance: rng.below(101) as f32 / 100.0,
                project: Some(format!("project-{}", rng.below(40))),
                tags: vec![format!("tag{}", rng.below(20))],
                ..NewMemory::new(format!(
                    "{} m{i}",
                    (0..8 + rng.below(18))
                        .map(|_| fixture::word(rng.skewed(VOCABULARY)))
                        .collect::<Vec<_>>()
                        .join(" ")
                ))
            })
            .collect();
        engine.remember_all(news, &mut |_| {}).unwrap();
        eprintln!(
            "memory_recall: {} of {n} memories written in {:.1?}",
            (start + BATCH).min(n),
            started.elapsed()
        );
    }
    drop(engine);
    std::fs::write(&done, b"").unwrap();
    println!(
        "memory_recall/{n}: wrote {n} memories with remember_all in {:.1?} ({:.0} per second)",
        started.elapsed(),
        n as f64 / started.elapsed().as_secs_f64()
    );
    dir
}
