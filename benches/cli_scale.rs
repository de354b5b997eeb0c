//! The CLI as a person runs it on a heavy user's store: a Python Eywa folder of N sessions
//! (`../shared/bench/handoff_index.py`) brought in with `eywa import`, then each command
//! in a fresh process — with no server, and beside a running `eywa serve` (against the
//! same request over gRPC) — and an idle server's memory.
//!
//! ```sh
//! cargo bench --bench cli_scale                       # 1k, 10k and 100k sessions
//! EYWA_BENCH_SIZES=100000 cargo bench --bench cli_scale
//! ```

mod scale;

use std::process::Stdio;
use std::time::{Duration, Instant};

use eywa::api::{RemoteClient, TouchedQuery};
use eywa::graph::EdgeFilter;
use eywa::retrieve::GetOptions;

/// Fresh processes per command.
const RUNS: usize = 15;

/// Runs `eywa <args>` on `data` once: wall time and peak RSS (MiB).
fn run(data: &std::path::Path, args: &[&str]) -> (Duration, f64) {
    let started = Instant::now();
    let mut child = scale::eywa()
        .arg("--data-dir")
        .arg(data)
        .arg("--claude-dir")
        .arg(scale::empty_claude_dir())
        .args(args)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let (status, peak) = scale::wait_with_peak_rss(&mut child);
    let took = started.elapsed();
    assert!(status.success(), "eywa {args:?} failed");
    (took, peak)
}

/// Median and worst wall time, and the worst peak RSS, of `RUNS` fresh runs.
fn runs(data: &std::path::Path, args: &[&str]) -> (Duration, Duration, f64) {
    let mut times = Vec::new();
    let mut peak = 0f64;
    for _ in 0..RUNS {
        let (took, rss) = run(data, args);
        times.push(took);
        peak = peak.max(rss);
    }
    times.sort();
    (times[times.len() / 2], times[times.len() - 1], peak)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    for n in scale::sizes() {
        let imported = scale::import(n, true);
        let data = &imported.data_dir;
        let bytes = scale::dir_bytes(&data.join("store"));
        println!(
            "cli_scale/{n}: import {:.1} s, peak RSS {:.0} MiB; store {:.1} MiB = {:.2} KB a session",
            imported.seconds,
            imported.peak_rss_mib,
            bytes as f64 / (1 << 20) as f64,
            bytes as f64 / n as f64 / 1e3
        );
        // A first command after the import (sled recovers, the get index is read).
        run(data, &["stats"]);
        let commands: Vec<(String, Vec<&str>)> = vec![
            ("get kw1 kw2".into(), vec!["get", "kw1", "kw2", "zq1"]),
            (
                "get project-12 kw3 kw77".into(),
                vec!["get", "project-12", "kw3", "kw77", "zq2"],
            ),
            ("get (no query)".into(), vec!["get"]),
            (
                "graph touched project:project-7".into(),
                vec!["graph", "touched", "project:project-7"],
            ),
            ("stats".into(), vec!["stats"]),
            (
                "sessions list --limit 20".into(),
                vec!["sessions", "list", "--limit", "20"],
            ),
        ];
        for (name, args) in &commands {
            let (median, worst, peak) = runs(data, args);
            println!(
                "    no server   {name:<34} median {}  max {}  peak RSS {peak:.0} MiB",
                ms(median),
                ms(worst)
            );
        }

        let server = scale::Serve::start(data);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut client = runtime
            .block_on(RemoteClient::connect(&server.addr))
            .unwrap();
        // The same requests over gRPC, median of RUNS.
        let mut rpc = |name: &str| -> Duration {
            let mut times = Vec::new();
            for i in 0..RUNS {
                let started = Instant::now();
                runtime
                    .block_on(async {
                        match name {
                            "get kw1 kw2" => {
                                let q = format!("kw1 kw2 zq{i}r");
                                client
                                    .get_handoffs(&q, &GetOptions::default())
                                    .await
                                    .map(drop)
                            }
                            "get project-12 kw3 kw77" => {
                                let q = format!("project-12 kw3 kw77 zq{i}s");
                                client
                                    .get_handoffs(&q, &GetOptions::default())
                                    .await
                                    .map(drop)
                            }
                            "get (no query)" => client
                                .get_handoffs("", &GetOptions::default())
                                .await
                                .map(drop),
                            "graph touched project:project-7" => client
                                .what_touched(TouchedQuery {
                                    node: "project:project-7".to_owned(),
                                    filter: EdgeFilter::default(),
                                    limit: 100,
                                    authors: Default::default(),
                                })
                                .await
                                .map(drop),
                            "stats" => client.stats().await.map(drop),
                            "sessions list --limit 20" => client
                                .list_sessions(
                                    None,
                                    &Default::default(),
                                    20,
                                    0,
                                    eywa::engine::SessionOrder::Recent,
                                )
                                .await
                                .map(drop),
                            other => unreachable!("{other}"),
                        }
                    })
                    .unwrap();
                times.push(started.elapsed());
            }
            times.sort();
            times[times.len() / 2]
        };
        for (name, args) in &commands {
            let over_rpc = rpc(name);
            let (median, worst, _) = runs(data, args);
            println!(
                "    with serve  {name:<34} median {}  max {}  (its RPC {}: {} over it)",
                ms(median),
                ms(worst),
                ms(over_rpc),
                ms(median.saturating_sub(over_rpc))
            );
        }
        drop(runtime);
        // Idle: what the server holds once it has answered and its watcher has looked
        // for changes a few times.
        std::thread::sleep(Duration::from_secs(6));
        println!(
            "    idle serve RSS {:.0} MiB (no embedding model)",
            server.rss_mib()
        );
        drop(server);
    }
}
