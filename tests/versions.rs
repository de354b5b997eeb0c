//! A transcript that shrank or was rewritten is a new version of it: what earlier versions
//! said stays served (from the archive), marked superseded where the file now says
//! otherwise; a change is noticed by the file's identity and content, not its mtime alone.

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use eywa::api::pb;
use eywa::engine::{Engine, EngineConfig, ExportFormat, SearchRequest};
use eywa::model::NodeId;

use crate::support::episode_summary as summary;
use crate::support::fixture::{ClaudeHome, days_ago, session_lines};

const ID: &str = "b7000000-0000-4000-8000-000000000001";

fn transcript(exchanges: usize) -> String {
    let pairs: Vec<(String, String)> = (0..exchanges)
        .map(|i| {
            (
                format!("Step {i}: wire the parser"),
                format!("Step {i} wired."),
            )
        })
        .collect();
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(p, a)| (p.as_str(), a.as_str()))
        .collect();
    session_lines(ID, "/w/app", days_ago(1), &pairs).join("\n") + "\n"
}

/// The messages served: (text, superseded).
fn served(engine: &Engine) -> Vec<(String, bool)> {
    engine
        .session(ID)
        .unwrap()
        .messages
        .into_iter()
        .map(|m| (m.text, m.superseded))
        .collect()
}

fn edges(engine: &Engine, episode: NodeId) -> Vec<String> {
    let mut names: Vec<String> = engine
        .graph()
        .neighbors(episode, &Default::default(), 10_000)
        .unwrap()
        .into_iter()
        .map(|n| format!("{} {}", n.edge.relation, n.node.name))
        .collect();
    names.sort();
    names
}

fn finds(engine: &Engine, query: &str) -> bool {
    engine
        .search(&SearchRequest {
            query: query.into(),
            ..SearchRequest::default()
        })
        .unwrap()
        .hits
        .iter()
        .any(|h| h.session_id == ID)
}

fn consistent(engine: &Engine) {
    assert!(engine.graph().check().unwrap().is_empty());
    assert!(engine.graph().store().orphan_blobs().unwrap().is_empty());
}

fn set_mtime(path: &Path, to: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(to)
        .unwrap();
}

#[test]
fn a_truncated_transcript_keeps_serving_what_it_lost_and_a_restore_converges() {
    let home = ClaudeHome::new();
    let original = transcript(20);
    let path = home.write_raw("-w-app", &format!("{ID}.jsonl"), &original);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let all = served(&engine);
    assert_eq!(all.len(), 40);

    // Cut in half, in the middle of a line.
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(original.len() as u64 / 2)
        .unwrap();
    let report = engine.ingest().unwrap();
    assert_eq!(report.files_read, 1);
    let session = engine.session(ID).unwrap();
    assert!(session.from_archive);
    assert_eq!(session.versions, 2);
    assert_eq!(served(&engine), all, "every message is still served");
    assert!(finds(&engine, "Step 19 wired"), "and still found");
    assert_eq!(
        engine
            .graph()
            .node(NodeId::episode(ID))
            .unwrap()
            .unwrap()
            .episode()
            .unwrap()
            .prompts,
        20
    );
    consistent(&engine);

    // Put back as it was: the facts are what a store that only saw the original makes.
    std::fs::write(&path, &original).unwrap();
    engine.ingest().unwrap();
    assert_eq!(served(&engine), all);
    let fresh = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    fresh.ingest().unwrap();
    let episode = |e: &Engine| (*e.graph().node(NodeId::episode(ID)).unwrap().unwrap()).clone();
    assert_eq!(summary(&episode(&engine)), summary(&episode(&fresh)));
    assert_eq!(
        edges(&engine, NodeId::episode(ID)),
        edges(&fresh, NodeId::episode(ID))
    );
    let (mine, clean) = (
        engine.graph().counts().unwrap(),
        fresh.graph().counts().unwrap(),
    );
    assert_eq!(
        (mine.episodes, mine.entities, mine.edges),
        (clean.episodes, clean.entities, clean.edges)
    );
    consistent(&engine);
}

