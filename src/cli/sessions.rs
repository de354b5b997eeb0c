//! `eywa sessions`: list, show, export, search and migrate sessions.

use std::process::ExitCode;

use clap::Subcommand;
use eywa::engine::{ExportFormat, MigrateMode, SessionPage, SessionSearch};
use eywa::model::Timestamp;

use super::Paths;
use super::client::Client;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Sessions, most recently active first
    List {
        /// Only sessions of this project (its path, a folder in it, or its name)
        #[arg(long, value_parser = super::user_path_text)]
        workspace: Option<String>,
        /// Sessions per page
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Sessions to skip
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// A session: its messages in order, tool calls with their results
    Show {
        /// Session uuid or a unique prefix (at least 4 characters)
        session: String,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Lines of messages that contain a text (or match a regex), with context
    Search {
        /// What to look for: a literal substring, or a regex with --regex
        pattern: String,
        /// The pattern is a regular expression
        #[arg(long)]
        regex: bool,
        /// Match case exactly
        #[arg(long)]
        case_sensitive: bool,
        /// Only sessions of this project (its path, a folder in it, or its name)
        #[arg(long, value_parser = super::user_path_text)]
        workspace: Option<String>,
        /// Lines of context each side
        #[arg(long, short = 'C', default_value_t = 2)]
        context: usize,
        /// Matches per page
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Matches to skip
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Copy (or move) sessions and their subagents to another workspace
    Migrate {
        /// Sessions (ids or unique prefixes)
        #[arg(required = true)]
        sessions: Vec<String>,
        /// The target workspace: an absolute path
        #[arg(long, value_parser = super::user_path_text)]
        to: String,
        /// Move instead of copy
        #[arg(long = "move")]
        move_: bool,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Write a session as Markdown or JSON
    Export {
        /// Session uuid or a unique prefix (at least 4 characters)
        session: String,
        /// markdown or json
        #[arg(long, default_value = "markdown")]
        format: String,
        /// Write to this file instead of standard output
        #[arg(long, short, value_parser = super::user_path)]
        output: Option<std::path::PathBuf>,
    },
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let client = Client::connect(paths)?;
    match args.command {
        Command::List {
            workspace,
            limit,
            offset,
            json,
        } => {
            let page = client.list_sessions(workspace.as_deref(), limit, offset)?;
            if json {
                super::print_json(&serde_json::to_value(&page)?)?;
            } else {
                print_page(&page)?;
            }
        }
        Command::Show { session, json } => {
            let text = client.export_session(
                &session,
                if json {
                    ExportFormat::Json
                } else {
                    ExportFormat::Markdown
                },
            )?;
            outln!("{text}");
        }
        Command::Search {
            pattern,
            regex,
            case_sensitive,
            workspace,
            context,
            limit,
            offset,
            json,
        } => {
            let page = client.search_sessions(&SessionSearch {
                pattern,
                regex,
                case_sensitive,
                workspace,
                context,
                limit,
                offset,
            })?;
            if json {
                super::print_json(&serde_json::to_value(&page)?)?;
            } else {
                for m in &page.matches {
                    let short: String = m.session_id.chars().take(8).collect();
                    outln!(
                        "{short} {} line {}: {}",
                        m.message_type,
                        m.line_number,
                        m.line
                    );
                    for line in &m.context {
                        outln!("    | {line}");
                    }
                }
                outln!("{} of {} matches", page.matches.len(), page.total);
            }
        }
        Command::Migrate {
            sessions,
            to,
            move_,
            json,
        } => {
            let mode = if move_ {
                MigrateMode::Move
            } else {
                MigrateMode::Copy
            };
            let result = client.migrate_sessions(&sessions, &to, mode)?;
            if json {
                super::print_json(&serde_json::to_value(&result)?)?;
            } else {
                if result.success_count > 0 {
                    let created = if result.created_dir { " (created)" } else { "" };
                    outln!("into {}{created}:", result.target_dir);
                }
                for path in &result.written {
                    outln!("wrote {path}");
                }
                for e in &result.errors {
                    errln!("{}: {}", e.session, e.message);
                }
            }
            if result.failed_count > 0 {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Export {
            session,
            format,
            output,
        } => {
            let text = client.export_session(&session, ExportFormat::parse(&format)?)?;
            if let Some(path) = output {
                std::fs::write(&path, text.as_bytes())
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
                errln!("wrote {}", path.display());
            } else {
                out!("{text}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_page(page: &SessionPage) -> anyhow::Result<()> {
    let now = Timestamp::now();
    for s in &page.sessions {
        let short: String = s.session_id.chars().take(8).collect();
        let agents = if s.agent_ids.is_empty() {
            String::new()
        } else {
            format!(" · {} agents", s.agent_ids.len())
        };
        outln!(
            "{short}  {}  [{}] {} · {} messages{agents}",
            s.title,
            s.project,
            eywa::model::age(s.last_activity_at, now),
            s.message_count
        );
    }
    let shown = page.sessions.len();
    if shown == 0 {
        outln!("No sessions here (total {}).", page.total);
        return Ok(());
    }
    let more = if page.has_more {
        format!("; next: --offset {}", page.offset + shown)
    } else {
        String::new()
    };
    outln!(
        "{}-{} of {}{more}",
        page.offset + 1,
        page.offset + shown,
        page.total
    );
    Ok(())
}
