//! Finding what a Claude Code home holds: session and subagent transcripts, plans,
//! memory files and the sessions index, following symlinks only inside it.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A Claude Code home (`~/.claude`): the root of `projects/`, `plans/` and friends.
///
/// Scans follow a symlink only when its target stays inside the Claude dir: a link to
/// `/etc/passwd` named like a transcript is never read. The links refused are kept until
/// [`ClaudeDir::take_refused`].
#[derive(Debug, Clone)]
pub struct ClaudeDir {
    root: PathBuf,
    refused: Arc<Mutex<BTreeSet<PathBuf>>>,
}

/// What a scan may enter: anything that is not a symlink, and symlinks that resolve
/// inside the Claude dir (canonical root, resolved once per scan).
struct Fence<'a> {
    root: Option<PathBuf>,
    refused: &'a Mutex<BTreeSet<PathBuf>>,
}

impl Fence<'_> {
    /// Whether a directory entry may be followed. `file_type` comes from the directory
    /// listing, so a plain entry costs no system call.
    fn admits_entry(&self, entry: &std::fs::DirEntry) -> bool {
        match entry.file_type() {
            Ok(t) if t.is_symlink() => self.admits_link(&entry.path()),
            Ok(_) => true,
            Err(_) => false,
        }
    }

    /// Whether a path the scan names itself (`projects/`, `memory/`, `subagents/`…) may
    /// be followed; a missing one is admitted (the caller finds it missing).
    fn admits(&self, path: &Path) -> bool {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => self.admits_link(path),
            _ => true,
        }
    }

    fn admits_link(&self, path: &Path) -> bool {
        let inside = match (&self.root, std::fs::canonicalize(path)) {
            (Some(root), Ok(target)) => target.starts_with(root),
            _ => false,
        };
        if !inside {
            tracing::debug!(path = %path.display(), "not following a symlink out of the Claude dir");
            self.refused
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(path.to_path_buf());
        }
        inside
    }

    fn read_dir(&self, dir: &Path) -> std::io::Result<Vec<std::fs::DirEntry>> {
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if self.admits_entry(&entry) {
                entries.push(entry);
            }
        }
        Ok(entries)
    }
}

/// A subagent transcript in its own file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AgentFile {
    pub path: PathBuf,
    /// `<id>` of `agent-<id>.jsonl`.
    pub agent_id: String,
    /// The session folder it sits in (`<session>/subagents/`), for the nested layout.
    pub parent_session: Option<String>,
    /// The workflow run it belongs to (`<session>/subagents/workflows/<run>/`).
    pub workflow: Option<String>,
    /// `agent-<id>.meta.json` beside it, when present.
    pub meta: Option<PathBuf>,
}

/// A plan: `plans/<slug>.md`, or `plans/<slug>-agent-<id>.md` for a subagent's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PlanFile {
    pub path: PathBuf,
    pub slug: String,
    pub agent_id: Option<String>,
}

/// What `sessions-index.json` says of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexEntry {
    pub summary: Option<String>,
    pub project_path: Option<String>,
    /// The first prompt, the conversation's depth, and when it began and last changed.
    pub first_prompt: Option<String>,
    pub message_count: Option<u64>,
    pub created: Option<String>,
    pub modified: Option<String>,
    pub git_branch: Option<String>,
    /// Where the transcript is (or was).
    pub full_path: Option<String>,
    pub is_sidechain: bool,
}

impl IndexEntry {
    /// A fingerprint of what the entry says of the session: a changed one (a new title,
    /// more messages) has the session read again.
    pub fn stamp(&self) -> u64 {
        // FNV-1a: stable across runs and builds, unlike the std hasher.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let fields = [
            self.summary.as_deref().unwrap_or(""),
            self.first_prompt.as_deref().unwrap_or(""),
            self.modified.as_deref().unwrap_or(""),
        ];
        let count = self.message_count.unwrap_or(0).to_string();
        for field in fields.iter().copied().chain([count.as_str()]) {
            for byte in field.bytes().chain([0xff]) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
        }
        hash
    }
}

