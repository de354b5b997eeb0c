//! One streaming pass over a transcript file: what it says (a [`Transcript`]), where the
//! read stopped (a [`ReadPoint`] to go on from), and the passages kept for the indexes.
//!
//! - `types`: the transcript and its parts (spawns, passages, file and tool use);
//! - `read`: whole and resumable reads;
//! - `accumulator`: the state a read builds, line by line, and how it ends;
//! - `blocks`: what user and assistant lines add, block by block;
//! - `prompts`: telling a person's prompt from Claude Code's own wrappers.

mod accumulator;
mod blocks;
mod events;
mod people;
mod prompts;
mod read;
mod types;

pub(crate) use self::people::{authors_in, organization_of};
pub(super) use self::prompts::{command_of, prompt_of, real_prompt};

/// The id of an inline subagent run (a 1.0.x subagent whose `isSidechain` lines sit in
/// its parent's file): `inline-` and the first 8 characters of its first line's uuid.
pub(super) fn inline_run_name(root_uuid: &str) -> String {
    let short: String = root_uuid.chars().take(8).collect();
    format!("inline-{short}")
}
pub use self::read::{
    ReadPoint, read_resumable, read_transcript, read_transcript_from, read_transcript_with,
};
pub use self::types::{
    Event, EventKind, FileUse, Passage, PassageKind, PersistedResult, Spawn, ToolUse, Transcript,
};

/// Prompts kept per session for extraction (the first ones say what the session was for).
const MAX_PROMPTS: usize = 64;
/// Characters kept of one prompt or assistant text.
const MAX_TEXT_CHARS: usize = 4_000;
/// Characters of assistant prose kept per session.
const MAX_ASSISTANT_CHARS: usize = 64_000;
/// A pause longer than this between two lines counts as time away, not work.
const IDLE_GAP_MS: i64 = 30 * 60 * 1000;
/// Characters kept of one compact summary, and compactions kept per session.
const MAX_COMPACT_CHARS: usize = 16_000;
const MAX_COMPACTIONS: usize = 32;
/// Candidates kept for "the last …" choices made in conversation order (final report,
/// todo list): the last ones in file order, ranked by the chain at the end.
const TAIL: usize = 8;
/// Characters kept of one passage (longer texts keep their start).
pub const MAX_PASSAGE_CHARS: usize = 8_000;
/// Characters of the message before that a message's passage carries as context.
const MAX_CONTEXT_CHARS: usize = 2_000;
/// Characters kept of a tool call's input in its passage.
const MAX_TOOL_INPUT_CHARS: usize = 400;
/// Events kept per session, and plans handed to `ExitPlanMode`.
const MAX_EVENTS: usize = 2_000;
const MAX_PLANS: usize = 4;
/// Bytes of an `ExitPlanMode` plan kept at most (a larger one is not a plan, seed 001).
const MAX_PLAN_BYTES: usize = 100 * 1024;
/// A final report is the text of the last assistant message, when it has at least this
/// many characters (seed 001); it is kept whole.
const MIN_SUMMARY_CHARS: usize = 200;
/// Files tracked per session at most (a session that touched more keeps the first).
const MAX_FILES: usize = 2_000;

/// Whether a file is a main session (whose `isSidechain` lines are inline subagent runs)
/// or a subagent's own transcript (all of whose lines are `isSidechain`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Mode {
    Main,
    Agent,
}

/// What is known of other transcripts while one is read: who first wrote a message uuid
/// (a resumed session replays its predecessor's lines under the same uuids, Q9), and the
/// `summary` labels other files gave to a leaf uuid (Q5).
pub trait History {
    /// The session that owns `uuid` (a [`uuid_key`](crate::model::uuid_key)), when it is not the one being read.
    fn owner(&self, uuid: u128, reading: &str) -> Option<String>;
    /// The label a `summary` line anywhere gave to the leaf `uuid`.
    fn label(&self, uuid: u128) -> Option<String>;
}

/// No other transcripts: every line is the file's own.
pub struct NoHistory;

impl History for NoHistory {
    fn owner(&self, _: u128, _: &str) -> Option<String> {
        None
    }
    fn label(&self, _: u128) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests;
