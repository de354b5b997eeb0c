//! `eywa mcp`: eywa's tools for agents over the Model Context Protocol, on stdio; `serve`
//! answers the same tools over streamable HTTP at `/mcp`.
//!
//! Every call goes through the CLI's [`Client`]: to the running server when there is one,
//! else to the store, opened when a call comes and closed once [`LINGER`] passes without
//! another (an MCP server lives as long as the agent's session, and must not hold the
//! store's lock against the CLI, hooks or a server started later). Answers are compact markdown with ids and resume commands, cut
//! to `max_tokens` at whole lines. Bad arguments are tool errors (`isError`), with what
//! was wrong, never protocol failures.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use eywa::engine::Engine;
use eywa::retrieve::context::estimate_tokens;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

use eywa::tools::{Arguments, TOOLS};

use crate::app::Paths;
use crate::app::client::Client;

mod tools;

pub(crate) use self::tools::full_handoff;
use self::tools::{
    eywa_context, eywa_docs, eywa_forget, eywa_get, eywa_recall, eywa_related, eywa_remember,
    eywa_search, eywa_session, eywa_walk, eywa_what_touched, tool_list,
};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// Serves the tools on stdin/stdout until the client closes them.
pub(crate) fn run(paths: &Paths, _args: Args) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let tools = Tools {
        backend: Arc::new(Backend::PerCall {
            paths: paths.clone(),
            held: Arc::default(),
        }),
    };
    let backend = tools.backend.clone();
    if let Backend::PerCall { held, .. } = &*backend {
        let held = held.clone();
        std::thread::spawn(move || close_when_idle(&held));
    }
    runtime.block_on(async move {
        let service = tools
            .serve(rmcp::transport::stdio())
            .await
            .context("the MCP client did not initialize")?;
        service.waiting().await.context("the MCP session failed")?;
        anyhow::Ok(())
    })?;
    // The client is gone: a store still open is flushed and closed.
    if let Backend::PerCall { held, .. } = &*backend {
        drop(lock(held).take());
    }
    Ok(ExitCode::SUCCESS)
}

/// The tools over streamable HTTP, answered from the store `serve` holds; `stop` ends every
/// open MCP session. A server that asks every call for a bearer token (`tokens`) answers
/// whatever name it was reached by; one that asks none, only loopback names.
pub(crate) fn http_service(
    paths: &Paths,
    engine: Arc<Engine>,
    tokens: bool,
    allow_hosts: &[String],
    stop: tokio_util::sync::CancellationToken,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    Tools,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let tools = Tools {
        backend: Arc::new(Backend::Shared(paths.clone(), engine)),
    };
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(stop);
    // The `Host` check stops DNS rebinding: a web page whose name resolves to this
    // machine, calling the tools from the user's browser. Such a page cannot send a
    // bearer token (it does not know it, and a cross-origin `Authorization` header needs
    // a CORS preflight nothing here answers), so with tokens the check would only refuse
    // the names the server is rightly reached by (its address, its DNS name, a proxy's).
    if tokens {
        config = config.disable_allowed_hosts();
    } else if !allow_hosts.is_empty() {
        // Loopback names (rmcp's own list), and the names given with `--allow-host`.
        let hosts: Vec<String> = config
            .allowed_hosts
            .iter()
            .cloned()
            .chain(allow_hosts.iter().cloned())
            .collect();
        config = config.with_allowed_hosts(hosts);
    }
    StreamableHttpService::new(move || Ok(tools.clone()), Arc::default(), config)
}

/// Where a tool call's answers come from.
enum Backend {
    /// `eywa mcp`: the server announced for the data dir, else the store, opened for a
    /// call and kept while calls follow each other closely.
    PerCall {
        paths: Paths,
        held: Arc<std::sync::Mutex<Option<Held>>>,
    },
    /// `serve`'s own store.
    Shared(Paths, Arc<Engine>),
}

/// The client of the last call, and when that call ended.
struct Held {
    client: Client,
    last: std::time::Instant,
}

/// How long `eywa mcp` keeps a store it opened after a call. Short: the lock is the CLI's,
/// the hooks' and a new server's too, and they wait at most 1 s for it (closing takes up
/// to 250 ms more).
const LINGER: std::time::Duration = std::time::Duration::from_millis(500);

fn lock(held: &std::sync::Mutex<Option<Held>>) -> std::sync::MutexGuard<'_, Option<Held>> {
    held.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Closes the held client once no call has come for [`LINGER`].
fn close_when_idle(held: &std::sync::Mutex<Option<Held>>) {
    loop {
        std::thread::sleep(LINGER / 5);
        let idle = {
            let mut slot = lock(held);
            match slot.as_ref() {
                Some(h) if h.last.elapsed() >= LINGER => slot.take(),
                _ => None,
            }
        };
        // Closed outside the lock: a call meanwhile opens its own.
        drop(idle);
    }
}

