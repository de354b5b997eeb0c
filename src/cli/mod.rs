//! Command-line syntax (clap) resolved into calls, one file per subcommand. What the
//! commands share with the agents' side (where the store is, the client, how a thing
//! reads) is in `app`; the agents' commands (`mcp`, `hook`, `setup`) are in `agents`.

mod check;
mod chunk;
mod context;
mod docs;
mod embed;
mod get;
mod graph;
mod import;
mod ingest;
mod memory;
mod model;
mod open;
mod search;
mod serve;
mod sessions;
mod stats;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::agents::{hook, mcp, setup};
use crate::app::config::{self, Settings};
use crate::app::{Paths, user_path};

/// eywa: knowledge-graph memory for coding agents, built from Claude Code transcripts.
///
/// Settings come from defaults, then <data>/config.toml, then EYWA_* variables, then
/// flags (`eywa config show` says which).
#[derive(Debug, Parser)]
#[command(name = "eywa", version, about, propagate_version = true)]
pub(crate) struct Cli {
    /// Where eywa keeps its store [default: ~/.eywa]
    #[arg(long, global = true, env = "EYWA_DATA_DIR", value_name = "DIR", value_parser = user_path)]
    data_dir: Option<PathBuf>,
    /// The Claude Code home to read transcripts from [default: ~/.claude]
    #[arg(long, global = true, env = "EYWA_CLAUDE_DIR", value_name = "DIR", value_parser = user_path)]
    claude_dir: Option<PathBuf>,
    /// Days a chunk may go unread before it moves to the cold tier [default: 30]
    #[arg(long, global = true, env = "EYWA_CHUNK_IDLE_DAYS")]
    chunk_idle_days: Option<u32>,
    /// MiB that must stay free on the data dir's disk: a write that would start below it
    /// is refused, so none stops half-way [default: 64]
    #[arg(long, global = true, env = "EYWA_MIN_FREE_MB")]
    min_free_mb: Option<u64>,
    /// A command that writes handoffs (`claude -p`, say): each session's markdown on its
    /// stdin, a handoff in Eywa's format on its stdout; the one eywa builds from the
    /// transcript stays when it fails [default: none]
    #[arg(long, global = true, env = "EYWA_SUMMARIZER", value_name = "CMD")]
    summarizer: Option<String>,
    /// The eywa server: where `serve` listens [default: 127.0.0.1:50051]; for every other
    /// command, the server to ask [default: the one announced in <data>/serve.json, else
    /// none: the store is opened here]
    #[arg(long, global = true, env = "EYWA_ADDR", value_name = "HOST:PORT")]
    addr: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Ingest the Claude dir, then serve gRPC until Ctrl-C
    Serve(serve::Args),
    /// Read new and changed sessions into the store and print counts
    Ingest(ingest::Args),
    /// Rank session handoffs for a query, as Eywa's `get` does
    Get(get::Args),
    /// Search sessions by words and meaning: one hit per session, its best passage
    Search(search::Args),
    /// Context from earlier sessions for an agent, fitted to a token budget
    Context(context::Args),
    /// One embedded passage whole: where it comes from and the nearest chunks of other
    /// sessions
    Chunk(chunk::Args),
    /// The session library: list, show and export sessions
    Sessions(sessions::Args),
    /// Walk the knowledge graph
    Graph(graph::Args),
    /// Memories: remember, recall, update, forget, list, history, consolidate
    Memory(memory::Args),
    /// Serve eywa's tools to an agent over MCP on stdin/stdout (`eywa setup claude`
    /// registers it); asks the running server when there is one
    Mcp(mcp::Args),
    /// Documents: add markdown, text and PDF files; list, show and their history
    Docs(docs::Args),
    /// Answer a Claude Code hook (its JSON on stdin): SessionStart context, or read the
    /// session at Stop, SessionEnd and PreCompact; never fails Claude Code
    Hook(hook::Args),
    /// Connect an agent to eywa: `eywa setup claude` adds the hooks and the MCP server to
    /// Claude Code's settings (--uninstall takes them out)
    Setup(setup::Args),
    /// Import a Python Eywa folder (handoff-index.json and handoffs/**/*.md)
    Import(import::Args),
    /// Counts, tier sizes and cache hit rates
    Stats(stats::Args),
    /// The web view's address of a session, a node or a search (`eywa serve` serves it);
    /// --browser opens it
    Open(open::Args),
    /// The embedding model: install it, or see whether it is installed
    Model(model::Args),
    /// Embed what waits in the semantic backlog (serve does this in the background)
    Embed(embed::Args),
    /// Verify the store (graph indexes, archived transcripts, semantic memory, text
    /// index); --repair fixes what it can
    Check(check::CheckArgs),
    /// Copy the store, as it is at one moment, to a folder (also while serve runs)
    Backup(check::BackupArgs),
    /// Bring a backup back as this data dir's store (the old one is moved aside)
    Restore(check::RestoreArgs),
    /// Settings: where each comes from (defaults, <data>/config.toml, EYWA_*, flags)
    Config(config::Args),
}

