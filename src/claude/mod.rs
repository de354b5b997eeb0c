//! The Claude Code on-disk format: where transcripts live and what their lines say.

mod discover;
mod line;
mod transcript;

pub use self::discover::{ClaudeDir, SessionFile};
pub use self::line::{Block, Line, LineKind};
pub use self::transcript::{ToolUse, Transcript, read_transcript};
