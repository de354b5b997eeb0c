//! What user and assistant lines add to the accumulator, block by block.

use super::accumulator::{Accumulator, Place, Reply, push_tail};
use super::events::{
    added_paths, committed_subject, event_of, nothing_committed, pull_request_url,
};
use super::prompts::{prompt_of, real_prompt, truncate_chars};
use super::types::{EventKind, PassageKind, PersistedResult, Spawn, ToolUse};
use super::{
    MAX_ASSISTANT_CHARS, MAX_COMPACT_CHARS, MAX_COMPACTIONS, MAX_EVENTS, MAX_FILES, MAX_PLAN_BYTES,
    MAX_PLANS, MAX_PROMPTS, MAX_TEXT_CHARS, MAX_TOOL_INPUT_CHARS, Mode,
};
use crate::claude::line::{Block, Line, result_text};
use crate::model::{Compaction, Timestamp};

impl Accumulator {
    pub(super) fn add_user(&mut self, line: &Line, ts: Option<Timestamp>) {
        self.t.user_lines += 1;
        let blocks = line.blocks();
        for block in &blocks {
            if let Block::ToolResult {
                tool_use_id: Some(id),
                content,
                is_error,
            } = block
            {
                self.note_result(id, content, *is_error);
                self.note_persisted(line, id, content, ts);
                // git's output names commit authors (`git log`, `git show`).
                if self.tool_use_ids.get(*id).is_some_and(|t| t == "Bash")
                    && result_mentions(content, "uthor")
                {
                    self.note_people(&result_text(content), ts, line.uuid());
                }
            }
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
            if let Block::ToolResult {
                tool_use_id: Some(id),
                is_error: true,
                ..
            } = block
                && let Some((path, did)) = self.file_calls.get(*id)
                && let Some(file) = self.t.files.get_mut(path)
            {
                file.errors[*did] += 1;
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
    pub(super) fn add_prompt_text(&mut self, prompt: &str, line: &Line) {
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

    pub(super) fn add_assistant(&mut self, line: &Line, ts: Option<Timestamp>) {
        self.t.assistant_lines += 1;
        self.add_usage(line);
        let place = self.place();
        let mut reply = Reply {
            place,
            message_id: line.message_id().map(str::to_owned),
            text: String::new(),
            tool_call: false,
        };
        for block in line.blocks() {
            match block {
                Block::Text(text) if self.mode == Mode::Agent || !line.is_sidechain() => {
                    self.add_assistant_text(line, text, place);
                    if !text.trim().is_empty() {
                        if !reply.text.is_empty() {
                            reply.text.push('\n');
                        }
                        reply.text.push_str(text);
                        reply.tool_call = false;
                    }
                }
                Block::ToolUse { id, name, input } => {
                    self.add_tool_use(line, ts, place, ToolCallBlock { id, name, input });
                    reply.tool_call = true;
                }
                _ => {}
            }
        }
        if reply.tool_call || !reply.text.is_empty() {
            push_tail(&mut self.replies, reply);
        }
    }

    /// Tokens, each API response counted once (a response split over lines repeats its
    /// usage: the most complete record is kept), and the model that answered.
    fn add_usage(&mut self, line: &Line) {
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
    }

    /// Assistant prose: a passage, a final-report and last-text candidate, and prose kept
    /// for extraction.
    fn add_assistant_text(&mut self, line: &Line, text: &str, place: Place) {
        if text.trim().is_empty() {
            return;
        }
        self.passage(PassageKind::AssistantResponse, line, text);
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

    /// A tool call: a passage, the files it names, a todo list or a subagent it starts,
    /// and the tool's use (each call id counted once).
    fn add_tool_use(
        &mut self,
        line: &Line,
        ts: Option<Timestamp>,
        place: Place,
        call: ToolCallBlock<'_>,
    ) {
        let ToolCallBlock { id, name, input } = call;
        let uuid = line.uuid();
        let shown = truncate_chars(&input.to_string(), MAX_TOOL_INPUT_CHARS);
        self.passage(PassageKind::ToolCall, line, &format!("{name} {shown}"));
        self.note_files(name, input, ts, uuid, id);
        // A commit message's trailers name its co-authors.
        if name == "Bash"
            && let Some(command) = input.get("command").and_then(|c| c.as_str())
        {
            self.note_people(command, ts, uuid);
        }
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
        self.note_event(name, input, ts, id);
        if matches!(name, "Task" | "Agent")
            && let Some(id) = id
        {
            let field = |k: &str| input.get(k).and_then(|v| v.as_str()).map(str::to_owned);
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
            return;
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

    /// A call that proves something (a commit, a check, a task, a plan), waiting for its
    /// result when it has an id. A call replayed under the same id is one event.
    fn note_event(
        &mut self,
        name: &str,
        input: &serde_json::Value,
        ts: Option<Timestamp>,
        id: Option<&str>,
    ) {
        if id.is_some_and(|id| self.tool_use_ids.contains_key(id)) {
            return;
        }
        match name {
            "Bash" => {
                let command = input.get("command").and_then(|c| c.as_str()).unwrap_or("");
                for path in added_paths(command) {
                    if self.t.committed_files.len() < MAX_FILES
                        && !self.t.committed_files.contains(&path)
                    {
                        self.t.committed_files.push(path);
                    }
                }
            }
            "TaskCreate" => {
                if let Some(subject) = input.get("subject").and_then(|s| s.as_str()) {
                    self.t
                        .tasks
                        .push((subject.trim().to_owned(), "pending".to_owned()));
                }
            }
            "TaskUpdate" => {
                let task = input.get("taskId").and_then(|t| match t {
                    serde_json::Value::String(s) => s.parse::<usize>().ok(),
                    v => v.as_u64().and_then(|n| usize::try_from(n).ok()),
                });
                let status = input.get("status").and_then(|s| s.as_str());
                if let (Some(n), Some(status)) = (task, status)
                    && let Some(task) = n.checked_sub(1).and_then(|i| self.t.tasks.get_mut(i))
                {
                    task.1 = status.to_owned();
                }
            }
            "ExitPlanMode" => {
                // A plan over 100 KB is not served (seed 001): not kept either.
                if let Some(plan) = input.get("plan").and_then(|p| p.as_str())
                    && !plan.trim().is_empty()
                    && plan.len() <= MAX_PLAN_BYTES
                {
                    if self.t.plans.len() == MAX_PLANS {
                        self.t.plans.remove(0);
                    }
                    self.t.plans.push(plan.trim().to_owned());
                }
            }
            _ => {}
        }
        if let Some(event) = event_of(name, input, ts) {
            if let Some(id) = id {
                self.pending.insert(id.to_owned(), self.t.events.len());
            }
            if self.t.events.len() < MAX_EVENTS {
                self.t.events.push(event);
            }
        }
    }

    /// A result Claude Code moved to a `tool-results` file: its preview says so.
    fn note_persisted(
        &mut self,
        line: &Line,
        id: &str,
        content: &serde_json::Value,
        ts: Option<Timestamp>,
    ) {
        let says = |needle: &str| result_mentions(content, needle);
        let moved = says("<persisted-output>") || (says("tool-results") && says(id));
        if !moved || self.t.persisted.iter().any(|p| p.call_id == id) {
            return;
        }
        if self.t.persisted.len() < MAX_EVENTS {
            self.t.persisted.push(PersistedResult {
                call_id: id.to_owned(),
                tool: self.tool_use_ids.get(id).cloned().unwrap_or_default(),
                uuid: line.uuid().map(str::to_owned),
                seq: self.t.lines,
                timestamp: ts,
            });
        }
    }

    /// Sets the outcome of the event a tool result answers.
    fn note_result(&mut self, id: &str, content: &serde_json::Value, is_error: bool) {
        let Some(index) = self.pending.remove(id) else {
            return;
        };
        let Some(event) = self.t.events.get_mut(index) else {
            return;
        };
        let text = result_text(content);
        event.ok = Some(!is_error);
        match event.kind {
            EventKind::Commit if !is_error => {
                if nothing_committed(&text) {
                    event.ok = Some(false);
                } else if let Some(subject) = committed_subject(&text) {
                    event.text = subject;
                }
            }
            EventKind::PullRequest if !is_error && event.text.is_empty() => {
                event.text = pull_request_url(&text).unwrap_or_default();
            }
            _ => {}
        }
    }

    /// Records the commit authors `text` names.
    fn note_people(&mut self, text: &str, ts: Option<Timestamp>, uuid: Option<&str>) {
        for (name, address) in super::people::authors_in(text) {
            let people = &mut self.t.people;
            if people.len() >= super::people::MAX_PEOPLE && !people.contains_key(name) {
                continue;
            }
            let person = people.entry(name.to_owned()).or_default();
            if person.organization.is_none() {
                person.organization = super::people::organization_of(address);
            }
            if person.evidence.is_none() {
                person.evidence = uuid.map(str::to_owned);
            }
            person.count += 1;
            if let Some(ts) = ts {
                person.first = Some(person.first.map_or(ts, |f| f.min(ts)));
                person.last = Some(person.last.map_or(ts, |l| l.max(ts)));
            }
        }
    }

    /// Records the file a Read/Edit/Write-style call names.
    pub(super) fn note_files(
        &mut self,
        tool: &str,
        input: &serde_json::Value,
        ts: Option<Timestamp>,
        uuid: Option<&str>,
        call_id: Option<&str>,
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
        // A call replayed (the same id) is counted once.
        let did = usize::from(edited) + 2 * usize::from(created);
        let counted = match call_id {
            Some(id) => self
                .file_calls
                .insert(id.to_owned(), (path.to_owned(), did))
                .is_none(),
            None => true,
        };
        if counted {
            file.calls[did] += 1;
        }
        if let Some(ts) = ts {
            file.first = Some(file.first.map_or(ts, |f| f.min(ts)));
            file.last = Some(file.last.map_or(ts, |l| l.max(ts)));
        }
    }
}

/// A `tool_use` block of an assistant line.
struct ToolCallBlock<'a> {
    id: Option<&'a str>,
    name: &'a str,
    input: &'a serde_json::Value,
}

/// Whether a tool result's text (a string, or its text blocks) holds `needle`, without
/// copying it: every result of a session is looked at.
fn result_mentions(content: &serde_json::Value, needle: &str) -> bool {
    match content {
        serde_json::Value::String(s) => s.contains(needle),
        serde_json::Value::Array(items) => items.iter().any(|b| match b {
            serde_json::Value::String(s) => s.contains(needle),
            _ => b
                .get("text")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|t| t.contains(needle)),
        }),
        _ => false,
    }
}
