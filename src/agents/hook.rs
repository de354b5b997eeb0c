//! `eywa hook <event>`: Claude Code's hooks. Reads the hook's JSON on stdin and answers
//! as Claude Code expects: SessionStart (and UserPromptSubmit, when set up) print
//! `additionalContext`; Stop, SessionEnd and PreCompact read the session's transcript into
//! eywa at once.
//!
//! A hook never blocks or breaks Claude Code: whatever fails (bad input, no store, a
//! locked store, a dead server, a deadline passed) ends with exit 0 and no output, and a
//! line in `<data>/logs/hooks.log`. Prompts and context are never logged.

use std::io::{Read as _, Write as _};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use eywa::model::Timestamp;
use eywa::retrieve::context::estimate_tokens;
use serde_json::{Value, json};

use crate::app::Paths;
use crate::app::client::Client;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The hook event: session-start, user-prompt-submit, stop, session-end or pre-compact
    /// (Claude Code's names, SessionStart…, work too)
    #[arg(value_parser = parse_event)]
    event: Event,
    /// Tokens of context SessionStart and UserPromptSubmit may add
    #[arg(long, default_value_t = 2_000, env = "EYWA_HOOK_MAX_TOKENS")]
    max_tokens: usize,
    /// UserPromptSubmit: past sessions whose passages mean what the prompt says, their
    /// cosine similarity (summed over a session's best passages) at least this
    #[arg(long, default_value_t = 0.5)]
    min_similarity: f32,
    /// UserPromptSubmit: or whose passages share its words, their BM25 score at least this
    #[arg(long, default_value_t = 8.0)]
    min_bm25: f32,
    /// Milliseconds the hook may take before it gives up silently [default: 900 for
    /// SessionStart and UserPromptSubmit, 30000 for the others]
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// Stop, SessionEnd, PreCompact: a read a hook handed over (it took too long for the
    /// hook); waits for the store, and for as long as the read takes
    #[arg(long, hide = true)]
    background: bool,
}

/// How long a hook that reads a session waits for `eywa serve` to have read it: past
/// that the server reads on alone (behind a running ingest, a hook would wait for it).
const SERVER_WAIT: Duration = Duration::from_secs(1);
/// How long a hook that reads a session without a server reads it itself: past that the
/// read is handed to a process of its own and the hook returns.
const LOCAL_READ: Duration = Duration::from_secs(8);
/// How long a handed-over read may take.
const BACKGROUND_READ: Duration = Duration::from_secs(3_600);

/// The hook events eywa answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    SessionStart,
    UserPromptSubmit,
    Stop,
    SessionEnd,
    PreCompact,
}

impl Event {
    pub(crate) const ALL: [Event; 5] = [
        Event::SessionStart,
        Event::UserPromptSubmit,
        Event::Stop,
        Event::SessionEnd,
        Event::PreCompact,
    ];

    /// Claude Code's name for the event.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::Stop => "Stop",
            Event::SessionEnd => "SessionEnd",
            Event::PreCompact => "PreCompact",
        }
    }

    /// The argument `eywa hook` takes for it.
    pub(crate) fn arg(self) -> &'static str {
        match self {
            Event::SessionStart => "session-start",
            Event::UserPromptSubmit => "user-prompt-submit",
            Event::Stop => "stop",
            Event::SessionEnd => "session-end",
            Event::PreCompact => "pre-compact",
        }
    }

    /// Whether it reads the session into eywa (rather than answering with context).
    fn reads(self) -> bool {
        matches!(self, Event::Stop | Event::SessionEnd | Event::PreCompact)
    }

    fn default_timeout(self) -> Duration {
        match self {
            Event::SessionStart | Event::UserPromptSubmit => Duration::from_millis(900),
            Event::Stop | Event::SessionEnd | Event::PreCompact => Duration::from_secs(30),
        }
    }
}

