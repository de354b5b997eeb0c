//! Context for an agent about to start work (seed 001): gathering what earlier sessions
//! left behind (plans, subagent summaries, prompts, labels, messages); `retrieve::context`
//! fits it to the token budget.

use super::Engine;
use crate::claude::{Mode, read_transcript_with};
use crate::graph::{Direction, EdgeFilter};
use crate::model::{Relation, Timestamp};
use crate::retrieve::context::{
    Candidates, Context, ContextMode, ContextSession, MAX_CONTEXT_SESSIONS, staleness,
};
use crate::{Error, Result};

impl Engine {
    /// Context from `sessions` (ids or unique prefixes, in the caller's order of
    /// preference; `doc:ID` or `doc:PATH` names a document, its pages as items), fitted to
    /// `max_tokens`: each session's must-haves (its header, plan,
    /// first subagent summary and first prompt) first, sessions dropped last-first when
    /// even those do not fit; then the rest by priority (subagent summaries, the first
    /// three prompts, summary labels, further prompts, then messages in `full` mode). An
    /// item that does not fit is left out whole, never cut. `dry_run` gives the same
    /// accounting without the text.
    pub fn retrieve_context(
        &self,
        sessions: &[String],
        mode: ContextMode,
        max_tokens: usize,
        dry_run: bool,
    ) -> Result<Context> {
        if sessions.is_empty() {
            return Err(Error::InvalidArgument("give at least one session".into()));
        }
        if sessions.len() > MAX_CONTEXT_SESSIONS {
            return Err(Error::InvalidArgument(format!(
                "at most {MAX_CONTEXT_SESSIONS} sessions at once, got {}",
                sessions.len()
            )));
        }
        if max_tokens == 0 {
            return Err(Error::InvalidArgument("max_tokens must be positive".into()));
        }
        let now = Timestamp::now();
        let mut out: Vec<ContextSession> = Vec::new();
        let mut candidates: Vec<Candidates> = Vec::new();
        for reference in sessions {
            let (session, c) = match reference.trim().strip_prefix("doc:") {
                Some(document) => self.document_candidates(document, now)?,
                None => self.context_candidates(reference, mode, now)?,
            };
            out.push(session);
            candidates.push(c);
        }
        Ok(crate::retrieve::context::fit(
            out,
            &candidates,
            max_tokens,
            dry_run,
        ))
    }

    /// A document's header and its pages (its text whole, for a file without pages), the
    /// first of them a must-have: each whole or left out.
    fn document_candidates(
        &self,
        reference: &str,
        now: Timestamp,
    ) -> Result<(ContextSession, Candidates)> {
        let doc = self.document(reference, None, None)?;
        let d = &doc.info;
        let age_days = (now.0 - d.modified_at.0).max(0) / 86_400_000;
        let header = format!(
            "--- Document {} · {} · v{} ---\nPath: {} · Changed: {}\n\n",
            d.id,
            d.title,
            d.version,
            d.path,
            crate::model::age(d.modified_at, now)
        );
        let paged = d.pages > 0;
        let items: Vec<(String, String)> = doc
            .pages
            .iter()
            .enumerate()
            .filter(|(_, text)| !text.trim().is_empty())
            .map(|(i, text)| {
                let label = if paged {
                    format!("[DOCUMENT · page {}]", i + 1)
                } else {
                    "[DOCUMENT]".to_owned()
                };
                (
                    "document".to_owned(),
                    format!("{label}\n{}\n\n", text.trim()),
                )
            })
            .collect();
        let session = ContextSession {
            session_id: format!("doc:{}", d.id),
            title: d.title.clone(),
            project: d.project.clone().unwrap_or_default(),
            age_days,
            staleness: None,
            dropped: false,
            tokens: 0,
            items: Vec::new(),
        };
        let fetch = vec![format!("eywa docs show {}", d.id); items.len()];
        Ok((
            session,
            Candidates {
                header,
                items,
                fetch,
            },
        ))
    }

