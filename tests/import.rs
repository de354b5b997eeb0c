//! An Eywa handoff folder imports: its sessions rank with the rest and touch their projects.

use eywa::engine::{Engine, EngineConfig};
use eywa::graph::EdgeFilter;
use eywa::retrieve::GetOptions;

use crate::support::fixture::{ClaudeHome, days_ago};

fn eywa_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let day = days_ago(2).date_naive();
    let folder = dir
        .path()
        .join(format!("handoffs/{}", day.format("%Y/%m/%d")));
    std::fs::create_dir_all(&folder).unwrap();
    // As the Python Eywa writes them (block lists, single quotes, an unknown key).
    std::fs::write(
        folder.join("8735508d.md"),
        format!(
            "---\nsession_id: 8735508d\ndate: '{day}'\nduration: 1h 5m\nmodel: claude-opus-4-6\nheadline: Generated day plan for sorbent\nprojects:\n- pratchett-os\n- sorbent\nkeywords:\n- day-plan\n- sorbent-commercial\nsubstance: 2\nextractor: batch\n---\n\n# Generated day plan for sorbent\n\n## What Happened\n- Planned the day\n\n## Open Threads\n- Call the supplier\n"
        ),
    )
    .unwrap();
    std::fs::write(folder.join("broken.md"), "no frontmatter here\n").unwrap();
    // An index entry without a file, and one for a session we hold a transcript of.
    let index = serde_json::json!({
        "meta": {"last_updated": "2026-02-16T10:48:03+00:00", "handoff_count": 3, "date_range": []},
        "handoffs": {
            "1b2f6f6b": {"date": day.to_string(), "headline": "Sorbent pricing review",
                         "projects": ["sorbent"], "keywords": ["pricing"], "substance": 1,
                         "duration_minutes": 20},
            "cccccccc": {"date": day.to_string(), "headline": "Known already",
                         "projects": ["webapp"], "keywords": [], "substance": 1}
        },
        "by_project": {}, "by_keyword": {}
    });
    std::fs::write(dir.path().join("handoff-index.json"), index.to_string()).unwrap();
    dir
}

#[test]
fn an_eywa_handoff_folder_imports_and_ranks() {
    let home = ClaudeHome::new();
    home.session(
        "cccccccc-0000-4000-8000-000000000003",
        "/w/webapp",
        days_ago(2),
        &[("Hi", "Hello.")],
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let folder = eywa_folder();

    let report = engine.import_eywa(folder.path()).unwrap();
    assert_eq!(report.found, 3);
    assert_eq!(report.imported, 2);
    assert_eq!(report.known, 1, "the transcript is the better source");
    assert_eq!(report.failed.len(), 1);

    let options = GetOptions {
        days_back: 30,
        limit: 10,
        ..GetOptions::default()
    };
    let got = engine.get_handoffs("sorbent", &options).unwrap();
    let ids: Vec<&str> = got
        .hits
        .iter()
        .map(|h| h.handoff.short_id.as_str())
        .collect();
    assert_eq!(
        ids,
        ["8735508d", "1b2f6f6b"],
        "project in both; the longer, multi-project first"
    );
    let imported = &got.hits[0].handoff;
    assert_eq!(imported.duration_minutes, Some(65));
    assert_eq!(imported.sections.open_threads, ["Call the supplier"]);
    let touched = engine
        .what_touched("project:sorbent", &EdgeFilter::default(), 10)
        .unwrap();
    assert_eq!(touched.len(), 2);
    // An imported session reads as its handoff, with no transcript (there never was one
    // here), as the web view's session page and `sessions get` show it.
    let session = engine.session("eywa:8735508d").unwrap();
    assert!(session.messages.is_empty());
    let handoff = session.handoff.expect("its handoff");
    assert_eq!(handoff.sections.open_threads, ["Call the supplier"]);

    let again = engine.import_eywa(folder.path()).unwrap();
    assert_eq!(again.imported, 0);
    assert_eq!(again.already_imported, 2);
    assert_eq!(engine.graph().counts().unwrap().sessions, 3);
    assert!(engine.graph().check().unwrap().is_empty());
    assert!(matches!(
        engine.import_eywa(&folder.path().join("nope")),
        Err(eywa::Error::NotFound(_))
    ));
}

#[test]
fn an_import_into_a_new_store_leaves_the_text_index_current() {
    let home = ClaudeHome::new();
    let folder = eywa_folder();
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig::new(dir.path(), home.root());
    Engine::open(config.clone())
        .unwrap()
        .import_eywa(folder.path())
        .unwrap();
    // The text index was made before the first source, so the next process finds it
    // current: imported handoffs add no passages, and a rebuild (serve's first ingest)
    // would walk every source for nothing.
    assert!(dir.path().join("store/index/text/meta.json").is_file());
    let engine = Engine::open(config).unwrap();
    assert!(
        !engine
            .graph()
            .store()
            .contains(eywa_storage::Keyspace::Settings, b"text_index_dirty")
            .unwrap(),
        "the text index is not marked for a rebuild"
    );
    assert_eq!(engine.ingest().unwrap().counts.sessions, 3);
}
