//! What a search keeps, one type for every index: content types, projects, subagent
//! types and a time window. An empty list keeps all.

use super::Timestamp;

/// The conditions a passage or chunk must meet to be found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchFilter {
    /// Content types (`user_message`, `assistant_response`, `compact_summary`,
    /// `tool_call`, `subagent_summary`, `summary_label`, `handoff`, `plan`, `memory`).
    pub kinds: Vec<String>,
    /// Project names, matched without regard to case.
    pub projects: Vec<String>,
    /// Subagent types (`Explore`, `Plan`, …) or ids: only passages of those subagents.
    pub agent_types: Vec<String>,
    /// From this time on (inclusive), and before this one.
    pub since: Option<Timestamp>,
    /// Before this time (exclusive); `None` for no end.
    pub until: Option<Timestamp>,
    /// Sessions by these users, on these machines (names without regard to case; empty:
    /// any). Passages of no session (documents, memories) have no author: a filter on
    /// either leaves them out.
    pub users: Vec<String>,
    /// See `users`.
    pub machines: Vec<String>,
}

impl SearchFilter {
    /// The project names as the indexes keep them: lowercased.
    pub fn project_keys(&self) -> Vec<String> {
        self.projects.iter().map(|p| p.to_lowercase()).collect()
    }

    /// The users and machines it keeps.
    pub fn authors(&self) -> super::Attribution {
        super::Attribution {
            users: self.users.clone(),
            machines: self.machines.clone(),
        }
    }
}
