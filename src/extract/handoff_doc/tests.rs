use std::path::Path;

use chrono::NaiveDate;

use super::*;
use crate::model::{NodeId, Timestamp};

pub(super) fn date(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

pub(super) fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(std::string::ToString::to_string).collect()
}

/// Seed 000's example session.
pub(super) fn seed_handoff() -> Handoff {
    let session_id = "8735508d-1111-2222-3333-444455556666";
    Handoff {
        session_id: session_id.into(),
        short_id: "8735508d".into(),
        episode: NodeId::episode(session_id),
        date: date("2026-02-16"),
        started_at: Timestamp::parse("2026-02-16T08:30:00Z").unwrap(),
        duration_minutes: Some(10),
        model: Some("claude-opus-4-6".into()),
        headline: "Generated day plan for 2026-02-16".into(),
        projects: strings(&["pratchett-os", "sorbent"]),
        keywords: strings(&[
            "day-plan",
            "sorbent-commercial",
            "coordinator-background-job",
        ]),
        substance: 1,
        cwd: "/home/u/pratchett-os".into(),
        sections: Default::default(),
        user: "ana".into(),
        machine: "laptop".into(),
    }
}

fn seed_sections() -> HandoffSections {
    HandoffSections {
        what_happened: strings(&[
            "Read yesterday's notes and the calendar",
            "Wrote the plan to `plans/2026-02-16.md`",
        ]),
        insights: vec![(
            "Background jobs".into(),
            "the coordinator runs them after the plan is written".into(),
        )],
        key_files: strings(&["plans/2026-02-16.md"]),
        open_threads: strings(&["Confirm the sorbent call time"]),
    }
}

pub(super) fn handoff(short_id: &str, day: &str, started: &str) -> Handoff {
    let mut h = seed_handoff();
    h.session_id = format!("{short_id}-{started}");
    h.short_id = short_id.into();
    h.date = date(day);
    h.started_at = Timestamp::parse(started).unwrap();
    h
}

const SEED_FRONTMATTER: &str = "---
session_id: 8735508d
date: 2026-02-16
duration: 10m
model: claude-opus-4-6
headline: Generated day plan for 2026-02-16
projects: [pratchett-os, sorbent]
keywords: [day-plan, sorbent-commercial, coordinator-background-job]
substance: 1
---
";

#[test]
fn renders_seed_example_exactly() {
    let expected = format!(
        "{SEED_FRONTMATTER}
# Generated day plan for 2026-02-16

## What Happened

- Read yesterday's notes and the calendar
- Wrote the plan to `plans/2026-02-16.md`

## Insights

- **Background jobs** -- the coordinator runs them after the plan is written

## Open Threads

- Confirm the sorbent call time
"
    );
    // Key Files are for substance 2 only.
    assert_eq!(render_markdown(&seed_handoff(), &seed_sections()), expected);
}

#[test]
fn renders_key_files_for_substance_two_and_skips_empty_sections() {
    let mut h = seed_handoff();
    h.substance = 2;
    let mut s = seed_sections();
    s.insights.clear();
    s.open_threads.clear();
    s.what_happened.clear();
    let text = render_markdown(&h, &s);
    let body = text.split("---\n\n").nth(1).unwrap();
    assert_eq!(
        body,
        "# Generated day plan for 2026-02-16

## What Happened

## Key Files

- plans/2026-02-16.md
"
    );
}

#[test]
fn renders_substance_zero_without_sections() {
    let mut h = seed_handoff();
    h.substance = 0;
    h.duration_minutes = None;
    h.model = None;
    let text = render_markdown(&h, &seed_sections());
    assert_eq!(
        text,
        "---
session_id: 8735508d
date: 2026-02-16
headline: Generated day plan for 2026-02-16
projects: [pratchett-os, sorbent]
keywords: [day-plan, sorbent-commercial, coordinator-background-job]
substance: 0
---

# Generated day plan for 2026-02-16

No meaningful work.
"
    );
}

#[test]
fn quotes_unsafe_yaml_scalars() {
    let mut h = seed_handoff();
    h.short_id = "12345678".into();
    h.headline = "Fix: the \"parser\" # 2".into();
    h.model = Some("anthropic/claude:beta".into());
    h.projects = strings(&["a, b", "[x]", "plain", "-flag", "yes", "ünï"]);
    h.keywords = Vec::new();
    let text = render_markdown(&h, &HandoffSections::default());
    let frontmatter: Vec<&str> = text.lines().take(10).collect();
    assert_eq!(
        frontmatter,
        [
            "---",
            "session_id: \"12345678\"",
            "date: 2026-02-16",
            "duration: 10m",
            "model: \"anthropic/claude:beta\"",
            "headline: \"Fix: the \\\"parser\\\" # 2\"",
            "projects: [\"a, b\", \"[x]\", plain, \"-flag\", \"yes\", ünï]",
            "keywords: []",
            "substance: 1",
            "---",
        ]
    );
    for unsafe_scalar in [
        "", " pad", "tab\tin", "[x", "&a", "!t", "%p", "@a", "null", "1e5",
    ] {
        assert!(
            yaml::scalar(unsafe_scalar).starts_with('"'),
            "{unsafe_scalar:?}"
        );
    }
    assert_eq!(yaml::scalar("a\nb\\c"), "\"a\\nb\\\\c\"");
    assert_eq!(yaml::scalar("day-plan"), "day-plan");
}

