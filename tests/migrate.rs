//! Migrating sessions between workspaces: copy and move with subagents and a plan, a
//! failure midway leaves the source byte-identical, an existing target is refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use eywa::engine::{Engine, EngineConfig, MigrateMode};
use eywa::graph::{Direction, EdgeFilter};
use eywa::model::{NodeId, Relation};
use serde_json::json;

use crate::support::fixture::{ClaudeHome, days_ago, session_lines, with_slug};

const ID: &str = "e1900000-0000-4000-8000-000000000001";
const AGENT: &str = "a77aa77aa77aa77aa";

/// A session in /w/app that edits /w/app/src/lib.rs, with a plan and a nested subagent.
fn home() -> ClaudeHome {
    let home = ClaudeHome::new();
    let mut lines = with_slug(
        session_lines(ID, "/w/app", days_ago(1), &[("Refactor lib.rs", "Done.")]),
        "calm-river",
    );
    lines.push(
        json!({"type": "assistant", "uuid": "edit-1", "parentUuid": format!("{ID}-a0"),
               "sessionId": ID, "cwd": "/w/app", "slug": "calm-river",
               "timestamp": days_ago(1).to_rfc3339(),
               "message": {"id": "m-edit", "role": "assistant", "content": [
                   {"type": "tool_use", "id": "t-edit", "name": "Edit",
                    "input": {"file_path": "/w/app/src/lib.rs", "old_string": "a", "new_string": "b"}}]}})
        .to_string(),
    );
    home.write_raw("-w-app", &format!("{ID}.jsonl"), &(lines.join("\n") + "\n"));
    let agent = json!({"type": "user", "uuid": "ag-u", "isSidechain": true, "sessionId": ID,
        "agentId": AGENT, "cwd": "/w/app", "timestamp": days_ago(1).to_rfc3339(),
        "message": {"role": "user", "content": "Look at /w/app/src"}});
    home.write_raw(
        &format!("-w-app/{ID}/subagents"),
        &format!("agent-{AGENT}.jsonl"),
        &(agent.to_string() + "\n"),
    );
    home.write_raw(
        &format!("-w-app/{ID}/subagents"),
        &format!("agent-{AGENT}.meta.json"),
        r#"{"agentType":"Explore","description":"Scan the sources"}"#,
    );
    std::fs::create_dir_all(home.root().join("plans")).unwrap();
    std::fs::write(
        home.root().join("plans/calm-river.md"),
        "# Refactor plan\n\nSplit the module in two; move the parser out first.\n",
    )
    .unwrap();
    home
}

/// Every file under the projects folder, by path relative to it, with its bytes.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, base, out);
            } else {
                out.insert(
                    path.strip_prefix(base).unwrap().to_owned(),
                    std::fs::read(&path).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&root.join("projects"), &root.join("projects"), &mut out);
    out
}

fn engine(home: &ClaudeHome) -> Engine {
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    engine
}

