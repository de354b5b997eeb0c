//! Optional LLM handoffs: a session's markdown piped to a command (`claude -p`, say), the
//! answer checked against seed 000's format, the deterministic handoff kept when anything
//! fails. Answers are cached by the hash of what was asked; a daily token cap bounds the
//! spending.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::claude::{Message, MessageKind, Role};
use crate::model::Handoff;

/// A command that writes handoffs, and what it may spend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summarizer {
    /// Run with `sh -c`; the session's markdown on its stdin, the handoff on its stdout.
    pub command: String,
    /// Tokens (what is sent and what comes back, about four characters each) it may use
    /// per local day; past it, sessions keep their deterministic handoff.
    pub daily_tokens: u64,
    /// How long one answer may take.
    pub timeout: Duration,
}

impl Summarizer {
    /// The default daily cap.
    pub const DEFAULT_DAILY_TOKENS: u64 = 500_000;
    /// The default time one answer may take.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(180);

    /// A summarizer running `command`, with the default cap and timeout.
    pub fn new(command: impl Into<String>) -> Summarizer {
        Summarizer {
            command: command.into(),
            daily_tokens: Self::DEFAULT_DAILY_TOKENS,
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }
}

/// How one session's summary went (in the order of the ingest report's counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The command's handoff is used.
    Made,
    /// A cached answer to the same question is used.
    Cached,
    /// The command failed, timed out or answered out of format: the deterministic one
    /// stays.
    Failed,
    /// The day's tokens are spent: the deterministic one stays.
    Capped,
}

/// What the command is told before the session.
const INSTRUCTIONS: &str = "Write an Eywa handoff for the Claude Code session below, so that \
the next agent working on this project knows what happened. Answer with the handoff only, \
in exactly this format:

---
headline: <action-oriented, 5-10 words>
keywords: [<3-8 lowercase keywords>]
---

# <the headline again>

## What Happened

- <2-5 chronological bullets of what was done>

## Insights

- **<Topic>** -- <a decision or learning, one line>

## Key Files

- <path, one per line>

## Open Threads

- <unfinished work, one per line; leave the section out when there is none>

The session:

";

/// Replaces `handoff`'s headline, keywords and sections with the command's, when it
/// answers in format within the day's cap; `cache` is the folder of answers (keyed by the
/// command and what it is asked: another command asks again) and the usage of the day.
pub(crate) fn summarize(
    summarizer: &Summarizer,
    cache: &Path,
    handoff: &mut Handoff,
    messages: &[Message],
) -> Outcome {
    let input = format!("{INSTRUCTIONS}{}", session_markdown(handoff, messages));
    let key = {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(format!("{}\u{0}{input}", summarizer.command));
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let cached = cache.join(format!("{key}.md"));
    if let Ok(answer) = std::fs::read_to_string(&cached)
        && apply(handoff, &answer)
    {
        return Outcome::Cached;
    }
    let asked = estimate_tokens(&input);
    let usage = Usage::at(cache);
    if usage.today() + asked > summarizer.daily_tokens {
        tracing::warn!(
            session = %handoff.short_id,
            cap = summarizer.daily_tokens,
            "the summarizer's daily token cap is reached: deterministic handoff kept"
        );
        return Outcome::Capped;
    }
    let answer = run(summarizer, &input);
    let spent = asked + answer.as_deref().map_or(0, estimate_tokens);
    usage.add(spent);
    match answer {
        Some(answer) if apply(handoff, &answer) => {
            if crate::fs::create_private_dir(cache).is_ok() {
                let _ = crate::fs::write_private_atomically(&cached, answer.as_bytes());
            }
            Outcome::Made
        }
        _ => {
            tracing::warn!(session = %handoff.short_id, "the summarizer failed or answered out of format: deterministic handoff kept");
            Outcome::Failed
        }
    }
}

/// Seed 001's estimate: about four characters a token.
fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// Runs the command with `input` on its stdin: its stdout, when it exits 0 in time.
fn run(summarizer: &Summarizer, input: &str) -> Option<String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(&summarizer.command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let input = input.to_owned();
    // Written from a thread: a command that answers before reading all of it must not
    // block the write.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        out
    });
    let deadline = Instant::now() + summarizer.timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let _ = writer.join();
    let out = reader.join().ok()?;
    status.success().then_some(out)
}

/// Takes the answer's headline, keywords and sections when it is a handoff in seed 000's
/// format: frontmatter, a headline of 1-12 words, 2-5 bullets of what happened, insights as
/// `**Topic** -- explanation`.
fn apply(handoff: &mut Handoff, answer: &str) -> bool {
    let answer = answer.trim();
    let answer = answer
        .strip_prefix("```markdown")
        .or_else(|| answer.strip_prefix("```md"))
        .or_else(|| answer.strip_prefix("```"))
        .map_or(answer, |a| a.trim_end().trim_end_matches("```"));
    let Some(parsed) = parse_answer(answer) else {
        return false;
    };
    let (headline, keywords, sections) = parsed;
    handoff.headline = headline;
    if !keywords.is_empty() {
        handoff.keywords = keywords;
    }
    handoff.sections = sections;
    true
}

