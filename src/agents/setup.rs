//! `eywa setup claude`: eywa's hooks merged into Claude Code's `settings.json`, and its
//! MCP server registered where Claude Code reads it (`~/.claude.json` for the user,
//! `.mcp.json` for a project). Every other key and hook is kept, and so is an eywa hook or
//! server that setup did not write; each file is backed up before its first change;
//! running it again changes nothing; `--uninstall` takes out exactly what it added, and
//! gives a file back byte for byte when nothing else changed it since. A file that is a
//! symlink (into a dotfiles folder) is written where it points, and stays a link.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

mod files;

use self::files::{
    after_bytes, apply, hex, read_json, read_record, record_key, record_path, resolve_links,
    write_record,
};
use super::hook::Event;
use crate::app::Paths;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
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

/// Symlinks followed in a row at most, as the kernel's own limit: more is a loop.
const MAX_LINKS: usize = 40;

/// One file setup changes.
struct Change {
    /// The file as Claude Code names it (its key in setup's record).
    path: PathBuf,
    /// Where its bytes live: `path` with its symlinks followed.
    target: PathBuf,
    /// Its bytes before (`None`: it did not exist).
    before: Option<Vec<u8>>,
    /// Its bytes after (`None`: removed).
    after: Option<Vec<u8>>,
    /// Whether it held entries setup wrote: then its bytes before are not all the user's.
    held_ours: bool,
    /// What setup wrote into it, for its record (`commands` or `server`).
    noted: Map<String, Value>,
    /// What changed, for people.
    summary: Vec<String>,
    /// Eywa entries setup did not write, and so left as they are, for people.
    kept: Vec<String>,
}

pub(crate) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
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
    // Read before planning: it says which entries earlier runs wrote.
    let mut saved = read_record(&record);
    let changes = [
        plan_settings(&settings, &prefix, &args, saved.get(&record_key(&settings)))?,
        plan_mcp(
            &mcp,
            mcp_key_path,
            &program,
            &prefix,
            &args,
            saved.get(&record_key(&mcp)),
        )?,
    ];
    let changed: Vec<&Change> = changes.iter().filter(|c| c.before != c.after).collect();
    if !args.dry_run {
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
                json!({"path": c.path.display().to_string(),
                       "target": c.target.display().to_string(),
                       "changed": c.before != c.after, "summary": c.summary, "kept": c.kept})
            })
            .collect();
        crate::app::print_json(
            &json!({"dry_run": args.dry_run, "uninstall": args.uninstall,
                                  "files": files}),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    print_changes(&changes, &args)?;
    Ok(ExitCode::SUCCESS)
}

