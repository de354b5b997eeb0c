//! `eywa check`, `eywa backup` and `eywa restore`: the store verified and repaired, copied
//! while in use, and brought back.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use eywa::server::Announcement;

use crate::app::Paths;
use crate::app::client::Client;

#[derive(Debug, clap::Args)]
pub(super) struct CheckArgs {
    /// Rebuild what is derived (graph indexes, counters, semantic memory's listing, the
    /// text index) and have transcripts whose archive is damaged read again. Needs the
    /// store alone: stop `eywa serve` first
    #[arg(long)]
    repair: bool,
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub(super) struct BackupArgs {
    /// The folder to copy the store to: missing or empty (with a server running, a folder
    /// on its machine)
    #[arg(value_parser = crate::app::user_path)]
    dir: PathBuf,
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub(super) struct RestoreArgs {
    /// A folder `eywa backup` wrote
    #[arg(value_parser = crate::app::user_path)]
    dir: PathBuf,
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
}

pub(super) fn check(paths: &Paths, args: CheckArgs) -> anyhow::Result<ExitCode> {
    let report = Client::connect(paths)?.check(args.repair)?;
    if args.json {
        crate::app::print_json(&serde_json::to_value(&report)?)?;
    } else {
        for (area, problems) in [
            ("graph", &report.graph),
            ("archive", &report.archive),
            ("semantic", &report.semantic),
            ("text", &report.text),
        ] {
            for problem in problems {
                outln!("{area}: {problem}");
            }
        }
        for done in &report.repaired {
            outln!("repaired: {done}");
        }
        outln!(
            "{} problems; {} archived transcripts read back and hashed ({:.2}s)",
            report.problems,
            report.blobs_checked,
            report.seconds
        );
    }
    let clean = report.problems == 0 || (args.repair && report.unrepaired == 0);
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub(super) fn backup(paths: &Paths, args: BackupArgs) -> anyhow::Result<ExitCode> {
    let dir = std::path::absolute(&args.dir)
        .with_context(|| format!("{}: not a path", args.dir.display()))?;
    let report = Client::connect(paths)?.backup(&dir)?;
    if args.json {
        crate::app::print_json(&serde_json::to_value(&report)?)?;
    } else {
        outln!(
            "backed up {} sessions ({} episodes, {:.1} MiB) to {} in {:.2}s",
            report.manifest.sessions,
            report.manifest.episodes,
            report.manifest.bytes as f64 / (1024.0 * 1024.0),
            report.dir,
            report.seconds
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn restore(paths: &Paths, args: RestoreArgs) -> anyhow::Result<ExitCode> {
    if let Some(server) = Announcement::read_live(&paths.data_dir) {
        anyhow::bail!(
            "eywa serve (pid {}, on {}) holds the store in {}: stop it before restoring",
            server.pid,
            server.addr,
            paths.data_dir.display()
        );
    }
    // Another process (an `eywa ingest --watch`) may hold the store: then not now.
    let store = paths.data_dir.join("store");
    if store.exists() {
        eywa::engine::ensure_store_free(&store)
            .with_context(|| format!("cannot restore over {}", store.display()))?;
    }
    let (manifest, aside) = eywa::engine::restore(&args.dir, &paths.data_dir)?;
    let engine = paths.open_engine()?;
    let problems = engine.graph().check()?;
    let counts = engine.graph().counts()?;
    if args.json {
        crate::app::print_json(&serde_json::json!({
            "restored": args.dir.display().to_string(),
            "created": manifest.created,
            "sessions": counts.sessions,
            "episodes": counts.episodes,
            "previous_store": aside.as_ref().map(|p| p.display().to_string()),
            "problems": problems,
        }))?;
    } else {
        outln!(
            "restored {} sessions ({} episodes) from the backup of {}",
            counts.sessions,
            counts.episodes,
            manifest.created
        );
        if let Some(aside) = &aside {
            outln!("the store it replaced is in {}", aside.display());
        }
        for problem in &problems {
            outln!("graph: {problem}");
        }
    }
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
