//! Settings, resolved in one place: defaults, then `<data>/config.toml`, then `EYWA_*`
//! variables, then flags, each later one winning; `eywa config show` prints them with
//! where each came from.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::ArgMatches;
use clap::parser::ValueSource;
use serde::Deserialize;

use super::Paths;

/// The file's name in the data dir.
pub(crate) const FILE_NAME: &str = "config.toml";

/// What `config.toml` may say. Unknown keys are an error, so a typo is not ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    claude_dir: Option<String>,
    chunk_idle_days: Option<u32>,
    min_free_mb: Option<u64>,
    /// Ages in days at which context says it may be stale, is stale, is old: three
    /// rising numbers, or `[]` for no notices.
    staleness_days: Option<Vec<u32>>,
    /// A command that writes handoffs, and the tokens it may spend a day.
    summarizer: Option<String>,
    summarizer_daily_tokens: Option<u64>,
    #[serde(default)]
    serve: ServeFile,
    #[serde(default)]
    team: TeamFile,
}

/// `[team]`: who this machine's sessions are attributed to.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TeamFile {
    user: Option<String>,
    machine: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServeFile {
    listen: Option<String>,
    watch_interval_ms: Option<u64>,
    model_install: Option<String>,
}

/// Where a setting's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Source {
    Default,
    File,
    Env,
    Flag,
}

impl Source {
    fn as_str(self) -> &'static str {
        match self {
            Source::Default => "default",
            Source::File => "config.toml",
            Source::Env => "environment",
            Source::Flag => "flag",
        }
    }
}

/// A resolved value and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Setting<T> {
    pub value: T,
    pub source: Source,
}

/// Every setting, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub data_dir: Setting<PathBuf>,
    /// The config file, and whether it exists.
    pub file: PathBuf,
    pub file_exists: bool,
    pub claude_dir: Setting<PathBuf>,
    pub chunk_idle_days: Setting<u32>,
    pub min_free_mb: Setting<u64>,
    /// Staleness notice thresholds; `None`: no notices.
    pub staleness_days: Setting<Option<[u32; 3]>>,
    /// The command that writes handoffs; `None`: eywa builds them.
    pub summarizer: Setting<Option<String>>,
    pub summarizer_daily_tokens: Setting<u64>,
    /// Where `serve` listens.
    pub listen: Setting<String>,
    pub watch_interval_ms: Setting<u64>,
    pub model_install: Setting<String>,
    /// Who sessions ingested here are attributed to, and on which machine.
    pub user: Setting<String>,
    pub machine: Setting<String>,
}

/// A flag's value, when the command line or its variable gave it.
fn given<T: Clone + Send + Sync + 'static>(
    matches: Option<&ArgMatches>,
    id: &str,
) -> Option<Setting<T>> {
    let matches = matches?;
    let source = match matches.value_source(id)? {
        ValueSource::CommandLine => Source::Flag,
        ValueSource::EnvVariable => Source::Env,
        _ => return None,
    };
    let value = matches.get_one::<T>(id)?.clone();
    Some(Setting { value, source })
}

