//! What one transcript contributes to the graph, as extraction hands it to the writer.

use super::{Edge, Handoff, Node};

/// Everything one transcript contributes to the graph.
#[derive(Debug, Clone)]
pub struct SessionFacts {
    /// The transcript's Episode node: a main session or a subagent run.
    pub episode: Node,
    /// Main sessions have one; subagent runs do not (`get` ranks sessions, as Eywa does).
    pub handoff: Option<Handoff>,
    /// Project and tool entities. Shared with other sessions: merged on write.
    pub entities: Vec<Node>,
    /// Its edges to its projects, tools, concepts and files, and files' PART_OF their project.
    pub edges: Vec<Edge>,
}

/// A subagent a session started: from the result of its `Task`/`Agent` call.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Spawn {
    /// The subagent's id (`toolUseResult.agentId`).
    pub agent_id: String,
    /// The `Task`/`Agent` call the result answers; `None` when it names none.
    pub tool_use_id: Option<String>,
    /// The result's `agentType`, else the call's `subagent_type`, when either is given.
    pub agent_type: Option<String>,
    /// The call's `description`, when the call was seen.
    pub description: Option<String>,
    /// What the tool result reported of the run (`totalDurationMs`, `totalTokens`,
    /// `totalToolUseCount`).
    pub duration_ms: Option<u64>,
    /// `totalTokens`, when reported.
    pub tokens: Option<u64>,
    /// `totalToolUseCount`, when reported.
    pub tool_uses: Option<u64>,
}
