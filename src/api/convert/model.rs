//! The model types every service sends (nodes, episodes, agents, edges, handoffs), to the
//! wire and back.

use tonic::Status;

use std::mem::take;

use super::wire::wire;
use super::{bad, resume_command};
use crate::api::pb;
use crate::extract::render_markdown;
use crate::model::{
    AgentInfo, Compaction, DocRef, Edge, Episode, Handoff, HandoffSections, Node, Timestamp,
};

wire! {
    Node <=> pb::Node {
        id: id, name, kind = detail: node_kind, content: text, properties: collect,
        created_at: time, updated_at: time,
    }
    to_wire(n) { kind: n.kind.label().to_owned() }
    // Not sent: nothing that reads a node from a server shows them.
    from_wire(_n) { doc_refs: Vec::new() }
}

wire! {
    Episode <=> pb::Episode {
        session_id, short_id, source_path, project, project_path, cwd, git_branch: text,
        models, version: text, start: time, end: time, active_minutes, user_messages,
        assistant_messages, prompts, tool_calls, title, substance: small, agent: maybe,
        slug: text, compactions: messages, resumes, user, machine,
        tokens => { input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens }: tokens,
    }
    to_wire(e) {
        duration_minutes: e.duration_minutes(),
        resume_command: resume_command(&e.session_id),
    }
}

wire! {
    Compaction <=> pb::Compaction { at: maybe_time, trigger: text, pre_tokens, summary: text }
}

wire! {
    AgentInfo <=> pb::AgentInfo {
        agent_id, parent_session: text, agent_type: text, description: text,
        tool_use_id: text, layout: layout, summary: text, duration_ms, tokens, tool_uses,
    }
}

wire! {
    Edge <=> pb::Edge {
        id: edge_id, src: id, dst: id, relation: relation, confidence, valid_from: time,
        valid_to: maybe_time, recorded_at: time, expired_at: maybe_time, evidence: messages,
    }
}

wire! {
    DocRef <=> pb::Evidence { doc_id: id, chunk_id, score }
}

// The markdown is rendered before the sections are taken.
wire! {
    Handoff <=> pb::Handoff {
        session_id, short_id, episode = episode_id: id, date: date,
        duration_minutes: nonzero, model: text, headline, projects, keywords,
        substance: small, cwd, user, machine,
    }
    to_wire(h) {
        duration: h.duration_label(),
        markdown: render_markdown(h, &h.sections),
        resume_command: resume_command(&h.session_id),
        what_happened: take(&mut h.sections.what_happened),
        insights: take(&mut h.sections.insights).into_iter()
            .map(|(topic, explanation)| pb::Insight { topic, explanation }).collect(),
        key_files: take(&mut h.sections.key_files),
        open_threads: take(&mut h.sections.open_threads),
    }
    from_wire(h) {
        started_at: Timestamp::parse(&h.date).unwrap_or(Timestamp(0)),
        sections: HandoffSections {
            what_happened: take(&mut h.what_happened),
            insights: take(&mut h.insights).into_iter()
                .map(|pb::Insight { topic, explanation }| (topic, explanation)).collect(),
            key_files: take(&mut h.key_files),
            open_threads: take(&mut h.open_threads),
        },
    }
}

/// A node a server sent, where its answer must hold one.
pub(crate) fn node_from_wire(node: Option<pb::Node>) -> Result<Node, Status> {
    node.ok_or_else(|| bad("answer without its node"))?
        .try_into()
}
