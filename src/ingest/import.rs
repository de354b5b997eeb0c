//! Importing a Python Eywa data folder: `handoff-index.json` and `handoffs/**/*.md`.

use super::Writer;
use std::collections::HashSet;
use std::path::Path;

use serde::Serialize;

use crate::extract::{
    HandoffFrontmatter, RedactionCounts, SessionFacts, imported_facts, markdown_files,
    parse_markdown, read_index,
};
use crate::graph::SourceRecord;
use crate::model::{Handoff, HandoffSections};
use crate::{Error, Result};

/// What an import did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportReport {
    /// Handoffs found (markdown files, and index entries without a file).
    pub found: u64,
    /// Handoffs this import brought in.
    pub imported: u64,
    /// Sessions eywa already knows from their transcripts (the better source).
    pub known: u64,
    /// Handoffs an earlier import brought in.
    pub already_imported: u64,
    /// Files that are not Eywa handoffs, with why.
    pub failed: Vec<(String, String)>,
}

impl Writer<'_> {
    /// Imports the handoffs of an Eywa data folder (see `Engine::import_eywa`).
    pub(crate) fn import(&self, dir: &Path) -> Result<ImportReport> {
        if !dir.is_dir() {
            return Err(Error::NotFound(format!(
                "no Eywa folder at {}",
                crate::error::quote_path(dir)
            )));
        }
        // Counters loaded before writing are kept in step by every batch.
        self.graph.counts()?;
        // The text index exists before the first source does, so the next ingest finds it
        // current (imported handoffs add no passages) instead of rebuilding it from every
        // source.
        self.text()?;
        let mut known = Vec::new();
        let mut stored = HashSet::new();
        for source in self.graph.sources()? {
            let imported = crate::claude::is_imported(&source.session_id);
            if source.episode.is_some() && !imported {
                known.push(source.session_id);
            } else if imported {
                stored.insert(source.path);
            }
        }
        let mut import = Import {
            writer: self,
            report: ImportReport::default(),
            known,
            stored,
            seen: HashSet::new(),
            pending: Vec::new(),
            written: Vec::new(),
            redacted: RedactionCounts::default(),
        };
        import.known.sort_unstable();
        // Markdown files first: they hold the whole handoff, the index only its fields.
        for path in markdown_files(&dir.join("handoffs"))? {
            crate::cancel::checkpoint()?;
            let text = std::fs::read_to_string(&path).map_err(Error::io(&path))?;
            match parse_markdown(&text) {
                Ok((front, sections)) => {
                    let source = format!("{}#{}", path.display(), front.session_id);
                    import.add(front, sections, source)?;
                }
                Err(e) => import
                    .report
                    .failed
                    .push((path.display().to_string(), e.to_string())),
            }
        }
        let index_path = dir.join("handoff-index.json");
        match std::fs::File::open(&index_path) {
            Ok(file) => {
                let mut failed = Ok(());
                let read = read_index(file, &mut |entry| {
                    if failed.is_err() {
                        return;
                    }
                    if let Err(e) = crate::cancel::checkpoint() {
                        failed = Err(e);
                        return;
                    }
                    let entry = match entry {
                        Ok(entry) => entry,
                        Err(e) => {
                            let at = format!("{}", index_path.display());
                            import.report.failed.push((at, e.to_string()));
                            return;
                        }
                    };
                    let source = format!("{}#{}", index_path.display(), entry.short_id);
                    let front = HandoffFrontmatter {
                        session_id: entry.short_id,
                        date: entry.date,
                        duration: None,
                        duration_minutes: entry.duration_minutes,
                        model: None,
                        headline: entry.headline,
                        projects: entry.projects,
                        keywords: entry.keywords,
                        substance: entry.substance,
                    };
                    failed = import.add(front, HandoffSections::default(), source);
                });
                failed?;
                read.map_err(|e| {
                    Error::InvalidArgument(format!(
                        "{}: {e}",
                        crate::error::quote_path(&index_path)
                    ))
                })?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&index_path)(e)),
        }
        import.write()?;
        let Import {
            report,
            written,
            redacted,
            ..
        } = import;
        if !redacted.is_empty() {
            tracing::info!(
                redacted = redacted.total(),
                "secrets redacted from imported handoffs"
            );
        }
        // The `get` index first, so the handoffs it is built from are let go before the
        // sequence pass (it writes no handoff, so the index stays current).
        self.sinks.handoffs_changed(&written)?;
        drop(written);
        self.graph.derive_sequences()?;
        self.graph.store().flush()?;
        self.graph.save_view()?;
        Ok(report)
    }
}

/// Sessions written per batch: one transaction for many small sessions (~1,400 writes;
/// 512 sessions a batch was no faster).
const IMPORT_BATCH: usize = 128;

/// An import under way: what it found, and what waits to be written.
struct Import<'a> {
    writer: &'a Writer<'a>,
    report: ImportReport,
    /// Session ids read from transcripts, sorted: an import never overrides one.
    known: Vec<String>,
    /// Sources of earlier imports: one scan up front instead of a lookup per handoff.
    stored: HashSet<String>,
    /// Short ids already handled (a markdown file and its index entry are one handoff).
    seen: HashSet<String>,
    pending: Vec<(SessionFacts, SourceRecord)>,
    /// Handoffs written, for the `get` index.
    written: Vec<Handoff>,
    redacted: RedactionCounts,
}

impl Import<'_> {
    fn add(
        &mut self,
        front: HandoffFrontmatter,
        sections: HandoffSections,
        source: String,
    ) -> Result<()> {
        let short = front.session_id.clone();
        if !self.seen.insert(short.clone()) {
            return Ok(());
        }
        self.report.found += 1;
        // A transcript's session id starts with the handoff's short id.
        let at = self.known.partition_point(|k| k.as_str() < short.as_str());
        if self.known.get(at).is_some_and(|k| k.starts_with(&short)) {
            self.report.known += 1;
            return Ok(());
        }
        if self.stored.contains(&source) {
            self.report.already_imported += 1;
            return Ok(());
        }
        let facts = imported_facts(front, sections, self.writer.identity, &mut self.redacted);
        let record = SourceRecord {
            path: source,
            len: 0,
            modified_ms: 0,
            session_id: format!("eywa:{short}"),
            lines: 0,
            skipped_lines: 0,
            episode: Some(facts.episode.id),
            ..SourceRecord::default()
        };
        self.pending.push((facts, record));
        self.report.imported += 1;
        if self.pending.len() >= IMPORT_BATCH {
            self.write()?;
        }
        Ok(())
    }

    /// Writes what waits, in one batch.
    fn write(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.writer.sinks.handoffs_will_change()?;
        let sources: Vec<(&[SessionFacts], &SourceRecord)> = self
            .pending
            .iter()
            .map(|(facts, record)| (std::slice::from_ref(facts), record))
            .collect();
        self.writer.graph.write_new_sources(&sources)?;
        for (facts, _) in self.pending.drain(..) {
            if let Some(handoff) = facts.handoff {
                self.written.push(Handoff {
                    sections: HandoffSections::default(),
                    ..handoff
                });
            }
        }
        Ok(())
    }
}
