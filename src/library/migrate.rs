//! Migrating sessions to another workspace: the library finds each session's transcript,
//! project root and subagents, and [`crate::claude::migrate`] moves the files.

use std::path::{Path, PathBuf};

use super::Library;
use crate::claude::migrate::{
    MigrateError, MigrateMode, MigrateResult, Plan, check_destination, encode_project_dir,
};
use crate::graph::{Direction, EdgeFilter};
use crate::model::Relation;
use crate::{Error, Result};

impl Library<'_> {
    /// Migrates each session to the workspace `destination` (an absolute path): its
    /// transcript goes to `projects/<encoded destination>/`, with its subagents. Sessions
    /// fail one by one (a missing one, an existing target); the others go on.
    pub(crate) fn migrate_sessions(
        &self,
        projects_dir: &Path,
        sessions: &[String],
        destination: &str,
        mode: MigrateMode,
    ) -> Result<MigrateResult> {
        let destination = destination.trim().trim_end_matches(['/', '\\']);
        if sessions.is_empty() {
            return Err(Error::InvalidArgument("give at least one session".into()));
        }
        check_destination(destination)?;
        let target_dir = projects_dir.join(encode_project_dir(destination));
        let mut result = MigrateResult {
            success_count: 0,
            failed_count: 0,
            errors: Vec::new(),
            written: Vec::new(),
            created_dir: !target_dir.exists(),
            target_dir: target_dir.display().to_string(),
        };
        for session in sessions {
            match self.migrate_one(projects_dir, session, destination, mode) {
                Ok(path) => {
                    result.success_count += 1;
                    result.written.push(path.to_string_lossy().into_owned());
                }
                Err(e) => {
                    result.failed_count += 1;
                    result.errors.push(MigrateError {
                        session: session.clone(),
                        message: e.to_string(),
                    });
                }
            }
        }
        Ok(result)
    }

    /// Every session of the workspace `source` (its project's path, a folder inside it, or
    /// its name, as `sessions list --workspace` matches), copied or moved to
    /// `destination` (seed 003's MigrateWorkspaceConfig). A workspace without sessions is
    /// NOT_FOUND.
    pub(crate) fn migrate_workspace(
        &self,
        projects_dir: &Path,
        source: &str,
        destination: &str,
        mode: MigrateMode,
    ) -> Result<MigrateResult> {
        let mut sessions = Vec::new();
        let mut offset = 0;
        loop {
            let page = self.list_sessions(Some(source), super::MAX_PAGE, offset)?;
            offset += page.sessions.len();
            let empty = page.sessions.is_empty();
            sessions.extend(page.sessions.into_iter().map(|s| s.session_id));
            // An empty page ends it whatever the total says.
            if !page.has_more || empty {
                break;
            }
        }
        self.migrate_sessions(projects_dir, &sessions, destination, mode)
    }

    fn migrate_one(
        &self,
        projects_dir: &Path,
        reference: &str,
        destination: &str,
        mode: MigrateMode,
    ) -> Result<PathBuf> {
        let (record, node) = self.session_node(reference)?;
        let episode = node.episode().expect("a session node is an episode");
        let old_root = if episode.project_path.is_empty() {
            &episode.cwd
        } else {
            &episode.project_path
        };
        let target_dir = projects_dir.join(encode_project_dir(destination));
        let mut plan = Plan::new(
            reference,
            &PathBuf::from(&record.path),
            &target_dir,
            old_root,
            destination,
        )?;
        // Subagents beside the session's transcript (2.0.x).
        let spawned = EdgeFilter {
            direction: Direction::Out,
            relations: vec![Relation::Spawned],
            ..EdgeFilter::default()
        };
        for child in self.graph.neighbors(node.id, &spawned, 10_000)? {
            if let Some(e) = child.node.episode() {
                plan.add_sibling(&PathBuf::from(&e.source_path))?;
            }
        }
        plan.carry_out(mode)
    }
}
