use std::process::ExitCode;

use anyhow::Context;

use super::Paths;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
    /// Server to ask when another process holds the store
    #[arg(long, env = "EYWA_ADDR", default_value = eywa::server::DEFAULT_ADDR, value_name = "HOST:PORT")]
    addr: String,
}

pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let report = match paths.open_engine() {
        Ok(engine) => engine.ingest()?,
        // `eywa serve` holds the store: it ingests its own Claude dir.
        Err(eywa::Error::Storage(eywa_storage::Error::Locked { .. })) => {
            super::with_server(&args.addr, async |c| c.ingest().await)?
        }
        Err(other) => {
            return Err(other)
                .with_context(|| format!("cannot open the store in {}", paths.data_dir.display()));
        }
    };
    if args.json {
        super::print_json(&serde_json::to_value(&report)?)?;
        return Ok(ExitCode::SUCCESS);
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
