//! `eywa mcp` as a child process, spoken to over stdio as Claude Code does.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

/// `eywa mcp` on stdio, spoken to as Claude Code does: newline-delimited JSON-RPC.
pub(crate) struct Mcp {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl Mcp {
    pub(crate) fn start(mut eywa: std::process::Command) -> Mcp {
        let mut child = eywa
            .arg("mcp")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut mcp = Mcp {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        mcp.call(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "generated", "version": "1"}}),
        );
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    pub(crate) fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The answer to one request.
    pub(crate) fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "eywa mcp stopped"
            );
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == id {
                return answer;
            }
        }
    }

    /// Ends its input; what it wrote to stderr.
    pub(crate) fn stop(self) -> String {
        drop(self.stdin);
        let out = self.child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}
