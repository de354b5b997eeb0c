//! Context for an agent about to start work (seed 001), gathered from the library: what an
//! earlier session left behind (plans, subagent summaries, prompts, labels, messages);
//! `retrieve::context` fits it to the token budget.

use super::Library;
use crate::archive::Archive;
use crate::claude::{History, Message, MessageKind, Mode, Transcript, read_transcript_with};
use crate::graph::{Direction, EdgeFilter, SourceRecord};
use crate::model::{Relation, Timestamp};
use crate::retrieve::context::{
    Candidates, ContextMode, ContextSession, SESSION_TOKENS, fetch_commands, staleness, tagged,
};
use crate::{Error, Result};

impl Library<'_> {
    /// A session's header and its candidate items in display order; `staleness_days` are
    /// the ages that call for a mild, a stale and an old notice (`None`: no notices).
    pub(crate) fn context_candidates(
        &self,
        reference: &str,
        mode: ContextMode,
        now: Timestamp,
        staleness_days: Option<[u32; 3]>,
    ) -> Result<(ContextSession, Candidates)> {
        let (record, node) = self.session_node(reference)?;
        let e = node.episode().expect("a session node is an episode");
        let age_days = (now.0 - e.end.0).max(0) / 86_400_000;
        let stale = staleness(age_days, staleness_days);
        let mut header = format!(
            "--- Session {} · {} ({}) ---\nProject: {} · Age: {}\n",
            crate::claude::short_id(&e.session_id),
            e.title,
            SESSION_TOKENS,
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
            for plan in self.graph.plans(node.id, 10)? {
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
            let prompts = messages.iter().filter(|m| m.kind == MessageKind::Prompt);
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
                let replies = messages
                    .iter()
                    .filter(|m| m.kind == MessageKind::Response && !m.text.trim().is_empty());
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
    fn context_messages(&self, record: &SourceRecord) -> Result<Vec<Message>> {
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
        record: &SourceRecord,
        read: impl FnOnce(Box<dyn std::io::Read + Send>, &dyn History) -> std::io::Result<T>,
    ) -> Result<T> {
        let reader = Archive::new(self.graph)
            .archive_reader(record)?
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "the transcript of session `{}` was not archived",
                    record.session_id
                ))
            })?;
        self.authors.load(self.graph)?;
        let labels = self.graph.labels()?;
        let history = self.authors.history(&labels);
        read(reader, &history).map_err(Error::io(&record.path))
    }

    /// A session's transcript, read again (live file or archive) with every label known,
    /// redacted.
    fn context_transcript(&self, record: &SourceRecord) -> Result<Transcript> {
        let mut t = self.read_archived(record, |reader, history| {
            read_transcript_with(reader, &record.session_id, Mode::Main, history)
        })?;
        crate::extract::scrub(&mut t);
        Ok(t)
    }
}
