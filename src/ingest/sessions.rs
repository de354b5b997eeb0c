//! Main session files: read ahead on every core and written in order, oldest first, each
//! transcript's facts built and staged in a write group.

use std::collections::{HashMap, HashSet};

use eywa_storage::Batch;

use super::ahead::{Pending, ReadAhead};
use super::documents::has_plan;
use super::group::Group;
use super::{Changed, FileOutcome, IngestReport, Run, Ticker, Writer, skip_unreadable};
use crate::archive::Archived;
use crate::claude::{
    IndexEntry, Mode, SessionFile, Transcript, claude_id, read_transcript_with, uuid_key,
};
use crate::extract::{Origin, SessionFacts, episode_facts, scrub, spawned};
use crate::graph::{Graph, SourceRecord};
use crate::index::docs::IndexInput;
use crate::model::{AgentInfo, AgentLayout, Handoff, NodeId};
use crate::{Error, Result};

impl Writer<'_> {
    /// Reads the main session files into the store, in their order. Files are read
    /// (parsed, archived) ahead, on every core, and written here in order.
    pub(super) fn ingest_sessions<'e>(
        &'e self,
        files: &[SessionFile],
        run: &mut Run,
        group: &mut Group<'e>,
        report: &mut IngestReport,
        ticker: &mut Ticker<'_>,
    ) -> Result<()> {
        let known_labels = run.labels.clone();
        let known_index = run.index.clone();
        let reread = run.reread.clone();
        std::thread::scope(|scope| -> Result<()> {
            // Handoff files are written on their own thread as their groups land: creating
            // thousands of small files is the kernel's work, not the writer's.
            let (files_out, files_in) = std::sync::mpsc::channel::<Vec<Handoff>>();
            let handoff_writer = scope.spawn(move || -> Result<()> {
                for handoffs in files_in {
                    for handoff in &handoffs {
                        self.write_handoff_file(handoff)?;
                    }
                }
                Ok(())
            });
            run.handoff_sink = Some(files_out);
            let mut write_all = || -> Result<()> {
                let ahead = ReadAhead::new(files.len(), READ_AHEAD);
                let (labels, index, reread) = (&known_labels, &known_index, &reread);
                std::thread::scope(|readers_scope| {
                    for _ in 0..readers(files.len()) {
                        let ahead = &ahead;
                        readers_scope.spawn(move || {
                            ahead.read_with(|i| {
                                let file = &files[i];
                                self.prepare(file, labels, index, reread.contains(&file.path))
                            });
                        });
                    }
                    let written = self
                        .write_reads(&ahead, files, run, group, report, ticker)
                        .and_then(|()| self.commit_group(group, run))
                        .and_then(|()| self.flush_handoff_files(run));
                    // Readers still at work end after their read.
                    ahead.stop();
                    written
                })
            };
            let written = write_all();
            // Closing the sink ends the file thread, on success or not.
            run.handoff_sink = None;
            let files_written = handoff_writer
                .join()
                .expect("the handoff file writer does not panic");
            written.and(files_written)
        })
    }

    /// Writes the files read ahead, in order, as the readers land them, until every file
    /// is written.
    fn write_reads<'e>(
        &'e self,
        ahead: &ReadAhead<Result<Option<Prepared>>>,
        files: &[SessionFile],
        run: &mut Run,
        group: &mut Group<'e>,
        report: &mut IngestReport,
        ticker: &mut Ticker<'_>,
    ) -> Result<()> {
        loop {
            // A cancelled run stops between files; the groups committed so far stay.
            crate::cancel::checkpoint()?;
            // Files already read are written in one group; when the writer waits
            // for the next read, what it holds lands first (a lone change is not
            // delayed).
            let (i, read) = match ahead.try_next() {
                None => break,
                Some(Ok(next)) => next,
                Some(Err(Pending)) => {
                    self.commit_group(group, run)?;
                    match ahead.next() {
                        Some(next) => next,
                        None => break,
                    }
                }
            };
            let file = &files[i];
            let outcome = self.write_prepared(file, read, run, group);
            match skip_unreadable(outcome, "cannot read transcript", run, report)? {
                Some(FileOutcome::Unchanged) => report.files_unchanged += 1,
                Some(FileOutcome::Read { episode }) => {
                    report.files_read += 1;
                    report.files_without_messages += u64::from(!episode);
                }
                None => {}
            }
            if group.is_full() {
                self.commit_group(group, run)?;
            }
            ticker.tick(run);
        }
        Ok(())
    }

    /// A main session file, read when new or changed (or when `force`d).
    fn ingest_file<'e>(
        &'e self,
        file: &SessionFile,
        run: &mut Run,
        force: bool,
        group: &mut Group<'e>,
    ) -> Result<FileOutcome> {
        let force = force || run.reread.contains(&file.path);
        match self.prepare(file, &run.labels, &run.index, force)? {
            Some(prepared) => self.write_read(file, prepared, run, group),
            None => Ok(FileOutcome::Unchanged),
        }
    }

    /// Reads a main session file when it is new or changed (or when `force`d), with the
    /// labels known: what the pipeline runs ahead of the writes, on any thread.
    fn prepare(
        &self,
        file: &SessionFile,
        labels: &HashMap<u128, String>,
        index: &HashMap<String, IndexEntry>,
        force: bool,
    ) -> Result<Option<Prepared>> {
        let changed = self.unchanged(&file.path)?;
        // A changed `sessions-index.json` entry (a new title) reads the session again.
        let stamp = index
            .get(claude_id(&file.session_id))
            .map_or(0, IndexEntry::stamp);
        let indexed_alike = changed
            .known
            .as_ref()
            .is_some_and(|k| k.index_stamp == stamp);
        if changed.same && indexed_alike && !force {
            return Ok(None);
        }
        let (transcript, archived) = self.archive().read_source(
            &file.path,
            &file.session_id,
            Mode::Main,
            changed.known.as_ref(),
            force,
            &self.authors.history(labels),
        )?;
        Ok(Some(Prepared {
            changed,
            transcript,
            archived,
        }))
    }

    /// Writes a file read ahead. A read that an earlier file of this run made stale (it
    /// claimed lines that file wrote first, as a resumed session replays them; or a label
    /// that file gave one of its lines) is read again, now that the run knows.
    fn write_prepared<'e>(
        &'e self,
        file: &SessionFile,
        read: Result<Option<Prepared>>,
        run: &mut Run,
        group: &mut Group<'e>,
    ) -> Result<FileOutcome> {
        let Some(prepared) = read? else {
            return Ok(FileOutcome::Unchanged);
        };
        if self.read_is_stale(&prepared.transcript, &file.session_id, &run.labels_added) {
            tracing::debug!(
                session = file.session_id,
                "read again after an earlier file"
            );
            return self.ingest_file(file, run, false, group);
        }
        self.write_read(file, prepared, run, group)
    }

    /// Writes what a read of a main session file found.
    fn write_read<'e>(
        &'e self,
        file: &SessionFile,
        prepared: Prepared,
        run: &mut Run,
        group: &mut Group<'e>,
    ) -> Result<FileOutcome> {
        let Prepared {
            changed,
            transcript,
            archived,
        } = prepared;
        run.bytes_read += archived.read;
        let path = file.path.to_string_lossy().into_owned();
        self.write_main(
            &file.session_id,
            path,
            transcript,
            archived,
            &changed,
            run,
            group,
        )
    }

    /// Whether a transcript read ahead claims a line another session now owns, or holds a
    /// line this run labelled since the read.
    fn read_is_stale(
        &self,
        transcript: &Transcript,
        session: &str,
        labelled: &HashSet<u128>,
    ) -> bool {
        let owners = self.authors.owners();
        transcript.uuids.iter().any(|uuid| {
            labelled.contains(uuid)
                || owners
                    .as_ref()
                    .and_then(|o| o.owner(*uuid))
                    .is_some_and(|owner| claude_id(owner) != claude_id(session))
        })
    }

    /// Reads a session again because a later file labelled one of its messages: from its
    /// file, or from the archive when Claude Code has deleted the file.
    pub(super) fn relabel<'e>(
        &'e self,
        session: &str,
        files: &[SessionFile],
        run: &mut Run,
        group: &mut Group<'e>,
    ) -> Result<()> {
        if let Some(file) = files.iter().find(|f| f.session_id == session) {
            self.ingest_file(file, run, true, group)?;
            return Ok(());
        }
        let Some(record) = self
            .graph
            .sources()?
            .into_iter()
            .find(|s| s.session_id == session && !s.agent)
        else {
            return Ok(());
        };
        let Some(reader) = self.archive().archive_reader(&record)? else {
            return Ok(());
        };
        let archived = Archived::kept(&record);
        let history = self.authors.history(&run.labels);
        let transcript = read_transcript_with(reader, session, Mode::Main, &history)
            .map_err(Error::io(&record.path))?;
        let changed = Changed {
            same: true,
            modified_ms: record.modified_ms,
            inode: record.inode,
            changed_ns: record.changed_ns,
            known: Some(record.clone()),
        };
        self.write_main(
            session,
            record.path,
            transcript,
            archived,
            &changed,
            run,
            group,
        )?;
        Ok(())
    }

    /// Builds and writes the facts of a main session's transcript.
    #[allow(clippy::too_many_arguments)]
    fn write_main<'e>(
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
    fn main_facts(
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
            for child in inline_agent_facts(session, path, transcript) {
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
    fn summarize(
        &self,
        summarizer: &super::Summarizer,
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
        let outcome = super::summarize::summarize(summarizer, &cache, handoff, &messages);
        // What the command answered is outside text like any other.
        crate::extract::redact_handoff(handoff, &mut run.redacted);
        tracing::debug!(session = %handoff.short_id, ?outcome, "summarizer");
        run.summaries[outcome as usize] += 1;
    }

    /// Key files of a session whose changes its subagents made: the files its subagent
    /// transcripts (in their own files, or inline) edited or created. A subagent file that
    /// cannot be read adds nothing.
    fn subagent_key_files(
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
    fn main_batch(
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
    fn index_main_into(
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
fn inline_agent_facts(session: &str, path: &str, transcript: &Transcript) -> Vec<SessionFacts> {
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
        };
        if let Some(child) = episode_facts(origin, run) {
            facts.push(child);
        }
    }
    facts
}

/// A main session file read ahead of its write.
struct Prepared {
    changed: Changed,
    transcript: Transcript,
    archived: Archived,
}

/// Files read ahead of the writes at most.
const READ_AHEAD: usize = 32;

/// Threads that read `files` files ahead of the writes: one a core, no more than files.
fn readers(files: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    cores.min(files).max(1)
}

/// Bytes read at most of one `tool-results` file, and passages made of it.
const MAX_RESULT_FILE_BYTES: u64 = 1 << 20;
const MAX_RESULT_PASSAGES: usize = 8;

/// The whole text of the tool results Claude Code moved to `<session>/tool-results/<call
/// id>.txt`, as passages of the lines that preview them (read this time), redacted: so a
/// search finds what the transcript only previews. A file that is missing, a symlink or
/// unreadable adds nothing.
fn add_persisted_results(path: &str, session: &str, transcript: &mut Transcript, run: &mut Run) {
    let Some(first) = transcript.passages.iter().map(|p| p.seq).min() else {
        return;
    };
    let mut added = Vec::new();
    for persisted in transcript.persisted.iter().filter(|p| p.seq >= first) {
        let Some(text) = crate::claude::read_tool_result(
            std::path::Path::new(path),
            session,
            &persisted.call_id,
            MAX_RESULT_FILE_BYTES,
        ) else {
            continue;
        };
        let text = crate::extract::redact(&text, &mut run.redacted);
        let chars: Vec<char> = text.chars().collect();
        let size = crate::claude::MAX_PASSAGE_CHARS;
        for (part, chunk) in chars.chunks(size).take(MAX_RESULT_PASSAGES).enumerate() {
            let chunk: String = chunk.iter().collect();
            if chunk.trim().is_empty() {
                continue;
            }
            let tool = if persisted.tool.is_empty() {
                "tool"
            } else {
                &persisted.tool
            };
            added.push(crate::claude::Passage {
                kind: crate::claude::PassageKind::ToolResult,
                uuid: persisted.uuid.clone(),
                seq: persisted.seq,
                part: u32::try_from(part).unwrap_or(u32::MAX),
                timestamp: persisted.timestamp,
                text: format!("{tool} result: {chunk}"),
                context: None,
                agent: None,
            });
        }
    }
    transcript.passages.extend(added);
}
