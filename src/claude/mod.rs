//! The Claude Code on-disk format: where transcripts live and what their lines say.

mod dag;
mod discover;
mod identity;
mod line;
mod messages;
pub mod migrate;
mod transcript;

pub use self::dag::{Link, order as chain_order, uuid_key};
pub use self::discover::{
    AgentFile, ClaudeDir, IndexEntry, MemoryFile, PlanFile, SessionFile, read_tool_result,
};
pub use self::identity::{agent_key, claude_id, copy_key, is_imported, resume_command, short_id};
pub use self::line::{AgentRun, Block, CompactBoundary, Line, LineKind, Usage, result_text};
pub use self::messages::{
    Message, MessageKind, MessageUsage, Reading, Role, ToolCall, cut_tool_text, inline_run_lines,
    read_messages, read_messages_as, read_messages_with,
};
pub use self::transcript::{
    Event, EventKind, FileUse, History, MAX_PASSAGE_CHARS, Mode, NoHistory, Passage, PassageKind,
    PersistedResult, ReadPoint, Spawn, ToolUse, Transcript, read_resumable, read_transcript,
    read_transcript_from, read_transcript_with,
};
pub(crate) use self::transcript::{authors_in, organization_of};
