//! What a Python Eywa handoff stands for in the graph: its Episode, projects and handoff
//! (the import's facts), and the handoff files of an Eywa folder.

use std::path::{Path, PathBuf};

use super::{HandoffFrontmatter, RedactionCounts, entity, redact};
use crate::model::{
    Edge, EntityType, Episode, Handoff, HandoffSections, Identity, Node, NodeId, Relation,
    SessionFacts, Timestamp,
};
use crate::{Error, Result};

/// The Episode, projects and handoff an imported handoff stands for.
pub fn imported_facts(
    mut front: HandoffFrontmatter,
    mut sections: HandoffSections,
    identity: &Identity,
    redacted: &mut RedactionCounts,
) -> SessionFacts {
    for name in front.projects.iter_mut().chain(front.model.iter_mut()) {
        super::redact_in_place(name, redacted);
    }
    let mut clean = |s: String| redact(&s, redacted).into_owned();
    let short = front.session_id.clone();
    let id = NodeId::episode(&format!("eywa:{short}"));
    let start = Timestamp::parse(&front.date.to_string()).unwrap_or(Timestamp(0));
    let minutes = front.duration_minutes.unwrap_or(0);
    let end = Timestamp(start.0 + i64::from(minutes) * 60_000);
    let headline = clean(front.headline);
    for list in [
        &mut sections.what_happened,
        &mut sections.key_files,
        &mut sections.open_threads,
    ] {
        *list = list.drain(..).map(&mut clean).collect();
    }
    sections.insights = sections
        .insights
        .drain(..)
        .map(|(t, e)| (clean(t), clean(e)))
        .collect();
    let mut entities = Vec::new();
    let mut edges = Vec::new();
    for name in &front.projects {
        // Eywa knows a project by name only; its path stays unknown.
        let project = NodeId::project(&format!("eywa:{name}"));
        entities.push(entity(EntityType::Project, project, name, None, start, end));
        let mut edge = Edge::new(id, Relation::Touched, project, start);
        edge.valid_to = Some(end);
        edges.push(edge);
    }
    let episode = Episode {
        session_id: format!("eywa:{short}"),
        short_id: short.clone(),
        source_path: String::new(),
        project: front.projects.first().cloned().unwrap_or_default(),
        project_path: String::new(),
        cwd: String::new(),
        git_branch: None,
        models: front.model.iter().cloned().collect(),
        version: None,
        start,
        end,
        active_minutes: minutes,
        user_messages: 0,
        assistant_messages: 0,
        prompts: 0,
        tool_calls: 0,
        title: headline.clone(),
        substance: front.substance,
        agent: None,
        tokens: Default::default(),
        slug: None,
        compactions: Vec::new(),
        resumes: Vec::new(),
        user: identity.user.clone(),
        machine: identity.machine.clone(),
    };
    let mut handoff = Handoff {
        session_id: format!("eywa:{short}"),
        short_id: short,
        episode: id,
        date: front.date,
        started_at: start,
        duration_minutes: front.duration_minutes,
        model: front.model,
        headline: headline.clone(),
        projects: front.projects,
        keywords: front.keywords,
        substance: front.substance,
        cwd: String::new(),
        sections,
        user: identity.user.clone(),
        machine: identity.machine.clone(),
    };
    // The keywords, projects and model too (the rest is clean already: idempotent).
    super::redact_handoff(&mut handoff, redacted);
    SessionFacts {
        episode: Node::from_episode(id, headline, episode),
        handoff: Some(handoff),
        entities,
        edges,
    }
}

/// Every `*.md` below `dir`, sorted (none when `dir` is missing).
pub fn markdown_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    if !dir.is_dir() {
        return Ok(out);
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).map_err(Error::io(&d))? {
            let path = entry.map_err(Error::io(&d))?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}
