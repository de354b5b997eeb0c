//! `eywa setup claude`: eywa's hooks merged into Claude Code's `settings.json`, and its
//! MCP server registered where Claude Code reads it (`~/.claude.json` for the user,
//! `.mcp.json` for a project). Every other key and hook is kept, and so is an eywa hook or
//! server that setup did not write; each file is backed up before its first change;
//! running it again changes nothing; `--uninstall` takes out exactly what it added, and
//! gives a file back byte for byte when nothing else changed it since. A file that is a
//! symlink (into a dotfiles folder) is written where it points, and stays a link.

use std::ffi::OsString;
use std::fs::Permissions;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

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

/// A JSON file's bytes (`None`: it does not exist) and its object.
type JsonFile = (Option<Vec<u8>>, Map<String, Value>);

/// The largest settings file setup reads (Claude Code's `~/.claude.json` holds a few MB
/// of history at most); a larger one is refused, not read whole. Nesting is bounded by
/// serde_json (128 levels).
const MAX_SETTINGS_BYTES: u64 = 64 << 20;

fn read_json(path: &Path) -> anyhow::Result<JsonFile> {
    let bytes = match std::fs::File::open(path) {
        Ok(file) => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(
                &mut std::io::Read::take(file, MAX_SETTINGS_BYTES + 1),
                &mut bytes,
            )
            .with_context(|| format!("cannot read {}", path.display()))?;
            if bytes.len() as u64 > MAX_SETTINGS_BYTES {
                anyhow::bail!(
                    "{} is over {} MiB: setup does not read it",
                    path.display(),
                    MAX_SETTINGS_BYTES >> 20
                );
            }
            bytes
        }
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

/// The bytes setup leaves in a file: the same bytes when its content is unchanged, and
/// none for a file that setup would leave empty and that did not exist.
fn after_bytes(before: Option<&[u8]>, after: &Map<String, Value>) -> Option<Vec<u8>> {
    let unchanged = match before {
        Some(bytes) => serde_json::from_slice::<Value>(bytes)
            .ok()
            .is_some_and(|v| v.as_object() == Some(after)),
        None => after.is_empty(),
    };
    if unchanged {
        before.map(<[u8]>::to_vec)
    } else {
        Some(to_bytes(after))
    }
}

/// The file a path names once its symlinks are followed, which need not exist yet (a
/// dangling link). Setup writes there, so a settings file kept in a dotfiles folder stays
/// a link to it. A relative link is read from the link's folder.
fn resolve_links(path: &Path) -> anyhow::Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..=MAX_LINKS {
        if !is_link(&at)? {
            return Ok(at);
        }
        let link =
            std::fs::read_link(&at).with_context(|| format!("cannot read {}", at.display()))?;
        at = at.parent().unwrap_or(Path::new("")).join(link);
    }
    anyhow::bail!(
        "{}: more than {MAX_LINKS} symlinks in a row (a loop?)",
        path.display()
    )
}

