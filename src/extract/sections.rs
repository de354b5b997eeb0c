//! A handoff's body, deterministically, from what the transcript proves (seed 000's
//! sections): what happened, insights, key files and open threads.
//!
//! - What Happened: 2–5 chronological bullets of events: the request, files changed
//!   (grouped by directory), checks run and how they came out, commits, pull requests,
//!   todos and tasks completed, subagents run, plans made; the answer when nothing else
//!   happened.
//! - Insights: `**Topic** -- explanation`: errors hit and then resolved, the plan
//!   approved, and the findings and decisions the assistant stated, quoted.
//! - Key Files: files created or edited (else the files read most), grouped by directory.
//! - Open Threads: pending todos and tasks, stated next steps, checks still failing at the
//!   end, and a last request left unanswered.

use std::collections::BTreeMap;

mod insights;

use self::insights::insights;
pub(super) use self::insights::sentences;
use super::ProjectPath;
use super::handoff::{cleaned_request, first_sentence, plan_title, upper_first};
use super::project::{absolute, relative, within};
use crate::claude::{EventKind, Transcript};
use crate::model::{HandoffSections, Timestamp};

/// Bullets of What Happened at most, and characters of one.
const BULLETS: usize = 5;
const BULLET_CHARS: usize = 240;
/// Key files listed at most.
const KEY_FILES: usize = 10;
/// Open threads kept at most.
const OPEN_THREADS: usize = 10;
/// Insights kept at most, and characters of one.
const INSIGHTS: usize = 4;
const INSIGHT_CHARS: usize = 240;
/// Words of the request its bullet keeps.
const REQUEST_WORDS: usize = 30;
/// Names listed in one bullet before "+N more".
const LISTED: usize = 3;

/// The handoff body of a transcript.
pub(super) fn sections(t: &Transcript, projects: &[ProjectPath]) -> HandoffSections {
    let checks = checks(t);
    HandoffSections {
        what_happened: what_happened(t, projects, &checks),
        insights: insights(t, &checks),
        key_files: key_files(t, projects),
        open_threads: open_threads(t, &checks),
    }
}

/// A bullet and when its first event happened (`None`: after the dated ones).
struct Bullet {
    at: Option<Timestamp>,
    text: String,
}

fn what_happened(t: &Transcript, projects: &[ProjectPath], checks: &[Check]) -> Vec<String> {
    let mut events: Vec<Bullet> = Vec::new();
    if let Some(plan) = t
        .plans
        .last()
        .filter(|p| super::is_plan(p))
        .and_then(|p| plan_title(p))
    {
        events.push(Bullet {
            at: None,
            text: format!("Planned: {plan}"),
        });
    }
    if let Some(files) = changed_files(t, projects) {
        events.push(files);
    }
    if let Some(bullet) = checks_bullet(checks) {
        events.push(bullet);
    }
    let commits: Vec<&crate::claude::Event> = t
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Commit && e.ok == Some(true))
        .collect();
    if !commits.is_empty() {
        let names: Vec<String> = commits.iter().map(|c| format!("\"{}\"", c.text)).collect();
        let text = match names.len() {
            1 => format!("Committed {}", names[0]),
            n => format!("Made {n} commits: {}", listed(&names, "; ")),
        };
        events.push(Bullet {
            at: commits[0].at,
            text,
        });
    }
    for pr in t
        .events
        .iter()
        .filter(|e| e.kind == EventKind::PullRequest && e.ok != Some(false))
    {
        let what = if pr.text.is_empty() {
            String::new()
        } else {
            format!(" \"{}\"", pr.text)
        };
        events.push(Bullet {
            at: pr.at,
            text: format!("Opened a pull request{what}"),
        });
    }
    if let Some(bullet) = completed_work(t) {
        events.push(bullet);
    }
    if !t.spawns.is_empty() {
        let names: Vec<String> = t
            .spawns
            .iter()
            .map(|s| {
                let kind = s.agent_type.as_deref().unwrap_or("subagent");
                match &s.description {
                    Some(d) => format!("{kind} ({d})"),
                    None => kind.to_owned(),
                }
            })
            .collect();
        let text = match names.len() {
            1 => format!("Ran a subagent: {}", names[0]),
            n => format!("Ran {n} subagents: {}", listed(&names, "; ")),
        };
        events.push(Bullet { at: None, text });
    }
    // Chronological: dated events by time, the others after them, in the order above.
    events.sort_by_key(|b| (b.at.is_none(), b.at));
    events.truncate(BULLETS);

    let mut bullets = Vec::new();
    if events.len() < BULLETS
        && let Some(request) = t.prompts.first().and_then(|p| cleaned_request(p))
    {
        let more = match t.prompt_count {
            0 | 1 => String::new(),
            n => format!(" ({} more prompts followed)", n - 1),
        };
        bullets.push(format!(
            "Asked: {}{more}",
            words_upto(&request, REQUEST_WORDS)
        ));
    }
    bullets.extend(events.into_iter().map(|b| b.text));
    if bullets.len() < 2 && !t.compactions.is_empty() {
        let n = t.compactions.len();
        bullets.push(format!(
            "The conversation was compacted {}",
            if n == 1 {
                "once".to_owned()
            } else {
                format!("{n} times")
            }
        ));
    }
    if bullets.len() < 2
        && let Some(answer) = t.last_text.as_deref().and_then(answer_of)
    {
        bullets.push(format!("Answered: {answer}"));
    }
    bullets
        .into_iter()
        .map(|b| clip(&b, BULLET_CHARS))
        .collect()
}