pub(crate) fn run() -> anyhow::Result<ExitCode> {
    // A PDF read in a child process of ours (`eywa::docs`): nothing else is set up.
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(eywa::docs::CHILD_COMMAND))
    {
        eywa::docs::run_child()?;
        return Ok(ExitCode::SUCCESS);
    }
    // This very binary, even when a newer one replaced its file since it started.
    eywa::docs::isolate_in(std::path::PathBuf::from("/proc/self/exe"));
    eywa::fs::keep_created_files_private();
    let matches = Cli::command()
        .try_get_matches()
        .unwrap_or_else(|e| exit_on(&e));
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| exit_on(&e));
    let default_level = match cli.command {
        Command::Serve(_) => "info",
        // A hook's stderr is Claude Code's to show: it says nothing (hooks.log has it).
        Command::Hook(_) => "off",
        Command::Ingest(_)
        | Command::Get(_)
        | Command::Search(_)
        | Command::Sessions(_)
        | Command::Context(_)
        | Command::Chunk(_)
        | Command::Graph(_)
        | Command::Memory(_)
        | Command::Mcp(_)
        | Command::Setup(_)
        | Command::Docs(_)
        | Command::Import(_)
        | Command::Stats(_)
        | Command::Open(_)
        | Command::Model(_)
        | Command::Embed(_)
        | Command::Check(_)
        | Command::Backup(_)
        | Command::Restore(_)
        | Command::Config(_) => "warn",
    };
    init_logging(default_level);
    let settings = match Settings::resolve(&matches, matches.subcommand_matches("serve")) {
        Ok(settings) => settings,
        // A hook never fails Claude Code, not even on a broken config.toml.
        Err(_) if matches!(cli.command, Command::Hook(_)) => return Ok(ExitCode::SUCCESS),
        Err(e) => return Err(e),
    };
    let paths = Paths::resolve(cli.addr.as_deref(), settings);
    match cli.command {
        Command::Serve(args) => serve::run(&paths, args),
        Command::Ingest(args) => ingest::run(&paths, args),
        Command::Get(args) => get::run(&paths, args),
        Command::Search(args) => search::run(&paths, args),
        Command::Sessions(args) => sessions::run(&paths, args),
        Command::Context(args) => context::run(&paths, args),
        Command::Chunk(args) => chunk::run(&paths, args),
        Command::Graph(args) => graph::run(&paths, args),
        Command::Memory(args) => memory::run(&paths, args),
        Command::Mcp(args) => mcp::run(&paths, args),
        Command::Hook(args) => hook::run(&paths, args),
        Command::Setup(args) => setup::run(&paths, args),
        Command::Docs(args) => docs::run(&paths, args),
        Command::Import(args) => import::run(&paths, args),
        Command::Stats(args) => stats::run(&paths, args),
        Command::Open(args) => open::run(&paths, args),
        Command::Model(args) => model::run(&paths, args),
        Command::Embed(args) => embed::run(&paths, args),
        Command::Check(args) => check::check(&paths, args),
        Command::Backup(args) => check::backup(&paths, args),
        Command::Restore(args) => check::restore(&paths, args),
        Command::Config(args) => config::run(&paths, args),
    }
}

/// Ends the process on a command line clap refused (or on `--help`), as clap does, with
/// every argument it quotes cut to 200 characters and the message to 2,000: a
/// 1 MB argument must not come back as a 1 MB error.
fn exit_on(error: &clap::Error) -> ! {
    if !error.use_stderr() {
        error.exit();
    }
    let mut message = error.render().to_string();
    for arg in std::env::args_os().skip(1) {
        let arg = arg.to_string_lossy();
        if arg.chars().count() > eywa::error::MAX_QUOTED && message.contains(arg.as_ref()) {
            message = message.replace(arg.as_ref(), &eywa::error::shorten(&arg));
        }
    }
    errln!("{}", eywa::error::bounded_message(message.trim_end()));
    std::process::exit(error.exit_code());
}

fn init_logging(default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("EYWA_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("eywa={default_level}")));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}