impl Backend {
    /// Runs `f` with a client: `serve`'s store, or the held client (a new one when none
    /// is held). A call that fails lets its client go (a server that went away is asked
    /// again next time).
    fn with_client<T>(
        &self,
        f: impl FnOnce(&Client) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        match self {
            Backend::Shared(paths, engine) => f(&Client::shared(paths, engine.clone())),
            Backend::PerCall { paths, held } => {
                let mut slot = lock(held);
                let client = match slot.take() {
                    Some(h) => h.client,
                    None => Client::connect_for_call(paths)?,
                };
                let result = f(&client);
                if result.is_ok() {
                    *slot = Some(Held {
                        client,
                        last: std::time::Instant::now(),
                    });
                } else {
                    drop(slot);
                    drop(client);
                }
                result
            }
        }
    }
}

/// eywa's MCP server.
#[derive(Clone)]
pub(crate) struct Tools {
    backend: Arc<Backend>,
}

/// Why a tool call gave no answer: said to the agent as a tool error.
#[derive(Debug)]
pub(crate) struct ToolError(String);

impl From<anyhow::Error> for ToolError {
    fn from(e: anyhow::Error) -> Self {
        ToolError(format!("{e:#}"))
    }
}

impl From<String> for ToolError {
    fn from(s: String) -> Self {
        ToolError(s)
    }
}

impl From<eywa::tools::ArgumentError> for ToolError {
    fn from(e: eywa::tools::ArgumentError) -> Self {
        ToolError(e.0)
    }
}

pub(super) type Answer = Result<String, ToolError>;

/// What the server tells an agent on connecting.
const INSTRUCTIONS: &str = "eywa remembers this machine's earlier Claude Code sessions: \
their handoffs (what happened, insights, open threads), the files and projects they touched, \
and memories agents saved. Call eywa_get at the start of work to see what earlier sessions \
left; eywa_search to find where something was discussed; eywa_what_touched before changing a \
file; eywa_remember to keep a fact for later sessions. Every answer names session ids and \
the command to resume them.";

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("eywa", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let Some(spec) = TOOLS.iter().find(|t| t.name == name) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "no tool named {}; eywa's tools: {}",
                    eywa::error::quote(&name),
                    TOOLS.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
                ),
                None,
            ));
        };
        let arguments = request.arguments.unwrap_or_default();
        let tools = self.clone();
        let answer = tokio::task::spawn_blocking(move || {
            let args = Arguments::check(spec, &arguments)?;
            tools.call(spec.name, &args)
        })
        .await
        .unwrap_or_else(|e| {
            // A bug, never the caller's input: nothing of the panic goes back.
            tracing::error!(tool = %name, error = %eywa::error::bounded_message(&e.to_string()), "an MCP tool failed");
            Err(ToolError(
                "the tool failed on this call (a bug: eywa's log says where)".to_owned(),
            ))
        });
        let result = match answer {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(ToolError(why)) => {
                // At most 200 characters of any input, 2,000 in all, whatever the tool
                // quoted.
                let why = eywa::error::bounded_message(&why).into_owned();
                tracing::debug!(tool = %name, error = %why, "MCP tool call refused");
                CallToolResult::error(vec![ContentBlock::text(why)])
            }
        };
        Ok(result.into())
    }
}

impl Tools {
    fn call(&self, name: &str, args: &Arguments) -> Answer {
        let text = self
            .backend
            .with_client(|client| self.answer(client, name, args))?;
        // What eywa stores is redacted as it comes in; this is the last look before an
        // agent reads it (a store from before documents and memories were redacted, a
        // server of an older version).
        let text =
            match eywa::extract::redact(&text, &mut eywa::extract::RedactionCounts::default()) {
                std::borrow::Cow::Owned(redacted) => redacted,
                std::borrow::Cow::Borrowed(_) => text,
            };
        // `eywa_get` keeps the Python Eywa's text whole unless a budget is asked for.
        match args.optional_int("max_tokens", 1, MAX_TOKENS)? {
            Some(budget) => Ok(fit(&text, budget as usize)),
            None if name == "eywa_get" => Ok(text),
            None => Ok(fit(&text, DEFAULT_MAX_TOKENS)),
        }
    }

    fn answer(&self, client: &Client, name: &str, args: &Arguments) -> Answer {
        Ok(match name {
            "eywa_get" => eywa_get(client, args)?,
            "eywa_extract" => self.eywa_extract(client, args)?,
            "eywa_search" => eywa_search(client, args)?,
            "eywa_context" => eywa_context(client, args)?,
            "eywa_related" => eywa_related(client, args)?,
            "eywa_what_touched" => eywa_what_touched(client, args)?,
            "eywa_walk" => eywa_walk(client, args)?,
            "eywa_session" => eywa_session(client, args)?,
            "eywa_remember" => eywa_remember(client, args)?,
            "eywa_recall" => eywa_recall(client, args)?,
            "eywa_forget" => eywa_forget(client, args)?,
            "eywa_docs" => eywa_docs(client, args)?,
            other => {
                return Err(ToolError(format!(
                    "no tool named {}",
                    eywa::error::quote(other)
                )));
            }
        })
    }

