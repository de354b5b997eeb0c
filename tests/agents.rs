//! Subagents in all three layouts become Episodes of their own, linked from their parent by
//! SPAWNED through the parent's `Task` result (`toolUseResult.agentId`) or the session
//! folder they sit in — never merged into the parent through `sessionId`.

use eywa::engine::{Engine, EngineConfig};
use eywa::graph::{Direction, EdgeFilter};
use eywa::model::{AgentLayout, Node, NodeId, Relation};
use serde_json::json;

use crate::support::fixture::{ClaudeHome, days_ago, session_lines};

pub(crate) const PARENT: &str = "a0000000-0000-4000-8000-000000000001";

/// A parent session whose assistant calls Task and whose next user line carries the
/// result with `toolUseResult.agentId`.
pub(crate) fn parent_lines(agent_id: &str, with_result: bool) -> Vec<String> {
    let start = days_ago(1);
    let mut lines = session_lines(
        PARENT,
        "/w/app",
        start,
        &[("Investigate the flaky test", "Starting an agent.")],
    );
    lines.push(
        json!({"type": "assistant", "uuid": "p-task", "sessionId": PARENT, "cwd": "/w/app",
               "timestamp": (start + chrono::Duration::minutes(2)).to_rfc3339(),
               "message": {"id": "msg_task", "role": "assistant", "model": "claude-opus-4-1",
                  "content": [{"type": "tool_use", "id": "toolu_task1", "name": "Task",
                               "input": {"subagent_type": "general-purpose",
                                         "description": "Find the flaky test",
                                         "prompt": "Look for it"}}]}})
        .to_string(),
    );
    if with_result {
        lines.push(
            json!({"type": "user", "uuid": "p-result", "parentUuid": "p-task", "sessionId": PARENT,
                   "cwd": "/w/app", "timestamp": (start + chrono::Duration::minutes(9)).to_rfc3339(),
                   "message": {"role": "user", "content": [{"type": "tool_result",
                               "tool_use_id": "toolu_task1", "content": "found it"}]},
                   "toolUseResult": {"agentId": agent_id, "status": "completed",
                                     "totalDurationMs": 420000, "totalTokens": 1234}})
            .to_string(),
        );
    }
    lines
}

/// A subagent transcript: every line `isSidechain`, carrying the parent's sessionId.
pub(crate) fn agent_lines(agent_id: &str, cwd: &str, report: &str) -> Vec<String> {
    let start = days_ago(1) + chrono::Duration::minutes(3);
    vec![
        json!({"type": "user", "uuid": format!("{agent_id}-u"), "parentUuid": null, "isSidechain": true,
               "sessionId": PARENT, "agentId": agent_id, "cwd": cwd,
               "timestamp": start.to_rfc3339(),
               "message": {"role": "user", "content": "Look for it"}})
        .to_string(),
        json!({"type": "assistant", "uuid": format!("{agent_id}-a"), "parentUuid": format!("{agent_id}-u"),
               "isSidechain": true, "sessionId": PARENT, "agentId": agent_id, "cwd": cwd,
               "timestamp": (start + chrono::Duration::minutes(5)).to_rfc3339(),
               "message": {"id": format!("msg_{agent_id}"), "role": "assistant", "model": "claude-haiku-4-5",
                  "content": [{"type": "tool_use", "id": format!("toolu_{agent_id}"), "name": "Grep", "input": {}},
                              {"type": "text", "text": report}]}})
        .to_string(),
    ]
}

pub(crate) fn report() -> String {
    format!(
        "The flaky test is in tests/net.rs. {}",
        "It races the server start. ".repeat(8)
    )
}

fn spawned(engine: &Engine) -> Vec<Node> {
    let filter = EdgeFilter {
        direction: Direction::Out,
        relations: vec![Relation::Spawned],
        ..EdgeFilter::default()
    };
    engine
        .graph()
        .neighbors(NodeId::episode(PARENT), &filter, 100)
        .unwrap()
        .into_iter()
        .map(|n| n.node)
        .collect()
}

