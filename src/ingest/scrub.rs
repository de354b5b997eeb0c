//! Secrets out of a store written before every way in was redacted: documents, memories,
//! handoffs (imported ones, a summarizer's), and what the indexes derived from them. Run
//! once, when such a store is first opened; the raw archive of transcripts stays, as it
//! is documented to.

use std::collections::HashSet;

use eywa_storage::{Batch, Keyspace};
use serde::Serialize;

use super::Writer;
use crate::Result;
use crate::docs::{Documents, PAGE_BREAK};
use crate::extract::{RedactionCounts, redact_handoff, redact_in_place};
use crate::memory::{Memories, MemoryItem};

/// Set once a store is known to keep no secret outside its raw transcript archive.
pub(crate) const SCRUBBED: &[u8] = b"secrets_scrubbed";
/// Set while a scrub runs, with the document texts it replaced (blob hashes) and must
/// delete at its end: a scrub stopped midway is finished by the next, which rebuilds
/// what was derived even when nothing is left to redact.
const SCRUBBING: &[u8] = b"secrets_scrubbing";

/// What a scrub redacted, by where.
#[derive(Debug, Default, Clone, Serialize)]
pub(crate) struct ScrubReport {
    /// Document versions whose text, title, summary or concepts held a secret.
    pub documents: u64,
    /// Memory versions whose content, tags, project or reason held one.
    pub memories: u64,
    /// Handoffs that held one.
    pub handoffs: u64,
    /// Chunks whose stored start held one.
    pub snippets: u64,
    /// Secrets replaced, by kind.
    pub redacted: RedactionCounts,
}

impl ScrubReport {
    /// Whether anything was redacted.
    pub(crate) fn is_empty(&self) -> bool {
        self.redacted.is_empty()
    }
}

