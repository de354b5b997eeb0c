//! `eywa docs`: add markdown, text and PDF files as documents, list them, show a version,
//! and their history; from the store or through a running server alike.

use std::process::ExitCode;

use clap::Subcommand;
use eywa::docs::DocumentInfo;
use eywa::model::Timestamp;
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
    /// Add files, and the .md, .txt and .pdf files under folders (a changed file is a new
    /// version; an unchanged one is left as it is)
    Add {
        /// Files or folders
        #[arg(required = true)]
        paths: Vec<std::path::PathBuf>,
        /// Their project (else the project whose folder holds each file)
        #[arg(long)]
        project: Option<String>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Follow folders: every ingest (`serve` polls) adds what changed in them; adds them
    /// now. With no folder, lists those followed
    Watch {
        /// Folders
        folders: Vec<std::path::PathBuf>,
        /// Their project (else the project whose folder holds each file)
        #[arg(long)]
        project: Option<String>,
        /// Stop following these folders (what was added stays)
        #[arg(long)]
        stop: bool,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Documents, most recently added first
    List {
        /// Documents to show
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Documents to skip
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// List the files that could not be read instead (path, why, when), most recent
        /// first; one in a followed folder is tried again once it changes
        #[arg(long)]
        failed: bool,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// A document's text: the latest version, `--version N`, or the one current `--as-of`
    #[command(disable_version_flag = true)]
    Show {
        /// Its id or its path
        document: String,
        /// A version number
        #[arg(long, value_name = "N", conflicts_with = "as_of")]
        version: Option<u32>,
        /// The version current at this time (RFC 3339 or YYYY-MM-DD)
        #[arg(long, value_parser = parse_time)]
        as_of: Option<Timestamp>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Every version of a document, oldest first
    History {
        /// Its id or its path
        document: String,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
}

fn parse_time(s: &str) -> Result<Timestamp, String> {
    Timestamp::parse(s).ok_or_else(|| format!("`{s}` is not RFC 3339 or YYYY-MM-DD"))
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let client = Client::connect(paths)?;
    match args.command {
        Command::Add {
            paths,
            project,
            json,
        } => {
            let outcomes = client.add_documents(&paths, project.as_deref())?;
            let failed = outcomes.iter().filter(|o| o.result.is_err()).count();
            if json {
                let items: Vec<_> = outcomes.iter().map(outcome_json).collect();
                crate::app::print_json(&json!({ "outcomes": items, "failed": failed }))?;
            } else {
                for o in &outcomes {
                    match &o.result {
                        Ok((info, added)) => outln!(
                            "{}  v{}  {:<9} {}  {}",
                            info.id,
                            info.version,
                            added.as_str(),
                            info.mime,
                            info.path
                        ),
                        Err(why) => errln!("eywa: {why}"),
                    }
                }
            }
            // A folder with a file that cannot be read is still added: a failure is when
            // nothing was, or a file named on its own was refused.
            let named: Vec<std::path::PathBuf> = paths
                .iter()
                .filter(|p| !p.is_dir())
                .flat_map(|p| [std::path::absolute(p).ok(), std::fs::canonicalize(p).ok()])
                .flatten()
                .collect();
            let named_failed = outcomes.iter().any(|o| {
                o.result.is_err() && named.iter().any(|p| p.as_os_str() == o.path.as_str())
            });
            if failed > 0 && (failed == outcomes.len() || named_failed) {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Watch {
            folders,
            project,
            stop,
            json,
        } => {
            let eywa::engine::Followed {
                outcomes,
                folders: followed,
            } = client.follow_folders(&folders, project.as_deref(), stop)?;
            let failed = outcomes.iter().filter(|o| o.result.is_err()).count();
            if json {
                let items: Vec<_> = outcomes.iter().map(outcome_json).collect();
                let folders: Vec<_> = followed
                    .iter()
                    .map(|(path, project)| json!({ "path": path, "project": project }))
                    .collect();
                crate::app::print_json(&json!({ "outcomes": items, "followed": folders }))?;
            } else {
                let added = outcomes.iter().filter(|o| o.result.is_ok()).count();
                if !folders.is_empty() && !stop {
                    outln!("added or checked {added} files; {failed} cannot be read");
                }
                for o in &outcomes {
                    if let Err(why) = &o.result {
                        errln!("eywa: {why}");
                    }
                }
                if followed.is_empty() {
                    outln!("No folder is followed.");
                }
                for (path, project) in &followed {
                    let project = project
                        .as_deref()
                        .map(|p| format!("  [{p}]"))
                        .unwrap_or_default();
                    outln!("following {path}{project}");
                }
            }
        }
        Command::List {
            limit,
            offset,
            failed: true,
            json,
        } => {
            let (failed, total) = client.failed_documents(limit, offset)?;
            if json {
                let items: Vec<_> = failed.iter().map(failed_json).collect();
                crate::app::print_json(&json!({ "failed": items, "total": total }))?;
            } else if failed.is_empty() {
                outln!("No file failed to be read.");
            } else {
                for f in &failed {
                    outln!("{}  {}", f.failed_at.to_rfc3339(), f.path);
                    outln!("    {}", f.reason);
                }
                if total > (offset + failed.len()) as u64 {
                    outln!(
                        "{}-{} of {total}; next: --offset {}",
                        offset + 1,
                        offset + failed.len(),
                        offset + failed.len()
                    );
                }
            }
        }
        Command::List {
            limit,
            offset,
            failed: false,
            json,
        } => {
            let (docs, total) = client.list_documents(limit, offset)?;
            if json {
                let items: Vec<_> = docs.iter().map(to_json).collect();
                crate::app::print_json(&json!({ "documents": items, "total": total }))?;
            } else if docs.is_empty() {
                outln!("No documents (eywa docs add PATH adds some).");
            } else {
                for d in &docs {
                    let pages = if d.pages > 0 {
                        format!(", {} pages", d.pages)
                    } else {
                        String::new()
                    };
                    outln!(
                        "{}  v{}  {}  {}{pages}  {}",
                        d.id,
                        d.version,
                        d.title,
                        d.mime,
                        d.path
                    );
                }
            }
        }
        Command::Show {
            document,
            version,
            as_of,
            json,
        } => {
            let doc = client.document(&document, version, as_of)?;
            if json {
                let mut value = to_json(&doc.info);
                value["text"] = json!(doc.pages);
                crate::app::print_json(&value)?;
            } else {
                let d = &doc.info;
                outln!("{}  v{}  {}  ({})", d.id, d.version, d.title, d.path);
                if !d.summary.is_empty() {
                    outln!("summary: {}", d.summary);
                }
                if !d.key_concepts.is_empty() {
                    outln!("concepts: {}", d.key_concepts.join(", "));
                }
                for (i, page) in doc.pages.iter().enumerate() {
                    outln!();
                    if d.pages > 0 {
                        outln!("--- page {} ---", i + 1);
                    }
                    outln!("{page}");
                }
            }
        }
        Command::History { document, json } => {
            let versions = client.document_history(&document)?;
            if json {
                let items: Vec<_> = versions.iter().map(to_json).collect();
                crate::app::print_json(&json!({ "versions": items }))?;
            } else {
                for d in &versions {
                    let until = d.replaced_at.map_or_else(
                        || "latest".to_owned(),
                        |t| format!("until {}", t.to_rfc3339()),
                    );
                    outln!(
                        "v{}  {}  {}  {} bytes  {}",
                        d.version,
                        d.added_at.to_rfc3339(),
                        until,
                        d.bytes,
                        &d.hash[..12.min(d.hash.len())]
                    );
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What adding one file did, as JSON.
/// A file that failed to be read, as `--json` prints it (also in `eywa stats --json`).
pub(super) fn failed_json(f: &eywa::docs::FailedDocument) -> serde_json::Value {
    json!({
        "path": f.path,
        "reason": f.reason,
        "failed_at": f.failed_at.to_rfc3339(),
        "bytes": f.bytes,
        "modified_at": f.modified_at.to_rfc3339(),
    })
}

fn outcome_json(o: &eywa::engine::DocumentOutcome) -> serde_json::Value {
    match &o.result {
        Ok((info, added)) => json!({
            "path": o.path,
            "added": added.as_str(),
            "document": to_json(info),
        }),
        Err(why) => json!({ "path": o.path, "error": why }),
    }
}

fn to_json(d: &DocumentInfo) -> serde_json::Value {
    json!({
        "id": d.id,
        "path": d.path,
        "version": d.version,
        "hash": d.hash,
        "mime": d.mime,
        "bytes": d.bytes,
        "pages": d.pages,
        "chars": d.chars,
        "title": d.title,
        "summary": d.summary,
        "key_concepts": d.key_concepts,
        "entities": d.entities.iter().map(|(t, n)| format!("{t}:{n}")).collect::<Vec<_>>(),
        "project": d.project,
        "modified_at": d.modified_at.to_rfc3339(),
        "added_at": d.added_at.to_rfc3339(),
        "replaced_at": d.replaced_at.map(Timestamp::to_rfc3339),
    })
}
