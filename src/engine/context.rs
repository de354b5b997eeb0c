//! Context for an agent about to start work (seed 001): the library gathers what earlier
//! sessions left behind (plans, subagent summaries, prompts, labels, messages), documents
//! give their pages, and `retrieve::context` fits it all to the token budget.

use super::Engine;
use crate::model::Timestamp;
use crate::retrieve::context::{
    Candidates, Context, ContextMode, ContextSession, MAX_CONTEXT_SESSIONS,
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
                Some(document) => crate::retrieve::context::document_candidates(
                    &self.document(document, None, None)?,
                    now,
                ),
                None => self.library().context_candidates(
                    reference,
                    mode,
                    now,
                    self.config.staleness_days,
                )?,
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
            ..Default::default()
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