fn parse_event(s: &str) -> Result<Event, String> {
    let wanted: String = s
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    Event::ALL
        .into_iter()
        .find(|e| e.name().to_ascii_lowercase() == wanted)
        .ok_or_else(|| {
            let names: Vec<&str> = Event::ALL.iter().map(|e| e.arg()).collect();
            format!(
                "not a hook event eywa answers; one of: {}",
                names.join(", ")
            )
        })
}

/// The fields of a hook's stdin that eywa reads.
#[derive(Debug, Default)]
struct HookInput {
    session_id: String,
    transcript_path: String,
    cwd: String,
    prompt: String,
}

impl HookInput {
    fn parse(bytes: &[u8]) -> Result<HookInput, String> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| format!("stdin is not JSON: {e}"))?;
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        if !value.is_object() {
            return Err("stdin is not a JSON object".into());
        }
        Ok(HookInput {
            session_id: text("session_id"),
            transcript_path: text("transcript_path"),
            cwd: text("cwd"),
            prompt: text("prompt"),
        })
    }
}

/// The most stdin a hook reads: Claude Code sends a few hundred bytes (a prompt more).
const MAX_INPUT: u64 = 4 * 1024 * 1024;

pub(crate) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let event = args.event;
    let background = args.background && event.reads();
    let timeout = match background {
        true => BACKGROUND_READ,
        false => args
            .timeout_ms
            .map_or(event.default_timeout(), Duration::from_millis),
    };
    // A read that outgrows the hook is handed over rather than cut off.
    let hand_over = event.reads() && !background && timeout > Duration::ZERO;
    let deadline = match hand_over {
        true => timeout.min(LOCAL_READ),
        false => timeout,
    };
    let mut input = Vec::new();
    let read = std::io::stdin().take(MAX_INPUT).read_to_end(&mut input);
    let outcome = match read {
        Err(e) => Err(format!("cannot read stdin: {e}")),
        Ok(_) => HookInput::parse(&input).and_then(|hook| {
            let mut paths = paths.clone();
            // A store's upkeep waits for a command with time (a handed-over read has it).
            paths.upkeep = background;
            let gate = Gate {
                similarity: args.min_similarity,
                bm25: args.min_bm25,
            };
            let max_tokens = args.max_tokens;
            // Set once the session is being read: a hook still waiting for the store when
            // its time is up fails as before; one whose read runs long hands it over.
            let reading = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let started_reading = reading.clone();
            match within(deadline, move || {
                answer(
                    &paths,
                    event,
                    &hook,
                    max_tokens,
                    gate,
                    background,
                    &started_reading,
                )
            }) {
                Err(Stopped::TimedOut(_))
                    if hand_over && reading.load(std::sync::atomic::Ordering::SeqCst) =>
                {
                    hand_over_read(&input).map(Answered::HandedOver)
                }
                Err(Stopped::TimedOut(after)) => {
                    Err(format!("gave up after {} ms", after.as_millis()))
                }
                Err(Stopped::Failed(why)) => Err(why),
                Ok(answered) => Ok(answered),
            }
        }),
    };
    let (note, output) = match outcome {
        Ok(Answered::Context(context)) if !context.is_empty() => {
            let line = json!({
                "hookSpecificOutput": {
                    "hookEventName": event.name(),
                    "additionalContext": context,
                }
            });
            (
                format!("ok, {} tokens", estimate_tokens(&context)),
                Some(line),
            )
        }
        Ok(Answered::Pending) => ("ok, the server reads it on".to_owned(), None),
        Ok(Answered::HandedOver(pid)) => {
            (format!("ok, read on in the background (pid {pid})"), None)
        }
        Ok(_) => ("ok, nothing to add".to_owned(), None),
        Err(why) => (format!("failed: {why}"), None),
    };
    if let Some(line) = output {
        // A closed stdout is Claude Code's business; the hook still succeeds.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
    log(paths, event, &note, started.elapsed());
    Ok(ExitCode::SUCCESS)
}

