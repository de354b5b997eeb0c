//! `SearchSessions` for words on a store of ~100k sessions shaped like LongMemEval's
//! (`../shared/eval/lme-dev55.tar.xz` copied 39 times with new uuids: 101,517 sessions of
//! ~10 messages), ingested once with `eywa ingest`. Two sets of 200 words (or as asked) of five letters
//! or more, seeded: "by use", each from a random message (common words as often as the
//! text uses them), and "by vocabulary", drawn evenly from the distinct words of 300
//! random sessions (mostly rarer words, as a person looks a session up). Each is asked
//! through a real `eywa serve` (gRPC, one client, a page of 20) and in-process; prints
//! p50, p95 and max, with the matches found.
//!
//! ```sh
//! cargo bench --bench session_search            # 39 copies: 101,517 sessions
//! cargo bench --bench session_search -- 3       # 3 copies: 7,809 sessions
//! cargo bench --bench session_search -- 39 40   # 40 words a set, not 200
//! ```

mod scale;

use std::time::{Duration, Instant};

use eywa::api::pb;
use eywa::engine::{Engine, EngineConfig, SessionSearch};

/// A small seeded generator: the same words every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// Text of the user and assistant messages of a transcript.
fn message_texts(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out = Vec::new();
    for line in text.lines() {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        match &value["message"]["content"] {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(blocks) => out.extend(
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str().map(str::to_owned)),
            ),
            _ => {}
        }
    }
    out
}

/// Every session transcript of the tree, sorted.
fn transcripts(tree: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for project in std::fs::read_dir(tree.join("projects")).unwrap() {
        for file in std::fs::read_dir(project.unwrap().path()).unwrap() {
            let file = file.unwrap().path();
            if file.extension().is_some_and(|e| e == "jsonl") {
                files.push(file);
            }
        }
    }
    files.sort();
    files
}

/// Words of five letters or more in `text`, lowercased.
fn long_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphabetic())
        .filter(|w| w.chars().count() >= 5)
        .map(str::to_lowercase)
        .collect()
}

/// `n` words as the text has them: each from a random message of a random session.
fn words_by_use(files: &[std::path::PathBuf], n: usize) -> Vec<String> {
    let mut rng = Lcg(0x5eed);
    let mut out = Vec::new();
    while out.len() < n {
        let texts = message_texts(&files[rng.next(files.len())]);
        if texts.is_empty() {
            continue;
        }
        let text = &texts[rng.next(texts.len())];
        let candidates = long_words(text);
        if candidates.is_empty() {
            continue;
        }
        out.push(candidates[rng.next(candidates.len())].clone());
    }
    out
}

/// `n` words drawn evenly from the distinct words of 300 random sessions: mostly the
/// rarer words a person looks a session up by (a name, a term they remember).
fn words_by_vocabulary(files: &[std::path::PathBuf], n: usize) -> Vec<String> {
    let mut rng = Lcg(0x70ca);
    let mut vocabulary = std::collections::BTreeSet::new();
    for _ in 0..300 {
        for text in message_texts(&files[rng.next(files.len())]) {
            vocabulary.extend(long_words(&text));
        }
    }
    let vocabulary: Vec<String> = vocabulary.into_iter().collect();
    (0..n)
        .map(|_| vocabulary[rng.next(vocabulary.len())].clone())
        .collect()
}

fn report(name: &str, mut rows: Vec<(Duration, u64, String)>) {
    rows.sort();
    let at = |q: f64| &rows[((rows.len() - 1) as f64 * q).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut totals: Vec<u64> = rows.iter().map(|r| r.1).collect();
    totals.sort_unstable();
    let worst = rows.last().unwrap();
    println!(
        "{name}: p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms ({:?}, {} matches); \
         matches per word: median {}, max {} (n={})",
        ms(at(0.5).0),
        ms(at(0.95).0),
        ms(worst.0),
        worst.2,
        worst.1,
        totals[totals.len() / 2],
        totals.last().unwrap(),
        rows.len()
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let copies: u32 = args.first().and_then(|a| a.parse().ok()).unwrap_or(39);
    let per_set: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let Some(lme) = scale::lme_tree() else {
        println!("skipped: ../shared/eval/lme-dev55.tar.xz is missing");
        return;
    };
    let started = Instant::now();
    let tree = scale::lme_copies(&lme, copies);
    println!(
        "tree: {} ({:.1} s to write, or written before)",
        tree.display(),
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let data = scale::ingested_store(&format!("store-lme-x{copies}"), &tree);
    println!(
        "store: {} ({:.1} s to ingest, or ingested before)",
        data.display(),
        started.elapsed().as_secs_f64()
    );
    // A store ingested by an earlier eywa catches its trigram index up on its next write
    // run: one ingest that finds nothing new.
    let started = Instant::now();
    let caught_up = Engine::open(EngineConfig::new(&data, &tree))
        .unwrap()
        .ingest()
        .unwrap();
    println!(
        "index: caught up in {:.1} s ({} files read again by the ingest)",
        started.elapsed().as_secs_f64(),
        caught_up.files_read
    );
    let files = transcripts(&tree);
    let sets = [
        ("words by use", words_by_use(&files, per_set)),
        ("words by vocabulary", words_by_vocabulary(&files, per_set)),
    ];

    {
        let server = scale::Serve::start(&data);
        let url = format!("http://{}", server.addr);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut client = pb::sessions_client::SessionsClient::connect(url)
                .await
                .unwrap();
            let sessions = client
                .list_sessions(pb::ListSessionsRequest {
                    limit: Some(1),
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner()
                .pagination
                .map_or(0, |p| p.total);
            println!("serve: {sessions} sessions");
            let ask = |word: String| {
                let mut client = client.clone();
                async move {
                    let at = Instant::now();
                    let page = client
                        .search_sessions(pb::SearchSessionsRequest {
                            pattern: word.clone(),
                            limit: Some(20),
                            ..Default::default()
                        })
                        .await
                        .unwrap()
                        .into_inner();
                    (at.elapsed(), page.pagination.map_or(0, |p| p.total), word)
                }
            };
            // Once, unmeasured: the first search loads who wrote each message.
            ask(sets[0].1[0].clone()).await;
            for (name, words) in &sets {
                let mut rows = Vec::new();
                for word in words {
                    rows.push(ask(word.clone()).await);
                }
                report(
                    &format!("serve, {name} (gRPC SearchSessions, limit 20)"),
                    rows,
                );
            }
        });
    }

    let engine = Engine::open(EngineConfig::new(&data, &tree)).unwrap();
    let search = |word: &str| SessionSearch {
        pattern: word.to_owned(),
        regex: false,
        case_sensitive: false,
        workspace: None,
        context: 0,
        limit: 20,
        offset: 0,
    };
    engine.search_sessions(&search(&sets[0].1[0])).unwrap();
    for (name, words) in &sets {
        let rows = words
            .iter()
            .map(|word| {
                let at = Instant::now();
                let page = engine.search_sessions(&search(word)).unwrap();
                (at.elapsed(), page.total, word.clone())
            })
            .collect();
        report(
            &format!("in-process, {name} (Engine::search_sessions, limit 20)"),
            rows,
        );
    }
}
