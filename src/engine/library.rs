//! The session library, asked through the engine (see `crate::library`).

use super::Engine;
use crate::Result;
use crate::library::{ExportFormat, Library, MatchPage, Session, SessionPage, SessionSearch};
use crate::model::Attribution;

impl Engine {
    pub(super) fn library(&self) -> Library<'_> {
        let grams = match self.grams() {
            Ok(grams) => Some(grams),
            Err(e) => {
                tracing::warn!(error = %e, "the trigram index cannot be opened: searches read every session");
                None
            }
        };
        Library {
            graph: &self.graph,
            authors: &self.authors,
            grams,
        }
    }

    /// The sessions of `ids` as the page at `offset` of a list of `total` (see
    /// [`Library::sessions_page`](crate::library::Library)).
    pub fn sessions_page(
        &self,
        ids: &[crate::model::NodeId],
        total: usize,
        limit: usize,
        offset: usize,
    ) -> Result<SessionPage> {
        self.library().sessions_page(ids, total, limit, offset)
    }

    /// Main sessions (not subagent runs), most recently active first; `workspace` keeps
    /// those whose project is that path (or a folder inside it) or has that name.
    pub fn list_sessions(
        &self,
        workspace: Option<&str>,
        limit: usize,
        offset: usize,
    ) -> Result<SessionPage> {
        self.library().list_sessions(workspace, limit, offset)
    }

    /// [`list_sessions`](Self::list_sessions) in `order` (most messages first, say).
    pub fn list_sessions_by(
        &self,
        workspace: Option<&str>,
        limit: usize,
        offset: usize,
        order: crate::library::SessionOrder,
    ) -> Result<SessionPage> {
        self.list_sessions_of(workspace, &Attribution::default(), limit, offset, order)
    }

    /// [`list_sessions_by`](Self::list_sessions_by), keeping only the sessions `authors`
    /// keeps (some users, some machines).
    pub fn list_sessions_of(
        &self,
        workspace: Option<&str>,
        authors: &Attribution,
        limit: usize,
        offset: usize,
        order: crate::library::SessionOrder,
    ) -> Result<SessionPage> {
        self.library()
            .list_sessions_by(workspace, authors, limit, offset, order)
    }

    /// A session by full id or by a unique prefix of at least 4 characters (e.g. the 8-char
    /// short id): its episode, handoff, agents and every message any version of its
    /// transcript held.
    pub fn session(&self, reference: &str) -> Result<Session> {
        self.library().session(reference)
    }

    /// [`session`](Self::session), with each response's extended thinking when `thinking`.
    pub fn session_with(&self, reference: &str, thinking: bool) -> Result<Session> {
        self.library().session_with(reference, thinking)
    }

    /// A session as Markdown (a readable transcript) or JSON (its episode and messages).
    pub fn export_session(&self, reference: &str, format: ExportFormat) -> Result<String> {
        self.library().export_session(reference, format, false)
    }

    /// [`export_session`](Self::export_session), with extended thinking when `thinking`.
    pub fn export_session_with(
        &self,
        reference: &str,
        format: ExportFormat,
        thinking: bool,
    ) -> Result<String> {
        self.library().export_session(reference, format, thinking)
    }

    /// Every line of every message (prompts, responses, compact summaries; redacted as
    /// served) that matches a substring or a regular expression, sessions newest first.
    pub fn search_sessions(&self, search: &SessionSearch) -> Result<MatchPage> {
        self.library().search_sessions(search)
    }
}
