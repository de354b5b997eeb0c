//! Writing memories: each version in the `memories` keyspace, the memory's node with its
//! ABOUT and DERIVED_FROM edges in the graph, its text in the text index and its chunks in
//! semantic memory, all in one transaction but the text index (committed right after, and
//! rebuilt from the store if that is lost).

use eywa_storage::Batch;

use super::Writer;
use crate::extract::{SessionFacts, redact_in_place};
use crate::index::TextDoc;
use crate::memory::{
    Change, ConsolidateReport, MEMORY_TYPE, Memories, MemoryItem, MemoryUpdate, NewMemory,
    memory_id, source, verdict,
};
use crate::model::{
    DecayState, DocRef, Edge, Memory, MemoryType, Node, NodeId, NodeKind, Relation, Timestamp,
};
use crate::{Error, Result};

/// Characters of a memory's content its node is named by.
const NAME_CHARS: usize = 80;

impl Writer<'_> {
    fn memories(&self) -> Memories<'_> {
        Memories {
            store: self.graph.store(),
        }
    }

    /// Remembers `new` (checked and resolved by the caller). The same content in the same
    /// project is one memory: remembered again, it is returned as it is, or remembered
    /// anew (a new version) if it was forgotten.
    ///
    /// A memory with an origin (a `CLAUDE.md` file, a handoff's insight) is that origin's:
    /// its id comes from the origin, and a changed text is a new version of it. `commit`:
    /// the text index is committed at once (else by the ingest run that wrote it).
    pub(crate) fn remember(
        &self,
        mut new: NewMemory,
        now: Timestamp,
        commit: bool,
    ) -> Result<MemoryItem> {
        // Secrets out first: the id and the same-text check see what is kept.
        let mut counts = crate::extract::RedactionCounts::default();
        redact_in_place(&mut new.content, &mut counts);
        let id = match &new.origin {
            Some(origin) => memory_id(Some(origin), ""),
            None => memory_id(new.project.as_deref(), &new.content),
        };
        let old = self.memories().latest(&id, now)?;
        if let Some(old) = &old {
            let same = old.content == new.content.trim();
            match (&new.origin, old.forgotten_at) {
                (None, None) => return Ok(old.clone()),
                // Forgotten or faded: an origin saying the same again does not revive it.
                (Some(_), Some(_)) if same => return Ok(old.clone()),
                (Some(_), None) if same => return Ok(old.clone()),
                (Some(_), None) => {
                    let update = MemoryUpdate {
                        content: Some(new.content),
                        reason: Some(format!(
                            "{} changed",
                            new.origin.as_deref().unwrap_or_default()
                        )),
                        ..MemoryUpdate::default()
                    };
                    return self.update_memory_with(&id, &update, now, commit);
                }
                (_, Some(_)) => {}
            }
        }
        let m = MemoryItem {
            id,
            version: old.as_ref().map_or(1, |o| o.version + 1),
            content: new.content.trim().to_owned(),
            memory_type: new.memory_type,
            importance: new.importance,
            project: new.project,
            session: new.session,
            tags: new.tags,
            about: new.about,
            origin: new.origin,
            change: Change::Remembered,
            reason: None,
            created_at: old.as_ref().map_or(now, |o| o.created_at),
            updated_at: now,
            forgotten_at: None,
            decay: DecayState {
                last_access: now,
                weight: 1.0,
            },
            recalls: 0,
        };
        self.write_memory(&m, now, commit)?;
        self.memories()
            .latest(&m.id, now)?
            .ok_or_else(|| Error::Index(format!("memory {} was written and is not there", m.id)))
    }

    /// A new version of memory `id` with `update` applied; its text is indexed and
    /// embedded again. The caller commits the text index ([`Writer::commit_writes`]).
    pub(crate) fn update_memory(
        &self,
        id: &str,
        update: &MemoryUpdate,
        now: Timestamp,
    ) -> Result<MemoryItem> {
        self.update_memory_with(id, update, now, false)
    }

    fn update_memory_with(
        &self,
        id: &str,
        update: &MemoryUpdate,
        now: Timestamp,
        commit: bool,
    ) -> Result<MemoryItem> {
        let old = self.current(id, now)?;
        let mut m = old.clone();
        if let Some(content) = &update.content {
            m.content = content.trim().to_owned();
            redact_in_place(
                &mut m.content,
                &mut crate::extract::RedactionCounts::default(),
            );
        }
        if let Some(t) = update.memory_type {
            m.memory_type = t;
        }
        if let Some(i) = update.importance {
            m.importance = i;
        }
        if let Some(tags) = &update.tags {
            m.tags.clone_from(tags);
        }
        if (&m.content, m.memory_type, m.importance, &m.tags)
            == (&old.content, old.memory_type, old.importance, &old.tags)
        {
            return Ok(old);
        }
        m.version = old.version + 1;
        m.change = Change::Updated;
        m.reason.clone_from(&update.reason);
        m.updated_at = now;
        self.write_memory(&m, old.decay.last_access, commit)?;
        self.current(id, now)
    }

    /// Forgets memory `id`: a last version that recall no longer finds, its edges expired.
    /// Its history stays. The caller commits the text index ([`Writer::commit_writes`]).
    pub(crate) fn forget_memory(
        &self,
        id: &str,
        change: Change,
        reason: Option<String>,
        now: Timestamp,
    ) -> Result<MemoryItem> {
        self.forget_memory_with(id, change, reason, now, false)
    }

    fn forget_memory_with(
        &self,
        id: &str,
        change: Change,
        reason: Option<String>,
        now: Timestamp,
        commit: bool,
    ) -> Result<MemoryItem> {
        let old = self.current(id, now)?;
        let m = MemoryItem {
            version: old.version + 1,
            change,
            reason,
            updated_at: now,
            forgotten_at: Some(now),
            ..old.clone()
        };
        self.write_memory(&m, old.decay.last_access, commit)?;
        Ok(self.memories().latest(id, now)?.unwrap_or(m))
    }

    /// Promotes short-term memories recalled often or important, and lets go of those
    /// faded (see [`crate::memory::verdict`]).
    pub(crate) fn consolidate(&self, now: Timestamp) -> Result<ConsolidateReport> {
        let mut report = ConsolidateReport::default();
        for m in self.memories().all(now)? {
            if m.forgotten_at.is_some() {
                continue;
            }
            report.kept += 1;
            match verdict(&m, now) {
                Some(Change::Promoted) => {
                    let why = format!(
                        "recalled {} times, importance {:.2}",
                        m.recalls, m.importance
                    );
                    let last_access = m.decay.last_access;
                    let promoted = MemoryItem {
                        version: m.version + 1,
                        memory_type: MemoryType::Ltm,
                        change: Change::Promoted,
                        reason: Some(why),
                        updated_at: now,
                        ..m
                    };
                    self.write_memory(&promoted, last_access, false)?;
                    report.promoted += 1;
                }
                Some(_) => {
                    let why = format!("weight {:.3} after decay", m.decay.weight);
                    self.forget_memory_with(&m.id, Change::Faded, Some(why), now, false)?;
                    report.faded += 1;
                    report.kept -= 1;
                }
                None => {}
            }
        }
        if report.promoted + report.faded > 0 {
            self.commit_writes()?;
        }
        Ok(report)
    }

    /// Memory `id` as it is now; not found, or forgotten, is an error.
    fn current(&self, id: &str, now: Timestamp) -> Result<MemoryItem> {
        match self.memories().latest(id, now)? {
            None => Err(Error::NotFound(format!(
                "no memory {}",
                crate::error::quote(id.trim())
            ))),
            Some(m) if m.forgotten_at.is_some() => Err(Error::FailedPrecondition(format!(
                "memory {} is forgotten; remember it again to bring it back",
                m.id
            ))),
            Some(m) => Ok(m),
        }
    }

    /// Writes version `m` (its access as of `last_access`), its node and edges, and its
    /// chunks in one transaction; then its text, committed now or by the run (`commit`).
    fn write_memory(&self, m: &MemoryItem, last_access: Timestamp, commit: bool) -> Result<()> {
        // Whoever wrote it (a client, a `CLAUDE.md` file, a handoff, consolidation), no
        // secret is kept.
        let mut m = m.clone();
        let counts = redact_memory(&mut m);
        if !counts.is_empty() {
            tracing::info!(
                memory = m.id,
                redacted = counts.total(),
                "secrets redacted from a memory"
            );
        }
        let m = &m;
        let store = self.graph.store();
        let mut batch = Batch::new();
        self.memories().put(&mut batch, m, last_access)?;
        let docs = memory_docs(m);
        let source = source(&m.id);
        let mark = self.mark_pending(&mut batch, &source);
        let staged = self
            .semantic()?
            .stage(store, &source, &docs, true, &mut batch)?;
        self.graph.write_facts(batch, &memory_facts(m))?;
        self.semantic()?.applied(staged);
        self.stage_text(mark, docs);
        if commit {
            self.commit_writes()?;
        }
        Ok(())
    }

    /// What memory `id`'s latest version puts in the text index (none when it is gone).
    pub(super) fn memory_docs_of(&self, id: &str) -> Result<Vec<TextDoc>> {
        Ok(self
            .memories()
            .latest(id, Timestamp::now())?
            .map(|m| memory_docs(&m))
            .unwrap_or_default())
    }

    /// Puts every memory not forgotten in the text index and queues its chunks (a rebuild
    /// of the text index). Returns how many.
    pub(crate) fn index_memories(&self) -> Result<u64> {
        let store = self.graph.store();
        let mut n = 0;
        for m in self.memories().all(Timestamp::now())? {
            let docs = memory_docs(&m);
            if docs.is_empty() {
                continue;
            }
            self.text()?.put(&docs)?;
            self.semantic()?
                .enqueue(store, &source(&m.id), &docs, false)?;
            n += 1;
        }
        Ok(n)
    }
}

