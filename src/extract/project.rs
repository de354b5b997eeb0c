//! Which project a working directory belongs to, and its short name.

/// A project as eywa names it: a canonical path and a short name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectPath {
    pub path: String,
    pub name: String,
}

/// The project a working directory belongs to. Read from the `cwd` of transcript lines,
/// never decoded from Claude Code's folder name (the encoding is lossy). A git worktree
/// that Claude Code made under `<repo>/.claude/worktrees/<name>` belongs to `<repo>`.
/// Windows paths (`e:\Workspace\app`) are understood.
pub fn project_of(cwd: &str) -> ProjectPath {
    let mut path = cwd.trim();
    for marker in ["/.claude/worktrees/", "\\.claude\\worktrees\\"] {
        if let Some(i) = path.find(marker) {
            path = &path[..i];
        }
    }
    let trimmed = path.trim_end_matches(['/', '\\']);
    let path = if trimmed.is_empty() { path } else { trimmed };
    let name = path
        .rsplit(['/', '\\'])
        .find(|s| !s.is_empty())
        .unwrap_or(path);
    ProjectPath {
        path: path.to_owned(),
        name: name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_last_path_component() {
        let cases = [
            (
                "/Users/dain/workspace/danieldemmel.me-next",
                "danieldemmel.me-next",
            ),
            ("/src/deep-manifest/", "deep-manifest"),
            ("e:\\Workspace\\claude-code-log", "claude-code-log"),
            ("-experiments/worktrees", "worktrees"),
            ("/", "/"),
        ];
        for (cwd, name) in cases {
            assert_eq!(project_of(cwd).name, name, "{cwd}");
        }
        assert_eq!(project_of("/src/deep-manifest/").path, "/src/deep-manifest");
    }

    #[test]
    fn claude_worktrees_belong_to_their_repository() {
        let p = project_of("-experiments/worktrees/.claude/worktrees/agent-ab1e6e14");
        assert_eq!(p.path, "-experiments/worktrees");
        assert_eq!(p.name, "worktrees");
    }
}
