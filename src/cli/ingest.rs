//! `eywa ingest`: read new and changed sessions, with progress, and report what was read.

use std::process::ExitCode;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use eywa::engine::Progress;

use eywa::server::{follow, quiet};

use crate::app::Paths;
use crate::app::client::Client;

/// Skipped files a human report names; `--json` names up to 1,000.
const SKIPPED_SHOWN: usize = 20;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
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
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let client = Client::connect(paths)?;
    if args.watch {
        let stop = AtomicBool::new(false);
        let interval = Duration::from_millis(args.interval_ms.max(50));
        match &client {
            Client::Local(local) => {
                let engine = local.engine()?;
                errln!(
                    "eywa: following {} (Ctrl-C stops)",
                    paths.claude_dir.display()
                );
                follow(|| engine.ingest(), quiet, interval, &stop, &|| false);
            }
            Client::Remote(_) => {
                errln!(
                    "eywa: the server at {} follows its Claude dir; asking it to ingest every \
                     {} ms (Ctrl-C stops)",
                    client.server().unwrap_or_default(),
                    interval.as_millis()
                );
                follow(
                    || client.ingest(&mut |_| {}),
                    |e: &anyhow::Error| e.downcast_ref::<eywa::Error>().is_some_and(quiet),
                    interval,
                    &stop,
                    &|| false,
                );
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let report = client.ingest(&mut show_progress())?;
    let embedded = if args.embed {
        Some(super::embed::embed(&client)?)
    } else {
        None
    };
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        if let Some(embedded) = &embedded {
            value["embedded"] = serde_json::to_value(embedded)?;
        }
        crate::app::print_json(&value)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(e) = &embedded {
        outln!(
            "{} chunks into the vector index ({} embedded, the rest from the cache) in {:.1}s",
            e.chunks,
            e.embedded,
            e.seconds
        );
    }
    let c = &report.counts;
    outln!(
        "{} sessions and {} subagent runs: {} episodes, {} entities, {} edges; {} skipped lines",
        c.sessions,
        c.agents,
        c.episodes,
        c.entities,
        c.edges,
        c.skipped_lines
    );
    outln!(
        "{} files: {} read, {} unchanged, {} without messages, {} unreadable ({:.2}s)",
        report.files_scanned,
        report.files_read,
        report.files_unchanged,
        report.files_without_messages,
        report.files_failed,
        report.elapsed.as_secs_f64()
    );
    let summaries = [
        report.summaries_made,
        report.summaries_cached,
        report.summaries_failed,
        report.summaries_capped,
    ];
    if summaries.iter().any(|n| *n > 0) {
        outln!(
            "summarizer: {} handoffs written, {} from its cache, {} kept eywa's (it failed), {} kept eywa's (daily cap)",
            summaries[0],
            summaries[1],
            summaries[2],
            summaries[3]
        );
    }
    if report.files_versioned > 0 {
        outln!(
            "{} files shrank or were rewritten: read as new versions, what earlier versions said kept",
            report.files_versioned
        );
    }
    if report.files_skipped > 0 {
        outln!("read in part or not at all:");
        for f in report.skipped_files.iter().take(SKIPPED_SHOWN) {
            if f.lines > 0 {
                outln!(
                    "  {}: {} lines skipped, first {}",
                    f.path,
                    f.lines,
                    f.reason
                );
            } else {
                outln!("  {}: {}", f.path, f.reason);
            }
        }
        let more = report.files_skipped.saturating_sub(SKIPPED_SHOWN as u64);
        if more > 0 {
            outln!("  and {more} more files (--json lists up to 1,000)");
        }
    }
    if !report.redacted.is_empty() {
        let kinds: Vec<String> = report
            .redacted
            .iter()
            .map(|(kind, n)| format!("{n} {}", kind.as_str()))
            .collect();
        outln!("redacted before storing: {}", kinds.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

/// A one-line progress display on stderr (files, MB, MB/s), when stderr is a terminal and
/// the run takes long enough to need one.
pub(super) fn show_progress() -> impl FnMut(Progress) {
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