/// A variable's value, for settings whose flag the command does not take.
fn variable<T>(
    name: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> anyhow::Result<Option<Setting<T>>> {
    match std::env::var(name) {
        Ok(text) if !text.trim().is_empty() => {
            let value = parse(text.trim()).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
            Ok(Some(Setting {
                value,
                source: Source::Env,
            }))
        }
        _ => Ok(None),
    }
}

fn from_file<T>(value: Option<T>) -> Option<Setting<T>> {
    value.map(|value| Setting {
        value,
        source: Source::File,
    })
}

fn default<T>(value: T) -> Setting<T> {
    Setting {
        value,
        source: Source::Default,
    }
}

fn number<T: std::str::FromStr>(text: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    text.parse().map_err(|e: T::Err| format!("{text:?}: {e}"))
}

impl Settings {
    /// Resolves every setting from the parsed command line (`matches`; `serve` for the
    /// serve command's own flags, when it runs), the environment and the data dir's
    /// `config.toml`.
    pub(crate) fn resolve(
        matches: &ArgMatches,
        serve: Option<&ArgMatches>,
    ) -> anyhow::Result<Settings> {
        let home = || {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
                .context("HOME is not set: set EYWA_DATA_DIR and EYWA_CLAUDE_DIR")
        };
        let data_dir = match given::<PathBuf>(Some(matches), "data_dir") {
            Some(dir) => dir,
            None => default(home()?.join(".eywa")),
        };
        let file = data_dir.value.join(FILE_NAME);
        let (read, file_exists) = read_file(&file)?;
        // Python Eywa's EYWA_SESSIONS_DIR names the projects folder inside it.
        let sessions_dir = variable("EYWA_SESSIONS_DIR", |text| {
            let projects = super::user_path(text)?;
            match projects.file_name() {
                Some(name) if name == "projects" => projects
                    .parent()
                    .map(std::path::Path::to_path_buf)
                    .ok_or_else(|| "it has no parent folder".to_owned()),
                _ => Err(format!(
                    "`{text}` is not a Claude Code projects folder (…/projects): set \
                     EYWA_CLAUDE_DIR to the folder that holds `projects` instead"
                )),
            }
        })?;
        let claude_dir = match given::<PathBuf>(Some(matches), "claude_dir") {
            Some(dir) => dir,
            None if sessions_dir.is_some() => sessions_dir.expect("just checked"),
            None => match read.claude_dir {
                Some(dir) => Setting {
                    value: super::user_path(&dir)
                        .map_err(|e| anyhow::anyhow!("{}: claude_dir: {e}", file.display()))?,
                    source: Source::File,
                },
                None => default(home()?.join(".claude")),
            },
        };
        let chunk_idle_days = given(Some(matches), "chunk_idle_days")
            .or_else(|| from_file(read.chunk_idle_days))
            .unwrap_or_else(|| default(eywa::engine::EngineConfig::DEFAULT_CHUNK_IDLE_DAYS));
        let min_free_mb = given(Some(matches), "min_free_mb")
            .or_else(|| from_file(read.min_free_mb))
            .unwrap_or_else(|| default(64));
        let staleness_days = match variable("EYWA_STALENESS_DAYS", staleness_thresholds)? {
            Some(set) => set,
            None => match read.staleness_days {
                Some(days) => Setting {
                    value: thresholds(&days)
                        .map_err(|e| anyhow::anyhow!("{}: staleness_days: {e}", file.display()))?,
                    source: Source::File,
                },
                None => default(Some(eywa::engine::EngineConfig::DEFAULT_STALENESS_DAYS)),
            },
        };
        let summarizer = given::<String>(Some(matches), "summarizer")
            .filter(|c| !c.value.trim().is_empty())
            .or_else(|| from_file(read.summarizer.filter(|c| !c.trim().is_empty())))
            .map_or_else(
                || default(None),
                |s| Setting {
                    value: Some(s.value),
                    source: s.source,
                },
            );
        let summarizer_daily_tokens = variable("EYWA_SUMMARIZER_DAILY_TOKENS", number)?
            .or_else(|| from_file(read.summarizer_daily_tokens))
            .unwrap_or_else(|| default(eywa::engine::Summarizer::DEFAULT_DAILY_TOKENS));
        let listen = given::<String>(Some(matches), "addr")
            .filter(|a| !a.value.trim().is_empty())
            .or_else(|| from_file(read.serve.listen))
            .unwrap_or_else(|| default(eywa::server::DEFAULT_ADDR.to_owned()));
        // The serve command's flags, or (any other command: `config show`) their variables.
        let watch_interval_ms = match serve {
            Some(m) => given(Some(m), "watch_interval_ms"),
            None => variable("EYWA_WATCH_INTERVAL_MS", number)?,
        }
        .or_else(|| from_file(read.serve.watch_interval_ms))
        .unwrap_or_else(|| default(2_000));
        let install = match serve {
            Some(m) => given(Some(m), "model_install"),
            None => variable("EYWA_MODEL_INSTALL", model_install)?,
        };
        let model_install = match install {
            Some(given) => given,
            None => match read.serve.model_install {
                Some(value) => Setting {
                    value: model_install(&value).map_err(|e| {
                        anyhow::anyhow!("{}: serve.model_install: {e}", file.display())
                    })?,
                    source: Source::File,
                },
                None => default("auto".to_owned()),
            },
        };
        let local = eywa::host::local_identity();
        let name = |what: &'static str, var: &str, file_value: Option<String>, fallback: String| {
            let named = |text: &str| eywa::model::Identity::name(what, text);
            anyhow::Ok(match variable(var, named)? {
                Some(set) => set,
                None => match file_value {
                    Some(text) => Setting {
                        value: named(&text)
                            .map_err(|e| anyhow::anyhow!("{}: team.{what}: {e}", file.display()))?,
                        source: Source::File,
                    },
                    None => default(fallback),
                },
            })
        };
        let user = name("user", "EYWA_USER", read.team.user, local.user)?;
        let machine = name("machine", "EYWA_MACHINE", read.team.machine, local.machine)?;
        Ok(Settings {
            data_dir,
            file,
            file_exists,
            claude_dir,
            chunk_idle_days,
            min_free_mb,
            staleness_days,
            summarizer,
            summarizer_daily_tokens,
            listen,
            watch_interval_ms,
            model_install,
            user,
            machine,
        })
    }

    /// The rows `config show` prints: (key, value, source).
    fn rows(&self) -> Vec<(&'static str, serde_json::Value, Source)> {
        use serde_json::json;
        let path = |p: &Path| json!(p.display().to_string());
        vec![
            ("data_dir", path(&self.data_dir.value), self.data_dir.source),
            (
                "claude_dir",
                path(&self.claude_dir.value),
                self.claude_dir.source,
            ),
            (
                "chunk_idle_days",
                json!(self.chunk_idle_days.value),
                self.chunk_idle_days.source,
            ),
            (
                "min_free_mb",
                json!(self.min_free_mb.value),
                self.min_free_mb.source,
            ),
            (
                "staleness_days",
                json!(self.staleness_days.value),
                self.staleness_days.source,
            ),
            (
                "summarizer",
                json!(self.summarizer.value),
                self.summarizer.source,
            ),
            (
                "summarizer_daily_tokens",
                json!(self.summarizer_daily_tokens.value),
                self.summarizer_daily_tokens.source,
            ),
            ("serve.listen", json!(self.listen.value), self.listen.source),
            (
                "serve.watch_interval_ms",
                json!(self.watch_interval_ms.value),
                self.watch_interval_ms.source,
            ),
            (
                "serve.model_install",
                json!(self.model_install.value),
                self.model_install.source,
            ),
            ("team.user", json!(self.user.value), self.user.source),
            (
                "team.machine",
                json!(self.machine.value),
                self.machine.source,
            ),
        ]
    }
}

