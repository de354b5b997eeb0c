//! `eywa embed`: embed what waits in the semantic backlog, with progress.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Instant;

use eywa::engine::EmbedReport;

use crate::app::Paths;
use crate::app::client::Client;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let report = embed(&Client::connect(paths)?)?;
    if args.json {
        crate::app::print_json(&serde_json::to_value(&report)?)?;
    } else {
        outln!(
            "{} chunks into the vector index ({} embedded, {} from the cache) in {:.1}s",
            report.chunks,
            report.embedded,
            report.chunks - report.embedded,
            report.seconds
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Embeds the whole backlog, drawing chunks done, left and per second on stderr when it
/// is a terminal and the work runs here.
pub(super) fn embed(client: &Client) -> anyhow::Result<EmbedReport> {
    let terminal = std::io::stderr().is_terminal();
    let started = Instant::now();
    let mut drawn = false;
    let report = client.embed(&mut |done, left| {
        if !terminal {
            return;
        }
        let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-3);
        let _ = write!(
            std::io::stderr().lock(),
            "\r\x1b[2Kembedding: {done} chunks done, {left} left, {rate:.0}/s"
        );
        drawn = true;
    })?;
    if drawn {
        let _ = writeln!(std::io::stderr().lock());
    }
    Ok(report)
}
