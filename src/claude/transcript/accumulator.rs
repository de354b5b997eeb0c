//! The state a read builds, line by line, and the transcript it ends in.

use std::collections::{HashMap, HashSet};

use super::prompts::truncate_chars;
use super::types::{Passage, PassageKind, Transcript};
use super::{
    History, IDLE_GAP_MS, MAX_COMPACTIONS, MAX_CONTEXT_CHARS, MAX_PASSAGE_CHARS, MIN_SUMMARY_CHARS,
    Mode, TAIL,
};
use crate::claude::dag::{self, Link, uuid_key};
use crate::claude::line::{Line, LineKind, Usage};
use crate::model::{Compaction, Timestamp};

/// Where something was said: the chain link of its line (or the last link before it, for
/// lines without a uuid) and its file position, to rank it in conversation order.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(super) struct Place {
    pub(super) link: Option<usize>,
    pub(super) seq: u64,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Accumulator {
    pub(super) t: Transcript,
    pub(super) response_ids: HashSet<String>,
    /// Tool calls by tool_use id → tool name (to pair results with calls).
    pub(super) tool_use_ids: HashMap<String, String>,
    /// The chain of this file's own lines, and each uuid's position in it.
    pub(super) links: Vec<Link>,
    pub(super) link_of: HashMap<u128, usize>,
    /// Every uuid seen in the file, replayed ones included (duplicates are dropped).
    pub(super) seen: HashSet<u128>,
    /// `(label, leafUuid)` of every summary line.
    pub(super) summary_lines: Vec<(String, String)>,
    /// The last message passage's text, the context of the next.
    pub(super) last_message: Option<String>,
    /// Prompts: where, what, and the uuid of the line (evidence).
    pub(super) prompts: Vec<(Place, String, Option<String>)>,
    pub(super) texts: Vec<(Place, String)>,
    pub(super) todo_lists: Vec<(Place, Vec<(String, String)>)>,
    pub(super) assistant_chars: usize,
    pub(super) timestamps: Vec<i64>,
    pub(super) mode: Mode,
    /// Usage per (message id, request id), most complete record kept.
    pub(super) usage: HashMap<(String, String), Usage>,
    pub(super) loose_usage: Usage,
    /// `Task`/`Agent` calls: tool_use id → (subagent_type, description).
    pub(super) task_calls: HashMap<String, (Option<String>, Option<String>)>,
    /// Inline runs and which run each sidechain uuid belongs to.
    pub(super) runs: Vec<Accumulator>,
    pub(super) run_of: HashMap<String, usize>,
    /// Calls that named a file: tool_use id → the path and what the call did (0 read, 1
    /// edited, 2 created), to count errored results.
    #[serde(default)]
    pub(super) file_calls: HashMap<String, (String, usize)>,
    /// Calls that are events waiting for their result: tool_use id → index in `t.events`.
    #[serde(default)]
    pub(super) pending: HashMap<String, usize>,
    /// The last assistant lines: where, the message id, their text, and whether they hold
    /// a tool call (the last message's text is a subagent's report, seed 001).
    #[serde(default)]
    pub(super) replies: Vec<Reply>,
}

/// One assistant line, as the choice of a last message needs it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Reply {
    pub(super) place: Place,
    pub(super) message_id: Option<String>,
    pub(super) text: String,
    pub(super) tool_call: bool,
}