/// Whether `path` is a symlink (a missing file is not).
fn is_link(path: &Path) -> anyhow::Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(meta.file_type().is_symlink()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Where setup remembers the files it changed: their bytes before, a digest of what it
/// wrote, and the entries it wrote (no other entry is its to take out).
fn record_path(paths: &Paths, scope: &str, settings: &Path) -> PathBuf {
    let key = hex(&Sha256::digest(settings.display().to_string().as_bytes())[..8]);
    paths
        .data_dir
        .join("setup")
        .join(format!("claude-{scope}-{key}.json"))
}

/// A file's key in the record: its path as Claude Code names it (a link's, not its
/// target's).
fn record_key(path: &Path) -> String {
    path.display().to_string()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(digits: &str) -> Option<Vec<u8>> {
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(digits.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A file's bytes before setup, for the record: whether it existed, and its bytes as text
/// (as hex when they are not UTF-8, so that no file is taken for one that did not exist).
fn note_before(bytes: Option<&[u8]>) -> Value {
    let Some(bytes) = bytes else {
        return json!({"existed": false});
    };
    match std::str::from_utf8(bytes) {
        Ok(text) => json!({"existed": true, "text": text}),
        Err(_) => json!({"existed": true, "hex": hex(bytes)}),
    }
}

/// What the record says a file held before setup: `Some(None)` when it did not exist,
/// and `None` when the record does not know (uninstalling then takes eywa's entries out
/// instead). Older records hold `before` as text, or null for a file that did not exist.
fn noted_before(noted: &Value) -> Option<Option<Vec<u8>>> {
    match noted.get("before")? {
        Value::Null => Some(None),
        Value::String(text) => Some(Some(text.as_bytes().to_vec())),
        Value::Object(before) if before.get("existed") == Some(&Value::Bool(false)) => Some(None),
        Value::Object(before) => match (before.get("text"), before.get("hex")) {
            (Some(Value::String(text)), _) => Some(Some(text.as_bytes().to_vec())),
            (_, Some(Value::String(digits))) => unhex(digits).map(Some),
            _ => None,
        },
        _ => None,
    }
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
    write_file(path, &to_bytes(record), None)
}

/// Writes `bytes` to `path` whole or not at all: a temporary file in its folder, renamed
/// over it. The file keeps its mode (or takes `mode`), and the temporary file is private
/// until then. `path` must not be a link: the rename would replace the link.
fn write_file(path: &Path, bytes: &[u8], mode: Option<Permissions>) -> anyhow::Result<()> {
    let dir = path.parent().context("a file with no folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut name = OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(".eywa-tmp");
    let tmp = dir.join(name);
    // A leftover of a run that stopped midway: created anew, it is private.
    let _ = std::fs::remove_file(&tmp);
    let mode = mode.or_else(|| std::fs::metadata(path).ok().map(|m| m.permissions()));
    let written = write_new(&tmp, bytes, mode).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.with_context(|| format!("cannot write {}", path.display()))
}

/// Creates `path` (private: 0600) with `bytes` on disk, then gives it `mode`.
fn write_new(path: &Path, bytes: &[u8], mode: Option<Permissions>) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    if let Some(mode) = mode {
        file.set_permissions(mode)?;
    }
    Ok(())
}

/// Backs a file up beside itself (`<file>.eywa-backup`), once: its bytes before setup's
/// first change, with its mode (a private file's backup is private too).
fn back_up(target: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut name = target.as_os_str().to_owned();
    name.push(".eywa-backup");
    let backup = PathBuf::from(name);
    if backup.exists() {
        return Ok(());
    }
    let mode = std::fs::metadata(target).ok().map(|m| m.permissions());
    write_file(&backup, bytes, mode).with_context(|| format!("cannot back up {}", target.display()))
}

/// Applies one change to the file's target (a link stays a link). Installing backs the
/// file up first and notes its bytes before; uninstalling gives those bytes back when the
/// file is as setup left it, and otherwise writes it without eywa's entries.
fn apply(change: &Change, record: &mut Map<String, Value>, uninstall: bool) -> anyhow::Result<()> {
    let key = record_key(&change.path);
    let target = &change.target;
    if uninstall {
        let noted = record.remove(&key);
        let restore = noted
            .as_ref()
            .filter(|n| as_written(Some(*n), change.before.as_deref()))
            .and_then(noted_before);
        return match (restore, &change.after) {
            (Some(Some(bytes)), _) => write_file(target, &bytes, None),
            // Setup created it: it goes, and a link to it stays (dangling, as it was).
            (Some(None), _) => std::fs::remove_file(target)
                .with_context(|| format!("cannot remove {}", target.display())),
            (None, Some(bytes)) => write_file(target, bytes, None),
            (None, None) => Ok(()),
        };
    }
    if let Some(before) = &change.before {
        back_up(target, before)?;
    }
    let Some(after) = &change.after else {
        return Ok(());
    };
    write_file(target, after, None)?;
    let before = match record.get(&key) {
        // The bytes before the first setup stay noted while the file is as setup left it.
        Some(noted) if as_written(Some(noted), change.before.as_deref()) => {
            noted.get("before").cloned()
        }
        // Nothing of setup's in it: these bytes are the user's to give back.
        _ if !change.held_ours => Some(note_before(change.before.as_deref())),
        // Edited since setup wrote it: giving back older bytes would lose the edit, so
        // uninstalling only takes eywa's entries out.
        _ => None,
    };
    let mut noted = change.noted.clone();
    if let Some(before) = before {
        noted.insert("before".into(), before);
    }
    noted.insert("wrote".into(), json!(hex(&Sha256::digest(after))));
    record.insert(key, Value::Object(noted));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const THEIR_HOOK: &str =
        "/opt/eywa/bin/eywa --data-dir /srv/team-eywa hook session-start --max-tokens 6000";

    #[test]
    fn eywa_hooks_are_recognised_by_program_and_subcommand() {
        assert!(is_eywa_hook("/usr/local/bin/eywa hook session-start"));
        assert!(is_eywa_hook("'/opt/my tools/eywa' --data-dir /x hook stop"));
        assert!(is_eywa_hook(THEIR_HOOK));
        assert!(!is_eywa_hook("/usr/bin/other hook stop"));
        assert!(!is_eywa_hook("eywa serve"));
    }

    #[test]
    fn setup_takes_out_only_the_hooks_it_wrote() {
        let prefix = "/usr/local/bin/eywa";
        let fresh = Written::new(prefix, None, None);
        assert!(fresh.has("/usr/local/bin/eywa hook stop"));
        assert!(!fresh.has("/old/eywa hook stop"));
        assert!(!fresh.has(THEIR_HOOK));
        let noted = json!({"commands": ["/old/eywa hook stop"], "wrote": "00"});
        assert!(Written::new(prefix, Some(&noted), None).has("/old/eywa hook stop"));
        // A record from before setup noted its commands, on a file as setup left it.
        let bytes: &[u8] = b"{}\n";
        let legacy = json!({"before": null, "wrote": hex(&Sha256::digest(bytes))});
        assert!(Written::new(prefix, Some(&legacy), Some(bytes)).has("/old/eywa hook stop"));
        let edited: &[u8] = b"{ }\n";
        assert!(!Written::new(prefix, Some(&legacy), Some(edited)).has("/old/eywa hook stop"));
    }

    #[test]
    fn bytes_before_round_trip_through_the_record() {
        let not_utf8: &[u8] = b"{\"a\": \"\xff\"}";
        let text: &[u8] = b"{}\n";
        for before in [None, Some(text), Some(not_utf8)] {
            let noted = json!({"before": note_before(before)});
            assert_eq!(noted_before(&noted), Some(before.map(<[u8]>::to_vec)));
        }
        // Older records: text, or null for a file that did not exist.
        assert_eq!(
            noted_before(&json!({"before": "{}"})),
            Some(Some(b"{}".to_vec()))
        );
        assert_eq!(noted_before(&json!({"before": null})), Some(None));
        assert_eq!(noted_before(&json!({"wrote": "00"})), None);
    }

    #[cfg(unix)]
    #[test]
    fn links_are_followed_to_their_file_and_a_loop_is_an_error() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        // Relative to the link's folder, then absolute; the file need not exist.
        symlink("file", at("a")).unwrap();
        symlink(at("a"), at("b")).unwrap();
        assert_eq!(resolve_links(&at("b")).unwrap(), at("file"));
        assert_eq!(resolve_links(&at("file")).unwrap(), at("file"));
        symlink("y", at("x")).unwrap();
        symlink("x", at("y")).unwrap();
        assert!(resolve_links(&at("x")).is_err());
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
