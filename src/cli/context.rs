//! `eywa context`: earlier sessions' context fitted to a token budget.

use std::process::ExitCode;

use eywa::engine::{ContextMode, DEFAULT_MAX_TOKENS};

use crate::app::Paths;
use crate::app::client::Client;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Sessions (ids, unique prefixes, or rows of the last `eywa sessions list`: `1`,
    /// `1,3`, `1-3`, `all`; `skip` for none), most wanted first
    #[arg(required = true)]
    sessions: Vec<String>,
    /// smart (plan, subagent summaries, first prompts, labels), plan, labels, agents, full
    #[arg(short = 'm', long, default_value = "smart")]
    mode: String,
    /// Token budget (about 4 characters a token); no text is ever cut to fit
    #[arg(long, default_value_t = DEFAULT_MAX_TOKENS)]
    max_tokens: usize,
    /// Show what would be included, and its cost, without the text
    #[arg(long)]
    dry_run: bool,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let mode = ContextMode::parse(&args.mode)?;
    let client = Client::connect(paths)?;
    let listing = super::sessions::Listing::at(&paths.data_dir);
    let sessions = listing.select(&args.sessions)?;
    if sessions.is_empty() {
        // `skip`: nothing was asked for.
        return Ok(ExitCode::SUCCESS);
    }
    let context = client.context(&sessions, mode, args.max_tokens, args.dry_run)?;
    for warning in &context.warnings {
        errln!("warning: {warning}");
    }
    if args.json {
        crate::app::print_json(&serde_json::to_value(&context)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if !args.dry_run {
        out!("{}", context.text);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "Token budget: {} | Used: {} | Remaining: {}",
        context.budget,
        context.used,
        context.budget.saturating_sub(context.used)
    );
    for s in &context.sessions {
        let short = eywa::claude::short_id(&s.session_id);
        let state = if s.dropped { " (dropped)" } else { "" };
        outln!("{short}  {}  {} tokens{state}", s.title, s.tokens);
        for item in &s.items {
            let mark = if item.included { "+" } else { "-" };
            outln!("    {mark} {:<18} {:>6} tokens", item.kind, item.tokens);
        }
    }
    Ok(ExitCode::SUCCESS)
}
