//! `eywa sessions`: list, show, export, search and migrate sessions.

use std::process::ExitCode;

use clap::Subcommand;
use eywa::engine::{ExportFormat, MigrateMode, SessionPage, SessionSearch};
use eywa::model::Timestamp;

use crate::app::Paths;
use crate::app::client::Client;

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
        #[arg(long, value_parser = crate::app::user_path_text)]
        workspace: Option<String>,
        /// Sessions per page
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Sessions to skip
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// recent (most recently active first) or messages (most messages first)
        #[arg(long, default_value = "recent")]
        sort: String,
        /// Only sessions by this user (repeat for several; any case)
        #[arg(long = "user", value_name = "USER", value_parser = crate::app::user_name)]
        users: Vec<String>,
        /// Only sessions written on this machine (repeat for several; any case)
        #[arg(long = "machine", value_name = "MACHINE", value_parser = crate::app::machine_name)]
        machines: Vec<String>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// A session: its messages in order, tool calls with their results
    Show {
        /// Session uuid, a unique prefix (at least 4 characters), or a row number (1-999) of
        /// the last `eywa sessions list`
        session: String,
        /// Print JSON
        #[arg(long)]
        json: bool,
        /// Include each response's extended thinking
        #[arg(long)]
        thinking: bool,
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
        #[arg(long, value_parser = crate::app::user_path_text)]
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
        /// Sessions (ids, unique prefixes, or numbers of the last `sessions list`)
        #[arg(required_unless_present = "workspace", conflicts_with = "workspace")]
        sessions: Vec<String>,
        /// Every session of this workspace instead (a project's path, a folder in it, or
        /// its name)
        #[arg(long, value_parser = crate::app::user_path_text)]
        workspace: Option<String>,
        /// The target workspace: an absolute path
        #[arg(long, value_parser = crate::app::user_path_text)]
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
        /// Session uuid, a unique prefix (at least 4 characters), or a row number (1-999) of
        /// the last `eywa sessions list`
        session: String,
        /// markdown or json
        #[arg(long, default_value = "markdown")]
        format: String,
        /// Write to this file instead of standard output
        #[arg(long, short, value_parser = crate::app::user_path)]
        output: Option<std::path::PathBuf>,
        /// Include each response's extended thinking
        #[arg(long)]
        thinking: bool,
    },
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let client = Client::connect(paths)?;
    let listing = Listing::at(&paths.data_dir);
    match args.command {
        Command::List {
            workspace,
            limit,
            offset,
            sort,
            users,
            machines,
            json,
        } => {
            let order = eywa::engine::SessionOrder::parse(&sort)?;
            let authors = eywa::model::Attribution { users, machines };
            let page =
                client.list_sessions(workspace.as_deref(), &authors, limit, offset, order)?;
            listing.save(&page)?;
            if json {
                crate::app::print_json(&serde_json::to_value(&page)?)?;
            } else {
                print_page(&page)?;
            }
        }
        Command::Show {
            session,
            json,
            thinking,
        } => {
            let format = if json {
                ExportFormat::Json
            } else {
                ExportFormat::Markdown
            };
            let text = client.export_session(&listing.resolve(&session)?, format, thinking)?;
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
                crate::app::print_json(&serde_json::to_value(&page)?)?;
            } else {
                for m in &page.matches {
                    let short = eywa::claude::short_id(&m.session_id);
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
            workspace,
            to,
            move_,
            json,
        } => {
            let mode = if move_ {
                MigrateMode::Move
            } else {
                MigrateMode::Copy
            };
            let result = if let Some(workspace) = workspace {
                client.migrate_workspace(&workspace, &to, mode)?
            } else {
                let sessions = sessions
                    .iter()
                    .map(|s| listing.resolve(s))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                client.migrate_sessions(&sessions, &to, mode)?
            };
            if json {
                crate::app::print_json(&serde_json::to_value(&result)?)?;
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
            thinking,
        } => {
            let session = listing.resolve(&session)?;
            let text = client.export_session(&session, ExportFormat::parse(&format)?, thinking)?;
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
    // Who wrote each session, once the page holds more than one author's.
    let authors: std::collections::HashSet<(&str, &str)> = page
        .sessions
        .iter()
        .map(|s| (s.user.as_str(), s.machine.as_str()))
        .collect();
    for (i, s) in page.sessions.iter().enumerate() {
        let row = eywa::present::session::row_line(page.offset + i + 1, s, now);
        if authors.len() > 1 {
            outln!("{row} · by {}@{}", s.user, s.machine);
        } else {
            outln!("{row}");
        }
    }
    outln!("{}", eywa::present::session::page_line(page));
    Ok(())
}

/// The last `sessions list` this data dir printed, so that its row numbers name sessions
/// (`eywa sessions show 3`): kept in `<data>/last-listing.json`.
pub(super) struct Listing {
    path: std::path::PathBuf,
}

impl Listing {
    pub(super) fn at(data_dir: &std::path::Path) -> Listing {
        Listing {
            path: data_dir.join("last-listing.json"),
        }
    }

    /// Remembers a page's sessions by their row numbers.
    fn save(&self, page: &SessionPage) -> anyhow::Result<()> {
        let ids: Vec<&str> = page
            .sessions
            .iter()
            .map(|s| s.session_id.as_str())
            .collect();
        let value = serde_json::json!({"offset": page.offset, "sessions": ids});
        if let Some(dir) = self.path.parent() {
            eywa::fs::create_private_dir(dir)?;
        }
        eywa::fs::write_private_atomically(&self.path, value.to_string().as_bytes())?;
        Ok(())
    }

    /// A selection of the last listing as seed 001 takes it: `1`, `1,3`, `1-3`, `all`,
    /// or `skip` (nothing); anything else is a session reference ([`resolve`]). Empty
    /// when the selection is `skip`.
    ///
    /// [`resolve`]: Self::resolve
    pub(super) fn select(&self, given: &[String]) -> anyhow::Result<Vec<String>> {
        let mut out = Vec::new();
        for part in given.iter().flat_map(|g| g.split(',')) {
            let part = part.trim();
            match part {
                "" => {}
                "skip" => return Ok(Vec::new()),
                "all" => {
                    let (offset, ids) = self.rows()?;
                    for n in offset + 1..=offset + ids.len() {
                        out.push(self.resolve(&n.to_string())?);
                    }
                }
                _ => match part.split_once('-').and_then(|(a, b)| {
                    Some((
                        a.trim().parse::<usize>().ok()?,
                        b.trim().parse::<usize>().ok()?,
                    ))
                }) {
                    Some((from, to)) if from <= to && to - from < 1_000 => {
                        for n in from..=to {
                            out.push(self.resolve(&n.to_string())?);
                        }
                    }
                    Some((from, to)) => {
                        anyhow::bail!("`{from}-{to}` is not a range of listed rows")
                    }
                    None => out.push(self.resolve(part)?),
                },
            }
        }
        out.dedup();
        Ok(out)
    }

    /// The last listing: its offset and its sessions.
    fn rows(&self) -> anyhow::Result<(usize, Vec<serde_json::Value>)> {
        let text = std::fs::read_to_string(&self.path)
            .map_err(|_| anyhow::anyhow!("no `eywa sessions list` was run yet: run it first"))?;
        let value: serde_json::Value = serde_json::from_str(&text)?;
        let offset = value["offset"].as_u64().unwrap_or(0) as usize;
        Ok((
            offset,
            value["sessions"].as_array().cloned().unwrap_or_default(),
        ))
    }

    /// A session reference: a number of one to three digits is a row of the last listing;
    /// anything else (an id, a prefix of four characters or more) is passed on.
    pub(super) fn resolve(&self, reference: &str) -> anyhow::Result<String> {
        let reference = reference.trim();
        let numeric =
            (1..=3).contains(&reference.len()) && reference.bytes().all(|b| b.is_ascii_digit());
        if !numeric {
            return Ok(reference.to_owned());
        }
        let n: usize = reference.parse()?;
        let (offset, ids) = self.rows().map_err(|_| {
            anyhow::anyhow!(
                "`{n}` names a row of `eywa sessions list`, and none was listed yet: run it first"
            )
        })?;
        n.checked_sub(offset + 1)
            .and_then(|i| ids.get(i))
            .and_then(|id| id.as_str())
            .map(str::to_owned)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "the last `eywa sessions list` showed rows {}-{}, not {n}",
                    offset + 1,
                    offset + ids.len()
                )
            })
    }
}
