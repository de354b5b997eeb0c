//! eywa embedded in a program: ingest a Claude Code home into a temporary store and rank
//! handoffs, no server involved.
//!
//! ```sh
//! cargo run --example embedded -- ~/.claude "auth refactor"
//! ```

use eywa::engine::{Engine, EngineConfig};
use eywa::retrieve::GetOptions;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let claude_dir = args.next().ok_or("usage: embedded <claude dir> [query…]")?;
    let query: Vec<String> = args.collect();

    let engine = Engine::open(EngineConfig::temporary(claude_dir))?;
    let report = engine.ingest()?;
    println!(
        "{} sessions, {} entities, {} edges",
        report.counts.sessions, report.counts.entities, report.counts.edges
    );
    let options = GetOptions {
        days_back: 3650,
        ..GetOptions::default()
    };
    for hit in &engine.get_handoffs(&query.join(" "), &options)?.hits {
        let h = &hit.handoff;
        println!("{}  {:<24} {}", h.date, h.projects.join(","), h.headline);
    }
    Ok(())
}
