//! The session library: listing with pagination and a workspace filter, and export.

use eywa::engine::{Engine, EngineConfig, ExportFormat};

use crate::support::fixture::{ClaudeHome, days_ago};

fn home() -> ClaudeHome {
    let home = ClaudeHome::new();
    for (i, (cwd, days)) in [
        ("/w/shop", 5),
        ("/w/shop/api", 1),
        ("/w/blog", 3),
        ("/w/shop", 9),
        ("/w/shopping", 2),
    ]
    .into_iter()
    .enumerate()
    {
        home.session(
            &format!("11b00000-0000-4000-8000-00000000000{i}"),
            cwd,
            days_ago(days),
            &[(
                &format!("Task {i} in {cwd}"),
                "Done with `it`.\n```\ncode\n```",
            )],
        );
    }
    home
}

#[test]
fn sessions_list_newest_first_a_page_at_a_time() {
    let home = home();
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let ids = |page: &eywa::engine::SessionPage| -> Vec<String> {
        page.sessions
            .iter()
            .map(|s| s.session_id[s.session_id.len() - 1..].to_owned())
            .collect()
    };
    let first = engine.list_sessions(None, 2, 0).unwrap();
    assert_eq!(ids(&first), ["1", "4"]);
    assert_eq!((first.total, first.has_more), (5, true));
    let last = engine.list_sessions(None, 2, 4).unwrap();
    assert_eq!(ids(&last), ["3"]);
    assert!(!last.has_more);
    assert!(
        engine
            .list_sessions(None, 2, 10)
            .unwrap()
            .sessions
            .is_empty()
    );

    // A workspace is a project path (with the folders in it) or a project name; a longer
    // name that starts the same (`/w/shopping`) is another project.
    let shop = engine.list_sessions(Some("/w/shop"), 50, 0).unwrap();
    assert_eq!(ids(&shop), ["1", "0", "3"], "/w/shop/api is inside /w/shop");
    let by_name = engine.list_sessions(Some("Shop"), 50, 0).unwrap();
    assert_eq!(ids(&by_name), ["0", "3"]);
    assert!(matches!(
        engine.list_sessions(Some("/w/nowhere"), 50, 0),
        Err(eywa::Error::NotFound(_))
    ));
    assert!(matches!(
        engine.list_sessions(None, 0, 0),
        Err(eywa::Error::InvalidArgument(_))
    ));
    let s = &by_name.sessions[0];
    assert_eq!(s.title, "Task 0 in /w/shop");
    assert_eq!(s.message_count, 2);
    assert!(s.last_activity_at > s.started_at);
}

#[test]
fn a_session_exports_as_markdown_and_json() {
    let home = home();
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let id = "11b00000-0000-4000-8000-000000000002";
    let md = engine.export_session(id, ExportFormat::Markdown).unwrap();
    assert!(md.starts_with("# Task 2 in /w/blog\n"), "{md}");
    assert!(md.contains(&format!("claude --resume {id}")), "{md}");
    assert!(md.contains("## User"), "{md}");
    assert!(md.contains("## Assistant"), "{md}");
    assert!(md.contains("**Read**"), "the tool call: {md}");
    let json: serde_json::Value =
        serde_json::from_str(&engine.export_session(id, ExportFormat::Json).unwrap()).unwrap();
    assert_eq!(json["session_id"], id);
    assert_eq!(json["messages"].as_array().unwrap().len(), 2);
    assert_eq!(json["messages"][1]["tool_calls"][0]["name"], "Read");
    assert!(matches!(
        ExportFormat::parse("pdf"),
        Err(eywa::Error::InvalidArgument(_))
    ));
    assert!(matches!(
        engine.export_session("ffffffff", ExportFormat::Json),
        Err(eywa::Error::NotFound(_))
    ));
}

#[test]
fn the_cli_lists_shows_and_exports_sessions() {
    let home = home();
    let data = tempfile::tempdir().unwrap();
    let eywa =
        |args: &[&str]| crate::support::eywa_cli(&data.path().join("eywa"), home.root(), args);
    assert!(eywa(&["ingest"]).0);
    let (ok, text, _) = eywa(&["sessions", "list", "--limit", "2"]);
    assert!(ok);
    assert!(text.contains("1-2 of 5; next: --offset 2"), "{text}");
    let (ok, text, _) = eywa(&["sessions", "list", "--workspace", "blog", "--json"]);
    assert!(ok);
    let page: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(page["total"], 1);
    let id = "11b00000-0000-4000-8000-000000000002";
    let file = data.path().join("s.md");
    let (ok, _, err) = eywa(&["sessions", "export", id, "-o", file.to_str().unwrap()]);
    assert!(ok, "{err}");
    let md = std::fs::read_to_string(&file).unwrap();
    assert!(md.starts_with("# Task 2 in /w/blog"), "{md}");
    let (ok, _, err) = eywa(&["sessions", "list", "--workspace", "/w/nowhere"]);
    assert!(!ok);
    assert!(err.contains("no workspace `/w/nowhere`"), "{err}");
}

