use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::BufRead;
use std::path::Path;

use super::dag::{self, Link, uuid_key};
use super::line::{Block, Line, LineKind, Usage};
use crate::model::{Compaction, Timestamp};

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
    /// The session that owns `uuid` (a [`uuid_key`]), when it is not the one being read.
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

/// What a passage of a transcript is (seed 001's content types, and tool calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum PassageKind {
    UserMessage,
    AssistantResponse,
    CompactSummary,
    ToolCall,
}

impl PassageKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PassageKind::UserMessage => "user_message",
            PassageKind::AssistantResponse => "assistant_response",
            PassageKind::CompactSummary => "compact_summary",
            PassageKind::ToolCall => "tool_call",
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
    /// cut to [`MAX_CONTEXT_CHARS`].
    pub context: Option<String>,
    /// The inline subagent run it belongs to, for `isSidechain` lines of a main file.
    pub agent: Option<String>,
}

/// Characters kept of one passage (longer texts keep their start).
const MAX_PASSAGE_CHARS: usize = 8_000;
/// Characters of the message before that a message's passage carries as context.
const MAX_CONTEXT_CHARS: usize = 2_000;
/// Characters kept of a tool call's input in its passage.
const MAX_TOOL_INPUT_CHARS: usize = 400;

/// Characters kept of a subagent's final report.
const MAX_SUMMARY_CHARS: usize = 8_000;
/// A final report is the last assistant text of at least this many characters (seed 001).
const MIN_SUMMARY_CHARS: usize = 200;

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
}

/// Files tracked per session at most (a session that touched more keeps the first).
const MAX_FILES: usize = 2_000;

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
    /// uuids ([`uuid_key`]s) of the lines this file wrote itself (main files; replays
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
}

impl Transcript {
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
        self.todos.iter_mut().for_each(|(content, _)| f(content));
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

/// Reads a transcript file line by line. Malformed lines are skipped and counted; only an
/// I/O error fails the read.
pub fn read_transcript(path: &Path, session_id: &str) -> std::io::Result<Transcript> {
    read_transcript_from(std::fs::File::open(path)?, session_id, Mode::Main)
}

/// [`read_transcript`] over any reader (an archived copy, say).
pub fn read_transcript_from(
    reader: impl std::io::Read,
    session_id: &str,
    mode: Mode,
) -> std::io::Result<Transcript> {
    read_transcript_with(reader, session_id, mode, &NoHistory)
}

/// [`read_transcript_from`], telling lines replayed from other sessions apart and
/// resolving labels other files gave to this one's messages.
pub fn read_transcript_with(
    reader: impl std::io::Read,
    session_id: &str,
    mode: Mode,
    history: &dyn History,
) -> std::io::Result<Transcript> {
    read_resumable(reader, session_id, mode, history, None).map(|(t, _)| t)
}

/// Where a read of a transcript stopped: the reader's state after the last complete line
/// and the byte offset just past it. Reading on from there (the file appended to) gives
/// what reading the whole file again would.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ReadPoint {
    state: Accumulator,
    pub offset: u64,
}

impl ReadPoint {
    /// Hands every piece of text the saved state keeps to `f` (to redact it).
    pub fn visit_texts(&mut self, f: &mut dyn FnMut(&mut String)) {
        self.state.visit_texts(f);
    }
}

/// Reads a transcript from the start, or on from `from` with `reader` positioned at
/// `from.offset`; returns the transcript and where to go on from next time. A last line
/// without its newline (Claude Code still writing it) is read, but the returned point
/// stops before it, so it is read again, whole, next time.
pub fn read_resumable(
    reader: impl std::io::Read,
    session_id: &str,
    mode: Mode,
    history: &dyn History,
    from: Option<ReadPoint>,
) -> std::io::Result<(Transcript, ReadPoint)> {
    let mut reader = std::io::BufReader::with_capacity(256 * 1024, reader);
    let (mut acc, mut offset) = match from {
        Some(point) => (point.state, point.offset),
        None => (Accumulator::new(session_id, mode), 0),
    };
    let mut partial = None;
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        if buf.last() == Some(&b'\n') {
            offset += n as u64;
        } else {
            partial = Some(acc.snapshot());
        }
        acc.t.bytes += n as u64;
        let bytes = buf.trim_ascii();
        if bytes.is_empty() {
            continue;
        }
        acc.t.lines += 1;
        match Line::read(bytes) {
            Ok(line) => acc.add(&line, history),
            Err(why) => {
                acc.t.skipped_lines += 1;
                if acc.t.first_skip.is_none() {
                    acc.t.first_skip = Some(format!("line {}: {why}", acc.t.lines));
                }
            }
        }
    }
    let point = ReadPoint {
        state: partial.unwrap_or_else(|| acc.snapshot()),
        offset,
    };
    Ok((acc.finish(history), point))
}

