//! Nodes of the knowledge graph (seed 002): episodes (sessions and subagent runs),
//! entities, documents and memories.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{DocRef, NodeId, Timestamp};

/// A node of the knowledge graph (seed 002): the common fields and one kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Derived from the node's source, so re-ingesting it yields the same id.
    pub id: NodeId,
    /// What a person calls it: a project's name, a tool's name, a session's headline.
    pub name: String,
    /// What the node is, with that kind's own fields.
    pub kind: NodeKind,
    /// Text it carries: a document's text (cut short), a subagent's final report;
    /// `None` otherwise.
    #[serde(default)]
    pub content: Option<String>,
    /// Free-form extras: an episode's `tool_calls`, a plan's `slug`, …
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    /// When it first appeared: an episode's start, an entity's first use, a document's
    /// modification time.
    pub created_at: Timestamp,
    /// When it was last seen: an episode's end, an entity's last use, a document's
    /// modification time.
    pub updated_at: Timestamp,
    /// Where the node was seen, as an edge's evidence is; ingestion leaves it empty.
    #[serde(default)]
    pub doc_refs: Vec<DocRef>,
}

/// What a node is, with the fields of that kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum NodeKind {
    /// A Claude Code session or a subagent run.
    Episode(Box<Episode>),
    /// A named thing sessions refer to: a project, file, tool, concept, …
    Entity(Entity),
    /// A file read whole: a plan or a project memory file.
    Document(Document),
    /// Something an agent or a person asked eywa to remember.
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

    /// The episode's fields, when the node is an Episode.
    pub fn episode(&self) -> Option<&Episode> {
        match &self.kind {
            NodeKind::Episode(e) => Some(e),
            _ => None,
        }
    }

    /// The entity's fields, when the node is an Entity.
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
    /// The first git branch the lines name; `None` when none does.
    #[serde(default)]
    pub git_branch: Option<String>,
    /// Models that answered, most used first.
    #[serde(default)]
    pub models: Vec<String>,
    /// The Claude Code version of the last line that gives one.
    #[serde(default)]
    pub version: Option<String>,
    /// Time of the earliest line (lines are not in time order); the epoch when none has one.
    pub start: Timestamp,
    /// Time of the latest line; `start` when no line has a time.
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
    /// Tool calls made, each `tool_use` id counted once.
    pub tool_calls: u32,
    /// Its headline (custom or AI title, summary label, first prompt); for a subagent
    /// run, the task description it was given.
    pub title: String,
    /// 0 = no work, 1 = a single task, 2 = multi-step.
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
    /// Who wrote it, and on which machine: this store's identity for what it ingested,
    /// the author's for what a team shares. Empty only in a store written before
    /// attribution, until its next open fills it in.
    #[serde(default)]
    pub user: String,
    /// The machine it was written on (see `user`).
    #[serde(default)]
    pub machine: String,
}

/// One compaction (Q8): where a new segment of the conversation starts, and the summary
/// Claude Code wrote of everything before it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compaction {
    /// Time of the boundary line (or of the summary, when it stands alone), if it has one.
    #[serde(default)]
    pub at: Option<Timestamp>,
    /// `manual` or `auto`; `None` for a compact summary without its boundary line.
    #[serde(default)]
    pub trigger: Option<String>,
    /// Tokens in the context before compacting (`compactMetadata.preTokens`), when given.
    #[serde(default)]
    pub pre_tokens: Option<u64>,
    /// The `isCompactSummary` text ("This session is being continued…").
    #[serde(default)]
    pub summary: Option<String>,
}

/// Token counts of a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Input tokens not read from or written to the cache (`input_tokens`).
    pub input: u64,
    /// Tokens the model generated (`output_tokens`).
    pub output: u64,
    /// Input tokens written to the prompt cache (`cache_creation_input_tokens`).
    pub cache_creation: u64,
    /// Input tokens read from the prompt cache (`cache_read_input_tokens`).
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
    /// The subagent's id (`agentId`); `inline-<uuid prefix>` for an inline run.
    pub agent_id: String,
    /// The session that spawned it, when known.
    #[serde(default)]
    pub parent_session: Option<String>,
    /// Its type (`Explore`, `Plan`, …), from its `.meta.json` or the spawning call.
    #[serde(default)]
    pub agent_type: Option<String>,
    /// The task description the parent gave it.
    #[serde(default)]
    pub description: Option<String>,
    /// The parent's `Task`/`Agent` tool call that started it.
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// How Claude Code stored its transcript.
    pub layout: AgentLayout,
    /// Its final report (the last assistant text of at least 200 characters).
    #[serde(default)]
    pub summary: Option<String>,
    /// What the parent's tool result reported of the run: wall time, tokens, tool calls.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// Total tokens of the run (`totalTokens`).
    #[serde(default)]
    pub tokens: Option<u64>,
    /// Tool calls of the run (`totalToolUseCount`).
    #[serde(default)]
    pub tool_uses: Option<u64>,
}

impl Episode {
    /// Minutes from start to end, rounded to the nearest, pauses included.
    pub fn duration_minutes(&self) -> u32 {
        let ms = (self.end.0 - self.start.0).max(0);
        u32::try_from((ms + 30_000) / 60_000).unwrap_or(u32::MAX)
    }
}

/// The type of an Entity. Its discriminant is stable on disk: index tags are 16 + it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum EntityType {
    /// A directory sessions work in (a Claude Code worktree counts as its repository).
    Project = 0,
    /// A file a session read, edited or wrote.
    File = 1,
    /// A tool Claude Code called (`Read`, `Bash`, an MCP tool, …).
    Tool = 2,
    /// A keyword of some session.
    Concept = 3,
    /// A person: a commit author or co-author a session's commands named.
    Person = 4,
    /// An organization: the mail domain of a person's address, unless anyone can have
    /// an address there.
    Organization = 5,
    /// A place (seed 002; not extracted: see the README's departures).
    Location = 6,
}

impl EntityType {
    /// Every entity type, in discriminant order.
    pub const ALL: [EntityType; 7] = [
        EntityType::Project,
        EntityType::File,
        EntityType::Tool,
        EntityType::Concept,
        EntityType::Person,
        EntityType::Organization,
        EntityType::Location,
    ];

    /// The type's name as shown and parsed: `Project`, `File`, …
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

/// What is particular to an entity node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    /// Which kind of thing it is; also decides its index tag.
    pub entity_type: EntityType,
    /// Other names it is found by, sorted; merged with those already stored on write.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Canonical path, for projects and files.
    #[serde(default)]
    pub path: Option<String>,
}

/// A file read whole: a plan or a project memory file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// `md`, `txt` or `pdf`.
    pub mime: String,
    /// Where the file was found on disk.
    pub path: String,
    /// sha256 of the content, hex.
    pub hash: String,
}

/// How long a Memory is meant to last, and what kind of thing it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemoryType {
    /// Short-term memory (`STM`).
    Stm,
    /// Long-term memory (`LTM`).
    Ltm,
    /// How to do something (`PROCEDURAL`).
    Procedural,
}

impl MemoryType {
    /// The type's name as stored and sent: `STM`, `LTM` or `PROCEDURAL`.
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

/// How far a Memory has faded: when it was last used, and the weight it keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecayState {
    /// When the memory was last read.
    pub last_access: Timestamp,
    /// The weight it keeps now, as decay has left it.
    pub weight: f32,
}

/// Something an agent or a person asked eywa to remember.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// How long it is meant to last.
    pub memory_type: MemoryType,
    /// How much it matters, from 0 to 1.
    pub importance: f32,
    /// How far it has faded.
    pub decay_state: DecayState,
}
