//! Ingest of hand-written fixtures: what is a session, what is skipped, what is counted.

use eywa::engine::{Engine, EngineConfig};
use eywa::graph::{Direction, EdgeFilter};
use eywa::model::Relation;

use crate::support::fixture::{ClaudeHome, days_ago, session_lines};

fn engine(home: &ClaudeHome) -> Engine {
    Engine::open(EngineConfig::temporary(home.root())).unwrap()
}

#[test]
fn garbage_and_a_truncated_last_line_still_yield_the_session_and_are_counted() {
    let home = ClaudeHome::new();
    let mut lines = session_lines(
        "11111111-0000-4000-8000-000000000001",
        "/w/parser",
        days_ago(1),
        &[
            ("Fix the tokenizer", "Done."),
            ("Now the lexer", "Done too."),
        ],
    );
    lines.insert(2, "}{ garbage from a crashed writer".to_owned());
    let cut = lines.last().unwrap().len() / 2;
    let truncated = lines.last().unwrap()[..cut].to_owned();
    *lines.last_mut().unwrap() = truncated;
    home.write_raw(
        "-w-parser",
        "11111111-0000-4000-8000-000000000001.jsonl",
        &lines.join("\n"),
    );

    let engine = engine(&home);
    let report = engine.ingest().unwrap();
    assert_eq!(report.counts.episodes, 1);
    assert_eq!(report.counts.skipped_lines, 2);
    let episodes = engine.graph().episodes().unwrap();
    let e = episodes[0].episode().unwrap();
    assert_eq!(e.prompts, 2);
    assert_eq!(
        e.assistant_messages, 1,
        "the truncated answer is not counted"
    );
    // Counted the same when read again.
    assert_eq!(engine.ingest().unwrap().counts.skipped_lines, 2);
}

#[test]
fn files_without_messages_and_agent_files_are_not_sessions() {
    let home = ClaudeHome::new();
    let dir = "-w-app";
    home.write_raw(dir, "22222222-0000-4000-8000-000000000001.jsonl", "");
    home.write_raw(
        dir,
        "22222222-0000-4000-8000-000000000002.jsonl",
        r#"{"type":"summary","summary":"Old work","leafUuid":"elsewhere"}"#,
    );
    home.write_raw(
        dir,
        "22222222-0000-4000-8000-000000000003.jsonl",
        r#"{"type":"file-history-snapshot","messageId":"m","snapshot":{"trackedFileBackups":{}},"isSnapshotUpdate":false}"#,
    );
    let agent = session_lines("parent", "/w/app", days_ago(1), &[("Warmup", "Ready.")]);
    home.write_raw(dir, "agent-41be4aa9.jsonl", &agent.join("\n"));
    home.write_raw(
        &format!("{dir}/22222222-0000-4000-8000-000000000004/subagents"),
        "agent-a1.jsonl",
        &agent.join("\n"),
    );

    let engine = engine(&home);
    let report = engine.ingest().unwrap();
    assert_eq!(
        report.files_scanned, 3,
        "agent files are not scanned as sessions"
    );
    assert_eq!(report.files_without_messages, 3);
    assert_eq!(report.counts.sessions, 0);
    // The two agent files are subagent runs: episodes of their own, not sessions.
    assert_eq!(report.agent_files_scanned, 2);
    assert_eq!(report.counts.agents, 2);
    assert_eq!(report.counts.episodes, 2);
    assert!(engine.graph().handoffs().unwrap().is_empty());
}