    /// A session's header and its candidate items in display order.
    fn context_candidates(
        &self,
        reference: &str,
        mode: ContextMode,
        now: Timestamp,
    ) -> Result<(ContextSession, Candidates)> {
        let record = self.library().session_source(reference)?;
        let node = self
            .graph
            .node(crate::model::NodeId::episode(&record.session_id))?
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "no session {reference}",
                    reference = crate::error::quote(reference)
                ))
            })?;
        let e = node.episode().expect("a session node is an episode");
        let age_days = (now.0 - e.end.0).max(0) / 86_400_000;
        let stale = staleness(age_days, self.config.staleness_days);
        let mut header = format!(
            "--- Session {} · {} ({}) ---\nProject: {} · Age: {}\n",
            crate::claude::short_id(&e.session_id),
            e.title,
            crate::retrieve::context::SESSION_TOKENS,
            e.project,
            crate::model::age(e.end, now)
        );
        if let Some(notice) = &stale {
            header.push_str(&format!("{notice}\n"));
        }
        header.push('\n');

        let mut items: Vec<(String, String)> = Vec::new();
        let wants = |m: &[ContextMode]| m.contains(&mode);
        let mut planned = false;
        if wants(&[ContextMode::Smart, ContextMode::Plan, ContextMode::Full]) {
            for plan in self.plans(node.id, 10)? {
                items.push((
                    "plan".into(),
                    tagged("PLAN", plan.content.as_deref().unwrap_or_default()),
                ));
                planned = true;
            }
        }
        if wants(&[ContextMode::Smart, ContextMode::Agents, ContextMode::Full]) {
            let filter = EdgeFilter {
                direction: Direction::Out,
                relations: vec![Relation::Spawned],
                ..EdgeFilter::default()
            };
            for child in self.graph.neighbors(node.id, &filter, 1_000)? {
                let Some(agent) = child.node.episode().and_then(|e| e.agent.as_ref()) else {
                    continue;
                };
                if let Some(summary) = &agent.summary {
                    let kind = agent.agent_type.as_deref().unwrap_or("agent");
                    items.push((
                        "subagent_summary".into(),
                        tagged(&format!("SUBAGENT SUMMARY · {kind}"), summary),
                    ));
                }
            }
        }
        let plan_from_session =
            !planned && wants(&[ContextMode::Smart, ContextMode::Plan, ContextMode::Full]);
        if mode != ContextMode::Agents && (mode != ContextMode::Plan || plan_from_session) {
            let transcript = self.context_transcript(&record)?;
            // Older versions keep no plan file: the plan handed to `ExitPlanMode`.
            if plan_from_session
                && let Some(plan) = transcript
                    .plans
                    .last()
                    .filter(|p| crate::extract::is_plan(p))
            {
                items.insert(0, ("plan".into(), tagged("PLAN", plan)));
            }
            let wants_messages = !matches!(mode, ContextMode::Labels | ContextMode::Plan);
            let messages = if wants_messages {
                self.context_messages(&record)?
            } else {
                Vec::new()
            };
            let prompts = messages
                .iter()
                .filter(|m| m.kind == crate::claude::MessageKind::Prompt);
            let first = match mode {
                ContextMode::Full => usize::MAX,
                _ => 3,
            };
            for p in prompts.take(first) {
                items.push((
                    "user_message".into(),
                    format!("USER: {}\n\n", p.text.trim()),
                ));
            }
            if mode != ContextMode::Plan && !transcript.summaries.is_empty() {
                let labels: Vec<String> = transcript
                    .summaries
                    .iter()
                    .map(|l| format!("• {l}"))
                    .collect();
                items.push((
                    "summary_labels".into(),
                    tagged("SUMMARY LABELS", &labels.join("\n")),
                ));
            }
            if mode == ContextMode::Full {
                let replies = messages.iter().filter(|m| {
                    m.kind == crate::claude::MessageKind::Response && !m.text.trim().is_empty()
                });
                for m in replies {
                    items.push((
                        "message".into(),
                        format!("ASSISTANT: {}\n\n", m.text.trim()),
                    ));
                }
            }
        }
        let fetch = fetch_commands(&e.session_id, &header, &items);
        Ok((
            ContextSession {
                session_id: e.session_id.clone(),
                title: e.title.clone(),
                project: e.project.clone(),
                age_days,
                staleness: stale,
                dropped: false,
                tokens: 0,
                items: Vec::new(),
            },
            Candidates {
                header,
                items,
                fetch,
            },
        ))
    }

    /// A session's messages, whole (prompts and replies are cut nowhere on this path),
    /// read again from the archive, redacted; those a later version replaced left out.
    fn context_messages(
        &self,
        record: &crate::graph::SourceRecord,
    ) -> Result<Vec<crate::claude::Message>> {
        let mut messages = self.read_archived(record, |reader, history| {
            crate::claude::read_messages_with(reader, &record.session_id, Mode::Main, history)
        })?;
        messages.retain(|m| !m.superseded);
        let mut counts = crate::extract::RedactionCounts::default();
        for m in &mut messages {
            crate::extract::redact_in_place(&mut m.text, &mut counts);
        }
        Ok(messages)
    }

    /// Reads a session's archived transcript with `read`, every label and message owner
    /// known (lines a resumed session replays are left to their writer).
    fn read_archived<T>(
        &self,
        record: &crate::graph::SourceRecord,
        read: impl FnOnce(
            Box<dyn std::io::Read + Send>,
            &dyn crate::claude::History,
        ) -> std::io::Result<T>,
    ) -> Result<T> {
        let reader = crate::archive::Archive::new(&self.graph)
            .archive_reader(record)?
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "the transcript of session `{}` was not archived",
                    record.session_id
                ))
            })?;
        self.authors.load(&self.graph)?;
        let labels = self.graph.labels()?;
        let history = self.authors.history(&labels);
        read(reader, &history).map_err(Error::io(&record.path))
    }

    /// A session's transcript, read again (live file or archive) with every label known,
    /// redacted.
    fn context_transcript(
        &self,
        record: &crate::graph::SourceRecord,
    ) -> Result<crate::claude::Transcript> {
        let mut t = self.read_archived(record, |reader, history| {
            read_transcript_with(reader, &record.session_id, Mode::Main, history)
        })?;
        crate::extract::scrub(&mut t);
        Ok(t)
    }
}

