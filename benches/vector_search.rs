//! Vector search (usearch HNSW, cosine, 384 dimensions), in two parts.
//!
//! Recall: the HNSW index against exact search on 20,480 real all-MiniLM-L6-v2 vectors
//! (32-word windows of the transcripts in `../shared`, then of the Markdown files and doc
//! comments of the crates in the cargo registry), queried with the 997 LoCoMo questions. Embedded once into
//! `target/bench-data/minilm-20k-v1/` (about 20 minutes on 2 cores); the bench fails if
//! recall@10 is under 0.95.
//!
//! Latency: a million synthetic low-rank vectors, indexed once into
//! `target/bench-data/vectors-1m-v3/`: the top 250 (what a 10-session search collects), the
//! top 10, a filter keeping a tenth of the keys (searched in the graph), and exact search
//! among the 10,000 keys of one project (what eywa does for a filter that keeps few).

mod fixture;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use eywa::embed::Embedder;
use eywa::index::{FlatIndex, HnswIndex, VectorIndex};

const DIM: usize = 384;
const REAL: usize = 20_480;
const MILLION: usize = 1_000_000;
/// Words of one text of the recall set.
const WINDOW: usize = 32;

fn data_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/bench-data")
        .join(name)
}

fn write_f32(path: &Path, rows: &[Vec<f32>]) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for v in rows {
        for x in v {
            out.write_all(&x.to_le_bytes()).unwrap();
        }
    }
}

fn read_f32(path: &Path) -> Vec<Vec<f32>> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(4 * DIM)
        .map(|row| {
            row.chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                .collect()
        })
        .collect()
}

/// Every string of 40 characters or more inside a JSON value.
fn strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) if s.len() >= 40 => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        serde_json::Value::Object(o) => o.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

fn files(dir: &Path, name: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files(&path, name, out);
        } else if name(&path) {
            out.push(path);
        }
    }
}

/// 32-word windows of real text, deduplicated, in a fixed order: the messages and tool
/// results of `../shared`'s transcripts, then the Markdown files of the crates in the
/// registry, then their doc comments.
fn real_texts(n: usize) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = Vec::new();
    let jsonl = |p: &Path| p.extension().is_some_and(|e| e == "jsonl");
    files(&root.join("../shared/corpus"), &jsonl, &mut sources);
    files(
        &root.join("../shared/eval/locomo-dev"),
        &jsonl,
        &mut sources,
    );
    let cargo = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
    let shared = sources.len();
    let markdown = |p: &Path| p.extension().is_some_and(|e| e == "md");
    files(&cargo.join("registry/src"), &markdown, &mut sources);
    let rust = |p: &Path| p.extension().is_some_and(|e| e == "rs");
    files(&cargo.join("registry/src"), &rust, &mut sources);
    eprintln!(
        "vector_search: {shared} transcripts, {} crate files from {}",
        sources.len() - shared,
        cargo.display()
    );
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for path in sources {
        let mut texts = Vec::new();
        if path.extension().is_some_and(|e| e == "jsonl") {
            for line in std::io::BufReader::new(std::fs::File::open(&path).unwrap()).lines() {
                let Ok(line) = line else { continue };
                let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                    continue;
                };
                for field in ["message", "toolUseResult"] {
                    if let Some(v) = v.get(field) {
                        strings(v, &mut texts);
                    }
                }
            }
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            if path.extension().is_some_and(|e| e == "rs") {
                // Doc comments only: prose, not code.
                let docs: Vec<&str> = text
                    .lines()
                    .filter_map(|l| {
                        let l = l.trim_start();
                        l.strip_prefix("///").or_else(|| l.strip_prefix("//!"))
                    })
                    .filter(|l| !l.trim_start().starts_with("```"))
                    .collect();
                texts.push(docs.join(" "));
            } else {
                texts.push(text);
            }
        }
        for text in texts {
            let words: Vec<&str> = text.split_whitespace().collect();
            for window in words.chunks(WINDOW).filter(|w| w.len() >= 8) {
                let window = window.join(" ");
                if seen.insert(window.clone()) {
                    out.push(window);
                    if out.len() == n {
                        return out;
                    }
                }
            }
        }
    }
    panic!("only {} distinct text windows found, {n} needed", out.len());
}