/// What a hook did.
enum Answered {
    /// Context for the session (SessionStart, UserPromptSubmit).
    Context(String),
    /// Nothing to add, or the session was read.
    Nothing,
    /// `eywa serve` reads the session on, past the hook's wait.
    Pending,
    /// The read went on in a process of its own (its pid), past the hook's wait.
    HandedOver(u32),
}

/// Why a job gave no answer.
enum Stopped {
    Failed(String),
    TimedOut(Duration),
}

/// Runs `job` on a thread and waits at most `timeout` for it. A job still running then is
/// left to the process's exit.
fn within<T: Send + 'static>(
    timeout: Duration,
    job: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, Stopped> {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(job());
    });
    match receive.recv_timeout(timeout) {
        Ok(result) => result.map_err(Stopped::Failed),
        Err(_) => Err(Stopped::TimedOut(timeout)),
    }
}

/// Starts this hook again with `--background` on the same input (its own arguments, so
/// the same `--data-dir` and `--claude-dir`), in a session of its own: Claude Code does
/// not wait for it, and a hook's end does not end it. It finishes the read this hook could
/// not finish in its time. Returns its pid.
fn hand_over_read(input: &[u8]) -> Result<u32, String> {
    use std::os::unix::process::CommandExt as _;
    // The running binary even if a newer one replaced its file since.
    let exe = std::path::PathBuf::from("/proc/self/exe");
    let mut command = std::process::Command::new(exe);
    command
        .args(std::env::args_os().skip(1))
        .arg("--background")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: between fork and exec the closure only calls setsid, which is
    // async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot hand the read over: {e}"))?;
    let pid = child.id();
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input)
            .map_err(|e| format!("cannot hand the read over: {e}"))?;
    }
    Ok(pid)
}

fn answer(
    paths: &Paths,
    event: Event,
    hook: &HookInput,
    max_tokens: usize,
    gate: Gate,
    background: bool,
    reading: &std::sync::atomic::AtomicBool,
) -> Result<Answered, String> {
    let failed = |e: anyhow::Error| format!("{e:#}");
    let client = connect(paths, background).map_err(failed)?;
    let context = |c: Option<String>| c.map_or(Answered::Nothing, Answered::Context);
    match event {
        Event::SessionStart => session_start(&client, hook, max_tokens, paths.staleness_days)
            .map(context)
            .map_err(failed),
        Event::UserPromptSubmit => prompt_context(&client, hook, max_tokens, gate)
            .map(context)
            .map_err(failed),
        Event::Stop | Event::SessionEnd | Event::PreCompact => {
            let reference = match hook.transcript_path.is_empty() {
                false => &hook.transcript_path,
                true => &hook.session_id,
            };
            if reference.is_empty() {
                return Err("the hook's input names no transcript_path or session_id".into());
            }
            if !client.try_open().map_err(failed)? {
                return Err("the store is in use by another eywa process".into());
            }
            reading.store(true, std::sync::atomic::Ordering::SeqCst);
            // A server is waited for a moment: behind its running ingest, it reads on
            // alone.
            let wait = (!background).then_some(SERVER_WAIT);
            match client
                .ingest_session_within(reference, wait)
                .map_err(failed)?
            {
                Some(_) => Ok(Answered::Nothing),
                None => Ok(Answered::Pending),
            }
        }
    }
}

/// The client a hook asks. A handed-over read waits for the store (the hook that started
/// it held it a moment longer, or another command does), a minute at most.
fn connect(paths: &Paths, background: bool) -> anyhow::Result<Client> {
    let started = Instant::now();
    loop {
        let client = Client::connect(paths)?;
        if !background || client.try_open()? || started.elapsed() > Duration::from_secs(60) {
            return Ok(client);
        }
    }
}

