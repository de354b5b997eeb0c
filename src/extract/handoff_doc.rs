//! Seed 000's on-disk handoff: the markdown file (YAML frontmatter, then sections) at
//! `handoffs/YYYY/MM/DD/<short_id>.md`, and the `handoff-index.json` beside it. Written in
//! the seed's format, and read back leniently, so that the files of an existing Python Eywa
//! data folder can be imported.
//!
//! Choices the seed leaves open:
//! - `duration` and `model` are left out of the frontmatter when unknown (never
//!   `duration: unknown`); reading treats a missing key, `null` and `~` alike.
//! - A scalar is double-quoted when a YAML reader would not read it back as the same string:
//!   it holds `:`, `#`, a quote or a control character, starts with one of `[{-*&!|>%@?,`
//!   or a backquote, has leading or trailing spaces, is empty, or reads as
//!   a number, date, boolean or null (`12345678`, `8735e508`, `yes`). List items are quoted
//!   as well when they hold `,`, `[`, `]`, `{` or `}`.
//! - For substance ≥ 1, `## What Happened` is always written, even with no bullets;
//!   `## Insights`, `## Key Files` (substance 2 only) and `## Open Threads` are left out
//!   when empty. For substance 0 the body is `No meaningful work.` and the sections given are
//!   not written.
//! - A bullet spanning lines continues on lines indented by two spaces. Bullets are trimmed;
//!   an empty one is a lone `-`. An insight with no topic is written as its bare explanation
//!   (`**** -- …` when that explanation starts with `**`); a topic holding `** -- ` does not
//!   read back.
//! - Reading ignores unknown keys and sections, `#` titles and `###` headings, and takes
//!   `* `, `+ ` and `1. ` bullets as well as `- `; an unbulleted line is an item of its own.
//!   Empty project and keyword names are dropped. `substance` defaults to 1, as in Eywa.

mod index;
#[cfg(test)]
mod tests;
mod yaml;

use std::path::{Path, PathBuf};

use chrono::{Datelike, NaiveDate};
use serde::{Deserialize, Serialize};

pub use self::index::{IndexEntry, build_index, parse_index, read_index};
use self::yaml::Value;
use crate::model::Handoff;

/// The body of a substance-0 handoff.
const NO_WORK: &str = "No meaningful work.";

pub use crate::model::HandoffSections;

/// The frontmatter of a handoff file, as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffFrontmatter {
    /// The 8-character short id (whatever the file holds, when read).
    pub session_id: String,
    pub date: NaiveDate,
    /// Human-readable, `10m`, `1h 5m`, `<1m`.
    pub duration: Option<String>,
    /// `duration` in minutes, when it reads as one (`<1m` is 0).
    pub duration_minutes: Option<u32>,
    pub model: Option<String>,
    pub headline: String,
    pub projects: Vec<String>,
    pub keywords: Vec<String>,
    /// 0 = no work, 1 = a single task, 2 = multi-step.
    pub substance: u8,
}

impl From<&Handoff> for HandoffFrontmatter {
    fn from(h: &Handoff) -> Self {
        HandoffFrontmatter {
            session_id: h.short_id.clone(),
            date: h.date,
            duration: h.duration_minutes.map(|_| h.duration_label()),
            duration_minutes: h.duration_minutes,
            model: h.model.clone(),
            headline: h.headline.clone(),
            projects: h.projects.clone(),
            keywords: h.keywords.clone(),
            substance: h.substance,
        }
    }
}

/// Why a handoff file or index could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HandoffDocError {
    #[error("no frontmatter: a handoff starts with a `---` line")]
    NoFrontmatter,
    #[error("unclosed frontmatter: no `---` line ends it")]
    UnclosedFrontmatter,
    #[error("frontmatter has no {0}")]
    MissingField(&'static str),
    #[error("bad date {0:?}: expected YYYY-MM-DD")]
    BadDate(String),
    #[error("bad substance {0:?}: expected 0, 1 or 2")]
    BadSubstance(String),
    #[error("bad handoff index: {0}")]
    BadIndex(String),
    #[error("bad handoff index entry {id:?}: {problem}")]
    BadIndexEntry { id: String, problem: String },
}

/// The handoff file of seed 000: frontmatter, `# {headline}`, then the sections (see the
/// module docs for what is left out when).
pub fn render_markdown(handoff: &Handoff, sections: &HandoffSections) -> String {
    let fm = HandoffFrontmatter::from(handoff);
    let mut out = String::from("---\n");
    let mut field = |key: &str, value: &str| {
        out.push_str(key);
        out.push_str(": ");
        out.push_str(value);
        out.push('\n');
    };
    field("session_id", &yaml::scalar(&fm.session_id));
    field("date", &fm.date.format("%Y-%m-%d").to_string());
    if let Some(duration) = &fm.duration {
        field("duration", &yaml::scalar(duration));
    }
    if let Some(model) = &fm.model {
        field("model", &yaml::scalar(model));
    }
    field("headline", &yaml::scalar(&fm.headline));
    field("projects", &yaml::flow_list(&fm.projects));
    field("keywords", &yaml::flow_list(&fm.keywords));
    field("substance", &fm.substance.to_string());
    out.push_str("---\n\n");

    let title = fm.headline.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut blocks = vec![format!("# {title}").trim_end().to_owned()];
    if fm.substance == 0 {
        blocks.push(NO_WORK.to_owned());
    } else {
        let insights: Vec<String> = sections
            .insights
            .iter()
            .map(|(topic, explanation)| insight_text(topic, explanation))
            .collect();
        blocks.push(section("What Happened", &sections.what_happened));
        if !insights.is_empty() {
            blocks.push(section("Insights", &insights));
        }
        if fm.substance == 2 && !sections.key_files.is_empty() {
            blocks.push(section("Key Files", &sections.key_files));
        }
        if !sections.open_threads.is_empty() {
            blocks.push(section("Open Threads", &sections.open_threads));
        }
    }
    out.push_str(&blocks.join("\n\n"));
    out.push('\n');
    out
}

