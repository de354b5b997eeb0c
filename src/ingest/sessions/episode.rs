//! A main session's write: its facts (projects, handoff, subagents, inline runs), its
//! source record, and what it gives the text index and the embedding queue.

use eywa_storage::Batch;

use super::super::documents::has_plan;
use super::super::group::Group;
use super::super::{Changed, FileOutcome, Run, Writer};
use super::add_persisted_results;
use crate::Result;
use crate::archive::Archived;
use crate::claude::{IndexEntry, Transcript, claude_id, uuid_key};
use crate::extract::{Origin, SessionFacts, episode_facts, scrub, spawned};
use crate::graph::{Graph, SourceRecord};
use crate::index::docs::IndexInput;
use crate::model::{AgentInfo, AgentLayout, Handoff, NodeId};

impl Writer<'_> {
    /// Builds and writes the facts of a main session's transcript.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_main<'e>(
        &'e self,
        session: &str,
        path: String,
        mut transcript: Transcript,
        archived: Archived,
        changed: &Changed,
        run: &mut Run,
        group: &mut Group<'e>,
    ) -> Result<FileOutcome> {
        if let Some(entry) = run.index.get(claude_id(session)) {
            apply_index_entry(&mut transcript, entry);
        }
        run.redacted.add(&scrub(&mut transcript));
        add_persisted_results(&path, session, &mut transcript, run);
        let mut facts = self.main_facts(session, &path, &transcript)?;
        if let Some(summarizer) = self.summarizer
            && let Some(handoff) = facts.first_mut().and_then(|f| f.handoff.as_mut())
            && handoff.substance > 0
        {
            self.summarize(summarizer, &path, handoff, run);
        }
        self.link_documents(&mut facts)?;
        let mut record = main_record(session, path, &transcript, &facts, changed);
        record.index_stamp = run
            .index
            .get(claude_id(session))
            .map_or(0, IndexEntry::stamp);
        archived.record(&mut record);
        run.files_versioned += u64::from(archived.new_version);
        run.skipped_lines(&record.path, &transcript);
        // A group that already writes this source or its episodes lands first: what
        // follows reads their stored state.
        if group.holds(&record.path, &facts) {
            self.commit_group(group, run)?;
        }
        let mut batch = self.main_batch(session, &transcript, &archived, run)?;
        // The session's chunks are queued in its own transaction.
        let staged = group.staged(self)?;
        self.index_main_into(
            &record.path,
            &facts,
            &transcript,
            !archived.appended,
            &mut batch,
            staged,
        )?;
        let handoffs = facts.iter().filter_map(|f| f.handoff.as_ref());
        if handoffs.clone().next().is_some() {
            self.sinks.handoffs_will_change()?;
        }
        group
            .writes
            .get_or_insert_with(|| self.graph.group())
            .add(batch, &facts, &record)?;
        for handoff in handoffs.clone() {
            Self::derive_insights(handoff, run);
        }
        run.handoffs.extend(handoffs.map(|h| Handoff {
            sections: Default::default(),
            ..h.clone()
        }));
        group.files += 1;
        // Known at once, so a later file of the group that replays these lines is read
        // again (an ingest that fails forgets the map: see `Authors::forget`).
        self.authors.record(session, &transcript.uuids);
        if let Some(handoff) = facts.first().and_then(|f| f.handoff.as_ref()) {
            group.handoff_files.push(handoff.clone());
        }
        // The blobs' bytes are in the batch already; retiring needs only their names.
        let mut archived = archived;
        archived.blobs = Vec::new();
        group.retired.push((changed.known.clone(), archived));
        Ok(FileOutcome::Read {
            episode: !facts.is_empty(),
        })
    }

    /// The facts of a main session's transcript: none when it holds no message, else its
    /// episode first, with SPAWNED to the agent runs it holds inline (which follow it) and
    /// to subagents in their own files that an earlier ingest already read, and HAS_PLAN to
    /// its plan when the store holds it.
    pub(super) fn main_facts(
        &self,
        session: &str,
        path: &str,
        transcript: &Transcript,
    ) -> Result<Vec<SessionFacts>> {
        let main = episode_facts(
            Origin {
                session_id: session,
                episode_id: NodeId::episode(session),
                source_path: path,
                agent: None,
                identity: self.identity,
            },
            transcript,
        );
        let mut facts = Vec::new();
        if let Some(mut main) = main {
            if let Some(handoff) = main.handoff.as_mut()
                && handoff.sections.key_files.is_empty()
                && handoff.substance > 0
                && !transcript.spawns.is_empty()
            {
                handoff.sections.key_files = self.subagent_key_files(session, path, transcript);
            }
            for child in inline_agent_facts(session, path, transcript, self.identity) {
                main.edges.push(spawned(main.episode.id, &child.episode));
                facts.push(child);
            }
            if let Some(plan) = transcript.slug.as_deref().map(NodeId::plan)
                && let Some(doc) = self.graph.node(plan)?
            {
                main.edges.push(has_plan(main.episode.id, &doc));
            }
            // Subagents in their own files that an earlier ingest already read.
            for spawn in &transcript.spawns {
                if let Some(child) = self.graph.node(NodeId::agent(session, &spawn.agent_id))? {
                    main.edges.push(spawned(main.episode.id, &child));
                }
            }
            facts.insert(0, main);
        }
        Ok(facts)
    }

    /// Has the summarizer write `handoff` from the session's messages (redacted before
    /// they leave eywa); the deterministic handoff stays when it cannot.
    pub(super) fn summarize(
        &self,
        summarizer: &crate::ingest::Summarizer,
        path: &str,
        handoff: &mut crate::model::Handoff,
        run: &mut Run,
    ) {
        let Ok(file) = std::fs::File::open(path) else {
            return;
        };
        let Ok(mut messages) = crate::claude::read_messages(file) else {
            return;
        };
        for m in &mut messages {
            crate::extract::redact_in_place(&mut m.text, &mut run.redacted);
            for call in &mut m.tool_calls {
                crate::extract::redact_in_place(&mut call.input, &mut run.redacted);
            }
        }
        let cache = self.graph.store().path().join("summaries");
        let outcome = crate::ingest::summarize::summarize(summarizer, &cache, handoff, &messages);
        // What the command answered is outside text like any other.
        crate::extract::redact_handoff(handoff, &mut run.redacted);
        tracing::debug!(session = %handoff.short_id, ?outcome, "summarizer");
        run.summaries[outcome as usize] += 1;
    }

    /// Key files of a session whose changes its subagents made: the files its subagent
    /// transcripts (in their own files, or inline) edited or created. A subagent file that
    /// cannot be read adds nothing.
    pub(super) fn subagent_key_files(
        &self,
        session: &str,
        path: &str,
        transcript: &Transcript,
    ) -> Vec<String> {
        let file = crate::claude::SessionFile {
            path: std::path::PathBuf::from(path),
            session_id: session.to_owned(),
            project_dir: String::new(),
        };
        let mut agents: Vec<Transcript> = transcript.inline_agents.clone();
        for agent in self.claude.agent_files_of(&file).unwrap_or_default() {
            let read = std::fs::File::open(&agent.path).and_then(|f| {
                crate::claude::read_transcript_from(f, &agent.agent_id, crate::claude::Mode::Agent)
            });
            if let Ok(t) = read {
                agents.push(t);
            }
        }
        crate::extract::subagent_key_files(transcript, &agents)
    }

    /// A main session file's batch, before its text index entries: its archive, the
    /// subagents it spawned, its message uuids, and the labels it gives other sessions'
    /// messages (those sessions to read again).
    pub(super) fn main_batch(
        &self,
        session: &str,
        transcript: &Transcript,
        archived: &Archived,
        run: &mut Run,
    ) -> Result<Batch> {
        let mut batch = Batch::new();
        archived.put(&mut batch)?;
        Graph::put_spawns(&mut batch, session, &transcript.spawns)?;
        Graph::put_session_uuids(&mut batch, session, &transcript.uuids);
        for (leaf, label) in &transcript.foreign_labels {
            let key = uuid_key(leaf);
            if run.labels.get(&key) == Some(label) {
                continue;
            }
            Graph::put_label(&mut batch, leaf, label)?;
            run.labels.insert(key, label.clone());
            run.labels_added.insert(key);
            let owners = self.authors.owners();
            if let Some(owner) = owners.as_ref().and_then(|o| o.owner(key))
                && claude_id(owner) != claude_id(session)
            {
                run.relabel.insert(owner.to_owned());
            }
        }
        Ok(batch)
    }

    /// Indexes a main session's episode (its passages, labels and handoff, the whole
    /// transcript's or only what was appended) and its inline agent runs; drops what the
    /// index held of a source read whole that now holds no episode.
    pub(super) fn index_main_into(
        &self,
        source: &str,
        facts: &[SessionFacts],
        transcript: &Transcript,
        whole: bool,
        batch: &mut Batch,
        staged: &mut crate::semantic::Staged<'_>,
    ) -> Result<()> {
        if let Some(main) = facts.first() {
            let labels = transcript.indexed_labels();
            let mut inputs = vec![IndexInput {
                source,
                node: &main.episode,
                handoff: main.handoff.as_ref(),
                passages: &transcript.passages,
                labels: &labels,
                whole,
            }];
            inputs.extend(facts[1..].iter().map(|child| IndexInput {
                source,
                node: &child.episode,
                handoff: None,
                passages: &[],
                labels: &[],
                whole: false,
            }));
            self.index_sessions_into(&inputs, batch, staged)?;
        } else if whole {
            self.drop_source_into(source, batch, staged)?;
        }
        Ok(())
    }
}