/// The cwd project's best handoffs with their open threads, and its memories, within
/// `max_tokens` (see [`eywa::present::context`]); `None` for a project eywa has never seen.
fn session_start(
    client: &Client,
    hook: &HookInput,
    max_tokens: usize,
    staleness: Option<[u32; 3]>,
) -> anyhow::Result<Option<String>> {
    if hook.cwd.is_empty() {
        anyhow::bail!("the hook's input has no cwd");
    }
    let project = eywa::extract::project_of(&hook.cwd).name;
    let start = eywa::present::context::session_start(
        client,
        &project,
        &hook.session_id,
        max_tokens,
        staleness,
        Timestamp::now(),
        chrono::Local::now().date_naive(),
    )?;
    Ok(start.text)
}

/// How close a past session must be to a prompt to be worth its tokens: absolute scores,
/// since a search's fused score is relative to its best hit (which always scores high).
#[derive(Debug, Clone, Copy)]
struct Gate {
    similarity: f32,
    bm25: f32,
}

impl Gate {
    fn admits(self, signals: &eywa::retrieve::Signals) -> bool {
        let semantic = signals.semantic.is_some_and(|r| r.score >= self.similarity);
        let lexical = signals.lexical.is_some_and(|r| r.score >= self.bm25);
        semantic || lexical
    }
}

/// Sessions relevant to the prompt, as far as `gate` admits.
fn prompt_context(
    client: &Client,
    hook: &HookInput,
    max_tokens: usize,
    gate: Gate,
) -> anyhow::Result<Option<String>> {
    let prompt = hook.prompt.trim();
    if prompt.is_empty() || prompt.starts_with('/') {
        return Ok(None);
    }
    let request = eywa::engine::SearchRequest {
        query: prompt.chars().take(2_000).collect(),
        filter: Default::default(),
        limit: 3,
        mode: Default::default(),
        focus: (!hook.cwd.is_empty())
            .then(|| format!("project:{}", eywa::extract::project_of(&hook.cwd).name)),
        as_of: None,
    };
    let results = client.search(&request)?;
    let hits: Vec<&eywa::engine::SearchHit> = results
        .hits
        .iter()
        .filter(|h| gate.admits(&h.signals) && h.session_id != hook.session_id)
        .collect();
    Ok(eywa::present::context::prompt_context(
        &hits,
        Timestamp::now(),
        max_tokens,
    ))
}

/// Appends a line to `<data>/logs/hooks.log` (0600, in a 0700 folder); a log that cannot
/// be written is let go.
fn log(paths: &Paths, event: Event, note: &str, took: Duration) {
    let dir = paths.data_dir.join("logs");
    if eywa::fs::create_private_dir(&dir).is_err() {
        return;
    }
    let line = format!(
        "{} {} {} ms {}\n",
        Timestamp::now().to_rfc3339(),
        event.name(),
        took.as_millis(),
        log_text(&eywa::error::bounded_message(note))
    );
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("hooks.log"));
    if let Ok(mut file) = file {
        let _ = file.write_all(line.as_bytes());
    }
}

/// `note` as one line of a log a terminal shows: control characters (escape sequences,
/// carriage returns, newlines), line and paragraph separators and the characters that
/// reorder text (bidirectional overrides) escaped as `\u{…}`, a backslash doubled.
fn log_text(note: &str) -> String {
    let mut out = String::with_capacity(note.len());
    for c in note.chars() {
        let hidden = c.is_control()
            || matches!(
                c,
                '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
            )
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c);
        match c {
            '\\' => out.push_str("\\\\"),
            c if hidden => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_carry_no_raw_control_characters() {
        assert_eq!(
            log_text("failed: \u{1b}[31mred\r\nnext \u{202e}evil \\ ok"),
            "failed: \\u{1b}[31mred\\u{d}\\u{a}next \\u{202e}evil \\\\ ok"
        );
    }

    #[test]
    fn events_read_in_either_spelling() {
        assert_eq!(parse_event("session-start"), Ok(Event::SessionStart));
        assert_eq!(parse_event("SessionStart"), Ok(Event::SessionStart));
        assert_eq!(parse_event("pre_compact"), Ok(Event::PreCompact));
        assert!(parse_event("Notification").is_err());
    }
}
