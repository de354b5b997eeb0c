//! Walks over the graph: neighbors with filters, bounded walks, paths, related sessions.

use eywa::engine::{Engine, EngineConfig};
use eywa::graph::{Direction, EdgeFilter};
use eywa::model::Relation;

use crate::support::fixture::{ClaudeHome, days_ago};

/// Three sessions in `shop`, one in `blog`; the fixture's every answer calls the Read tool.
fn engine() -> (ClaudeHome, Engine) {
    let home = ClaudeHome::new();
    home.session(
        "10000000-0000-4000-8000-000000000001",
        "/w/shop",
        days_ago(5),
        &[("Cart", "Ok.")],
    );
    home.session(
        "20000000-0000-4000-8000-000000000002",
        "/w/shop",
        days_ago(4),
        &[("Checkout", "Ok.")],
    );
    home.session(
        "30000000-0000-4000-8000-000000000003",
        "/w/shop",
        days_ago(3),
        &[("Refunds", "Ok.")],
    );
    home.session(
        "40000000-0000-4000-8000-000000000004",
        "/w/blog",
        days_ago(2),
        &[("Post", "Ok.")],
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    (home, engine)
}

#[test]
fn neighbors_filter_by_relation_and_direction() {
    let (_home, engine) = engine();
    let only = |relations: Vec<Relation>, direction| EdgeFilter {
        relations,
        direction,
        ..EdgeFilter::default()
    };
    let (_, out) = engine
        .neighbors("session:10000000", &only(vec![], Direction::Out), 100)
        .unwrap();
    let mut names: Vec<&str> = out.iter().map(|n| n.node.name.as_str()).collect();
    names.sort();
    // Its tool, its project, and the concept its prompt names.
    assert_eq!(names, ["Read", "cart", "shop"]);
    let (_, touched) = engine
        .neighbors(
            "session:10000000",
            &only(vec![Relation::Touched], Direction::Out),
            100,
        )
        .unwrap();
    assert_eq!(touched.len(), 1);
    // Into the first session comes only the next one of its project, which FOLLOWS it.
    let (_, incoming) = engine
        .neighbors("session:10000000", &only(vec![], Direction::In), 100)
        .unwrap();
    assert_eq!(incoming.len(), 1);
    assert_eq!(incoming[0].edge.relation, Relation::Follows);
    assert_eq!(incoming[0].node.episode().unwrap().short_id, "20000000");
    let (_, sessions) = engine
        .neighbors("project:shop", &only(vec![], Direction::In), 100)
        .unwrap();
    assert_eq!(sessions.len(), 3);
    let (_, two) = engine
        .neighbors("project:shop", &only(vec![], Direction::In), 2)
        .unwrap();
    assert_eq!(two.len(), 2);
}

#[test]
fn walks_are_breadth_first_and_bounded() {
    let (_home, engine) = engine();
    let all = EdgeFilter::default();
    let walk = engine.walk("project:blog", 2, 100, &all).unwrap();
    let depths: Vec<(u32, &str)> = walk
        .steps
        .iter()
        .map(|s| (s.depth, s.node.kind.label()))
        .collect();
    // blog ← its session → its concept ("post") and the Read tool.
    assert_eq!(
        depths,
        [(0, "Project"), (1, "Episode"), (2, "Concept"), (2, "Tool")]
    );
    assert!(!walk.truncated);
    let three = engine.walk("tool:Read", 2, 3, &all).unwrap();
    assert_eq!(three.steps.len(), 3);
    assert!(three.truncated);
    let touched_only = EdgeFilter {
        relations: vec![Relation::Touched],
        ..EdgeFilter::default()
    };
    let walk = engine.walk("project:shop", 2, 100, &touched_only).unwrap();
    assert_eq!(
        walk.steps.len(),
        4,
        "shop and its three sessions; no tool hop"
    );
    assert!(matches!(
        engine.walk("project:shop", 0, 10, &all),
        Err(eywa::Error::InvalidArgument(_))
    ));
}

#[test]
fn paths_go_through_shared_entities() {
    let (_home, engine) = engine();
    let all = EdgeFilter::default();
    let path = engine
        .path("project:shop", "project:blog", 4, &all)
        .unwrap()
        .unwrap();
    let kinds: Vec<&str> = path.iter().map(|s| s.node.kind.label()).collect();
    assert_eq!(kinds, ["Project", "Episode", "Tool", "Episode", "Project"]);
    assert!(path[0].via.is_none());
    assert!(path[1..].iter().all(|s| s.via.is_some()));
    let touched_only = EdgeFilter {
        relations: vec![Relation::Touched],
        ..EdgeFilter::default()
    };
    assert!(
        engine
            .path("project:shop", "project:blog", 4, &touched_only)
            .unwrap()
            .is_none()
    );
    assert!(
        engine
            .path("project:shop", "project:blog", 3, &all)
            .unwrap()
            .is_none(),
        "4 hops needed"
    );
}

#[test]
fn related_sessions_share_rare_entities() {
    let (_home, engine) = engine();
    let related = engine.related("session:10000000", 10).unwrap();
    // The Read tool is used by every session: IDF ln(4/4) = 0, it adds nothing. The shop
    // project is touched by 3 of 4: ln(4/3) each.
    let ids: Vec<&str> = related
        .iter()
        .map(|r| r.episode.episode().unwrap().short_id.as_str())
        .collect();
    assert_eq!(
        ids,
        ["30000000", "20000000"],
        "equal scores: the newer session first"
    );
    for r in &related {
        assert!((r.score - (4f64 / 3.0).ln()).abs() < 1e-12);
        assert_eq!(r.shared.len(), 1);
        assert_eq!(r.shared[0].entity.name, "shop");
    }
    assert!(matches!(
        engine.related("project:shop", 5),
        Err(eywa::Error::InvalidArgument(_))
    ));
}

/// A fresh process answers "what touched X" from the adjacency indexes without building
/// the view (issue 13); the answer is the view's, whatever the filter.
#[test]
fn what_touched_reads_the_same_from_the_store_as_from_the_view() {
    let home = ClaudeHome::new();
    for (i, (cwd, days)) in [
        ("/w/shop", 9),
        ("/w/shop", 7),
        ("/w/blog", 5),
        ("/w/shop", 1),
    ]
    .into_iter()
    .enumerate()
    {
        home.session(
            &format!("5{i}000000-0000-4000-8000-00000000000{i}"),
            cwd,
            days_ago(days),
            &[("Fix the cart totals", "Ok."), ("And the refunds", "Done.")],
        );
    }
    let data = tempfile::tempdir().unwrap();
    let config = EngineConfig::new(data.path().join("eywa"), home.root());
    Engine::open(config.clone()).unwrap().ingest().unwrap();

    let engine = Engine::open(config).unwrap();
    let filters = [
        EdgeFilter::default(),
        EdgeFilter {
            relations: vec![Relation::Touched],
            ..EdgeFilter::default()
        },
        EdgeFilter {
            direction: Direction::In,
            ..EdgeFilter::default()
        },
        EdgeFilter {
            direction: Direction::Out,
            ..EdgeFilter::default()
        },
        EdgeFilter {
            from: Some(eywa::model::Timestamp(days_ago(6).timestamp_millis())),
            ..EdgeFilter::default()
        },
        EdgeFilter {
            relations: vec![Relation::Mentions, Relation::Used],
            until: Some(eywa::model::Timestamp(days_ago(4).timestamp_millis())),
            ..EdgeFilter::default()
        },
    ];
    let answers = |engine: &Engine| -> Vec<Vec<(String, String)>> {
        let mut out = Vec::new();
        for entity in ["project:shop", "project:blog", "tool:Read", "concept:cart"] {
            for filter in &filters {
                for limit in [1, 2, 100] {
                    let touches = engine.what_touched(entity, filter, limit).unwrap();
                    out.push(
                        touches
                            .iter()
                            .map(|t| (t.episode.name.clone(), t.edge.relation.to_string()))
                            .collect(),
                    );
                }
            }
        }
        out
    };
    let from_store = answers(&engine);
    assert!(
        !engine.graph().view_loaded(),
        "the answers came from the store"
    );
    assert!(from_store.iter().any(|a| a.len() >= 3), "{from_store:?}");
    engine.graph().view_from_snapshot().unwrap();
    engine.graph().clear_caches();
    assert!(engine.graph().view_loaded());
    assert_eq!(answers(&engine), from_store);
}
