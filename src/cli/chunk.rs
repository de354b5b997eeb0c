//! `eywa chunk`: one embedded passage whole, where it comes from, and its neighbors.

use std::process::ExitCode;

use eywa::model::Chunk;
use serde_json::json;

use crate::app::Paths;
use crate::app::client::Client;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The chunk's id: 16 hex digits, as `eywa search --json` gives it (`chunk_id`)
    id: String,
    /// Show this many of the most similar chunks of other sessions (at most 50)
    #[arg(long, default_value_t = 5)]
    neighbors: usize,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let client = Client::connect(paths)?;
    let chunk = client.chunk(&args.id, args.neighbors)?;
    if args.json {
        crate::app::print_json(&to_json(&chunk))?;
        return Ok(ExitCode::SUCCESS);
    }
    let page = chunk
        .page
        .map(|p| format!(" page {p},"))
        .unwrap_or_default();
    let message = chunk
        .message
        .as_deref()
        .map(|m| format!(" message {m},"))
        .unwrap_or_default();
    outln!(
        "chunk {}  {}  {}:{page}{message} characters {}..{}",
        chunk.id,
        chunk.kind,
        chunk.doc_id,
        chunk.start_char,
        chunk.end_char
    );
    if !chunk.session_id.is_empty() {
        outln!(
            "session {}  ({})",
            chunk.session_id,
            eywa::claude::resume_command(&chunk.session_id, None).unwrap_or_default()
        );
    }
    if !chunk.embedded {
        outln!("(not embedded yet: `eywa embed` runs the backlog)");
    }
    outln!();
    outln!("{}", chunk.content);
    if !chunk.neighbors.is_empty() {
        outln!();
        outln!("Nearest chunks of other sessions:");
        for n in &chunk.neighbors {
            let short = eywa::claude::short_id(&n.session_id);
            outln!("  {}  {:.3}  {}  {short}", n.id, n.score, n.kind);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn to_json(c: &Chunk) -> serde_json::Value {
    json!({
        "id": c.id,
        "doc_id": c.doc_id,
        "session_id": c.session_id,
        "type": c.kind,
        "message": c.message,
        "position": {"page": c.page, "start_char": c.start_char, "end_char": c.end_char},
        "content": c.content,
        "timestamp": c.timestamp.to_rfc3339(),
        "embedded": c.embedded,
        "neighbors": c.neighbors.iter().map(|n| json!({
            "id": n.id,
            "doc_id": n.doc_id,
            "session_id": n.session_id,
            "type": n.kind,
            "score": n.score,
        })).collect::<Vec<_>>(),
    })
}
