//! Ingesting a synthetic ~/.claude of over 500 MB into a fresh store, end to end: discovery,
//! parsing, redaction, archiving (sha256 + zstd), graph writes, handoff index, flush.

mod fixture;

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

criterion_group!(benches, ingest_corpus);
criterion_main!(benches);
