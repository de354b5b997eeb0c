//! The agents' side of the `eywa` binary: eywa's tools served over MCP (`mcp`, on stdio
//! and at `/mcp` beside the API), Claude Code's hooks answered (`hook`), and both
//! registered in Claude Code's settings (`setup`).

pub(crate) mod hook;
pub(crate) mod mcp;
pub(crate) mod setup;
