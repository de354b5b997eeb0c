//! A live session: Claude Code appends a turn to a 25 MB transcript and eywa ingests
//! again. Only the appended bytes are parsed and archived; compared with reading the
//! same file whole.

mod fixture;

use std::io::Write;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use eywa::engine::{Engine, EngineConfig};

const ID: &str = "0000live-1111-4000-8000-000000000001";
const CWD: &str = "/home/dev/live";
const SIZE: usize = 25_000_000;

fn ingest_append(c: &mut Criterion) {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("projects/-home-dev-live");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{ID}.jsonl"));
    let mut rng = fixture::Rng::new(7);
    let start = eywa::model::Timestamp::parse("2026-06-01").unwrap().0;
    let mut turn = 0;
    {
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        fixture::session_turns(&mut out, &mut rng, ID, CWD, start, &mut turn, SIZE);
        out.flush().unwrap();
    }
    let engine = Engine::open(EngineConfig::temporary(home.path())).unwrap();
    engine.ingest().unwrap();

    let mut group = c.benchmark_group("ingest_append");
    group.sample_size(20);
    group.bench_function("one_turn_onto_25mb", |b| {
        b.iter_batched(
            || {
                let mut out = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                fixture::session_turns(&mut out, &mut rng, ID, CWD, start, &mut turn, 1)
            },
            |appended| {
                let report = engine.ingest().unwrap();
                assert_eq!(
                    report.bytes_read, appended as u64,
                    "only the new turn is read"
                );
                report
            },
            BatchSize::PerIteration,
        );
    });
    group.sample_size(10);
    group.bench_function("whole_25mb", |b| {
        b.iter(|| {
            let fresh = Engine::open(EngineConfig::temporary(home.path())).unwrap();
            fresh.ingest().unwrap()
        });
    });
    group.finish();
    println!("ingest_append: peak RSS {:.0} MiB", fixture::peak_rss_mib());
}

criterion_group!(benches, ingest_append);
criterion_main!(benches);