/// The real vectors and the query vectors, embedded once.
fn real_vectors() -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let dir = data_dir("minilm-20k-v1");
    if dir.join("complete").exists() {
        return (
            read_f32(&dir.join("vectors.f32")),
            read_f32(&dir.join("queries.f32")),
        );
    }
    std::fs::create_dir_all(&dir).unwrap();
    let model = fixture::minilm();
    let texts = real_texts(REAL);
    let questions: Vec<String> = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/eval/locomo-dev/questions.jsonl"),
    )
    .expect("../shared/eval/locomo-dev/questions.jsonl (the LoCoMo questions are the queries)")
    .lines()
    .map(|l| {
        serde_json::from_str::<serde_json::Value>(l).unwrap()["question"]
            .as_str()
            .unwrap()
            .to_owned()
    })
    .collect();
    let started = std::time::Instant::now();
    let mut vectors = Vec::with_capacity(texts.len());
    for (i, batch) in texts.chunks(64).enumerate() {
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        vectors.extend(model.embed(&refs).unwrap());
        if i % 20 == 0 {
            eprintln!(
                "vector_search: embedded {} of {} texts in {:.0?}",
                vectors.len(),
                texts.len(),
                started.elapsed()
            );
        }
    }
    let refs: Vec<&str> = questions.iter().map(String::as_str).collect();
    let queries = model.embed(&refs).unwrap();
    eprintln!(
        "vector_search: embedded {} texts and {} queries in {:.1?}",
        texts.len(),
        queries.len(),
        started.elapsed()
    );
    let mut list = std::fs::File::create(dir.join("texts.jsonl")).unwrap();
    for t in &texts {
        writeln!(list, "{}", serde_json::to_string(t).unwrap()).unwrap();
    }
    write_f32(&dir.join("vectors.f32"), &vectors);
    write_f32(&dir.join("queries.f32"), &queries);
    std::fs::write(dir.join("complete"), "").unwrap();
    (vectors, queries)
}

/// Mean share of the exact top `k` that the index returns.
fn recall(index: &dyn VectorIndex, exact: &dyn VectorIndex, queries: &[Vec<f32>], k: usize) -> f64 {
    let mut found = 0usize;
    for q in queries {
        let want: std::collections::HashSet<u64> = exact
            .search(q, k, &|_| true)
            .unwrap()
            .into_iter()
            .map(|(key, _)| key)
            .collect();
        found += index
            .search(q, k, &|_| true)
            .unwrap()
            .iter()
            .filter(|(key, _)| want.contains(key))
            .count();
    }
    found as f64 / (queries.len() * k) as f64
}

fn real_recall() {
    let (vectors, queries) = real_vectors();
    let items: Vec<(u64, Vec<f32>)> = vectors
        .into_iter()
        .enumerate()
        .map(|(i, v)| (i as u64, v))
        .collect();
    let started = std::time::Instant::now();
    let mut hnsw = HnswIndex::new(DIM).unwrap();
    hnsw.extend(&items).unwrap();
    let built = started.elapsed();
    let mut flat = FlatIndex::new(DIM);
    for (k, v) in &items {
        flat.upsert(*k, v).unwrap();
    }
    let r10 = recall(&hnsw, &flat, &queries, 10);
    let r100 = recall(&hnsw, &flat, &queries, 100);
    println!(
        "vector_search/recall: {} real MiniLM vectors (built in {built:.1?}), {} queries: recall@10={r10:.4} recall@100={r100:.4}",
        items.len(),
        queries.len()
    );
    assert!(r10 >= 0.95, "recall@10 {r10:.4} is under 0.95");
}

