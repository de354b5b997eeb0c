//! What a session's tool calls prove it did: commits, pull requests, test, build and lint
//! runs, and tasks. A call becomes an [`Event`]; its result (when one comes) sets the
//! outcome.

use super::types::{Event, EventKind};
use crate::model::Timestamp;

/// Characters kept of an event's text (a commit subject, a command, a task).
const MAX_EVENT_CHARS: usize = 160;

/// The event a tool call is, if it is one worth telling: a `git commit`, a `gh pr create`,
/// a test, build or lint run (`Bash`), or a task created (`TaskCreate`).
pub(super) fn event_of(
    name: &str,
    input: &serde_json::Value,
    at: Option<Timestamp>,
) -> Option<Event> {
    let (kind, text) = match name {
        "Bash" => {
            let command = input.get("command")?.as_str()?;
            bash_event(command)?
        }
        "TaskCreate" => {
            let subject = input.get("subject").and_then(|s| s.as_str())?;
            (EventKind::Task, subject.trim().to_owned())
        }
        _ => return None,
    };
    let text = clip(&text);
    (!text.is_empty()).then_some(Event {
        kind,
        text,
        ok: None,
        at,
    })
}

/// The paths a command line hands to `git add` (not `-A`, `.` or other flags).
pub(super) fn added_paths(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    for segment in segments(command) {
        let words: Vec<&str> = segment.split_whitespace().collect();
        if let ["git", "add", args @ ..] = words.as_slice() {
            for arg in args {
                let arg = arg.trim_matches(['"', '\'']);
                if !arg.starts_with('-') && arg != "." && !arg.is_empty() && !arg.contains('*') {
                    out.push(arg.to_owned());
                }
            }
        }
    }
    out
}

/// A commit's subject from its successful result (`[main 1a2b3c4] subject`), which says
/// what was committed better than the command line does.
pub(super) fn committed_subject(result: &str) -> Option<String> {
    result.lines().find_map(|line| {
        let rest = line.trim().strip_prefix('[')?;
        let (head, subject) = rest.split_once("] ")?;
        let hash = head.rsplit(' ').next()?;
        let is_hash = hash.len() >= 7 && hash.bytes().all(|b| b.is_ascii_hexdigit());
        (is_hash && !subject.trim().is_empty()).then(|| clip(subject.trim()))
    })
}

/// Whether a commit's result says nothing was committed, though the command exited 0.
pub(super) fn nothing_committed(result: &str) -> bool {
    result.contains("nothing to commit") || result.contains("no changes added to commit")
}

/// The pull request URL a `gh pr create` result printed.
pub(super) fn pull_request_url(result: &str) -> Option<String> {
    result
        .split_whitespace()
        .find(|w| w.starts_with("https://") && w.contains("/pull/"))
        .map(str::to_owned)
}

fn bash_event(command: &str) -> Option<(EventKind, String)> {
    for segment in segments(command) {
        let words: Vec<&str> = segment.split_whitespace().collect();
        let words = strip_runners(&words);
        match words {
            ["git", rest @ ..] if rest.contains(&"commit") => {
                if let Some(subject) = commit_message(command) {
                    return Some((EventKind::Commit, subject));
                }
                if rest.contains(&"--amend") {
                    return Some((EventKind::Commit, "amended the last commit".to_owned()));
                }
            }
            ["gh", "pr", "create", ..] => {
                let title = quoted_after(command, &["--title", "-t"]).unwrap_or_default();
                return Some((EventKind::PullRequest, first_line(&title)));
            }
            _ => {}
        }
        if let Some((kind, label)) = check(words) {
            return Some((kind, label));
        }
    }
    None
}

