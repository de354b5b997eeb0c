//! What one transcript contributes to the graph, as extraction hands it to the writer.

use super::{Edge, Handoff, Node};

/// Everything one transcript contributes to the graph.
#[derive(Debug, Clone)]
pub struct SessionFacts {
    pub episode: Node,
    /// Main sessions have one; subagent runs do not (`get` ranks sessions, as Eywa does).
    pub handoff: Option<Handoff>,
    /// Project and tool entities. Shared with other sessions: merged on write.
    pub entities: Vec<Node>,
    pub edges: Vec<Edge>,
}

/// A subagent a session started: from the result of its `Task`/`Agent` call.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Spawn {
    pub agent_id: String,
    pub tool_use_id: Option<String>,
    pub agent_type: Option<String>,
    pub description: Option<String>,
    /// What the tool result reported of the run (`totalDurationMs`, `totalTokens`,
    /// `totalToolUseCount`).
    pub duration_ms: Option<u64>,
    pub tokens: Option<u64>,
    pub tool_uses: Option<u64>,
}
