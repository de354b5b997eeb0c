//! Snapshots of every kind of page the web view serves, rendered from the real transcripts
//! in `../shared/corpus/claude-code` on a fixed clock: the projects, each project, the
//! sessions with the most messages, with subagents and with the fewest, a search, a node,
//! the SessionStart context, the stats, the memories and the documents.
//!
//! A snapshot holds a page's shape, not its words: each element on a line of its own,
//! indented by depth, with its classes, role and the names of its other attributes; each
//! text and attribute value as a digest and its length. No transcript's text is copied
//! into the repo, and a change to what a page shows or to how it shows it changes the
//! snapshot. `EYWA_UPDATE_SNAPSHOTS=1 cargo test web_snapshots` writes them anew: review
//! the diff before committing it.

use std::path::PathBuf;
use std::sync::Arc;

use eywa::engine::{Engine, EngineConfig};
use eywa::model::{Clock, Timestamp};
use sha2::Digest;

use crate::support::http::{self, csrf};
use crate::support::server::TestServer;

/// Attributes whose values are kept as written: they say how a page is built, not what
/// a transcript said.
const KEPT: [&str; 9] = [
    "class", "role", "type", "name", "rel", "method", "lang", "charset", "open",
];
/// Elements that have no end tag.
const VOID: [&str; 6] = ["meta", "link", "input", "br", "img", "hr"];

/// `html` as its shape (see the module's comment). With `numbers_masked`, every digit of
/// a text is read as 0 first (counts and sizes that differ from run to run).
fn skeleton(html: &str, numbers_masked: bool) -> String {
    let digest = |text: &str| {
        let text: String = if numbers_masked {
            text.chars()
                .map(|c| if c.is_ascii_digit() { '0' } else { c })
                .collect()
        } else {
            text.to_owned()
        };
        let hash = sha2::Sha256::digest(text.as_bytes());
        let hex: String = hash[..4].iter().map(|b| format!("{b:02x}")).collect();
        format!("#{hex}/{}", text.chars().count())
    };
    let mut out = String::new();
    let mut depth = 0usize;
    let mut rest = html;
    while !rest.is_empty() {
        let (text, tag) = match rest.find('<') {
            Some(at) => (&rest[..at], Some(&rest[at..])),
            None => (rest, None),
        };
        let text = text.trim();
        if !text.is_empty() {
            out.push(' ');
            out.push_str(&digest(text));
        }
        let Some(tag) = tag else { break };
        let end = tag.find('>').expect("a tag ends");
        let inner = &tag[1..end];
        rest = &tag[end + 1..];
        if inner.starts_with('!') {
            continue;
        }
        if inner.starts_with('/') {
            depth = depth.saturating_sub(1);
            continue;
        }
        let (name, attributes) = inner.split_once(' ').unwrap_or((inner, ""));
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
        out.push('<');
        out.push_str(name);
        for (attribute, value) in attributes_of(attributes) {
            out.push(' ');
            out.push_str(attribute);
            match value {
                Some(v) if KEPT.contains(&attribute) => out.push_str(&format!("=\"{v}\"")),
                Some(v) => out.push_str(&format!("={}", digest(v))),
                None => {}
            }
        }
        out.push('>');
        if !VOID.contains(&name) {
            depth += 1;
        }
    }
    out.push('\n');
    out
}

/// `name="value"` pairs and bare names, in order (maud writes `"` in a value as `&quot;`).
fn attributes_of(mut rest: &str) -> Vec<(&str, Option<&str>)> {
    let mut out = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return out;
        }
        let name_end = rest.find(['=', ' ']).unwrap_or(rest.len());
        let name = &rest[..name_end];
        rest = &rest[name_end..];
        if let Some(quoted) = rest.strip_prefix("=\"") {
            let close = quoted.find('"').expect("a value ends");
            out.push((name, Some(&quoted[..close])));
            rest = &quoted[close + 1..];
        } else {
            out.push((name, None));
        }
    }
}

/// The page at `path` as its shape: the form token, which is new with each server, and
/// the folder the corpus was copied to read alike on every run.
fn shape(server: &TestServer, path: &str, home: &str, numbers_masked: bool) -> String {
    let reply = http::get(server.addr, path);
    assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    let mut body = reply.body.replace(home, "/HOME");
    if body.contains(r#"name="csrf""#) {
        body = body.replace(&csrf(&body), "CSRF");
    }
    skeleton(&body, numbers_masked)
}

