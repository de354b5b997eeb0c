//! JSON and one-line renderings of graph values for the CLI.

use serde_json::{Value, json};

use eywa::model::{Edge, Node, NodeKind, Timestamp};

pub(crate) fn time(t: Timestamp) -> String {
    t.to_rfc3339()
}

pub(crate) fn node_json(node: &Node) -> Value {
    let mut v = json!({
        "id": node.id.to_string(),
        "kind": node.kind.label(),
        "name": node.name,
        "created_at": time(node.created_at),
        "updated_at": time(node.updated_at),
    });
    match &node.kind {
        NodeKind::Episode(e) => {
            v["episode"] = json!({
                "session_id": e.session_id,
                "short_id": e.short_id,
                "project": e.project,
                "project_path": e.project_path,
                "cwd": e.cwd,
                "git_branch": e.git_branch,
                "user": e.user,
                "machine": e.machine,
                "models": e.models,
                "version": e.version,
                "start": time(e.start),
                "end": time(e.end),
                "duration_minutes": e.duration_minutes(),
                "active_minutes": e.active_minutes,
                "user_messages": e.user_messages,
                "assistant_messages": e.assistant_messages,
                "prompts": e.prompts,
                "tool_calls": e.tool_calls,
                "title": e.title,
                "substance": e.substance,
                "source_path": e.source_path,
                "resume_command": eywa::claude::resume_command(&e.session_id, None),
                "tokens": {"input": e.tokens.input, "output": e.tokens.output,
                           "cache_creation": e.tokens.cache_creation,
                           "cache_read": e.tokens.cache_read},
                "agent": e.agent.as_ref().map(|a| json!({
                    "agent_id": a.agent_id, "parent_session": a.parent_session,
                    "agent_type": a.agent_type, "description": a.description,
                    "tool_use_id": a.tool_use_id, "layout": format!("{:?}", a.layout),
                    "summary": a.summary,
                })),
            });
        }
        NodeKind::Entity(e) => {
            v["entity"] = json!({
                "entity_type": e.entity_type.as_str(),
                "aliases": e.aliases,
                "path": e.path,
            });
        }
        NodeKind::Document(_) | NodeKind::Memory(_) => {}
    }
    v
}

pub(crate) fn edge_json(edge: &Edge) -> Value {
    json!({
        "id": edge.id.to_string(),
        "src": edge.src.to_string(),
        "dst": edge.dst.to_string(),
        "relation": edge.relation.as_str(),
        "confidence": edge.confidence,
        "valid_from": time(edge.valid_from),
        "valid_to": edge.valid_to.map(time),
        "recorded_at": time(edge.recorded_at),
        "expired_at": edge.expired_at.map(time),
        "evidence": edge.evidence.iter().map(|e| json!({
            "doc_id": e.doc_id.to_string(),
            "chunk_id": e.chunk_id,
            "score": e.score,
        })).collect::<Vec<_>>(),
    })
}

/// `Episode  2026-01-05  eywa  Fix the tokenizer  (id)` and the like.
pub(crate) fn node_line(node: &Node) -> String {
    match &node.kind {
        NodeKind::Episode(_) => eywa::present::session::episode_text(node).unwrap_or_default(),
        NodeKind::Entity(e) => match &e.path {
            Some(path) if path != &node.name => {
                format!(
                    "{}  {}  {}  ({})",
                    e.entity_type.as_str(),
                    node.name,
                    path,
                    node.id
                )
            }
            _ => format!("{}  {}  ({})", e.entity_type.as_str(), node.name, node.id),
        },
        other => format!("{}  {}  ({})", other.label(), node.name, node.id),
    }
}

/// `TOUCHED 2026-01-05 → 2026-01-05`.
pub(crate) fn edge_line(edge: &Edge) -> String {
    let to = edge
        .valid_to
        .map_or("open".to_owned(), |t| t.date().to_string());
    let expired = edge
        .expired_at
        .map_or(String::new(), |t| format!(" (superseded {})", t.date()));
    format!(
        "{} {} → {}{}",
        edge.relation,
        edge.valid_from.date(),
        to,
        expired
    )
}