impl Writer<'_> {
    /// Redacts every document version, memory version, handoff and stored snippet that
    /// holds a secret, rewrites what was derived from them (graph nodes, handoff files,
    /// the `get` index) and, when any held one, rebuilds the text index and the chunks
    /// from the redacted store. Then marks the store scrubbed.
    pub(crate) fn scrub_store(&self) -> Result<ScrubReport> {
        let store = self.graph.store();
        let resumed: Option<Vec<String>> = store.get(Keyspace::Settings, SCRUBBING)?;
        let mut replaced = resumed.clone().unwrap_or_default();
        if resumed.is_none() {
            let mut batch = Batch::new();
            batch.put(Keyspace::Settings, SCRUBBING.to_vec(), &replaced)?;
            store.apply(batch)?;
        }
        let mut report = ScrubReport::default();
        let kept = self.scrub_documents(&mut report, &mut replaced)?;
        self.scrub_memories(&mut report)?;
        self.scrub_handoffs(&mut report, resumed.is_some())?;
        self.scrub_snippets(&mut report)?;
        // The passages and chunks derived from what changed, rebuilt now from the
        // redacted store: once, for a store that held a secret (or whose scrub stopped
        // before this).
        if !report.is_empty() || resumed.is_some() {
            self.reindex()?;
        }
        // The texts that held secrets, once nothing refers to them.
        replaced.retain(|hash| !kept.contains(hash));
        replaced.sort_unstable();
        replaced.dedup();
        let mut batch = Batch::new();
        for hash in &replaced {
            batch.delete_blob(hash);
        }
        batch.delete(Keyspace::Settings, SCRUBBING.to_vec());
        batch.put(Keyspace::Settings, SCRUBBED.to_vec(), &true)?;
        store.apply(batch)?;
        for hash in &replaced {
            store.blobs().delete(hash)?;
        }
        Ok(report)
    }

    /// Redacts every document version; `replaced` gains the texts replaced (noted in the
    /// store with each rewrite). Returns the blobs still referred to.
    fn scrub_documents(
        &self,
        report: &mut ScrubReport,
        replaced: &mut Vec<String>,
    ) -> Result<HashSet<String>> {
        let store = self.graph.store();
        let docs = Documents { store };
        // Blobs the sources' archives use (a plan file's raw bytes may equal a document's
        // text): never deleted here.
        let mut kept: HashSet<String> = HashSet::new();
        for source in self.graph.sources()? {
            kept.extend(source.blobs().cloned());
        }
        let versions: Vec<_> = docs.versions().collect::<Result<_>>()?;
        for (key, mut info) in versions {
            let mut counts = RedactionCounts::default();
            let text = docs.text(&info).ok().map(|pages| {
                let mut text = pages.join(&PAGE_BREAK.to_string());
                redact_in_place(&mut text, &mut counts);
                text
            });
            redact_in_place(&mut info.title, &mut counts);
            redact_in_place(&mut info.summary, &mut counts);
            for concept in &mut info.key_concepts {
                redact_in_place(concept, &mut counts);
            }
            for (_, name) in &mut info.entities {
                redact_in_place(name, &mut counts);
            }
            if counts.is_empty() {
                kept.insert(info.text_blob.clone());
                continue;
            }
            let mut batch = Batch::new();
            if let Some(text) = &text {
                let blob = store.blobs().put_small(text.as_bytes())?;
                batch.put_blob(&blob)?;
                if blob.hash != info.text_blob {
                    replaced.push(std::mem::replace(&mut info.text_blob, blob.hash));
                }
            }
            kept.insert(info.text_blob.clone());
            batch.put(Keyspace::Settings, SCRUBBING.to_vec(), &*replaced)?;
            batch.put(Keyspace::Docs, key, &info)?;
            // The latest version is the document's node: named by its title, saying its
            // summary.
            if info.replaced_at.is_none() {
                let text = text.unwrap_or_default();
                self.graph
                    .write_facts(batch, &self.document_facts(&info, &text)?)?;
            } else {
                store.apply(batch)?;
            }
            report.documents += 1;
            report.redacted.add(&counts);
        }
        Ok(kept)
    }

    fn scrub_memories(&self, report: &mut ScrubReport) -> Result<()> {
        let store = self.graph.store();
        let memories = Memories { store };
        let versions: Vec<(Vec<u8>, MemoryItem)> = memories.versions().collect::<Result<_>>()?;
        // Each memory's latest version number, to rewrite its node from it.
        let mut latest: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
        for (_, m) in &versions {
            let v = latest.entry(m.id.clone()).or_insert(m.version);
            *v = (*v).max(m.version);
        }
        for (key, mut m) in versions {
            let counts = super::memories::redact_memory(&mut m);
            if counts.is_empty() {
                continue;
            }
            let mut batch = Batch::new();
            batch.put(Keyspace::Memories, key, &m)?;
            if latest.get(&m.id) == Some(&m.version) {
                self.graph
                    .write_facts(batch, &super::memories::memory_facts(&m))?;
            } else {
                store.apply(batch)?;
            }
            report.memories += 1;
            report.redacted.add(&counts);
        }
        Ok(())
    }

    /// Redacts every handoff, then rewrites its file. A scrub that stopped before may
    /// have redacted handoffs whose files it did not rewrite: resumed, every file is.
    fn scrub_handoffs(&self, report: &mut ScrubReport, resumed: bool) -> Result<()> {
        let mut changed = Vec::new();
        let mut files = Vec::new();
        for mut handoff in self.graph.handoffs()? {
            let mut counts = RedactionCounts::default();
            redact_handoff(&mut handoff, &mut counts);
            if counts.is_empty() {
                if resumed {
                    files.push(handoff);
                }
                continue;
            }
            report.redacted.add(&counts);
            changed.push(handoff);
        }
        if changed.is_empty() && files.is_empty() {
            return Ok(());
        }
        report.handoffs = changed.len() as u64;
        if !changed.is_empty() {
            self.sinks.handoffs_will_change()?;
            self.graph.replace_handoffs(&changed)?;
            self.sinks.handoffs_changed(&changed)?;
        }
        for handoff in changed.iter().chain(&files) {
            self.write_handoff_file(handoff)?;
        }
        self.write_handoff_index()
    }

    fn scrub_snippets(&self, report: &mut ScrubReport) -> Result<()> {
        let store = self.graph.store();
        let mut batch = Batch::new();
        for kv in store.scan::<crate::semantic::VectorEntry>(Keyspace::Vectors, &[]) {
            let (key, mut entry) = kv?;
            let mut counts = RedactionCounts::default();
            redact_in_place(&mut entry.snippet, &mut counts);
            if counts.is_empty() {
                continue;
            }
            batch.put(Keyspace::Vectors, key, &entry)?;
            report.snippets += 1;
            report.redacted.add(&counts);
        }
        Ok(store.apply(batch)?)
    }
}