pub(crate) fn write(home: &ClaudeHome, rel: &str, lines: &[String]) {
    let path = home.root().join("projects").join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn nested_subagents_link_through_their_folder_and_meta() {
    let home = ClaudeHome::new();
    write(
        &home,
        &format!("-w-app/{PARENT}.jsonl"),
        &parent_lines("a1b2c3d4e5f6a7b8c", true),
    );
    let cwd = "/w/app/.claude/worktrees/agent-a1b2c3d4";
    write(
        &home,
        &format!("-w-app/{PARENT}/subagents/agent-a1b2c3d4e5f6a7b8c.jsonl"),
        &agent_lines("a1b2c3d4e5f6a7b8c", cwd, &report()),
    );
    write(
        &home,
        &format!("-w-app/{PARENT}/subagents/agent-a1b2c3d4e5f6a7b8c.meta.json"),
        &[r#"{"agentType":"Explore","description":"Hunt the flake","worktreePath":"/w/app/.claude/worktrees/agent-a1b2c3d4"}"#.to_owned()],
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    let report_ = engine.ingest().unwrap();
    assert_eq!(report_.counts.sessions, 1, "the subagent is not a session");
    assert_eq!(report_.counts.agents, 1);
    assert_eq!(report_.counts.episodes, 2);
    assert_eq!(report_.agent_files_scanned, 1);

    let children = spawned(&engine);
    assert_eq!(children.len(), 1);
    let agent = children[0].episode().unwrap().agent.clone().unwrap();
    assert_eq!(agent.layout, AgentLayout::Nested);
    assert_eq!(agent.agent_id, "a1b2c3d4e5f6a7b8c");
    assert_eq!(agent.parent_session.as_deref(), Some(PARENT));
    assert_eq!(
        agent.agent_type.as_deref(),
        Some("Explore"),
        "meta wins over the call"
    );
    assert_eq!(agent.description.as_deref(), Some("Hunt the flake"));
    assert_eq!(
        agent.tool_use_id.as_deref(),
        Some("toolu_task1"),
        "from the parent's call"
    );
    assert_eq!(
        agent.summary.as_deref(),
        Some(report().trim()),
        "its last message, trimmed"
    );
    // The run as the parent's tool result reported it.
    assert_eq!(agent.duration_ms, Some(420_000));
    assert_eq!(agent.tokens, Some(1234));
    // The worktree belongs to the parent's project.
    assert_eq!(children[0].episode().unwrap().project, "app");
    // The parent's session lists it; its words are found under the parent's session.
    let session = engine.session(PARENT).unwrap();
    assert_eq!(session.agents.len(), 1);
    let hits = engine
        .search(&eywa::engine::SearchRequest {
            query: "races the server".into(),
            filter: eywa::model::SearchFilter {
                agent_types: vec!["Explore".into()],
                ..Default::default()
            },
            ..Default::default()
        })
        .unwrap()
        .hits;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].session_id, PARENT);
    assert_eq!(hits[0].agent.as_deref(), Some("Explore"));
    let none = eywa::engine::SearchRequest {
        query: "races the server".into(),
        filter: eywa::model::SearchFilter {
            agent_types: vec!["Plan".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(engine.search(&none).unwrap().hits.is_empty());
    // Agents have no handoff: `get` ranks sessions, as Eywa does.
    assert_eq!(engine.graph().handoffs().unwrap().len(), 1);
    assert!(engine.graph().check().unwrap().is_empty());
}

#[test]
fn workflow_agents_link_to_the_session_whose_folder_holds_them() {
    let home = ClaudeHome::new();
    write(
        &home,
        &format!("-w-app/{PARENT}.jsonl"),
        &parent_lines("unused", false),
    );
    for id in ["w1aaaaaaaaaaaaaaa", "w2bbbbbbbbbbbbbbb"] {
        write(
            &home,
            &format!("-w-app/{PARENT}/subagents/workflows/wf-review/agent-{id}.jsonl"),
            &agent_lines(id, "/w/app", &report()),
        );
    }
    // A workflow's journal is not a transcript.
    write(
        &home,
        &format!("-w-app/{PARENT}/subagents/workflows/wf-review/journal.jsonl"),
        &[r#"{"type":"step","name":"review"}"#.to_owned()],
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    let report_ = engine.ingest().unwrap();
    assert_eq!(report_.agent_files_scanned, 2);
    assert_eq!(report_.counts.sessions, 1);
    let mut children: Vec<_> = spawned(&engine)
        .into_iter()
        .map(|n| n.episode().unwrap().agent.clone().unwrap())
        .collect();
    children.sort_by(|a, b| a.agent_id.cmp(&b.agent_id));
    assert_eq!(children.len(), 2);
    for (agent, id) in children
        .iter()
        .zip(["w1aaaaaaaaaaaaaaa", "w2bbbbbbbbbbbbbbb"])
    {
        assert_eq!(agent.agent_id, id);
        assert_eq!(agent.layout, AgentLayout::Workflow);
        assert_eq!(agent.parent_session.as_deref(), Some(PARENT));
    }
    // The library lists the session once, with its agents.
    let page = engine.list_sessions(None, 10, 0).unwrap();
    assert_eq!(page.total, 1);
    assert_eq!(
        page.sessions[0].agent_ids,
        ["w1aaaaaaaaaaaaaaa", "w2bbbbbbbbbbbbbbb"]
    );
    assert!(engine.graph().check().unwrap().is_empty());
}

#[test]
fn root_level_agents_link_through_the_parents_task_result() {
    let home = ClaudeHome::new();
    write(
        &home,
        &format!("-w-app/{PARENT}.jsonl"),
        &parent_lines("ea02459f", true),
    );
    write(
        &home,
        "-w-app/agent-ea02459f.jsonl",
        &agent_lines("ea02459f", "/w/app", &report()),
    );
    // A warmup agent whose parent session is not on disk: an episode, but no link.
    let mut orphan = agent_lines("41be4aa9", "/w/app", "Ready.");
    for line in &mut orphan {
        *line = line.replace(PARENT, "4e062ed2-cbfa-4cb8-bc9a-1551bf168eaf");
    }
    write(&home, "-w-app/agent-41be4aa9.jsonl", &orphan);

    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    let report_ = engine.ingest().unwrap();
    assert_eq!(report_.files_scanned, 1, "agent files are not sessions");
    assert_eq!(report_.counts.sessions, 1);
    assert_eq!(report_.counts.agents, 2);

    let children = spawned(&engine);
    assert_eq!(children.len(), 1);
    let agent = children[0].episode().unwrap().agent.clone().unwrap();
    assert_eq!(agent.layout, AgentLayout::RootLevel);
    assert_eq!(
        agent.agent_type.as_deref(),
        Some("general-purpose"),
        "from the Task call"
    );
    assert_eq!(agent.description.as_deref(), Some("Find the flaky test"));
    assert_eq!(agent.tool_use_id.as_deref(), Some("toolu_task1"));
    assert_eq!(children[0].name, "Find the flaky test");
    // The parent is not merged with its agents: its own counts are its own.
    let parent = engine
        .graph()
        .node(NodeId::episode(PARENT))
        .unwrap()
        .unwrap();
    assert_eq!(parent.episode().unwrap().prompts, 1);

    // Re-reading the parent (it grew) keeps the link; re-ingesting changes nothing.
    let before = engine.graph().counts().unwrap();
    let path = home.root().join(format!("projects/-w-app/{PARENT}.jsonl"));
    let extra = session_lines(
        PARENT,
        "/w/app",
        days_ago(1),
        &[("x", "y"), ("Thanks", "Welcome.")],
    );
    crate::support::fixture::append(&path, &extra[2..]);
    engine.ingest().unwrap();
    assert_eq!(spawned(&engine).len(), 1);
    assert_eq!(engine.graph().counts().unwrap().agents, before.agents);
    assert!(engine.graph().check().unwrap().is_empty());
}

#[test]
fn an_agent_read_before_its_parent_is_linked_when_the_parent_arrives() {
    let home = ClaudeHome::new();
    write(
        &home,
        "-w-app/agent-ea02459f.jsonl",
        &agent_lines("ea02459f", "/w/app", &report()),
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    assert_eq!(engine.graph().counts().unwrap().agents, 1);
    write(
        &home,
        &format!("-w-app/{PARENT}.jsonl"),
        &parent_lines("ea02459f", true),
    );
    engine.ingest().unwrap();
    assert_eq!(spawned(&engine).len(), 1);
}

#[test]
fn inline_sidechain_runs_split_out_of_the_parent() {
    let home = ClaudeHome::new();
    let mut lines = parent_lines("unused", false);
    // 1.0.x: the agent's lines sit in the parent's file, marked isSidechain.
    for line in agent_lines("inline", "/w/app", &report()) {
        let mut v: serde_json::Value = serde_json::from_str(&line).unwrap();
        v.as_object_mut().unwrap().remove("agentId");
        lines.push(v.to_string());
    }
    write(&home, &format!("-w-app/{PARENT}.jsonl"), &lines);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    let report_ = engine.ingest().unwrap();
    assert_eq!(report_.counts.sessions, 1);
    assert_eq!(report_.counts.agents, 1);
    let children = spawned(&engine);
    assert_eq!(children.len(), 1);
    let episode = children[0].episode().unwrap();
    assert_eq!(episode.agent.as_ref().unwrap().layout, AgentLayout::Inline);
    assert_eq!(episode.prompts, 1);
    assert_eq!(episode.tool_calls, 1);
    // The parent does not count the agent's lines as its own.
    let parent = engine
        .graph()
        .node(NodeId::episode(PARENT))
        .unwrap()
        .unwrap();
    let p = parent.episode().unwrap();
    assert_eq!(p.tool_calls, 2, "Read and Task, not the agent's Grep");
    assert!(engine.graph().check().unwrap().is_empty());
}

#[test]
fn the_corpus_subagents_are_linked_to_their_parents() {
    let Some(real) = crate::support::shared("corpus/claude-code/real_projects") else {
        return;
    };
    let home = crate::support::corpus_home(&real);
    let engine = Engine::open(EngineConfig::temporary(home.path())).unwrap();
    let report = engine.ingest().unwrap();
    assert!(report.agent_files_scanned >= 7, "{report:?}");
    // Each parent/agent pair named by a parent's toolUseResult.agentId and present on disk.
    let pairs = [
        (
            "cb2e607c-c758-415a-8b45-c49e4631906a",
            "ea02459f",
            AgentLayout::RootLevel,
        ),
        (
            "a7da6a22-facc-4fcd-8bab-f83c87862004",
            "c8d9b115",
            AgentLayout::RootLevel,
        ),
        (
            "29ccd257-68b1-427f-ae5f-6524b7cb6f20",
            "a2271d1",
            AgentLayout::Nested,
        ),
        (
            "ef958aa1-0e93-49f0-bb71-150f63befcd1",
            "a4ca7529859c158c2",
            AgentLayout::Nested,
        ),
        (
            "ef958aa1-0e93-49f0-bb71-150f63befcd1",
            "a52886dc180afb356",
            AgentLayout::Nested,
        ),
    ];
    let filter = EdgeFilter {
        direction: Direction::Out,
        relations: vec![Relation::Spawned],
        ..EdgeFilter::default()
    };
    for (parent, agent_id, layout) in pairs {
        let agent_file_exists = real.read_dir().unwrap().flatten().any(|d| {
            d.path().join(format!("agent-{agent_id}.jsonl")).exists()
                || d.path()
                    .join(parent)
                    .join(format!("subagents/agent-{agent_id}.jsonl"))
                    .exists()
        });
        if !agent_file_exists {
            continue;
        }
        let children = engine
            .graph()
            .neighbors(NodeId::episode(parent), &filter, 100)
            .unwrap();
        let child = children
            .iter()
            .find(|n| {
                n.node
                    .episode()
                    .and_then(|e| e.agent.as_ref())
                    .is_some_and(|a| a.agent_id == agent_id)
            })
            .unwrap_or_else(|| panic!("{parent} SPAWNED agent-{agent_id}"));
        let info = child.node.episode().unwrap().agent.clone().unwrap();
        assert_eq!(info.layout, layout, "{agent_id}");
        assert!(
            info.tool_use_id.is_some(),
            "{agent_id}: the Task call is known"
        );
    }
    assert!(engine.graph().check().unwrap().is_empty());
}