type Parsed = (String, Vec<String>, crate::model::HandoffSections);

fn parse_answer(answer: &str) -> Option<Parsed> {
    let lines: Vec<&str> = answer.lines().collect();
    let open = lines.iter().position(|l| !l.trim().is_empty())?;
    if lines[open].trim() != "---" {
        return None;
    }
    let close = open + 1 + lines[open + 1..].iter().position(|l| l.trim() == "---")?;
    let mut headline = None;
    let mut keywords = Vec::new();
    for line in &lines[open + 1..close] {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "headline" => headline = Some(value.trim_matches(['"', '\'']).trim().to_owned()),
            "keywords" => {
                keywords = value
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .split(',')
                    .map(|k| k.trim().trim_matches(['"', '\'']).to_lowercase())
                    .filter(|k| !k.is_empty())
                    .collect();
            }
            _ => {}
        }
    }
    let headline = headline.filter(|h| (1..=12).contains(&h.split_whitespace().count()))?;
    // The body is read by the handoff parser, behind a frontmatter it accepts.
    let body = lines[close + 1..].join("\n");
    let doc = format!(
        "---\nsession_id: x\ndate: 2000-01-01\nheadline: h\nprojects: []\nkeywords: []\nsubstance: 1\n---\n{body}\n"
    );
    let (_, sections) = crate::extract::parse_markdown(&doc).ok()?;
    let well_formed = (2..=5).contains(&sections.what_happened.len())
        && sections
            .insights
            .iter()
            .all(|(topic, text)| !topic.is_empty() && !text.is_empty());
    well_formed.then_some((headline, keywords, sections))
}

/// The session as markdown: its id, then each prompt and reply with the tools each
/// reply called (names and inputs; results left out, they are the bulk).
fn session_markdown(handoff: &Handoff, messages: &[Message]) -> String {
    // No headline: a title that changes (a label arriving) would miss the cache.
    let mut out = format!(
        "# Session {}\n\n- Projects: {}\n- Date: {}\n",
        handoff.short_id,
        handoff.projects.join(", "),
        handoff.date
    );
    for m in messages
        .iter()
        .filter(|m| !m.superseded && m.kind.is_conversation())
    {
        let who = match (m.role, m.kind) {
            (_, MessageKind::CompactSummary) => "Compact summary",
            (_, MessageKind::Command) => "Command",
            (Role::User, _) => "User",
            (Role::Assistant | Role::System, _) => "Assistant",
        };
        if m.text.trim().is_empty() && m.tool_calls.is_empty() {
            continue;
        }
        out.push_str(&format!("\n## {who}\n\n"));
        if !m.text.trim().is_empty() {
            out.push_str(m.text.trim());
            out.push('\n');
        }
        for call in &m.tool_calls {
            let status = if call.is_error { " (error)" } else { "" };
            let input: String = call.input.chars().take(400).collect();
            out.push_str(&format!("- tool {}{status}: {input}\n", call.name));
        }
    }
    out
}

/// Tokens spent today, kept in `<cache>/usage.json` as `{"date": …, "tokens": …}`.
struct Usage {
    path: PathBuf,
    date: String,
}

impl Usage {
    fn at(cache: &Path) -> Usage {
        Usage {
            path: cache.join("usage.json"),
            date: chrono::Local::now().date_naive().to_string(),
        }
    }

    fn today(&self) -> u64 {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            return 0;
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
            return 0;
        };
        if value["date"].as_str() == Some(self.date.as_str()) {
            value["tokens"].as_u64().unwrap_or(0)
        } else {
            0
        }
    }

    fn add(&self, tokens: u64) {
        let total = self.today() + tokens;
        if let Some(dir) = self.path.parent() {
            let _ = crate::fs::create_private_dir(dir);
        }
        let value = serde_json::json!({"date": self.date, "tokens": total});
        let _ = crate::fs::write_private_atomically(&self.path, value.to_string().as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_out_of_format_are_refused() {
        let good = "---\nheadline: Fix the cart rounding\nkeywords: [cart, rounding]\n---\n\n# Fix the cart rounding\n\n## What Happened\n\n- Found the float sum\n- Rounded per line\n\n## Insights\n\n- **Money** -- keep cents as integers\n";
        let (headline, keywords, sections) = parse_answer(good).unwrap();
        assert_eq!(headline, "Fix the cart rounding");
        assert_eq!(keywords, ["cart", "rounding"]);
        assert_eq!(sections.what_happened.len(), 2);
        assert_eq!(sections.insights[0].0, "Money");
        for bad in [
            "Sure! Here is the handoff.",
            &good.replace("- Rounded per line\n", ""),
            &good.replace("headline: Fix the cart rounding", "headline: "),
        ] {
            assert!(parse_answer(bad).is_none(), "{bad}");
        }
    }
}
