//! `schemas/handoff_schema.json` (seed 000's "full schema") describes the handoff files
//! eywa writes: every handoff of the shared corpus, and of sessions built here, read back
//! from its markdown and checked against the schema.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::support::fixture::{ClaudeHome, days_ago};

const SCHEMA: &str = include_str!("../schemas/handoff_schema.json");

/// A handoff file as the schema reads it: frontmatter, title, sections of bullets.
fn read_handoff(text: &str) -> Value {
    let rest = text.strip_prefix("---\n").expect("frontmatter first");
    let (front, body) = rest.split_once("\n---\n").expect("frontmatter closed");
    let mut frontmatter = Map::new();
    for line in front.lines() {
        let (key, value) = line.split_once(": ").expect("key: value");
        let value = match key {
            "substance" => json!(value.parse::<u64>().expect("a number")),
            "projects" | "keywords" => {
                Value::Array(flow_list(value).into_iter().map(Value::String).collect())
            }
            _ => Value::String(scalar(value)),
        };
        frontmatter.insert(key.to_owned(), value);
    }
    let mut title = String::new();
    let mut sections: Map<String, Value> = Map::new();
    let mut current: Option<String> = None;
    for line in body.lines() {
        if let Some(t) = line.strip_prefix("# ") {
            title = t.to_owned();
        } else if let Some(name) = line.strip_prefix("## ") {
            sections.insert(name.to_owned(), json!([]));
            current = Some(name.to_owned());
        } else if let (Some(item), Some(name)) = (line.strip_prefix("- "), &current) {
            sections[name].as_array_mut().unwrap().push(json!(item));
        }
    }
    json!({"frontmatter": frontmatter, "title": title, "sections": sections})
}

/// A YAML scalar as eywa writes one: plain, or double-quoted with JSON's escapes.
fn scalar(value: &str) -> String {
    if value.starts_with('"') {
        serde_json::from_str(value).expect("a double-quoted scalar")
    } else {
        value.to_owned()
    }
}

/// `[a, "b, c", d]`.
fn flow_list(value: &str) -> Vec<String> {
    let inner = value
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .expect("a flow list");
    let mut out = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let (item, after) = if rest.starts_with('"') {
            // The closing quote: the first one not escaped.
            let bytes = rest.as_bytes();
            let mut end = 1;
            while bytes[end] != b'"' {
                end += if bytes[end] == b'\\' { 2 } else { 1 };
            }
            (scalar(&rest[..=end]), &rest[end + 1..])
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            (rest[..end].trim().to_owned(), &rest[end..])
        };
        out.push(item);
        rest = after.trim_start_matches(',').trim_start();
    }
    out
}

/// Where `value` breaks `schema` (the keywords the handoff schema uses), by JSON path.
fn violations(schema: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    let fail = |out: &mut Vec<String>, why: String| out.push(format!("{at}: {why}"));
    if let Some(kind) = schema["type"].as_str() {
        let fits = match kind {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => value.is_u64() || value.is_i64(),
            other => panic!("the schema uses type {other}"),
        };
        if !fits {
            return fail(out, format!("not {kind}: {value}"));
        }
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(value)
    {
        fail(out, format!("{value} is not one of {allowed:?}"));
    }
    if let Some(text) = value.as_str() {
        if let Some(min) = schema["minLength"].as_u64()
            && (text.chars().count() as u64) < min
        {
            fail(out, format!("shorter than {min}"));
        }
        if let Some(pattern) = schema["pattern"].as_str()
            && !regex::Regex::new(pattern).unwrap().is_match(text)
        {
            fail(out, format!("{text:?} does not match {pattern}"));
        }
    }
    if let Some(items) = value.as_array() {
        if let Some(min) = schema["minItems"].as_u64()
            && (items.len() as u64) < min
        {
            fail(out, format!("fewer than {min} items"));
        }
        if let Some(max) = schema["maxItems"].as_u64()
            && items.len() as u64 > max
        {
            fail(out, format!("more than {max} items"));
        }
        for (i, item) in items.iter().enumerate() {
            violations(&schema["items"], item, &format!("{at}[{i}]"), out);
        }
    }
    if let Some(fields) = value.as_object() {
        for key in schema["required"].as_array().into_iter().flatten() {
            if !fields.contains_key(key.as_str().unwrap()) {
                fail(out, format!("{key} is missing"));
            }
        }
        for (key, field) in fields {
            match schema["properties"].get(key) {
                Some(inner) => violations(inner, field, &format!("{at}.{key}"), out),
                None if schema["additionalProperties"] == false => {
                    fail(out, format!("{key} is not in the schema"));
                }
                None => {}
            }
        }
    }
}

fn handoff_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            handoff_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// Ingests `claude` into `data` with the CLI; every handoff file checked: how many.
fn check_all(claude: &Path, data: &Path) -> usize {
    let out = crate::support::eywa_command(data, claude)
        .arg("ingest")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let mut files = Vec::new();
    handoff_files(&data.join("handoffs"), &mut files);
    let mut problems = Vec::new();
    for file in &files {
        let handoff = read_handoff(&std::fs::read_to_string(file).unwrap());
        let mut found = Vec::new();
        violations(&schema, &handoff, "$", &mut found);
        problems.extend(
            found
                .into_iter()
                .map(|p| format!("{}: {p}", file.display())),
        );
    }
    assert!(problems.is_empty(), "{problems:#?}");
    files.len()
}

#[test]
fn the_schema_holds_for_every_handoff_of_the_corpus() {
    let Some(real) = crate::support::shared("corpus/claude-code/real_projects") else {
        return;
    };
    let home = crate::support::corpus_home(&real);
    let data = tempfile::tempdir().unwrap();
    assert!(check_all(home.path(), data.path()) >= 15);
}

#[test]
fn the_schema_holds_for_copies_quoted_headlines_and_empty_sessions() {
    let home = ClaudeHome::new();
    let id = "e31c0000-0000-4000-8000-000000000001";
    home.session(
        id,
        "/w/app",
        days_ago(1),
        &[
            (
                "Fix the \"quoted\" parser: keep, commas",
                "Fixed: commas, quotes.",
            ),
            ("Now add tests for the quoted parser", "Added."),
        ],
    );
    let copy = home.root().join("projects/-x-copy");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(
        home.root().join(format!("projects/-w-app/{id}.jsonl")),
        copy.join(format!("{id}.jsonl")),
    )
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    assert_eq!(
        check_all(home.root(), data.path()),
        2,
        "the copy has its own file"
    );
    // The schema refuses what is not a handoff.
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let mut found = Vec::new();
    let bad = json!({"frontmatter": {"session_id": "a/b", "date": "yesterday", "headline": "",
                     "projects": [], "keywords": [], "substance": 3}, "title": "t",
                     "sections": {"Notes": []}});
    violations(&schema, &bad, "$", &mut found);
    assert_eq!(found.len(), 5, "{found:#?}");
}
