//! Subagent files: a subagent's own transcript, read into an episode under its parent
//! session, described by its meta file and its parent's `Task` call.

use super::Writer;
use std::path::Path;

use eywa_storage::Batch;

use super::documents::has_plan;
use super::{Changed, FileOutcome, Run};
use crate::Result;
use crate::archive::Archived;
use crate::claude::{AgentFile, Mode, Transcript, agent_key};
use crate::extract::{Origin, SessionFacts, episode_facts, redact, scrub, spawned};
use crate::graph::SourceRecord;
use crate::index::docs::IndexInput;
use crate::model::{AgentInfo, AgentLayout, NodeId};

impl Writer<'_> {
    /// A subagent's own transcript: its parent is the session folder it sits in (2.1+) or
    /// the `sessionId` its lines carry (2.0.x), confirmed and described by the parent's
    /// `Task` call when the parent was read.
    pub(super) fn ingest_agent_file(&self, file: &AgentFile, run: &mut Run) -> Result<FileOutcome> {
        let changed = self.unchanged(&file.path)?;
        if changed.same {
            return Ok(FileOutcome::Unchanged);
        }
        // A subagent of a copy (its folder, or for 2.0.x its lines, name the copied session)
        // is the copy's.
        let folder_parent = file
            .parent_session
            .as_deref()
            .map(|p| self.parent_key(&file.path, p, run));
        let (mut transcript, archived) = self.archive().read_source(
            &file.path,
            &format!("agent-{}", file.agent_id),
            Mode::Agent,
            changed.known.as_ref(),
            false,
            &self.authors.history(&run.labels),
        )?;
        run.bytes_read += archived.read;
        run.redacted.add(&scrub(&mut transcript));
        let path = file.path.to_string_lossy().into_owned();
        let parent = folder_parent.or_else(|| {
            transcript
                .session_field
                .as_deref()
                .map(|p| self.parent_key(&file.path, p, run))
        });
        let name = agent_key(&file.agent_id, parent.as_deref().unwrap_or(""));
        let episode_id = NodeId::agent(parent.as_deref().unwrap_or(""), &file.agent_id);
        let agent = self.agent_info(file, parent.clone(), episode_id, run)?;
        let origin = Origin {
            session_id: &name,
            episode_id,
            source_path: &path,
            agent: Some(agent),
            identity: self.identity,
        };
        let mut facts = episode_facts(origin, &transcript);
        if let Some(facts) = &mut facts {
            self.link_agent(
                facts,
                &file.agent_id,
                transcript.slug.as_deref(),
                parent.as_deref(),
            )?;
            self.link_documents(std::slice::from_mut(facts))?;
        }
        let mut record = SourceRecord {
            path,
            len: 0,
            modified_ms: changed.modified_ms,
            session_id: name,
            lines: transcript.lines,
            skipped_lines: transcript.skipped_lines,
            episode: facts.as_ref().map(|f| f.episode.id),
            agent: true,
            agents: u64::from(facts.is_some()),
            extracted: crate::extract::EXTRACT_VERSION,
            ..SourceRecord::default()
        };
        archived.record(&mut record);
        run.files_versioned += u64::from(archived.new_version);
        run.skipped_lines(&record.path, &transcript);
        self.write_agent(facts.as_slice(), &record, &transcript, &archived, &changed)?;
        Ok(FileOutcome::Read {
            episode: facts.is_some(),
        })
    }

    /// Writes a subagent file's facts (its episode, if any), archive and source record in
    /// one transaction, indexing the episode's passages, then retires what the archive
    /// replaced.
    fn write_agent(
        &self,
        facts: &[SessionFacts],
        record: &SourceRecord,
        transcript: &Transcript,
        archived: &Archived,
        changed: &Changed,
    ) -> Result<()> {
        let mut batch = Batch::new();
        archived.put(&mut batch)?;
        // The run's chunks are queued in its own transaction.
        let mut staged = self.semantic()?.begin();
        if let Some(facts) = facts.first() {
            self.index_sessions_into(
                &[IndexInput {
                    source: &record.path,
                    node: &facts.episode,
                    handoff: None,
                    passages: &transcript.passages,
                    labels: &[],
                    whole: !archived.appended,
                }],
                &mut batch,
                &mut staged,
            )?;
        }
        self.graph.write_session(batch, facts, record)?;
        self.semantic()?.applied(staged);
        self.archive().retire(changed.known.as_ref(), archived)
    }

    /// What is known of a subagent: what its meta file says (its description redacted),
    /// else what its parent's `Task` call said, and where its file sits.
    fn agent_info(
        &self,
        file: &AgentFile,
        parent: Option<String>,
        episode_id: NodeId,
        run: &mut Run,
    ) -> Result<AgentInfo> {
        let mut meta = file.meta.as_deref().map(read_meta).unwrap_or_default();
        if let Some(description) = &mut meta.description {
            *description = redact(description, &mut run.redacted).into_owned();
        }
        let spawn = self.graph.spawn(episode_id)?;
        Ok(AgentInfo {
            agent_id: file.agent_id.clone(),
            parent_session: parent,
            agent_type: meta
                .agent_type
                .or(spawn.as_ref().and_then(|s| s.agent_type.clone())),
            description: meta
                .description
                .or(spawn.as_ref().and_then(|s| s.description.clone())),
            tool_use_id: meta
                .tool_use_id
                .or(spawn.as_ref().and_then(|s| s.tool_use_id.clone())),
            layout: match (&file.parent_session, &file.workflow) {
                (Some(_), Some(_)) => AgentLayout::Workflow,
                (Some(_), None) => AgentLayout::Nested,
                (None, _) => AgentLayout::RootLevel,
            },
            summary: None,
            duration_ms: spawn.as_ref().and_then(|s| s.duration_ms),
            tokens: spawn.as_ref().and_then(|s| s.tokens),
            tool_uses: spawn.as_ref().and_then(|s| s.tool_uses),
        })
    }

    /// A subagent episode's edges to what the store already holds: HAS_PLAN from its own
    /// plan (`<slug>-agent-<id>.md`), SPAWNED from its parent session.
    fn link_agent(
        &self,
        facts: &mut SessionFacts,
        agent_id: &str,
        slug: Option<&str>,
        parent: Option<&str>,
    ) -> Result<()> {
        if let Some(slug) = slug
            && let Some(doc) = self
                .graph
                .node(NodeId::plan(&format!("{slug}-agent-{agent_id}")))?
        {
            facts.edges.push(has_plan(facts.episode.id, &doc));
        }
        if let Some(parent) = parent {
            let parent_id = NodeId::episode(parent);
            if self.graph.node(parent_id)?.is_some() {
                facts.edges.push(spawned(parent_id, &facts.episode));
            }
        }
        Ok(())
    }
}

/// `agent-<id>.meta.json`: what Claude Code wrote about a subagent.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct AgentMeta {
    #[serde(default)]
    agent_type: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    tool_use_id: Option<String>,
}

/// A meta file that cannot be read or parsed says nothing (it never fails the ingest).
fn read_meta(path: &Path) -> AgentMeta {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}
