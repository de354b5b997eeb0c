//! `get` as a gRPC client sees it: a real `eywa serve` on a store imported from a Python
//! Eywa folder of N sessions (`../shared/bench/handoff_index.py`, the shape the Python
//! Eywa was timed on), asked `Retrieval/GetHandoffs` by a tonic client, one request at a
//! time. Every query carries a token never seen before, so no result cache can answer it.
//!
//! ```sh
//! cargo bench --bench served_get                     # 1k, 10k and 100k sessions
//! EYWA_BENCH_SIZES=100000 cargo bench --bench served_get
//! ```

mod scale;

use std::time::{Duration, Instant};

use eywa::api::RemoteClient;
use eywa::retrieve::GetOptions;

/// Requests timed per size, after a warm-up of the same count.
const REQUESTS: usize = 3_000;

fn main() {
    for n in scale::sizes() {
        let store = scale::imported_store(n);
        let server = scale::Serve::start(&store.data_dir);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (all, by_query) = runtime.block_on(async {
            let mut client = RemoteClient::connect(&server.addr).await.unwrap();
            let options = GetOptions::default();
            let mut fresh = 0u64;
            let mut ask = async |query: &str, client: &mut RemoteClient| {
                fresh += 1;
                let query = format!("{query} zq{fresh}x").trim().to_owned();
                let started = Instant::now();
                let outcome = client.get_handoffs(&query, &options).await.unwrap();
                assert!(outcome.hits.len() <= options.limit);
                started.elapsed()
            };
            for i in 0..REQUESTS {
                ask(scale::QUERIES[i % scale::QUERIES.len()], &mut client).await;
            }
            let mut all = Vec::with_capacity(REQUESTS);
            let mut by_query = vec![Vec::new(); scale::QUERIES.len()];
            for i in 0..REQUESTS {
                let q = i % scale::QUERIES.len();
                let took = ask(scale::QUERIES[q], &mut client).await;
                all.push(took);
                by_query[q].push(took);
            }
            (all, by_query)
        });
        let rss = server.rss_mib();
        // The client's connection lives in the runtime: close it before stopping serve.
        drop(runtime);
        drop(server);
        println!(
            "served_get/{n}: p50={} p99={} max={} (server RSS {rss:.0} MiB)",
            ms(percentile(&all, 0.50)),
            ms(percentile(&all, 0.99)),
            ms(percentile(&all, 1.0)),
        );
        for (q, times) in by_query.iter().enumerate() {
            println!(
                "    {:<28} p50={} p99={}",
                format!("{:?}", scale::QUERIES[q]),
                ms(percentile(times, 0.50)),
                ms(percentile(times, 0.99)),
            );
        }
    }
}

fn percentile(times: &[Duration], p: f64) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at]
}

fn ms(d: Duration) -> String {
    format!("{:.3}ms", d.as_secs_f64() * 1e3)
}
