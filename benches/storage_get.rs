//! Reading a node by id from the warm tier of the synthetic graph (no hot cache).

mod fixture;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eywa::model::{Node, NodeId};
use eywa_storage::Keyspace;

fn storage_get(c: &mut Criterion) {
    let store = eywa_storage::Config::new()
        .path(fixture::graph_dir())
        .open()
        .unwrap();
    let mut rng = fixture::Rng::new(17);
    let keys: Vec<Vec<u8>> = (0..10_000)
        .map(|_| {
            let i = rng.below(u64::from(fixture::GRAPH_EPISODES));
            NodeId::episode(&format!("{i:08x}-0000-4000-8000-{i:012x}"))
                .as_bytes()
                .to_vec()
        })
        .collect();
    let mut group = c.benchmark_group("storage_get");
    group.throughput(Throughput::Elements(1));
    let mut i = 0;
    group.bench_function("episode_node", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            store
                .get::<Node>(Keyspace::Nodes, &keys[i])
                .unwrap()
                .unwrap()
        });
    });
    group.finish();
}

criterion_group!(benches, storage_get);
criterion_main!(benches);
