//! `Engine::search` in hybrid mode (the default) over a million embedded chunks: BM25 over
//! the text index, vector search over the HNSW index, grouping per session, fusion and
//! titles, as `eywa search` and `Retrieval/Search` run it.
//!
//! The store is built once into `target/bench-data/hybrid-1m-v1/` through the real path:
//! a synthetic Claude tree of 10,000 sessions × 50 exchanges (a million prompts and
//! answers of 10 to 40 words from a skewed vocabulary, over 200 projects) is ingested,
//! then every chunk is embedded by the engine's queue. The vectors are synthetic and
//! low-rank (each word stands for one of 64 topic directions), so the query's vector costs
//! nothing here: the real model's cost for a query is `embed_throughput/one_query`, and
//! `query_by_the_model` runs the real model on each query (beside BM25) as well.

mod fixture;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use eywa::embed::Embedder;
use eywa::engine::{Embedding, Engine, EngineConfig, SearchRequest};
use eywa::model::Timestamp;

const SESSIONS: u64 = 10_000;
const EXCHANGES: u64 = 50;
const PROJECTS: u64 = 200;
const VOCABULARY: u64 = 50_000;
const DIM: usize = 384;
const TOPICS: usize = 64;

/// Synthetic low-rank vectors from words: each word adds its topic's direction (one of 64)
/// and a little of its own.
struct TopicEmbedder {
    topics: Vec<Vec<f32>>,
}

impl TopicEmbedder {
    fn new() -> TopicEmbedder {
        let mut rng = fixture::Rng::new(64);
        let topics = (0..TOPICS)
            .map(|_| {
                (0..DIM)
                    .map(|_| (rng.next_u64() >> 11) as f32 / (1u64 << 53) as f32 - 0.5)
                    .collect()
            })
            .collect();
        TopicEmbedder { topics }
    }
}

impl Embedder for TopicEmbedder {
    fn model_id(&self) -> &str {
        "bench-topics-384"
    }

    fn dim(&self) -> usize {
        DIM
    }

    fn embed(&self, texts: &[&str]) -> eywa::Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; DIM];
                v[0] = 1e-3;
                for word in t.split_whitespace() {
                    let h = word.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                    });
                    let topic = &self.topics[(h % TOPICS as u64) as usize];
                    for (d, x) in v.iter_mut().enumerate() {
                        *x += topic[d];
                    }
                    v[((h >> 20) % DIM as u64) as usize] += 0.5;
                }
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / n).collect()
            })
            .collect())
    }
}

/// The synthetic vectors at the real model's price: each text is also run through
/// all-MiniLM-L6-v2 (and its vector dropped), so a search waits for the model as it would
/// for a query it has not seen.
struct PricedTopics {
    topics: TopicEmbedder,
    model: eywa::embed::MiniLm,
}

impl Embedder for PricedTopics {
    fn model_id(&self) -> &str {
        self.topics.model_id()
    }

    fn dim(&self) -> usize {
        DIM
    }

    fn embed(&self, texts: &[&str]) -> eywa::Result<Vec<Vec<f32>>> {
        self.model.embed(texts)?;
        self.topics.embed(texts)
    }
}

