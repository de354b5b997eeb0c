//! A transcript's messages as served: prompts, responses with their paired tool calls,
//! and compact summaries, in conversation order.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use super::dag::{self, Link, uuid_key};
use super::line::{Block, Line, LineKind, result_text};
use super::transcript::{
    History, Mode, NoHistory, command_of, inline_run_name, prompt_of, real_prompt,
};
use crate::model::Timestamp;

/// Characters kept of one tool call's input (as JSON) and of its result.
const MAX_TOOL_CHARS: usize = 16_000;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    /// Claude Code itself: a `summary` label, a file-history snapshot.
    System,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
        }
    }
}

/// What a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// What a person typed.
    Prompt,
    /// An assistant response line: its text and the tools it called.
    Response,
    /// The summary Claude Code wrote when it compacted the conversation (Q8).
    CompactSummary,
    /// A slash command the person ran (`/init`, `/model opus`).
    Command,
    /// A `summary` line: a label of the conversation (its text).
    Summary,
    /// A `file-history-snapshot` line: the files Claude Code backed up (`tracked_files`).
    FileHistorySnapshot,
}

impl MessageKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageKind::Prompt => "prompt",
            MessageKind::Response => "response",
            MessageKind::CompactSummary => "compact_summary",
            MessageKind::Command => "command",
            MessageKind::Summary => "summary",
            MessageKind::FileHistorySnapshot => "file_history_snapshot",
        }
    }

    /// What a person or the assistant said (not a label or snapshot Claude Code wrote).
    pub fn is_conversation(self) -> bool {
        !matches!(
            self,
            MessageKind::Summary | MessageKind::FileHistorySnapshot
        )
    }
}

/// A tool call paired with its result (seed 003's ToolCall).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The call's input as JSON, cut at 16,000 characters.
    pub input: String,
    /// The text of the matching `tool_result`, cut at 16,000 characters; `None` when no
    /// result was written (an interrupted call).
    pub result: Option<String>,
    pub is_error: bool,
}

/// A message of the conversation: what a person typed, what the assistant wrote and the
/// tools it called, or a compact summary. Claude Code's own wrappers, meta lines and
/// inline subagent lines are left out.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Message {
    pub uuid: Option<String>,
    pub role: Role,
    pub kind: MessageKind,
    pub timestamp: Option<Timestamp>,
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    /// An earlier version of the transcript said this; the file now says otherwise (the
    /// message with the same uuid that follows).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub superseded: bool,
    /// The line's fields (seed 003): the message it follows, where and on which branch it
    /// was said, and whether it is on a side chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_uuid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_branch: Option<String>,
    pub is_sidechain: bool,
    /// An assistant response's model, token usage and why it stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<MessageUsage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Its extended thinking, when there was some (served on request only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// A file-history snapshot's files.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tracked_files: Vec<String>,
}

/// Tokens of one assistant response (seed 003's TokenUsage).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MessageUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}

/// The lines of one inline subagent run (`inline-<uuid prefix>`, a 1.0.x subagent whose
/// `isSidechain` lines sit in its parent's file), as the reader of transcripts assigns
/// them: a sidechain line joins its parent line's run, or starts a run named by its own
/// uuid's first 8 characters. Read them with [`Mode::Agent`].
pub fn inline_run_lines(reader: impl std::io::Read, run: &str) -> std::io::Result<Vec<u8>> {
    // Only where each line sits: its uuid, its parent's, and whether it is a sidechain's.
    let mut lines = JsonLines::new(reader, Reading::Texts);
    let mut run_of: HashMap<String, String> = HashMap::new();
    let mut out = Vec::new();
    while let Some((bytes, line)) = lines.next()? {
        if !line.is_sidechain() || line.uuid().is_some_and(|u| run_of.contains_key(u)) {
            continue;
        }
        let own = match line.parent_uuid().and_then(|p| run_of.get(p)) {
            Some(parent_run) => parent_run.clone(),
            None => inline_run_name(line.uuid().unwrap_or("")),
        };
        if let Some(uuid) = line.uuid() {
            run_of.insert(uuid.to_owned(), own.clone());
        }
        if own == run {
            out.extend_from_slice(bytes);
            out.push(b'\n');
        }
    }
    Ok(out)
}

