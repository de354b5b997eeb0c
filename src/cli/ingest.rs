use std::process::ExitCode;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use eywa::engine::{Engine, Progress};

use super::Paths;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
    /// Keep following the Claude dir, ingesting what changes (Ctrl-C stops)
    #[arg(long)]
    watch: bool,
    /// Milliseconds between looks, with --watch
    #[arg(long, default_value_t = 2_000)]
    interval_ms: u64,
    /// Then embed what was queued for semantic search (needs `eywa model install`)
    #[arg(long, conflicts_with = "watch")]
    embed: bool,
    /// Server to ask when another process holds the store
    #[arg(long, env = "EYWA_ADDR", default_value = eywa::server::DEFAULT_ADDR, value_name = "HOST:PORT")]
    addr: String,
}

pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    if args.watch {
        let engine = super::open_local(paths)?;
        let stop = std::sync::atomic::AtomicBool::new(false);
        eprintln!(
            "eywa: following {} (Ctrl-C stops)",
            paths.claude_dir.display()
        );
        follow(
            &engine,
            Duration::from_millis(args.interval_ms.max(50)),
            &stop,
        );
        return Ok(ExitCode::SUCCESS);
    }
    let opened = if args.embed {
        paths.open_engine_semantic()
    } else {
        paths.open_engine()
    };
    let mut embedded = None;
    let report = match super::open_or_served(paths, opened)? {
        Some(engine) => {
            let report = engine.ingest_with_progress(&mut show_progress())?;
            if args.embed {
                embedded = Some(super::embed::embed(&engine)?);
            }
            report
        }
        // `eywa serve` holds the store: it ingests its own Claude dir.
        None => super::with_server(&args.addr, async |c| c.ingest().await)?,
    };
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        if let Some(embedded) = &embedded {
            value["embedded"] = serde_json::to_value(embedded)?;
        }
        super::print_json(&value)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(e) = &embedded {
        println!(
            "{} chunks into the vector index ({} embedded, the rest from the cache) in {:.1}s",
            e.chunks, e.embedded, e.seconds
        );
    }
    let c = &report.counts;
    println!(
        "{} sessions and {} subagent runs: {} episodes, {} entities, {} edges; {} skipped lines",
        c.sessions, c.agents, c.episodes, c.entities, c.edges, c.skipped_lines
    );
    println!(
        "{} files: {} read, {} unchanged, {} without messages, {} unreadable ({:.2}s)",
        report.files_scanned,
        report.files_read,
        report.files_unchanged,
        report.files_without_messages,
        report.files_failed,
        report.elapsed.as_secs_f64()
    );
    if !report.redacted.is_empty() {
        let kinds: Vec<String> = report
            .redacted
            .iter()
            .map(|(kind, n)| format!("{n} {}", kind.as_str()))
            .collect();
        println!("redacted before storing: {}", kinds.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

/// Ingests whenever the Claude dir changes, every `interval`, until `stop` is set. Each run
/// reads only new and changed files; a failed run is logged and the next one tries again.
pub fn follow(engine: &Engine, interval: Duration, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match engine.ingest() {
            Ok(report) if report.files_read + report.agent_files_read > 0 => tracing::info!(
                files = report.files_read + report.agent_files_read,
                episodes = report.counts.episodes,
                seconds = report.elapsed.as_secs_f64(),
                "ingested changes"
            ),
            Ok(_) => {}
            Err(eywa::Error::ClaudeDirMissing { .. }) => {}
            Err(e) => tracing::warn!(error = %e, "ingest failed; trying again"),
        }
        // Sleep in slices so a stop is seen promptly.
        let mut waited = Duration::ZERO;
        while waited < interval && !stop.load(Ordering::Relaxed) {
            let step = (interval - waited).min(Duration::from_millis(50));
            std::thread::sleep(step);
            waited += step;
        }
    }
}

/// A one-line progress display on stderr (files, MB, MB/s), when stderr is a terminal and
/// the run takes long enough to need one.
pub fn show_progress() -> impl FnMut(Progress) {
    use std::io::{IsTerminal, Write};
    let terminal = std::io::stderr().is_terminal();
    move |p: Progress| {
        if !terminal || p.elapsed < Duration::from_millis(500) {
            return;
        }
        let mb = p.bytes_read as f64 / 1e6;
        let rate = mb / p.elapsed.as_secs_f64().max(1e-3);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2Kingesting: {}/{} files, {mb:.0} MB, {rate:.0} MB/s",
            p.files_done, p.files_total
        );
        if p.files_done == p.files_total {
            let _ = writeln!(err);
        }
    }
}
