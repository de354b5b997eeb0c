//! Writing one ~100-byte value per batch (a sled transaction) into the warm tier.

mod fixture;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eywa_storage::{Batch, Config, Keyspace};

fn storage_put(c: &mut Criterion) {
    let store = Config::new().temporary(true).open().unwrap();
    let value = "x".repeat(100);
    let mut group = c.benchmark_group("storage_put");
    group.throughput(Throughput::Elements(1));
    let mut i = 0u64;
    group.bench_function("one_value_per_batch", |b| {
        b.iter(|| {
            i += 1;
            let mut batch = Batch::new();
            batch
                .put(Keyspace::Docs, i.to_be_bytes().to_vec(), &value)
                .unwrap();
            store.apply(batch).unwrap();
        });
    });
    group.throughput(Throughput::Elements(100));
    group.bench_function("hundred_values_per_batch", |b| {
        b.iter(|| {
            let mut batch = Batch::new();
            for _ in 0..100 {
                i += 1;
                batch
                    .put(Keyspace::Docs, i.to_be_bytes().to_vec(), &value)
                    .unwrap();
            }
            store.apply(batch).unwrap();
        });
    });
    group.finish();
}

criterion_group!(benches, storage_put);
criterion_main!(benches);