/// The JSON lines of a transcript, each with its bytes (trimmed); lines that do not
/// parse are passed over.
struct JsonLines<R> {
    reader: std::io::BufReader<R>,
    buf: Vec<u8>,
    reading: Reading,
}

impl<R: std::io::Read> JsonLines<R> {
    fn new(reader: R, reading: Reading) -> Self {
        JsonLines {
            reader: std::io::BufReader::with_capacity(256 * 1024, reader),
            buf: Vec::new(),
            reading,
        }
    }

    /// The next line that parses, with its bytes; `None` at the end.
    fn next(&mut self) -> std::io::Result<Option<(&[u8], Line)>> {
        loop {
            self.buf.clear();
            if self.reader.read_until(b'\n', &mut self.buf)? == 0 {
                return Ok(None);
            }
            let bytes = self.buf.trim_ascii();
            let line = match self.reading {
                Reading::Whole => Line::parse(bytes),
                Reading::Texts => Line::parse_texts(bytes),
            };
            if let Some(line) = line {
                return Ok(Some((self.buf.trim_ascii(), line)));
            }
        }
    }
}

/// What a read of messages needs of each line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Everything a message serves.
    Whole,
    /// Each message's text, uuid, role, kind and place, as a whole read gives them. Tool
    /// calls keep their names and ids, not their inputs or results; thinking is left out,
    /// and a message with nothing else (no text, no tool call) with it.
    Texts,
}

/// The messages of a main transcript in conversation order (the `parentUuid` chain).
pub fn read_messages(reader: impl std::io::Read) -> std::io::Result<Vec<Message>> {
    read_messages_with(reader, "", Mode::Main, &NoHistory)
}

/// [`read_messages`] for a transcript of either mode, leaving out lines that `history`
/// says another session wrote (the replayed part of a resumed session). Each assistant
/// line is one message; lines repeating an earlier uuid are dropped.
pub fn read_messages_with(
    reader: impl std::io::Read,
    session_id: &str,
    mode: Mode,
    history: &dyn History,
) -> std::io::Result<Vec<Message>> {
    read_messages_as(reader, session_id, mode, history, Reading::Whole)
}

