//! `eywa memory`: remember, recall, update, forget, list, history and consolidate
//! memories, from the store or through a running server alike.

use std::process::ExitCode;

use clap::Subcommand;
use eywa::memory::{MemoryFilter, MemoryItem, MemoryUpdate, NewMemory, RecallQuery};
use eywa::model::{MemoryType, Timestamp};
use serde_json::json;

use crate::app::Paths;
use crate::app::client::Client;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Remember something: a fact, a decision, a rule
    Add {
        /// What to remember
        content: String,
        /// STM (fades in weeks), LTM (in months) or PROCEDURAL (never)
        #[arg(long = "type", default_value = "STM", value_parser = parse_type)]
        memory_type: MemoryType,
        /// How much it matters, 0 to 1
        #[arg(long, default_value_t = eywa::memory::DEFAULT_IMPORTANCE)]
        importance: f32,
        /// The project it is about
        #[arg(long)]
        project: Option<String>,
        /// The session it came from (id or unique prefix)
        #[arg(long)]
        session: Option<String>,
        /// A label (repeatable, or comma-separated)
        #[arg(long = "tag", value_delimiter = ',')]
        tags: Vec<String>,
        /// A graph node it is about (repeatable): an id, project:NAME, file:PATH, concept:TERM
        #[arg(long)]
        about: Vec<String>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// The memories that best match a query (each one returned counts as recalled)
    Recall {
        /// Words to look for, and their meaning
        #[arg(required = true)]
        query: Vec<String>,
        /// Memories to return
        #[arg(long, default_value_t = 10)]
        limit: usize,
        #[command(flatten)]
        filter: Filter,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Memories, most recently changed first
    List {
        #[command(flatten)]
        filter: Filter,
        /// Also those forgotten
        #[arg(long)]
        all: bool,
        /// Memories to show
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Memories to skip
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// A new version of a memory (the old one stays in its history)
    Update {
        /// The memory's id
        id: String,
        /// New content
        #[arg(long)]
        content: Option<String>,
        /// New type
        #[arg(long = "type", value_parser = parse_type)]
        memory_type: Option<MemoryType>,
        /// New importance
        #[arg(long)]
        importance: Option<f32>,
        /// New tags, replacing the old (comma-separated)
        #[arg(long, value_delimiter = ',')]
        tags: Option<Vec<String>>,
        /// Why, kept with the version
        #[arg(long)]
        reason: Option<String>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Forget a memory: recall no longer finds it; its history stays
    Forget {
        /// The memory's id
        id: String,
        /// Why, kept with the version
        #[arg(long)]
        reason: Option<String>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Every version of a memory, oldest first
    History {
        /// The memory's id
        id: String,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Promote short-term memories recalled often or important; let go of faded ones
    Consolidate {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
}

/// Which memories: by project, type and tags.
#[derive(Debug, clap::Args)]
struct Filter {
    /// Only memories of this project
    #[arg(long)]
    project: Option<String>,
    /// Only these types (repeatable, or comma-separated)
    #[arg(long = "type", value_delimiter = ',', value_parser = parse_type)]
    types: Vec<MemoryType>,
    /// Only memories with this tag (repeatable, or comma-separated)
    #[arg(long = "tag", value_delimiter = ',')]
    tags: Vec<String>,
}

fn parse_type(s: &str) -> Result<MemoryType, String> {
    MemoryType::parse(s).ok_or_else(|| format!("`{s}` is not STM, LTM or PROCEDURAL"))
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let client = Client::connect(paths)?;
    let now = Timestamp::now();
    match args.command {
        Command::Add {
            content,
            memory_type,
            importance,
            project,
            session,
            tags,
            about,
            json,
        } => {
            let m = client.remember(&NewMemory {
                memory_type,
                importance,
                project,
                session,
                tags,
                about,
                ..NewMemory::new(content)
            })?;
            show_one(&m, json, now)?;
        }
        Command::Recall {
            query,
            limit,
            filter,
            json,
        } => {
            let hits = client.recall(&RecallQuery {
                query: query.join(" "),
                limit,
                project: filter.project,
                types: filter.types,
                tags: filter.tags,
            })?;
            if json {
                let hits: Vec<_> = hits
                    .iter()
                    .map(|h| {
                        json!({
                            "memory": to_json(&h.memory),
                            "relevance": h.relevance,
                            "weight": h.weight,
                            "score": h.score,
                        })
                    })
                    .collect();
                crate::app::print_json(&json!({ "memories": hits }))?;
            } else if hits.is_empty() {
                outln!("No memory matches.");
            } else {
                for h in &hits {
                    outln!(
                        "{}  {} · score {:.3} (relevance {:.3} × weight {:.3})",
                        h.memory.id,
                        h.memory.memory_type.as_str(),
                        h.score,
                        h.relevance,
                        h.weight
                    );
                    outln!("    {}", h.memory.content.replace('\n', " "));
                }
            }
        }
        Command::List {
            filter,
            all,
            limit,
            offset,
            json,
        } => {
            let filter = MemoryFilter {
                project: filter.project,
                types: filter.types,
                tags: filter.tags,
                include_forgotten: all,
            };
            let (memories, total) = client.list_memories(&filter, limit, offset)?;
            if json {
                let items: Vec<_> = memories.iter().map(to_json).collect();
                crate::app::print_json(&json!({ "memories": items, "total": total }))?;
            } else if memories.is_empty() {
                outln!("No memories.");
            } else {
                for m in &memories {
                    print_line(m, now)?;
                }
                if total > (offset + memories.len()) as u64 {
                    outln!(
                        "({} of {total}; --offset {} for more)",
                        memories.len(),
                        offset + memories.len()
                    );
                }
            }
        }
        Command::Update {
            id,
            content,
            memory_type,
            importance,
            tags,
            reason,
            json,
        } => {
            let m = client.update_memory(
                &id,
                &MemoryUpdate {
                    content,
                    memory_type,
                    importance,
                    tags,
                    reason,
                },
            )?;
            show_one(&m, json, now)?;
        }
        Command::Forget { id, reason, json } => {
            let m = client.forget_memory(&id, reason)?;
            show_one(&m, json, now)?;
        }
        Command::History { id, json } => {
            let versions = client.memory_history(&id)?;
            if json {
                let items: Vec<_> = versions.iter().map(to_json).collect();
                crate::app::print_json(&json!({ "versions": items }))?;
            } else {
                for m in &versions {
                    let reason = m
                        .reason
                        .as_deref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default();
                    outln!(
                        "v{}  {}  {}{reason}  {} · importance {:.2}",
                        m.version,
                        m.updated_at.to_rfc3339(),
                        m.change.as_str(),
                        m.memory_type.as_str(),
                        m.importance
                    );
                    outln!("    {}", m.content.replace('\n', " "));
                }
            }
        }
        Command::Consolidate { json } => {
            let r = client.consolidate_memories()?;
            if json {
                crate::app::print_json(&json!(r))?;
            } else {
                outln!(
                    "promoted {} to LTM, {} faded, {} kept",
                    r.promoted,
                    r.faded,
                    r.kept
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn show_one(m: &MemoryItem, json: bool, now: Timestamp) -> anyhow::Result<()> {
    if json {
        return crate::app::print_json(&to_json(m));
    }
    print_line(m, now)
}

fn print_line(m: &MemoryItem, now: Timestamp) -> anyhow::Result<()> {
    let project = m
        .project
        .as_deref()
        .map(|p| format!(" [{p}]"))
        .unwrap_or_default();
    let state = match m.forgotten_at {
        Some(at) => format!("{} {}", m.change.as_str(), eywa::model::age(at, now)),
        None => format!("weight {:.2}", m.decay.weight),
    };
    outln!(
        "{}  v{}  {}{project} · importance {:.2} · {state}",
        m.id,
        m.version,
        m.memory_type.as_str(),
        m.importance
    );
    outln!("    {}", m.content.replace('\n', " "));
    Ok(())
}

fn to_json(m: &MemoryItem) -> serde_json::Value {
    json!({
        "id": m.id,
        "version": m.version,
        "content": m.content,
        "memory_type": m.memory_type.as_str(),
        "importance": m.importance,
        "project": m.project,
        "session": m.session,
        "tags": m.tags,
        "about": m.about,
        "origin": m.origin,
        "change": m.change.as_str(),
        "reason": m.reason,
        "created_at": m.created_at.to_rfc3339(),
        "updated_at": m.updated_at.to_rfc3339(),
        "forgotten_at": m.forgotten_at.map(Timestamp::to_rfc3339),
        "last_access": m.decay.last_access.to_rfc3339(),
        "weight": m.decay.weight,
        "recalls": m.recalls,
    })
}