#[test]
fn a_head_rewrite_keeps_the_rest_and_later_appends_are_read_on() {
    let home = ClaudeHome::new();
    let original = transcript(12);
    let path = home.write_raw("-w-app", &format!("{ID}.jsonl"), &original);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let all = served(&engine);
    assert_eq!(all.len(), 24);

    // `head -10 f > g; mv g f`: a new file holding the first ten lines.
    let head: String = original
        .lines()
        .take(10)
        .map(|l| format!("{l}\n"))
        .collect();
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, &head).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    engine.ingest().unwrap();
    assert_eq!(served(&engine), all);
    let source = engine
        .graph()
        .source(&path.to_string_lossy())
        .unwrap()
        .unwrap();
    assert_eq!(source.versions.len(), 1);
    assert_eq!(source.versions[0].kept_lines, 14);
    assert_eq!(source.versions[0].superseded_lines, 0);
    assert!(source.shift > 0);

    // Claude Code goes on in the shortened file: only the new bytes are read.
    let more = session_lines(
        ID,
        "/w/app",
        days_ago(0),
        &[("Branch off here", "Branched.")],
    );
    let more = more
        .iter()
        .map(|l| l.replace(&format!("{ID}-u0"), &format!("{ID}-x0")))
        .map(|l| l.replace(&format!("{ID}-a0"), &format!("{ID}-y0")))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(more.as_bytes())
        .unwrap();
    let report = engine.ingest().unwrap();
    assert_eq!(report.bytes_read, more.len() as u64);
    let now = served(&engine);
    assert_eq!(now.len(), 26);
    assert!(all.iter().all(|m| now.contains(m)));
    assert!(now.contains(&("Branch off here".into(), false)));
    assert!(finds(&engine, "Branch off here"));
    assert!(finds(&engine, "Step 11 wired"));
    consistent(&engine);

    // Once Claude Code deletes it, the archive serves the same.
    std::fs::remove_file(&path).unwrap();
    assert_eq!(served(&engine), now);
}

#[test]
fn a_same_size_rewrite_with_its_mtime_kept_is_noticed_and_supersedes() {
    let home = ClaudeHome::new();
    let original = transcript(6);
    let path = home.write_raw("-w-app", &format!("{ID}.jsonl"), &original);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let all = served(&engine);
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();

    // `sed -i 's/Step 3: wire/Step 3: test/' f; touch -r orig f`: a new file, same size.
    let edited = original.replace("Step 3: wire", "Step 3: test");
    assert_eq!(edited.len(), original.len());
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, &edited).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    set_mtime(&path, modified);
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        modified
    );
    let report = engine.ingest().unwrap();
    assert_eq!(report.files_read, 1, "{report:?}");

    let now = served(&engine);
    assert_eq!(now.len(), all.len() + 1);
    let at = now
        .iter()
        .position(|m| m.0 == "Step 3: test the parser")
        .unwrap();
    assert_eq!(now[at - 1], ("Step 3: wire the parser".into(), true));
    assert!(!now[at].1);
    assert_eq!(now.iter().filter(|m| m.1).count(), 1);
    assert_eq!(engine.session(ID).unwrap().versions, 2);
    assert!(finds(&engine, "Step 3: test"));
    let markdown = engine.export_session(ID, ExportFormat::Markdown).unwrap();
    assert!(markdown.contains("## User (superseded)"), "{markdown}");
    assert!(markdown.contains("- Versions: 2"), "{markdown}");
    let json = engine.export_session(ID, ExportFormat::Json).unwrap();
    assert_eq!(json.matches("\"superseded\": true").count(), 1, "{json}");

    // Written in place, same size, mtime set back: same inode, but a new change time.
    let offset = edited.find("Step 4: wire").unwrap() as u64;
    let mut file = std::fs::File::options().write(true).open(&path).unwrap();
    file.seek(SeekFrom::Start(offset)).unwrap();
    file.write_all(b"Step 4: test").unwrap();
    drop(file);
    set_mtime(&path, modified);
    let report = engine.ingest().unwrap();
    assert_eq!(report.files_read, 1, "{report:?}");
    let now = served(&engine);
    assert_eq!(now.iter().filter(|m| m.1).count(), 2);
    assert!(now.contains(&("Step 4: test the parser".into(), false)));
    assert_eq!(engine.session(ID).unwrap().versions, 3);

    // Nothing changed since: not read again.
    let report = engine.ingest().unwrap();
    assert_eq!((report.files_read, report.files_unchanged), (0, 1));
    consistent(&engine);
}

