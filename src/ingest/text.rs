//! What ingest puts in the text index and queues for semantic memory, and how both are
//! rebuilt from the store.

use super::Writer;
use eywa_storage::{Batch, Keyspace};

use crate::claude::{Mode, read_transcript_with};
use crate::index::docs::{IndexInput, document_docs, passage_docs, session_docs};
use crate::index::{TextDoc, TextIndex};
use crate::model::{Node, NodeId, NodeKind, Timestamp};
use crate::{Error, Result};

/// Settings key set while the text index may lack what the warm tier holds (an ingest
/// wrote sessions and has not committed the index yet); found set at open, the index is
/// rebuilt.
pub(crate) const DIRTY: &[u8] = b"text_index_dirty";

/// Settings prefix of a document or memory whose store writes landed and whose text-index
/// entries may not be committed yet: `text_pending/ | source | 0 | write` (the write a
/// number of its own, so that a commit clears the marks of the writes it holds, not a
/// later write's to the same source). Put in the write's own batch, removed once the index
/// is committed; one found when the store is opened (its process died in between) has its
/// source indexed again then.
const PENDING: &[u8] = b"text_pending/";

/// A write's pending mark (see [`PENDING`]).
#[derive(Debug, Clone)]
pub(crate) struct Mark {
    source: String,
    key: Vec<u8>,
}

impl Mark {
    fn new(source: &str) -> Mark {
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        // Unique beside other processes' marks: the clock at the first write, then counted.
        static FIRST: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        let first = *FIRST.get_or_init(|| Timestamp::now().0.unsigned_abs() << 20);
        let number = first.wrapping_add(WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let mut key = PENDING.to_vec();
        key.extend_from_slice(source.as_bytes());
        key.push(0);
        key.extend_from_slice(&number.to_be_bytes());
        Mark {
            source: source.to_owned(),
            key,
        }
    }

    /// The mark a key holds; marks of an older eywa are the source alone.
    fn of_key(key: &[u8]) -> Mark {
        let rest = &key[PENDING.len().min(key.len())..];
        let source = match rest.len().checked_sub(9) {
            Some(at) if rest[at] == 0 => &rest[..at],
            _ => rest,
        };
        Mark {
            source: String::from_utf8_lossy(source).into_owned(),
            key: key.to_vec(),
        }
    }
}

/// The marks of writes whose text-index entries may not be committed (see [`PENDING`]).
pub(crate) fn pending_marks(store: &eywa_storage::Store) -> Result<Vec<Mark>> {
    store
        .keys(Keyspace::Settings, PENDING)
        .map(|k| Ok(Mark::of_key(&k?)))
        .collect()
}

/// Client writes made searchable at once, and committed to the text index soon after by a
/// thread of their own (`serve` runs one: [`crate::engine::Engine::run_text_committer`]).
/// With none running, each write commits the index itself.
#[derive(Debug, Default)]
pub(crate) struct Deferred {
    /// Wakes the committing thread, while it runs.
    wake: std::sync::Mutex<Option<std::sync::mpsc::Sender<()>>>,
    /// The marks of writes made searchable and not committed yet.
    shown: std::sync::Mutex<Vec<Mark>>,
}

impl Deferred {
    /// Client writes are committed by the thread that `woken` wakes from now on.
    pub(crate) fn start(&self) -> std::sync::mpsc::Receiver<()> {
        let (wake, woken) = std::sync::mpsc::channel();
        *self.lock() = Some(wake);
        woken
    }

