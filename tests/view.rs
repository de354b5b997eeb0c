//! The view snapshot in the index tier: used only when current, and the same as a rebuild.

use eywa::engine::{Engine, EngineConfig};
use eywa::graph::EdgeFilter;
use eywa::model::{Edge, NodeId, Relation};

use crate::support::fixture::{ClaudeHome, days_ago};

/// Nodes per kind, edges per relation, and what touched `shop`.
type Summary = (Vec<(String, u64)>, Vec<(String, u64)>, Vec<String>);

fn summary(engine: &Engine) -> Summary {
    let graph = engine.graph();
    let mut kinds: Vec<(String, u64)> = graph
        .kind_counts()
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let mut relations: Vec<(String, u64)> = graph
        .relation_counts()
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    kinds.sort();
    relations.sort();
    let touched = engine
        .what_touched("project:shop", &EdgeFilter::default(), 100)
        .unwrap()
        .iter()
        .map(|t| t.episode.name.clone())
        .collect();
    (kinds, relations, touched)
}

#[test]
fn a_current_snapshot_is_used_and_matches_a_rebuild_and_a_stale_one_is_not() {
    let home = ClaudeHome::new();
    for i in 1..=4 {
        home.session(
            &format!("9000000{i}-0000-4000-8000-00000000000{i}"),
            if i % 2 == 0 { "/w/shop" } else { "/w/blog" },
            days_ago(i),
            &[("Work on it", "Done.")],
        );
    }
    let data = tempfile::tempdir().unwrap();
    let config = EngineConfig::new(data.path().join("eywa"), home.root());

    let engine = Engine::open(config.clone()).unwrap();
    assert!(
        !engine.graph().view_from_snapshot().unwrap(),
        "a new store has no snapshot"
    );
    engine.ingest().unwrap();
    let expected = summary(&engine);
    drop(engine);

    let engine = Engine::open(config.clone()).unwrap();
    assert!(engine.graph().view_from_snapshot().unwrap());
    assert_eq!(summary(&engine), expected);

    // A write after the snapshot makes it stale: the next open rebuilds, and sees the write.
    let episode = NodeId::episode("90000001-0000-4000-8000-000000000001");
    let blog = engine.resolve_one("project:blog").unwrap().id;
    let shop = engine.resolve_one("project:shop").unwrap().id;
    let old = eywa::graph::EdgeRef::new(episode, Relation::Touched, blog);
    engine
        .graph()
        .supersede(
            old,
            Edge::new(episode, Relation::Touched, shop, eywa::model::Timestamp(0)),
        )
        .unwrap();
    let after = summary(&engine);
    assert_ne!(after, expected);
    drop(engine);

    let engine = Engine::open(config.clone()).unwrap();
    assert!(
        !engine.graph().view_from_snapshot().unwrap(),
        "stale snapshot ignored"
    );
    assert_eq!(summary(&engine), after);
    assert!(engine.graph().save_view().unwrap());
    assert!(!engine.graph().save_view().unwrap(), "already current");
    drop(engine);

    // A corrupt snapshot is ignored too.
    let file = data.path().join("eywa/store/index/graph-view.bin");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.truncate(bytes.len() - 3);
    std::fs::write(&file, bytes).unwrap();
    let engine = Engine::open(config).unwrap();
    assert!(!engine.graph().view_from_snapshot().unwrap());
    assert_eq!(summary(&engine), after);
}
