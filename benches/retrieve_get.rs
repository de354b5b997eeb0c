//! `get` over synthetic handoff indexes: the Eywa scoring of one query.

mod fixture;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use eywa::retrieve::{GetOptions, HandoffIndex};

fn retrieve_get(c: &mut Criterion) {
    let mut group = c.benchmark_group("retrieve_get");
    group.throughput(Throughput::Elements(1));
    let options = GetOptions::default();
    for n in [1_000, 10_000, 100_000] {
        let index = HandoffIndex::new(fixture::handoffs(n, 42));
        // A common term with a project, a rarer one, and three terms.
        let queries = [
            format!("{} {}", fixture::word(1), fixture::word(3)),
            format!("{} parser", fixture::word(42)),
            format!(
                "{} {} {}",
                fixture::word(7),
                fixture::word(99),
                fixture::word(500)
            ),
        ];
        group.bench_with_input(BenchmarkId::new("query", n), &index, |b, index| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % queries.len();
                index.get(&queries[i], &options, fixture::today())
            });
        });
        group.bench_with_input(BenchmarkId::new("recent", n), &index, |b, index| {
            b.iter(|| index.get("", &options, fixture::today()));
        });
    }
    group.finish();
}

criterion_group!(benches, retrieve_get);
criterion_main!(benches);
