//! What touched a project (the 100 newest sessions) on the synthetic graph. Projects are
//! drawn with the same skew as the data: some have tens of thousands of sessions.

mod fixture;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eywa::graph::EdgeFilter;
use eywa::model::NodeId;

fn graph_what_touched(c: &mut Criterion) {
    let graph = fixture::open_graph();
    let mut rng = fixture::Rng::new(11);
    let projects: Vec<NodeId> = (0..5_000)
        .map(|_| NodeId::project(&format!("/w/{}", fixture::word(rng.skewed(500)))))
        .collect();
    let filter = EdgeFilter::default();
    let mut group = c.benchmark_group("graph_what_touched");
    group.throughput(Throughput::Elements(1));
    let mut i = 0;
    group.bench_function("project_limit_100", |b| {
        b.iter(|| {
            i = (i + 1) % projects.len();
            graph
                .what_touched(projects[i], &filter, &Default::default(), 100)
                .unwrap()
        });
    });
    group.finish();
    fixture::percentiles("graph_what_touched/project_limit_100", &projects, |p| {
        graph
            .what_touched(*p, &filter, &Default::default(), 100)
            .unwrap();
    });
    // Cold: every hot cache emptied before each query (first query after a write, or a
    // project not asked about lately).
    let mut distinct = projects.clone();
    distinct.sort();
    distinct.dedup();
    fixture::percentiles(
        "graph_what_touched/project_limit_100/cold",
        &distinct,
        |p| {
            graph.clear_caches();
            graph
                .what_touched(*p, &filter, &Default::default(), 100)
                .unwrap();
        },
    );
}

criterion_group!(benches, graph_what_touched);
criterion_main!(benches);
