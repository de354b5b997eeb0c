//! `eywa setup claude`: eywa's hooks merged into Claude Code's `settings.json`, and its
//! MCP server registered where Claude Code reads it (`~/.claude.json` for the user,
//! `.mcp.json` for a project). Every other key and hook is kept; each file is backed up
//! before its first change; running it again changes nothing; `--uninstall` takes out
//! exactly what it added, and gives a file back byte for byte when nothing else changed
//! it since.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::Paths;
use super::hook::Event;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    #[command(subcommand)]
    target: Target,
}

#[derive(Debug, clap::Subcommand)]
enum Target {
    /// Claude Code: hooks in settings.json, the MCP server in ~/.claude.json or .mcp.json
    Claude(ClaudeArgs),
}

#[derive(Debug, clap::Args)]
struct ClaudeArgs {
    /// user: ~/.claude/settings.json and ~/.claude.json; project: .claude/settings.json and
    /// .mcp.json in the current directory
    #[arg(long, default_value = "user", value_parser = ["user", "project"])]
    scope: String,
    /// Say what would change, and change nothing
    #[arg(long)]
    dry_run: bool,
    /// Take out what setup added
    #[arg(long)]
    uninstall: bool,
    /// Also add past sessions relevant to each prompt (UserPromptSubmit)
    #[arg(long)]
    prompt_hook: bool,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

/// The hook events setup installs, their matchers, and the seconds Claude Code gives each.
fn hook_events(prompt_hook: bool) -> Vec<(Event, Option<&'static str>, u32)> {
    let mut events = vec![
        (
            Event::SessionStart,
            Some("startup|resume|clear|compact"),
            10,
        ),
        (Event::Stop, None, 30),
        (Event::SessionEnd, None, 30),
        (Event::PreCompact, Some("manual|auto"), 30),
    ];
    if prompt_hook {
        events.push((Event::UserPromptSubmit, None, 10));
    }
    events
}

/// One file setup changes.
struct Change {
    path: PathBuf,
    /// Its bytes before (`None`: it did not exist).
    before: Option<Vec<u8>>,
    /// Its bytes after (`None`: removed).
    after: Option<Vec<u8>>,
    /// What changed, for people.
    summary: Vec<String>,
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let Target::Claude(args) = args.target;
    let exe = std::env::current_exe().context("cannot find the eywa binary's path")?;
    let program = exe.display().to_string();
    let prefix = command_prefix(&program, paths);
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .context("HOME is not set")?;
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let (settings, mcp, mcp_key_path) = match args.scope.as_str() {
        "project" => (
            cwd.join(".claude").join("settings.json"),
            cwd.join(".mcp.json"),
            "mcpServers",
        ),
        _ => (
            paths.claude_dir.join("settings.json"),
            user_mcp_file(&home, &paths.claude_dir),
            "mcpServers",
        ),
    };
    let record = record_path(paths, &args.scope, &settings);
    let changes = [
        plan_settings(&settings, &prefix, &args)?,
        plan_mcp(&mcp, mcp_key_path, &program, &prefix, &args)?,
    ];
    let changed: Vec<&Change> = changes.iter().filter(|c| c.before != c.after).collect();
    if !args.dry_run {
        let mut saved = read_record(&record);
        for change in &changed {
            apply(change, &mut saved, args.uninstall)?;
        }
        if !changed.is_empty() {
            write_record(&record, &saved)?;
        }
    }
    if args.json {
        let files: Vec<Value> = changes
            .iter()
            .map(|c| {
                json!({"path": c.path.display().to_string(), "changed": c.before != c.after,
                       "summary": c.summary})
            })
            .collect();
        super::print_json(
            &json!({"dry_run": args.dry_run, "uninstall": args.uninstall,
                                  "files": files}),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let verb = match (args.dry_run, args.uninstall) {
        (true, _) => "would change",
        (false, true) => "removed eywa from",
        (false, false) => "set up",
    };
    for change in &changes {
        if change.before == change.after {
            outln!("{}: already as wanted, unchanged", change.path.display());
            continue;
        }
        outln!("{verb} {}:", change.path.display());
        for line in &change.summary {
            outln!("  {line}");
        }
    }
    if !args.uninstall && !args.dry_run {
        outln!(
            "Claude Code now starts sessions with eywa's context and reaches its tools (`claude \
             mcp list` shows eywa). `eywa serve` keeps them fast; `eywa setup claude \
             --uninstall` takes them out."
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `~/.claude.json`, or `.claude.json` inside a Claude dir moved by `CLAUDE_CONFIG_DIR`.
fn user_mcp_file(home: &Path, claude_dir: &Path) -> PathBuf {
    match std::env::var_os("CLAUDE_CONFIG_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir).join(".claude.json"),
        _ if claude_dir != home.join(".claude") => claude_dir.join(".claude.json"),
        _ => home.join(".claude.json"),
    }
}

/// The command line hooks run: this binary, with the data dir when it is not the default.
fn command_prefix(program: &str, paths: &Paths) -> String {
    let mut prefix = shell_word(program);
    if paths.settings.data_dir.source != super::config::Source::Default {
        prefix.push_str(" --data-dir ");
        prefix.push_str(&shell_word(&paths.data_dir.display().to_string()));
    }
    if paths.settings.claude_dir.source != super::config::Source::Default {
        prefix.push_str(" --claude-dir ");
        prefix.push_str(&shell_word(&paths.claude_dir.display().to_string()));
    }
    prefix
}

/// A word as a POSIX shell reads it back: quoted when it holds anything but safe characters.
fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+:,=@".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Whether a hook command is eywa's: its program is a file named `eywa`, and it runs
/// `hook`.
fn is_ours(command: &str) -> bool {
    let words = shell_split(command);
    let named_eywa = words
        .first()
        .is_some_and(|p| Path::new(p).file_name().is_some_and(|n| n == "eywa"));
    named_eywa && words.iter().any(|w| w == "hook")
}

/// A JSON file's bytes (`None`: it does not exist) and its object.
type JsonFile = (Option<Vec<u8>>, Map<String, Value>);

fn read_json(path: &Path) -> anyhow::Result<JsonFile> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((None, Map::new())),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok((Some(bytes), Map::new()));
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok((Some(bytes), map)),
        Ok(_) => anyhow::bail!("{} is not a JSON object: fix it first", path.display()),
        Err(e) => anyhow::bail!(
            "{} is not valid JSON ({e}): fix it first, setup will not overwrite it",
            path.display()
        ),
    }
}

fn to_bytes(map: &Map<String, Value>) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(map).unwrap_or_default();
    out.push(b'\n');
    out
}

/// `settings.json` with eywa's hooks (or without them, uninstalling).
fn plan_settings(path: &Path, prefix: &str, args: &ClaudeArgs) -> anyhow::Result<Change> {
    let (before, mut settings) = read_json(path)?;
    let mut summary = Vec::new();
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        anyhow::bail!("{}: `hooks` is not an object: fix it first", path.display());
    };
    // Ours out first: an uninstall stops there; an install puts back exactly one of each.
    for (event, entries) in hooks.iter_mut() {
        let Value::Array(entries) = entries else {
            continue;
        };
        let mut removed = 0;
        for entry in entries.iter_mut() {
            if let Some(Value::Array(commands)) = entry.get_mut("hooks") {
                let n = commands.len();
                commands.retain(|h| {
                    !h.get("command")
                        .and_then(Value::as_str)
                        .is_some_and(is_ours)
                });
                removed += n - commands.len();
            }
        }
        entries.retain(|e| !matches!(e.get("hooks"), Some(Value::Array(c)) if c.is_empty()));
        if removed > 0 && args.uninstall {
            summary.push(format!("- {event} hook"));
        }
    }
    hooks.retain(|_, entries| !matches!(entries, Value::Array(a) if a.is_empty()));
    if !args.uninstall {
        for (event, matcher, timeout) in hook_events(args.prompt_hook) {
            let mut entry = Map::new();
            if let Some(m) = matcher {
                entry.insert("matcher".into(), json!(m));
            }
            entry.insert(
                "hooks".into(),
                json!([{"type": "command", "command": format!("{prefix} hook {}", event.arg()),
                        "timeout": timeout}]),
            );
            let list = hooks
                .entry(event.name())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = list {
                list.push(Value::Object(entry));
            }
            summary.push(format!(
                "+ {} hook: {prefix} hook {}",
                event.name(),
                event.arg()
            ));
        }
    }
    if hooks.is_empty() {
        settings.shift_remove("hooks");
    }
    Ok(finish(path, before, &settings, summary))
}

/// The MCP server file with eywa registered (or not, uninstalling).
fn plan_mcp(
    path: &Path,
    key: &str,
    program: &str,
    prefix: &str,
    args: &ClaudeArgs,
) -> anyhow::Result<Change> {
    let (before, mut file) = read_json(path)?;
    let mut summary = Vec::new();
    let servers = file.entry(key).or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        anyhow::bail!("{}: `{key}` is not an object: fix it first", path.display());
    };
    let mut words: Vec<String> = shell_split(prefix);
    words.remove(0);
    words.push("mcp".into());
    let entry = json!({"type": "stdio", "command": program, "args": words, "env": {}});
    if args.uninstall {
        if servers.shift_remove("eywa").is_some() {
            summary.push("- MCP server eywa".into());
        }
    } else if servers.get("eywa") != Some(&entry) {
        servers.insert("eywa".into(), entry);
        summary.push(format!("+ MCP server eywa: {program} mcp"));
    }
    if servers.is_empty() {
        file.shift_remove(key);
    }
    Ok(finish(path, before, &file, summary))
}

/// The words of a command prefix this module wrote (plain words or single-quoted ones).
fn shell_split(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let (mut quoted, mut any) = (false, false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' if !quoted => {
                word.extend(chars.next());
                any = true;
            }
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => word.push(c),
        }
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    words
}

