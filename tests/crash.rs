//! Crash safety: a child `eywa ingest` is killed with SIGKILL at random moments. After each
//! kill the store opens, every edge's endpoints exist, every index keyspace agrees with its
//! primary, and ingesting again converges to what a clean ingest builds.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use eywa::engine::{Engine, EngineConfig};
use eywa::model::{Edge, Node};
use eywa_storage::Keyspace;

use crate::support::fixture::{ClaudeHome, days_ago};

const RUNS: u64 = 50;

/// Writes `count` sessions of `exchanges` turns, the i-th in project `project(i)`, i days
/// ago, their texts from `turn(i, j)`.
fn sessions(
    home: &ClaudeHome,
    count: u32,
    exchanges: u32,
    project: impl Fn(u32) -> String,
    turn: impl Fn(u32, u32) -> (String, String),
) {
    for i in 0..count {
        let turns: Vec<(String, String)> = (0..exchanges).map(|j| turn(i, j)).collect();
        let borrowed: Vec<(&str, &str)> = turns
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        home.session(
            &format!("{i:08x}-0000-4000-8000-{i:012x}"),
            &project(i),
            days_ago(i64::from(i % 40)),
            &borrowed,
        );
    }
}

/// Sessions enough for an ingest to take a while, over a handful of projects.
fn tree() -> ClaudeHome {
    let home = ClaudeHome::new();
    let topics = ["parser", "ledger", "tokenizer", "graph", "cache", "server"];
    let topic = |i: u32| topics[i as usize % topics.len()];
    sessions(
        &home,
        120,
        6,
        |i| format!("/w/{}", topic(i)),
        |i, j| {
            (
                format!("Step {j} of the {} work, part {i}", topic(i)),
                format!("Done with {} step {j}.", topic(i)),
            )
        },
    );
    home
}

/// Ids and facts (record-time fields aside) of everything stored.
fn content(engine: &Engine) -> (BTreeSet<String>, BTreeSet<String>) {
    let store = engine.graph().store();
    let nodes = store
        .scan::<Node>(Keyspace::Nodes, &[])
        .map(|r| format!("{:?}", r.unwrap().1))
        .collect();
    let edges = store
        .scan::<Edge>(Keyspace::Edges, &[])
        .map(|r| {
            let mut e = r.unwrap().1;
            e.recorded_at = eywa::model::Timestamp(0);
            e.expired_at = None;
            format!("{e:?}")
        })
        .collect();
    (nodes, edges)
}

