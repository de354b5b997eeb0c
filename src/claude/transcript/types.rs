//! The transcript and its parts.

use std::collections::{BTreeMap, BTreeSet};

use crate::claude::line::Usage;
pub use crate::model::Spawn;
use crate::model::{Compaction, Timestamp};

/// What a passage of a transcript is (seed 001's content types, and tool calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum PassageKind {
    UserMessage,
    AssistantResponse,
    CompactSummary,
    ToolCall,
    /// A tool's output Claude Code kept in `<session>/tool-results/<call id>.txt` (too
    /// large to stay in the transcript, which holds a preview).
    ToolResult,
}

impl PassageKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PassageKind::UserMessage => "user_message",
            PassageKind::AssistantResponse => "assistant_response",
            PassageKind::CompactSummary => "compact_summary",
            PassageKind::ToolCall => "tool_call",
            PassageKind::ToolResult => "tool_result",
        }
    }
}

/// A piece of a transcript worth finding again by its words: a real prompt, an assistant
/// text, a compact summary, or a tool call (its name and input, cut short).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Passage {
    pub kind: PassageKind,
    /// The line it came from (with `seq`, the passage's identity within its file).
    pub uuid: Option<String>,
    /// Position of the line in the file, and of the passage among the line's.
    pub seq: u64,
    pub part: u32,
    pub timestamp: Option<Timestamp>,
    pub text: String,
    /// For a message, the message before it (what it answers, or what answers it),
    /// cut to `MAX_CONTEXT_CHARS`.
    pub context: Option<String>,
    /// The inline subagent run it belongs to, for `isSidechain` lines of a main file.
    pub agent: Option<String>,
}

/// What a session did with one file, from its tool calls.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FileUse {
    pub read: bool,
    pub edited: bool,
    pub created: bool,
    pub first: Option<Timestamp>,
    pub last: Option<Timestamp>,
    /// uuid of the line whose tool call first showed the use (evidence).
    pub evidence: Option<String>,
    /// Calls that named the file (each call id once), by what they did: read, edited,
    /// created; 0 in a read state saved before they were counted.
    #[serde(default)]
    pub calls: [u32; 3],
    /// Of those, calls whose result came back with `is_error`, the same way.
    #[serde(default)]
    pub errors: [u32; 3],
}

/// How often a session used one tool, and when.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolUse {
    pub count: u32,
    /// Calls whose result came back with `is_error`.
    pub errors: u32,
    pub first: Option<Timestamp>,
    pub last: Option<Timestamp>,
    /// uuid of the line of the first call (evidence).
    pub evidence: Option<String>,
}