#[test]
fn sessions_are_searched_line_by_line_with_context() {
    let home = home();
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let search = |pattern: &str, regex: bool, context: usize| eywa::engine::SessionSearch {
        pattern: pattern.into(),
        regex,
        case_sensitive: false,
        workspace: None,
        context,
        limit: 50,
        offset: 0,
    };
    // The answer "Done with `it`.\n```\ncode\n```" is four lines; "code" is line 3.
    let page = engine.search_sessions(&search("CODE", false, 1)).unwrap();
    assert_eq!(page.total, 5, "once per session");
    let m = &page.matches[0];
    assert_eq!(
        m.session_id, "11b00000-0000-4000-8000-000000000001",
        "newest first"
    );
    assert_eq!(m.message_type, "assistant");
    assert_eq!(m.line, "code");
    assert_eq!(m.line_number, 3);
    assert_eq!(m.context, ["```", "```"]);
    // Regex, case, workspace, paging.
    let re = engine
        .search_sessions(&search(r"^Task [0-2] in /w/(shop|blog)$", true, 0))
        .unwrap();
    assert_eq!(re.total, 2);
    let exact = eywa::engine::SessionSearch {
        case_sensitive: true,
        ..search("task", false, 0)
    };
    assert_eq!(engine.search_sessions(&exact).unwrap().total, 0);
    let paged = eywa::engine::SessionSearch {
        limit: 2,
        offset: 4,
        ..search("done", false, 0)
    };
    let page = engine.search_sessions(&paged).unwrap();
    assert_eq!(
        (page.matches.len(), page.total, page.has_more),
        (1, 5, false)
    );
    let blog = eywa::engine::SessionSearch {
        workspace: Some("blog".into()),
        ..search("task", false, 0)
    };
    assert_eq!(engine.search_sessions(&blog).unwrap().total, 1);
    // A literal pattern is not a regex; a bad regex is refused.
    assert_eq!(
        engine
            .search_sessions(&search("(shop", false, 0))
            .unwrap()
            .total,
        0
    );
    assert!(matches!(
        engine.search_sessions(&search("(shop", true, 0)),
        Err(eywa::Error::InvalidArgument(_))
    ));
}

#[test]
fn a_session_that_goes_on_moves_to_the_front_and_an_older_store_gets_the_order_built() {
    use eywa_storage::{Batch, Keyspace};

    use crate::support::fixture::{append, session_lines};

    let home = home();
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig::new(dir.path(), home.root());
    let oldest = home
        .root()
        .join("projects/-w-shop/11b00000-0000-4000-8000-000000000003.jsonl");
    let first_ids = |engine: &Engine| -> Vec<String> {
        let page = engine.list_sessions(None, 50, 0).unwrap();
        page.sessions
            .iter()
            .map(|s| s.session_id[s.session_id.len() - 1..].to_owned())
            .collect()
    };
    {
        let engine = Engine::open(config.clone()).unwrap();
        engine.ingest().unwrap();
        assert_eq!(first_ids(&engine), ["1", "4", "2", "0", "3"]);

        // Session 3, the oldest, goes on today.
        let id = "11b00000-0000-4000-8000-000000000003";
        let more: Vec<String> = session_lines(id, "/w/shop", days_ago(0), &[("More", "Yes.")])
            .into_iter()
            .map(|l| {
                l.replace(&format!("{id}-u0"), "later-u")
                    .replace(&format!("{id}-a0"), "later-a")
            })
            .collect();
        append(&oldest, &more);
        engine.ingest().unwrap();
        assert_eq!(first_ids(&engine), ["3", "1", "4", "2", "0"]);
        assert!(engine.graph().check().unwrap().is_empty());

        // A store written before the order was kept: no index, no mark.
        let store = engine.graph().store();
        let mut batch = Batch::new();
        for key in store.keys(Keyspace::SessionsByActivity, &[]) {
            batch.delete(Keyspace::SessionsByActivity, key.unwrap());
        }
        batch.delete(Keyspace::Settings, b"sessions_by_activity_built".to_vec());
        store.apply(batch).unwrap();
    }
    let engine = Engine::open(config).unwrap();
    assert_eq!(first_ids(&engine), ["3", "1", "4", "2", "0"]);
    assert!(
        !engine.graph().view_loaded(),
        "a page is read from the store, not the whole graph"
    );
    assert_eq!(engine.list_sessions(None, 2, 0).unwrap().total, 5);
    assert!(engine.graph().check().unwrap().is_empty());
}