/// The parts of a shell line that run one command each: split at `&&`, `||`, `;`, `|`,
/// newlines and parentheses.
fn segments(command: &str) -> impl Iterator<Item = &str> {
    command
        .split(['\n', ';', '|', '&', '(', ')'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// A command with the launchers in front of the real program removed (`uv run`, `npx`,
/// `python -m`, `env X=1`…).
fn strip_runners<'a, 'b>(mut words: &'b [&'a str]) -> &'b [&'a str] {
    loop {
        words = match words {
            [
                "uv" | "poetry" | "pdm" | "hatch" | "pipenv" | "rye",
                "run",
                rest @ ..,
            ]
            | [
                "npx" | "pnpx" | "bunx" | "time" | "sudo" | "exec" | "nice",
                rest @ ..,
            ]
            | ["python" | "python3" | "py", "-m", rest @ ..]
            | ["bundle", "exec", rest @ ..] => rest,
            ["env", rest @ ..] => rest,
            [first, rest @ ..] if first.contains('=') && !first.starts_with('-') => rest,
            _ => return words,
        };
    }
}

/// A test, build or lint run, and a short label naming it (`cargo test`, `pytest`).
fn check(words: &[&str]) -> Option<(EventKind, String)> {
    use EventKind::{Build, Lint, Test};
    let label = |n: usize| words[..n.min(words.len())].join(" ");
    let second = words.get(1).copied().unwrap_or("");
    let script = |w: &str| {
        let w = w.rsplit(':').next().unwrap_or(w);
        if w.starts_with("test") {
            Some(Test)
        } else if w.starts_with("build") || w == "compile" || w == "typecheck" {
            Some(Build)
        } else if w.starts_with("lint") || w == "check" || w == "format:check" {
            Some(Lint)
        } else {
            None
        }
    };
    let kind = match *words.first()? {
        "pytest" | "jest" | "vitest" | "mocha" | "rspec" | "phpunit" | "tox" | "nox" | "ctest"
        | "playwright" => Test,
        "cargo" => match second {
            "test" | "nextest" => Test,
            "build" | "check" => Build,
            "clippy" => Lint,
            "fmt" if words.contains(&"--check") => Lint,
            _ => return None,
        },
        "go" => match second {
            "test" => Test,
            "build" | "vet" => Build,
            _ => return None,
        },
        "npm" | "pnpm" | "yarn" | "bun" => {
            let target = if second == "run" {
                words.get(2).copied()?
            } else {
                second
            };
            return script(target).map(|k| (k, label(if second == "run" { 3 } else { 2 })));
        }
        "make" | "just" => {
            return match second {
                "" => Some((Build, label(1))),
                t => script(t).map(|k| (k, label(2))),
            };
        }
        "tsc" | "webpack" => Build,
        "vite" | "next" if second == "build" => Build,
        "mvn" | "gradle" | "./gradlew" => {
            if words.contains(&"test") {
                Test
            } else {
                Build
            }
        }
        "pyright" | "mypy" | "ruff" | "eslint" | "flake8" | "pylint" | "shellcheck"
        | "golangci-lint" | "biome" => Lint,
        "uv" if second == "build" => Build,
        "docker" if second == "build" => Build,
        _ => return None,
    };
    let n = match kind {
        _ if words.first() == Some(&"cargo") || words.first() == Some(&"go") => 2,
        Lint if words.first() == Some(&"ruff") && matches!(second, "check" | "format") => 2,
        _ => 1,
    };
    Some((kind, label(n)))
}

/// The message of a `git commit` command line: the text after `-m`/`--message`, quoted or
/// from a heredoc; its first non-empty line.
fn commit_message(command: &str) -> Option<String> {
    let message = quoted_after(command, &["-m", "--message", "-am"])?;
    let message = match message.strip_prefix("$(cat <<") {
        // `"$(cat <<'EOF'\nsubject\n\nbody\nEOF\n)"`: the lines after the heredoc's start.
        Some(rest) => rest
            .split_once('\n')
            .map_or("", |(_, body)| body)
            .to_owned(),
        None => message,
    };
    let subject = first_line(&message);
    (!subject.is_empty()).then_some(subject)
}

/// The argument after the first of `flags` (`-m "x"`, `-m 'x'`, `--message=x`), unquoted.
fn quoted_after(command: &str, flags: &[&str]) -> Option<String> {
    for flag in flags {
        let mut from = 0;
        while let Some(i) = command[from..].find(flag) {
            let at = from + i;
            from = at + flag.len();
            let before_ok = at == 0 || command.as_bytes()[at - 1].is_ascii_whitespace();
            let rest = &command[from..];
            let rest = match rest.strip_prefix('=') {
                Some(r) => r,
                None if rest.starts_with(char::is_whitespace) => rest.trim_start(),
                None => continue,
            };
            if !before_ok {
                continue;
            }
            return Some(unquote(rest));
        }
    }
    None
}

/// The first shell word of `text`, with its quotes removed (`"a b" c` → `a b`).
fn unquote(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(q @ ('"' | '\'')) => {
            let mut out = String::new();
            let mut escaped = false;
            for c in chars {
                match c {
                    '\\' if q == '"' && !escaped => escaped = true,
                    c if c == q && !escaped => break,
                    c => {
                        out.push(c);
                        escaped = false;
                    }
                }
            }
            out
        }
        _ => text.split_whitespace().next().unwrap_or("").to_owned(),
    }
}

fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_owned()
}

fn clip(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(MAX_EVENT_CHARS) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bash(command: &str) -> Option<(EventKind, String)> {
        event_of("Bash", &json!({ "command": command }), None).map(|e| (e.kind, e.text))
    }

    #[test]
    fn commits_are_read_from_quotes_and_heredocs() {
        assert_eq!(
            bash("git add -A && git commit -m \"Fix the parser\""),
            Some((EventKind::Commit, "Fix the parser".into()))
        );
        let heredoc =
            "git commit -m \"$(cat <<'EOF'\nfeat: report corrupted archives\n\nBody.\nEOF\n)\"";
        assert_eq!(
            bash(heredoc),
            Some((EventKind::Commit, "feat: report corrupted archives".into()))
        );
        assert_eq!(
            committed_subject("[main 1a2b3c4] feat: report corrupted archives\n 2 files changed"),
            Some("feat: report corrupted archives".into())
        );
        assert_eq!(
            committed_subject("[main (root-commit) 1a2b3c4d] init"),
            Some("init".into())
        );
        assert_eq!(committed_subject("[notes] x"), None);
        assert!(nothing_committed(
            "On branch main\nnothing to commit, working tree clean"
        ));
        assert_eq!(bash("git log --oneline"), None);
    }

    #[test]
    fn checks_are_named_by_their_program() {
        let cases = [
            (
                "(source .venv/bin/activate && pytest -x)",
                EventKind::Test,
                "pytest",
            ),
            ("uv run pytest --cov=x", EventKind::Test, "pytest"),
            (
                "cargo test --test tests -- mcp",
                EventKind::Test,
                "cargo test",
            ),
            (
                "cargo clippy --all-targets",
                EventKind::Lint,
                "cargo clippy",
            ),
            (
                "RUST_LOG=1 cargo build --release",
                EventKind::Build,
                "cargo build",
            ),
            ("uv run pyright", EventKind::Lint, "pyright"),
            ("ruff check --fix", EventKind::Lint, "ruff check"),
            ("npm run build", EventKind::Build, "npm run build"),
            ("pnpm test", EventKind::Test, "pnpm test"),
            ("python -m pytest tests/", EventKind::Test, "pytest"),
            ("make", EventKind::Build, "make"),
            ("go test ./...", EventKind::Test, "go test"),
        ];
        for (command, kind, label) in cases {
            assert_eq!(bash(command), Some((kind, label.into())), "{command}");
        }
        for command in [
            "pnpm dev",
            "npm install",
            "ls -la",
            "vite",
            "cargo run -- x",
        ] {
            assert_eq!(bash(command), None, "{command}");
        }
    }

    #[test]
    fn pull_requests_and_tasks() {
        assert_eq!(
            bash("gh pr create --title \"Add CI\" --body x"),
            Some((EventKind::PullRequest, "Add CI".into()))
        );
        assert_eq!(
            pull_request_url("https://github.com/o/r/pull/12\n"),
            Some("https://github.com/o/r/pull/12".into())
        );
        let task = event_of("TaskCreate", &json!({"subject": "Write the docs"}), None).unwrap();
        assert_eq!(
            (task.kind, task.text.as_str()),
            (EventKind::Task, "Write the docs")
        );
    }
}