    /// Reads a session now: the one named, else the newest transcript of this process's
    /// working directory (Claude Code starts an MCP server there).
    fn eywa_extract(&self, client: &Client, args: &Arguments) -> Answer {
        let session = match args.text("session_id")? {
            Some(id) => id,
            None => self.current_session()?,
        };
        let read = client.ingest_session(&session)?;
        let short = eywa::claude::short_id(&read.session_id);
        let Some(handoff) = read.handoff else {
            return Ok(format!("Session {short} has no extractable content"));
        };
        Ok(format!(
            "Handoff extracted: {short}.md\n\n{}\n{}",
            eywa::extract::render_markdown(&handoff, &handoff.sections),
            eywa::present::handoff::resume_line(&handoff)
        ))
    }
}

impl Tools {
    /// The transcript of the session this server runs for.
    fn current_session(&self) -> Result<String, ToolError> {
        let Backend::PerCall { paths, .. } = &*self.backend else {
            return Err(ToolError(
                "give session_id: over HTTP, eywa cannot see which session is yours".into(),
            ));
        };
        let cwd = std::env::current_dir()
            .map_err(|e| ToolError(format!("cannot read the working directory: {e}")))?;
        Ok(current_transcript(&paths.claude_dir, &cwd)?
            .display()
            .to_string())
    }
}

/// The newest main transcript Claude Code keeps for `cwd`.
pub(crate) fn current_transcript(
    claude_dir: &std::path::Path,
    cwd: &std::path::Path,
) -> Result<std::path::PathBuf, ToolError> {
    let folder = claude_dir
        .join("projects")
        .join(eywa::engine::encode_project_dir(&cwd.display().to_string()));
    let newest = std::fs::read_dir(&folder)
        .map_err(|e| {
            ToolError(format!(
                "no Claude Code sessions for {} ({}: {e}); give session_id",
                cwd.display(),
                folder.display()
            ))
        })?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| !n.to_string_lossy().starts_with("agent-"))
        })
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max();
    newest.map(|(_, p)| p).ok_or_else(|| {
        ToolError(format!(
            "no session transcript in {}; give session_id",
            folder.display()
        ))
    })
}

/// Answers cut to this many tokens unless `max_tokens` says otherwise.
pub(super) const DEFAULT_MAX_TOKENS: usize = 2_000;
/// The largest `max_tokens`.
pub(super) const MAX_TOKENS: i64 = 100_000;
/// The Python Eywa's cap on `max_handoffs`.
pub(super) const MAX_HANDOFFS: i64 = 5;

/// `text` whole when it fits in `budget` tokens (seed 001's estimate), else its first
/// whole lines that do, and a line saying so.
fn fit(text: &str, budget: usize) -> String {
    if estimate_tokens(text) <= budget {
        return text.to_owned();
    }
    let note = format!("\n… cut to about {budget} tokens: ask again with a larger max_tokens");
    let room = budget.saturating_sub(estimate_tokens(&note)) * 4;
    let mut used = 0;
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let n = line.chars().count();
        if used + n > room {
            break;
        }
        used += n;
        out.push_str(line);
    }
    out.truncate(out.trim_end().len());
    out.push_str(&note);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn a_fitting_text_is_whole_and_a_long_one_is_cut_at_a_line() {
        assert_eq!(fit("short\n", 10), "short\n");
        let long: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let cut = fit(&long, 50);
        assert!(estimate_tokens(&cut) <= 50, "{cut}");
        assert!(cut.starts_with("line 0\nline 1\n"));
        assert!(cut.ends_with("ask again with a larger max_tokens"));
        assert!(!cut.contains("line 99"));
    }

    #[test]
    fn arguments_are_checked_with_clear_words() {
        let spec = TOOLS.iter().find(|t| t.name == "eywa_get").unwrap();
        let map = |v: Value| v.as_object().unwrap().clone();
        let unknown = map(json!({"qurey": "x"}));
        let e = Arguments::check(spec, &unknown).err().unwrap();
        assert!(e.0.contains("no argument `qurey`"), "{}", e.0);
        let given = map(json!({"days_back": "30", "max_handoffs": 9.0}));
        let args = Arguments::check(spec, &given).unwrap();
        assert_eq!(args.int("days_back", 14, 0, 100).unwrap(), 30);
        assert_eq!(args.int("max_handoffs", 3, 1, 5).ok(), None);
        let bad = map(json!({"days_back": "soon"}));
        let args = Arguments::check(spec, &bad).unwrap();
        let e = args.int("days_back", 14, 0, 100).err().unwrap();
        assert!(e.0.contains("days_back must be an integer"), "{}", e.0);
        let search = TOOLS.iter().find(|t| t.name == "eywa_search").unwrap();
        let e = Arguments::check(search, &map(json!({}))).err().unwrap();
        assert_eq!(e.0, "eywa_search needs \"query\"");
    }
}