/// Where something was said: the chain link of its line (or the last link before it, for
/// lines without a uuid) and its file position, to rank it in conversation order.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
struct Place {
    link: Option<usize>,
    seq: u64,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Accumulator {
    t: Transcript,
    response_ids: HashSet<String>,
    /// Tool calls by tool_use id → tool name (to pair results with calls).
    tool_use_ids: HashMap<String, String>,
    /// The chain of this file's own lines, and each uuid's position in it.
    links: Vec<Link>,
    link_of: HashMap<u128, usize>,
    /// Every uuid seen in the file, replayed ones included (duplicates are dropped).
    seen: HashSet<u128>,
    /// `(label, leafUuid)` of every summary line.
    summary_lines: Vec<(String, String)>,
    /// The last message passage's text, the context of the next.
    last_message: Option<String>,
    /// Prompts: where, what, and the uuid of the line (evidence).
    prompts: Vec<(Place, String, Option<String>)>,
    reports: Vec<(Place, String)>,
    texts: Vec<(Place, String)>,
    todo_lists: Vec<(Place, Vec<(String, String)>)>,
    assistant_chars: usize,
    timestamps: Vec<i64>,
    mode: Mode,
    /// Usage per (message id, request id), most complete record kept.
    usage: HashMap<(String, String), Usage>,
    loose_usage: Usage,
    /// `Task`/`Agent` calls: tool_use id → (subagent_type, description).
    task_calls: HashMap<String, (Option<String>, Option<String>)>,
    /// Inline runs and which run each sidechain uuid belongs to.
    runs: Vec<Accumulator>,
    run_of: HashMap<String, usize>,
}

impl Accumulator {
    fn new(session_id: &str, mode: Mode) -> Self {
        Accumulator {
            t: Transcript {
                session_id: session_id.to_owned(),
                ..Transcript::default()
            },
            mode,
            usage: HashMap::new(),
            loose_usage: Usage::default(),
            task_calls: HashMap::new(),
            runs: Vec::new(),
            run_of: HashMap::new(),
            response_ids: HashSet::new(),
            tool_use_ids: HashMap::new(),
            links: Vec::new(),
            last_message: None,
            link_of: HashMap::new(),
            seen: HashSet::new(),
            summary_lines: Vec::new(),
            prompts: Vec::new(),
            reports: Vec::new(),
            texts: Vec::new(),
            todo_lists: Vec::new(),
            assistant_chars: 0,
            timestamps: Vec::new(),
        }
    }

    fn visit_texts(&mut self, f: &mut dyn FnMut(&mut String)) {
        self.t.visit_texts(f);
        self.prompts.iter_mut().for_each(|(_, text, _)| f(text));
        self.reports.iter_mut().for_each(|(_, text)| f(text));
        self.texts.iter_mut().for_each(|(_, text)| f(text));
        for (_, list) in &mut self.todo_lists {
            list.iter_mut().for_each(|(content, _)| f(content));
        }
        if let Some(text) = &mut self.last_message {
            f(text);
        }
        self.summary_lines
            .iter_mut()
            .for_each(|(label, _)| f(label));
        for (_, description) in self.task_calls.values_mut() {
            if let Some(d) = description {
                f(d);
            }
        }
        for run in &mut self.runs {
            run.visit_texts(f);
        }
    }

    /// A copy of the state to go on from, without the passages read so far (they are
    /// handed out once, not saved).
    fn snapshot(&mut self) -> Accumulator {
        let passages = std::mem::take(&mut self.t.passages);
        let runs: Vec<Vec<Passage>> = self
            .runs
            .iter_mut()
            .map(|r| std::mem::take(&mut r.t.passages))
            .collect();
        let copy = self.clone();
        self.t.passages = passages;
        for (run, passages) in self.runs.iter_mut().zip(runs) {
            run.t.passages = passages;
        }
        copy
    }

    /// Keeps a passage of the line being read.
    fn passage(&mut self, kind: PassageKind, line: &Line, text: &str) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let is_message = matches!(
            kind,
            PassageKind::UserMessage | PassageKind::AssistantResponse
        );
        let context = if is_message {
            let text = truncate_chars(text, MAX_CONTEXT_CHARS);
            self.last_message.replace(text)
        } else {
            None
        };
        let seq = self.t.lines;
        let part = self
            .t
            .passages
            .iter()
            .rev()
            .take_while(|p| p.seq == seq)
            .count();
        self.t.passages.push(Passage {
            kind,
            uuid: line.uuid().map(str::to_owned),
            seq,
            part: u32::try_from(part).unwrap_or(u32::MAX),
            timestamp: line.timestamp().and_then(Timestamp::parse),
            text: truncate_chars(text, MAX_PASSAGE_CHARS),
            context,
            agent: None,
        });
    }