/// What setup did (or would do) to each file, and the user's eywa entries it left.
fn print_changes(changes: &[Change], args: &ClaudeArgs) -> anyhow::Result<()> {
    let verb = match (args.dry_run, args.uninstall) {
        (true, _) => "would change",
        (false, true) => "removed eywa from",
        (false, false) => "set up",
    };
    for change in changes {
        let file = shown(change);
        if change.before == change.after {
            outln!("{file}: already as wanted, unchanged");
        } else {
            outln!("{verb} {file}:");
            for line in &change.summary {
                outln!("  {line}");
            }
        }
        for line in &change.kept {
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
    Ok(())
}

/// A file as Claude Code names it, and the file it is a link to when it is one.
fn shown(change: &Change) -> String {
    if change.target == change.path {
        return change.path.display().to_string();
    }
    format!(
        "{} (a link to {})",
        change.path.display(),
        change.target.display()
    )
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
    if paths.settings.data_dir.source != crate::app::config::Source::Default {
        prefix.push_str(" --data-dir ");
        prefix.push_str(&shell_word(&paths.data_dir.display().to_string()));
    }
    if paths.settings.claude_dir.source != crate::app::config::Source::Default {
        prefix.push_str(" --claude-dir ");
        prefix.push_str(&shell_word(&paths.claude_dir.display().to_string()));
    }
    prefix
}

/// The command setup writes for one event.
fn hook_command(prefix: &str, event: Event) -> String {
    format!("{prefix} hook {}", event.arg())
}

/// A word as a POSIX shell reads it back: quoted when it holds anything but safe characters.
fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+:,=@".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Whether a hook command runs eywa's hooks: its program is a file named `eywa`, and it
/// runs `hook`. Setup takes out only those it wrote ([`Written`]); any other is the
/// user's, and setup adds no second one to its event (eywa would run twice).
fn is_eywa_hook(command: &str) -> bool {
    let words = shell_split(command);
    let named_eywa = words
        .first()
        .is_some_and(|p| Path::new(p).file_name().is_some_and(|n| n == "eywa"));
    named_eywa && words.iter().any(|w| w == "hook")
}

/// The hook commands setup wrote into a file, the only ones it takes out: those it writes
/// now, and those its record says an earlier run wrote.
struct Written {
    commands: Vec<String>,
    /// The record predates setup noting its commands, and the file is as setup left it:
    /// every eywa hook in it is setup's, since setup then replaced any other.
    legacy: bool,
}

impl Written {
    fn new(prefix: &str, noted: Option<&Value>, bytes: Option<&[u8]>) -> Written {
        let mut commands: Vec<String> = Event::ALL
            .into_iter()
            .map(|event| hook_command(prefix, event))
            .collect();
        let recorded = noted.and_then(|n| n.get("commands"));
        if let Some(Value::Array(earlier)) = recorded {
            commands.extend(earlier.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        let legacy = recorded.is_none() && as_written(noted, bytes);
        Written { commands, legacy }
    }

    fn has(&self, command: &str) -> bool {
        self.commands.iter().any(|c| c == command) || (self.legacy && is_eywa_hook(command))
    }
}

/// Whether setup wrote an MCP server entry: its record says so, or the record predates
/// setup noting it and the file is as setup left it (setup then replaced any other).
fn wrote_server(noted: Option<&Value>, server: &Value, bytes: Option<&[u8]>) -> bool {
    match noted.and_then(|n| n.get("server")) {
        Some(recorded) => recorded == server,
        None => as_written(noted, bytes),
    }
}

/// Whether a file's bytes are the ones setup last wrote into it, as its record says.
fn as_written(noted: Option<&Value>, bytes: Option<&[u8]>) -> bool {
    let wrote = noted.and_then(|n| n.get("wrote")).and_then(Value::as_str);
    bytes.is_some_and(|b| Some(hex(&Sha256::digest(b)).as_str()) == wrote)
}

/// `settings.json` with eywa's hooks (or without them, uninstalling). `noted` is what the
/// record says about the file.
fn plan_settings(
    path: &Path,
    prefix: &str,
    args: &ClaudeArgs,
    noted: Option<&Value>,
) -> anyhow::Result<Change> {
    let target = resolve_links(path)?;
    let (before, mut settings) = read_json(&target)?;
    let written = Written::new(prefix, noted, before.as_deref());
    let empty_before = matches!(settings.get("hooks"), Some(Value::Object(h)) if h.is_empty());
    let mut summary = Vec::new();
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        anyhow::bail!(
            "{}: `hooks` is not an object: fix it first",
            target.display()
        );
    };
    // Setup's own out first: an uninstall stops there; an install puts back exactly one of
    // each. What is left that runs eywa is the user's.
    let mut held_ours = false;
    let mut emptied: Vec<String> = Vec::new();
    // The user's own eywa hooks: (event, command).
    let mut theirs: Vec<(String, String)> = Vec::new();
    for (event, entries) in hooks.iter_mut() {
        let Value::Array(entries) = entries else {
            continue;
        };
        let removed = take_out(entries, &written);
        held_ours |= removed > 0;
        if removed > 0 && args.uninstall {
            summary.push(format!("- {event} hook"));
        }
        if removed > 0 && entries.is_empty() {
            emptied.push(event.clone());
        }
        theirs.extend(eywa_hooks(entries).into_iter().map(|c| (event.clone(), c)));
    }
    let kept: Vec<String> = theirs
        .iter()
        .map(|(event, command)| {
            format!("= kept your own {event} hook: {command} (not written by eywa setup)")
        })
        .collect();
    let wrote = if args.uninstall {
        Vec::new()
    } else {
        add_hooks(hooks, prefix, args.prompt_hook, &theirs, &mut summary)
    };
    // Events left empty go, after the install put its hooks back where they were.
    hooks.retain(|event, entries| {
        !(emptied.contains(event) && matches!(entries, Value::Array(a) if a.is_empty()))
    });
    if hooks.is_empty() && !empty_before {
        settings.shift_remove("hooks");
    }
    let after = after_bytes(before.as_deref(), &settings);
    let mut noted = Map::new();
    noted.insert("commands".into(), json!(wrote));
    Ok(Change {
        path: path.to_owned(),
        target,
        before,
        after,
        held_ours,
        noted,
        summary,
        kept,
    })
}

/// Adds eywa's hook to each event, except where the user runs an eywa hook of their own
/// (eywa would run twice): the commands added.
fn add_hooks(
    hooks: &mut Map<String, Value>,
    prefix: &str,
    prompt_hook: bool,
    theirs: &[(String, String)],
    summary: &mut Vec<String>,
) -> Vec<String> {
    let mut wrote = Vec::new();
    for (event, matcher, timeout) in hook_events(prompt_hook) {
        if theirs.iter().any(|(e, _)| e == event.name()) {
            continue;
        }
        let command = hook_command(prefix, event);
        let mut entry = Map::new();
        if let Some(m) = matcher {
            entry.insert("matcher".into(), json!(m));
        }
        entry.insert(
            "hooks".into(),
            json!([{"type": "command", "command": command, "timeout": timeout}]),
        );
        let list = hooks
            .entry(event.name())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list {
            list.push(Value::Object(entry));
        }
        summary.push(format!("+ {} hook: {command}", event.name()));
        wrote.push(command);
    }
    wrote
}

/// Takes the hooks setup wrote out of one event's entries, and the entries that left
/// empty: how many hooks.
fn take_out(entries: &mut Vec<Value>, written: &Written) -> usize {
    let mut removed = 0;
    entries.retain_mut(|entry| {
        let Some(Value::Array(commands)) = entry.get_mut("hooks") else {
            return true;
        };
        let n = commands.len();
        commands.retain(|h| {
            !h.get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| written.has(c))
        });
        removed += n - commands.len();
        // An entry that was empty already is the user's.
        n == commands.len() || !commands.is_empty()
    });
    removed
}

/// The eywa hook commands in one event's entries.
fn eywa_hooks(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .filter_map(|e| e.get("hooks").and_then(Value::as_array))
        .flatten()
        .filter_map(|h| h.get("command").and_then(Value::as_str))
        .filter(|c| is_eywa_hook(c))
        .map(str::to_owned)
        .collect()
}

/// The MCP server file with eywa registered (or not, uninstalling). A server named eywa
/// that setup did not write is the user's: it stays, whatever it runs.
fn plan_mcp(
    path: &Path,
    key: &str,
    program: &str,
    prefix: &str,
    args: &ClaudeArgs,
    noted: Option<&Value>,
) -> anyhow::Result<Change> {
    let target = resolve_links(path)?;
    let (before, mut file) = read_json(&target)?;
    let (mut summary, mut kept) = (Vec::new(), Vec::new());
    let servers = file.entry(key).or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        anyhow::bail!(
            "{}: `{key}` is not an object: fix it first",
            target.display()
        );
    };
    let mut words: Vec<String> = shell_split(prefix);
    words.remove(0);
    words.push("mcp".into());
    let entry = json!({"type": "stdio", "command": program, "args": words, "env": {}});
    let current = servers.get("eywa").cloned();
    let ours = current
        .as_ref()
        .is_some_and(|c| *c == entry || wrote_server(noted, c, before.as_deref()));
    let mut wrote = Value::Null;
    if let Some(theirs) = current.as_ref().filter(|_| !ours) {
        kept.push(format!(
            "= kept your own MCP server eywa: {} (not written by eywa setup)",
            server_line(theirs)
        ));
    } else if args.uninstall {
        if servers.shift_remove("eywa").is_some() {
            summary.push("- MCP server eywa".into());
        }
    } else {
        if current.as_ref() != Some(&entry) {
            servers.insert("eywa".into(), entry.clone());
            summary.push(format!("+ MCP server eywa: {program} mcp"));
        }
        wrote = entry;
    }
    if servers.is_empty() {
        file.shift_remove(key);
    }
    let after = after_bytes(before.as_deref(), &file);
    let mut noted = Map::new();
    noted.insert("server".into(), wrote);
    Ok(Change {
        path: path.to_owned(),
        target,
        before,
        after,
        held_ours: ours,
        noted,
        summary,
        kept,
    })
}

/// An MCP server entry in one line: its command and arguments (its JSON when it has no
/// command).
fn server_line(server: &Value) -> String {
    let Some(program) = server.get("command").and_then(Value::as_str) else {
        return server.to_string();
    };
    let args = server
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    std::iter::once(program)
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ")
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

#[cfg(test)]
mod tests;