/// The million synthetic vectors, indexed once; and 1,000 queries of the same kind.
fn million() -> (HnswIndex, Vec<Vec<f32>>) {
    let dir = data_dir("vectors-1m-v3");
    let file = dir.join("index.usearch");
    let queries: Vec<Vec<f32>> = fixture::low_rank_vectors(1_000, DIM, 64, 99).collect();
    if dir.join("complete").exists() {
        return (HnswIndex::load(&file, DIM).unwrap(), queries);
    }
    std::fs::create_dir_all(&dir).unwrap();
    let started = std::time::Instant::now();
    let mut index = HnswIndex::new(DIM).unwrap();
    let mut batch = Vec::with_capacity(50_000);
    for (i, v) in fixture::low_rank_vectors(MILLION, DIM, 64, 7).enumerate() {
        batch.push((i as u64, v));
        if batch.len() == 50_000 {
            index.extend(&batch).unwrap();
            batch.clear();
            eprintln!(
                "vector_search: indexed {} vectors in {:.0?}",
                i + 1,
                started.elapsed()
            );
        }
    }
    index.extend(&batch).unwrap();
    eprintln!(
        "vector_search: indexed {MILLION} vectors in {:.1?}",
        started.elapsed()
    );
    index.save(&file).unwrap();
    std::fs::write(dir.join("complete"), "").unwrap();
    (index, queries)
}

fn vector_search(c: &mut Criterion) {
    real_recall();
    let (index, queries) = million();
    assert_eq!(index.len(), MILLION);
    println!(
        "vector_search: index of {MILLION} in {:.0} MiB of memory",
        index.memory_usage() as f64 / (1 << 20) as f64
    );
    let mut group = c.benchmark_group("vector_search");
    let mut i = 0;
    group.bench_function("1m_top250", |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            index.search(&queries[i], 250, &|_| true).unwrap()
        });
    });
    group.bench_function("1m_top10", |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            index.search(&queries[i], 10, &|_| true).unwrap()
        });
    });
    group.finish();
    fixture::percentiles("vector_search/1m_top250", &queries, |q| {
        index.search(q, 250, &|_| true).unwrap();
    });
    fixture::percentiles("vector_search/1m_top10", &queries, |q| {
        index.search(q, 10, &|_| true).unwrap();
    });
    fixture::percentiles("vector_search/1m_top250_filter_tenth", &queries, |q| {
        index.search(q, 250, &|k| k % 10 == 3).unwrap();
    });
    let project: Vec<u64> = (0..10_000u64).map(|k| k * 97 + 5).collect();
    fixture::percentiles("vector_search/1m_top250_among_10k", &queries, |q| {
        index
            .search_among(q, 250, &mut project.iter().copied())
            .unwrap();
    });
    // Recall at this scale, against exact search, on 100 of the queries.
    let exact_sample = &queries[..100];
    let mut found = 0;
    let vectors: Vec<Vec<f32>> = fixture::low_rank_vectors(MILLION, DIM, 64, 7).collect();
    for q in exact_sample {
        let qn: Vec<f32> = {
            let n = q.iter().map(|x| x * x).sum::<f32>().sqrt();
            q.iter().map(|x| x / n).collect()
        };
        let mut scored: Vec<(f32, u64)> = vectors
            .iter()
            .enumerate()
            .map(|(k, v)| {
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                (
                    v.iter().zip(&qn).map(|(a, b)| a * b).sum::<f32>() / n,
                    k as u64,
                )
            })
            .collect();
        scored.select_nth_unstable_by(9, |a, b| b.0.total_cmp(&a.0));
        let want: std::collections::HashSet<u64> = scored[..10].iter().map(|s| s.1).collect();
        found += index
            .search(q, 10, &|_| true)
            .unwrap()
            .iter()
            .filter(|(k, _)| want.contains(k))
            .count();
    }
    println!(
        "vector_search/1m recall@10 on 100 queries: {:.3}",
        found as f64 / 1000.0
    );
}

criterion_group!(benches, vector_search);
criterion_main!(benches);
