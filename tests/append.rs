//! A transcript Claude Code appends to is read on from where the last read stopped: only
//! the new bytes are parsed and archived, and the result is what reading it whole gives.

use std::io::Write;
use std::path::Path;

use eywa::engine::{Engine, EngineConfig};
use eywa::model::{Node, NodeId};

use crate::support::episode_summary as summary;
use crate::support::fixture::{ClaudeHome, days_ago, session_lines};

const ID: &str = "a9000000-0000-4000-8000-000000000001";

fn lines(exchanges: &[(&str, &str)]) -> Vec<String> {
    let mut lines = session_lines(ID, "/w/app", days_ago(1), exchanges);
    // A tool call that edits a file, so files and tools change as the session grows.
    for (i, line) in lines.iter_mut().enumerate() {
        *line = line.replace(
            "\"input\":{}",
            &format!("\"input\":{{\"file_path\":\"/w/app/src/m{}.rs\"}}", i / 2),
        );
        *line = line.replace("\"name\":\"Read\"", "\"name\":\"Edit\"");
    }
    lines
}

fn append_raw(path: &Path, bytes: &str) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(bytes.as_bytes()).unwrap();
}

fn episode(engine: &Engine) -> Node {
    (*engine.graph().node(NodeId::episode(ID)).unwrap().unwrap()).clone()
}

#[test]
fn an_appended_transcript_is_read_from_where_the_last_read_stopped() {
    let exchanges = [
        ("Write the parser", "Written."),
        ("Now the lexer", "Done."),
        ("Add tests for both", "Added."),
        ("Fix the flaky one", "Fixed."),
    ];
    let all = lines(&exchanges);
    let home = ClaudeHome::new();
    let path = home.write_raw(
        "-w-app",
        &format!("{ID}.jsonl"),
        &(all[..2].join("\n") + "\n"),
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    let first = engine.ingest().unwrap();
    assert_eq!(first.bytes_read, std::fs::metadata(&path).unwrap().len());

    // Claude Code appends one exchange, then half a line (still writing it).
    let grown = all[2..4].join("\n") + "\n";
    let (half, rest) = all[4].split_at(all[4].len() / 2);
    append_raw(&path, &grown);
    append_raw(&path, half);
    let second = engine.ingest().unwrap();
    assert_eq!(second.files_read, 1);
    assert_eq!(
        second.bytes_read,
        (grown.len() + half.len()) as u64,
        "only the appended bytes are read"
    );
    assert_eq!(episode(&engine).episode().unwrap().prompts, 2);

    // The line is finished and more follow: the half line is read again, whole, once.
    append_raw(
        &path,
        &(rest.to_owned() + "\n" + &all[5..].join("\n") + "\n"),
    );
    let third = engine.ingest().unwrap();
    assert_eq!(
        third.bytes_read,
        (rest.len() + 1 + all[5..].join("\n").len() + 1) as u64
    );
    let grown = episode(&engine);
    assert_eq!(grown.episode().unwrap().prompts, 4);

    // Exactly what a fresh store reading the whole file makes of it.
    let fresh = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    fresh.ingest().unwrap();
    assert_eq!(summary(&grown), summary(&episode(&fresh)));
    let edges = |engine: &Engine| {
        let mut names: Vec<String> = engine
            .graph()
            .neighbors(NodeId::episode(ID), &Default::default(), 1000)
            .unwrap()
            .into_iter()
            .map(|n| format!("{} {}", n.edge.relation, n.node.name))
            .collect();
        names.sort();
        names
    };
    assert_eq!(edges(&engine), edges(&fresh));
    assert!(engine.graph().check().unwrap().is_empty());

    // The archive is the base and the two segments: once the file is gone, the session
    // is served from it, the same as from the file.
    let live = engine.session(ID).unwrap().messages;
    std::fs::remove_file(&path).unwrap();
    let archived = engine.session(ID).unwrap();
    assert!(archived.from_archive);
    assert_eq!(archived.messages, live);
}

#[test]
fn a_rewritten_transcript_is_read_whole_again_as_a_new_version() {
    let home = ClaudeHome::new();
    let first = lines(&[("Write the parser", "Written.")]);
    let path = home.write_raw("-w-app", &format!("{ID}.jsonl"), &(first.join("\n") + "\n"));
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    // Longer, but not an append: the start changed.
    let other: Vec<String> = lines(&[
        ("Delete the parser", "Deleted."),
        ("And the lexer", "Gone."),
    ])
    .iter()
    .map(|l| l.replace(&format!("{ID}-"), &format!("{ID}-v2-")))
    .collect();
    std::fs::write(&path, other.join("\n") + "\n").unwrap();
    let report = engine.ingest().unwrap();
    assert_eq!(report.bytes_read, std::fs::metadata(&path).unwrap().len());
    // What the first version said is history: kept, and read with the new file.
    let e = episode(&engine);
    assert_eq!(e.episode().unwrap().prompts, 3);
    let session = engine.session(ID).unwrap();
    assert_eq!(session.versions, 2);
    let prompts: Vec<&str> = session
        .messages
        .iter()
        .filter(|m| m.role == eywa::claude::Role::User)
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(
        prompts,
        ["Write the parser", "Delete the parser", "And the lexer"]
    );
    assert!(engine.graph().check().unwrap().is_empty());
}

#[test]
fn many_appends_keep_a_bounded_archive_that_reads_back_whole() {
    let exchanges: Vec<(String, String)> = (0..45)
        .map(|i| {
            (
                format!("Step {i} of the migration"),
                format!("Step {i} done."),
            )
        })
        .collect();
    let pairs: Vec<(&str, &str)> = exchanges
        .iter()
        .map(|(p, a)| (p.as_str(), a.as_str()))
        .collect();
    let all = lines(&pairs);
    let home = ClaudeHome::new();
    let path = home.write_raw(
        "-w-app",
        &format!("{ID}.jsonl"),
        &(all[..2].join("\n") + "\n"),
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    for pair in all[2..].chunks(2) {
        let bytes = pair.join("\n") + "\n";
        append_raw(&path, &bytes);
        let report = engine.ingest().unwrap();
        assert_eq!(report.bytes_read, bytes.len() as u64);
        let source = engine
            .graph()
            .source(&path.to_string_lossy())
            .unwrap()
            .unwrap();
        assert!(
            source.archive_tail.len() <= 32,
            "{}",
            source.archive_tail.len()
        );
    }
    assert_eq!(episode(&engine).episode().unwrap().prompts, 45);
    let store = engine.graph().store();
    assert!(store.orphan_blobs().unwrap().is_empty());
    assert!(engine.graph().check().unwrap().is_empty());
    let live = engine.session(ID).unwrap().messages;
    std::fs::remove_file(&path).unwrap();
    let archived = engine.session(ID).unwrap();
    assert!(archived.from_archive);
    assert_eq!(archived.messages.len(), 90);
    assert_eq!(archived.messages, live);
}