#[test]
fn the_project_comes_from_cwd_not_the_folder_name() {
    let home = ClaudeHome::new();
    let lines = session_lines(
        "33333333-0000-4000-8000-000000000001",
        "/home/me/my-app.v2",
        days_ago(2),
        &[("Add a health check", "Added.")],
    );
    home.write_raw(
        "-totally-wrong",
        "33333333-0000-4000-8000-000000000001.jsonl",
        &lines.join("\n"),
    );
    let engine = engine(&home);
    engine.ingest().unwrap();
    let touched = engine
        .what_touched("project:my-app.v2", &EdgeFilter::default(), 100)
        .unwrap();
    assert_eq!(touched.len(), 1);
    assert!(
        engine
            .what_touched("project:wrong", &EdgeFilter::default(), 100)
            .is_err()
    );
    // The path and the name both resolve.
    assert_eq!(
        engine
            .what_touched("project:/home/me/my-app.v2", &EdgeFilter::default(), 100)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_session_that_changes_cwd_touches_both_projects() {
    let home = ClaudeHome::new();
    let id = "44444444-0000-4000-8000-000000000001";
    let mut lines = session_lines(id, "/w/api", days_ago(3), &[("Start in api", "Ok.")]);
    // The second part's lines have uuids of their own (a repeated uuid is a replay).
    let web = session_lines(id, "/w/web", days_ago(3), &[("Now the web app", "Ok.")]);
    lines.extend(
        web.iter()
            .map(|l| l.replace(&format!("{id}-"), &format!("{id}-web-"))),
    );
    home.write_raw("-w-api", &format!("{id}.jsonl"), &lines.join("\n"));
    let engine = engine(&home);
    engine.ingest().unwrap();
    let episode = &engine.graph().episodes().unwrap()[0];
    assert_eq!(episode.episode().unwrap().project, "api");
    let touched = engine
        .graph()
        .neighbors(
            episode.id,
            &EdgeFilter {
                direction: Direction::Out,
                relations: vec![Relation::Touched],
                ..EdgeFilter::default()
            },
            100,
        )
        .unwrap();
    let mut names: Vec<&str> = touched.iter().map(|n| n.node.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["api", "web"]);
    assert_eq!(
        engine
            .what_touched("project:web", &EdgeFilter::default(), 100)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn what_touched_honours_time_windows_and_orders_newest_first() {
    let home = ClaudeHome::new();
    for (i, days) in [(1, 30), (2, 10), (3, 1)] {
        home.session(
            &format!("55555555-0000-4000-8000-00000000000{i}"),
            "/w/shop",
            days_ago(days),
            &[("Work on the cart", "Done.")],
        );
    }
    let engine = engine(&home);
    engine.ingest().unwrap();
    let all = engine
        .what_touched("project:shop", &EdgeFilter::default(), 100)
        .unwrap();
    let ids: Vec<String> = all
        .iter()
        .map(|t| t.episode.episode().unwrap().session_id.clone())
        .collect();
    assert_eq!(
        ids,
        [
            "55555555-0000-4000-8000-000000000003",
            "55555555-0000-4000-8000-000000000002",
            "55555555-0000-4000-8000-000000000001"
        ]
    );
    let ts = |days| eywa::model::Timestamp(days_ago(days).timestamp_millis());
    let window = |from, until| EdgeFilter {
        from,
        until,
        ..EdgeFilter::default()
    };
    let window = engine
        .what_touched("project:shop", &window(Some(ts(15)), Some(ts(5))), 100)
        .unwrap();
    assert_eq!(window.len(), 1);
    assert_eq!(
        window[0].episode.episode().unwrap().session_id,
        "55555555-0000-4000-8000-000000000002"
    );
    assert!(matches!(
        engine.what_touched(
            "project:shop",
            &EdgeFilter {
                from: Some(ts(5)),
                until: Some(ts(15)),
                ..EdgeFilter::default()
            },
            100
        ),
        Err(eywa::Error::InvalidArgument(_))
    ));
}

#[test]
fn an_appended_session_is_updated_in_place() {
    let home = ClaudeHome::new();
    let id = "66666666-0000-4000-8000-000000000001";
    let path = home.session(
        id,
        "/w/lib",
        days_ago(1),
        &[("Write the parser", "Written.")],
    );
    let engine = engine(&home);
    let first = engine.ingest().unwrap();
    let more = session_lines(
        id,
        "/w/lib",
        days_ago(1),
        &[("x", "y"), ("Add tests", "Added.")],
    );
    crate::support::fixture::append(&path, &more[2..]);

    let second = engine.ingest().unwrap();
    assert_eq!(second.files_read, 1);
    // Same session, episode and source, updated (the new prompt may add a concept).
    let same = |c: &eywa::graph::Counts| (c.sessions, c.episodes, c.sources);
    assert_eq!(
        same(&second.counts),
        same(&first.counts),
        "same session, updated"
    );
    let episode = engine.graph().episodes().unwrap()[0].clone();
    assert_eq!(episode.episode().unwrap().prompts, 2);
}

#[test]
fn a_missing_projects_folder_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(EngineConfig::temporary(dir.path().join("nope"))).unwrap();
    let err = engine.ingest().unwrap_err();
    assert!(
        matches!(err, eywa::Error::ClaudeDirMissing { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("EYWA_CLAUDE_DIR"), "{err}");
}

#[cfg(unix)]
#[test]
fn the_data_dir_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let home = ClaudeHome::new();
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("eywa");
    let _engine = Engine::open(EngineConfig::new(&dir, home.root())).unwrap();
    for path in [dir.clone(), dir.join("store")] {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", path.display());
    }
}

/// What an engine holds, in a form two engines can be compared by: each episode's current
/// edges (relation, other end, validity) and every node at their other ends, whole (less
/// when eywa read an episode, and where its home was).
fn graph_facts(engine: &Engine, home: &ClaudeHome) -> Vec<String> {
    let graph = engine.graph();
    let filter = EdgeFilter {
        direction: Direction::Out,
        ..EdgeFilter::default()
    };
    let root = home.root().to_string_lossy().into_owned();
    let show = |node: &eywa::model::Node| {
        let mut value = serde_json::to_value(node).unwrap();
        if node.episode().is_some() {
            let fields = value.as_object_mut().unwrap();
            fields.remove("created_at");
            fields.remove("updated_at");
        }
        value.to_string().replace(&root, "<home>")
    };
    let mut facts = Vec::new();
    for episode in graph.episodes().unwrap() {
        facts.push(show(&episode));
        for n in graph.neighbors(episode.id, &filter, usize::MAX).unwrap() {
            facts.push(format!(
                "{} {:?} {:?} {:?} {}",
                episode.id,
                n.edge.relation,
                n.edge.valid_from,
                n.edge.valid_to,
                show(&n.node),
            ));
        }
    }
    facts.sort();
    facts
}

#[test]
fn files_written_together_make_the_same_graph_as_files_written_one_run_each() {
    // Many small sessions that share projects, the Read tool and words: one run writes
    // them in groups of one transaction; the other writes one file per run.
    let sessions: Vec<(String, String, i64)> = (0..48)
        .map(|i| {
            (
                format!("44444444-0000-4000-8000-{i:012}"),
                format!("/w/project-{}", i % 3),
                40 - i64::from(i as u8) % 40,
            )
        })
        .collect();
    let write = |home: &ClaudeHome, (id, cwd, days): &(String, String, i64)| {
        home.session(
            id,
            cwd,
            days_ago(*days),
            &[
                ("Refactor the tokenizer cache", "Done with the tokenizer."),
                ("Now benchmark the parser", "The parser is faster."),
            ],
        );
    };
    let together = ClaudeHome::new();
    for session in &sessions {
        write(&together, session);
    }
    let grouped = engine(&together);
    let report = grouped.ingest().unwrap();
    assert_eq!(report.files_read, 48);

    let apart = ClaudeHome::new();
    let single = engine(&apart);
    for session in &sessions {
        write(&apart, session);
        assert_eq!(single.ingest().unwrap().files_read, 1);
    }

    assert_eq!(grouped.graph().check().unwrap(), Vec::<String>::new());
    assert_eq!(single.graph().check().unwrap(), Vec::<String>::new());
    assert_eq!(
        grouped.graph().counts().unwrap(),
        single.graph().counts().unwrap()
    );
    let facts = graph_facts(&grouped, &together);
    assert!(facts.len() > 48 * 3, "{} facts", facts.len());
    assert_eq!(facts, graph_facts(&single, &apart));
}