/// A fixed-seed generator for kill moments.
fn next(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

/// `eywa ingest --json` with `extra` arguments, its output discarded.
fn spawn_ingest(home: &ClaudeHome, data: &std::path::Path, extra: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_eywa"))
        .args(["ingest", "--json"])
        .args(extra)
        .env("EYWA_DATA_DIR", data)
        .env("EYWA_CLAUDE_DIR", home.root())
        .env_remove("EYWA_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn killed_ingests_leave_a_consistent_store_that_converges() {
    let home = tree();
    // The clean result, and how long a clean child ingest takes.
    let clean_dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let status = spawn_ingest(&home, &clean_dir.path().join("eywa"), &[])
        .wait()
        .unwrap();
    assert!(status.success());
    let span = started.elapsed();
    let clean = Engine::open(EngineConfig::new(
        clean_dir.path().join("eywa"),
        home.root(),
    ))
    .unwrap();
    let clean_counts = clean.graph().counts().unwrap();
    let clean_content = content(&clean);
    let clean_chunks = chunks(&clean);
    assert_eq!(clean_counts.episodes, 120);
    assert!(!clean_chunks.is_empty());
    drop(clean);

    let mut seed = 0x5eed_u64;
    let mut killed_mid_run = 0;
    for run in 0..RUNS {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().join("eywa");
        let mut child = spawn_ingest(&home, &dir, &[]);
        // Anywhere from process start to a little past a clean run's length.
        let at = Duration::from_micros(next(&mut seed) % (span.as_micros() as u64 * 11 / 10 + 1));
        std::thread::sleep(at);
        if child.try_wait().unwrap().is_none() {
            killed_mid_run += 1;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let engine = Engine::open(EngineConfig::new(&dir, home.root())).unwrap_or_else(|e| {
            panic!("run {run}: the store does not open after a kill at {at:?}: {e:#}")
        });
        let problems = engine.graph().check().unwrap();
        assert!(
            problems.is_empty(),
            "run {run} (kill at {at:?}): {problems:#?}"
        );
        let report = engine.ingest().unwrap();
        assert_eq!(
            report.counts, clean_counts,
            "run {run}: counts after re-ingest"
        );
        assert_eq!(
            content(&engine),
            clean_content,
            "run {run}: ids and facts after re-ingest"
        );
        // A session's chunks are queued in its own transaction: none is lost to a kill.
        assert_eq!(
            chunks(&engine),
            clean_chunks,
            "run {run}: chunks known to semantic memory after re-ingest"
        );
        assert!(
            engine.graph().check().unwrap().is_empty(),
            "run {run}: after re-ingest"
        );
    }
    eprintln!(
        "crash test: {killed_mid_run} of {RUNS} kills landed mid-ingest (clean run {span:?})"
    );
    assert!(
        killed_mid_run >= RUNS / 2,
        "most kills must land while ingesting"
    );
}

/// Every chunk semantic memory knows (queued or embedded), by source and key.
fn chunks(engine: &Engine) -> BTreeSet<Vec<u8>> {
    engine
        .graph()
        .store()
        .keys(Keyspace::VectorsBySource, &[])
        .map(|k| k.unwrap())
        .collect()
}

/// Chunks stored, as raw `(key, value)` pairs: what a converged store must agree on.
fn vectors(engine: &Engine) -> BTreeSet<(Vec<u8>, Vec<u8>)> {
    engine
        .graph()
        .store()
        .entries(Keyspace::Vectors, &[])
        .map(|kv| kv.unwrap())
        .collect()
}

/// Chunks listed in semantic memory, read straight from the warm tier of a store whose
/// process was killed: (listed, queued, embedded, listed but neither, queue entries).
fn listing(data: &std::path::Path) -> (usize, usize, usize, usize, usize) {
    let store = eywa_storage::Config::new()
        .path(data.join("store"))
        .open()
        .unwrap();
    let (mut listed, mut queued, mut embedded, mut dangling) = (0, 0, 0, 0);
    for kv in store.entries(Keyspace::VectorsBySource, &[]) {
        let (k, pending) = kv.unwrap();
        listed += 1;
        let key = &k[k.len() - 8..];
        if !pending.is_empty() && store.contains(Keyspace::EmbedQueue, &pending).unwrap() {
            queued += 1;
        } else if pending.is_empty() && store.contains(Keyspace::Vectors, key).unwrap() {
            embedded += 1;
        } else {
            dangling += 1;
        }
    }
    (
        listed,
        queued,
        embedded,
        dangling,
        store.len(Keyspace::EmbedQueue).unwrap(),
    )
}

/// Kills of `eywa ingest --embed`.
const EMBED_KILLS: u64 = 100;

/// A child `eywa ingest --embed` (the real model) is SIGKILLed 100 times, each on a fresh
/// store at a random moment of its ingest or its embedding. After each kill every chunk
/// semantic memory lists is queued or embedded, never lost, and the store converges
/// (ingest, embed) to what a clean run stores: the same chunks, vectors, backlog and
/// counts; every tenth store also gives the same search results, after reopening too.
#[test]
fn killed_ingest_and_embedding_runs_lose_no_chunk_and_converge() {
    let Some(model) = crate::support::model::model_dir() else {
        return;
    };
    let loaded = crate::support::model::minilm().unwrap();
    let home = ClaudeHome::new();
    sessions(
        &home,
        12,
        3,
        |i| format!("/w/p{}", i % 3),
        |i, j| {
            (
                format!("Session {i} asks about the billing export, question {j}"),
                format!("Answer {j}: the export of session {i} now streams rows."),
            )
        },
    );
    let config = |dir: &std::path::Path| {
        EngineConfig::new(dir, home.root())
            .with_embedding(eywa::engine::Embedding::Embedder(loaded.clone()))
    };
    let install = |dir: &std::path::Path| {
        let installed = Command::new(env!("CARGO_BIN_EXE_eywa"))
            .args(["model", "install", "--offline", "--from"])
            .arg(model.path())
            .env("EYWA_DATA_DIR", dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(installed.success());
    };
    let query = eywa::engine::SearchRequest {
        query: "streaming the billing export".into(),
        mode: eywa::retrieve::SearchMode::Semantic,
        limit: 12,
        ..Default::default()
    };
    // Each session's score. Vectors embedded in other batches (after a kill, what is
    // left is embedded in batches of other sizes) may differ in the last bits, so scores
    // are compared to 1e-4 and near ties may swap places.
    let ranked = |engine: &Engine| -> std::collections::BTreeMap<String, f32> {
        engine
            .search(&query)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| (h.session_id, h.signals.semantic.unwrap().score))
            .collect()
    };
    let same = |a: &std::collections::BTreeMap<String, f32>,
                b: &std::collections::BTreeMap<String, f32>| {
        a.len() == b.len()
            && a.iter()
                .all(|(k, v)| b.get(k).is_some_and(|w| (v - w).abs() < 1e-4))
    };

    let clean_dir = tempfile::tempdir().unwrap();
    install(clean_dir.path());
    let started = Instant::now();
    assert!(
        spawn_ingest(&home, clean_dir.path(), &["--embed"])
            .wait()
            .unwrap()
            .success()
    );
    let span = started.elapsed();
    let clean = Engine::open(config(clean_dir.path())).unwrap();
    let clean_vectors = vectors(&clean);
    let clean_chunks = chunks(&clean);
    let clean_counts = clean.graph().counts().unwrap();
    let clean_ranked = ranked(&clean);
    let status = clean.semantic_status();
    assert_eq!(status.backlog, 0);
    assert_eq!(status.vectors as usize, clean_vectors.len());
    assert!(clean_vectors.len() > 60);
    drop(clean);

    // One store per kill; two kills at a time (a kill lands mid-run all the same: runs
    // side by side are only slower). Every fourth store is taken to convergence, every
    // twentieth also searched, before and after reopening.
    let one = |round: u64, seed: &mut u64| -> bool {
        let data = tempfile::tempdir().unwrap();
        // The model installed once, shared by a link.
        std::os::unix::fs::symlink(clean_dir.path().join("models"), data.path().join("models"))
            .unwrap();
        let mut process = spawn_ingest(&home, data.path(), &["--embed"]);
        // Anywhere from process start to a little past a clean run's length.
        let span_us = span.as_micros() as u64;
        let at = Duration::from_micros(next(seed) % (span_us * 11 / 10 + 1));
        std::thread::sleep(at);
        let mid_run = process.try_wait().unwrap().is_none();
        process.kill().unwrap(); // SIGKILL
        process.wait().unwrap();
        let (listed, queued, embedded, dangling, queue) = listing(data.path());
        assert_eq!(
            (dangling, queue),
            (0, queued),
            "round {round}, kill at {at:?}: {listed} chunks listed, {queued} queued, \
             {embedded} embedded, {queue} queue entries"
        );
        assert_eq!(listed, queued + embedded);
        if !round.is_multiple_of(4) {
            return mid_run;
        }
        let engine = Engine::open(config(data.path())).unwrap_or_else(|e| {
            panic!("round {round}: the store does not open after a kill at {at:?}: {e:#}")
        });
        let status = engine.semantic_status();
        let stored = engine.graph().store().len(Keyspace::Vectors).unwrap() as u64;
        assert_eq!(status.vectors, stored, "round {round}: index and warm tier");
        assert!(engine.graph().check().unwrap().is_empty(), "round {round}");
        engine.ingest().unwrap();
        engine.embed_pending(&mut |_, _| {}).unwrap();
        assert_eq!(
            engine.graph().counts().unwrap(),
            clean_counts,
            "round {round}"
        );
        assert_eq!(
            chunks(&engine),
            clean_chunks,
            "round {round}: chunks listed"
        );
        assert_eq!(vectors(&engine), clean_vectors, "round {round}: vectors");
        let status = engine.semantic_status();
        assert_eq!(
            (status.backlog, status.vectors as usize),
            (0, clean_vectors.len()),
            "round {round}: backlog and vectors"
        );
        if !round.is_multiple_of(20) {
            return mid_run;
        }
        let got = ranked(&engine);
        assert!(
            same(&got, &clean_ranked),
            "round {round}: search after converging: {got:?} against {clean_ranked:?}"
        );
        drop(engine);
        // And once more from disk: the saved index serves the same.
        let engine = Engine::open(config(data.path())).unwrap();
        assert!(!engine.semantic_status().rebuilding, "round {round}");
        let got = ranked(&engine);
        assert!(
            same(&got, &clean_ranked),
            "round {round}: after reopening: {got:?} against {clean_ranked:?}"
        );
        mid_run
    };
    let mid_run: u64 = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2u64)
            .map(|w| {
                let one = &one;
                scope.spawn(move || {
                    let mut seed = 0xe3bed_u64 + w;
                    (w..EMBED_KILLS)
                        .step_by(2)
                        .map(|round| u64::from(one(round, &mut seed)))
                        .sum::<u64>()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    eprintln!(
        "embedding crash test: {mid_run} of {EMBED_KILLS} kills landed mid-run (clean run \
         {span:?})"
    );
    assert!(mid_run >= EMBED_KILLS / 2, "most kills must land mid-run");
}

/// Issue 30: `eywa docs add` killed at random moments. After each kill the next command
/// finds the store consistent (`eywa check` passes: what the store holds is in the text
/// index, indexed again when the process that wrote it died before its commit), and adding
/// again converges to every document.
#[test]
fn killed_document_adds_leave_the_text_index_in_step() {
    const FILES: usize = 150;
    const KILLS: u64 = 10;
    let home = ClaudeHome::new();
    std::fs::create_dir_all(home.root().join("projects")).unwrap();
    let notes = tempfile::tempdir().unwrap();
    for i in 0..FILES {
        std::fs::write(
            notes.path().join(format!("note-{i:03}.md")),
            format!(
                "# Note {i}\n\nThe word quillon{i}x marks this note. {}\n",
                "It says more about deploys, canaries and rollbacks. ".repeat(40)
            ),
        )
        .unwrap();
    }
    let folder = notes.path().display().to_string();
    let add = |dir: &std::path::Path| {
        let mut cmd = crate::support::eywa_command(dir, home.root());
        cmd.args(["docs", "add", &folder, "--json"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    };
    let clean = tempfile::tempdir().unwrap();
    let started = Instant::now();
    assert!(add(&clean.path().join("eywa")).status().unwrap().success());
    let span = started.elapsed();

    let mut seed = 0xd0c5_u64;
    let mut killed_mid_add = 0;
    for run in 0..KILLS {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().join("eywa");
        let mut child = add(&dir).spawn().unwrap();
        let at = Duration::from_micros(next(&mut seed) % (span.as_micros() as u64 + 1));
        std::thread::sleep(at);
        if child.try_wait().unwrap().is_none() {
            killed_mid_add += 1;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let out = crate::support::eywa_command(&dir, home.root())
            .args(["check", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "run {run} (kill at {at:?}): {}",
            String::from_utf8_lossy(&out.stdout)
        );
        // Every document the store holds is in the text index.
        let engine = Engine::open(EngineConfig::new(&dir, home.root())).unwrap();
        let (docs, _) = engine.list_documents(1_000, 0).unwrap();
        let texts = engine
            .text_index()
            .unwrap()
            .texts(100_000)
            .unwrap()
            .join("\n");
        for doc in &docs {
            let i: usize = doc.title.trim_start_matches("Note ").parse().unwrap();
            assert!(
                texts.contains(&format!("quillon{i}x")),
                "run {run} (kill at {at:?}): {} is stored and not indexed",
                doc.path
            );
        }
        drop(engine);
        assert!(add(&dir).status().unwrap().success());
        let engine = Engine::open(EngineConfig::new(&dir, home.root())).unwrap();
        assert_eq!(engine.list_documents(1_000, 0).unwrap().1, FILES as u64);
    }
    eprintln!("docs crash test: {killed_mid_add} of {KILLS} kills landed mid-add ({span:?})");
    assert!(
        killed_mid_add >= KILLS / 2,
        "most kills must land while adding"
    );
}

/// Issue 32: beside `serve`, a memory answers once searchable and the text index is
/// committed after it, in the background. A server killed before that commit loses
/// nothing: the next process to open the store indexes the memories again from their
/// pending marks. Several memories in a row leave the last ones in that window (commits
/// come at most once a second).
#[test]
fn memories_remembered_beside_a_killed_server_are_found_after_it() {
    const MEMORIES: usize = 6;
    let home = ClaudeHome::new();
    std::fs::create_dir_all(home.root().join("projects")).unwrap();
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("eywa");
    let eywa = |args: &[&str]| {
        let out = crate::support::eywa_command(&dir, home.root())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "eywa {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let serve = crate::support::serve::Serve::spawn({
        let mut cmd = crate::support::eywa_command(&dir, home.root());
        cmd.args(["serve", "--addr", "127.0.0.1:0", "--no-ingest"]);
        cmd
    });
    for i in 0..MEMORIES {
        let word = format!("vortellic{i}");
        eywa(&[
            "memory",
            "add",
            &format!("The {word} cache warms at start"),
            "--json",
        ]);
        // Through the server, at once.
        assert!(eywa(&["memory", "recall", &word, "--json"]).contains(&word));
    }
    let killed = Command::new("kill")
        .args(["-KILL", &serve.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    drop(serve);
    for i in 0..MEMORIES {
        let word = format!("vortellic{i}");
        assert!(
            eywa(&["memory", "recall", &word, "--json"]).contains(&word),
            "{word} is lost with the server"
        );
    }
    eywa(&["check"]);
}
