//! Migrating sessions to another workspace: the library does it, in this engine's
//! Claude dir.

use super::Engine;
use crate::Result;
use crate::claude::migrate::{MigrateMode, MigrateResult};

impl Engine {
    /// Migrates each session to the workspace `destination` (an absolute path): its
    /// transcript goes to `projects/<encoded destination>/`, with its subagents. Sessions
    /// fail one by one (a missing one, an existing target); the others go on.
    pub fn migrate_sessions(
        &self,
        sessions: &[String],
        destination: &str,
        mode: MigrateMode,
    ) -> Result<MigrateResult> {
        self.library()
            .migrate_sessions(&self.claude.projects_dir(), sessions, destination, mode)
    }

    /// Every session of the workspace `source` (its project's path, a folder inside it, or
    /// its name, as `sessions list --workspace` matches), copied or moved to
    /// `destination` (seed 003's MigrateWorkspaceConfig). A workspace without sessions is
    /// NOT_FOUND.
    pub fn migrate_workspace(
        &self,
        source: &str,
        destination: &str,
        mode: MigrateMode,
    ) -> Result<MigrateResult> {
        self.library()
            .migrate_workspace(&self.claude.projects_dir(), source, destination, mode)
    }
}
