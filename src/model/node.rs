//! Nodes of the knowledge graph (seed 002): episodes (sessions and subagent runs),
//! entities, documents and memories.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{DocRef, NodeId, Timestamp};

/// A node of the knowledge graph (seed 002): the common fields and one kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub id: NodeId,
    /// What a person calls it: a project's name, a tool's name, a session's headline.
    pub name: String,
    pub kind: NodeKind,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(default)]
    pub doc_refs: Vec<DocRef>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum NodeKind {
    Episode(Box<Episode>),
    Entity(Entity),
    Document(Document),
    Memory(Memory),
}

impl NodeKind {
    /// `Episode`, `Project`, `File`, … : the entity type for entities, else the node kind.
    pub fn label(&self) -> &'static str {
        match self {
            NodeKind::Episode(_) => "Episode",
            NodeKind::Entity(e) => e.entity_type.as_str(),
            NodeKind::Document(_) => "Document",
            NodeKind::Memory(_) => "Memory",
        }
    }

    /// A one-byte tag used in index keys.
    pub fn tag(&self) -> u8 {
        match self {
            NodeKind::Episode(_) => 1,
            NodeKind::Entity(e) => 16 + e.entity_type as u8,
            NodeKind::Document(_) => 2,
            NodeKind::Memory(_) => 3,
        }
    }
}

impl Node {
    /// The node of an episode: created at its start, updated at its end.
    pub fn from_episode(id: NodeId, name: String, episode: Episode) -> Node {
        Node {
            id,
            name,
            created_at: episode.start,
            updated_at: episode.end,
            kind: NodeKind::Episode(Box::new(episode)),
            content: None,
            properties: BTreeMap::new(),
            doc_refs: Vec::new(),
        }
    }

    pub fn episode(&self) -> Option<&Episode> {
        match &self.kind {
            NodeKind::Episode(e) => Some(e),
            _ => None,
        }
    }

    pub fn entity(&self) -> Option<&Entity> {
        match &self.kind {
            NodeKind::Entity(e) => Some(e),
            _ => None,
        }
    }
}

/// One Claude Code session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    /// The session uuid (the transcript's file stem).
    pub session_id: String,
    /// Its first 8 characters, as Eywa names handoffs.
    pub short_id: String,
    /// The transcript this episode was read from.
    pub source_path: String,
    /// Name of the main project (the first `cwd` of the session).
    pub project: String,
    /// Canonical path of the main project.
    pub project_path: String,
    /// The first working directory seen in the session.
    pub cwd: String,
    #[serde(default)]
    pub git_branch: Option<String>,
    /// Models that answered, most used first.
    #[serde(default)]
    pub models: Vec<String>,
    #[serde(default)]
    pub version: Option<String>,
    pub start: Timestamp,
    pub end: Timestamp,
    /// Minutes of work: the span less pauses over 30 minutes.
    #[serde(default)]
    pub active_minutes: u32,
    /// Lines of type `user` (typed prompts, tool results, command wrappers).
    pub user_messages: u32,
    /// Assistant API responses (lines sharing a `message.id` count once).
    pub assistant_messages: u32,
    /// User lines that are a person typing, not tool results or wrappers.
    pub prompts: u32,
    pub tool_calls: u32,
    pub title: String,
    pub substance: u8,
    /// Set when this episode is a subagent run.
    #[serde(default)]
    pub agent: Option<AgentInfo>,
    /// Tokens, each API response counted once at its most complete.
    #[serde(default)]
    pub tokens: TokenUsage,
    /// The conversation's slug, shared by its resumed sessions.
    #[serde(default)]
    pub slug: Option<String>,
    /// Compactions, in order: the conversation has one segment more than it has these.
    #[serde(default)]
    pub compactions: Vec<Compaction>,
    /// Sessions whose lines this one replays (it resumes them).
    #[serde(default)]
    pub resumes: Vec<String>,
}