    /// The place of the line being read: its own link, or the last one before it.
    fn place(&self) -> Place {
        Place {
            link: self.links.len().checked_sub(1),
            seq: self.t.lines,
        }
    }

    fn add(&mut self, line: &Line, history: &dyn History) {
        let key = line.uuid().map(uuid_key);
        if let Some(key) = key {
            if !self.seen.insert(key) {
                self.t.duplicate_lines += 1;
                return;
            }
            if self.mode == Mode::Main
                && let Some(owner) = history.owner(key, &self.t.session_id)
            {
                self.t.replayed_lines += 1;
                self.t.resumes.insert(owner);
                return;
            }
        }
        if self.mode == Mode::Main && line.is_sidechain() {
            self.add_inline(line, history);
            return;
        }
        let ts = line.timestamp().and_then(Timestamp::parse);
        if let Some(key) = key {
            self.link_of.insert(key, self.links.len());
            self.links.push(Link {
                uuid: key,
                parent: line.chain_parent().map(uuid_key),
                timestamp: ts.map(|t| t.0),
            });
        }
        if self.t.agent_id.is_none() {
            self.t.agent_id = line.agent_id().map(str::to_owned);
        }
        if self.t.session_field.is_none() {
            self.t.session_field = line.session_id().map(str::to_owned);
        }
        if self.t.slug.is_none() {
            self.t.slug = line.slug().map(str::to_owned);
        }
        if let Some(ts) = ts {
            self.timestamps.push(ts.0);
            // Timestamps are not monotonic in file order: keep the extremes.
            self.t.first_ts = Some(self.t.first_ts.map_or(ts, |f| f.min(ts)));
            self.t.last_ts = Some(self.t.last_ts.map_or(ts, |l| l.max(ts)));
        }
        if let Some(cwd) = line.cwd()
            && !self.t.cwds.iter().any(|c| c == cwd)
        {
            self.t.cwds.push(cwd.to_owned());
        }
        if self.t.git_branch.is_none() {
            self.t.git_branch = line.git_branch().map(str::to_owned);
        }
        if let Some(v) = line.version() {
            self.t.version = Some(v.to_owned());
        }
        match &line.kind {
            LineKind::User => self.add_user(line, ts),
            LineKind::Assistant => self.add_assistant(line, ts),
            LineKind::System => {
                if let Some(boundary) = line.compact_boundary()
                    && self.t.compactions.len() < MAX_COMPACTIONS
                {
                    self.t.compactions.push(Compaction {
                        at: ts,
                        trigger: boundary.trigger,
                        pre_tokens: boundary.pre_tokens,
                        summary: None,
                    });
                }
            }
            LineKind::Summary => {
                if let Some((label, Some(leaf))) = line.summary() {
                    self.summary_lines.push((label.to_owned(), leaf.to_owned()));
                }
            }
            LineKind::CustomTitle => {
                if let Some(title) = line.custom_title().filter(|t| !t.trim().is_empty()) {
                    self.t.custom_title = Some(title.trim().to_owned());
                }
            }
            LineKind::AiTitle => {
                if let Some(title) = line.ai_title().filter(|t| !t.trim().is_empty()) {
                    self.t.ai_title = Some(title.trim().to_owned());
                }
            }
            LineKind::Other(_) => {
                if let Some(text) = line.steering_text() {
                    self.add_prompt_text(&text, line);
                }
            }
        }
    }

    /// Routes a sidechain line of a main file to its inline run: the run of its parent,
    /// or a new run when its parent is not a sidechain line.
    fn add_inline(&mut self, line: &Line, history: &dyn History) {
        let run = match line.parent_uuid().and_then(|p| self.run_of.get(p)) {
            Some(&run) => run,
            None => {
                let root = line.uuid().unwrap_or("").to_owned();
                let short: String = root.chars().take(8).collect();
                let mut acc = Accumulator::new(&format!("inline-{short}"), Mode::Agent);
                acc.t.root_uuid = Some(root);
                self.runs.push(acc);
                self.runs.len() - 1
            }
        };
        if let Some(uuid) = line.uuid() {
            self.run_of.insert(uuid.to_owned(), run);
        }
        let acc = &mut self.runs[run];
        acc.t.lines += 1;
        acc.add(line, history);
    }

