//! eywa: a knowledge-graph memory for coding agents, built from Claude Code transcripts.
//!
//! Sessions become Episode nodes, the projects and tools they touched become Entity nodes,
//! and edges carry validity windows; `get` ranks session handoffs as the Eywa formula does.
//!
//! ```
//! use eywa::engine::{Engine, EngineConfig};
//!
//! # let claude = tempfile::tempdir()?;
//! # let project = claude.path().join("projects/-w-demo");
//! # std::fs::create_dir_all(&project)?;
//! # let line = |kind: &str, text: &str| format!(
//! #     r#"{{"type":"{kind}","cwd":"/w/demo","timestamp":"2026-01-05T10:00:00Z","message":{{"id":"m","content":[{{"type":"text","text":"{text}"}}]}}}}"#);
//! # std::fs::write(project.join("0b5e6f1c-0000-4000-8000-000000000001.jsonl"),
//! #     [line("user", "Fix the tokenizer"), line("assistant", "Fixed the tokenizer.")].join("\n"))?;
//! let engine = Engine::open(EngineConfig::temporary(claude.path()))?;
//! let report = engine.ingest()?;
//! assert_eq!(report.counts.episodes, 1);
//!
//! let touched = engine.what_touched("project:demo", &Default::default(), 10)?;
//! assert_eq!(touched.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The API: the engine and the types its calls take and give, the gRPC messages and a
// client for them, the server.
pub mod api;
pub mod backup;
pub mod cancel;
pub mod docs;
pub mod engine;
pub mod error;
pub mod memory;
pub mod model;
pub mod present;
pub mod server;
pub mod tokens;
pub mod web;

// Rooms the `eywa` binary, the tests and the benches reach into; not part of the API.
#[doc(hidden)]
pub mod claude;
#[doc(hidden)]
pub mod embed;
#[doc(hidden)]
pub mod extract;
#[doc(hidden)]
pub mod fs;
#[doc(hidden)]
pub mod graph;
#[doc(hidden)]
pub mod host;
#[doc(hidden)]
pub mod index;
#[doc(hidden)]
pub mod retrieve;
#[doc(hidden)]
pub mod tools;

mod archive;
mod check;
mod ingest;
mod library;
mod priority;
mod semantic;

pub use self::error::{Error, Result};