#[test]
fn every_kind_of_page_keeps_its_shape_on_the_real_corpus() {
    let Some(real) = crate::support::shared("corpus/claude-code/real_projects") else {
        return;
    };
    let home = crate::support::corpus_home(&real);
    // A fixed author: the pages say who wrote each session.
    let engine = Engine::open(EngineConfig {
        identity: eywa::model::Identity::new("ana", "laptop").unwrap(),
        ..EngineConfig::temporary(home.path())
    })
    .unwrap();
    engine.ingest().unwrap();
    let listed = engine.list_sessions(None, 1_000, 0).unwrap().sessions;
    assert!(listed.len() >= 3, "the corpus has sessions");
    let by_messages = |a: &&eywa::engine::SessionSummary, b: &&eywa::engine::SessionSummary| {
        a.message_count
            .cmp(&b.message_count)
            .then_with(|| a.session_id.cmp(&b.session_id))
    };
    let most = listed.iter().max_by(by_messages).unwrap();
    let fewest = listed
        .iter()
        .filter(|s| s.message_count > 0)
        .min_by(by_messages)
        .unwrap();
    let with_agents = listed
        .iter()
        .filter(|s| !s.agent_ids.is_empty())
        .min_by(|a, b| a.session_id.cmp(&b.session_id))
        .expect("a session with subagents");
    let project = &most.project;
    let clock = Clock::manual(Timestamp::parse("2026-06-01T12:00:00Z").unwrap());
    let server = TestServer::start_web(Arc::new(engine), clock, &[]);
    let at = |s: &str| s.replace(' ', "%20");
    let pages: Vec<(&str, String, bool)> = vec![
        ("projects", "/".to_owned(), false),
        ("project", format!("/projects/{}", at(project)), false),
        (
            "session-most",
            format!("/sessions/{}", most.session_id),
            false,
        ),
        (
            "session-agents",
            format!("/sessions/{}", with_agents.session_id),
            false,
        ),
        (
            "session-fewest",
            format!("/sessions/{}", fewest.session_id),
            false,
        ),
        ("search", "/search?q=test&mode=lexical".to_owned(), false),
        ("node", format!("/nodes/project:{}", at(project)), false),
        (
            "context",
            format!("/context?project={}", at(project)),
            false,
        ),
        ("stats", "/stats".to_owned(), true),
        ("memories", "/memories".to_owned(), false),
        ("documents", "/documents".to_owned(), false),
    ];
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/web");
    let update = std::env::var_os("EYWA_UPDATE_SNAPSHOTS").is_some();
    let home = home.path().display().to_string();
    let mut changed = Vec::new();
    for (name, path, masked) in &pages {
        let now = shape(&server, path, &home, *masked);
        // The same page asked again has the same shape.
        assert_eq!(now, shape(&server, path, &home, *masked), "{path}");
        let file = dir.join(format!("{name}.txt"));
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&file, &now).unwrap();
            continue;
        }
        let kept = std::fs::read_to_string(&file).unwrap_or_default();
        if kept != now {
            let line = kept
                .lines()
                .zip(now.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| kept.lines().count().min(now.lines().count()));
            changed.push(format!(
                "{name} ({path}) differs from line {}: was {:?}, is {:?}",
                line + 1,
                kept.lines().nth(line),
                now.lines().nth(line)
            ));
        }
    }
    assert!(
        changed.is_empty(),
        "pages changed shape; if meant, run with EYWA_UPDATE_SNAPSHOTS=1 and review the \
         diff of tests/snapshots/web:\n{}",
        changed.join("\n")
    );
}

#[test]
fn a_shape_keeps_structure_and_digests_words() {
    let shape = skeleton(
        r#"<!DOCTYPE html><html lang="en"><body><p class="lead">Hi <b>you</b></p><br><a href="/s/1" download>x</a></body></html>"#,
        false,
    );
    assert_eq!(
        shape,
        "\n<html lang=\"en\">\n  <body>\n    <p class=\"lead\"> #3639efcd/2\n      <b> #bb0347a4/3\n    <br>\n    <a href=#03345b7d/4 download> #2d711642/1\n"
    );
    assert_eq!(
        skeleton("<td>1,204</td>", true),
        skeleton("<td>9,999</td>", true)
    );
}