    /// Client writes commit themselves from now on.
    pub(crate) fn stop(&self) {
        *self.lock() = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<std::sync::mpsc::Sender<()>>> {
        self.wake
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn shown(&self) -> std::sync::MutexGuard<'_, Vec<Mark>> {
        self.shown
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Writer<'_> {
    /// Puts the passages a read of a source produced, and the session-level documents of the
    /// session and the runs read from it, into the text index (committed at the end of the
    /// ingest run), and queues their chunks in `batch`: applied with the session's graph
    /// writes, a crash leaves both or neither. The first input's `whole` (the source was
    /// read from its start) drops what the source had before.
    pub(crate) fn index_sessions_into(
        &self,
        inputs: &[IndexInput<'_>],
        batch: &mut Batch,
        staged: &mut crate::semantic::Staged<'_>,
    ) -> Result<()> {
        let first = inputs.first().expect("a session to index");
        self.mark_text_dirty()?;
        let text = self.text()?;
        if first.whole {
            text.delete_source(first.source);
        }
        let mut embed = Vec::new();
        for input in inputs {
            let mut docs = passage_docs(input, input.passages, true);
            let session = session_docs(input);
            docs.extend(session.iter().cloned());
            text.put(&docs)?;
            embed.extend(passage_docs(input, input.passages, false));
            embed.extend(session);
        }
        self.semantic()?.stage_more(
            staged,
            self.graph.store(),
            first.source,
            &embed,
            first.whole,
            batch,
        )
    }

    /// Drops what a source put in the text index and, in `batch`, in semantic memory (it
    /// was read from its start and holds nothing now).
    pub(crate) fn drop_source_into(
        &self,
        source: &str,
        batch: &mut Batch,
        staged: &mut crate::semantic::Staged<'_>,
    ) -> Result<()> {
        self.mark_text_dirty()?;
        self.text()?.delete_source(source);
        self.semantic()?
            .stage_more(staged, self.graph.store(), source, &[], true, batch)
    }

    /// Puts a plan or memory Document into the text index, and its chunks in `batch`.
    pub(crate) fn index_document_into(
        &self,
        source: &str,
        node: &Node,
        session: &str,
        batch: &mut Batch,
        staged: &mut crate::semantic::Staged<'_>,
    ) -> Result<()> {
        self.mark_text_dirty()?;
        self.text()?.delete_source(source);
        let docs = document_docs(source, node, session);
        self.text()?.put(&docs)?;
        self.semantic()?
            .stage_more(staged, self.graph.store(), source, &docs, true, batch)
    }

    pub(crate) fn mark_text_dirty(&self) -> Result<()> {
        mark_text_dirty(self.graph.store())
    }

    /// Commits the text index at the end of an ingest run or a rebuild, which covers every
    /// source: the marks that say it may lag the store are cleared.
    pub(crate) fn commit_text(&self) -> Result<()> {
        self.commit_text_writes()?;
        if self.graph.store().contains(Keyspace::Settings, DIRTY)? {
            let mut batch = Batch::new();
            batch.delete(Keyspace::Settings, DIRTY.to_vec());
            self.graph.store().apply(batch)?;
        }
        Ok(())
    }

    /// Notes, in the batch that writes `source`, that its text-index entries are not
    /// committed yet; [`Writer::stage_text`] hands the mark to the commit that covers
    /// them, which clears it.
    pub(crate) fn mark_pending(&self, batch: &mut Batch, source: &str) -> Mark {
        let mark = Mark::new(source);
        batch.put_raw(Keyspace::Settings, mark.key.clone(), Vec::new());
        mark
    }

    /// `docs` replace the entries of the `mark`ed source in the text index, at the next
    /// [`Writer::commit_writes`]: a client's write holds no lock while the index writer
    /// is busy committing.
    pub(crate) fn stage_text(&self, mark: Mark, docs: Vec<TextDoc>) {
        self.pending_texts().push(PendingText {
            mark,
            docs: Some(docs),
        });
    }

    fn pending_texts(&self) -> std::sync::MutexGuard<'_, Vec<PendingText>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Makes what documents and memories this process wrote searchable. While `serve`'s
    /// committing thread runs, they go into the text index's overlay now (see
    /// [`TextIndex::write_now`]) and that thread commits them soon after; else the
    /// index is committed here ([`Writer::commit_text_writes`]), in one commit shared by
    /// the callers at once, so a client write may commit outside the ingest lock.
    pub(crate) fn commit_writes(&self) -> Result<()> {
        let Some(wake) = self.deferred.lock().clone() else {
            return self.commit_text_writes();
        };
        let marks = self.show_staged()?;
        self.deferred.shown().extend(marks);
        // The thread may have stopped since: the marks then wait for the next commit, or
        // for the next open of the store.
        let _ = wake.send(());
        Ok(())
    }

    /// Makes every write staged so far searchable now, in the text index's overlay (see
    /// [`TextIndex::write_now`]), and returns their marks with those of the entries
    /// already in the index writer. Under the staging lock: a write whose entry another
    /// caller took (the committing thread) is searchable once that caller lets go.
    fn show_staged(&self) -> Result<Vec<Mark>> {
        let mut pending = self.pending_texts();
        let writes: Vec<(String, Vec<TextDoc>)> = pending
            .iter()
            .filter_map(|w| w.docs.as_ref().map(|d| (w.mark.source.clone(), d.clone())))
            .collect();
        if !writes.is_empty() {
            self.text()?.write_now(writes)?;
        }
        Ok(std::mem::take(&mut *pending)
            .into_iter()
            .map(|w| w.mark)
            .collect())
    }

    /// Commits the text index with what documents and memories this process wrote, and
    /// clears their pending marks; callers at once share one commit. Marks another
    /// process left (it died before its commit) stay until they are caught up
    /// ([`Writer::catch_up_pending`]); a mark an ingest run left stays for a rebuild.
    pub(crate) fn commit_text_writes(&self) -> Result<()> {
        self.text_commits.join(|| {
            // What this commit covers: every write staged or made searchable so far.
            let mut marks = self.show_staged()?;
            marks.extend(std::mem::take(&mut *self.deferred.shown()));
            if let Err(e) = self.text().and_then(TextIndex::commit) {
                // Not committed: the next commit covers them (the index keeps them).
                self.deferred.shown().extend(marks);
                return Err(e);
            }
            if !marks.is_empty() {
                let mut batch = Batch::new();
                for mark in marks {
                    batch.delete(Keyspace::Settings, mark.key);
                }
                self.graph.store().apply(batch)?;
            }
            Ok(())
        })
    }

    /// Indexes again the documents and memories a process that died left pending (see
    /// [`Writer::mark_pending`]); returns how many.
    pub(crate) fn catch_up_pending(&self) -> Result<usize> {
        let store = self.graph.store();
        let marks = pending_marks(store)?;
        let sources: std::collections::BTreeSet<String> =
            marks.iter().map(|m| m.source.clone()).collect();
        for source in &sources {
            let docs = match source.split_once(':') {
                Some(("doc", id)) => self.document_docs_of(id)?,
                Some(("memory", id)) => self.memory_docs_of(id)?,
                _ => Vec::new(),
            };
            let text = self.text()?;
            text.delete_source(source);
            text.put(&docs)?;
            self.semantic()?.enqueue(store, source, &docs, true)?;
        }
        // The marks are this process's now, cleared by the commit below.
        self.pending_texts().extend(
            marks
                .into_iter()
                .map(|mark| PendingText { mark, docs: None }),
        );
        self.commit_text_writes()?;
        Ok(sources.len())
    }

    /// Whether the text index must be rebuilt: an ingest stopped before committing it.
    pub(crate) fn text_index_lags(&self) -> Result<bool> {
        // Opening the index first: one created now, beside sources, marks itself.
        self.text()?;
        Ok(self.graph.store().contains(Keyspace::Settings, DIRTY)?)
    }

    /// Indexes again a session known from `sessions-index.json` only: its first prompt
    /// and summary (stored on its node; for a node written before the summary was, from
    /// the index file, read once into `index`).
    fn reindex_index_only(
        &self,
        record: &crate::graph::SourceRecord,
        node: &crate::model::Node,
        index: &mut Option<std::collections::HashMap<String, crate::claude::IndexEntry>>,
    ) -> Result<()> {
        let mut node = node.clone();
        if !node.properties.contains_key(crate::extract::INDEX_SUMMARY) {
            if index.is_none() {
                *index = Some(self.claude.session_index().unwrap_or_default());
            }
            let summary = index
                .as_ref()
                .and_then(|i| i.get(crate::claude::claude_id(&record.session_id)))
                .and_then(|e| e.summary.as_deref())
                .map(|s| crate::extract::redact(s, &mut Default::default()).into_owned());
            if let Some(summary) = summary {
                node.properties
                    .insert(crate::extract::INDEX_SUMMARY.to_owned(), summary);
            }
        }
        let (passages, labels) = super::index_only::index_only_texts(&node);
        let handoff = self.graph.handoff(&record.session_id)?;
        self.reindex_session(&IndexInput {
            source: &record.path,
            node: &node,
            handoff: handoff.as_ref(),
            passages: &passages,
            labels: &labels,
            whole: true,
        })
    }

    /// Puts a session's passages and session documents back in the text index, and
    /// queues them for semantic memory (a rebuild's part for one source).
    fn reindex_session(&self, input: &IndexInput<'_>) -> Result<()> {
        let session = session_docs(input);
        self.text()?
            .put(&passage_docs(input, input.passages, true))?;
        self.text()?.put(&session)?;
        let mut embed = passage_docs(input, input.passages, false);
        embed.extend(session);
        self.semantic()?
            .enqueue(self.graph.store(), input.source, &embed, false)
    }

    /// Rebuilds the text index from the store: every transcript from its archive, every
    /// session's handoff and labels, every plan and memory file. Returns the documents.
    pub(crate) fn reindex(&self) -> Result<u64> {
        self.mark_text_dirty()?;
        self.text()?.clear()?;
        let store = self.graph.store();
        // Every document is queued for semantic memory again (unchanged chunks are kept as
        // they are); chunks of documents that are gone are dropped at the end.
        self.semantic()?.begin_sweep();
        self.authors.load(self.graph)?;
        let labels = self.graph.labels()?;
        let history = self.authors.history(&labels);
        // `sessions-index.json`, read when a session known only from it needs its summary.
        let mut index = None;
        for record in self.graph.sources()? {
            let Some(node) = record
                .episode
                .map(|id| self.graph.node(id))
                .transpose()?
                .flatten()
            else {
                if let Some(node) = self.source_document(&record.path)? {
                    let session = self.document_session(&node)?;
                    let docs = document_docs(&record.path, &node, &session);
                    self.text()?.put(&docs)?;
                    self.semantic()?
                        .enqueue(store, &record.path, &docs, false)?;
                }
                continue;
            };
            if node.properties.contains_key(crate::extract::INDEX_ONLY) {
                self.reindex_index_only(&record, &node, &mut index)?;
                continue;
            }
            let Some(reader) = self.archive().archive_reader(&record)? else {
                continue;
            };
            let mode = if record.agent {
                Mode::Agent
            } else {
                Mode::Main
            };
            // With the labels other files gave its messages, and without lines it replays.
            let mut transcript = read_transcript_with(reader, &record.session_id, mode, &history)
                .map_err(Error::io(&record.path))?;
            crate::extract::scrub(&mut transcript);
            let episode = node
                .episode()
                .expect("a source's episode node is an episode");
            let handoff = self.graph.handoff(&episode.session_id)?;
            let labels = transcript.indexed_labels();
            self.reindex_session(&IndexInput {
                source: &record.path,
                node: &node,
                handoff: handoff.as_ref(),
                passages: &transcript.passages,
                labels: &labels,
                whole: true,
            })?;
            // Inline subagent runs: their report.
            for run in &transcript.inline_agents {
                let id = NodeId::agent(&episode.session_id, &run.session_id);
                if let Some(child) = self.graph.node(id)? {
                    let input = IndexInput {
                        source: &record.path,
                        node: &child,
                        handoff: None,
                        passages: &[],
                        labels: &[],
                        whole: false,
                    };
                    let docs = session_docs(&input);
                    self.text()?.put(&docs)?;
                    self.semantic()?
                        .enqueue(store, &record.path, &docs, false)?;
                }
            }
        }
        self.index_memories()?;
        self.index_documents()?;
        self.semantic()?.end_sweep(store)?;
        self.commit_text()?;
        Ok(self.text()?.len())
    }

    /// The plan or memory Document read from `path`.
    fn source_document(&self, path: &str) -> Result<Option<std::sync::Arc<Node>>> {
        let name = std::path::Path::new(path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for id in [NodeId::memory_doc(path), NodeId::plan(&name)] {
            if let Some(node) = self.graph.node(id)?
                && matches!(&node.kind, NodeKind::Document(d) if d.path == path)
            {
                return Ok(Some(node));
            }
        }
        Ok(None)
    }

    /// The session a plan leads to: the latest with its slug (memory files lead to none).
    pub(crate) fn document_session(&self, node: &Node) -> Result<String> {
        let Some(slug) = node.properties.get("slug") else {
            return Ok(String::new());
        };
        let mut latest: Option<(Timestamp, String)> = None;
        for id in self.graph.episodes_with_slug(slug)? {
            if let Some(n) = self.graph.node(id)?
                && let Some(e) = n.episode().filter(|e| e.agent.is_none())
                && latest.as_ref().is_none_or(|(t, _)| e.start > *t)
            {
                latest = Some((e.start, e.session_id.clone()));
            }
        }
        Ok(latest.map(|(_, s)| s).unwrap_or_default())
    }
}

/// Marks the text index as possibly behind the store (found set at open, it is rebuilt).
pub(crate) fn mark_text_dirty(store: &eywa_storage::Store) -> Result<()> {
    if !store.contains(Keyspace::Settings, DIRTY)? {
        let mut batch = Batch::new();
        batch.put(Keyspace::Settings, DIRTY.to_vec(), &true)?;
        store.apply(batch)?;
    }
    Ok(())
}

/// A write whose text-index entries the next commit covers: already in the index writer
/// (`docs` is `None`), or to be put there first.
#[derive(Debug)]
pub(crate) struct PendingText {
    mark: Mark,
    docs: Option<Vec<TextDoc>>,
}