/// "Edited src/cli (mcp.rs, hook.rs) and tests (mcp.rs); created docs/x.md": files
/// changed, grouped by directory, at the time of the first change.
fn changed_files(t: &Transcript, projects: &[ProjectPath]) -> Option<Bullet> {
    let mut created: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut edited: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut first: Option<Timestamp> = None;
    let mut count = 0;
    for (raw, usage) in &t.files {
        if !(usage.edited || usage.created) || is_scratch(raw) {
            continue;
        }
        let path = shown_path(raw, t, projects);
        let (dir, name) = match path.rsplit_once(['/', '\\']) {
            Some((dir, name)) if !dir.is_empty() => (dir.to_owned(), name.to_owned()),
            _ => (".".to_owned(), path.clone()),
        };
        let into = if usage.created {
            &mut created
        } else {
            &mut edited
        };
        into.entry(dir).or_default().push(name);
        count += 1;
        first = match (first, usage.first) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    if count == 0 {
        return None;
    }
    let group = |groups: &BTreeMap<String, Vec<String>>| -> String {
        let parts: Vec<String> = groups
            .iter()
            .map(|(dir, names)| match names.as_slice() {
                [one] if dir == "." => one.clone(),
                [one] => format!("{dir}/{one}"),
                many => format!("{dir}/ ({})", listed(many, ", ")),
            })
            .collect();
        listed(&parts, "; ")
    };
    let mut parts = Vec::new();
    let files = |n: usize| if n == 1 { "file" } else { "files" };
    let n_edited: usize = edited.values().map(Vec::len).sum();
    let n_created: usize = created.values().map(Vec::len).sum();
    if n_edited > 0 {
        parts.push(format!(
            "edited {n_edited} {}: {}",
            files(n_edited),
            group(&edited)
        ));
    }
    if n_created > 0 {
        parts.push(format!(
            "created {n_created} {}: {}",
            files(n_created),
            group(&created)
        ));
    }
    Some(Bullet {
        at: first,
        text: upper_first(&parts.join("; ")),
    })
}

/// One program's runs (`pytest`, `cargo test`): how many, how many failed, and how the
/// last one came out.
struct Check {
    label: String,
    runs: u32,
    failed: u32,
    last_ok: Option<bool>,
    first: Option<Timestamp>,
}

fn checks(t: &Transcript) -> Vec<Check> {
    let mut out: Vec<Check> = Vec::new();
    for e in &t.events {
        if !matches!(e.kind, EventKind::Test | EventKind::Build | EventKind::Lint) {
            continue;
        }
        let i = if let Some(i) = out.iter().position(|c| c.label == e.text) {
            i
        } else {
            out.push(Check {
                label: e.text.clone(),
                runs: 0,
                failed: 0,
                last_ok: None,
                first: e.at,
            });
            out.len() - 1
        };
        let c = &mut out[i];
        c.runs += 1;
        c.failed += u32::from(e.ok == Some(false));
        if e.ok.is_some() {
            c.last_ok = e.ok;
        }
    }
    out
}

/// "Ran pytest 7 times (failed 2, then passed); ruff check: passed".
fn checks_bullet(checks: &[Check]) -> Option<Bullet> {
    let first = checks.first()?;
    let parts: Vec<String> = checks
        .iter()
        .map(|c| {
            let times = if c.runs == 1 {
                String::new()
            } else {
                format!(" {} times", c.runs)
            };
            let outcome = match (c.failed, c.last_ok) {
                (0, Some(true)) => "passed".to_owned(),
                (f, Some(true)) => format!("failed {f}, then passed"),
                (_, Some(false)) => "failing at the end".to_owned(),
                (_, None) => "no result seen".to_owned(),
            };
            format!("`{}`{times} ({outcome})", c.label)
        })
        .collect();
    Some(Bullet {
        at: first.first,
        text: format!("Ran {}", listed(&parts, "; ")),
    })
}

/// "Completed 4 of 6 todos: a; b; c (+1 more)", from the last todo list and the tasks.
fn completed_work(t: &Transcript) -> Option<Bullet> {
    let all: Vec<&(String, String)> = t.todos.iter().chain(&t.tasks).collect();
    let done: Vec<String> = all
        .iter()
        .filter(|(_, status)| status == "completed")
        .map(|(content, _)| content.clone())
        .collect();
    if done.is_empty() {
        return None;
    }
    let what = if t.tasks.is_empty() { "todos" } else { "tasks" };
    Some(Bullet {
        at: None,
        text: format!(
            "Completed {} of {} {what}: {}",
            done.len(),
            all.iter().filter(|(_, s)| s != "deleted").count(),
            listed(&done, "; ")
        ),
    })
}

/// The key files of a session whose subagents made its changes: those its subagents'
/// transcripts edited or created, shown relative to the session's project.
pub fn subagent_key_files(t: &Transcript, agents: &[Transcript]) -> Vec<String> {
    let mut merged = Transcript {
        cwds: t.cwds.clone(),
        ..Transcript::default()
    };
    for agent in agents {
        for (path, usage) in agent.files.iter().filter(|(_, u)| u.edited || u.created) {
            let file = merged.files.entry(path.clone()).or_default();
            file.edited |= usage.edited;
            file.created |= usage.created;
            file.calls[1] += usage.calls[1];
            file.calls[2] += usage.calls[2];
            file.last = file.last.max(usage.last);
        }
    }
    let projects = super::project::projects_of(t);
    key_files(&merged, &projects)
}

fn key_files(t: &Transcript, projects: &[ProjectPath]) -> Vec<String> {
    let mut changed: Vec<(&String, &crate::claude::FileUse)> = t
        .files
        .iter()
        .filter(|(raw, u)| (u.edited || u.created) && !is_scratch(raw))
        .collect();
    if changed.is_empty() {
        // Nothing changed: the files the session read most say where it worked.
        changed = t.files.iter().filter(|(raw, _)| !is_scratch(raw)).collect();
        changed.sort_by(|a, b| b.1.calls[0].cmp(&a.1.calls[0]).then(a.0.cmp(b.0)));
    } else {
        let weight = |u: &crate::claude::FileUse| u.calls[1] + u.calls[2];
        changed.sort_by(|a, b| {
            weight(b.1)
                .cmp(&weight(a.1))
                .then(b.1.last.cmp(&a.1.last))
                .then(a.0.cmp(b.0))
        });
    }
    let mut files: Vec<String> = changed
        .into_iter()
        .take(KEY_FILES)
        .map(|(raw, _)| shown_path(raw, t, projects))
        .collect();
    if files.is_empty() {
        // Nor read: the files it committed (written by its subagents, say).
        files = t
            .committed_files
            .iter()
            .filter(|raw| !is_scratch(raw))
            .take(KEY_FILES)
            .map(|raw| shown_path(raw, t, projects))
            .collect();
    }
    // Grouped by directory.
    files.sort_by(|a, b| {
        let dir = |p: &str| {
            p.rsplit_once('/')
                .map_or(String::new(), |(d, _)| d.to_owned())
        };
        dir(a).cmp(&dir(b)).then(a.cmp(b))
    });
    files
}

fn open_threads(t: &Transcript, checks: &[Check]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |item: String| {
        if out.len() < OPEN_THREADS && !out.contains(&item) {
            out.push(item);
        }
    };
    for (content, status) in t.todos.iter().chain(&t.tasks) {
        if status != "completed" && status != "deleted" {
            push(content.clone());
        }
    }
    for step in t.last_text.as_deref().map(next_steps).unwrap_or_default() {
        push(step);
    }
    for c in checks.iter().filter(|c| c.last_ok == Some(false)) {
        push(format!("`{}` was failing when the session ended", c.label));
    }
    if t.unanswered
        && let Some(last) = t.prompts.last()
    {
        let asked = clip(first_sentence(last), 160);
        push(format!("Unanswered last request: {asked}"));
    }
    out
}

/// The next steps the last assistant message stated: the items of a list under a line
/// that names them ("Next steps", "Remaining", "TODO", "Follow-up"…).
pub(super) fn next_steps(text: &str) -> Vec<String> {
    const HEADINGS: [&str; 7] = [
        "next step",
        "remaining",
        "todo",
        "to do",
        "follow-up",
        "follow up",
        "still to",
    ];
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let trimmed = line.trim();
        let lowered = trimmed.to_lowercase();
        let is_item = trimmed.starts_with(['-', '*']) || starts_numbered(trimmed);
        if !is_item {
            let heading = lowered.trim_start_matches(['#', '*', ' ']);
            inside =
                HEADINGS.iter().any(|h| heading.starts_with(h)) || (inside && trimmed.is_empty());
            continue;
        }
        if inside {
            let item = trimmed
                .trim_start_matches(|c: char| {
                    c.is_ascii_digit() || matches!(c, '-' | '*' | '.' | ')')
                })
                .trim()
                .trim_start_matches("[ ]")
                .trim();
            if !item.is_empty() {
                out.push(clip(item, 160));
            }
        }
    }
    out
}

