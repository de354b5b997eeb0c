//! Which project a working directory belongs to, and its short name; the projects a
//! transcript worked in; paths against a session's folder.

use crate::claude::Transcript;

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

/// The projects of a transcript's working directories, in order of first appearance;
/// then the repositories it changed from there ([`edited_elsewhere`]).
pub(super) fn projects_of(t: &Transcript) -> Vec<ProjectPath> {
    let mut seen: Vec<ProjectPath> = Vec::new();
    for cwd in &t.cwds {
        let p = project_of(cwd);
        if !seen.iter().any(|s| s.path == p.path) {
            seen.push(p);
        }
    }
    for p in edited_elsewhere(t, &seen) {
        if !seen.iter().any(|s| s.path == p.path) {
            seen.push(p);
        }
    }
    seen
}

/// Another repository a session changed from its own: a file it edited or created that
/// lies in no working directory's project but in a folder beside one (`~/src/app`
/// editing `~/src/lib/src/a.rs` makes `~/src/lib` a project), in the order the files were
/// first touched. Read from the transcript alone (the folders may not be on this
/// machine): files directly in the parent folder, hidden folders (`~/.config`) and
/// folders beside a project at the root are not projects.
fn edited_elsewhere(t: &Transcript, own: &[ProjectPath]) -> Vec<ProjectPath> {
    let cwd = t.cwds.first().map(String::as_str);
    let mut changed: Vec<(Option<crate::model::Timestamp>, String)> = t
        .files
        .iter()
        .filter(|(_, usage)| usage.edited || usage.created)
        .map(|(raw, usage)| (usage.first, absolute(raw, cwd)))
        .filter(|(_, path)| !own.iter().any(|p| within(path, &p.path)))
        .collect();
    changed.sort();
    let mut out: Vec<ProjectPath> = Vec::new();
    for (_, path) in changed {
        let beside = own.iter().find_map(|p| {
            let parent = p.path.trim_end_matches(['/', '\\']);
            let parent = &parent[..parent.rfind(['/', '\\'])?];
            if parent.trim_matches(['/', '\\']).is_empty() || !within(&path, parent) {
                return None;
            }
            let rest = relative(&path, parent);
            let (folder, inside) = rest.split_once(['/', '\\'])?;
            let hidden = folder.starts_with('.') || inside.is_empty();
            (!hidden).then(|| project_of(&path[..parent.len() + 1 + folder.len()]))
        });
        if let Some(p) = beside
            && !out.iter().any(|o| o.path == p.path)
        {
            out.push(p);
        }
    }
    out
}

/// A tool's path made absolute against the session's cwd when it is relative.
pub(super) fn absolute(path: &str, cwd: Option<&str>) -> String {
    let is_absolute =
        path.starts_with('/') || path.starts_with('\\') || path.as_bytes().get(1) == Some(&b':');
    match cwd {
        Some(cwd) if !is_absolute => {
            let sep = if cwd.contains('\\') && !cwd.contains('/') {
                '\\'
            } else {
                '/'
            };
            format!("{}{sep}{}", cwd.trim_end_matches(['/', '\\']), path)
        }
        _ => path.to_owned(),
    }
}

/// Whether `path` lies inside the directory `dir` (either separator).
pub(super) fn within(path: &str, dir: &str) -> bool {
    path.len() > dir.len()
        && path.starts_with(dir)
        && matches!(path.as_bytes()[dir.len()], b'/' | b'\\')
}

/// `path` (inside `dir`, see [`within`]) from `dir`.
pub(super) fn relative<'a>(path: &'a str, dir: &str) -> &'a str {
    &path[dir.len() + 1..]
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