/// [`read_messages_with`], reading of each line what `reading` needs.
pub fn read_messages_as(
    reader: impl std::io::Read,
    session_id: &str,
    mode: Mode,
    history: &dyn History,
    reading: Reading,
) -> std::io::Result<Vec<Message>> {
    let mut lines = JsonLines::new(reader, reading);
    let mut out: Vec<(Option<usize>, usize, Message)> = Vec::new();
    let mut links: Vec<Link> = Vec::new();
    let mut seen: HashSet<u128> = HashSet::new();
    // Lines without a uuid (labels, snapshots) that were read, by a hash of their bytes:
    // one repeated (an archive's versions overlap) is the same line.
    let mut seen_plain: HashSet<u64> = HashSet::new();
    let mut calls: HashMap<String, (usize, usize)> = HashMap::new();
    let agent = mode == Mode::Agent;
    while let Some((bytes, line)) = lines.next()? {
        let timestamp = line.timestamp().and_then(Timestamp::parse);
        let uuid = line.uuid().map(str::to_owned);
        if let Some(uuid) = &uuid {
            let key = uuid_key(uuid);
            if !seen.insert(key) || (!agent && history.owner(key, session_id).is_some()) {
                continue;
            }
            if line.is_sidechain() && !agent {
                continue;
            }
            links.push(Link::new(uuid, line.chain_parent(), timestamp.map(|t| t.0)));
        } else if line.is_sidechain() && !agent {
            continue;
        } else if matches!(&line.kind, LineKind::Summary)
            || matches!(&line.kind, LineKind::Other(k) if k == "file-history-snapshot")
        {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            bytes.hash(&mut hasher);
            if !seen_plain.insert(hasher.finish()) {
                continue;
            }
        }
        let anchor = links.len().checked_sub(1);
        let assistant = matches!(line.kind, LineKind::Assistant);
        let message = |role, kind, text| Message {
            uuid: uuid.clone(),
            role,
            kind,
            timestamp,
            text,
            tool_calls: Vec::new(),
            superseded: false,
            parent_uuid: line.parent_uuid().map(str::to_owned),
            cwd: line.cwd().map(str::to_owned),
            git_branch: line.git_branch().map(str::to_owned),
            is_sidechain: line.is_sidechain(),
            model: line.model().filter(|_| assistant).map(str::to_owned),
            usage: line.usage().filter(|_| assistant).map(|u| MessageUsage {
                input_tokens: u.input,
                output_tokens: u.output,
                cache_creation_input_tokens: u.cache_creation,
                cache_read_input_tokens: u.cache_read,
            }),
            stop_reason: line.stop_reason().filter(|_| assistant).map(str::to_owned),
            thinking: None,
            tracked_files: Vec::new(),
        };
        match line.kind {
            LineKind::User => {
                let blocks = line.blocks();
                for block in &blocks {
                    if let Block::ToolResult {
                        tool_use_id: Some(id),
                        content,
                        is_error,
                    } = block
                        && let Some(&(m, c)) = calls.get(*id)
                    {
                        let call = &mut out[m].2.tool_calls[c];
                        call.result = Some(cut(result_text(content)));
                        call.is_error = *is_error;
                    }
                }
                if line.is_compact_summary() {
                    let text = texts(&blocks).trim().to_owned();
                    out.push((
                        anchor,
                        out.len(),
                        message(Role::User, MessageKind::CompactSummary, text),
                    ));
                } else if let Some(text) = prompt_of(&line, agent) {
                    out.push((
                        anchor,
                        out.len(),
                        message(Role::User, MessageKind::Prompt, text),
                    ));
                } else if let Some(command) = command_of(&line, agent) {
                    out.push((
                        anchor,
                        out.len(),
                        message(Role::User, MessageKind::Command, command),
                    ));
                }
            }
            LineKind::Assistant => {
                let blocks = line.blocks();
                let mut m = message(
                    Role::Assistant,
                    MessageKind::Response,
                    texts(&blocks).trim().to_owned(),
                );
                let thinking: Vec<&str> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        Block::Thinking(t) => Some(*t),
                        _ => None,
                    })
                    .collect();
                if !thinking.is_empty() {
                    m.thinking = Some(thinking.join("\n\n"));
                }
                for block in &blocks {
                    if let Block::ToolUse { id, name, input } = block {
                        let id = id.unwrap_or_default().to_owned();
                        if !id.is_empty() {
                            calls.insert(id.clone(), (out.len(), m.tool_calls.len()));
                        }
                        m.tool_calls.push(ToolCall {
                            id,
                            name: (*name).to_owned(),
                            input: cut(input.to_string()),
                            result: None,
                            is_error: false,
                        });
                    }
                }
                if !m.text.is_empty() || !m.tool_calls.is_empty() || m.thinking.is_some() {
                    out.push((anchor, out.len(), m));
                }
            }
            LineKind::Summary => {
                if let Some((label, _)) = line.summary().filter(|(l, _)| !l.trim().is_empty()) {
                    let text = cut(label.to_owned());
                    out.push((
                        anchor,
                        out.len(),
                        message(Role::System, MessageKind::Summary, text),
                    ));
                }
            }
            LineKind::Other(ref kind) if kind == "file-history-snapshot" => {
                let files = line.tracked_files();
                if !files.is_empty() {
                    let mut m = message(
                        Role::System,
                        MessageKind::FileHistorySnapshot,
                        String::new(),
                    );
                    m.tracked_files = files;
                    out.push((anchor, out.len(), m));
                }
            }
            LineKind::Other(_) => {
                if let Some(text) = line.steering_text().as_deref().and_then(real_prompt) {
                    out.push((
                        anchor,
                        out.len(),
                        message(Role::User, MessageKind::Prompt, text),
                    ));
                }
            }
            _ => {}
        }
    }
    let rank = dag::ranks(&links);
    out.sort_by_key(|(anchor, seq, _)| (anchor.map_or(0, |a| rank[a].saturating_add(1)), *seq));
    Ok(out.into_iter().map(|(_, _, m)| m).collect())
}

