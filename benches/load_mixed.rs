//! Load as many agents at once would bring it: a real `eywa serve` on a store of the shared
//! corpus (`../shared/corpus/claude-code/real_projects`), asked by 64 clients at once,
//! each on its own connection, 10,000 requests each, in a fixed mix: GetHandoffs, lexical
//! Search, ListSessions, GetSession, WhatTouched, Neighbors, RetrieveContext, Stats and
//! SearchSessions; with a third argument, that percent of the requests are `Remember`
//! writes instead (spread evenly over clients and time). Prints errors, p50, p99 and max
//! latency per kind and overall, and the rate. Exits 1 on any error.
//!
//! With a fourth argument the store also holds the LongMemEval tree three times over
//! (`lme_x3` of `ingest_corpus`, 7,809 sessions, 215,757 chunks waiting to be embedded):
//! `backlog` installs the embedding model, so the server embeds that backlog while the
//! clients run (the bench reports chunks embedded a second before and during the load);
//! `lexical` leaves the model out, the same store with no embedder, to compare with.
//!
//! ```sh
//! cargo bench --bench load_mixed                  # 64 clients x 10,000 requests
//! cargo bench --bench load_mixed -- 16 1000       # clients, requests each
//! cargo bench --bench load_mixed -- 64 2000 20    # and 20% of them Remember
//! cargo bench --bench load_mixed -- 64 300 20 backlog   # beside a 215k-chunk backlog
//! cargo bench --bench load_mixed -- 64 300 20 lexical   # the same store, no embedder
//! ```

mod fixture;
mod scale;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use eywa::api::pb;

const KINDS: [&str; 10] = [
    "GetHandoffs",
    "Search",
    "ListSessions",
    "GetSession",
    "WhatTouched",
    "Neighbors",
    "RetrieveContext",
    "Stats",
    "SearchSessions",
    "Remember",
];

