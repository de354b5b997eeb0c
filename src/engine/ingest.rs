use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::RwLock;
use std::time::{Duration, Instant, UNIX_EPOCH};

use std::path::Path;

use eywa_storage::Batch;
use rayon::prelude::*;
use serde::Serialize;

use super::Engine;
use super::owners::Owners;
use super::source::{Archived, file_identity};
use super::text::IndexInput;
use crate::claude::{
    AgentFile, History, IndexEntry, MemoryFile, Mode, PlanFile, SessionFile, Transcript,
    read_transcript_with, uuid_key,
};
use crate::extract::{
    Origin, RedactionCounts, SessionFacts, build_index, episode_facts, handoff_path, redact,
    render_markdown, scrub, spawned,
};
use crate::graph::{Counts, Graph, SourceRecord};
use crate::model::{
    AgentInfo, AgentLayout, Document, Edge, Handoff, Node, NodeId, NodeKind, Relation, Timestamp,
};
use crate::{Error, Result};

/// What one ingest run did, and what the store holds after it.
#[derive(Debug, Clone, Serialize)]
pub struct IngestReport {
    /// Main session files found.
    pub files_scanned: u64,
    /// Files read this run (new or changed).
    pub files_read: u64,
    /// Files skipped because they had not changed since the last ingest.
    pub files_unchanged: u64,
    /// Files that could not be read (permissions, vanished mid-run).
    pub files_failed: u64,
    /// Files read this run that hold no user or assistant message.
    pub files_without_messages: u64,
    /// Subagent files found (`agent-*.jsonl`, root-level and in `<session>/subagents/`).
    pub agent_files_scanned: u64,
    /// Subagent files read this run.
    pub agent_files_read: u64,
    /// Secrets redacted from what this run read, per kind.
    pub redacted: RedactionCounts,
    /// Plan files found (`plans/*.md`).
    pub plans: u64,
    /// Project memory files found (`projects/*/memory/*.md`).
    pub memory_files: u64,
    /// Bytes read from sources this run: whole files, or what was appended to a file
    /// since the last run.
    pub bytes_read: u64,
    /// Files that shrank or were rewritten since the last run: read as new versions, what
    /// earlier versions said kept.
    pub files_versioned: u64,
    /// Files this run read in part or not at all, by path: malformed lines, unreadable
    /// files, symlinks out of the Claude dir. At most [`SKIPPED_FILES_LISTED`];
    /// `files_skipped` counts them all.
    pub skipped_files: Vec<SkippedFile>,
    pub files_skipped: u64,
    /// Counts of the store after the run.
    pub counts: Counts,
    #[serde(serialize_with = "seconds")]
    pub elapsed: Duration,
}

/// A file an ingest run read in part, or not at all.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SkippedFile {
    pub path: String,
    /// Lines skipped; 0 when the whole file was.
    pub lines: u64,
    /// The first skipped line's number and why, or why the file was not read.
    pub reason: String,
}

/// Files named in a report; more are counted.
pub const SKIPPED_FILES_LISTED: usize = 1_000;

