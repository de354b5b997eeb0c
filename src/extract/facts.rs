//! A transcript's facts: its Episode, its handoff (main sessions), the projects and tools it
//! touched, and the edges between them.

use std::collections::BTreeMap;

use super::project::{absolute, projects_of, relative, within};
use super::sections::sections;
use super::{ProjectPath, headline, keywords, substance};
use crate::claude::Transcript;
use crate::model::{
    AgentInfo, DocRef, Edge, Entity, EntityType, Episode, Handoff, Identity, Node, NodeId,
    NodeKind, Relation, SessionFacts, Timestamp, TokenUsage,
};

/// The episode property holding `sessions-index.json`'s `messageCount`.
pub const MESSAGE_COUNT: &str = "index_message_count";
/// The episode property marking a session known from `sessions-index.json` only, and the
/// one holding its first prompt.
pub const INDEX_ONLY: &str = "index_only";
pub const FIRST_PROMPT: &str = "first_prompt";
/// The summary `sessions-index.json` gives a session known from it only.
pub const INDEX_SUMMARY: &str = "index_summary";

/// Where a transcript came from.
#[derive(Debug, Clone)]
pub struct Origin<'a> {
    /// The main session's uuid, or the subagent's file stem / inline run name.
    pub session_id: &'a str,
    pub episode_id: NodeId,
    pub source_path: &'a str,
    /// Set for subagent runs.
    pub agent: Option<AgentInfo>,
    /// Who wrote it, where.
    pub identity: &'a Identity,
}

/// Builds the facts of one transcript, or `None` when it holds no user or assistant
/// message (empty, summary-only and snapshot-only files are not sessions).
pub fn episode_facts(origin: Origin<'_>, t: &Transcript) -> Option<SessionFacts> {
    if !t.has_messages() {
        return None;
    }
    let start = t.first_ts.unwrap_or(Timestamp(0));
    let end = t.last_ts.unwrap_or(start);
    let short_id = crate::claude::short_id(origin.session_id);
    let projects = projects_of(t);
    let main_project = projects.first().cloned();
    let mut models: Vec<(&String, &u32)> = t.models.iter().collect();
    models.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let models: Vec<String> = models.into_iter().map(|(m, _)| m.clone()).collect();

    let mut title = headline(t);
    let mut agent = origin.agent;
    if let Some(agent) = &mut agent {
        agent.summary = t.final_report.clone();
        if let Some(description) = &agent.description {
            title = description.clone();
        }
    }
    let substance = substance(t);
    let episode_id = origin.episode_id;
    let episode = Episode {
        session_id: origin.session_id.to_owned(),
        short_id: short_id.clone(),
        source_path: origin.source_path.to_owned(),
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
        agent,
        tokens: TokenUsage {
            input: t.usage.input,
            output: t.usage.output,
            cache_creation: t.usage.cache_creation,
            cache_read: t.usage.cache_read,
        },
        slug: t.slug.clone(),
        compactions: t.compactions.clone(),
        resumes: t.resumes.iter().cloned().collect(),
        user: origin.identity.user.clone(),
        machine: origin.identity.machine.clone(),
    };
    let sections = sections(t, &projects);
    let handoff = episode.agent.is_none().then(|| Handoff {
        session_id: origin.session_id.to_owned(),
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
        sections,
        user: episode.user.clone(),
        machine: episode.machine.clone(),
    });

    let mut entities = Vec::new();
    let mut edges = Vec::new();
    for project in &projects {
        let id = NodeId::project(&project.path);
        entities.push(entity(
            EntityType::Project,
            id,
            &project.name,
            Some(&project.path),
            start,
            end,
        ));
        let mut edge = Edge::new(episode_id, Relation::Touched, id, start);
        edge.valid_to = Some(end);
        edges.push(edge);
    }
    let evidence = |uuid: Option<&String>| -> Vec<DocRef> {
        uuid.map(|u| DocRef {
            doc_id: episode_id,
            chunk_id: format!("msg:{u}"),
            score: 1.0,
        })
        .into_iter()
        .collect()
    };
    for (name, usage) in &t.tools {
        let id = NodeId::tool(name);
        let (first, last) = (usage.first.unwrap_or(start), usage.last.unwrap_or(end));
        entities.push(entity(EntityType::Tool, id, name, None, first, last));
        let mut edge = Edge::new(episode_id, Relation::Used, id, first);
        edge.valid_to = Some(last);
        edge.evidence = evidence(usage.evidence.as_ref());
        edge.confidence = Edge::supported(usage.count, usage.errors);
        edges.push(edge);
    }
    // Concepts: the session's keywords, each evidenced by the first prompt that says it.
    let concepts = handoff
        .as_ref()
        .map(|h| h.keywords.clone())
        .unwrap_or_else(|| keywords(t, &projects));
    for term in &concepts {
        let id = NodeId::concept(term);
        entities.push(entity(EntityType::Concept, id, term, None, start, end));
        let mut edge = Edge::new(episode_id, Relation::Mentions, id, start);
        edge.valid_to = Some(end);
        let said = t
            .prompts
            .iter()
            .position(|p| p.to_lowercase().contains(term.as_str()))
            .and_then(|i| t.prompt_uuids.get(i).and_then(Option::as_ref));
        edge.evidence = evidence(said);
        // Supported by every prompt and reply that says the term.
        let says = t
            .prompts
            .iter()
            .chain(&t.assistant_text)
            .filter(|text| text.to_lowercase().contains(term.as_str()))
            .count();
        edge.confidence = Edge::supported(u32::try_from(says).unwrap_or(u32::MAX), 0);
        edges.push(edge);
    }

    // People: commit authors the session's commands named, each part of the organization
    // their address belongs to.
    for (name, seen) in &t.people {
        let (first, last) = (seen.first.unwrap_or(start), seen.last.unwrap_or(end));
        let mut edge = person_facts(
            episode_id,
            name,
            seen.organization.as_deref(),
            (first, last),
            &mut entities,
            &mut edges,
        );
        edge.valid_to = Some(last);
        edge.evidence = evidence(seen.evidence.as_ref());
        edge.confidence = Edge::supported(seen.count, 0);
        edges.push(edge);
    }

    for (raw, usage) in &t.files {
        let path = absolute(raw, t.cwds.first().map(String::as_str));
        let project = projects.iter().find(|p| within(&path, &p.path));
        let name = project.map_or(path.as_str(), |p| relative(&path, &p.path));
        let id = NodeId::file(&path);
        let (first, last) = (usage.first.unwrap_or(start), usage.last.unwrap_or(end));
        entities.push(entity(EntityType::File, id, name, Some(&path), first, last));
        let uses = [
            (usage.read, Relation::Read),
            (usage.edited, Relation::Edited),
            (usage.created, Relation::Created),
        ];
        for (did, (_, relation)) in uses.into_iter().enumerate().filter(|(_, (d, _))| *d) {
            let mut edge = Edge::new(episode_id, relation, id, first);
            edge.valid_to = Some(last);
            edge.evidence = evidence(usage.evidence.as_ref());
            // From the calls that did this to the file, less those that failed.
            edge.confidence = Edge::supported(usage.calls[did], usage.errors[did]);
            edges.push(edge);
        }
        if let Some(project) = project {
            // Structural: held as long as the file is there, so from the epoch, open-ended
            // (a per-session start would make every session a new version of the fact).
            edges.push(Edge::new(
                id,
                Relation::PartOf,
                NodeId::project(&project.path),
                Timestamp(0),
            ));
        }
    }

    let mut properties = BTreeMap::new();
    properties.insert("tool_calls".to_owned(), t.tool_calls.to_string());
    if let Some(count) = t.index_message_count {
        // `sessions-index.json`'s depth of the conversation (seed 004), for ranking.
        properties.insert(MESSAGE_COUNT.to_owned(), count.to_string());
    }
    let content = episode.agent.as_ref().and_then(|a| a.summary.clone());
    let episode = Node {
        content,
        properties,
        ..Node::from_episode(episode_id, title, episode)
    };
    Some(SessionFacts {
        episode,
        handoff,
        entities,
        edges,
    })
}

