//! Transcript → episode, handoff, entities and relations. Pure functions: no storage.

mod handoff;
mod keywords;
mod project;

pub use self::handoff::{headline, substance};
pub use self::keywords::keywords;
pub use self::project::{ProjectPath, project_of};

use crate::claude::{SessionFile, Transcript};
use crate::model::{
    Edge, Entity, EntityType, Episode, Handoff, Node, NodeId, NodeKind, Relation, Timestamp,
};

/// Everything one session file contributes to the graph.
#[derive(Debug, Clone)]
pub struct SessionFacts {
    pub episode: Node,
    pub handoff: Handoff,
    /// Project and tool entities. Shared with other sessions: merged on write.
    pub entities: Vec<Node>,
    pub edges: Vec<Edge>,
}

/// Builds the facts of one session, or `None` when the file holds no user or assistant
/// message (empty, summary-only and snapshot-only files are not sessions).
pub fn session_facts(file: &SessionFile, t: &Transcript) -> Option<SessionFacts> {
    if !t.has_messages() {
        return None;
    }
    let start = t.first_ts.unwrap_or(Timestamp(0));
    let end = t.last_ts.unwrap_or(start);
    let short_id: String = t.session_id.chars().take(8).collect();
    let projects: Vec<ProjectPath> = {
        let mut seen: Vec<ProjectPath> = Vec::new();
        for cwd in &t.cwds {
            let p = project_of(cwd);
            if !seen.iter().any(|s| s.path == p.path) {
                seen.push(p);
            }
        }
        seen
    };
    let main_project = projects.first().cloned();
    let mut models: Vec<(&String, &u32)> = t.models.iter().collect();
    models.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let models: Vec<String> = models.into_iter().map(|(m, _)| m.clone()).collect();

    let title = headline(t);
    let substance = substance(t);
    let episode_id = NodeId::episode(&t.session_id);
    let episode = Episode {
        session_id: t.session_id.clone(),
        short_id: short_id.clone(),
        source_path: file.path.to_string_lossy().into_owned(),
        project: main_project
            .as_ref()
            .map(|p| p.name.clone())
            .unwrap_or_default(),
        project_path: main_project
            .as_ref()
            .map(|p| p.path.clone())
            .unwrap_or_default(),
        cwd: t.cwds.first().cloned().unwrap_or_default(),
        git_branch: t.git_branch.clone(),
        models: models.clone(),
        version: t.version.clone(),
        start,
        end,
        active_minutes: u32::try_from((t.active_ms + 30_000) / 60_000).unwrap_or(u32::MAX),
        user_messages: t.user_lines,
        assistant_messages: t.assistant_responses,
        prompts: t.prompt_count,
        tool_calls: t.tool_calls,
        title: title.clone(),
        substance,
    };
    let handoff = Handoff {
        session_id: t.session_id.clone(),
        short_id,
        episode: episode_id,
        date: start.date(),
        started_at: start,
        duration_minutes: t.first_ts.is_some().then_some(episode.active_minutes),
        model: models.first().cloned(),
        headline: title.clone(),
        projects: project_names(&projects),
        keywords: keywords(t, &projects),
        substance,
        cwd: episode.cwd.clone(),
    };

    let mut entities = Vec::new();
    let mut edges = Vec::new();
    for project in &projects {
        let id = NodeId::project(&project.path);
        entities.push(Node {
            id,
            name: project.name.clone(),
            kind: NodeKind::Entity(Entity {
                entity_type: EntityType::Project,
                aliases: Vec::new(),
                path: Some(project.path.clone()),
            }),
            content: None,
            properties: Default::default(),
            created_at: start,
            updated_at: end,
            doc_refs: Vec::new(),
        });
        let mut edge = Edge::new(episode_id, Relation::Touched, id, start);
        edge.valid_to = Some(end);
        edges.push(edge);
    }
    for (name, usage) in &t.tools {
        let id = NodeId::tool(name);
        entities.push(Node {
            id,
            name: name.clone(),
            kind: NodeKind::Entity(Entity {
                entity_type: EntityType::Tool,
                aliases: Vec::new(),
                path: None,
            }),
            content: None,
            properties: Default::default(),
            created_at: usage.first.unwrap_or(start),
            updated_at: usage.last.unwrap_or(end),
            doc_refs: Vec::new(),
        });
        let mut edge = Edge::new(episode_id, Relation::Used, id, usage.first.unwrap_or(start));
        edge.valid_to = Some(usage.last.unwrap_or(end));
        edge.confidence = 1.0;
        edges.push(edge);
    }

    let mut properties = std::collections::BTreeMap::new();
    properties.insert("tool_calls".to_owned(), t.tool_calls.to_string());
    let episode = Node {
        id: episode_id,
        name: title,
        kind: NodeKind::Episode(Box::new(episode)),
        content: None,
        properties,
        created_at: start,
        updated_at: end,
        doc_refs: Vec::new(),
    };
    Some(SessionFacts {
        episode,
        handoff,
        entities,
        edges,
    })
}

/// Project names in order of first appearance, each once.
fn project_names(projects: &[ProjectPath]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for p in projects {
        if !names.contains(&p.name) {
            names.push(p.name.clone());
        }
    }
    names
}
