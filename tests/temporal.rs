//! Time on two axes: superseded facts are hidden from the current view, visible as of a
//! time before their expiry, and never deleted.

use eywa::engine::{Engine, EngineConfig};
use eywa::graph::{AsOf, Direction, EdgeFilter, EdgeRef};
use eywa::model::{Edge, NodeId, Relation, Timestamp};

use crate::support::fixture::{ClaudeHome, days_ago, session_lines};

fn project(engine: &Engine, name: &str) -> NodeId {
    engine.resolve_one(&format!("project:{name}")).unwrap().id
}

fn touched(engine: &Engine, episode: NodeId, as_of: AsOf) -> Vec<String> {
    let filter = EdgeFilter {
        direction: Direction::Out,
        relations: vec![Relation::Touched],
        as_of,
        ..EdgeFilter::default()
    };
    let mut names: Vec<String> = engine
        .graph()
        .neighbors(episode, &filter, 100)
        .unwrap()
        .into_iter()
        .map(|n| n.node.name)
        .collect();
    names.sort();
    names
}

#[test]
fn a_superseded_edge_is_hidden_now_visible_as_of_before_and_still_stored() {
    let home = ClaudeHome::new();
    home.session(
        "aaaaaaaa-0000-4000-8000-000000000001",
        "/w/old-name",
        days_ago(3),
        &[("Work", "Done.")],
    );
    home.session(
        "bbbbbbbb-0000-4000-8000-000000000002",
        "/w/new-name",
        days_ago(2),
        &[("Work", "Done.")],
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let episode = NodeId::episode("aaaaaaaa-0000-4000-8000-000000000001");
    let old = engine
        .graph()
        .neighbors(
            episode,
            &EdgeFilter {
                relations: vec![Relation::Touched],
                ..EdgeFilter::default()
            },
            10,
        )
        .unwrap()
        .remove(0)
        .edge;
    let before = Timestamp::now();
    assert!(old.recorded_at <= before);

    // We learn the session really belonged to the renamed project.
    let new = Edge {
        valid_to: old.valid_to,
        ..Edge::new(
            episode,
            Relation::Touched,
            project(&engine, "new-name"),
            old.valid_from,
        )
    };
    std::thread::sleep(std::time::Duration::from_millis(5));
    engine
        .graph()
        .supersede(EdgeRef::of(&old), new.clone())
        .unwrap();

    // Current view: only the new fact.
    assert_eq!(touched(&engine, episode, AsOf::default()), ["new-name"]);
    // What eywa knew before: only the old one.
    let then = AsOf {
        recorded: Some(before),
        ..AsOf::default()
    };
    assert_eq!(touched(&engine, episode, then), ["old-name"]);
    // Both versions are stored; the old one is expired, not deleted.
    let versions = engine.graph().edge_versions(EdgeRef::of(&old)).unwrap();
    assert_eq!(versions.len(), 1);
    assert!(versions[0].expired_at.is_some_and(|e| e > before));
    assert_eq!(engine.graph().check().unwrap(), Vec::<String>::new());
    // what-touched follows the same rules.
    let filter = EdgeFilter::default();
    assert!(
        engine
            .what_touched("project:old-name", &filter, 10)
            .unwrap()
            .is_empty()
    );
    let as_of = EdgeFilter {
        as_of: then,
        ..EdgeFilter::default()
    };
    assert_eq!(
        engine
            .what_touched("project:old-name", &as_of, 10)
            .unwrap()
            .len(),
        1
    );
    // And the view rebuilt from disk agrees.
    drop(engine);
}

#[test]
fn valid_time_as_of_sees_what_held_then() {
    let home = ClaudeHome::new();
    home.session(
        "cccccccc-0000-4000-8000-000000000003",
        "/w/app",
        days_ago(10),
        &[("Start", "Ok.")],
    );
    home.session(
        "dddddddd-0000-4000-8000-000000000004",
        "/w/app",
        days_ago(2),
        &[("Later", "Ok.")],
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let at = |days| AsOf {
        valid: Some(Timestamp(days_ago(days).timestamp_millis() + 60_000)),
        ..AsOf::default()
    };
    let touched_at = |a: AsOf| {
        let f = EdgeFilter {
            as_of: a,
            ..EdgeFilter::default()
        };
        engine.what_touched("project:app", &f, 10).unwrap().len()
    };
    assert_eq!(touched_at(AsOf::default()), 2);
    assert_eq!(
        touched_at(at(10)),
        1,
        "ten days ago only the first session was working"
    );
    assert_eq!(touched_at(at(2)), 1);
    assert_eq!(
        touched_at(at(6)),
        0,
        "between the two sessions nothing touched it"
    );
}

#[test]
fn a_grown_session_gets_a_new_version_and_keeps_the_old_one() {
    let home = ClaudeHome::new();
    let id = "eeeeeeee-0000-4000-8000-000000000005";
    let path = home.session(id, "/w/lib", days_ago(1), &[("One", "Ok.")]);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let before = Timestamp::now();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let more = session_lines(id, "/w/lib", days_ago(1), &[("x", "y"), ("Two", "Ok.")]);
    crate::support::fixture::append(&path, &more[2..]);
    engine.ingest().unwrap();

    let episode = NodeId::episode(id);
    let edge_id = EdgeRef::new(
        episode,
        Relation::Touched,
        engine.resolve_one("project:lib").unwrap().id,
    );
    let versions = engine.graph().edge_versions(edge_id).unwrap();
    assert_eq!(versions.len(), 2, "{versions:#?}");
    assert!(versions[0].expired_at.is_some());
    assert!(versions[1].expired_at.is_none());
    assert!(versions[1].valid_to > versions[0].valid_to);
    let then = engine
        .graph()
        .edge_as_of(
            edge_id,
            AsOf {
                recorded: Some(before),
                ..AsOf::default()
            },
        )
        .unwrap()
        .unwrap();
    assert_eq!(then.valid_to, versions[0].valid_to);
    assert_eq!(
        engine.graph().counts().unwrap().edges,
        engine.graph().counts().unwrap().edges
    );
    assert_eq!(engine.graph().check().unwrap(), Vec::<String>::new());
}
