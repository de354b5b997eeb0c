//! `eywa search`: sessions by words and meaning, with their signals.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use anyhow::Context;
use eywa::engine::{SearchHit, SearchRequest, SearchResults};
use eywa::model::{SearchFilter, Timestamp};
use eywa::retrieve::SearchMode;
use serde_json::json;

use crate::app::Paths;
use crate::app::client::{Client, RemoteError};

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// What to look for (words, matched stemmed, any of them; and their meaning)
    #[arg(required_unless_present = "queries")]
    query: Vec<String>,
    /// lexical (BM25), semantic (embeddings), or hybrid (both, fused)
    #[arg(long, default_value = "hybrid", value_parser = parse_mode)]
    mode: SearchMode,
    /// What the search is about: sessions of its project, sharing its files, or near it
    /// in the graph rank higher (project:NAME, session:ID, file:PATH, a node id)
    #[arg(long, value_name = "NODE")]
    focus: Option<String>,
    /// Show every signal that scored each hit
    #[arg(long)]
    explain: bool,
    /// Only these content types (comma-separated or repeated): user_message,
    /// assistant_response, compact_summary, tool_call, tool_result, subagent_summary,
    /// summary_label, handoff, plan, memory (memory files and memories), memory_item,
    /// document; doc (documents) and chunk (every type cut into embedded chunks) too.
    /// Without: the conversation (user_message, assistant_response, subagent_summary,
    /// summary_label, handoff, plan)
    #[arg(short = 't', long = "type", value_delimiter = ',', value_name = "TYPE")]
    types: Vec<String>,
    /// Only sessions of this project (repeatable)
    #[arg(long = "project", value_name = "NAME")]
    projects: Vec<String>,
    /// Only sessions by this user (repeatable; any case). Documents and memories, of no
    /// session, are left out
    #[arg(long = "user", value_name = "USER", value_parser = crate::app::user_name)]
    users: Vec<String>,
    /// Only sessions written on this machine (repeatable; any case)
    #[arg(long = "machine", value_name = "MACHINE", value_parser = crate::app::machine_name)]
    machines: Vec<String>,
    /// Only passages of subagents of this type (repeatable): Explore, Plan, …
    #[arg(long = "agent-type", value_name = "TYPE")]
    agent_types: Vec<String>,
    /// Only passages written since: RFC 3339, YYYY-MM-DD, or an age like 7d, 12h, 2w
    #[arg(long, value_parser = parse_since)]
    since: Option<Timestamp>,
    /// Only passages written before this time (same forms)
    #[arg(long, value_parser = parse_since)]
    until: Option<Timestamp>,
    /// When the question is asked (RFC 3339 or YYYY-MM-DD; default now): it anchors the
    /// dates the query says ("two weeks ago", "in May") and recency, and what was
    /// written after it is left out
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    as_of: Option<Timestamp>,
    /// Sessions to return
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// Print JSON
    #[arg(long)]
    json: bool,
    /// Run many searches: a JSONL file of {"qid", "query", "project"?, "as_of"?}; prints
    /// one JSON line per query: {"qid", "ranked_session_ids", "hits"}
    #[arg(long, value_name = "FILE", conflicts_with = "query", value_parser = crate::app::user_path)]
    queries: Option<std::path::PathBuf>,
}

fn parse_mode(s: &str) -> Result<SearchMode, String> {
    SearchMode::parse(s).ok_or_else(|| format!("`{s}` is not lexical, semantic or hybrid"))
}

/// A moment: RFC 3339 or a date.
fn parse_time(s: &str) -> Result<Timestamp, String> {
    Timestamp::parse(s.trim()).ok_or_else(|| format!("`{s}` is not RFC 3339 or YYYY-MM-DD"))
}

