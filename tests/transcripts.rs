//! What transcripts say about order and identity: compaction segments (Q8), resumed files
//! that replay their predecessor's lines (Q9), `summary` labels naming messages in other
//! files (Q5), `sessions-index.json` titles (Q6) and project memory files.

use std::path::Path;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use eywa::claude::MessageKind;
use eywa::engine::{Engine, EngineConfig};
use eywa::graph::{Direction, EdgeFilter};
use eywa::model::{NodeId, Relation};
use serde_json::{Value, json};

use crate::support::fixture::{ClaudeHome, days_ago, session_lines};

fn at(start: DateTime<Utc>, seconds: i64) -> String {
    (start + chrono::Duration::seconds(seconds)).to_rfc3339()
}

fn user(uuid: &str, parent: Option<&str>, ts: String, text: &str) -> Value {
    json!({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "s",
           "cwd": "/w/cache", "timestamp": ts, "version": "2.1.132",
           "message": {"role": "user", "content": text}})
}

fn assistant(uuid: &str, parent: &str, ts: String, text: &str) -> Value {
    json!({"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": "s",
           "cwd": "/w/cache", "timestamp": ts,
           "message": {"id": format!("msg_{uuid}"), "role": "assistant", "model": "claude-opus-4-7",
                       "content": [{"type": "text", "text": text}]}})
}

/// The compaction pair as Claude Code 2.1.x writes it (Q8): a `compact_boundary` that
/// starts a new root and names its logical parent, then the `isCompactSummary` user line.
fn compaction(
    boundary: &str,
    logical_parent: &str,
    ts: String,
    trigger: &str,
    summary_uuid: &str,
    summary: &str,
) -> [Value; 2] {
    [
        json!({"type": "system", "subtype": "compact_boundary", "uuid": boundary,
               "parentUuid": null, "logicalParentUuid": logical_parent, "sessionId": "s",
               "cwd": "/w/cache", "timestamp": ts.clone(), "isMeta": false,
               "content": "Conversation compacted",
               "compactMetadata": {"trigger": trigger, "preTokens": 155_000,
                                   "postTokens": 9_000, "durationMs": 41_000,
                                   "preservedSegment": {"headUuid": logical_parent}}}),
        json!({"type": "user", "uuid": summary_uuid, "parentUuid": boundary, "sessionId": "s",
               "cwd": "/w/cache", "timestamp": ts, "isCompactSummary": true,
               "isVisibleInTranscriptOnly": true,
               "message": {"role": "user", "content": summary}}),
    ]
}

const AUTO_SUMMARY: &str = "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n1. Primary Request and Intent: build an LRU cache layer for the API.";
const MANUAL_SUMMARY: &str = "This session is being continued from a previous conversation. Summary: eviction is in place; metrics remain.";

fn write_lines(home: &ClaudeHome, dir: &str, name: &str, lines: &[Value]) -> std::path::PathBuf {
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    home.write_raw(dir, name, &(text.join("\n") + "\n"))
}

fn set_age(path: &Path, minutes_ago: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(minutes_ago * 60))
        .unwrap();
}