/// The kind index of a `Remember`.
const REMEMBER: usize = 9;

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let clients: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(64);
    let each: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let remember_percent: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(0);
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpus/claude-code/real_projects");
    if !corpus.is_dir() {
        println!("skipped: {} is missing", corpus.display());
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let claude = root.path().join("claude");
    copy(&corpus, &claude.join("projects"));
    let data = root.path().join("eywa");
    let status = scale::eywa()
        .arg("--data-dir")
        .arg(&data)
        .arg("--claude-dir")
        .arg(&claude)
        .args(["ingest", "--json"])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "ingest of the corpus failed");
    let backlog = match args.get(3).map(String::as_str) {
        None => None,
        Some("backlog") => Some(true),
        Some("lexical") => Some(false),
        Some(other) => panic!("the fourth argument is `backlog` or `lexical`, not {other}"),
    };
    if let Some(model) = backlog {
        add_backlog(&data, model);
    }
    let server = scale::Serve::start(&data);
    let url = format!("http://{}", server.addr);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let embedding = backlog == Some(true);
    if embedding {
        // The embedder alone, before any client asks anything.
        let (from, rate) = runtime.block_on(embed_rate(&url, IDLE_WINDOW));
        println!(
            "embedder alone: {from} chunks waiting, {rate:.1} chunks/s over {} s",
            IDLE_WINDOW.as_secs()
        );
    }
    let backlog_before = embedding.then(|| runtime.block_on(waiting(&url)));

    let (sessions, projects) = runtime.block_on(async {
        let mut library = pb::sessions_client::SessionsClient::connect(url.clone())
            .await
            .unwrap();
        let page = library
            .list_sessions(pb::ListSessionsRequest {
                limit: Some(1000),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let sessions: Vec<String> = page.sessions.iter().map(|s| s.session_id.clone()).collect();
        let mut projects: Vec<String> = page.sessions.iter().map(|s| s.project.clone()).collect();
        projects.sort();
        projects.dedup();
        (sessions, projects)
    });
    assert!(!sessions.is_empty() && !projects.is_empty());
    let words = [
        "fix the test",
        "github action",
        "refactor",
        "error handling",
        "readme",
        "python",
        "database migration",
        "build failure",
        "api endpoint",
        "performance",
    ];

    let started = Instant::now();
    let results: Vec<Vec<(usize, Duration, bool)>> = runtime.block_on(async {
        let mut tasks = Vec::new();
        for c in 0..clients {
            let (url, sessions, projects) = (url.clone(), sessions.clone(), projects.clone());
            tasks.push(tokio::spawn(async move {
                let channel = tonic::transport::Endpoint::from_shared(url)
                    .unwrap()
                    .connect()
                    .await
                    .unwrap();
                let mut retrieval = pb::retrieval_client::RetrievalClient::new(channel.clone());
                let mut library = pb::sessions_client::SessionsClient::new(channel.clone());
                let mut graph = pb::graph_client::GraphClient::new(channel.clone());
                let mut admin = pb::admin_client::AdminClient::new(channel.clone());
                let mut memory = pb::memory_client::MemoryClient::new(channel);
                let mut times = Vec::with_capacity(each);
                for i in 0..each {
                    // Remembers land on a fixed spread of (client, request) pairs.
                    let kind = if (c * 37 + i * 11) % 100 < remember_percent {
                        REMEMBER
                    } else {
                        (c + i) % REMEMBER
                    };
                    let session = sessions[(c * 7 + i) % sessions.len()].clone();
                    let project = format!("project:{}", projects[(c + i) % projects.len()]);
                    let query = format!("{} {i}", words[(c + i) % words.len()]);
                    let at = Instant::now();
                    let ok = match kind {
                        0 => retrieval
                            .get_handoffs(pb::GetHandoffsRequest {
                                query,
                                days_back: Some(3650),
                                ..Default::default()
                            })
                            .await
                            .is_ok(),
                        1 => retrieval
                            .search(pb::SearchRequest {
                                query,
                                mode: "lexical".into(),
                                ..Default::default()
                            })
                            .await
                            .is_ok(),
                        2 => library
                            .list_sessions(pb::ListSessionsRequest {
                                limit: Some(20),
                                ..Default::default()
                            })
                            .await
                            .is_ok(),
                        3 => library
                            .get_session(pb::GetSessionRequest {
                                session,
                                ..Default::default()
                            })
                            .await
                            .is_ok(),
                        4 => graph
                            .what_touched(pb::WhatTouchedRequest {
                                entity: project,
                                limit: Some(50),
                                ..Default::default()
                            })
                            .await
                            .is_ok(),
                        5 => graph
                            .neighbors(pb::NeighborsRequest {
                                node: format!("session:{session}"),
                                limit: Some(50),
                                ..Default::default()
                            })
                            .await
                            .is_ok(),
                        6 => retrieval
                            .retrieve_context(pb::RetrieveContextRequest {
                                sessions: vec![session],
                                max_tokens: Some(4000),
                                ..Default::default()
                            })
                            .await
                            .is_ok(),
                        7 => admin.stats(pb::StatsRequest {}).await.is_ok(),
                        REMEMBER => memory
                            .remember(pb::RememberRequest {
                                content: format!(
                                    "client {c} noted at request {i}: {query} needs a retry"
                                ),
                                tags: vec!["load".into()],
                                ..Default::default()
                            })
                            .await
                            .is_ok(),
                        _ => library
                            .search_sessions(pb::SearchSessionsRequest {
                                pattern: "error".into(),
                                limit: Some(5),
                                ..Default::default()
                            })
                            .await
                            .is_ok(),
                    };
                    times.push((kind, at.elapsed(), ok));
                }
                times
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.push(task.await.unwrap());
        }
        all
    });
    let wall = started.elapsed();
    if let Some(before) = backlog_before {
        let after = runtime.block_on(waiting(&url));
        // Remembers queue a chunk each and embed it themselves: the embedder's own work is
        // what left the backlog.
        println!(
            "embedder under load: {before} -> {after} chunks waiting, {:.1} chunks/s over {:.1} s",
            before.saturating_sub(after) as f64 / wall.as_secs_f64(),
            wall.as_secs_f64()
        );
    }
    drop(runtime);
    drop(server);

    let all: Vec<(usize, Duration, bool)> = results.into_iter().flatten().collect();
    let errors = all.iter().filter(|(_, _, ok)| !ok).count();
    let line = |name: &str, mut times: Vec<Duration>, errors: usize| {
        times.sort();
        let at = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
        println!(
            "{name:<16} {:>8} requests  {errors} errors  p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>8.2} ms",
            times.len(),
            at(0.50).as_secs_f64() * 1e3,
            at(0.99).as_secs_f64() * 1e3,
            times.last().unwrap().as_secs_f64() * 1e3,
        );
    };
    println!(
        "{clients} clients x {each} requests on {} sessions: {:.1} s, {:.0} requests/s",
        sessions.len(),
        wall.as_secs_f64(),
        all.len() as f64 / wall.as_secs_f64()
    );
    for (k, name) in KINDS.iter().enumerate() {
        let of: Vec<&(usize, Duration, bool)> =
            all.iter().filter(|(kind, ..)| *kind == k).collect();
        if of.is_empty() {
            continue;
        }
        line(
            name,
            of.iter().map(|(_, t, _)| *t).collect(),
            of.iter().filter(|(_, _, ok)| !ok).count(),
        );
    }
    line("all", all.iter().map(|(_, t, _)| *t).collect(), errors);
    if errors > 0 {
        std::process::exit(1);
    }
}

/// How long the embedder is timed alone before the clients start.
const IDLE_WINDOW: Duration = Duration::from_secs(30);

/// Ingests the LongMemEval tree three times over into `data` (its chunks wait to be
/// embedded), and with `model` installs the embedding model the tests installed.
fn add_backlog(data: &Path, model: bool) {
    let Some(lme) = scale::lme_tree() else {
        println!("skipped: ../shared/eval is missing");
        std::process::exit(0);
    };
    let copies = scale::lme_copies(&lme, 3);
    let status = scale::eywa()
        .arg("--data-dir")
        .arg(data)
        .arg("--claude-dir")
        .arg(&copies)
        .args(["ingest", "--json"])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "ingest of {} failed", copies.display());
    if model {
        let from = fixture::model_dir();
        let status = scale::eywa()
            .arg("--data-dir")
            .arg(data)
            .args(["model", "install", "--offline", "--json", "--from"])
            .arg(&from)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(
            status.success(),
            "no model at {}: run `cargo test` once (it installs one there)",
            from.display()
        );
    }
}

/// Chunks waiting to be embedded, as the server's `Stats` says.
async fn waiting(url: &str) -> u64 {
    let mut admin = pb::admin_client::AdminClient::connect(url.to_owned())
        .await
        .unwrap();
    let stats = admin.stats(pb::StatsRequest {}).await.unwrap().into_inner();
    stats.semantic.map_or(0, |s| s.backlog)
}

/// The backlog when the window starts, and the chunks a second the embedder took from it
/// over `window`.
async fn embed_rate(url: &str, window: Duration) -> (u64, f64) {
    let from = waiting(url).await;
    tokio::time::sleep(window).await;
    let to = waiting(url).await;
    (from, from.saturating_sub(to) as f64 / window.as_secs_f64())
}
