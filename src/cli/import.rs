//! `eywa import`: read a Python Eywa folder into the store.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::app::Paths;
use crate::app::client::Client;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The Eywa data folder (its `handoff-index.json` and `handoffs/`)
    #[arg(value_parser = crate::app::user_path)]
    dir: PathBuf,
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let report = Client::connect(paths)?.import(&args.dir)?;
    if args.json {
        crate::app::print_json(&serde_json::to_value(&report)?)?;
    } else {
        outln!(
            "{} handoffs found: {} imported, {} already imported, {} known from transcripts, {} unreadable",
            report.found,
            report.imported,
            report.already_imported,
            report.known,
            report.failed.len()
        );
        for (file, why) in &report.failed {
            errln!("  {file}: {why}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