/// What one transcript file says, read in one streaming pass. Text is capped so that a
/// 25 MB session costs little memory. Choices of "first" and "last" follow the
/// conversation's `parentUuid` chain, not file order.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Transcript {
    pub session_id: String,
    pub lines: u64,
    /// Lines that are not JSON objects: garbage, or half-written by a running session.
    pub skipped_lines: u64,
    /// Lines whose uuid an earlier line of the file already had (replays within a file).
    pub duplicate_lines: u64,
    /// Lines replayed from another session (a resume): not counted as this session's.
    pub replayed_lines: u64,
    /// Sessions whose lines this one replays: the sessions it resumes.
    pub resumes: BTreeSet<String>,
    pub bytes: u64,
    pub first_ts: Option<Timestamp>,
    pub last_ts: Option<Timestamp>,
    /// Time spent working: the span of the lines, less pauses over 30 minutes.
    pub active_ms: i64,
    /// Working directories in order of first appearance.
    pub cwds: Vec<String>,
    pub git_branch: Option<String>,
    pub version: Option<String>,
    /// Models by number of API responses.
    pub models: BTreeMap<String, u32>,
    /// Lines of type `user`.
    pub user_lines: u32,
    /// Lines of type `assistant`.
    pub assistant_lines: u32,
    /// Distinct assistant API responses.
    pub assistant_responses: u32,
    /// Real prompts, in conversation order: a person typing, not tool results, meta
    /// lines or command wrappers.
    pub prompts: Vec<String>,
    /// uuid of the line of each kept prompt.
    pub prompt_uuids: Vec<Option<String>>,
    pub prompt_count: u32,
    pub assistant_text: Vec<String>,
    pub tools: BTreeMap<String, ToolUse>,
    pub tool_calls: u32,
    pub custom_title: Option<String>,
    /// The last `ai-title` (Claude Code writes several as a session goes on).
    pub ai_title: Option<String>,
    /// Tokens, each API response counted once.
    pub usage: Usage,
    /// The conversation's slug, shared by its resumed sessions.
    pub slug: Option<String>,
    /// `summary` labels of this conversation's messages, from this file or any other, in
    /// the conversation order of the message they label.
    pub summaries: Vec<String>,
    /// `summary` labels this file gives to messages it does not hold: (leafUuid, label).
    pub foreign_labels: Vec<(String, String)>,
    /// Every `summary` label in this file, once each, in file order: what its session is
    /// found by, whether the message it labels is here, in another file or nowhere.
    #[serde(default)]
    pub file_labels: Vec<String>,
    /// Compactions, in order; the conversation has `compactions.len() + 1` segments.
    pub compactions: Vec<Compaction>,
    /// Subagents this session started.
    pub spawns: Vec<Spawn>,
    /// `agentId` of the lines (subagent transcripts).
    pub agent_id: Option<String>,
    /// The first `sessionId` of the lines (a subagent's is its parent's).
    pub session_field: Option<String>,
    /// The last assistant text of at least 200 characters: a subagent's report.
    pub final_report: Option<String>,
    /// Inline subagent runs (`isSidechain` lines of a main file), one per chain root.
    pub inline_agents: Vec<Transcript>,
    /// uuid of the first line of an inline run.
    pub root_uuid: Option<String>,
    /// Files read, edited or created through tool calls, by path as the tool saw it.
    pub files: BTreeMap<String, FileUse>,
    /// The last todo list written (`TodoWrite`): (content, status).
    pub todos: Vec<(String, String)>,
    /// The last assistant text in conversation order (its stated next steps, if any).
    pub last_text: Option<String>,
    /// uuids ([`uuid_key`](crate::model::uuid_key)s) of the lines this file wrote itself (main files; replays
    /// left out).
    pub uuids: Vec<u128>,
    /// The title `sessions-index.json` gives the session, when the index lists it.
    pub index_summary: Option<String>,
    /// Passages of the lines read this time (all of them, or those appended since the
    /// read point it went on from), inline subagent runs' included. Not part of a saved
    /// read state.
    #[serde(skip)]
    pub passages: Vec<Passage>,
    /// Why the first skipped line was skipped: its line number and the parse error.
    /// Last, and defaulted: read states saved before it still load.
    #[serde(default)]
    pub first_skip: Option<String>,
    /// What the tool calls prove the session did (commits, pull requests, checks, tasks), in
    /// file order. Defaulted, as are the fields after it: read states saved before them
    /// still load.
    #[serde(default)]
    pub events: Vec<Event>,
    /// The tasks of Claude Code's task tools (`TaskCreate`, `TaskUpdate`): (subject,
    /// status), in creation order.
    #[serde(default)]
    pub tasks: Vec<(String, String)>,
    /// A real prompt came after the last assistant text: the last request went unanswered.
    #[serde(default)]
    pub unanswered: bool,
    /// Plans handed to `ExitPlanMode` (older versions keep no plan file), the last one
    /// last.
    #[serde(default)]
    pub plans: Vec<String>,
    /// Whether the last assistant message (in conversation order) ended on a tool call:
    /// then a subagent left no report (seed 001).
    #[serde(default)]
    pub ended_on_tool: bool,
    /// Paths named by `git add` in commands whose commit succeeded or not: files the
    /// session committed, by path as the command gave it.
    #[serde(default)]
    pub committed_files: Vec<String>,
    /// Tool results Claude Code moved to `<session>/tool-results/<call id>.txt`, as the
    /// line that previews them saw them: (call id, tool name, the line's uuid, its
    /// position in the file, its time).
    #[serde(default)]
    pub persisted: Vec<PersistedResult>,
    /// The `messageCount` `sessions-index.json` gives the session, when it lists it.
    #[serde(default)]
    pub index_message_count: Option<u64>,
    /// People the session's commands and their output name as commit authors, by name.
    #[serde(default)]
    pub people: BTreeMap<String, super::people::PersonSeen>,
}