#[test]
fn compaction_starts_segments_and_keeps_the_summary() {
    let home = ClaudeHome::new();
    let id = "c0000000-0000-4000-8000-000000000001";
    let t = days_ago(1);
    let [b1, s1] = compaction("b1", "a1", at(t, 600), "auto", "s1", AUTO_SUMMARY);
    let [b2, s2] = compaction("b2", "a2", at(t, 1200), "manual", "s2", MANUAL_SUMMARY);
    // File order is not conversation order: the second exchange is written before the
    // first compaction, and the manual /compact is a detached side branch off a2 that the
    // conversation does not continue from.
    let lines = [
        user("u1", None, at(t, 0), "Build the cache layer for the API"),
        assistant("a1", "u1", at(t, 60), "Built the LRU cache."),
        user("u2", Some("s1"), at(t, 700), "Now add eviction by size"),
        b1,
        s1,
        assistant("a2", "u2", at(t, 760), "Eviction by size is in."),
        b2,
        s2,
        user("u3", Some("a2"), at(t, 1300), "Add hit-rate metrics"),
        assistant("a3", "u3", at(t, 1360), "Metrics added."),
    ];
    write_lines(&home, "-w-cache", &format!("{id}.jsonl"), &lines);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();

    let node = engine.graph().node(NodeId::episode(id)).unwrap().unwrap();
    let e = node.episode().unwrap();
    // Two compactions: three segments, each summary kept whole.
    assert_eq!(e.compactions.len(), 2);
    let triggers: Vec<_> = e.compactions.iter().map(|c| c.trigger.as_deref()).collect();
    assert_eq!(triggers, [Some("auto"), Some("manual")]);
    assert_eq!(e.compactions[0].pre_tokens, Some(155_000));
    assert_eq!(e.compactions[0].summary.as_deref(), Some(AUTO_SUMMARY));
    assert_eq!(e.compactions[1].summary.as_deref(), Some(MANUAL_SUMMARY));
    // A compact summary is not a prompt, and never the title.
    assert_eq!(e.prompts, 3);
    assert_eq!(e.title, "Build the cache layer for the API");

    // Messages follow the chain: each summary sits where its compaction happened.
    let session = engine.session(id).unwrap();
    let got: Vec<(MessageKind, &str)> = session
        .messages
        .iter()
        .map(|m| (m.kind, m.uuid.as_deref().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            (MessageKind::Prompt, "u1"),
            (MessageKind::Response, "a1"),
            (MessageKind::CompactSummary, "s1"),
            (MessageKind::Prompt, "u2"),
            (MessageKind::Response, "a2"),
            (MessageKind::CompactSummary, "s2"),
            (MessageKind::Prompt, "u3"),
            (MessageKind::Response, "a3"),
        ]
    );
    assert_eq!(session.messages[2].text, AUTO_SUMMARY);
}

#[test]
fn a_resumed_session_does_not_count_the_lines_it_replays() {
    let home = ClaudeHome::new();
    let first = "d0000000-0000-4000-8000-000000000001";
    let resumed = "d0000000-0000-4000-8000-000000000002";
    let t = days_ago(2);
    let original = session_lines(
        first,
        "/w/cache",
        t,
        &[("Design the cache", "Designed."), ("Add tests", "Added.")],
    );
    let a = home.write_raw(
        "-w-cache",
        &format!("{first}.jsonl"),
        &(original.join("\n") + "\n"),
    );
    // The resume replays every earlier line, same uuids, then goes on.
    let mut lines = original.clone();
    let go_on = session_lines(
        resumed,
        "/w/cache",
        t + chrono::Duration::hours(3),
        &[("Continue with the eviction policy", "Done.")],
    );
    lines.extend(go_on.iter().map(|l| {
        l.replace(
            "\"parentUuid\":null",
            &format!("\"parentUuid\":\"{first}-a1\""),
        )
    }));
    let b = home.write_raw(
        "-w-cache",
        &format!("{resumed}.jsonl"),
        &(lines.join("\n") + "\n"),
    );
    // Whatever the names say, the older file is read first.
    set_age(&a, 120);
    set_age(&b, 10);

    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    let report = engine.ingest().unwrap();
    assert_eq!(report.counts.sessions, 2);
    let node = engine
        .graph()
        .node(NodeId::episode(resumed))
        .unwrap()
        .unwrap();
    let e = node.episode().unwrap();
    assert_eq!(e.prompts, 1, "only its own prompt");
    assert_eq!(e.tool_calls, 1, "only its own tool call");
    assert_eq!(e.title, "Continue with the eviction policy");
    assert_eq!(e.resumes, [first]);
    assert_eq!(
        e.start.0,
        (t + chrono::Duration::hours(3)).timestamp_millis()
    );
    let original_node = engine
        .graph()
        .node(NodeId::episode(first))
        .unwrap()
        .unwrap();
    assert_eq!(original_node.episode().unwrap().prompts, 2);

    // CONTINUES links the resume to what it resumes.
    let continues = EdgeFilter {
        direction: Direction::Out,
        relations: vec![Relation::Continues],
        ..EdgeFilter::default()
    };
    let next = engine
        .graph()
        .neighbors(NodeId::episode(resumed), &continues, 10)
        .unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].node.id, NodeId::episode(first));

    // Its messages are its own, and reading the files again changes nothing.
    let texts: Vec<String> = engine
        .session(resumed)
        .unwrap()
        .messages
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(texts, ["Continue with the eviction policy", "Done."]);
    std::fs::write(&b, std::fs::read(&b).unwrap()).unwrap();
    engine.ingest().unwrap();
    let again = engine
        .graph()
        .node(NodeId::episode(resumed))
        .unwrap()
        .unwrap();
    assert_eq!(again.episode().unwrap().prompts, 1);
}