fn starts_numbered(line: &str) -> bool {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && matches!(line.as_bytes().get(digits), Some(b'.' | b')'))
}

/// The first sentence of the last answer, when it says something.
fn answer_of(text: &str) -> Option<String> {
    sentences(text)
        .find(|s| s.chars().count() >= 20 && !s.ends_with(':'))
        .map(|s| clip(s, 200))
}

/// A path as a handoff shows it: relative to the project it lies in, a file of one of
/// Claude Code's worktrees (`<repo>/.claude/worktrees/<name>/…`) as the repository's.
fn shown_path(raw: &str, t: &Transcript, projects: &[ProjectPath]) -> String {
    let mut path = absolute(raw, t.cwds.first().map(String::as_str));
    for marker in ["/.claude/worktrees/", "\\.claude\\worktrees\\"] {
        if let Some(i) = path.find(marker) {
            let rest = &path[i + marker.len()..];
            if let Some(j) = rest.find(['/', '\\']) {
                path = format!("{}{}", &path[..i], &rest[j..]);
            }
        }
    }
    match projects.iter().find(|p| within(&path, &p.path)) {
        Some(p) => relative(&path, &p.path).to_owned(),
        None => path,
    }
}

/// Files that are not the project's: Claude Code's own plans and scratch files.
fn is_scratch(path: &str) -> bool {
    path.contains("/.claude/plans/")
        || path.starts_with("/tmp/")
        || path.starts_with("/private/tmp/")
}

/// "a, b, c (+2 more)".
fn listed(items: &[String], sep: &str) -> String {
    let shown = items[..items.len().min(LISTED)].join(sep);
    match items.len().saturating_sub(LISTED) {
        0 => shown,
        n => format!("{shown} (+{n} more)"),
    }
}

fn clip(text: &str, max: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", text[..i].trim_end()),
        None => text.to_owned(),
    }
}

/// The first `n` words of `text`, with "…" when there were more.
fn words_upto(text: &str, n: usize) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() <= n {
        words.join(" ")
    } else {
        format!("{}…", words[..n].join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_of_a_worktree_show_as_the_repositorys() {
        let t = Transcript {
            cwds: vec!["/w/exp".into()],
            ..Transcript::default()
        };
        let projects = [super::super::project_of("/w/exp")];
        assert_eq!(
            shown_path(
                "/w/exp/.claude/worktrees/agent-a4ca/work/plan.md",
                &t,
                &projects
            ),
            "work/plan.md"
        );
        assert_eq!(shown_path("src/lib.rs", &t, &projects), "src/lib.rs");
        assert_eq!(shown_path("/etc/hosts", &t, &projects), "/etc/hosts");
    }
}
