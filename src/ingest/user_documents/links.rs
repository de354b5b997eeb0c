//! How a document joins the graph: its node's facts (the project whose folder holds it,
//! its key concepts and the people it names), and the sessions that used its file.

use std::collections::BTreeSet;

use super::{MAX_AUTHORS, Writer};
use crate::Result;
use crate::docs::{DOCUMENT_TYPE, DocumentInfo, Documents, document_id};
use crate::extract::{SessionFacts, entity, person_facts};
use crate::model::{Document, Edge, EntityType, Node, NodeId, NodeKind, Relation, Timestamp};

impl Writer<'_> {
    /// Links each episode of `facts` that READ, EDITED or CREATED a file that is a
    /// document to that document too, with the same relation, time and confidence; its
    /// evidence names the version current when the session last used the file.
    pub(in crate::ingest) fn link_documents(&self, facts: &mut [SessionFacts]) -> Result<()> {
        let docs = self.documents();
        for f in facts {
            let paths: std::collections::HashMap<NodeId, &str> = f
                .entities
                .iter()
                .filter_map(|n| match &n.kind {
                    NodeKind::Entity(e) if e.entity_type == EntityType::File => {
                        e.path.as_deref().map(|p| (n.id, p))
                    }
                    _ => None,
                })
                .collect();
            let mut links = Vec::new();
            for edge in &f.edges {
                if !matches!(
                    edge.relation,
                    Relation::Read | Relation::Edited | Relation::Created
                ) {
                    continue;
                }
                let Some(path) = paths.get(&edge.dst) else {
                    continue;
                };
                let id = document_id(path);
                if docs.head(&id)?.is_none() {
                    continue;
                }
                let at = edge.valid_to.unwrap_or(edge.valid_from);
                links.push(document_link(&docs, edge, &id, at)?);
            }
            f.edges.extend(links);
        }
        Ok(())
    }

    /// Links the sessions that already READ, EDITED or CREATED the file of a document
    /// just added for the first time (see [`Writer::link_documents`]).
    pub(super) fn link_earlier_sessions(&self, info: &DocumentInfo) -> Result<()> {
        let filter = crate::graph::EdgeFilter {
            direction: crate::graph::Direction::In,
            relations: vec![Relation::Read, Relation::Edited, Relation::Created],
            ..crate::graph::EdgeFilter::default()
        };
        let file = NodeId::file(&info.path);
        let docs = self.documents();
        for n in self.graph.neighbors(file, &filter, 10_000)? {
            let at = n.edge.valid_to.unwrap_or(n.edge.valid_from);
            let link = document_link(&docs, &n.edge, &info.id, at)?;
            self.graph
                .supersede(crate::graph::EdgeRef::of(&link), link)?;
        }
        Ok(())
    }

    /// The project whose folder holds `path`: its name and id (the deepest, when folders
    /// nest).
    pub(super) fn project_holding(
        &self,
        path: &std::path::Path,
    ) -> Result<Option<(String, NodeId)>> {
        let mut best: Option<(usize, String, NodeId)> = None;
        for project in self.graph.entities(EntityType::Project)? {
            if let NodeKind::Entity(e) = &project.kind
                && let Some(folder) = &e.path
                && path.starts_with(folder)
                && best.as_ref().is_none_or(|(len, _, _)| folder.len() > *len)
            {
                best = Some((folder.len(), project.name.clone(), project.id));
            }
        }
        Ok(best.map(|(_, name, id)| (name, id)))
    }

    /// The document's node: MENTIONS its key concepts, the authors it names, and its
    /// project.
    pub(in crate::ingest) fn document_facts(
        &self,
        info: &DocumentInfo,
        text: &str,
    ) -> Result<SessionFacts> {
        let id = NodeId::document(&info.id);
        let lowered = text.to_lowercase();
        let at = info.added_at;
        let mut entities = Vec::new();
        let mut edges = Vec::new();
        for term in &info.key_concepts {
            let concept = NodeId::concept(term);
            entities.push(entity(EntityType::Concept, concept, term, None, at, at));
            let mut edge = Edge::new(id, Relation::Mentions, concept, at);
            // Supported by each time the text says it.
            let says = lowered.matches(term.as_str()).count();
            edge.confidence = Edge::supported(u32::try_from(says).unwrap_or(u32::MAX), 0);
            edges.push(edge);
        }
        // Its authors, where it names them as git does (`Author: Name <address>`).
        let mut authors = BTreeSet::new();
        for (name, address) in crate::claude::authors_in(text) {
            if !authors.insert(NodeId::person(name)) || authors.len() > MAX_AUTHORS {
                continue;
            }
            let organization = crate::claude::organization_of(address);
            let edge = person_facts(
                id,
                name,
                organization.as_deref(),
                (at, at),
                &mut entities,
                &mut edges,
            );
            edges.push(edge);
        }
        let holder = self.project_holding(std::path::Path::new(&info.path))?;
        if let Some(name) = &info.project {
            let project = match &holder {
                Some((held, node)) if held == name => Some(*node),
                _ => self
                    .graph
                    .find_entities(EntityType::Project, name)?
                    .first()
                    .map(|n| n.id),
            };
            if let Some(project) = project {
                edges.push(Edge::new(id, Relation::Mentions, project, at));
            }
        }
        let mut properties = std::collections::BTreeMap::new();
        properties.insert("kind".to_owned(), DOCUMENT_TYPE.to_owned());
        properties.insert("document_id".to_owned(), info.id.clone());
        properties.insert("version".to_owned(), info.version.to_string());
        if info.pages > 0 {
            properties.insert("pages".to_owned(), info.pages.to_string());
        }
        if let Some(p) = &info.project {
            properties.insert("project".to_owned(), p.clone());
        }
        Ok(SessionFacts {
            episode: Node {
                id,
                name: info.title.clone(),
                kind: NodeKind::Document(Document {
                    mime: info.mime.clone(),
                    path: info.path.clone(),
                    hash: info.hash.clone(),
                }),
                content: Some(info.summary.clone()),
                properties,
                created_at: at,
                updated_at: at,
                doc_refs: Vec::new(),
            },
            handoff: None,
            entities,
            edges,
        })
    }
}

/// The edge from the episode of `edge` (a file use) to document `id`: the same relation,
/// time and confidence; its evidence names the version current at `at` (the first one,
/// for a session older than the document).
fn document_link(docs: &Documents<'_>, edge: &Edge, id: &str, at: Timestamp) -> Result<Edge> {
    let versions = docs.history(id)?;
    let version = versions
        .iter()
        .rfind(|v| v.added_at <= at)
        .or(versions.first())
        .map_or(1, |v| v.version);
    let node = NodeId::document(id);
    let mut link = Edge::new(edge.src, edge.relation, node, edge.valid_from);
    link.valid_to = edge.valid_to;
    link.confidence = edge.confidence;
    link.evidence = vec![crate::model::DocRef {
        doc_id: node,
        chunk_id: format!("v{version}"),
        score: edge.confidence,
    }];
    Ok(link)
}