fn round_trip(h: &Handoff, s: &HandoffSections) {
    let text = render_markdown(h, s);
    let (fm, sections) = parse_markdown(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(fm, HandoffFrontmatter::from(h), "{text}");
    let mut expected = s.clone();
    if h.substance == 0 {
        expected = HandoffSections::default();
    } else if h.substance == 1 {
        expected.key_files.clear();
    }
    assert_eq!(sections, expected, "{text}");
}

#[test]
fn round_trips_awkward_strings() {
    let mut h = seed_handoff();
    h.short_id = "0000e123".into();
    h.headline = "Fix: \"quoted\" 'single' # not a comment, [brackets] {braces} \\ back".into();
    h.model = Some(String::new());
    h.projects = strings(&[
        "pratchett-os",
        "with, comma",
        "ünïcödé 日本",
        " padded ",
        "null",
    ]);
    h.keywords = strings(&["a:b", "it's", "\"dq\"", "*star", "~", "true", "2026-02-16"]);
    h.duration_minutes = Some(125);
    let sections = HandoffSections {
        what_happened: strings(&[
            "Plain: with colon",
            "Two lines\n  indented more\n\nafter a blank",
            "- starts with a dash",
            "## not a heading",
            "",
            "ünïcödé — dash",
        ]),
        insights: vec![
            ("Topic: colon".into(), "explanation -- with dashes".into()),
            (String::new(), "no topic".into()),
            (String::new(), "**bold** start".into()),
            ("Only topic".into(), String::new()),
            ("a*".into(), "star topic".into()),
            ("multi\nline".into(), "explained\nover lines".into()),
        ],
        key_files: strings(&["src/a.rs", "docs/b c.md"]),
        open_threads: strings(&["1. numbered text", "* star text", "---"]),
    };
    for substance in [0, 1, 2] {
        h.substance = substance;
        round_trip(&h, &sections);
    }
}

#[test]
fn round_trips_empty_and_unknown_fields() {
    let mut h = seed_handoff();
    h.projects.clear();
    h.keywords.clear();
    h.model = None;
    h.duration_minutes = None;
    h.headline = String::new();
    for substance in [0, 1, 2] {
        h.substance = substance;
        round_trip(&h, &HandoffSections::default());
        round_trip(&h, &seed_sections());
    }
    for minutes in [0, 59, 60, 61, 600] {
        h.duration_minutes = Some(minutes);
        round_trip(&h, &seed_sections());
    }
}

const PYTHON_STYLE: &str = "\u{feff}---
session_id: '00123456'
date: 2026-01-08
duration: 1h 5m
model: claude-sonnet-4-5   # comment
headline: 'Fixed the tokenizer: it''s done'
projects:
- eywa
- \"side project\"
keywords:
  - tokenizer
  - unicode # trailing comment
extracted_at: 2026-01-08T12:00:00
tags: {a: 1}
meta:
  nested: value
substance: 2
---

# Fixed the tokenizer: it's done

## What Happened
1. Found the bug
2. Fixed it
   across two files

## Insights
- **Unicode**: graphemes differ from chars
- **Tests:** add property tests
- plain insight

## Key Files
src/tokenizer.rs
- `src/lib.rs`

## Open Threads
* Release 0.2

## Notes
- ignored
";

#[test]
fn parses_python_eywa_file_with_block_lists_and_unknown_keys() {
    let (fm, s) = parse_markdown(PYTHON_STYLE).unwrap();
    assert_eq!(
        fm,
        HandoffFrontmatter {
            session_id: "00123456".into(),
            date: date("2026-01-08"),
            duration: Some("1h 5m".into()),
            duration_minutes: Some(65),
            model: Some("claude-sonnet-4-5".into()),
            headline: "Fixed the tokenizer: it's done".into(),
            projects: strings(&["eywa", "side project"]),
            keywords: strings(&["tokenizer", "unicode"]),
            substance: 2,
        }
    );
    assert_eq!(
        s,
        HandoffSections {
            what_happened: strings(&["Found the bug", "Fixed it\n across two files"]),
            insights: vec![
                ("Unicode".into(), "graphemes differ from chars".into()),
                ("Tests".into(), "add property tests".into()),
                (String::new(), "plain insight".into()),
            ],
            key_files: strings(&["src/tokenizer.rs", "`src/lib.rs`"]),
            open_threads: strings(&["Release 0.2"]),
        }
    );
}

#[test]
fn parses_folded_scalars_and_wrapped_flow_lists() {
    let text = "---
session_id: abcdef12
date: \"2026-01-09T10:00:00Z\"
headline: Investigated why the nightly batch job keeps failing on large
  transcript files
model: \"claude-\\
  opus\"
keywords: [one, 'two, three',
  four]
projects: solo
---
No meaningful work.
";
    let (fm, s) = parse_markdown(text).unwrap();
    assert_eq!(fm.date, date("2026-01-09"));
    assert_eq!(
        fm.headline,
        "Investigated why the nightly batch job keeps failing on large transcript files"
    );
    assert_eq!(fm.model.as_deref(), Some("claude-opus"));
    assert_eq!(fm.keywords, strings(&["one", "two, three", "four"]));
    assert_eq!(fm.projects, strings(&["solo"]));
    assert_eq!(
        (fm.substance, fm.duration, fm.duration_minutes),
        (1, None, None)
    );
    assert_eq!(s, HandoffSections::default());
}

#[test]
fn parses_duration_labels() {
    let cases = [
        ("10m", Some(10)),
        ("1h 5m", Some(65)),
        ("1h5m", Some(65)),
        ("2h", Some(120)),
        ("<1m", Some(0)),
        ("90 min", Some(90)),
        ("45", Some(45)),
        ("unknown", None),
        ("", None),
        ("5 days", None),
    ];
    for (label, minutes) in cases {
        assert_eq!(parse_duration(label), minutes, "{label:?}");
    }
}

#[test]
fn rejects_broken_frontmatter() {
    let base = "---\nsession_id: abc\ndate: 2026-01-08\nheadline: h\nsubstance: 1\n---\n";
    assert!(parse_markdown(base).is_ok());
    let cases = [
        ("# no frontmatter\n", HandoffDocError::NoFrontmatter),
        (
            "---\nsession_id: abc\n",
            HandoffDocError::UnclosedFrontmatter,
        ),
        (
            "---\ndate: 2026-01-08\nheadline: h\n---\n",
            HandoffDocError::MissingField("session_id"),
        ),
        (
            "---\nsession_id: abc\nheadline: h\n---\n",
            HandoffDocError::MissingField("date"),
        ),
        (
            "---\nsession_id: abc\ndate: 2026-01-08\nheadline: ~\n---\n",
            HandoffDocError::MissingField("headline"),
        ),
        (
            "---\nsession_id: abc\ndate: 2026-13-40\nheadline: h\n---\n",
            HandoffDocError::BadDate("2026-13-40".into()),
        ),
        (
            &base.replace("substance: 1", "substance: 3"),
            HandoffDocError::BadSubstance("3".into()),
        ),
        (
            &base.replace("substance: 1", "substance: lots"),
            HandoffDocError::BadSubstance("lots".into()),
        ),
    ];
    for (text, expected) in cases {
        let error = parse_markdown(text).unwrap_err();
        assert_eq!(error, expected, "{text}");
        let message = error.to_string();
        assert!(message.starts_with(char::is_lowercase), "{message}");
        assert!(!message.ends_with('.'), "{message}");
    }
    assert_eq!(
        HandoffDocError::MissingField("date").to_string(),
        "frontmatter has no date"
    );
}

#[test]
fn handoff_path_follows_seed_layout() {
    let root = Path::new("/data/eywa");
    assert_eq!(
        handoff_path(root, &seed_handoff()),
        Path::new("/data/eywa/handoffs/2026/02/16/8735508d.md")
    );
    let mut h = handoff("../x", "2026-01-08", "2026-01-08T00:00:00Z");
    assert_eq!(
        handoff_path(root, &h),
        Path::new("/data/eywa/handoffs/2026/01/08/.._x.md")
    );
    h.short_id = "..".into();
    assert_eq!(
        handoff_path(root, &h),
        Path::new("/data/eywa/handoffs/2026/01/08/___.md")
    );
}

#[test]
fn reads_block_scalars_and_comments() {
    let lines = [
        "# a comment line",
        "a: |",
        "  first",
        "  second",
        "b: >-",
        "  folded",
        "  together",
        "",
        "c: plain # comment",
        "d:",
        "e: [x, \"y\\u00e9\"] # after",
    ];
    let mapping = yaml::read_mapping(&lines);
    let scalar = |s: &str| yaml::Value::Scalar(Some(s.to_owned()));
    assert_eq!(
        mapping,
        [
            ("a".to_owned(), scalar("first\nsecond")),
            ("b".to_owned(), scalar("folded together")),
            ("c".to_owned(), scalar("plain")),
            ("d".to_owned(), yaml::Value::Scalar(None)),
            ("e".to_owned(), yaml::Value::List(strings(&["x", "yé"]))),
        ]
    );
}