#[test]
fn copy_then_move_round_trips_a_session_with_its_subagent_and_plan() {
    let home = home();
    let original = snapshot(home.root());
    let engine = engine(&home);

    let copied = engine
        .migrate_sessions(&[ID[..8].to_owned()], "/x/new", MigrateMode::Copy)
        .unwrap();
    assert_eq!(
        (copied.success_count, copied.failed_count),
        (1, 0),
        "{copied:?}"
    );
    let after = snapshot(home.root());
    for (path, bytes) in &original {
        assert_eq!(
            after.get(path),
            Some(bytes),
            "copy leaves {path:?} as it was"
        );
    }
    let moved_main = home.root().join(format!("projects/-x-new/{ID}.jsonl"));
    let text = std::fs::read_to_string(&moved_main).unwrap();
    assert!(text.contains(r#""cwd":"/x/new""#));
    assert!(text.contains(r#""file_path":"/x/new/src/lib.rs""#));
    assert!(
        !text.contains(r#""/w/app"#),
        "no path value left in the old root"
    );
    let agent = home.root().join(format!(
        "projects/-x-new/{ID}/subagents/agent-{AGENT}.jsonl"
    ));
    // Path values are rewritten; prose that mentions a path is the person's words, kept.
    let agent_text = std::fs::read_to_string(&agent).unwrap();
    assert!(agent_text.contains(r#""cwd":"/x/new""#), "{agent_text}");
    assert!(agent_text.contains("Look at /w/app/src"), "{agent_text}");
    assert!(
        agent
            .with_file_name(format!("agent-{AGENT}.meta.json"))
            .is_file()
    );

    // Copying again is refused: the target exists.
    let again = engine
        .migrate_sessions(&[ID.to_owned()], "/x/new", MigrateMode::Copy)
        .unwrap();
    assert_eq!(again.failed_count, 1);
    assert!(
        again.errors[0].message.contains("never overwrites"),
        "{again:?}"
    );

    // Move the copy's source away and back: the original bytes return.
    std::fs::remove_dir_all(home.root().join("projects/-x-new")).unwrap();
    let moved = engine
        .migrate_sessions(&[ID.to_owned()], "/x/new", MigrateMode::Move)
        .unwrap();
    assert_eq!(moved.success_count, 1, "{moved:?}");
    assert!(
        !home
            .root()
            .join(format!("projects/-w-app/{ID}.jsonl"))
            .exists()
    );
    assert!(!home.root().join(format!("projects/-w-app/{ID}")).exists());
    // The moved session, read again, works in the new project with its plan and agent.
    engine.ingest().unwrap();
    let node = engine.graph().node(NodeId::episode(ID)).unwrap().unwrap();
    assert_eq!(node.episode().unwrap().project_path, "/x/new");
    let out = |relation| EdgeFilter {
        direction: Direction::Out,
        relations: vec![relation],
        ..EdgeFilter::default()
    };
    let plans = engine
        .graph()
        .neighbors(node.id, &out(Relation::HasPlan), 10)
        .unwrap();
    assert_eq!(plans.len(), 1);
    let agents = engine
        .graph()
        .neighbors(node.id, &out(Relation::Spawned), 10)
        .unwrap();
    assert_eq!(agents.len(), 1);

    let back = engine
        .migrate_sessions(&[ID.to_owned()], "/w/app", MigrateMode::Move)
        .unwrap();
    assert_eq!(back.success_count, 1, "{back:?}");
    assert_eq!(snapshot(home.root()), original, "moved back byte for byte");
}

#[test]
fn a_failure_midway_leaves_the_source_untouched_and_no_target() {
    let home = home();
    let original = snapshot(home.root());
    let engine = engine(&home);
    // Something already sits where the subagent folder would go: placing fails after the
    // transcript itself was placed.
    let blocker = home.root().join(format!("projects/-x-new/{ID}"));
    std::fs::create_dir_all(blocker.parent().unwrap()).unwrap();
    std::fs::write(&blocker, "not a folder").unwrap();
    let result = engine
        .migrate_sessions(&[ID.to_owned()], "/x/new", MigrateMode::Move)
        .unwrap();
    assert_eq!((result.success_count, result.failed_count), (0, 1));
    let mut expected = original.clone();
    expected.insert(
        PathBuf::from(format!("-x-new/{ID}")),
        b"not a folder".to_vec(),
    );
    assert_eq!(
        snapshot(home.root()),
        expected,
        "source intact, nothing placed"
    );
    // No staging folder is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(home.root().join("projects"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".eywa-migrate")
        })
        .collect();
    assert!(leftovers.is_empty());

    for bad in [
        engine.migrate_sessions(&[], "/x/new", MigrateMode::Copy),
        engine.migrate_sessions(&[ID.to_owned()], "relative/path", MigrateMode::Copy),
    ] {
        assert!(matches!(bad, Err(eywa::Error::InvalidArgument(_))));
    }
    let missing = engine
        .migrate_sessions(&["ffffffff".to_owned()], "/x/new", MigrateMode::Copy)
        .unwrap();
    assert_eq!(missing.failed_count, 1);
}