/// Where an ingest run is, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    pub files_done: u64,
    pub files_total: u64,
    /// Bytes of transcripts read so far this run (unchanged files are not read).
    pub bytes_read: u64,
    pub elapsed: Duration,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl Engine {
    /// Reads every new or changed session under the Claude dir into the graph, archiving
    /// each transcript's bytes in the cold tier as it goes. Malformed lines are skipped and
    /// counted; a file that cannot be read is logged and counted; a missing projects
    /// folder is an error. Sessions whose file is gone stay as they were.
    pub fn ingest(&self) -> Result<IngestReport> {
        self.ingest_with_progress(&mut |_| {})
    }

    /// [`Engine::ingest`], calling `progress` after every file.
    pub fn ingest_with_progress(&self, progress: &mut dyn FnMut(Progress)) -> Result<IngestReport> {
        let _guard = self
            .ingest_lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let result = self.ingest_locked(progress);
        if result.is_err() {
            self.handoffs_lost();
            // It may know lines of files whose group never landed: loaded again next run.
            *self.owners.write().unwrap_or_else(|p| p.into_inner()) = None;
        }
        result
    }

    fn ingest_locked(&self, progress: &mut dyn FnMut(Progress)) -> Result<IngestReport> {
        let started = Instant::now();
        // Counters loaded before writing are kept in step by every batch.
        self.graph.counts()?;
        let projects = self.claude.projects_dir();
        if !projects.is_dir() {
            return Err(Error::ClaudeDirMissing { path: projects });
        }
        let mut files = self.claude.session_files().map_err(Error::io(&projects))?;
        // Oldest first: a resumed session replays lines its predecessor wrote, and the
        // first writer of a message owns it.
        files.sort_by_cached_key(|f| (modified_ms(&f.path), f.path.clone()));
        let mut report = IngestReport {
            files_scanned: files.len() as u64,
            files_read: 0,
            files_unchanged: 0,
            files_failed: 0,
            files_without_messages: 0,
            agent_files_scanned: 0,
            agent_files_read: 0,
            redacted: RedactionCounts::default(),
            plans: 0,
            memory_files: 0,
            bytes_read: 0,
            files_versioned: 0,
            skipped_files: Vec::new(),
            files_skipped: 0,
            counts: Counts::default(),
            elapsed: Duration::ZERO,
        };
        // Links refused by scans before this run (`eywa stats` lists nothing): not ours.
        self.claude.take_refused();
        self.load_owners()?;
        if self.text_index_lags()? {
            let docs = self.reindex_locked()?;
            tracing::info!(docs, "rebuilt the text index");
        }
        let mut run = Run {
            labels: self.graph.labels()?,
            index: self.claude.session_index().map_err(Error::io(&projects))?,
            ..Run::default()
        };
        let agents = self.claude.agent_files().map_err(Error::io(&projects))?;
        let total = (files.len() + agents.len()) as u64;
        let mut done = 0;
        let mut tick = |run: &Run| {
            done += 1;
            progress(Progress {
                files_done: done,
                files_total: total,
                bytes_read: run.bytes_read,
                elapsed: started.elapsed(),
            });
        };
        // Parents first: an agent file then finds its parent and the call that started it.
        // Files are read (parsed, archived) ahead, on both cores, and written here in order.
        let known_labels = run.labels.clone();
        let mut group = Group::default();
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
                let (ahead, reads) = std::sync::mpsc::sync_channel(READ_AHEAD);
                let (all, labels) = (&files, &known_labels);
                let reader = scope.spawn(move || {
                    for (c, chunk) in all.chunks(READ_CHUNK).enumerate() {
                        let prepared: Vec<Result<Option<Prepared>>> = chunk
                            .par_iter()
                            .map(|file| self.prepare(file, labels))
                            .collect();
                        for (i, read) in prepared.into_iter().enumerate() {
                            if ahead.send((c * READ_CHUNK + i, read)).is_err() {
                                return; // The writer stopped.
                            }
                        }
                    }
                });
                loop {
                    // Files already read are written in one group; when the writer waits
                    // for the next read, what it holds lands first (a lone change is not
                    // delayed).
                    let (i, read) = match reads.try_recv() {
                        Ok(next) => next,
                        Err(std::sync::mpsc::TryRecvError::Disconnected) => break,
                        Err(std::sync::mpsc::TryRecvError::Empty) => {
                            self.commit_group(&mut group, &mut run)?;
                            match reads.recv() {
                                Ok(next) => next,
                                Err(_) => break,
                            }
                        }
                    };
                    let file = &files[i];
                    match self.write_prepared(file, read, &mut run, &mut group) {
                        Ok(FileOutcome::Unchanged) => report.files_unchanged += 1,
                        Ok(FileOutcome::Read { episode }) => {
                            report.files_read += 1;
                            report.files_without_messages += u64::from(!episode);
                        }
                        Err(Error::Io { path, source }) if !is_write_failure(&source) => {
                            tracing::warn!(path = %path.display(), error = %source, "cannot read transcript");
                            report.files_failed += 1;
                            run.unreadable(&path, &source);
                        }
                        Err(other) => return Err(other),
                    }
                    if group.is_full() {
                        self.commit_group(&mut group, &mut run)?;
                    }
                    tick(&run);
                }
                self.commit_group(&mut group, &mut run)?;
                self.flush_handoff_files(&mut run)?;
                reader.join().expect("the transcript reader does not panic");
                Ok(())
            };
            let written = write_all();
            // Closing the sink ends the file thread, on success or not.
            run.handoff_sink = None;
            let files_written = handoff_writer
                .join()
                .expect("the handoff file writer does not panic");
            written.and(files_written)
        })?;
        // Sessions that later files gave new summary labels: read again for their titles.
        for session in std::mem::take(&mut run.relabel) {
            if let Err(e) = self.relabel(&session, &files, &mut run, &mut group) {
                tracing::warn!(session, error = %e, "cannot re-read a relabelled session");
            }
        }
        self.commit_group(&mut group, &mut run)?;
        self.flush_handoff_files(&mut run)?;
        report.agent_files_scanned = agents.len() as u64;
        for file in &agents {
            match self.ingest_agent_file(file, &mut run) {
                Ok(FileOutcome::Unchanged) => {}
                Ok(FileOutcome::Read { .. }) => report.agent_files_read += 1,
                Err(Error::Io { path, source }) if !is_write_failure(&source) => {
                    tracing::warn!(path = %path.display(), error = %source, "cannot read subagent transcript");
                    report.files_failed += 1;
                    run.unreadable(&path, &source);
                }
                Err(other) => return Err(other),
            }
            tick(&run);
        }
        let plans = self
            .claude
            .plan_files()
            .map_err(Error::io(self.claude.root()))?;
        for plan in &plans {
            match self.ingest_plan(plan, &mut run) {
                Ok(_) => {}
                Err(Error::Io { path, source }) if !is_write_failure(&source) => {
                    tracing::warn!(path = %path.display(), error = %source, "cannot read plan");
                    report.files_failed += 1;
                    run.unreadable(&path, &source);
                }
                Err(other) => return Err(other),
            }
        }
        report.plans = plans.len() as u64;
        let memories = self.claude.memory_files().map_err(Error::io(&projects))?;
        for memory in &memories {
            match self.ingest_memory(memory, &files, &mut run) {
                Ok(_) => {}
                Err(Error::Io { path, source }) if !is_write_failure(&source) => {
                    tracing::warn!(path = %path.display(), error = %source, "cannot read memory file");
                    report.files_failed += 1;
                    run.unreadable(&path, &source);
                }
                Err(other) => return Err(other),
            }
        }
        report.memory_files = memories.len() as u64;
        report.redacted = std::mem::take(&mut run.redacted);
        for link in self.claude.take_refused() {
            run.skipped.push(SkippedFile {
                path: link.display().to_string(),
                lines: 0,
                reason: "a symlink out of the Claude dir: not followed".into(),
            });
        }
        run.skipped.sort();
        run.skipped.dedup();
        report.files_skipped = run.skipped.len() as u64;
        run.skipped.truncate(SKIPPED_FILES_LISTED);
        report.skipped_files = std::mem::take(&mut run.skipped);
        report.bytes_read = run.bytes_read;
        report.files_versioned = run.files_versioned;
        if self.text_index_lags()? {
            self.commit_text()?;
        }
        let sequenced = self.graph.derive_sequences()?;
        if sequenced > 0 {
            tracing::debug!(edges = sequenced, "updated FOLLOWS and CONTINUES");
        }
        self.graph.store().flush()?;
        if self.graph.save_view()? {
            tracing::debug!("saved the graph view snapshot");
        }
        self.handoffs_changed(&run.handoffs)?;
        if !run.handoffs.is_empty() {
            self.write_handoff_index()?;
        }
        let idle = i64::from(self.config.chunk_idle_days) * 24 * 3600 * 1000;
        let swept = self.graph.store().sweep_chunks(idle, Timestamp::now().0)?;
        if swept.moved > 0 {
            tracing::info!(
                chunks = swept.moved,
                bytes = swept.bytes,
                "moved idle chunks to the cold tier"
            );
        }
        report.counts = self.graph.counts()?;
        report.elapsed = started.elapsed();
        // Callers say what a run read; a run that read nothing is not news.
        tracing::debug!(
            files = report.files_scanned,
            read = report.files_read,
            agents_read = report.agent_files_read,
            episodes = report.counts.episodes,
            skipped_lines = report.counts.skipped_lines,
            "ingest done"
        );
        Ok(report)
    }

    /// The source record of `path`, and whether the file is unchanged since it was read:
    /// the same size, mtime, inode and status-change time. A file replaced by another (an
    /// editor's save, `sed -i`) or written in place keeps its size and mtime only if they
    /// are set back, and not its inode or status-change time. Records from before eywa
    /// kept those (inode 0) go by size and mtime.
    fn unchanged(&self, path: &Path) -> Result<Changed> {
        let meta = std::fs::metadata(path).map_err(Error::io(path))?;
        let modified_ms = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let (inode, changed_ns) = file_identity(&meta);
        let known = self.graph.source(&path.to_string_lossy())?;
        let same = known.as_ref().is_some_and(|k| {
            k.len == meta.len()
                && k.modified_ms == modified_ms
                && (k.inode == 0 || (k.inode == inode && k.changed_ns == changed_ns))
        });
        Ok(Changed {
            same,
            known,
            modified_ms,
            inode,
            changed_ns,
        })
    }

    /// A main session file, read when new or changed (or when `force`d).
    fn ingest_file<'e>(
        &'e self,
        file: &SessionFile,
        run: &mut Run,
        force: bool,
        group: &mut Group<'e>,
    ) -> Result<FileOutcome> {
        let changed = self.unchanged(&file.path)?;
        if changed.same && !force {
            return Ok(FileOutcome::Unchanged);
        }
        let (transcript, archived) = self.read_source(
            &file.path,
            &file.session_id,
            Mode::Main,
            changed.known.as_ref(),
            force,
            &run.labels,
        )?;
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

    /// Reads a main session file when it is new or changed, with the labels the run knew
    /// when it began: what the pipeline runs ahead of the writes, on any thread.
    fn prepare(
        &self,
        file: &SessionFile,
        labels: &HashMap<u128, String>,
    ) -> Result<Option<Prepared>> {
        let changed = self.unchanged(&file.path)?;
        if changed.same {
            return Ok(None);
        }
        let (transcript, archived) = self.read_source(
            &file.path,
            &file.session_id,
            Mode::Main,
            changed.known.as_ref(),
            false,
            labels,
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
        let owners = self.owners.read().unwrap_or_else(|p| p.into_inner());
        transcript.uuids.iter().any(|uuid| {
            labelled.contains(uuid)
                || owners
                    .as_ref()
                    .and_then(|o| o.owner(*uuid))
                    .is_some_and(|owner| owner != session)
        })
    }

    /// Reads a session again because a later file labelled one of its messages: from its
    /// file, or from the archive when Claude Code has deleted the file.
    fn relabel<'e>(
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
        let Some(reader) = self.archive_reader(&record)? else {
            return Ok(());
        };
        let archived = Archived::kept(&record);
        let history = RunHistory {
            owners: &self.owners,
            labels: &run.labels,
        };
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
        if let Some(entry) = run.index.get(session) {
            transcript.index_summary = entry.summary.clone();
            if transcript.cwds.is_empty()
                && let Some(project) = &entry.project_path
            {
                transcript.cwds.push(project.clone());
            }
        }
        run.redacted.add(&scrub(&mut transcript));
        let main = episode_facts(
            Origin {
                session_id: session,
                episode_id: NodeId::episode(session),
                source_path: &path,
                agent: None,
            },
            &transcript,
        );
        let mut facts = Vec::new();
        if let Some(mut main) = main {
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
                    source_path: &path,
                    agent: Some(agent),
                };
                if let Some(child) = episode_facts(origin, run) {
                    main.edges.push(spawned(main.episode.id, &child.episode));
                    facts.push(child);
                }
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
        let mut record = SourceRecord {
            path,
            len: 0,
            modified_ms: changed.modified_ms,
            session_id: session.to_owned(),
            lines: transcript.lines,
            skipped_lines: transcript.skipped_lines,
            episode: facts.first().map(|f| f.episode.id),
            agent: false,
            agents: facts.len().saturating_sub(1) as u64,
            ..SourceRecord::default()
        };
        archived.record(&mut record);
        run.files_versioned += u64::from(archived.new_version);
        run.skipped_lines(&record.path, &transcript);
        // A group that already writes this source or its episodes lands first: what
        // follows reads their stored state.
        if group.holds(&record.path, &facts) {
            self.commit_group(group, run)?;
        }
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
            let owners = self.owners.read().unwrap_or_else(|p| p.into_inner());
            if let Some(owner) = owners.as_ref().and_then(|o| o.owner(key))
                && owner != session
            {
                run.relabel.insert(owner.to_owned());
            }
        }
        // The session's chunks are queued in its own transaction.
        let staged = group.staged(self)?;
        if let Some(main) = facts.first() {
            let mut inputs = vec![IndexInput {
                source: &record.path,
                node: &main.episode,
                handoff: main.handoff.as_ref(),
                passages: &transcript.passages,
                labels: &transcript.summaries,
                whole: !archived.appended,
            }];
            inputs.extend(facts[1..].iter().map(|child| IndexInput {
                source: &record.path,
                node: &child.episode,
                handoff: None,
                passages: &[],
                labels: &[],
                whole: false,
            }));
            self.index_sessions_into(&inputs, &mut batch, staged)?;
        } else if !archived.appended {
            self.drop_source_into(&record.path, &mut batch, staged)?;
        }
        let handoffs = facts.iter().filter_map(|f| f.handoff.as_ref());
        if handoffs.clone().next().is_some() {
            self.handoffs_will_change()?;
        }
        group
            .writes
            .get_or_insert_with(|| self.graph.group())
            .add(batch, &facts, &record)?;
        run.handoffs.extend(handoffs.map(|h| Handoff {
            sections: Default::default(),
            ..h.clone()
        }));
        group.files += 1;
        // Known at once, so a later file of the group that replays these lines is read
        // again (an ingest that fails forgets the map: see `Engine::ingest_with_progress`).
        if let Some(owners) = self
            .owners
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
        {
            owners.record(session, &transcript.uuids);
        }
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

    /// A subagent's own transcript: its parent is the session folder it sits in (2.1+) or
    /// the `sessionId` its lines carry (2.0.x), confirmed and described by the parent's
    /// `Task` call when the parent was read.
    fn ingest_agent_file(&self, file: &AgentFile, run: &mut Run) -> Result<FileOutcome> {
        let changed = self.unchanged(&file.path)?;
        if changed.same {
            return Ok(FileOutcome::Unchanged);
        }
        let name = format!("agent-{}", file.agent_id);
        let (mut transcript, archived) = self.read_source(
            &file.path,
            &name,
            Mode::Agent,
            changed.known.as_ref(),
            false,
            &run.labels,
        )?;
        run.bytes_read += archived.read;
        run.redacted.add(&scrub(&mut transcript));
        let path = file.path.to_string_lossy().into_owned();
        let parent = file
            .parent_session
            .clone()
            .or_else(|| transcript.session_field.clone());
        let episode_id = NodeId::agent(parent.as_deref().unwrap_or(""), &file.agent_id);
        let mut meta = file.meta.as_deref().map(read_meta).unwrap_or_default();
        if let Some(description) = &mut meta.description {
            *description = redact(description, &mut run.redacted).into_owned();
        }
        let spawn = self.graph.spawn(episode_id)?;
        let agent = AgentInfo {
            agent_id: file.agent_id.clone(),
            parent_session: parent.clone(),
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
        };
        let origin = Origin {
            session_id: &name,
            episode_id,
            source_path: &path,
            agent: Some(agent),
        };
        let mut facts = episode_facts(origin, &transcript);
        if let (Some(facts), Some(slug)) = (&mut facts, transcript.slug.as_deref())
            && let Some(doc) = self
                .graph
                .node(NodeId::plan(&format!("{slug}-agent-{}", file.agent_id)))?
        {
            facts.edges.push(has_plan(facts.episode.id, &doc));
        }
        if let (Some(facts), Some(parent)) = (&mut facts, &parent) {
            let parent_id = NodeId::episode(parent);
            if self.graph.node(parent_id)?.is_some() {
                facts.edges.push(spawned(parent_id, &facts.episode));
            }
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
            ..SourceRecord::default()
        };
        archived.record(&mut record);
        run.files_versioned += u64::from(archived.new_version);
        run.skipped_lines(&record.path, &transcript);
        let mut batch = Batch::new();
        archived.put(&mut batch)?;
        // The run's chunks are queued in its own transaction.
        let mut staged = self.semantic()?.begin();
        if let Some(facts) = &facts {
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
        self.graph.write_session(batch, facts.as_slice(), &record)?;
        self.semantic()?.applied(staged);
        self.retire(changed.known.as_ref(), &archived)?;
        Ok(FileOutcome::Read {
            episode: facts.is_some(),
        })
    }

    /// Writes the handoffs written so far as Eywa markdown files,
    /// `<data>/handoffs/YYYY/MM/DD/<id8>.md`: handed to the run's file thread while it has
    /// one, else written here on both cores (stores without a data directory keep handoffs
    /// in the graph only).
    fn flush_handoff_files(&self, run: &mut Run) -> Result<()> {
        let handoffs = std::mem::take(&mut run.handoff_files);
        match &run.handoff_sink {
            // A closed sink means its thread stopped on an error, which its join returns.
            Some(sink) => {
                let _ = sink.send(handoffs);
                Ok(())
            }
            None => self.write_handoff_files(&handoffs),
        }
    }

    fn write_handoff_files(&self, handoffs: &[Handoff]) -> Result<()> {
        handoffs
            .par_iter()
            .try_for_each(|handoff| self.write_handoff_file(handoff))
    }

    fn write_handoff_file(&self, handoff: &Handoff) -> Result<()> {
        let Some(root) = &self.config.data_dir else {
            return Ok(());
        };
        write_atomically(
            &handoff_path(root, handoff),
            render_markdown(handoff, &handoff.sections).as_bytes(),
        )
    }

    /// Rewrites `<data>/handoff-index.json` in the shape Eywa's reader takes.
    fn write_handoff_index(&self) -> Result<()> {
        let Some(root) = &self.config.data_dir else {
            return Ok(());
        };
        let handoffs: Vec<Handoff> = self.handoff_index()?.handoffs().collect();
        let index = build_index(&handoffs, chrono::Utc::now());
        let bytes = serde_json::to_vec_pretty(&index).expect("a JSON value serializes");
        write_atomically(&root.join("handoff-index.json"), &bytes)
    }

    /// A plan file: a Document (its text redacted, its bytes archived) with HAS_PLAN from
    /// every session — or, for `<slug>-agent-<id>.md`, the subagent — that carries its slug.
    fn ingest_plan(&self, plan: &PlanFile, run: &mut Run) -> Result<FileOutcome> {
        let changed = self.unchanged(&plan.path)?;
        if changed.same {
            return Ok(FileOutcome::Unchanged);
        }
        let bytes = std::fs::read(&plan.path).map_err(Error::io(&plan.path))?;
        let blob = self.graph.store().blobs().put_small(&bytes)?;
        run.bytes_read += blob.raw_len;
        let text = String::from_utf8_lossy(&bytes);
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
            content: Some(text.chars().take(MAX_PLAN_CHARS).collect()),
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
    fn ingest_memory(
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
        let mut project = None;
        for file in files
            .iter()
            .rev()
            .filter(|f| f.project_dir == memory.project_dir)
        {
            if let Some(node) = self.graph.node(NodeId::episode(&file.session_id))?
                && let Some(episode) = node.episode()
                && !episode.project_path.is_empty()
            {
                project = Some((episode.project.clone(), episode.project_path.clone()));
                break;
            }
        }
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
            content: Some(text.chars().take(MAX_PLAN_CHARS).collect()),
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
}

impl Engine {
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
        self.retire(changed.known.as_ref(), &archived)
    }
}

/// Characters of a plan kept as its Document's content.
const MAX_PLAN_CHARS: usize = 64_000;

/// `episode` HAS_PLAN `plan`, from when the plan was written.
fn has_plan(episode: NodeId, plan: &Node) -> Edge {
    Edge::new(episode, Relation::HasPlan, plan.id, plan.created_at)
}

/// What one ingest run gathers as it goes.
#[derive(Default)]
pub(super) struct Run {
    redacted: RedactionCounts,
    pub(super) bytes_read: u64,
    pub(super) files_versioned: u64,
    /// Every `summary` label known, by leaf uuid (stored ones and this run's).
    pub(super) labels: HashMap<u128, String>,
    /// Sessions a file of this run gave a new label: to read again.
    relabel: BTreeSet<String>,
    /// `sessions-index.json` entries, by session id.
    index: HashMap<String, IndexEntry>,
    /// The handoffs written, without their bodies (for the `get` index).
    handoffs: Vec<Handoff>,
    /// Labels this run wrote (keys of `labels`): a transcript read ahead that holds one
    /// is read again.
    labels_added: HashSet<u128>,
    /// Handoffs whose markdown files wait to be written.
    handoff_files: Vec<Handoff>,
    /// Where they go to be written, while a thread of the run writes them.
    handoff_sink: Option<std::sync::mpsc::Sender<Vec<Handoff>>>,
    /// Files read in part or not at all.
    skipped: Vec<SkippedFile>,
}

impl Run {
    fn skipped_lines(&mut self, path: &str, transcript: &Transcript) {
        if transcript.skipped_lines == 0 {
            return;
        }
        tracing::debug!(
            path,
            skipped = transcript.skipped_lines,
            "skipped malformed lines"
        );
        self.skipped.push(SkippedFile {
            path: path.to_owned(),
            lines: transcript.skipped_lines,
            reason: transcript.first_skip.clone().unwrap_or_default(),
        });
    }

    fn unreadable(&mut self, path: &Path, error: &std::io::Error) {
        self.skipped.push(SkippedFile {
            path: path.display().to_string(),
            lines: 0,
            reason: format!("unreadable: {error}"),
        });
    }
}

/// Main session files staged to be written in one transaction: sled's cost of a
/// transaction (a log write and a sync request) is paid once for many small files. What must
/// follow a file's commit (counting its queued chunks, removing blobs it replaced, writing
/// its handoff file) waits here until the group lands; dropped, the group writes nothing.
#[derive(Default)]
pub(super) struct Group<'e> {
    writes: Option<crate::graph::WriteGroup<'e>>,
    staged: Option<crate::semantic::Staged<'e>>,
    /// Files staged since the last commit.
    files: usize,
    /// Each staged file's earlier source record and its new archive.
    retired: Vec<(Option<SourceRecord>, Archived)>,
    handoff_files: Vec<Handoff>,
}

impl<'e> Group<'e> {
    /// The chunk queue writes of the group, under the embedder's write lock from the first.
    fn staged(&mut self, engine: &'e Engine) -> Result<&mut crate::semantic::Staged<'e>> {
        if self.staged.is_none() {
            self.staged = Some(engine.semantic()?.begin());
        }
        Ok(self.staged.as_mut().expect("just set"))
    }

    fn holds(&self, source: &str, facts: &[SessionFacts]) -> bool {
        self.writes.as_ref().is_some_and(|w| w.holds(source, facts))
    }

    fn is_full(&self) -> bool {
        self.files >= GROUP_FILES
            || self
                .writes
                .as_ref()
                .is_some_and(|w| w.writes() >= GROUP_WRITES)
    }
}

impl<'e> Engine {
    /// Lands what `group` holds, in one transaction, then what waited for it.
    fn commit_group(&'e self, group: &mut Group<'e>, run: &mut Run) -> Result<()> {
        if let Some(writes) = group.writes.take() {
            writes.commit()?;
        }
        if let Some(staged) = group.staged.take() {
            self.semantic()?.applied(staged);
        }
        group.files = 0;
        for (known, archived) in std::mem::take(&mut group.retired) {
            self.retire(known.as_ref(), &archived)?;
        }
        run.handoff_files.append(&mut group.handoff_files);
        if run.handoff_files.len() >= HANDOFF_FILES_AT_ONCE {
            self.flush_handoff_files(run)?;
        }
        Ok(())
    }
}

/// Files in one write group at most.
const GROUP_FILES: usize = 256;
/// Writes in one write group at most (a few large files fill it before 64 small ones).
const GROUP_WRITES: usize = 10_000;

/// A main session file read ahead of its write.
struct Prepared {
    changed: Changed,
    transcript: Transcript,
    archived: Archived,
}

/// Files read together (on both cores) ahead of the writes.
const READ_CHUNK: usize = 16;
/// Files read ahead of the writes at most.
const READ_AHEAD: usize = 2 * READ_CHUNK;
/// Handoff files written together.
const HANDOFF_FILES_AT_ONCE: usize = 256;

/// What other transcripts said, as the store and this run know it.
pub(super) struct RunHistory<'a> {
    pub(super) owners: &'a RwLock<Option<Owners>>,
    pub(super) labels: &'a HashMap<u128, String>,
}

