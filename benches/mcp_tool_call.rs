//! An agent's tool calls through `eywa mcp`, as Claude Code makes them: one `eywa mcp`
//! process on stdio, JSON-RPC requests written to it and each answer timed, without a
//! server (each call opens the store and closes it) and beside a running `eywa serve`
//! (each call is asked of it). Stores: 700 sessions shaped like a real `~/.claude`, and
//! 100,000 imported Python-Eywa sessions.
//!
//! ```sh
//! cargo bench --bench mcp_tool_call
//! ```

mod fixture;
mod scale;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Calls per tool and case.
const CALLS: usize = 40;
/// Calls per tool spaced past the store's linger.
const COLD_CALLS: usize = 12;

struct Mcp {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Mcp {
    fn start(data: &Path, claude: &Path) -> Mcp {
        let mut child = scale::eywa()
            .arg("--data-dir")
            .arg(data)
            .arg("--claude-dir")
            .arg(claude)
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut mcp = Mcp {
            child,
            stdin,
            stdout,
            next: 0,
        };
        mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "eywa mcp closed stdout"
            );
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == id {
                assert!(answer.get("error").is_none(), "{answer}");
                return answer["result"].clone();
            }
        }
    }

    /// Calls `tool` `CALLS` times, `gap` apart: each answer's time.
    fn times(&mut self, tool: &str, arguments: &Value, gap: Duration) -> Vec<Duration> {
        let calls = if gap.is_zero() { CALLS } else { COLD_CALLS };
        (0..calls)
            .map(|_| {
                std::thread::sleep(gap);
                // A token never seen before: no result cache answers the call.
                let mut arguments = arguments.clone();
                let query = arguments["query"].as_str().unwrap_or_default().to_owned();
                arguments["query"] = format!("{query} zq{}", self.next).into();
                let started = Instant::now();
                let result =
                    self.request("tools/call", json!({"name": tool, "arguments": arguments}));
                let took = started.elapsed();
                assert_eq!(result["isError"], false, "{tool}: {result}");
                took
            })
            .collect()
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn case(label: &str, data: &Path, claude: &Path, query: &str) {
    let get = json!({"query": query, "days_back": 30});
    let search = json!({"query": query, "limit": 5, "mode": "lexical"});
    for served in [false, true] {
        let server = served.then(|| scale::Serve::start(data));
        let mut mcp = Mcp::start(data, claude);
        let mode = if served { "server" } else { "no server" };
        for (tool, arguments) in [("eywa_get", &get), ("eywa_search", &search)] {
            println!(
                "mcp_tool_call/{label}/{mode}/{tool}: {}",
                scale::p50_p95(&mut mcp.times(tool, arguments, Duration::ZERO))
            );
        }
        if !served {
            // An agent's calls come seconds apart: past the 500 ms `eywa mcp` keeps a store
            // it opened, each opens it again.
            for (tool, arguments) in [("eywa_get", &get), ("eywa_search", &search)] {
                let mut times = mcp.times(tool, arguments, Duration::from_millis(900));
                println!(
                    "mcp_tool_call/{label}/{mode}, 900 ms apart/{tool}: {}",
                    scale::p50_p95(&mut times[..COLD_CALLS])
                );
            }
        }
        drop(mcp);
        drop(server);
    }
}

fn main() {
    let (tree, bytes, sessions) =
        fixture::claude_tree_shaped("claude-real-700-v1", 700, 250e3, 0.6);
    println!(
        "mcp_tool_call: real-shaped tree, {sessions} sessions, {:.0} MB",
        bytes as f64 / 1e6
    );
    let data = scale::ingested_store("store-real-700-v1", &tree);
    let query = format!("{} {}", fixture::word(2), fixture::word(5));
    case("real-700", &data, &tree, &query);
    let imported = scale::imported_store(100_000);
    case(
        "imported-100k",
        &imported.data_dir,
        &scale::empty_claude_dir(),
        "project-12 kw3 kw77",
    );
}