/// A time: RFC 3339, a date, or an age before now (`7d`, `12h`, `30m`, `2w`).
fn parse_since(s: &str) -> Result<Timestamp, String> {
    eywa::model::parse_since(s, Timestamp::now())
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    if let Err(why) = eywa::retrieve::search::content_types(&args.types) {
        anyhow::bail!(why);
    }
    let request = |query: String, projects: Vec<String>, as_of: Option<Timestamp>| SearchRequest {
        query,
        filter: SearchFilter {
            kinds: args.types.clone(),
            projects,
            agent_types: args.agent_types.clone(),
            since: args.since,
            until: args.until,
            users: args.users.clone(),
            machines: args.machines.clone(),
        },
        limit: args.limit,
        mode: args.mode,
        focus: args.focus.clone(),
        as_of: as_of.or(args.as_of),
    };
    let client = Client::connect(paths)?;
    let search = |r: &SearchRequest| client.search(r);
    if let Some(file) = &args.queries {
        return run_batch(file, &args, &request, &search);
    }
    let results = search(&request(args.query.join(" "), args.projects.clone(), None))?;
    let now = Timestamp::now();
    if args.json {
        let hits: Vec<_> = results.hits.iter().map(|h| to_json(h, now)).collect();
        crate::app::print_json(&json!({
            "hits": hits,
            "mode": results.mode,
            "notices": results.notices,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    for notice in &results.notices {
        errln!("eywa: {notice}");
    }
    if results.hits.is_empty() {
        outln!("No session matches.");
    }
    // Seed 001's `1. [85%] …`: each hit's score against the best.
    for (i, (share, h)) in eywa::present::hit::ranked(&results).enumerate() {
        for line in eywa::present::hit::lines(i + 1, share, h, now, args.explain) {
            outln!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn run_batch(
    file: &std::path::Path,
    args: &Args,
    request: &dyn Fn(String, Vec<String>, Option<Timestamp>) -> SearchRequest,
    search: &dyn Fn(&SearchRequest) -> anyhow::Result<SearchResults>,
) -> anyhow::Result<ExitCode> {
    let reader = std::io::BufReader::new(
        std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?,
    );
    let now = Timestamp::now();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (n, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("cannot read {}", file.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let q: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("{}:{}: not JSON", file.display(), n + 1))?;
        let text = |k: &str| q.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        let query = text("query")
            .or_else(|| text("question"))
            .with_context(|| format!("{}:{}: no \"query\"", file.display(), n + 1))?;
        let mut projects = args.projects.clone();
        projects.extend(text("project"));
        let as_of = match text("as_of") {
            Some(t) => Some(
                parse_time(&t)
                    .map_err(|why| anyhow::anyhow!("{}:{}: as_of: {why}", file.display(), n + 1))?,
            ),
            None => None,
        };
        let hits = match search(&request(query, projects, as_of)) {
            Ok(results) => results.hits,
            // A query of stopwords only finds nothing; the batch goes on.
            Err(e)
                if e.downcast_ref::<eywa::Error>()
                    .is_some_and(|e| matches!(e, eywa::Error::InvalidArgument(_)))
                    || e.downcast_ref::<RemoteError>()
                        .is_some_and(RemoteError::is_invalid_argument) =>
            {
                Vec::new()
            }
            Err(e) => return Err(e),
        };
        let ranked: Vec<&str> = hits.iter().map(|h| h.session_id.as_str()).collect();
        let hits: Vec<_> = hits.iter().map(|h| to_json(h, now)).collect();
        let line = json!({"qid": q.get("qid"), "ranked_session_ids": ranked, "hits": hits});
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn to_json(h: &SearchHit, now: Timestamp) -> serde_json::Value {
    json!({
        "session_id": h.session_id,
        "short_id": eywa::claude::short_id(&h.session_id),
        "title": h.title,
        "project": h.project,
        "score": h.score,
        "type": h.kind,
        "snippet": h.snippet,
        "timestamp": h.timestamp.to_rfc3339(),
        "age": eywa::model::age(h.timestamp, now),
        "agent": h.agent,
        "matches": h.matches,
        "chunk_id": h.chunk_id,
        "document_id": h.document_id,
        "page": h.page,
        "resume_command": h.resume_command,
        "user": h.user,
        "machine": h.machine,
        "signals": h.signals,
    })
}
