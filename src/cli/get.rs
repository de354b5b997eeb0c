//! `eywa get`: rank session handoffs for a query, as Eywa does.

use std::process::ExitCode;

use eywa::engine::{GetOutcome, HandoffHit};
use eywa::retrieve::{DEFAULT_DAYS_BACK, DEFAULT_LIMIT, GetOptions};
use serde_json::json;

use crate::app::Paths;
use crate::app::client::Client;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// What to look for; empty lists the most recent sessions
    query: Vec<String>,
    /// Recency window in days
    #[arg(long, default_value_t = DEFAULT_DAYS_BACK)]
    days_back: u32,
    /// How many handoffs to return
    #[arg(long, default_value_t = DEFAULT_LIMIT)]
    limit: usize,
    /// Only handoffs of this project (repeatable)
    #[arg(long = "project", value_name = "NAME")]
    projects: Vec<String>,
    /// Only sessions by this user (repeatable; any case)
    #[arg(long = "user", value_name = "USER", value_parser = crate::app::user_name)]
    users: Vec<String>,
    /// Only sessions written on this machine (repeatable; any case)
    #[arg(long = "machine", value_name = "MACHINE", value_parser = crate::app::machine_name)]
    machines: Vec<String>,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let query = args.query.join(" ");
    let options = GetOptions {
        days_back: args.days_back,
        limit: args.limit,
        projects: args.projects.clone(),
        authors: eywa::model::Attribution {
            users: args.users.clone(),
            machines: args.machines.clone(),
        },
    };
    let client = Client::connect(paths)?;
    let outcome = client.get(&query, &options)?;
    if args.json {
        crate::app::print_json(&to_json(&outcome))?;
    } else {
        print_human(&outcome, args.days_back)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn to_json(outcome: &GetOutcome) -> serde_json::Value {
    let handoffs: Vec<serde_json::Value> = outcome
        .hits
        .iter()
        .map(|HandoffHit { handoff: h, score }| {
            json!({
                "session_id": h.session_id,
                "short_id": h.short_id,
                "date": h.date.to_string(),
                "headline": h.headline,
                "projects": h.projects,
                "keywords": h.keywords,
                "substance": h.substance,
                "duration": h.duration_label(),
                "duration_minutes": h.duration_minutes,
                "model": h.model,
                "cwd": h.cwd,
                "user": h.user,
                "machine": h.machine,
                "score": score,
                "resume_command": eywa::claude::resume_command(&h.session_id, Some(&h.cwd)),
            })
        })
        .collect();
    json!({
        "tokens": outcome.tokens,
        "fallback_recent": outcome.fallback_recent,
        "handoffs": handoffs,
        "older_sessions": outcome.older,
        "newest_older_date": outcome.newest_older.map(|d| d.to_string()),
    })
}

/// Why nothing was found, when sessions lie beyond the window: how many, how far back the
/// newest is, and the `--days-back` that reaches it.
fn window_hint(outcome: &GetOutcome, days_back: u32) -> Option<String> {
    let newest = outcome.newest_older?;
    let days = (chrono::Local::now().date_naive() - newest)
        .num_days()
        .max(0);
    let sessions = if outcome.older == 1 {
        "session is"
    } else {
        "sessions are"
    };
    Some(format!(
        "eywa: nothing in the last {days_back} days; {} {sessions} older, the newest from \
         {newest} ({days} days ago): try --days-back {}",
        outcome.older,
        days + 1
    ))
}

fn print_human(outcome: &GetOutcome, days_back: u32) -> anyhow::Result<()> {
    if outcome.hits.is_empty() {
        outln!("No past sessions found.");
        if let Some(hint) = window_hint(outcome, days_back) {
            eprintln!("{hint}");
        }
        return Ok(());
    }
    if outcome.fallback_recent && !outcome.tokens.is_empty() {
        outln!(
            "Nothing matched {:?}; the most recent sessions:",
            outcome.tokens.join(" ")
        );
    }
    for (i, HandoffHit { handoff: h, score }) in outcome.hits.iter().enumerate() {
        let score = score.map_or(String::new(), |s| format!("  score {s:.3}"));
        outln!(
            "{}. {}  [{}]  {}{}",
            i + 1,
            h.date,
            h.projects.join(", "),
            h.headline,
            score
        );
        outln!("   {} · {}", h.short_id, eywa::present::handoff::facts(h));
        if let Some(resume) = eywa::claude::resume_command(&h.session_id, Some(&h.cwd)) {
            outln!("   {resume}");
        }
    }
    Ok(())
}