/// `parent` SPAWNED `child`, valid over the child's run.
pub fn spawned(parent: NodeId, child: &Node) -> Edge {
    let mut edge = Edge::new(parent, Relation::Spawned, child.id, child.created_at);
    edge.valid_to = Some(child.updated_at);
    edge
}

/// An Entity node seen first at `first` and last at `last`.
pub fn entity(
    entity_type: EntityType,
    id: NodeId,
    name: &str,
    path: Option<&str>,
    first: Timestamp,
    last: Timestamp,
) -> Node {
    Node {
        id,
        name: name.to_owned(),
        kind: NodeKind::Entity(Entity {
            entity_type,
            aliases: Vec::new(),
            path: path.map(str::to_owned),
        }),
        content: None,
        properties: Default::default(),
        created_at: first,
        updated_at: last,
        doc_refs: Vec::new(),
    }
}

/// Person `name`, seen from `seen.0` to `seen.1`, into `entities`, with the Organization
/// it is PART_OF (when known) and that edge into `edges`; returns the MENTIONS edge from
/// `by` to the person, for the caller to qualify and push.
pub(crate) fn person_facts(
    by: NodeId,
    name: &str,
    organization: Option<&str>,
    (first, last): (Timestamp, Timestamp),
    entities: &mut Vec<Node>,
    edges: &mut Vec<Edge>,
) -> Edge {
    let person = NodeId::person(name);
    entities.push(entity(EntityType::Person, person, name, None, first, last));
    if let Some(domain) = organization {
        let org = NodeId::organization(domain);
        entities.push(entity(
            EntityType::Organization,
            org,
            domain,
            None,
            first,
            last,
        ));
        // Structural, as a file's project is: from the epoch, open-ended.
        edges.push(Edge::new(person, Relation::PartOf, org, Timestamp(0)));
    }
    Edge::new(by, Relation::Mentions, person, first)
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