fn words(rng: &mut fixture::Rng, n: u64) -> String {
    (0..n)
        .map(|_| fixture::word(rng.skewed(VOCABULARY)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The Claude tree and the eywa data directory, built once.
fn fixture_dirs() -> (PathBuf, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/hybrid-1m-v1");
    let (claude, data) = (root.join("claude"), root.join("eywa"));
    if root.join("complete").exists() {
        return (claude, data);
    }
    let _ = std::fs::remove_dir_all(&root);
    let started = std::time::Instant::now();
    let mut rng = fixture::Rng::new(1_000_000);
    for s in 0..SESSIONS {
        let project = fixture::word(s % PROJECTS);
        let cwd = format!("/home/dev/{project}");
        let dir = claude.join("projects").join(cwd.replace('/', "-"));
        std::fs::create_dir_all(&dir).unwrap();
        let id = format!("{s:08x}-2222-4000-8000-{s:012x}");
        let mut out = std::io::BufWriter::new(
            std::fs::File::create(dir.join(format!("{id}.jsonl"))).unwrap(),
        );
        let start = Timestamp::parse("2025-01-01").unwrap().0 + s as i64 * 2_400_000;
        let mut parent = serde_json::Value::Null;
        for e in 0..EXCHANGES {
            let ts = Timestamp(start + e as i64 * 30_000).to_rfc3339();
            let n = 10 + rng.below(30);
            let prompt = words(&mut rng, n);
            let n = 10 + rng.below(30);
            let answer = words(&mut rng, n);
            let (u, a) = (format!("{id}-u{e}"), format!("{id}-a{e}"));
            let lines = [
                serde_json::json!({"type": "user", "uuid": u, "parentUuid": parent, "sessionId": id, "cwd": cwd,
                    "version": "2.1.17", "timestamp": ts, "message": {"role": "user", "content": prompt}}),
                serde_json::json!({"type": "assistant", "uuid": a, "parentUuid": u, "sessionId": id, "cwd": cwd,
                    "timestamp": ts, "requestId": format!("req_{s}_{e}"),
                    "message": {"id": format!("msg_{s}_{e}"), "role": "assistant", "model": "claude-opus-4-6",
                        "usage": {"input_tokens": 100, "output_tokens": 40},
                        "content": [{"type": "text", "text": answer}]}}),
            ];
            for line in lines {
                writeln!(out, "{line}").unwrap();
            }
            parent = serde_json::Value::String(a);
        }
        out.flush().unwrap();
    }
    eprintln!(
        "hybrid_search: wrote {SESSIONS} sessions in {:.1?}",
        started.elapsed()
    );
    let engine = open(&claude, &data);
    let report = engine.ingest().unwrap();
    eprintln!(
        "hybrid_search: ingested {} sessions in {:.1?}; {} chunks queued",
        report.counts.sessions,
        started.elapsed(),
        engine.semantic_status().backlog
    );
    let mut last = std::time::Instant::now();
    let embedded = engine
        .embed_pending(&mut |done, left| {
            if last.elapsed().as_secs() >= 30 {
                eprintln!(
                    "hybrid_search: {done} chunks in the index, {left} to go, {:.0?}",
                    started.elapsed()
                );
                last = std::time::Instant::now();
            }
        })
        .unwrap();
    eprintln!(
        "hybrid_search: {} chunks embedded and indexed in {:.1}s ({:.1?} in all)",
        embedded.chunks,
        embedded.seconds,
        started.elapsed()
    );
    drop(engine);
    std::fs::write(root.join("complete"), "").unwrap();
    (claude, data)
}

fn open(claude: &Path, data: &Path) -> Engine {
    Engine::open(
        EngineConfig::new(data, claude)
            .with_embedding(Embedding::Embedder(Arc::new(TopicEmbedder::new()))),
    )
    .unwrap()
}

fn hybrid_search(c: &mut Criterion) {
    let (claude, data) = fixture_dirs();
    let started = std::time::Instant::now();
    let engine = open(&claude, &data);
    let status = engine.semantic_status();
    println!(
        "hybrid_search: opened {} vectors, {} passages in {:.1?}",
        status.vectors,
        engine.text_index().unwrap().len(),
        started.elapsed()
    );
    assert!(status.vectors >= 1_000_000 && status.backlog == 0 && !status.rebuilding);
    let mut rng = fixture::Rng::new(5);
    // Two or three words drawn with the vocabulary's skew; a quarter within one project.
    let requests: Vec<SearchRequest> = (0..2_000)
        .map(|i| SearchRequest {
            query: words(&mut rng, 2 + (i % 2)),
            filter: eywa::model::SearchFilter {
                projects: if i % 4 == 0 {
                    vec![fixture::word(rng.below(PROJECTS))]
                } else {
                    Vec::new()
                },
                ..Default::default()
            },
            limit: 10,
            ..SearchRequest::default()
        })
        .collect();
    let mut group = c.benchmark_group("hybrid_search");
    let mut i = 0;
    group.bench_function("1m_chunks_top10", |b| {
        b.iter(|| {
            i = (i + 1) % requests.len();
            engine.search(&requests[i]).unwrap()
        });
    });
    group.finish();
    let (plain, filtered): (Vec<_>, Vec<_>) = requests
        .iter()
        .cloned()
        .partition(|r| r.filter.projects.is_empty());
    fixture::percentiles("hybrid_search/1m_chunks_top10", &plain, |r| {
        let found = engine.search(r).unwrap();
        assert_eq!(found.mode, eywa::retrieve::SearchMode::Hybrid);
    });
    fixture::percentiles(
        "hybrid_search/1m_chunks_top10/one_project",
        &filtered,
        |r| {
            engine.search(r).unwrap();
        },
    );
    drop(engine);
    // Queries the model has not seen (the query cache starts empty on open), each embedded
    // by the real model beside BM25.
    let engine = Engine::open(EngineConfig::new(&data, &claude).with_embedding(
        Embedding::Embedder(Arc::new(PricedTopics {
            topics: TopicEmbedder::new(),
            model: fixture::minilm(),
        })),
    ))
    .unwrap();
    let mut rng = fixture::Rng::new(6);
    let mut seen = std::collections::HashSet::new();
    let unseen: Vec<SearchRequest> = (0..1_000)
        .map(|i| words(&mut rng, 2 + (i % 2)))
        .filter(|q| seen.insert(q.clone()))
        .map(|query| SearchRequest {
            query,
            limit: 10,
            ..SearchRequest::default()
        })
        .collect();
    fixture::percentiles(
        "hybrid_search/1m_chunks_top10/query_by_the_model",
        &unseen,
        |r| {
            engine.search(r).unwrap();
        },
    );
}

criterion_group!(benches, hybrid_search);
criterion_main!(benches);
