//! Plan files (`~/.claude/plans/<slug>.md`) become Documents that the sessions carrying their
//! slug HAS_PLAN, whichever of the two eywa reads first.

use eywa::engine::{Engine, EngineConfig};
use eywa::graph::{Direction, EdgeFilter};
use eywa::model::{NodeId, NodeKind, Relation};

use crate::support::fixture::{ClaudeHome, days_ago, session_lines};

const SLUG: &str = "hidden-finding-goose";

fn write_session(home: &ClaudeHome, id: &str, slug: Option<&str>) {
    let mut lines = session_lines(
        id,
        "/w/app",
        days_ago(1),
        &[("Plan the refactor", "Here is the plan.")],
    );
    if let Some(slug) = slug {
        lines = crate::support::fixture::with_slug(lines, slug);
    }
    let dir = home.root().join("projects/-w-app");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{id}.jsonl")), lines.join("\n") + "\n").unwrap();
}

fn write_plan(home: &ClaudeHome, stem: &str, body: &str) {
    let dir = home.root().join("plans");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{stem}.md")), body).unwrap();
}

fn plans_of(engine: &Engine, episode: NodeId) -> Vec<String> {
    let filter = EdgeFilter {
        direction: Direction::Out,
        relations: vec![Relation::HasPlan],
        ..EdgeFilter::default()
    };
    engine
        .graph()
        .neighbors(episode, &filter, 10)
        .unwrap()
        .into_iter()
        .map(|n| n.node.name)
        .collect()
}

#[test]
fn plans_link_to_the_sessions_that_carry_their_slug_in_either_order() {
    let home = ClaudeHome::new();
    let a = "a1a00000-0000-4000-8000-000000000001";
    let b = "b2b00000-0000-4000-8000-000000000002";
    write_session(&home, a, Some(SLUG));
    write_session(&home, b, None);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    assert!(plans_of(&engine, NodeId::episode(a)).is_empty());

    // The plan arrives after its session; the password in it never reaches the graph.
    let secret = format!("hunter2-{}", "correct-horse");
    write_plan(
        &home,
        SLUG,
        &format!("# Refactor the cart\n\n## Steps\n1. Split totals\n\nDB_PASSWORD={secret}\n"),
    );
    let report = engine.ingest().unwrap();
    assert_eq!(report.plans, 1);
    assert_eq!(plans_of(&engine, NodeId::episode(a)), ["Refactor the cart"]);
    assert!(plans_of(&engine, NodeId::episode(b)).is_empty());
    let doc = engine.graph().node(NodeId::plan(SLUG)).unwrap().unwrap();
    assert!(matches!(doc.kind, NodeKind::Document(_)));
    let content = doc.content.clone().unwrap();
    assert!(content.contains("Split totals"));
    assert!(!content.contains(&secret), "{content}");

    // A session with the same slug that arrives after its plan links too.
    let c = "c3c00000-0000-4000-8000-000000000003";
    write_session(&home, c, Some(SLUG));
    engine.ingest().unwrap();
    assert_eq!(plans_of(&engine, NodeId::episode(c)), ["Refactor the cart"]);

    // Re-reading a session keeps its plan link.
    let path = home.root().join(format!("projects/-w-app/{a}.jsonl"));
    let more = session_lines(a, "/w/app", days_ago(1), &[("x", "y"), ("Go", "Done.")]);
    crate::support::fixture::append(&path, &more[2..]);
    engine.ingest().unwrap();
    assert_eq!(plans_of(&engine, NodeId::episode(a)), ["Refactor the cart"]);
    let (_, sessions) = engine
        .neighbors(
            &NodeId::plan(SLUG).to_string(),
            &EdgeFilter {
                direction: Direction::In,
                ..EdgeFilter::default()
            },
            10,
        )
        .unwrap();
    assert_eq!(sessions.len(), 2);
    assert!(engine.graph().check().unwrap().is_empty());
}

#[test]
fn an_agent_plan_links_to_its_subagent() {
    let home = ClaudeHome::new();
    let parent = "d4d00000-0000-4000-8000-000000000004";
    write_session(&home, parent, Some(SLUG));
    let agent_lines: Vec<String> =
        session_lines(parent, "/w/app", days_ago(1), &[("Explore", "Found it.")])
            .into_iter()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(&l).unwrap();
                v["isSidechain"] = true.into();
                v["agentId"] = "ab3ea81".into();
                v["slug"] = SLUG.into();
                v.to_string()
            })
            .collect();
    let dir = home
        .root()
        .join(format!("projects/-w-app/{parent}/subagents"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agent-ab3ea81.jsonl"),
        agent_lines.join("\n") + "\n",
    )
    .unwrap();
    write_plan(
        &home,
        SLUG,
        "# Main plan\n\nSeed 001 skips plans under fifty characters.\n",
    );
    write_plan(
        &home,
        &format!("{SLUG}-agent-ab3ea81"),
        "# Agent plan\n\nSeed 001 skips plans under fifty characters.\n",
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    let report = engine.ingest().unwrap();
    assert_eq!(report.plans, 2);
    assert_eq!(plans_of(&engine, NodeId::episode(parent)), ["Main plan"]);
    assert_eq!(
        plans_of(&engine, NodeId::agent(parent, "ab3ea81")),
        ["Agent plan"]
    );
}