/// Redacts the secrets of what a memory says: its content, tags, project and the reason
/// of its version.
pub(super) fn redact_memory(m: &mut MemoryItem) -> crate::extract::RedactionCounts {
    let mut counts = crate::extract::RedactionCounts::default();
    redact_in_place(&mut m.content, &mut counts);
    for tag in &mut m.tags {
        redact_in_place(tag, &mut counts);
    }
    for text in m.project.iter_mut().chain(m.reason.iter_mut()) {
        redact_in_place(text, &mut counts);
    }
    counts
}

/// What a memory puts in the text index and semantic memory: its content, unless it is
/// forgotten.
fn memory_docs(m: &MemoryItem) -> Vec<TextDoc> {
    if m.forgotten_at.is_some() {
        return Vec::new();
    }
    vec![TextDoc {
        id: format!("{}#memory", source(&m.id)),
        source: source(&m.id),
        session: m.session.clone().unwrap_or_default(),
        project: m.project.as_deref().unwrap_or("").to_lowercase(),
        kind: MEMORY_TYPE.to_owned(),
        agent: None,
        timestamp: m.updated_at.0,
        text: m.content.clone(),
        message: None,
        lead: 0,
        page: None,
    }]
}

/// The memory's node, ABOUT what it names and DERIVED_FROM its session; a forgotten
/// memory keeps its node and its edges expire.
pub(super) fn memory_facts(m: &MemoryItem) -> SessionFacts {
    let id = NodeId::memory(&m.id);
    let mut properties = std::collections::BTreeMap::new();
    properties.insert("memory_id".to_owned(), m.id.clone());
    properties.insert("version".to_owned(), m.version.to_string());
    properties.insert("change".to_owned(), m.change.as_str().to_owned());
    if let Some(p) = &m.project {
        properties.insert("project".to_owned(), p.clone());
    }
    if let Some(s) = &m.session {
        properties.insert("session".to_owned(), s.clone());
    }
    if !m.tags.is_empty() {
        properties.insert("tags".to_owned(), m.tags.join(","));
    }
    if let Some(o) = &m.origin {
        properties.insert("origin".to_owned(), o.clone());
    }
    if let Some(at) = m.forgotten_at {
        properties.insert("forgotten_at".to_owned(), at.to_rfc3339());
    }
    let mut edges = Vec::new();
    if m.forgotten_at.is_none() {
        for about in &m.about {
            if let Some(dst) = NodeId::parse(about) {
                edges.push(Edge::new(id, Relation::About, dst, m.updated_at));
            }
        }
        if let Some(session) = &m.session {
            let mut edge = Edge::new(
                id,
                Relation::DerivedFrom,
                NodeId::episode(session),
                m.created_at,
            );
            // An insight is evidenced by the handoff that states it.
            if let Some(origin) = m.origin.as_deref().filter(|o| o.starts_with("handoff:")) {
                edge.evidence.push(DocRef {
                    doc_id: NodeId::handoff(session),
                    chunk_id: origin.rsplit('#').next().unwrap_or_default().to_owned(),
                    score: 1.0,
                });
            }
            edges.push(edge);
        }
    }
    SessionFacts {
        episode: Node {
            id,
            name: m.content.chars().take(NAME_CHARS).collect(),
            kind: NodeKind::Memory(Memory {
                memory_type: m.memory_type,
                importance: m.importance,
                decay_state: m.decay.clone(),
            }),
            content: Some(m.content.clone()),
            properties,
            created_at: m.created_at,
            updated_at: m.updated_at,
            doc_refs: Vec::new(),
        },
        handoff: None,
        entities: Vec::new(),
        edges,
    }
}

