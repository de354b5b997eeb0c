use std::path::{Path, PathBuf};

/// A Claude Code home (`~/.claude`): the root of `projects/`, `plans/` and friends.
#[derive(Debug, Clone)]
pub struct ClaudeDir {
    root: PathBuf,
}

/// A main session transcript: `projects/<encoded cwd>/<session uuid>.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SessionFile {
    pub path: PathBuf,
    /// The file stem: Claude Code's session uuid.
    pub session_id: String,
    /// The project folder's name, as Claude Code encoded it (lossy: never decode it).
    pub project_dir: String,
}

impl ClaudeDir {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ClaudeDir { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn projects_dir(&self) -> PathBuf {
        self.root.join("projects")
    }

    /// Main session files, sorted by path. Legacy root-level `agent-*.jsonl` files are
    /// subagent transcripts, not sessions, and are left out, as are files in
    /// `<session>/subagents/`.
    pub fn session_files(&self) -> std::io::Result<Vec<SessionFile>> {
        let projects = self.projects_dir();
        let mut files = Vec::new();
        for project in std::fs::read_dir(&projects)? {
            let project = project?;
            // Follows symlinks: a projects tree may be linked in.
            if !project.path().is_dir() {
                continue;
            }
            let project_dir = project.file_name().to_string_lossy().into_owned();
            for entry in std::fs::read_dir(project.path())? {
                let path = entry?.path();
                if !path.is_file() || path.extension().is_none_or(|e| e != "jsonl") {
                    continue;
                }
                let Some(stem) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
                    continue;
                };
                if stem.starts_with("agent-") {
                    continue;
                }
                files.push(SessionFile {
                    path,
                    session_id: stem,
                    project_dir: project_dir.clone(),
                });
            }
        }
        files.sort();
        Ok(files)
    }
}