/// A project memory file: `projects/<encoded cwd>/memory/<name>.md`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MemoryFile {
    pub path: PathBuf,
    /// The project folder's name (lossy: its project is found from the sessions beside it).
    pub project_dir: String,
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
        ClaudeDir {
            root: root.into(),
            refused: Arc::default(),
        }
    }

    fn fence(&self) -> Fence<'_> {
        Fence {
            root: std::fs::canonicalize(&self.root).ok(),
            refused: &self.refused,
        }
    }

    /// Symlinks the scans since the last call did not follow, because they lead out of
    /// the Claude dir; forgets them.
    pub fn take_refused(&self) -> Vec<PathBuf> {
        std::mem::take(
            &mut *self
                .refused
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
        .into_iter()
        .collect()
    }

    /// The project folders under `projects/` a scan may enter.
    fn project_dirs(&self, fence: &Fence) -> std::io::Result<Vec<std::fs::DirEntry>> {
        let projects = self.projects_dir();
        if !fence.admits(&projects) {
            return Ok(Vec::new());
        }
        Ok(fence
            .read_dir(&projects)?
            .into_iter()
            .filter(|e| e.path().is_dir())
            .collect())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn projects_dir(&self) -> PathBuf {
        self.root.join("projects")
    }

    /// `sessions-index.json` entries of every project folder, by session id. A missing or
    /// unreadable index says nothing; it never fails an ingest (Q6: it is often stale).
    pub fn session_index(&self) -> std::io::Result<HashMap<String, IndexEntry>> {
        let mut out = HashMap::new();
        let fence = self.fence();
        for project in self.project_dirs(&fence)? {
            let path = project.path().join("sessions-index.json");
            if !fence.admits(&path) {
                continue;
            }
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let Ok(index) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
                tracing::debug!(path = %path.display(), "sessions-index.json is not JSON");
                continue;
            };
            let original = index.get("originalPath").and_then(|v| v.as_str());
            let entries = index.get("entries").and_then(|e| e.as_array());
            for entry in entries.into_iter().flatten() {
                let text = |k: &str| {
                    entry
                        .get(k)
                        .and_then(|v| v.as_str())
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                };
                let Some(id) = text("sessionId") else {
                    continue;
                };
                out.insert(
                    id,
                    IndexEntry {
                        summary: text("summary"),
                        project_path: text("projectPath").or(original.map(str::to_owned)),
                        first_prompt: text("firstPrompt"),
                        message_count: entry
                            .get("messageCount")
                            .and_then(serde_json::Value::as_u64),
                        created: text("created"),
                        modified: text("modified"),
                        git_branch: text("gitBranch"),
                        full_path: text("fullPath"),
                        is_sidechain: entry
                            .get("isSidechain")
                            .and_then(serde_json::Value::as_bool)
                            .unwrap_or(false),
                    },
                );
            }
        }
        Ok(out)
    }

    /// Project memory files: `projects/*/memory/*.md` (`MEMORY.md` and its topic files),
    /// sorted by path.
    pub fn memory_files(&self) -> std::io::Result<Vec<MemoryFile>> {
        let mut files = Vec::new();
        let fence = self.fence();
        for project in self.project_dirs(&fence)? {
            let dir = project.path().join("memory");
            if !fence.admits(&dir) || !dir.is_dir() {
                continue;
            }
            let project_dir = project.file_name().to_string_lossy().into_owned();
            for entry in fence.read_dir(&dir)? {
                let path = entry.path();
                if path.is_file() && path.extension().is_some_and(|e| e == "md") {
                    files.push(MemoryFile {
                        path,
                        project_dir: project_dir.clone(),
                    });
                }
            }
        }
        files.sort();
        Ok(files)
    }

    /// Subagent files of every layout, sorted by path: `projects/*/agent-*.jsonl`
    /// (2.0.x), `projects/*/<session>/subagents/agent-*.jsonl` (2.1+) and workflow runs'
    /// `projects/*/<session>/subagents/workflows/<run>/agent-*.jsonl`.
    pub fn agent_files(&self) -> std::io::Result<Vec<AgentFile>> {
        let mut files = Vec::new();
        let fence = self.fence();
        for project in self.project_dirs(&fence)? {
            for entry in fence.read_dir(&project.path())? {
                let path = entry.path();
                if path.is_dir() {
                    let parent = path.file_name().map(|n| n.to_string_lossy().into_owned());
                    subagents_of(&fence, &path.join("subagents"), parent, &mut files)?;
                } else if let Some(file) = agent_file(&fence, path, None, None) {
                    files.push(file);
                }
            }
        }
        files.sort();
        Ok(files)
    }

    /// Plan files under `plans/`, sorted; none when the folder is missing.
    pub fn plan_files(&self) -> std::io::Result<Vec<PlanFile>> {
        let dir = self.root.join("plans");
        let fence = self.fence();
        if !fence.admits(&dir) || !dir.is_dir() {
            return Ok(Vec::new());
        }
        let mut plans = Vec::new();
        for entry in fence.read_dir(&dir)? {
            let path = entry.path();
            let Some(stem) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".md"))
                .map(str::to_owned)
            else {
                continue;
            };
            if !path.is_file() || stem.is_empty() {
                continue;
            }
            let (slug, agent_id) = match stem.split_once("-agent-") {
                Some((slug, id)) if !slug.is_empty() && !id.is_empty() => {
                    (slug.to_owned(), Some(id.to_owned()))
                }
                _ => (stem, None),
            };
            plans.push(PlanFile {
                path,
                slug,
                agent_id,
            });
        }
        plans.sort();
        Ok(plans)
    }

    /// The main session file a reference names: its path (under `projects/<folder>/`), its
    /// session id, or a unique prefix of at least 8 characters of one. `None` when no file
    /// matches; an error when a prefix matches several.
    pub fn find_session(&self, reference: &str) -> std::io::Result<Option<SessionFile>> {
        let reference = reference.trim();
        if reference.is_empty() {
            return Ok(None);
        }
        if reference.contains('/') || reference.ends_with(".jsonl") {
            return Ok(self.session_at(Path::new(reference)));
        }
        let id = reference.strip_suffix(".jsonl").unwrap_or(reference);
        let fence = self.fence();
        let mut found = Vec::new();
        for project in self.project_dirs(&fence)? {
            let exact = project.path().join(format!("{id}.jsonl"));
            if exact.is_file() && fence.admits(&exact) {
                return Ok(self.session_at(&exact));
            }
            if id.len() < 8 {
                continue;
            }
            for entry in fence.read_dir(&project.path())? {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if name.starts_with(id) && name.ends_with(".jsonl") && !name.starts_with("agent-") {
                    found.push(entry.path());
                }
            }
        }
        match found.len() {
            0 => Ok(None),
            1 => Ok(self.session_at(&found[0])),
            n => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{n} sessions start with {}: give more of the id",
                    crate::error::quote(id)
                ),
            )),
        }
    }

    /// The session file at `path` when it is a main session transcript in a project folder
    /// of this Claude dir (a path through a symlink out of it is not).
    fn session_at(&self, path: &Path) -> Option<SessionFile> {
        let fence = self.fence();
        let canonical = std::fs::canonicalize(path).ok()?;
        let projects = std::fs::canonicalize(self.projects_dir()).ok()?;
        let folder = canonical.parent()?;
        if folder.parent()? != projects || !canonical.is_file() || !fence.admits(path) {
            return None;
        }
        let stem = canonical.file_stem()?.to_string_lossy().into_owned();
        if canonical.extension().is_none_or(|e| e != "jsonl") || stem.starts_with("agent-") {
            return None;
        }
        Some(SessionFile {
            path: self
                .projects_dir()
                .join(folder.file_name()?)
                .join(canonical.file_name()?),
            session_id: stem,
            project_dir: folder.file_name()?.to_string_lossy().into_owned(),
        })
    }

    /// The subagent files of one session: its `<session>/subagents/` folder and workflow
    /// runs there, sorted by path.
    pub fn agent_files_of(&self, session: &SessionFile) -> std::io::Result<Vec<AgentFile>> {
        let fence = self.fence();
        let Some(folder) = session.path.parent() else {
            return Ok(Vec::new());
        };
        // The folder is named by Claude Code's id; its agents belong to this file's session.
        let subagents = folder
            .join(super::claude_id(&session.session_id))
            .join("subagents");
        let mut files = Vec::new();
        subagents_of(
            &fence,
            &subagents,
            Some(session.session_id.clone()),
            &mut files,
        )?;
        files.sort();
        Ok(files)
    }

    /// Main session files, sorted by path. Legacy root-level `agent-*.jsonl` files are
    /// subagent transcripts, not sessions, and are left out, as are files in
    /// `<session>/subagents/`.
    pub fn session_files(&self) -> std::io::Result<Vec<SessionFile>> {
        let mut files = Vec::new();
        let fence = self.fence();
        for project in self.project_dirs(&fence)? {
            let project_dir = project.file_name().to_string_lossy().into_owned();
            for entry in fence.read_dir(&project.path())? {
                let path = entry.path();
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

/// The text of the file Claude Code moved a large tool result to, beside the session's
/// transcript (`<folder>/<session>/tool-results/<call id>.txt`): its first `max_bytes`.
/// `None` when it is missing, not a regular file (a symlink is not followed), unreadable,
/// or the call id is not one (it names the file, so it may not name a path).
pub fn read_tool_result(
    transcript: &Path,
    session: &str,
    call_id: &str,
    max_bytes: u64,
) -> Option<String> {
    use std::io::Read;
    let plain = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    let session = super::claude_id(session);
    if !plain(call_id) || !plain(session) {
        return None;
    }
    let file = transcript
        .parent()?
        .join(session)
        .join("tool-results")
        .join(format!("{call_id}.txt"));
    if !std::fs::symlink_metadata(&file).ok()?.file_type().is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&file)
        .ok()?
        .take(max_bytes)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The subagent files in a session's `subagents/` folder and its workflow runs, added to
/// `files`.
fn subagents_of(
    fence: &Fence,
    subagents: &Path,
    parent: Option<String>,
    files: &mut Vec<AgentFile>,
) -> std::io::Result<()> {
    if !fence.admits(subagents) || !subagents.is_dir() {
        return Ok(());
    }
    for agent in fence.read_dir(subagents)? {
        if let Some(file) = agent_file(fence, agent.path(), parent.clone(), None) {
            files.push(file);
        }
    }
    let workflows = subagents.join("workflows");
    if fence.admits(&workflows) && workflows.is_dir() {
        for run in fence.read_dir(&workflows)? {
            let run = run.path();
            if !run.is_dir() {
                continue;
            }
            let name = run.file_name().map(|n| n.to_string_lossy().into_owned());
            for agent in fence.read_dir(&run)? {
                if let Some(file) = agent_file(fence, agent.path(), parent.clone(), name.clone()) {
                    files.push(file);
                }
            }
        }
    }
    Ok(())
}

fn agent_file(
    fence: &Fence,
    path: PathBuf,
    parent_session: Option<String>,
    workflow: Option<String>,
) -> Option<AgentFile> {
    let name = path.file_name()?.to_str()?;
    let agent_id = name
        .strip_prefix("agent-")?
        .strip_suffix(".jsonl")?
        .to_owned();
    if agent_id.is_empty() || !path.is_file() {
        return None;
    }
    let meta = path.with_file_name(format!("agent-{agent_id}.meta.json"));
    Some(AgentFile {
        meta: (fence.admits(&meta) && meta.is_file()).then_some(meta),
        path,
        agent_id,
        parent_session,
        workflow,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_result_file_is_named_by_a_plain_call_id_only() {
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("s1.jsonl");
        std::fs::create_dir_all(dir.path().join("s1/tool-results")).unwrap();
        std::fs::write(dir.path().join("s1/tool-results/toolu_1.txt"), "0123456789").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "no").unwrap();
        assert_eq!(
            read_tool_result(&transcript, "s1", "toolu_1", 4).as_deref(),
            Some("0123")
        );
        assert_eq!(read_tool_result(&transcript, "s1", "toolu_2", 4), None);
        assert_eq!(read_tool_result(&transcript, "s1", "../../secret", 4), None);
        assert_eq!(read_tool_result(&transcript, "..", "secret", 4), None);
    }
}
