//! Full-text search (BM25, Tantivy) over a synthetic index of a million passages: the
//! text half of `eywa search`, collecting the 250 best passages (what a 10-session search
//! collects before grouping).

mod fixture;

use criterion::{Criterion, criterion_group, criterion_main};
use eywa::index::{TextDoc, TextIndex, TextQuery};

const DOCS: u64 = 1_000_000;
const SESSIONS: u64 = 20_000;
const PROJECTS: u64 = 200;
const VOCABULARY: u64 = 50_000;
const VERSION: u32 = 1;

/// The index, generated once into `target/bench-data/` and reused.
fn index() -> TextIndex {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("target/bench-data/text-{DOCS}-v{VERSION}"));
    let done = dir.join("complete");
    if done.exists() {
        return TextIndex::open(&dir.join("index")).unwrap().0;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let started = std::time::Instant::now();
    let (index, _) = TextIndex::open(&dir.join("index")).unwrap();
    let mut rng = fixture::Rng::new(21);
    let kinds = ["user_message", "assistant_response", "tool_call"];
    let mut batch = Vec::with_capacity(10_000);
    for d in 0..DOCS {
        let session = rng.below(SESSIONS);
        let words = 10 + rng.below(40);
        let text: Vec<String> = (0..words)
            .map(|_| fixture::word(rng.skewed(VOCABULARY)))
            .collect();
        batch.push(TextDoc {
            id: format!("d{d}"),
            source: format!("/s/{session}.jsonl"),
            session: format!("{session:08x}-0000-4000-8000-{session:012x}"),
            project: fixture::word(session % PROJECTS),
            kind: kinds[(d % 3) as usize].to_owned(),
            agent: None,
            timestamp: 1_750_000_000_000 + d as i64 * 30_000,
            text: text.join(" "),
            message: None,
            lead: 0,
            page: None,
        });
        if batch.len() == 10_000 {
            index.put(&batch).unwrap();
            batch.clear();
        }
    }
    index.put(&batch).unwrap();
    index.commit().unwrap();
    eprintln!(
        "text_search: indexed {DOCS} passages in {:.1?}",
        started.elapsed()
    );
    std::fs::write(&done, "").unwrap();
    index
}

fn text_search(c: &mut Criterion) {
    let index = index();
    assert_eq!(index.len(), DOCS);
    let mut rng = fixture::Rng::new(5);
    // Two or three words: common ones drawn with the vocabulary's skew, as people type.
    let queries: Vec<TextQuery> = (0..2_000)
        .map(|i| {
            let n = 2 + rng.below(2);
            let words: Vec<String> = (0..n)
                .map(|_| fixture::word(rng.skewed(VOCABULARY)))
                .collect();
            TextQuery {
                query: words.join(" "),
                filter: eywa::model::SearchFilter {
                    projects: if i % 4 == 0 {
                        vec![fixture::word(rng.below(PROJECTS))]
                    } else {
                        Vec::new()
                    },
                    ..Default::default()
                },
                limit: 250,
            }
        })
        .collect();
    let mut group = c.benchmark_group("text_search");
    let mut i = 0;
    group.bench_function("1m_passages_top250", |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            index.search(&queries[i]).unwrap()
        });
    });
    group.finish();
    let (plain, filtered): (Vec<_>, Vec<_>) = queries
        .iter()
        .cloned()
        .partition(|q| q.filter.projects.is_empty());
    fixture::percentiles("text_search/1m_passages_top250", &plain, |q| {
        index.search(q).unwrap();
    });
    fixture::percentiles(
        "text_search/1m_passages_top250/one_project",
        &filtered,
        |q| {
            index.search(q).unwrap();
        },
    );
    // What `eywa search` runs: the passages without snippets (cut later for the few
    // sessions returned).
    fixture::percentiles("text_search/1m_passages_top250/no_snippets", &plain, |q| {
        index.search_passages(q).unwrap();
    });
}

criterion_group!(benches, text_search);
criterion_main!(benches);
