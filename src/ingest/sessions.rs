//! Main session files: read ahead on every core and written in order, oldest first, each
//! transcript's facts built and staged in a write group.

use std::collections::{HashMap, HashSet};

mod episode;

use super::ahead::{Pending, ReadAhead};
use super::group::Group;
use super::{Changed, FileOutcome, IngestReport, Run, Ticker, Writer, skip_unreadable};
use crate::archive::Archived;
use crate::claude::{IndexEntry, Mode, SessionFile, Transcript, claude_id, read_transcript_with};
use crate::model::Handoff;
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
pub(super) fn add_persisted_results(
    path: &str,
    session: &str,
    transcript: &mut Transcript,
    run: &mut Run,
) {
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