impl Accumulator {
    pub(super) fn new(session_id: &str, mode: Mode) -> Self {
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
            file_calls: HashMap::new(),
            pending: HashMap::new(),
            replies: Vec::new(),
            response_ids: HashSet::new(),
            tool_use_ids: HashMap::new(),
            links: Vec::new(),
            last_message: None,
            link_of: HashMap::new(),
            seen: HashSet::new(),
            summary_lines: Vec::new(),
            prompts: Vec::new(),
            texts: Vec::new(),
            todo_lists: Vec::new(),
            assistant_chars: 0,
            timestamps: Vec::new(),
        }
    }

    pub(super) fn visit_texts(&mut self, f: &mut dyn FnMut(&mut String)) {
        self.t.visit_texts(f);
        self.prompts.iter_mut().for_each(|(_, text, _)| f(text));
        self.texts.iter_mut().for_each(|(_, text)| f(text));
        self.replies.iter_mut().for_each(|r| f(&mut r.text));
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
    pub(super) fn snapshot(&mut self) -> Accumulator {
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
    pub(super) fn passage(&mut self, kind: PassageKind, line: &Line, text: &str) {
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
    pub(super) fn place(&self) -> Place {
        Place {
            link: self.links.len().checked_sub(1),
            seq: self.t.lines,
        }
    }

    pub(super) fn add(&mut self, line: &Line, history: &dyn History) {
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
                if let Some((label, leaf)) = line.summary() {
                    let leaf = leaf.unwrap_or_default().to_owned();
                    self.summary_lines.push((label.to_owned(), leaf));
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
    pub(super) fn add_inline(&mut self, line: &Line, history: &dyn History) {
        let run = if let Some(&run) = line.parent_uuid().and_then(|p| self.run_of.get(p)) {
            run
        } else {
            let root = line.uuid().unwrap_or("").to_owned();
            let mut acc = Accumulator::new(&super::inline_run_name(&root), Mode::Agent);
            acc.t.root_uuid = Some(root);
            self.runs.push(acc);
            self.runs.len() - 1
        };
        if let Some(uuid) = line.uuid() {
            self.run_of.insert(uuid.to_owned(), run);
        }
        let acc = &mut self.runs[run];
        acc.t.lines += 1;
        acc.add(line, history);
    }

    pub(super) fn finish(mut self, history: &dyn History) -> Transcript {
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
        let last_prompt = self.prompts.last().map(|(p, _, _)| key(p));
        for (_, text, uuid) in self.prompts {
            self.t.prompts.push(text);
            self.t.prompt_uuids.push(uuid);
        }
        let (report, ended_on_tool) = last_message(self.replies, key);
        self.t.final_report = report.filter(|r| r.chars().count() >= MIN_SUMMARY_CHARS);
        self.t.ended_on_tool = ended_on_tool;
        let last_text = last_of(self.texts, key);
        self.t.unanswered = match (&last_text, last_prompt) {
            (Some((p, _)), Some(prompt)) => prompt > key(p),
            (None, Some(_)) => true,
            _ => false,
        };
        self.t.last_text = last_text.map(|(_, text)| text);
        if let Some((_, todos)) = last_of(self.todo_lists, key) {
            self.t.todos = todos;
        }

        // Labels: those of this file and those other files gave, ordered by their leaf.
        let mut labels: Vec<(usize, String)> = Vec::new();
        // Every label of the file is its session's to be found by, whatever it labels.
        let mut own = std::collections::HashSet::new();
        self.t.file_labels = self
            .summary_lines
            .iter()
            .filter(|(label, _)| !label.trim().is_empty() && own.insert(label.as_str()))
            .map(|(label, _)| label.clone())
            .collect();
        for (label, leaf) in self.summary_lines {
            if leaf.is_empty() {
                continue;
            }
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
pub(super) fn last_of<T, K: Ord>(
    items: Vec<(Place, T)>,
    key: impl Fn(&Place) -> K,
) -> Option<(Place, T)> {
    items.into_iter().max_by_key(|(p, _)| key(p))
}

/// The text of the last assistant message in conversation order (all the text of the
/// lines that share its message id), and whether that message ended on a tool call, in
/// which case it has no report (seed 001).
fn last_message<K: Ord>(replies: Vec<Reply>, key: impl Fn(&Place) -> K) -> (Option<String>, bool) {
    let Some(last) = replies.iter().max_by_key(|r| key(&r.place)) else {
        return (None, false);
    };
    if last.tool_call {
        return (None, true);
    }
    let id = last.message_id.clone();
    let mut lines: Vec<&Reply> = match &id {
        Some(id) => replies
            .iter()
            .filter(|r| r.message_id.as_ref() == Some(id))
            .collect(),
        None => vec![last],
    };
    lines.sort_by_key(|r| key(&r.place));
    let text = lines
        .iter()
        .map(|r| r.text.as_str())
        .filter(|t| !t.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim();
    ((!text.is_empty()).then(|| text.to_owned()), false)
}

/// Keeps the last [`TAIL`] items pushed.
pub(super) fn push_tail<T>(items: &mut Vec<T>, item: T) {
    if items.len() == TAIL {
        items.remove(0);
    }
    items.push(item);
}
