//! The embedder's speed: all-MiniLM-L6-v2 on the CPU (eywa's kernels where the CPU has
//! AVX-512, and through candle's operations for comparison), texts of 64 and of 256 tokens
//! (the longest it reads) in batches of 32, and one short query at a time (what a search
//! waits for), alone and while batches are embedded beside it. Needs the model installed
//! (see `fixture::minilm`).

mod fixture;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eywa::embed::{Embedder, MiniLm};

/// Prose to cut texts from.
const PROSE: &str = "The session started with a failing test in the checkout service. The \
    assistant read the coupon module, found that totals were rounded before discounts were \
    applied, and moved the rounding to the end. It then ran the suite again, saw two more \
    failures in the tax calculation, and traced them to a currency conversion that used \
    floating point. After switching to integer cents the tests passed, and the user asked \
    for a short summary of the change, the files touched and what to watch in production.";

/// `n` texts of exactly `tokens` tokens ([CLS] and [SEP] included), each different.
fn texts(model: &MiniLm, n: usize, tokens: usize) -> Vec<String> {
    let words: Vec<&str> = PROSE.split_whitespace().collect();
    (0..n)
        .map(|i| {
            let mut out: Vec<String> = vec![format!("note{i}")];
            let mut w = i;
            while model.count_tokens(&out.join(" ")).unwrap() < tokens {
                out.push(words[w % words.len()].to_owned());
                w += 1;
            }
            while model.count_tokens(&out.join(" ")).unwrap() > tokens {
                out.pop();
            }
            // "and" is one token: pad to the exact count (longer texts are cut at 256).
            while model.count_tokens(&out.join(" ")).unwrap() < tokens {
                out.push("and".to_owned());
            }
            out.join(" ")
        })
        .collect()
}

fn embed_throughput(c: &mut Criterion) {
    let model = fixture::minilm();
    // The same model through candle's operations: what eywa's kernels are measured against.
    let unpacked = fixture::minilm_unpacked();
    let mut group = c.benchmark_group("embed_throughput");
    group.sample_size(10);
    for tokens in [64, 256] {
        let batch = texts(&model, 32, tokens);
        assert!(
            batch
                .iter()
                .all(|t| model.count_tokens(t).unwrap() == tokens)
        );
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        group.throughput(Throughput::Elements(batch.len() as u64));
        group.bench_function(format!("{tokens}_tokens_batch_32"), |b| {
            b.iter(|| model.embed(&refs).unwrap());
        });
        let started = std::time::Instant::now();
        let rounds = 3;
        for _ in 0..rounds {
            model.embed(&refs).unwrap();
        }
        let rate = (rounds * refs.len()) as f64 / started.elapsed().as_secs_f64();
        println!("embed_throughput/{tokens}_tokens: {rate:.1} texts/s");
        let started = std::time::Instant::now();
        for _ in 0..rounds {
            unpacked.embed(&refs).unwrap();
        }
        let rate = (rounds * refs.len()) as f64 / started.elapsed().as_secs_f64();
        println!("embed_throughput/{tokens}_tokens/candle: {rate:.1} texts/s");
    }
    group.finish();
    let queries: Vec<String> = (0..200)
        .map(|i| format!("why did the coupon totals round wrong in session {i}"))
        .collect();
    fixture::percentiles("embed_throughput/one_query", &queries, |q| {
        model.embed(&[q.as_str()]).unwrap();
    });
    fixture::percentiles("embed_throughput/one_query/candle", &queries, |q| {
        unpacked.embed(&[q.as_str()]).unwrap();
    });
    // A query while batches of 64 tokens are embedded without pause beside it: on the
    // shared pool, and on the background pool `eywa serve`'s embedder uses.
    let batch = texts(&model, 32, 64);
    let batch: Vec<&str> = batch.iter().map(String::as_str).collect();
    let background = eywa::embed::background_pool().unwrap();
    for (label, pool) in [
        ("beside_embedding_on_the_shared_pool", None),
        ("beside_background_embedding", Some(&background)),
    ] {
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let embed = || model.embed(&batch).unwrap();
                    match pool {
                        Some(pool) => pool.install(embed),
                        None => embed(),
                    };
                }
            });
            fixture::percentiles(
                &format!("embed_throughput/one_query/{label}"),
                &queries,
                |q| {
                    model.embed(&[q.as_str()]).unwrap();
                },
            );
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
    }
    let started = std::time::Instant::now();
    for _ in 0..3 {
        background.install(|| model.embed(&batch).unwrap());
    }
    println!(
        "embed_throughput/64_tokens/background_pool: {:.1} texts/s",
        (3 * batch.len()) as f64 / started.elapsed().as_secs_f64()
    );
}

criterion_group!(benches, embed_throughput);
criterion_main!(benches);