fn section(title: &str, items: &[String]) -> String {
    let mut out = format!("## {title}");
    if !items.is_empty() {
        out.push('\n');
    }
    for item in items {
        out.push('\n');
        out.push_str(&bullet(item));
    }
    out
}

/// `- text`, later lines of the text indented by two spaces.
fn bullet(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return "-".to_owned();
    }
    let mut out = String::from("-");
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if n > 0 {
            out.push('\n');
        }
        if !line.is_empty() {
            out.push_str(if n == 0 { " " } else { "  " });
            out.push_str(line);
        }
    }
    out
}

fn insight_text(topic: &str, explanation: &str) -> String {
    let (topic, explanation) = (topic.trim(), explanation.trim());
    if topic.is_empty() && !explanation.starts_with("**") {
        explanation.to_owned()
    } else if explanation.is_empty() {
        format!("**{topic}**")
    } else {
        format!("**{topic}** -- {explanation}")
    }
}

/// Reads a handoff file, ours or the Python Eywa's (see the module docs for what it
/// tolerates).
pub fn parse_markdown(
    text: &str,
) -> Result<(HandoffFrontmatter, HandoffSections), HandoffDocError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text.lines().collect();
    let open = lines
        .iter()
        .position(|l| !l.trim().is_empty())
        .filter(|&i| lines[i].trim_end() == "---")
        .ok_or(HandoffDocError::NoFrontmatter)?;
    let close = lines[open + 1..]
        .iter()
        .position(|l| matches!(l.trim_end(), "---" | "..."))
        .map(|i| open + 1 + i)
        .ok_or(HandoffDocError::UnclosedFrontmatter)?;
    let frontmatter = frontmatter(yaml::read_mapping(&lines[open + 1..close]))?;
    Ok((frontmatter, parse_body(&lines[close + 1..])))
}

fn frontmatter(mapping: Vec<(String, Value)>) -> Result<HandoffFrontmatter, HandoffDocError> {
    let get = |key: &str| mapping.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let scalar = |key: &str| match get(key) {
        Some(Value::Scalar(s)) => s.clone(),
        Some(Value::List(_)) | None => None,
    };
    let list = |key: &str| -> Vec<String> {
        let items = match get(key) {
            Some(Value::List(items)) => items.clone(),
            Some(Value::Scalar(s)) => s.iter().cloned().collect(),
            None => Vec::new(),
        };
        items.into_iter().filter(|i| !i.is_empty()).collect()
    };
    let session_id = scalar("session_id").ok_or(HandoffDocError::MissingField("session_id"))?;
    let date = scalar("date").ok_or(HandoffDocError::MissingField("date"))?;
    let date = parse_date(&date).ok_or(HandoffDocError::BadDate(date))?;
    let headline = scalar("headline").ok_or(HandoffDocError::MissingField("headline"))?;
    let substance = match scalar("substance") {
        None => 1,
        Some(s) => s
            .trim()
            .parse::<u8>()
            .ok()
            .filter(|n| *n <= 2)
            .ok_or(HandoffDocError::BadSubstance(s))?,
    };
    let duration = scalar("duration");
    Ok(HandoffFrontmatter {
        session_id,
        date,
        duration_minutes: duration.as_deref().and_then(parse_duration),
        duration,
        model: scalar("model"),
        headline,
        projects: list("projects"),
        keywords: list("keywords"),
        substance,
    })
}

/// `2026-02-16`, or the date of `2026-02-16T10:48:03Z` / `2026-02-16 10:48`.
pub(crate) fn parse_date(s: &str) -> Option<NaiveDate> {
    let s = s.trim();
    let date = match s.char_indices().nth(10) {
        Some((at, 'T' | 't' | ' ')) => &s[..at],
        _ => s,
    };
    NaiveDate::parse_from_str(date, "%Y-%m-%d").ok()
}

