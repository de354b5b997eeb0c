//! `cargo bench --bench fuzz [-- EXECUTIONS [TARGET]]`: the fuzz targets of
//! `tests/support/fuzz.rs` (JSONL line reader, transcript accumulator, handoff markdown
//! parser, `handoff-index.json` import), ten million mutated inputs each by default, on
//! both cores. Prints executions, crashes and the rate; exits 1 on a crash, writing each
//! crashing input to `target/fuzz-crashes/`.

#[allow(dead_code)]
#[path = "../tests/support/fuzz.rs"]
mod fuzz;

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let executions: u64 = args
        .first()
        .and_then(|a| a.replace('_', "").parse().ok())
        .unwrap_or(10_000_000);
    let only = args.get(1).cloned();
    let mut crashed = false;
    for target in fuzz::targets() {
        if only.as_deref().is_some_and(|o| o != target.name) {
            continue;
        }
        let started = Instant::now();
        // Two workers, each with its own seed and half the inputs.
        let outcomes: Vec<fuzz::Outcome> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..2u64)
                .map(|w| {
                    let target = &target;
                    s.spawn(move || fuzz::fuzz(target, executions / 2, 0x5eed + w))
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let secs = started.elapsed().as_secs_f64();
        let total: u64 = outcomes.iter().map(|o| o.executions).sum();
        let crashes: u64 = outcomes.iter().map(|o| o.crash_count).sum();
        println!(
            "{:<17} {total:>11} executions  {crashes} crashes  {:>6.1} s  {:>9.0}/s",
            target.name,
            secs,
            total as f64 / secs
        );
        for (i, (input, why)) in outcomes.iter().flat_map(|o| &o.crashes).enumerate() {
            crashed = true;
            let dir = std::path::Path::new("target/fuzz-crashes");
            std::fs::create_dir_all(dir).unwrap();
            let file = dir.join(format!("{}-{i}", target.name));
            std::fs::write(&file, input).unwrap();
            println!("  crash: {why} (input in {})", file.display());
        }
    }
    if crashed {
        std::process::exit(1);
    }
}