/// One compaction (Q8): where a new segment of the conversation starts, and the summary
/// Claude Code wrote of everything before it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compaction {
    #[serde(default)]
    pub at: Option<Timestamp>,
    /// `manual` or `auto`; `None` for a compact summary without its boundary line.
    #[serde(default)]
    pub trigger: Option<String>,
    #[serde(default)]
    pub pre_tokens: Option<u64>,
    /// The `isCompactSummary` text ("This session is being continued…").
    #[serde(default)]
    pub summary: Option<String>,
}

/// Token counts of a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub input: u64,
    pub output: u64,
    pub cache_creation: u64,
    pub cache_read: u64,
}

/// How Claude Code stored a subagent's transcript (three layouts over its versions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AgentLayout {
    /// ≤ 1.0.x: `isSidechain` lines inside the parent's own file.
    Inline,
    /// 2.0.x: `projects/<dir>/agent-<id>.jsonl` beside the parent.
    RootLevel,
    /// ≥ 2.1: `projects/<dir>/<session>/subagents/agent-<id>.jsonl` with a `.meta.json`.
    Nested,
    /// A workflow run's agent: `<session>/subagents/workflows/<run>/agent-<id>.jsonl`.
    Workflow,
}

/// What is known of a subagent run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    pub agent_id: String,
    /// The session that spawned it, when known.
    #[serde(default)]
    pub parent_session: Option<String>,
    #[serde(default)]
    pub agent_type: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// The parent's `Task`/`Agent` tool call that started it.
    #[serde(default)]
    pub tool_use_id: Option<String>,
    pub layout: AgentLayout,
    /// Its final report (the last assistant text of at least 200 characters).
    #[serde(default)]
    pub summary: Option<String>,
    /// What the parent's tool result reported of the run: wall time, tokens, tool calls.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    #[serde(default)]
    pub tokens: Option<u64>,
    #[serde(default)]
    pub tool_uses: Option<u64>,
}

impl Episode {
    pub fn duration_minutes(&self) -> u32 {
        let ms = (self.end.0 - self.start.0).max(0);
        u32::try_from((ms + 30_000) / 60_000).unwrap_or(u32::MAX)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum EntityType {
    Project = 0,
    File = 1,
    Tool = 2,
    Concept = 3,
    Person = 4,
    Organization = 5,
    Location = 6,
}

impl EntityType {
    pub const ALL: [EntityType; 7] = [
        EntityType::Project,
        EntityType::File,
        EntityType::Tool,
        EntityType::Concept,
        EntityType::Person,
        EntityType::Organization,
        EntityType::Location,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EntityType::Project => "Project",
            EntityType::File => "File",
            EntityType::Tool => "Tool",
            EntityType::Concept => "Concept",
            EntityType::Person => "Person",
            EntityType::Organization => "Organization",
            EntityType::Location => "Location",
        }
    }

    /// Parses a type name, case-insensitively.
    pub fn parse(s: &str) -> Option<Self> {
        EntityType::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s.trim()))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    pub entity_type: EntityType,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Canonical path, for projects and files.
    #[serde(default)]
    pub path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// `md`, `txt` or `pdf`.
    pub mime: String,
    pub path: String,
    /// sha256 of the content, hex.
    pub hash: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemoryType {
    Stm,
    Ltm,
    Procedural,
}

impl MemoryType {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryType::Stm => "STM",
            MemoryType::Ltm => "LTM",
            MemoryType::Procedural => "PROCEDURAL",
        }
    }

    /// Parses a type name, case-insensitively.
    pub fn parse(s: &str) -> Option<Self> {
        [MemoryType::Stm, MemoryType::Ltm, MemoryType::Procedural]
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s.trim()))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecayState {
    pub last_access: Timestamp,
    pub weight: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub memory_type: MemoryType,
    pub importance: f32,
    pub decay_state: DecayState,
}