/// Minutes of a duration label: `10m`, `1h 5m`, `2h`, `1h5m`, `90 min`, a bare `10`;
/// `<1m` is 0. `None` for anything else (`unknown`).
pub(crate) fn parse_duration(s: &str) -> Option<u32> {
    let s = s.trim().to_ascii_lowercase();
    if let Some(rest) = s.strip_prefix('<') {
        return parse_duration(rest).map(|_| 0);
    }
    let mut rest = s.as_str();
    let mut total: Option<u32> = None;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return total;
        }
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let n: u32 = rest[..digits].parse().ok()?;
        rest = rest[digits..].trim_start();
        let unit_len = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "h" | "hr" | "hrs" | "hour" | "hours" => 60,
            "" | "m" | "min" | "mins" | "minute" | "minutes" => 1,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total = Some(total.unwrap_or(0).checked_add(n.checked_mul(factor)?)?);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Other,
    WhatHappened,
    Insights,
    KeyFiles,
    OpenThreads,
}

fn section_of(title: &str) -> Section {
    let title = title.trim().trim_end_matches(':').trim().to_lowercase();
    match title.as_str() {
        "what happened" => Section::WhatHappened,
        "insights" => Section::Insights,
        "key files" => Section::KeyFiles,
        "open threads" => Section::OpenThreads,
        _ => Section::Other,
    }
}

fn parse_body(lines: &[&str]) -> HandoffSections {
    let mut current = Section::Other;
    let mut items: Vec<(Section, String)> = Vec::new();
    let mut open = false;
    let mut blanks = 0;
    for line in lines {
        let line = line.trim_end();
        if line.is_empty() {
            blanks += 1;
            continue;
        }
        let indented = line.starts_with([' ', '\t']);
        let rule = bullet_text(line).is_none() && is_rule(line);
        if !indented && (line.starts_with('#') || rule) {
            if let Some(title) = line.strip_prefix("##").filter(|t| !t.starts_with('#')) {
                current = section_of(title);
            }
            open = false;
        } else if indented && open {
            let (_, text) = items.last_mut().expect("an open item");
            text.push_str(&"\n".repeat(blanks + 1));
            let dedented = line
                .strip_prefix('\t')
                .or_else(|| line.strip_prefix("  "))
                .unwrap_or(line.trim_start());
            text.push_str(dedented);
        } else if current != Section::Other {
            let line = line.trim_start();
            items.push((current, bullet_text(line).unwrap_or(line).to_owned()));
            open = true;
        }
        blanks = 0;
    }
    let mut sections = HandoffSections::default();
    for (section, text) in items {
        let text = text.trim().to_owned();
        match section {
            Section::WhatHappened => sections.what_happened.push(text),
            Section::Insights => sections.insights.push(parse_insight(&text)),
            Section::KeyFiles => sections.key_files.push(text),
            Section::OpenThreads => sections.open_threads.push(text),
            Section::Other => {}
        }
    }
    sections
}

/// A markdown thematic break: `---`, `***`, `___`.
fn is_rule(line: &str) -> bool {
    let t: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    t.len() >= 3 && ['-', '*', '_'].iter().any(|&m| t.chars().all(|c| c == m))
}

/// The text of a `- `, `* `, `+ ` or `1. ` bullet line.
fn bullet_text(line: &str) -> Option<&str> {
    if matches!(line, "-" | "*" | "+") {
        return Some("");
    }
    if let Some(rest) = line.strip_prefix(['-', '*', '+']) {
        return rest.starts_with([' ', '\t']).then(|| rest.trim_start());
    }
    let digits = line.find(|c: char| !c.is_ascii_digit())?;
    let rest = line[digits..].strip_prefix(['.', ')'])?;
    (digits > 0 && rest.starts_with([' ', '\t'])).then(|| rest.trim_start())
}

/// `**Topic** -- explanation`, also `**Topic**: explanation` and `**Topic:** explanation`;
/// without a bold topic, the whole text is the explanation.
fn parse_insight(text: &str) -> (String, String) {
    let Some(body) = text.strip_prefix("**") else {
        return (String::new(), text.to_owned());
    };
    if let Some(at) = body.find("** -- ") {
        return (body[..at].to_owned(), body[at + 6..].trim().to_owned());
    }
    let Some(at) = body.find("**") else {
        return (String::new(), text.to_owned());
    };
    let rest = body[at + 2..].trim_start();
    let explanation = ["--", "—", "–", ":", "-"]
        .iter()
        .find_map(|sep| rest.strip_prefix(sep))
        .unwrap_or(rest)
        .trim();
    let topic = &body[..at];
    let topic = if explanation.is_empty() {
        topic
    } else {
        topic.trim_end_matches(':')
    };
    (topic.trim().to_owned(), explanation.to_owned())
}

/// Where seed 000 keeps a handoff: `<root>/handoffs/YYYY/MM/DD/<short_id>.md`. Path
/// separators in the short id become `_`, so the file stays inside its day folder.
pub fn handoff_path(root: &Path, handoff: &Handoff) -> PathBuf {
    let d = handoff.date;
    let mut stem: String = handoff
        .short_id
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\') || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    if stem.is_empty() || stem.chars().all(|c| c == '.') {
        stem = stem.replace('.', "_") + "_";
    }
    root.join("handoffs")
        .join(format!("{:04}", d.year()))
        .join(format!("{:02}", d.month()))
        .join(format!("{:02}", d.day()))
        .join(format!("{stem}.md"))
}
