//! Writes small Claude Code trees (`<root>/projects/<dir>/<session>.jsonl`) for tests.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

/// A Claude Code home in a temporary directory.
pub(crate) struct ClaudeHome {
    pub dir: tempfile::TempDir,
}

impl ClaudeHome {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("projects")).unwrap();
        ClaudeHome { dir }
    }

    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Writes raw lines as `projects/<project_dir>/<name>`.
    pub(crate) fn write_raw(&self, project_dir: &str, name: &str, content: &str) -> PathBuf {
        let dir = self.root().join("projects").join(project_dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        path
    }

    /// Writes a session: `(prompt, answer)` exchanges starting at `start`, one minute apart.
    pub(crate) fn session(
        &self,
        session_id: &str,
        cwd: &str,
        start: DateTime<Utc>,
        exchanges: &[(&str, &str)],
    ) -> PathBuf {
        let lines = session_lines(session_id, cwd, start, exchanges);
        let project_dir: String = cwd
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        self.write_raw(
            &project_dir,
            &format!("{session_id}.jsonl"),
            &(lines.join("\n") + "\n"),
        )
    }
}

/// JSONL lines of a session in Claude Code's 2.x shape. Every answer calls the Read tool
/// (without a path: file entities have tests of their own).
pub(crate) fn session_lines(
    session_id: &str,
    cwd: &str,
    start: DateTime<Utc>,
    exchanges: &[(&str, &str)],
) -> Vec<String> {
    let mut lines = Vec::new();
    let mut parent: Option<String> = None;
    for (i, (prompt, answer)) in exchanges.iter().enumerate() {
        let t = start + Duration::minutes(i as i64 * 2);
        let user_uuid = format!("{session_id}-u{i}");
        lines.push(
            json!({
                "type": "user", "uuid": user_uuid, "parentUuid": parent,
                "sessionId": session_id, "cwd": cwd, "gitBranch": "main", "version": "2.0.55",
                "timestamp": t.to_rfc3339(),
                "message": {"role": "user", "content": prompt},
            })
            .to_string(),
        );
        let assistant_uuid = format!("{session_id}-a{i}");
        lines.push(
            json!({
                "type": "assistant", "uuid": assistant_uuid, "parentUuid": user_uuid,
                "sessionId": session_id, "cwd": cwd, "version": "2.0.55",
                "timestamp": (t + Duration::minutes(1)).to_rfc3339(),
                "message": {
                    "id": format!("msg_{session_id}_{i}"), "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [
                        {"type": "text", "text": answer},
                        {"type": "tool_use", "id": format!("toolu_{session_id}_{i}"),
                         "name": "Read", "input": {}}
                    ],
                },
            })
            .to_string(),
        );
        parent = Some(assistant_uuid);
    }
    lines
}

/// Noon UTC `days` days before now.
pub(crate) fn days_ago(days: i64) -> DateTime<Utc> {
    let today = Utc::now().date_naive();
    (today - Duration::days(days))
        .and_hms_opt(12, 0, 0)
        .unwrap()
        .and_utc()
}

/// Appends lines to a transcript, as Claude Code does while a session runs.
pub(crate) fn append(path: &Path, lines: &[String]) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all((lines.join("\n") + "\n").as_bytes())
        .unwrap();
}

/// The lines with `slug` set on each, as 2.0.5x+ writes them.
pub(crate) fn with_slug(lines: Vec<String>, slug: &str) -> Vec<String> {
    lines
        .into_iter()
        .map(|line| {
            let mut v: serde_json::Value = serde_json::from_str(&line).unwrap();
            v["slug"] = slug.into();
            v.to_string()
        })
        .collect()
}