/// The change to `path`: unchanged content keeps its bytes, and a file that setup would
/// leave empty (and did not exist) is not created.
fn finish(
    path: &Path,
    before: Option<Vec<u8>>,
    after: &Map<String, Value>,
    summary: Vec<String>,
) -> Change {
    let unchanged = match &before {
        Some(bytes) => serde_json::from_slice::<Value>(bytes)
            .ok()
            .is_some_and(|v| v == Value::Object(after.clone())),
        None => after.is_empty(),
    };
    let after_bytes = match unchanged {
        true => before.clone(),
        false => Some(to_bytes(after)),
    };
    Change {
        path: path.to_owned(),
        before,
        after: after_bytes,
        summary,
    }
}

/// Where setup remembers the files it changed: their bytes before, and a digest of what it
/// wrote.
fn record_path(paths: &Paths, scope: &str, settings: &Path) -> PathBuf {
    let key = hex(&Sha256::digest(settings.display().to_string().as_bytes())[..8]);
    paths
        .data_dir
        .join("setup")
        .join(format!("claude-{scope}-{key}.json"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn read_record(path: &Path) -> Map<String, Value> {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default()
}

fn write_record(path: &Path, record: &Map<String, Value>) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        eywa::fs::create_private_dir(dir)?;
    }
    write_file(path, &to_bytes(record))
}

/// Writes `bytes` to `path` whole or not at all (a temporary file renamed over it).
fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().context("a file with no folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp = dir.join(format!(
        ".{}.eywa-tmp",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))
}