    fn add_user(&mut self, line: &Line, ts: Option<Timestamp>) {
        self.t.user_lines += 1;
        let blocks = line.blocks();
        for block in &blocks {
            if let Block::ToolResult {
                tool_use_id: Some(id),
                is_error: true,
                ..
            } = block
                && let Some(name) = self.tool_use_ids.get(*id)
                && let Some(tool) = self.t.tools.get_mut(name)
            {
                tool.errors += 1;
            }
        }
        if let Some((agent_id, agent_type)) = line.spawned_agent() {
            let tool_use_id = blocks.iter().find_map(|b| match b {
                Block::ToolResult { tool_use_id, .. } => tool_use_id.map(str::to_owned),
                _ => None,
            });
            let (call_type, description) = tool_use_id
                .as_ref()
                .and_then(|id| self.task_calls.get(id).cloned())
                .unwrap_or_default();
            if !self.t.spawns.iter().any(|s| s.agent_id == agent_id) {
                let run = line.agent_run();
                self.t.spawns.push(Spawn {
                    agent_id: agent_id.to_owned(),
                    tool_use_id,
                    agent_type: agent_type.map(str::to_owned).or(call_type),
                    description,
                    duration_ms: run.duration_ms,
                    tokens: run.tokens,
                    tool_uses: run.tool_uses,
                });
            }
        }
        if line.is_compact_summary() {
            let text = blocks
                .iter()
                .filter_map(|b| match b {
                    Block::Text(t) => Some(*t),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            self.passage(PassageKind::CompactSummary, line, &text);
            let text = truncate_chars(text.trim(), MAX_COMPACT_CHARS);
            // The summary belongs to the boundary just before it; older files write the
            // summary alone.
            let open = self
                .t
                .compactions
                .last()
                .is_some_and(|c| c.summary.is_none());
            if open {
                if let Some(c) = self.t.compactions.last_mut() {
                    c.summary = Some(text);
                }
            } else if self.t.compactions.len() < MAX_COMPACTIONS {
                self.t.compactions.push(Compaction {
                    at: ts,
                    summary: Some(text),
                    ..Compaction::default()
                });
            }
            return;
        }
        let Some(prompt) = prompt_of(line, self.mode == Mode::Agent) else {
            return;
        };
        self.add_prompt_text(&prompt, line);
    }

    /// Counts a real prompt, and keeps it while fewer than [`MAX_PROMPTS`] are kept.
    fn add_prompt_text(&mut self, prompt: &str, line: &Line) {
        let Some(prompt) = real_prompt(prompt) else {
            return;
        };
        self.passage(PassageKind::UserMessage, line, &prompt);
        self.t.prompt_count += 1;
        if self.prompts.len() < MAX_PROMPTS {
            let place = self.place();
            self.prompts.push((
                place,
                truncate_chars(&prompt, MAX_TEXT_CHARS),
                line.uuid().map(str::to_owned),
            ));
        }
    }

    fn add_assistant(&mut self, line: &Line, ts: Option<Timestamp>) {
        self.t.assistant_lines += 1;
        if let Some(usage) = line.usage() {
            let key = (
                line.message_id().unwrap_or("").to_owned(),
                line.request_id().unwrap_or("").to_owned(),
            );
            if key.0.is_empty() {
                // No id to group by: each line is its own response.
                self.loose_usage = self.loose_usage + usage;
            } else {
                let slot = self.usage.entry(key).or_default();
                *slot = slot.max(usage);
            }
        }
        let new_response = match line.message_id() {
            Some(id) => self.response_ids.insert(id.to_owned()),
            None => true,
        };
        if new_response {
            self.t.assistant_responses += 1;
            if let Some(model) = line.model().filter(|m| !m.starts_with('<')) {
                *self.t.models.entry(model.to_owned()).or_default() += 1;
            }
        }
        let place = self.place();
        let uuid = line.uuid();
        for block in line.blocks() {
            match block {
                Block::Text(text) if self.mode == Mode::Agent || !line.is_sidechain() => {
                    if text.trim().is_empty() {
                        continue;
                    }
                    self.passage(PassageKind::AssistantResponse, line, text);
                    if text.chars().count() >= MIN_SUMMARY_CHARS {
                        push_tail(
                            &mut self.reports,
                            (place, truncate_chars(text, MAX_SUMMARY_CHARS)),
                        );
                    }
                    push_tail(
                        &mut self.texts,
                        (place, truncate_chars(text, MAX_TEXT_CHARS)),
                    );
                    if self.assistant_chars < MAX_ASSISTANT_CHARS {
                        let kept = truncate_chars(text, MAX_TEXT_CHARS);
                        self.assistant_chars += kept.len();
                        self.t.assistant_text.push(kept);
                    }
                }
                Block::ToolUse { id, name, input } => {
                    let shown = truncate_chars(&input.to_string(), MAX_TOOL_INPUT_CHARS);
                    self.passage(PassageKind::ToolCall, line, &format!("{name} {shown}"));
                    self.note_files(name, input, ts, uuid);
                    if name == "TodoWrite"
                        && let Some(todos) = input.get("todos").and_then(|t| t.as_array())
                    {
                        let list = todos
                            .iter()
                            .filter_map(|t| {
                                let content = t.get("content")?.as_str()?.to_owned();
                                let status = t.get("status").and_then(|s| s.as_str()).unwrap_or("");
                                Some((content, status.to_owned()))
                            })
                            .collect();
                        push_tail(&mut self.todo_lists, (place, list));
                    }
                    if matches!(name, "Task" | "Agent")
                        && let Some(id) = id
                    {
                        let field =
                            |k: &str| input.get(k).and_then(|v| v.as_str()).map(str::to_owned);
                        self.task_calls.insert(
                            id.to_owned(),
                            (field("subagent_type"), field("description")),
                        );
                    }
                    if let Some(id) = id
                        && self
                            .tool_use_ids
                            .insert(id.to_owned(), name.to_owned())
                            .is_some()
                    {
                        continue;
                    }
                    self.t.tool_calls += 1;
                    let tool = self.t.tools.entry(name.to_owned()).or_insert(ToolUse {
                        count: 0,
                        errors: 0,
                        first: None,
                        last: None,
                        evidence: uuid.map(str::to_owned),
                    });
                    tool.count += 1;
                    if let Some(ts) = ts {
                        tool.first = Some(tool.first.map_or(ts, |f| f.min(ts)));
                        tool.last = Some(tool.last.map_or(ts, |l| l.max(ts)));
                    }
                }
                _ => {}
            }
        }
    }

    /// Records the file a Read/Edit/Write-style call names.
    fn note_files(
        &mut self,
        tool: &str,
        input: &serde_json::Value,
        ts: Option<Timestamp>,
        uuid: Option<&str>,
    ) {
        let (read, edited, created) = match tool {
            "Read" | "NotebookRead" => (true, false, false),
            "Edit" | "MultiEdit" | "NotebookEdit" => (false, true, false),
            "Write" => (false, false, true),
            _ => return,
        };
        let Some(path) = ["file_path", "notebook_path", "path"]
            .iter()
            .find_map(|k| input.get(*k).and_then(|v| v.as_str()))
            .filter(|p| !p.trim().is_empty())
        else {
            return;
        };
        if self.t.files.len() >= MAX_FILES && !self.t.files.contains_key(path) {
            return;
        }
        let file = self.t.files.entry(path.to_owned()).or_default();
        if file.evidence.is_none() {
            file.evidence = uuid.map(str::to_owned);
        }
        file.read |= read;
        file.edited |= edited;
        file.created |= created;
        if let Some(ts) = ts {
            file.first = Some(file.first.map_or(ts, |f| f.min(ts)));
            file.last = Some(file.last.map_or(ts, |l| l.max(ts)));
        }
    }

    fn finish(mut self, history: &dyn History) -> Transcript {
        self.t.usage = self
            .usage
            .values()
            .fold(self.loose_usage, |total, u| total + *u);
        self.t.inline_agents = std::mem::take(&mut self.runs)
            .into_iter()
            .map(|run| run.finish(history))
            .filter(Transcript::has_messages)
            .collect();
        for run in &mut self.t.inline_agents {
            for mut passage in std::mem::take(&mut run.passages) {
                passage.agent = Some(run.session_id.clone());
                self.t.passages.push(passage);
            }
        }
        self.timestamps.sort_unstable();
        self.t.active_ms = self
            .timestamps
            .windows(2)
            .map(|w| (w[1] - w[0]).min(IDLE_GAP_MS))
            .sum();

        // Conversation order: every choice of first or last is made by the chain.
        let rank = dag::ranks(&self.links);
        let key = |p: &Place| (p.link.map_or(0, |l| rank[l].saturating_add(1)), p.seq);
        self.prompts.sort_by_key(|(p, _, _)| key(p));
        for (_, text, uuid) in self.prompts {
            self.t.prompts.push(text);
            self.t.prompt_uuids.push(uuid);
        }
        self.t.final_report = last_of(self.reports, key).map(|(_, text)| text);
        self.t.last_text = last_of(self.texts, key).map(|(_, text)| text);
        if let Some((_, todos)) = last_of(self.todo_lists, key) {
            self.t.todos = todos;
        }

        // Labels: those of this file and those other files gave, ordered by their leaf.
        let mut labels: Vec<(usize, String)> = Vec::new();
        for (label, leaf) in self.summary_lines {
            match self.link_of.get(&uuid_key(&leaf)) {
                Some(&l) => labels.push((rank[l], label)),
                None => self.t.foreign_labels.push((leaf, label)),
            }
        }
        for (uuid, &l) in &self.link_of {
            if let Some(label) = history.label(*uuid)
                && !labels.iter().any(|(_, known)| *known == label)
            {
                labels.push((rank[l], label));
            }
        }
        labels.sort();
        self.t.summaries = labels.into_iter().map(|(_, label)| label).collect();
        if self.mode == Mode::Main {
            self.t.uuids = self.links.iter().map(|l| l.uuid).collect();
        }
        self.t
    }
}

/// The item that comes last in conversation order.
fn last_of<T, K: Ord>(items: Vec<(Place, T)>, key: impl Fn(&Place) -> K) -> Option<(Place, T)> {
    items.into_iter().max_by_key(|(p, _)| key(p))
}

/// Keeps the last [`TAIL`] items pushed.
fn push_tail<T>(items: &mut Vec<T>, item: T) {
    if items.len() == TAIL {
        items.remove(0);
    }
    items.push(item);
}

/// Blocks Claude Code inserts into typed prompts (reminders, IDE context): removed.
const INSERTED_BLOCKS: [&str; 4] = [
    "system-reminder",
    "ide_opened_file",
    "ide_selection",
    "ide_diagnostics",
];

/// Markers of user lines that Claude Code wrote, not the person (Q12).
const NOT_TYPED: [&str; 11] = [
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<local-command-caveat>",
    "<task-notification>",
    "Caveat: The messages below were generated by the user while running local commands",
    "[Request interrupted by user",
];

/// The prompt a user line carries, if a person typed it: not a meta, sidechain or compact
/// summary line, not a tool result, not a wrapper.
/// In a subagent's own transcript (`agent`), its sidechain prompts count.
pub(super) fn prompt_of(line: &Line, agent: bool) -> Option<String> {
    if line.is_meta() || (line.is_sidechain() && !agent) || line.is_compact_summary() {
        return None;
    }
    let blocks = line.blocks();
    if blocks.iter().any(|b| matches!(b, Block::ToolResult { .. })) {
        return None;
    }
    let text: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) => Some(*t),
            _ => None,
        })
        .collect();
    real_prompt(&text.join("\n"))
}