/// A tool result whose whole text is in a `tool-results` file beside the transcript.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PersistedResult {
    pub call_id: String,
    pub tool: String,
    pub uuid: Option<String>,
    pub seq: u64,
    pub timestamp: Option<Timestamp>,
}

/// What a tool call proves a session did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EventKind {
    /// A `git commit`; the text is its subject.
    Commit,
    /// A `gh pr create`; the text is its title or URL.
    PullRequest,
    /// Test, build and lint runs; the text names the program (`cargo test`, `pytest`).
    Test,
    Build,
    Lint,
    /// A task created with `TaskCreate`; the text is its subject.
    Task,
}

/// One thing a session did, and how it came out.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    pub kind: EventKind,
    pub text: String,
    /// From the call's result: `Some(true)` succeeded, `Some(false)` failed, `None` when no
    /// result was seen.
    pub ok: Option<bool>,
    pub at: Option<Timestamp>,
}

impl Transcript {
    /// The labels its session is found by: those of its messages (from any file), then
    /// the rest of this file's own.
    pub fn indexed_labels(&self) -> Vec<String> {
        let mut labels = self.summaries.clone();
        for label in &self.file_labels {
            if !labels.contains(label) {
                labels.push(label.clone());
            }
        }
        labels
    }

    /// A session holds at least one user or assistant message.
    pub fn has_messages(&self) -> bool {
        self.user_lines + self.assistant_lines > 0
    }

    /// Hands every piece of text the transcript keeps to `f` (to redact it): prompts,
    /// assistant prose, the final report and last text, titles, summary labels, compact
    /// summaries, todos, subagent descriptions, and the same in inline subagent runs.
    pub fn visit_texts(&mut self, f: &mut dyn FnMut(&mut String)) {
        self.prompts.iter_mut().for_each(&mut *f);
        self.assistant_text.iter_mut().for_each(&mut *f);
        self.summaries.iter_mut().for_each(&mut *f);
        self.foreign_labels.iter_mut().for_each(|(_, l)| f(l));
        self.file_labels.iter_mut().for_each(&mut *f);
        self.todos.iter_mut().for_each(|(content, _)| f(content));
        self.tasks.iter_mut().for_each(|(subject, _)| f(subject));
        self.events.iter_mut().for_each(|e| f(&mut e.text));
        self.plans.iter_mut().for_each(&mut *f);
        self.compactions
            .iter_mut()
            .filter_map(|c| c.summary.as_mut())
            .for_each(&mut *f);
        for p in &mut self.passages {
            f(&mut p.text);
            if let Some(context) = &mut p.context {
                f(context);
            }
        }
        self.spawns
            .iter_mut()
            .filter_map(|s| s.description.as_mut())
            .for_each(&mut *f);
        let single = [
            &mut self.final_report,
            &mut self.last_text,
            &mut self.index_summary,
            &mut self.custom_title,
            &mut self.ai_title,
        ];
        single.into_iter().flatten().for_each(&mut *f);
        for run in &mut self.inline_agents {
            run.visit_texts(f);
        }
    }

    /// Segments of the conversation: one more than its compactions.
    pub fn segments(&self) -> u32 {
        u32::try_from(self.compactions.len()).unwrap_or(u32::MAX) + 1
    }
}
