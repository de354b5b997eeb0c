//! The Claude Code on-disk format: where transcripts live and what their lines say.

mod discover;
mod line;
mod messages;
mod transcript;

pub use self::discover::{AgentFile, ClaudeDir, PlanFile, SessionFile};
pub use self::line::{Block, Line, LineKind, Usage};
pub use self::messages::{Message, Role, read_messages};
pub use self::transcript::{
    FileUse, Mode, Spawn, ToolUse, Transcript, read_transcript, read_transcript_from,
};
