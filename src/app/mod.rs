//! What the `eywa` binary's fronts share (the commands in `cli`, the agents' side in
//! `agents`): where the store and the transcripts are and every setting (`config`,
//! [`Paths`]), the client that answers a command from a running server or the store
//! (`client`), and how a node, an edge or a hit reads as a line (`render`).

pub(crate) mod client;
pub(crate) mod config;
pub(crate) mod render;

use std::path::PathBuf;

use eywa::engine::{Embedding, Engine, EngineConfig};

/// Resolved locations and settings: flags over environment over `config.toml` over
/// defaults.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    pub data_dir: PathBuf,
    pub claude_dir: PathBuf,
    pub chunk_idle_days: u32,
    pub min_free_bytes: u64,
    pub staleness_days: Option<[u32; 3]>,
    pub summarizer: Option<eywa::engine::Summarizer>,
    /// `--addr` / `EYWA_ADDR`, when given: the server to ask.
    pub addr: Option<String>,
    /// Every setting, with where it came from.
    pub settings: std::sync::Arc<config::Settings>,
    /// Whether opening the store does its upkeep (see `EngineConfig::upkeep`): not in a
    /// hook, which has under a second.
    pub upkeep: bool,
}

impl Paths {
    /// The paths `settings` name; `addr` is the server to ask, when given.
    pub(crate) fn resolve(addr: Option<&str>, settings: config::Settings) -> Paths {
        Paths {
            data_dir: settings.data_dir.value.clone(),
            claude_dir: settings.claude_dir.value.clone(),
            chunk_idle_days: settings.chunk_idle_days.value,
            min_free_bytes: settings.min_free_mb.value.saturating_mul(1024 * 1024),
            staleness_days: settings.staleness_days.value,
            summarizer: settings.summarizer.value.as_ref().map(|command| {
                eywa::engine::Summarizer {
                    daily_tokens: settings.summarizer_daily_tokens.value,
                    ..eywa::engine::Summarizer::new(command.clone())
                }
            }),
            addr: addr
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(str::to_owned),
            settings: std::sync::Arc::new(settings),
            upkeep: true,
        }
    }

    /// Opens the store, with the installed embedding model (its weights load on the first
    /// embedding; a command that does not search by meaning never reads them).
    pub(crate) fn open_engine(&self) -> Result<Engine, eywa::Error> {
        Engine::open(EngineConfig {
            chunk_idle_days: self.chunk_idle_days,
            min_free_bytes: self.min_free_bytes,
            staleness_days: self.staleness_days,
            summarizer: self.summarizer.clone(),
            upkeep: self.upkeep,
            identity: self.identity(),
            embedding: Embedding::Model(self.model_dir()),
            ..EngineConfig::new(&self.data_dir, &self.claude_dir)
        })
    }

    /// Who this machine's sessions are attributed to.
    pub(crate) fn identity(&self) -> eywa::model::Identity {
        eywa::model::Identity {
            user: self.settings.user.value.clone(),
            machine: self.settings.machine.value.clone(),
        }
    }

    /// Where the embedding model is installed.
    pub(crate) fn model_dir(&self) -> PathBuf {
        eywa::embed::ModelDir::default_path(&self.data_dir)
    }
}

/// A path as the user gave it, `~` at its start standing for `$HOME`
/// ([`eywa::fs::user_path`]); clap's value parser for path arguments.
pub(crate) fn user_path(given: &str) -> Result<PathBuf, String> {
    eywa::fs::user_path(given)
}

/// [`user_path`] for arguments kept as text (a workspace path).
pub(crate) fn user_path_text(given: &str) -> Result<String, String> {
    user_path(given)?
        .into_os_string()
        .into_string()
        .map_err(|p| format!("{p:?} is not UTF-8"))
}

/// A `--user` filter's value: a name as [`eywa::model::Identity::name`] keeps them.
pub(crate) fn user_name(given: &str) -> Result<String, String> {
    eywa::model::Identity::name("user", given)
}

/// A `--machine` filter's value (see [`user_name`]).
pub(crate) fn machine_name(given: &str) -> Result<String, String> {
    eywa::model::Identity::name("machine", given)
}

/// Prints a value as pretty JSON on stdout.
pub(crate) fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}
