//! `eywa open [REF]`: the web view's address of a session, a node or a search, printed
//! and, with `--browser`, opened.

use std::process::ExitCode;

use eywa::server::Announcement;

use crate::app::Paths;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// A session (its id or a prefix of at least 4 characters), a node (`project:eywa`,
    /// `file:src/lib.rs`, `tool:Bash`, `session:7acd37a8`), or nothing: the projects
    reference: Option<String>,
    /// The search page for these words instead
    #[arg(long, value_name = "QUERY", conflicts_with = "reference")]
    search: Option<String>,
    /// Also open it in the browser (xdg-open, or open on macOS)
    #[arg(long)]
    browser: bool,
    /// Print JSON: {"url", "serving"}
    #[arg(long)]
    json: bool,
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    // The running server's address; else where `serve` would listen.
    let running = Announcement::read_live(&paths.data_dir);
    let base = match &running {
        Some(a) if a.tls_cert.is_some() => format!("https://{}", a.addr),
        Some(a) => format!("http://{}", a.addr),
        None => format!(
            "http://{}",
            paths
                .addr
                .as_deref()
                .unwrap_or(&paths.settings.listen.value)
        ),
    };
    let path = match &args.search {
        Some(query) => eywa::web::search_page(query),
        None => eywa::web::page_of(args.reference.as_deref()),
    };
    let url = format!("{base}{path}");
    if args.json {
        crate::app::print_json(&serde_json::json!({"url": url, "serving": running.is_some()}))?;
    } else {
        outln!("{url}");
    }
    if running.is_none() {
        errln!("eywa: no eywa serve is running for this data dir: start one with `eywa serve`");
    }
    if args.browser {
        let opener = if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        };
        let status = std::process::Command::new(opener)
            .arg(&url)
            .status()
            .map_err(|e| anyhow::anyhow!("cannot run {opener} to open {url}: {e}"))?;
        if !status.success() {
            anyhow::bail!("{opener} could not open {url} ({status})");
        }
    }
    Ok(ExitCode::SUCCESS)
}
