//! Opening the synthetic graph (100k Episodes, 1M edges): the store and `Graph::open`
//! (the in-memory view loads on first use, outside the timing).

mod fixture;

use criterion::{Criterion, criterion_group, criterion_main};

fn graph_open(c: &mut Criterion) {
    let dir = fixture::graph_dir();
    let mut group = c.benchmark_group("graph_open");
    group.sample_size(10);
    group.bench_function("100k_episodes_1m_edges", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                // The previous handle's lock is released once fjall's threads stop (up to
                // 250 ms): only the attempt that opens is timed.
                let (graph, elapsed) = loop {
                    let started = std::time::Instant::now();
                    match eywa_storage::Config::new()
                        .path(&dir)
                        .lock_wait_ms(0)
                        .open()
                    {
                        Ok(store) => {
                            let graph = eywa::graph::Graph::open(store).unwrap();
                            break (graph, started.elapsed());
                        }
                        Err(eywa_storage::Error::Locked { .. }) => {
                            std::thread::sleep(std::time::Duration::from_millis(20));
                        }
                        Err(e) => panic!("{e}"),
                    }
                };
                assert!(graph.view_from_snapshot().unwrap());
                total += elapsed;
                assert_eq!(
                    graph.counts().unwrap().episodes,
                    u64::from(fixture::GRAPH_EPISODES)
                );
                drop(graph);
            }
            total
        });
    });
    group.finish();
}

criterion_group!(benches, graph_open);
criterion_main!(benches);