/// `CLAUDE.md` files larger than this are not read as a memory.
const MAX_CLAUDE_MD_BYTES: u64 = 256 * 1024;

/// Settings prefix of a `CLAUDE.md` file remembered: `claude_md_seen/ | path` → its size
/// and modification time then.
const CLAUDE_MD_SEEN: &[u8] = b"claude_md_seen/";

/// Importance of a memory taken from a `CLAUDE.md` file: the rules a user wrote down.
const CLAUDE_MD_IMPORTANCE: f32 = 0.9;

/// Importance of an insight a handoff states.
const INSIGHT_IMPORTANCE: f32 = 0.5;

impl Writer<'_> {
    /// The insights a session's handoff states, as short-term memories of that session
    /// (their weight from when it ended), written by [`Writer::write_derived`].
    pub(super) fn derive_insights(handoff: &crate::model::Handoff, run: &mut super::Run) {
        let ended = Timestamp(
            handoff.started_at.0 + i64::from(handoff.duration_minutes.unwrap_or(0)) * 60_000,
        );
        for (n, (topic, explanation)) in handoff.sections.insights.iter().enumerate() {
            let content = format!("**{topic}** -- {explanation}");
            run.derived.push((
                NewMemory {
                    importance: INSIGHT_IMPORTANCE,
                    project: handoff.projects.first().cloned(),
                    session: Some(handoff.session_id.clone()),
                    tags: vec!["insight".to_owned()],
                    origin: Some(format!("handoff:{}#insight.{n}", handoff.session_id)),
                    ..NewMemory::new(content)
                },
                ended,
            ));
        }
    }

    /// The user's `CLAUDE.md` (in the Claude dir) and those of the projects sessions
    /// worked in, where they can be read, as procedural memories: a changed file is a new
    /// version. Returns how many files were found.
    pub(super) fn derive_claude_md(&self, run: &mut super::Run) -> Result<u64> {
        let mut files = vec![(self.claude.root().join("CLAUDE.md"), None, None)];
        for project in self.graph.entities(crate::model::EntityType::Project)? {
            if let NodeKind::Entity(e) = &project.kind
                && let Some(path) = &e.path
            {
                let path = std::path::Path::new(path);
                for file in [
                    path.join("CLAUDE.md"),
                    path.join(".claude").join("CLAUDE.md"),
                ] {
                    files.push((file, Some(project.name.clone()), Some(project.id)));
                }
            }
        }
        let now = Timestamp::now();
        let mut found = 0;
        for (path, project, node) in files {
            // Not there, not a file, or too big: nothing to remember.
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if !meta.is_file() || meta.len() > MAX_CLAUDE_MD_BYTES {
                continue;
            }
            // Read only when its size or time changed since it was last remembered.
            let stamp = crate::archive::Stamp::of(&meta);
            let stamp = (stamp.len, stamp.modified_ms);
            let (key, seen) =
                super::user_documents::noted_stamp(self.graph.store(), CLAUDE_MD_SEEN, &path)?;
            if seen == Some(stamp) {
                found += 1;
                continue;
            }
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) => {
                    tracing::debug!(path = %path.display(), error = %e, "cannot read CLAUDE.md");
                    continue;
                }
            };
            found += 1;
            let text = crate::extract::redact(&text, &mut run.redacted).into_owned();
            if text.trim().is_empty() {
                continue;
            }
            run.seen.push((key, stamp));
            run.derived.push((
                NewMemory {
                    memory_type: MemoryType::Procedural,
                    importance: CLAUDE_MD_IMPORTANCE,
                    project,
                    tags: vec!["claude-md".to_owned()],
                    about: node.iter().map(ToString::to_string).collect(),
                    origin: Some(path.display().to_string()),
                    ..NewMemory::new(text)
                },
                now,
            ));
        }
        Ok(found)
    }

    /// Writes the memories a run derived (a new or changed one only), their text
    /// committed with the run's. One that has faded by now is not written.
    pub(super) fn write_derived(&self, run: &mut super::Run) -> Result<u64> {
        let now = Timestamp::now();
        let mut written = 0;
        for (new, at) in std::mem::take(&mut run.derived) {
            if crate::memory::weight(new.memory_type, new.importance, at, now)
                < crate::memory::FADED_WEIGHT
            {
                continue;
            }
            let before = self
                .memories()
                .latest(&memory_id(new.origin.as_deref(), ""), now)?
                .map(|m| m.version);
            let m = self.remember(new, at, false)?;
            if before != Some(m.version) {
                written += 1;
            }
        }
        // The files just remembered are not read again until they change.
        let mut batch = Batch::new();
        for (key, stamp) in std::mem::take(&mut run.seen) {
            batch.put(eywa_storage::Keyspace::Settings, key, &stamp)?;
        }
        self.graph.store().apply(batch)?;
        Ok(written)
    }
}
