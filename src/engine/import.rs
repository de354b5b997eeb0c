//! Importing a Python Eywa data folder: `handoff-index.json` and `handoffs/**/*.md`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Engine;
use crate::extract::{
    HandoffFrontmatter, RedactionCounts, SessionFacts, entity, parse_markdown, read_index, redact,
};
use crate::graph::SourceRecord;
use crate::model::{
    Edge, EntityType, Episode, Handoff, HandoffSections, Node, NodeId, Relation, Timestamp,
};
use crate::{Error, Result};

/// What an import did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportReport {
    /// Handoffs found (markdown files, and index entries without a file).
    pub found: u64,
    pub imported: u64,
    /// Sessions eywa already knows from their transcripts (the better source).
    pub known: u64,
    /// Handoffs an earlier import brought in.
    pub already_imported: u64,
    /// Files that are not Eywa handoffs, with why.
    pub failed: Vec<(String, String)>,
}

impl Engine {
    /// Imports the handoffs of an Eywa data folder. Each becomes an Episode (`eywa:<id8>`)
    /// that TOUCHED its projects, with its handoff, so `get` ranks it with the rest.
    /// Sessions already read from transcripts are left as they are; importing again
    /// changes nothing.
    pub fn import_eywa(&self, dir: &Path) -> Result<ImportReport> {
        let _guard = self.ingest_lock.lock().unwrap_or_else(|p| p.into_inner());
        let result = self.import_locked(dir);
        if result.is_err() {
            self.handoffs_lost();
        }
        result
    }

    fn import_locked(&self, dir: &Path) -> Result<ImportReport> {
        if !dir.is_dir() {
            return Err(Error::NotFound(format!(
                "no Eywa folder at {}",
                dir.display()
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
            if source.episode.is_some() && !source.session_id.starts_with("eywa:") {
                known.push(source.session_id);
            } else if source.session_id.starts_with("eywa:") {
                stored.insert(source.path);
            }
        }
        let mut import = Import {
            engine: self,
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
                read.map_err(|e| Error::InvalidArgument(format!("{}: {e}", index_path.display())))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&index_path)(e)),
        }
        import.write()?;
        let Import {
            report, written, ..
        } = import;
        self.graph.derive_sequences()?;
        self.graph.store().flush()?;
        self.graph.save_view()?;
        self.handoffs_changed(&written)?;
        Ok(report)
    }
}

/// Sessions written per batch: one transaction for many small sessions (~1,400 writes;
/// 512 sessions a batch was no faster).
const IMPORT_BATCH: usize = 128;

/// An import under way: what it found, and what waits to be written.
struct Import<'a> {
    engine: &'a Engine,
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
        let facts = imported_facts(front, sections, &mut self.redacted);
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
        self.engine.handoffs_will_change()?;
        let sources: Vec<(&[SessionFacts], &SourceRecord)> = self
            .pending
            .iter()
            .map(|(facts, record)| (std::slice::from_ref(facts), record))
            .collect();
        self.engine.graph.write_new_sources(&sources)?;
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

/// The Episode, projects and handoff an imported handoff stands for.
fn imported_facts(
    front: HandoffFrontmatter,
    mut sections: HandoffSections,
    redacted: &mut RedactionCounts,
) -> SessionFacts {
    let mut clean = |s: String| redact(&s, redacted).into_owned();
    let short = front.session_id.clone();
    let id = NodeId::episode(&format!("eywa:{short}"));
    let start = Timestamp::parse(&front.date.to_string()).unwrap_or(Timestamp(0));
    let minutes = front.duration_minutes.unwrap_or(0);
    let end = Timestamp(start.0 + i64::from(minutes) * 60_000);
    let headline = clean(front.headline);
    for list in [
        &mut sections.what_happened,
        &mut sections.key_files,
        &mut sections.open_threads,
    ] {
        *list = list.drain(..).map(&mut clean).collect();
    }
    sections.insights = sections
        .insights
        .drain(..)
        .map(|(t, e)| (clean(t), clean(e)))
        .collect();
    let mut entities = Vec::new();
    let mut edges = Vec::new();
    for name in &front.projects {
        // Eywa knows a project by name only; its path stays unknown.
        let project = NodeId::project(&format!("eywa:{name}"));
        entities.push(entity(EntityType::Project, project, name, None, start, end));
        let mut edge = Edge::new(id, Relation::Touched, project, start);
        edge.valid_to = Some(end);
        edges.push(edge);
    }
    let episode = Episode {
        session_id: format!("eywa:{short}"),
        short_id: short.clone(),
        source_path: String::new(),
        project: front.projects.first().cloned().unwrap_or_default(),
        project_path: String::new(),
        cwd: String::new(),
        git_branch: None,
        models: front.model.iter().cloned().collect(),
        version: None,
        start,
        end,
        active_minutes: minutes,
        user_messages: 0,
        assistant_messages: 0,
        prompts: 0,
        tool_calls: 0,
        title: headline.clone(),
        substance: front.substance,
        agent: None,
        tokens: Default::default(),
        slug: None,
        compactions: Vec::new(),
        resumes: Vec::new(),
    };
    let handoff = Handoff {
        session_id: format!("eywa:{short}"),
        short_id: short,
        episode: id,
        date: front.date,
        started_at: start,
        duration_minutes: front.duration_minutes,
        model: front.model,
        headline: headline.clone(),
        projects: front.projects,
        keywords: front.keywords,
        substance: front.substance,
        cwd: String::new(),
        sections,
    };
    SessionFacts {
        episode: Node::from_episode(id, headline, episode),
        handoff: Some(handoff),
        entities,
        edges,
    }
}

/// Every `*.md` below `dir`, sorted (none when `dir` is missing).
fn markdown_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    if !dir.is_dir() {
        return Ok(out);
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).map_err(Error::io(&d))? {
            let path = entry.map_err(Error::io(&d))?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}