/// The text a person typed, with inserted blocks removed; `None` when the line is a
/// command wrapper, a caveat, an interrupt marker or empty.
pub(super) fn real_prompt(text: &str) -> Option<String> {
    let mut text = text.to_owned();
    for tag in INSERTED_BLOCKS {
        text = strip_tag_blocks(&text, tag);
    }
    let trimmed = text.trim();
    if trimmed.is_empty() || NOT_TYPED.iter().any(|m| trimmed.starts_with(m)) {
        return None;
    }
    Some(trimmed.to_owned())
}

fn strip_tag_blocks(text: &str, tag: &str) -> String {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(&open) {
        out.push_str(&rest[..start]);
        match rest[start..].find(&close) {
            Some(end) => rest = &rest[start + end + close.len()..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_owned(),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(lines: &[&str]) -> Transcript {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, lines.join("\n")).unwrap();
        read_transcript(&path, "s").unwrap()
    }

    #[test]
    fn wrappers_meta_and_tool_results_are_not_prompts() {
        let t = read(&[
            r#"{"type":"user","isMeta":true,"message":{"content":"Caveat: ignore"}}"#,
            r#"{"type":"user","message":{"content":"<command-name>/clear</command-name>"}}"#,
            r#"{"type":"user","message":{"content":"<system-reminder>x</system-reminder>  "}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","content":"ok"}]}}"#,
            r#"{"type":"user","message":{"content":"[Request interrupted by user]"}}"#,
            r#"{"type":"user","message":{"content":"<system-reminder>r</system-reminder>Fix the parser"}}"#,
            r#"{"type":"user","message":{"content":"<ide_selection>lines 1-2</ide_selection>"}}"#,
        ]);
        assert_eq!(t.user_lines, 7);
        assert_eq!(t.prompts, ["Fix the parser"]);
    }

    #[test]
    fn steering_messages_taken_from_the_queue_are_prompts() {
        let t = read(&[
            r#"{"type":"user","uuid":"u1","message":{"content":"Refactor the cache"}}"#,
            r#"{"type":"queue-operation","operation":"enqueue","content":[{"type":"text","text":"queued"}]}"#,
            r#"{"type":"queue-operation","operation":"dequeue"}"#,
            r#"{"type":"queue-operation","operation":"remove","content":"<system-reminder>x</system-reminder>actually keep the old API"}"#,
            r#"{"type":"queue-operation","operation":"remove","content":[{"type":"text","text":"and skip the tests"}]}"#,
        ]);
        assert_eq!(
            t.prompts,
            [
                "Refactor the cache",
                "actually keep the old API",
                "and skip the tests"
            ]
        );
        assert_eq!(t.prompt_count, 3);
    }

    #[test]
    fn split_responses_count_once_and_tools_are_deduped() {
        let t = read(&[
            r#"{"type":"assistant","timestamp":"2026-01-01T00:00:02Z","message":{"id":"m1","model":"claude-x","content":[{"type":"thinking","thinking":""}]}}"#,
            r#"{"type":"assistant","timestamp":"2026-01-01T00:00:01Z","message":{"id":"m1","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}]}}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}]}}"#,
            r#"{"type":"assistant","message":{"id":"m2","model":"<synthetic>","content":[{"type":"text","text":"done"}]}}"#,
        ]);
        assert_eq!(t.assistant_lines, 4);
        assert_eq!(t.assistant_responses, 2);
        assert_eq!(t.tool_calls, 1);
        assert_eq!(t.models.get("claude-x"), Some(&1));
        assert_eq!(t.models.len(), 1);
        assert_eq!(t.first_ts, Timestamp::parse("2026-01-01T00:00:01Z"));
        assert_eq!(t.last_ts, Timestamp::parse("2026-01-01T00:00:02Z"));
    }

    #[test]
    fn long_pauses_do_not_count_as_active_time() {
        let line = |ts: &str| {
            format!(r#"{{"type":"user","timestamp":"{ts}","message":{{"content":"x"}}}}"#)
        };
        let lines = [
            line("2026-01-01T10:10:00Z"),
            line("2026-01-01T10:00:00Z"),
            line("2026-01-01T18:00:00Z"), // 7h50m later: capped at 30m
            line("2026-01-01T18:05:00Z"),
        ];
        let t = read(&lines.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(t.active_ms, (10 + 30 + 5) * 60 * 1000);
    }

    #[test]
    fn usage_of_a_response_split_over_lines_counts_once_at_its_most_complete() {
        // Q4: one response, three lines, usage growing; a second response; a line without
        // an id counts on its own.
        let t = read(&[
            r#"{"type":"assistant","requestId":"r1","message":{"id":"m1","usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":100},"content":[{"type":"thinking","thinking":"x"}]}}"#,
            r#"{"type":"assistant","requestId":"r1","message":{"id":"m1","usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":100},"content":[{"type":"text","text":"a"}]}}"#,
            r#"{"type":"assistant","requestId":"r1","message":{"id":"m1","usage":{"input_tokens":10,"output_tokens":120,"cache_read_input_tokens":100},"content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}}"#,
            r#"{"type":"assistant","requestId":"r2","message":{"id":"m2","usage":{"input_tokens":7,"output_tokens":30},"content":[{"type":"text","text":"b"}]}}"#,
            r#"{"type":"assistant","usage":{"input_tokens":1,"output_tokens":2},"message":{"content":[{"type":"text","text":"old"}]}}"#,
        ]);
        assert_eq!(
            t.usage,
            Usage {
                input: 10 + 7 + 1,
                output: 120 + 30 + 2,
                cache_creation: 0,
                cache_read: 100,
            }
        );
    }

    #[test]
    fn the_last_ai_title_is_kept() {
        let t = read(&[
            r#"{"type":"ai-title","aiTitle":"Old title","sessionId":"s"}"#,
            r#"{"type":"user","message":{"content":"hi"}}"#,
            r#"{"type":"ai-title","aiTitle":"Fix the parser race","sessionId":"s"}"#,
        ]);
        assert_eq!(t.ai_title.as_deref(), Some("Fix the parser race"));
    }

    #[test]
    fn garbage_and_truncated_lines_are_skipped_and_counted() {
        let t = read(&[
            r#"{"type":"user","cwd":"/w/p","message":{"content":"hello there"}}"#,
            "this is not json",
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"hi"}]}}"#,
            r#"{"type":"assistant","message":{"id":"m2","cont"#,
        ]);
        assert_eq!(t.lines, 4);
        assert_eq!(t.skipped_lines, 2);
        assert!(t.has_messages());
        assert_eq!(t.cwds, ["/w/p"]);
    }

    /// Reading a file whole and reading it in two goes (cut anywhere, even mid-line, the
    /// read point stored as MessagePack in between) give the same transcript.
    #[test]
    fn reading_on_from_a_read_point_matches_reading_whole() {
        let lines = [
            r#"{"type":"summary","summary":"Label","leafUuid":"a2"}"#,
            r#"{"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:00Z","cwd":"/w/p","message":{"content":"Fix the parser"}}"#,
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","requestId":"r1","timestamp":"2026-01-01T00:00:05Z","message":{"id":"m1","model":"claude-x","usage":{"input_tokens":3,"output_tokens":1},"content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/w/p/a.rs"}}]}}"#,
            r#"{"type":"user","uuid":"r1","parentUuid":"a1","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"no"}]}}"#,
            r#"{"type":"user","uuid":"s1","parentUuid":"r1","isSidechain":true,"message":{"content":"agent task"}}"#,
            r#"{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"r1","compactMetadata":{"trigger":"auto","preTokens":9}}"#,
            r#"{"type":"user","uuid":"c1","parentUuid":"b1","isCompactSummary":true,"message":{"content":"This session is being continued."}}"#,
            r#"{"type":"user","uuid":"u2","parentUuid":"c1","timestamp":"2026-01-01T00:09:00Z","message":{"content":"Now the lexer"}}"#,
            r#"{"type":"assistant","uuid":"a2","parentUuid":"u2","requestId":"r2","message":{"id":"m2","usage":{"input_tokens":4,"output_tokens":8},"content":[{"type":"text","text":"Done with the lexer."}]}}"#,
            r#"{"type":"ai-title","aiTitle":"Parser and lexer"}"#,
        ];
        let text = lines.join("\n") + "\n";
        let mut whole = read_transcript_from(text.as_bytes(), "s", Mode::Main).unwrap();
        let passages = std::mem::take(&mut whole.passages);
        let expected = format!("{whole:?}");
        for cut in (0..text.len()).step_by(7) {
            let (first, point) =
                read_resumable(&text.as_bytes()[..cut], "s", Mode::Main, &NoHistory, None).unwrap();
            let bytes = rmp_serde::to_vec(&point).unwrap();
            let point: ReadPoint = rmp_serde::from_slice(&bytes).unwrap();
            let rest = &text.as_bytes()[point.offset as usize..];
            let (mut resumed, end) =
                read_resumable(rest, "s", Mode::Main, &NoHistory, Some(point)).unwrap();
            // The two reads' passages are the whole read's (a half-written line read twice
            // gives its passage twice, the same both times).
            let mut both = first.passages.clone();
            both.extend(std::mem::take(&mut resumed.passages));
            both.sort_by_key(|p| (p.agent.clone(), p.seq, p.part));
            both.dedup();
            let mut want = passages.clone();
            want.sort_by_key(|p| (p.agent.clone(), p.seq, p.part));
            assert_eq!(both, want, "cut at {cut}");
            assert_eq!(format!("{resumed:?}"), expected, "cut at {cut}");
            assert_eq!(end.offset, text.len() as u64);
        }
        // Passages: messages with the message before as context; tool calls and compact
        // summaries without; the inline run's prompt is its own.
        let shown: Vec<(&str, &str, Option<&str>, Option<&str>)> = passages
            .iter()
            .map(|p| {
                (
                    p.kind.as_str(),
                    p.text.as_str(),
                    p.context.as_deref(),
                    p.agent.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("user_message", "Fix the parser", None, None),
                ("tool_call", r#"Edit {"file_path":"/w/p/a.rs"}"#, None, None),
                (
                    "compact_summary",
                    "This session is being continued.",
                    None,
                    None
                ),
                (
                    "user_message",
                    "Now the lexer",
                    Some("Fix the parser"),
                    None
                ),
                (
                    "assistant_response",
                    "Done with the lexer.",
                    Some("Now the lexer"),
                    None
                ),
                ("user_message", "agent task", None, Some("inline-s1")),
            ]
        );
        assert_eq!(whole.summaries, ["Label"]);
        assert_eq!(whole.compactions.len(), 1);
        assert_eq!(whole.tools["Edit"].errors, 1);
    }

    #[test]
    fn only_summaries_of_this_file_are_kept() {
        let t = read(&[
            r#"{"type":"summary","summary":"Elsewhere","leafUuid":"other"}"#,
            r#"{"type":"summary","summary":"Here","leafUuid":"u1"}"#,
            r#"{"type":"user","uuid":"u1","message":{"content":"x"}}"#,
        ]);
        assert_eq!(t.summaries, ["Here"]);
    }
}