/// For each item, a command that prints it whole: `eywa context` in the mode that gives
/// only its kind, with a budget that holds all of them (plans, subagent summaries), or
/// `eywa sessions show` (prompts and replies).
fn fetch_commands(session_id: &str, header: &str, items: &[(String, String)]) -> Vec<String> {
    use crate::retrieve::context::{FRAME_TOKENS, estimate_tokens};
    let id8 = &session_id[..session_id.len().min(8)];
    let all = |kind: &str| -> usize {
        items
            .iter()
            .filter(|(k, _)| k == kind)
            .map(|(_, block)| estimate_tokens(block))
            .sum()
    };
    let budget = |kind: &str| FRAME_TOKENS + estimate_tokens(header) + all(kind);
    items
        .iter()
        .map(|(kind, _)| match kind.as_str() {
            "plan" => format!(
                "eywa context {id8} --mode plan --max-tokens {}",
                budget(kind)
            ),
            "subagent_summary" => {
                format!(
                    "eywa context {id8} --mode agents --max-tokens {}",
                    budget(kind)
                )
            }
            "summary_labels" => {
                format!(
                    "eywa context {id8} --mode labels --max-tokens {}",
                    budget(kind)
                )
            }
            _ => format!("eywa sessions show {session_id}"),
        })
        .collect()
}

/// A context item under its tag, with its size (seed 001's `[PLAN - 3,100 tokens]`).
fn tagged(tag: &str, body: &str) -> String {
    let body = body.trim();
    let tokens = crate::retrieve::context::estimate_tokens(body);
    format!(
        "[{tag} · {} tokens]\n{body}\n\n",
        crate::model::thousands(tokens as u64)
    )
}

/// SessionStart's blocks, read from this store (the web view's `/context`; the hook asks
/// through its client, which asks the same of a running server).
impl crate::present::context::StartSource for Engine {
    type Error = Error;

    fn best_handoffs(&self, project: &str, limit: usize) -> Result<Vec<crate::model::Handoff>> {
        let options = crate::retrieve::GetOptions {
            days_back: super::MAX_DAYS_BACK,
            limit,
            projects: vec![project.to_owned()],
        };
        let outcome = self.get_handoffs("", &options)?;
        Ok(outcome.hits.iter().map(|h| h.handoff.clone()).collect())
    }

    fn stored_handoff(&self, session_id: &str) -> Result<Option<crate::model::Handoff>> {
        self.graph().handoff(session_id)
    }

    fn memories(&self, project: &str, limit: usize) -> Result<Vec<crate::memory::MemoryItem>> {
        let filter = crate::memory::MemoryFilter {
            project: Some(project.to_owned()),
            ..Default::default()
        };
        Ok(self.list_memories(&filter, limit, 0)?.0)
    }
}
