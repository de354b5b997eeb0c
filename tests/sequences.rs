//! FOLLOWS links each session to the previous one of its project; CONTINUES links a resumed
//! session to the one before it with the same slug. Both are kept in step as sessions come.

use eywa::engine::{Engine, EngineConfig};
use eywa::graph::{AsOf, Direction, EdgeFilter};
use eywa::model::{NodeId, Relation, Timestamp};

use crate::support::fixture::{ClaudeHome, days_ago, session_lines};

fn id(n: u32) -> String {
    format!("5e000000-0000-4000-8000-00000000000{n}")
}

fn session(home: &ClaudeHome, n: u32, days: i64, slug: Option<&str>) -> std::path::PathBuf {
    let mut lines = session_lines(
        &id(n),
        "/w/shop",
        days_ago(days),
        &[("Work on the cart", "Done.")],
    );
    if let Some(slug) = slug {
        lines = crate::support::fixture::with_slug(lines, slug);
    }
    let dir = home.root().join("projects/-w-shop");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}.jsonl", id(n)));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn targets(engine: &Engine, n: u32, relation: Relation, as_of: AsOf) -> Vec<String> {
    let filter = EdgeFilter {
        direction: Direction::Out,
        relations: vec![relation],
        as_of,
        ..EdgeFilter::default()
    };
    engine
        .graph()
        .neighbors(NodeId::episode(&id(n)), &filter, 10)
        .unwrap()
        .into_iter()
        .map(|n| n.node.episode().unwrap().session_id.clone())
        .collect()
}

#[test]
fn follows_tracks_the_order_of_a_projects_sessions() {
    let home = ClaudeHome::new();
    session(&home, 1, 5, None);
    session(&home, 2, 3, None);
    session(&home, 3, 1, None);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let now = AsOf::default();
    assert!(targets(&engine, 1, Relation::Follows, now).is_empty());
    assert_eq!(targets(&engine, 2, Relation::Follows, now), [id(1)]);
    assert_eq!(targets(&engine, 3, Relation::Follows, now), [id(2)]);

    // A session found later that ran in between: the chain is redrawn, the old link
    // expired (and still known as of before).
    let before = AsOf {
        recorded: Some(Timestamp::now()),
        ..AsOf::default()
    };
    std::thread::sleep(std::time::Duration::from_millis(5));
    session(&home, 4, 4, None);
    engine.ingest().unwrap();
    assert_eq!(targets(&engine, 4, Relation::Follows, now), [id(1)]);
    assert_eq!(targets(&engine, 2, Relation::Follows, now), [id(4)]);
    assert_eq!(targets(&engine, 2, Relation::Follows, before), [id(1)]);
    assert_eq!(targets(&engine, 3, Relation::Follows, now), [id(2)]);

    // Re-reading a file (it grew) leaves the chain alone.
    let path = home
        .root()
        .join(format!("projects/-w-shop/{}.jsonl", id(3)));
    let more = session_lines(
        &id(3),
        "/w/shop",
        days_ago(1),
        &[("x", "y"), ("More", "Ok.")],
    );
    crate::support::fixture::append(&path, &more[2..]);
    engine.ingest().unwrap();
    assert_eq!(targets(&engine, 3, Relation::Follows, now), [id(2)]);
    // ...without recording the unchanged link again.
    let follows = eywa::graph::EdgeRef::new(
        NodeId::episode(&id(3)),
        Relation::Follows,
        NodeId::episode(&id(2)),
    );
    assert_eq!(engine.graph().edge_versions(follows).unwrap().len(), 1);
    assert!(engine.graph().check().unwrap().is_empty());
}

/// The same chain kept by processes that never load the graph view (a CLI ingest): the
/// pass reads the adjacency index instead, with the same result.
#[test]
fn follows_is_kept_the_same_without_the_view_in_memory() {
    let home = ClaudeHome::new();
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig::new(dir.path(), home.root());
    let ingest = || {
        let engine = Engine::open(config.clone()).unwrap();
        engine.ingest().unwrap();
        assert!(!engine.graph().view_loaded(), "the pass read the store");
    };
    session(&home, 1, 5, None);
    session(&home, 2, 3, Some("calm-fox"));
    session(&home, 3, 1, Some("calm-fox"));
    ingest();
    session(&home, 4, 4, None);
    let before = AsOf {
        recorded: Some(Timestamp::now()),
        ..AsOf::default()
    };
    std::thread::sleep(std::time::Duration::from_millis(5));
    ingest();
    ingest();

    let engine = Engine::open(config).unwrap();
    let now = AsOf::default();
    assert!(targets(&engine, 1, Relation::Follows, now).is_empty());
    assert_eq!(targets(&engine, 4, Relation::Follows, now), [id(1)]);
    assert_eq!(targets(&engine, 2, Relation::Follows, now), [id(4)]);
    assert_eq!(targets(&engine, 2, Relation::Follows, before), [id(1)]);
    assert_eq!(targets(&engine, 3, Relation::Follows, now), [id(2)]);
    assert_eq!(targets(&engine, 3, Relation::Continues, now), [id(2)]);
    // Each link recorded once: an ingest that changed nothing rewrote nothing.
    let follows = eywa::graph::EdgeRef::new(
        NodeId::episode(&id(3)),
        Relation::Follows,
        NodeId::episode(&id(2)),
    );
    assert_eq!(engine.graph().edge_versions(follows).unwrap().len(), 1);
    assert!(engine.graph().check().unwrap().is_empty());
}

#[test]
fn continues_links_sessions_that_share_a_slug() {
    let home = ClaudeHome::new();
    session(&home, 1, 5, Some("humble-doodling-wolf"));
    session(&home, 2, 3, None);
    session(&home, 3, 1, Some("humble-doodling-wolf"));
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let now = AsOf::default();
    assert_eq!(targets(&engine, 3, Relation::Continues, now), [id(1)]);
    assert!(targets(&engine, 2, Relation::Continues, now).is_empty());
    assert!(targets(&engine, 1, Relation::Continues, now).is_empty());
    let node = engine
        .graph()
        .node(NodeId::episode(&id(3)))
        .unwrap()
        .unwrap();
    assert_eq!(
        node.episode().unwrap().slug.as_deref(),
        Some("humble-doodling-wolf")
    );
}