/// A session with no title of its own and a later summary-only file labelling its last
/// message (the 117-byte files of Q5).
fn labelled_pair(home: &ClaudeHome) -> (std::path::PathBuf, std::path::PathBuf, &'static str) {
    let id = "e0000000-0000-4000-8000-000000000001";
    let lines = session_lines(
        id,
        "/w/web",
        days_ago(3),
        &[
            ("can you look at this", "Sure."),
            ("and the margins", "Fixed."),
        ],
    );
    let session = home.write_raw("-w-web", &format!("{id}.jsonl"), &(lines.join("\n") + "\n"));
    let label = json!({"type": "summary", "summary": "CSS Details Margin Styling",
                       "leafUuid": format!("{id}-a1")});
    let labels = home.write_raw(
        "-w-web",
        "f0000000-0000-4000-8000-000000000009.jsonl",
        &(label.to_string() + "\n"),
    );
    (session, labels, id)
}

fn title(engine: &Engine, id: &str) -> String {
    let node = engine.graph().node(NodeId::episode(id)).unwrap().unwrap();
    node.episode().unwrap().title.clone()
}

#[test]
fn a_label_in_another_file_titles_the_session_read_before_or_after_it() {
    // The label's file read first.
    let home = ClaudeHome::new();
    let (session, labels, id) = labelled_pair(&home);
    set_age(&labels, 60);
    set_age(&session, 5);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    assert_eq!(title(&engine, id), "CSS Details Margin Styling");

    // The session read first, the label arriving in a later run: the session is re-read.
    let home = ClaudeHome::new();
    let (_session, labels, id) = labelled_pair(&home);
    let label = std::fs::read(&labels).unwrap();
    std::fs::remove_file(&labels).unwrap();
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    assert_eq!(title(&engine, id), "Look at this", "the request, cleaned");
    std::fs::write(&labels, &label).unwrap();
    engine.ingest().unwrap();
    assert_eq!(title(&engine, id), "CSS Details Margin Styling");
    // The handoff follows the title.
    let handoff = engine.graph().handoff(id).unwrap().unwrap();
    assert_eq!(handoff.headline, "CSS Details Margin Styling");
}

#[test]
fn a_label_reaches_a_session_whose_file_claude_code_deleted() {
    let home = ClaudeHome::new();
    let (session, labels, id) = labelled_pair(&home);
    let label = std::fs::read(&labels).unwrap();
    std::fs::remove_file(&labels).unwrap();
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    // The 30-day cleanup deletes the session; later a file labels it.
    std::fs::remove_file(&session).unwrap();
    std::fs::write(&labels, &label).unwrap();
    engine.ingest().unwrap();
    assert_eq!(title(&engine, id), "CSS Details Margin Styling");
}

#[test]
fn sessions_index_titles_and_memory_files_are_read() {
    let home = ClaudeHome::new();
    let id = "f1000000-0000-4000-8000-000000000001";
    home.session(
        id,
        "/w/notes",
        days_ago(1),
        &[("hmm ok so", "What would you like?")],
    );
    let index = json!({"version": 1, "originalPath": "/w/notes", "entries": [
        {"sessionId": id, "fullPath": "/ignored", "summary": "Notes App Sync Design",
         "firstPrompt": "hmm ok so", "messageCount": 2, "isSidechain": false},
        {"sessionId": "not-on-disk", "summary": "Gone"}]});
    home.write_raw("-w-notes", "sessions-index.json", &index.to_string());
    home.write_raw(
        "-w-notes/memory",
        "MEMORY.md",
        "# Project memory\n\n- Tests run with `cargo nextest`.\n- Deploy token: ghp_abcdefghijklmnopqrstuvwxyz0123456789\n",
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    let report = engine.ingest().unwrap();
    assert_eq!(
        report.counts.sessions, 2,
        "an entry whose transcript is gone is a session too (seed 004)"
    );
    assert_eq!(report.memory_files, 1);
    assert_eq!(title(&engine, id), "Notes App Sync Design");
    assert_eq!(title(&engine, "not-on-disk"), "Gone");

    let memory = EdgeFilter {
        direction: Direction::Out,
        relations: vec![Relation::HasMemory],
        ..EdgeFilter::default()
    };
    let (_, docs) = engine.neighbors("project:notes", &memory, 10).unwrap();
    assert_eq!(docs.len(), 1);
    let content = docs[0].node.content.clone().unwrap();
    assert!(content.contains("cargo nextest"));
    assert!(!content.contains("ghp_abcdefghijklmnopqrstuvwxyz0123456789"));
}