impl History for RunHistory<'_> {
    fn owner(&self, uuid: u128, reading: &str) -> Option<String> {
        let owners = self.owners.read().unwrap_or_else(|p| p.into_inner());
        owners
            .as_ref()?
            .owner(uuid)
            .filter(|o| *o != reading)
            .map(str::to_owned)
    }

    fn label(&self, uuid: u128) -> Option<String> {
        self.labels.get(&uuid).cloned()
    }
}

/// A file's modification time in ms since the epoch (0 when unknown).
fn modified_ms(path: &Path) -> i64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

struct Changed {
    same: bool,
    known: Option<SourceRecord>,
    modified_ms: i64,
    /// The file's inode and status-change time now.
    inode: u64,
    changed_ns: i64,
}

/// Writes `bytes` to a temporary file beside `path`, then renames it into place, so a
/// reader never sees half a file.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().expect("a file path has a parent");
    std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(Error::io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(Error::io(path))
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

enum FileOutcome {
    Unchanged,
    Read { episode: bool },
}

/// An I/O error of writing (a full disk, a read-only one, a quota), not of reading the
/// file it names: it ends the run instead of counting the file as unreadable.
fn is_write_failure(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::StorageFull
            | std::io::ErrorKind::ReadOnlyFilesystem
            | std::io::ErrorKind::QuotaExceeded
    )
}