/// What `sessions-index.json` says of a session: its summary, and its project when its
/// transcript names no working directory.
fn apply_index_entry(transcript: &mut Transcript, entry: &IndexEntry) {
    transcript.index_summary = entry.summary.clone();
    transcript.index_message_count = entry.message_count;
    if transcript.cwds.is_empty()
        && let Some(project) = &entry.project_path
    {
        transcript.cwds.push(project.clone());
    }
}

/// The source record of a main session file, before its archive's part.
fn main_record(
    session: &str,
    path: String,
    transcript: &Transcript,
    facts: &[SessionFacts],
    changed: &Changed,
) -> SourceRecord {
    SourceRecord {
        path,
        len: 0,
        modified_ms: changed.modified_ms,
        session_id: session.to_owned(),
        lines: transcript.lines,
        skipped_lines: transcript.skipped_lines,
        episode: facts.first().map(|f| f.episode.id),
        agent: false,
        agents: facts.len().saturating_sub(1) as u64,
        extracted: crate::extract::EXTRACT_VERSION,
        ..SourceRecord::default()
    }
}

/// The episodes of the agent runs a main transcript holds inline, each under the session.
fn inline_agent_facts(
    session: &str,
    path: &str,
    transcript: &Transcript,
    identity: &crate::model::Identity,
) -> Vec<SessionFacts> {
    let mut facts = Vec::new();
    for run in &transcript.inline_agents {
        let agent = AgentInfo {
            agent_id: run.session_id.clone(),
            parent_session: Some(session.to_owned()),
            agent_type: None,
            description: None,
            tool_use_id: None,
            layout: AgentLayout::Inline,
            summary: None,
            duration_ms: None,
            tokens: None,
            tool_uses: None,
        };
        let origin = Origin {
            session_id: &run.session_id,
            episode_id: NodeId::agent(session, &run.session_id),
            source_path: path,
            agent: Some(agent),
            identity,
        };
        if let Some(child) = episode_facts(origin, run) {
            facts.push(child);
        }
    }
    facts
}
