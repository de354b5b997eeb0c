//! A two-hop walk from a session (at most 100 nodes) on the synthetic graph.

mod fixture;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eywa::graph::EdgeFilter;
use eywa::model::NodeId;

fn graph_walk_2hop(c: &mut Criterion) {
    let graph = fixture::open_graph();
    let mut rng = fixture::Rng::new(13);
    let starts: Vec<NodeId> = (0..5_000)
        .map(|_| {
            let i = rng.below(u64::from(fixture::GRAPH_EPISODES));
            NodeId::episode(&format!("{i:08x}-0000-4000-8000-{i:012x}"))
        })
        .collect();
    let filter = EdgeFilter::default();
    let mut group = c.benchmark_group("graph_walk_2hop");
    group.throughput(Throughput::Elements(1));
    let mut i = 0;
    group.bench_function("episode_max_100", |b| {
        b.iter(|| {
            i = (i + 1) % starts.len();
            graph.walk(starts[i], 2, 100, &filter).unwrap()
        });
    });
    group.finish();
    fixture::percentiles("graph_walk_2hop/episode_max_100", &starts, |s| {
        let walk = graph.walk(*s, 2, 100, &filter).unwrap();
        assert!(walk.steps.len() > 1);
    });
    fixture::percentiles(
        "graph_walk_2hop/episode_max_100/cold",
        &starts[..1000],
        |s| {
            graph.clear_caches();
            graph.walk(*s, 2, 100, &filter).unwrap();
        },
    );
}

criterion_group!(benches, graph_walk_2hop);
criterion_main!(benches);