#[test]
fn the_corpus_truncated_then_restored_loses_nothing_and_converges() {
    let Some(real) = crate::support::shared("corpus/claude-code/real_projects") else {
        return;
    };
    let home = crate::support::corpus_home(&real);
    let engine = Engine::open(EngineConfig::temporary(home.path())).unwrap();
    engine.ingest().unwrap();
    let mut files = Vec::new();
    for entry in walkdir(&home.path().join("projects")) {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".jsonl") else {
            continue;
        };
        if name.starts_with("agent-") {
            continue;
        }
        if let Ok(session) = engine.session(id) {
            files.push((entry.clone(), id.to_owned(), session.messages.len()));
        }
    }
    assert!(files.len() >= 10, "{}", files.len());
    let count = |engine: &Engine, id: &str| engine.session(id).unwrap().messages.len();

    let originals: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(&f.0).unwrap()).collect();
    for (path, _, _) in &files {
        let len = std::fs::metadata(path).unwrap().len();
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(len / 2)
            .unwrap();
    }
    engine.ingest().unwrap();
    for (_, id, messages) in &files {
        assert_eq!(count(&engine, id), *messages, "{id} after the truncate");
    }

    for ((path, _, _), bytes) in files.iter().zip(&originals) {
        std::fs::write(path, bytes).unwrap();
    }
    engine.ingest().unwrap();
    for (_, id, messages) in &files {
        assert_eq!(count(&engine, id), *messages, "{id} after the restore");
    }
    let fresh = Engine::open(EngineConfig::temporary(home.path())).unwrap();
    fresh.ingest().unwrap();
    let (mine, clean) = (
        engine.graph().counts().unwrap(),
        fresh.graph().counts().unwrap(),
    );
    assert_eq!(
        (mine.sessions, mine.episodes, mine.entities, mine.edges),
        (clean.sessions, clean.episodes, clean.entities, clean.edges)
    );
    consistent(&engine);
}

fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walkdir(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

#[test]
fn a_server_reports_the_new_version_and_serves_what_it_superseded() {
    let home = ClaudeHome::new();
    let original = transcript(4);
    let path = home.write_raw("-w-app", &format!("{ID}.jsonl"), &original);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let server = crate::support::server::TestServer::start(engine);
    let url = format!("http://{}", server.addr());
    // Rewritten: one prompt says otherwise, and the last exchange is gone.
    let edited: String = original
        .replace("Step 1: wire", "Step 1: drop")
        .lines()
        .take(6)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, edited).unwrap();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let report = pb::ingest_client::IngestClient::connect(url.clone())
            .await
            .unwrap()
            .ingest(pb::IngestRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!((report.files_read, report.files_versioned), (1, 1));
        let session = pb::sessions_client::SessionsClient::connect(url)
            .await
            .unwrap()
            .get_session(pb::GetSessionRequest {
                session: ID.into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(session.versions, 2);
        assert!(session.from_archive);
        let texts: Vec<(&str, bool)> = session
            .messages
            .iter()
            .filter(|m| m.role == "user")
            .map(|m| (m.text.as_str(), m.superseded))
            .collect();
        assert_eq!(
            texts,
            [
                ("Step 0: wire the parser", false),
                ("Step 1: wire the parser", true),
                ("Step 1: drop the parser", false),
                ("Step 2: wire the parser", false),
                ("Step 3: wire the parser", false),
            ]
        );
    });
}
