//! Documents read whole from a file: plans and project memory files, each a Document node
//! with its text redacted and its bytes archived.

use super::Writer;
use eywa_storage::Batch;

use super::{Changed, FileOutcome, Run};
use crate::archive::Archived;
use crate::claude::{MemoryFile, PlanFile, SessionFile};
use crate::extract::{SessionFacts, redact};
use crate::graph::SourceRecord;
use crate::model::{Document, Edge, Node, NodeId, NodeKind, Relation, Timestamp};
use crate::{Error, Result};

impl Writer<'_> {
    /// A plan file: a Document (its text redacted, its bytes archived) with HAS_PLAN from
    /// every session — or, for `<slug>-agent-<id>.md`, the subagent — that carries its slug.
    pub(super) fn ingest_plan(&self, plan: &PlanFile, run: &mut Run) -> Result<FileOutcome> {
        let changed = self.unchanged(&plan.path)?;
        if changed.same {
            return Ok(FileOutcome::Unchanged);
        }
        // Seed 001: a plan over 100 KB is likely not a plan (skipped with a warning), one
        // under 50 characters too small to be of use (skipped).
        let len = std::fs::metadata(&plan.path)
            .map_err(Error::io(&plan.path))?
            .len();
        if len > crate::extract::MAX_PLAN_BYTES {
            tracing::warn!(path = %plan.path.display(), bytes = len, "a plan over 100 KB: not read");
            run.skipped.push(super::SkippedFile {
                path: plan.path.display().to_string(),
                lines: 0,
                reason: format!("a plan of {len} bytes, over 100 KB: likely not a plan, not read"),
            });
            return Ok(FileOutcome::Read { episode: false });
        }
        let bytes = std::fs::read(&plan.path).map_err(Error::io(&plan.path))?;
        let text = String::from_utf8_lossy(&bytes);
        if !crate::extract::is_plan(&text) {
            return Ok(FileOutcome::Read { episode: false });
        }
        let blob = self.graph.store().blobs().put_small(&bytes)?;
        run.bytes_read += blob.raw_len;
        let text = redact(&text, &mut run.redacted).into_owned();
        let stem = match &plan.agent_id {
            Some(id) => format!("{}-agent-{id}", plan.slug),
            None => plan.slug.clone(),
        };
        let title = text
            .lines()
            .find_map(|l| l.strip_prefix("# "))
            .map_or_else(|| stem.clone(), |t| t.trim().to_owned());
        let at = Timestamp(changed.modified_ms);
        let path = plan.path.to_string_lossy().into_owned();
        let doc = Node {
            id: NodeId::plan(&stem),
            name: title,
            kind: NodeKind::Document(Document {
                mime: "md".to_owned(),
                path: path.clone(),
                hash: blob.hash.clone(),
            }),
            content: Some(text),
            properties: [("slug".to_owned(), plan.slug.clone())]
                .into_iter()
                .collect(),
            created_at: at,
            updated_at: at,
            doc_refs: Vec::new(),
        };
        let mut edges = Vec::new();
        for episode in self.graph.episodes_with_slug(&plan.slug)? {
            let Some(node) = self.graph.node(episode)? else {
                continue;
            };
            let agent = node.episode().and_then(|e| e.agent.as_ref());
            let wanted = match (&plan.agent_id, agent) {
                (None, None) => true,
                (Some(id), Some(a)) => &a.agent_id == id,
                _ => false,
            };
            if wanted {
                edges.push(has_plan(episode, &doc));
            }
        }
        self.write_document(doc, edges, path, stem, blob, &changed)?;
        Ok(FileOutcome::Read { episode: true })
    }

    /// A project memory file (`projects/<dir>/memory/*.md`): a Document, its text redacted
    /// and its bytes archived, with HAS_MEMORY from the project that the sessions in the
    /// same folder worked in (the folder name is never decoded, Q16).
    pub(super) fn ingest_memory(
        &self,
        memory: &MemoryFile,
        files: &[SessionFile],
        run: &mut Run,
    ) -> Result<FileOutcome> {
        let changed = self.unchanged(&memory.path)?;
        if changed.same {
            return Ok(FileOutcome::Unchanged);
        }
        let bytes = std::fs::read(&memory.path).map_err(Error::io(&memory.path))?;
        let blob = self.graph.store().blobs().put_small(&bytes)?;
        run.bytes_read += blob.raw_len;
        let text = redact(&String::from_utf8_lossy(&bytes), &mut run.redacted).into_owned();
        let path = memory.path.to_string_lossy().into_owned();
        let name = memory
            .path
            .file_name()
            .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned());
        let project = self.memory_project(memory, files)?;
        let at = Timestamp(changed.modified_ms);
        let mut properties = std::collections::BTreeMap::new();
        properties.insert("kind".to_owned(), "memory".to_owned());
        if let Some((name, _)) = &project {
            properties.insert("project".to_owned(), name.clone());
        }
        let doc = Node {
            id: NodeId::memory_doc(&path),
            name: match &project {
                Some((project, _)) => format!("{project} {name}"),
                None => name,
            },
            kind: NodeKind::Document(Document {
                mime: "md".to_owned(),
                path: path.clone(),
                hash: blob.hash.clone(),
            }),
            content: Some(text),
            properties,
            created_at: at,
            updated_at: at,
            doc_refs: Vec::new(),
        };
        let edges = project
            .iter()
            .map(|(_, path)| Edge::new(NodeId::project(path), Relation::HasMemory, doc.id, at))
            .collect();
        let name = format!("memory:{}", memory.project_dir);
        self.write_document(doc, edges, path, name, blob, &changed)?;
        Ok(FileOutcome::Read { episode: false })
    }

    /// The project (its name and path) that the newest session in a memory file's folder
    /// worked in, when one did.
    fn memory_project(
        &self,
        memory: &MemoryFile,
        files: &[SessionFile],
    ) -> Result<Option<(String, String)>> {
        for file in files
            .iter()
            .rev()
            .filter(|f| f.project_dir == memory.project_dir)
        {
            if let Some(node) = self.graph.node(NodeId::episode(&file.session_id))?
                && let Some(episode) = node.episode()
                && !episode.project_path.is_empty()
            {
                return Ok(Some((
                    episode.project.clone(),
                    episode.project_path.clone(),
                )));
            }
        }
        Ok(None)
    }

    /// Writes a Document read whole from a file (a plan, a memory file), its archive and
    /// its source record, and indexes its text.
    fn write_document(
        &self,
        doc: Node,
        edges: Vec<Edge>,
        path: String,
        name: String,
        blob: eywa_storage::BlobInfo,
        changed: &Changed,
    ) -> Result<()> {
        let facts = SessionFacts {
            episode: doc,
            handoff: None,
            entities: Vec::new(),
            edges,
        };
        let record = SourceRecord {
            path,
            len: blob.raw_len,
            modified_ms: changed.modified_ms,
            session_id: name,
            lines: 0,
            skipped_lines: 0,
            episode: None,
            archive: Some(blob.hash.clone()),
            inode: changed.inode,
            changed_ns: changed.changed_ns,
            extracted: crate::extract::EXTRACT_VERSION,
            ..SourceRecord::default()
        };
        let archived = Archived::whole(blob, changed.inode, changed.changed_ns);
        let mut batch = Batch::new();
        archived.put(&mut batch)?;
        // The document's chunks are queued in its own transaction.
        let session = self.document_session(&facts.episode)?;
        let mut staged = self.semantic()?.begin();
        self.index_document_into(
            &record.path,
            &facts.episode,
            &session,
            &mut batch,
            &mut staged,
        )?;
        self.graph
            .write_session(batch, std::slice::from_ref(&facts), &record)?;
        self.semantic()?.applied(staged);
        self.archive().retire(changed.known.as_ref(), &archived)
    }
}

/// `episode` HAS_PLAN `plan`, from when the plan was written.
pub(super) fn has_plan(episode: NodeId, plan: &Node) -> Edge {
    Edge::new(episode, Relation::HasPlan, plan.id, plan.created_at)
}