/// The text blocks of a message, joined by blank lines.
fn texts(blocks: &[Block<'_>]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) if !t.trim().is_empty() => Some(*t),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A tool call's input or result as served: cut at 16,000 characters.
pub fn cut_tool_text(text: &str) -> String {
    cut(text.to_owned())
}

fn cut(mut s: String) -> String {
    // No more bytes than the characters kept: nothing to cut (most tool text).
    if s.len() <= MAX_TOOL_CHARS {
        return s;
    }
    // Where character MAX_TOOL_CHARS starts: every byte but a UTF-8 continuation byte
    // starts one.
    let mut starts = s.bytes().enumerate().filter(|(_, b)| (*b as i8) >= -0x40);
    if let Some((i, _)) = starts.nth(MAX_TOOL_CHARS) {
        s.truncate(i);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(lines: &[&str]) -> Vec<Message> {
        read_messages(lines.join("\n").as_bytes()).unwrap()
    }

    #[test]
    fn tool_text_is_cut_at_its_character_limit() {
        let by_chars = |s: &str| -> String { s.chars().take(MAX_TOOL_CHARS).collect() };
        let texts = [
            String::new(),
            "a".repeat(MAX_TOOL_CHARS),
            "a".repeat(MAX_TOOL_CHARS + 1),
            "é".repeat(MAX_TOOL_CHARS / 2 + 3),
            "é".repeat(MAX_TOOL_CHARS + 7),
            format!("{}€🦀x", "a".repeat(MAX_TOOL_CHARS - 2)),
            "🦀".repeat(MAX_TOOL_CHARS),
        ];
        for text in texts {
            assert_eq!(cut(text.clone()), by_chars(&text), "{} bytes", text.len());
        }
    }

    #[test]
    fn tool_calls_are_paired_with_their_results() {
        let m = read(&[
            r#"{"type":"user","uuid":"u1","message":{"content":"List the files"}}"#,
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m","content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}"#,
            r#"{"type":"assistant","uuid":"a2","parentUuid":"a1","message":{"id":"m","content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"/x"}}]}}"#,
            r#"{"type":"user","uuid":"r1","parentUuid":"a2","toolUseResult":"Error: no such file","message":{"content":[{"type":"tool_result","tool_use_id":"t2","is_error":true,"content":"Error: no such file"}]}}"#,
            r#"{"type":"user","uuid":"r2","parentUuid":"r1","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a.rs"},{"type":"image"},{"type":"text","text":"b.rs"}]}]}}"#,
            r#"{"type":"assistant","uuid":"a3","parentUuid":"r2","message":{"id":"n","content":[{"type":"thinking","thinking":""},{"type":"text","text":"Two files."}]}}"#,
        ]);
        let kinds: Vec<_> = m.iter().map(|m| (m.kind, m.text.as_str())).collect();
        assert_eq!(
            kinds,
            [
                (MessageKind::Prompt, "List the files"),
                (MessageKind::Response, "Looking."),
                (MessageKind::Response, ""),
                (MessageKind::Response, "Two files."),
            ]
        );
        let bash = &m[1].tool_calls[0];
        assert_eq!(bash.name, "Bash");
        assert_eq!(bash.input, r#"{"command":"ls"}"#);
        assert_eq!(bash.result.as_deref(), Some("a.rs\nb.rs"));
        assert!(!bash.is_error);
        let read = &m[2].tool_calls[0];
        assert_eq!(read.result.as_deref(), Some("Error: no such file"));
        assert!(read.is_error);
    }

    #[test]
    fn messages_follow_the_chain_and_replays_within_a_file_are_dropped() {
        let m = read(&[
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2026-01-01T00:00:09Z","message":{"content":[{"type":"text","text":"second"}]}}"#,
            r#"{"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:10Z","message":{"content":"first"}}"#,
            r#"{"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:10Z","message":{"content":"first"}}"#,
            r#"{"type":"user","uuid":"u2","parentUuid":"a1","isSidechain":true,"message":{"content":"agent prompt"}}"#,
        ]);
        let texts: Vec<_> = m.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, ["first", "second"]);
    }
}