/// Applies one change. Installing backs the file up first (`<file>.eywa-backup`) and
/// notes its bytes before; uninstalling gives those bytes back when the file is as setup
/// left it, and otherwise writes it without eywa's entries.
fn apply(change: &Change, record: &mut Map<String, Value>, uninstall: bool) -> anyhow::Result<()> {
    let key = change.path.display().to_string();
    if uninstall {
        let noted = record.remove(&key);
        let wrote = noted
            .as_ref()
            .and_then(|n| n.get("wrote"))
            .and_then(Value::as_str);
        let untouched = change
            .before
            .as_deref()
            .is_some_and(|now| Some(hex(&Sha256::digest(now)).as_str()) == wrote);
        if untouched && let Some(noted) = noted {
            return match noted.get("before").and_then(Value::as_str) {
                Some(text) => write_file(&change.path, text.as_bytes()),
                None => std::fs::remove_file(&change.path)
                    .with_context(|| format!("cannot remove {}", change.path.display())),
            };
        }
        return match &change.after {
            Some(bytes) => write_file(&change.path, bytes),
            None => Ok(()),
        };
    }
    if let Some(before) = &change.before {
        let backup = PathBuf::from(format!("{key}.eywa-backup"));
        if !backup.exists() {
            std::fs::write(&backup, before)
                .with_context(|| format!("cannot back up {key} to {}", backup.display()))?;
        }
    }
    let Some(after) = &change.after else {
        return Ok(());
    };
    write_file(&change.path, after)?;
    // The bytes before the first setup stay noted: running it again keeps them.
    let before = match record.get(&key) {
        Some(noted) => noted.get("before").cloned().unwrap_or(Value::Null),
        None => match &change.before {
            Some(b) => String::from_utf8(b.clone()).map_or(Value::Null, Value::String),
            None => Value::Null,
        },
    };
    record.insert(
        key,
        json!({"before": before, "wrote": hex(&Sha256::digest(after))}),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eywa_hooks_are_recognised_by_program_and_subcommand() {
        assert!(is_ours("/usr/local/bin/eywa hook session-start"));
        assert!(is_ours("'/opt/my tools/eywa' --data-dir /x hook stop"));
        assert!(!is_ours("/usr/bin/other hook stop"));
        assert!(!is_ours("eywa serve"));
    }

    #[test]
    fn shell_words_round_trip() {
        let prefix = format!(
            "{} --data-dir {}",
            shell_word("/a b/eywa"),
            shell_word("/d'x")
        );
        assert_eq!(
            shell_split(&prefix),
            vec!["/a b/eywa", "--data-dir", "/d'x"]
        );
    }
}