/// `EYWA_STALENESS_DAYS`: three rising day counts (`7,30,90`), or `never`.
fn staleness_thresholds(text: &str) -> Result<Option<[u32; 3]>, String> {
    if text == "never" {
        return Ok(None);
    }
    let days: Vec<u32> = text
        .split(',')
        .map(|d| number::<u32>(d.trim()))
        .collect::<Result<_, _>>()?;
    thresholds(&days)
}

/// Three rising day counts, or none (no staleness notices).
fn thresholds(days: &[u32]) -> Result<Option<[u32; 3]>, String> {
    match days {
        [] => Ok(None),
        [a, b, c] if a < b && b < c => Ok(Some([*a, *b, *c])),
        other => Err(format!(
            "{other:?}: give three rising numbers of days (mild, stale, old), like 7,30,90, or none"
        )),
    }
}

/// `auto` or `never`.
pub(crate) fn model_install(text: &str) -> Result<String, String> {
    match text {
        "auto" | "never" => Ok(text.to_owned()),
        other => Err(format!("{other:?}: give auto or never")),
    }
}

/// The file's settings, and whether it exists; a file that does not parse is an error
/// naming it.
fn read_file(path: &Path) -> anyhow::Result<(File, bool)> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((File::default(), false)),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let file =
        toml::from_str(&text).with_context(|| format!("{} does not parse", path.display()))?;
    Ok((file, true))
}

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Every setting, its value and where it came from (default, config.toml,
    /// environment or flag)
    Show {
        #[arg(long)]
        json: bool,
    },
    /// Back to the defaults: config.toml is moved aside to config.toml.bak (the
    /// environment and flags still apply)
    Reset {
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let json = match args.command {
        Command::Show { json } => json,
        Command::Reset { json } => return reset(paths, json),
    };
    let settings = &paths.settings;
    if json {
        let values: serde_json::Map<String, serde_json::Value> = settings
            .rows()
            .into_iter()
            .map(|(key, value, source)| {
                (
                    key.to_owned(),
                    serde_json::json!({ "value": value, "source": source }),
                )
            })
            .collect();
        super::print_json(&serde_json::json!({
            "file": settings.file.display().to_string(),
            "file_exists": settings.file_exists,
            "settings": values,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let exists = if settings.file_exists {
        ""
    } else {
        " (not present: defaults, environment and flags apply)"
    };
    outln!("config file: {}{exists}", settings.file.display());
    for (key, value, source) in settings.rows() {
        let value = match value {
            serde_json::Value::String(text) => text,
            other => other.to_string(),
        };
        outln!("{key:<24} {value:<40} {}", source.as_str());
    }
    Ok(ExitCode::SUCCESS)
}

/// Moves `config.toml` aside (to `config.toml.bak`, replacing an older one).
fn reset(paths: &Paths, json: bool) -> anyhow::Result<ExitCode> {
    let file = &paths.settings.file;
    let backup = file.with_extension("toml.bak");
    let moved = match std::fs::rename(file, &backup) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(e).with_context(|| format!("cannot move {} aside", file.display())),
    };
    if json {
        super::print_json(&serde_json::json!({
            "file": file.display().to_string(),
            "backup": moved.then(|| backup.display().to_string()),
        }))?;
    } else if moved {
        outln!(
            "moved {} to {}: the defaults apply (and EYWA_* variables and flags)",
            file.display(),
            backup.display()
        );
    } else {
        outln!("no {}: the defaults apply already", file.display());
    }
    Ok(ExitCode::SUCCESS)
}
