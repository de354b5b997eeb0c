//! A session as eywa serves it: its episode, handoff, agents and every message any
//! version of its transcript held.

use std::sync::Arc;

use super::Library;
use crate::archive::Archive;
use crate::claude::{
    Message, Mode, NoHistory, Reading, claude_id, read_messages_as, read_messages_with,
};
use crate::extract::{RedactionCounts, redact_in_place};
use crate::graph::SourceRecord;
use crate::model::{Handoff, Node, NodeId};
use crate::{Error, Result};

/// A session as eywa serves it: its episode, its handoff and its messages.
#[derive(Debug, Clone)]
pub struct Session {
    /// The session's Episode node.
    pub episode: Arc<Node>,
    /// Its handoff; `None` when it has none.
    pub handoff: Option<Handoff>,
    /// Every message any version of its transcript held (superseded ones marked), secrets
    /// redacted.
    pub messages: Vec<Message>,
    /// True when the transcript was read from the cold-tier archive: the file is gone,
    /// has changed since it was ingested, or replaced a version whose messages it lacks.
    pub from_archive: bool,
    /// Versions of the transcript file read: 1 unless it shrank or was rewritten.
    pub versions: u32,
    /// The subagent runs it started (their episodes: type, description, report, tokens).
    pub agents: Vec<Arc<Node>>,
}

impl Library<'_> {
    /// The source record of a session, by full id or unique prefix (at least 4 chars).
    pub(crate) fn session_source(&self, reference: &str) -> Result<SourceRecord> {
        let reference = reference.trim();
        if reference.len() < 4 {
            return Err(Error::InvalidArgument(format!(
                "session reference {reference} is too short: give at least 4 characters",
                reference = crate::error::quote(reference)
            )));
        }
        let mut matches: Vec<SourceRecord> = self
            .graph
            .sources_of_sessions(reference)?
            .into_iter()
            .filter(|s| {
                // A subagent is named `agent-<id>`, and listings show its `<id>`.
                let bare = s.agent
                    && s.session_id
                        .strip_prefix("agent-")
                        .is_some_and(|id| id.starts_with(reference));
                s.episode.is_some() && (s.session_id.starts_with(reference) || bare)
            })
            .collect();
        // One session can have had several files (moved to another workspace): the one
        // still on disk, else the latest, stands for it.
        matches.sort_by(|a, b| {
            a.session_id
                .cmp(&b.session_id)
                .then_with(|| served_first(a, b))
        });
        matches.dedup_by(|later, first| later.session_id == first.session_id);
        // A whole key names its session though it begins its copies' keys.
        if let Some(exact) = matches.iter().position(|s| {
            s.session_id == reference || s.session_id.strip_prefix("agent-") == Some(reference)
        }) {
            return Ok(matches.swap_remove(exact));
        }
        let copies = matches.len() > 1
            && matches
                .iter()
                .all(|s| claude_id(&s.session_id) == claude_id(&matches[0].session_id));
        if copies {
            let places: Vec<String> = matches
                .iter()
                .map(|s| {
                    let folder = std::path::Path::new(&s.path)
                        .parent()
                        .and_then(|p| p.file_name())
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    format!("{} (in {folder})", s.session_id)
                })
                .collect();
            return Err(Error::InvalidArgument(format!(
                "{reference} names {n} copies of one session in different workspaces: {places}; \
                 give a whole id, or its number from `eywa sessions list --workspace <path>`",
                reference = crate::error::quote(reference),
                n = matches.len(),
                places = places.join(", ")
            )));
        }
        match matches.len() {
            0 => Err(Error::NotFound(format!(
                "no session {reference}",
                reference = crate::error::quote(reference)
            ))),
            1 => Ok(matches.remove(0)),
            n => Err(Error::InvalidArgument(format!(
                "{reference} matches {n} sessions; give more characters",
                reference = crate::error::quote(reference)
            ))),
        }
    }

    /// A session's source record and its Episode node, by full id or unique prefix.
    pub(crate) fn session_node(&self, reference: &str) -> Result<(SourceRecord, Arc<Node>)> {
        let record = self.session_source(reference)?;
        let node = self
            .graph
            .node(NodeId::episode(&record.session_id))?
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "no session {reference}",
                    reference = crate::error::quote(reference)
                ))
            })?;
        Ok((record, node))
    }

    /// The parent session's source and the run id of an inline subagent run named
    /// `reference` (`inline-<uuid prefix>`, as `agent_ids` lists it); `None` when no
    /// session holds one.
    fn inline_run(&self, reference: &str) -> Result<Option<(SourceRecord, String)>> {
        if !reference.starts_with("inline-") {
            return Ok(None);
        }
        for source in self.graph.sources()? {
            if source.agent || source.episode.is_none() {
                continue;
            }
            let id = NodeId::agent(&source.session_id, reference);
            if self.graph.node(id)?.is_some() {
                return Ok(Some((source, reference.to_owned())));
            }
        }
        Ok(None)
    }

    /// A session by full id or by a unique prefix of at least 4 characters (e.g. the 8-char
    /// short id).
    pub(crate) fn session(&self, reference: &str) -> Result<Session> {
        self.session_with(reference, false)
    }

    /// [`session`](Self::session), with each response's extended thinking when `thinking`
    /// (else responses that held only thinking are left out).
    pub(crate) fn session_with(&self, reference: &str, thinking: bool) -> Result<Session> {
        let reference = reference.trim();
        // An inline subagent run (1.0.x) has no file of its own: its lines are in its
        // parent's, picked out by run.
        let (source, inline) = match self.session_source(reference) {
            Ok(source) => (source, None),
            Err(Error::NotFound(why)) => match self.inline_run(reference)? {
                Some((parent, run)) => (parent, Some(run)),
                None => return Err(Error::NotFound(why)),
            },
            Err(e) => return Err(e),
        };
        let episode_id = match &inline {
            Some(run) => NodeId::agent(&source.session_id, run),
            None => source
                .episode
                .unwrap_or_else(|| NodeId::episode(&source.session_id)),
        };
        let episode = self.graph.node(episode_id)?.ok_or_else(|| {
            Error::NotFound(format!(
                "no episode for session {reference}",
                reference = crate::error::quote(reference)
            ))
        })?;
        let handoff = match inline {
            Some(_) => None,
            None => self.graph.handoff(&source.session_id)?,
        };

        self.authors.load(self.graph)?;
        let no_labels = std::collections::HashMap::new();
        let history = self.authors.history(&no_labels);
        let (mut messages, from_archive) = self.read_messages(
            &source,
            &episode,
            inline.as_deref(),
            &history,
            reference,
            Reading::Whole,
        )?;
        persisted_results(&source.path, &source.session_id, &mut messages);
        // Served text is scrubbed like everything ingest keeps.
        let mut ignored = RedactionCounts::default();
        if !thinking {
            messages
                .retain(|m| m.thinking.is_none() || !m.text.is_empty() || !m.tool_calls.is_empty());
        }
        let messages = messages
            .into_iter()
            .map(|mut m| {
                if !thinking {
                    m.thinking = None;
                }
                let mut clean = |s: &mut String| redact_in_place(s, &mut ignored);
                clean(&mut m.text);
                if let Some(t) = &mut m.thinking {
                    clean(t);
                }
                for call in &mut m.tool_calls {
                    clean(&mut call.input);
                    if let Some(result) = &mut call.result {
                        clean(result);
                    }
                }
                m
            })
            .collect();
        let spawned = crate::graph::EdgeFilter {
            direction: crate::graph::Direction::Out,
            relations: vec![crate::model::Relation::Spawned],
            ..crate::graph::EdgeFilter::default()
        };
        let agents = self
            .graph
            .neighbors(episode.id, &spawned, 10_000)?
            .into_iter()
            .map(|n| Arc::new(n.node))
            .collect();
        Ok(Session {
            episode,
            handoff,
            messages,
            from_archive,
            versions: u32::try_from(source.versions.len() + 1).unwrap_or(u32::MAX),
            agents,
        })
    }

    /// The messages of `source` as read: its live file while it is the one ingested, else
    /// its archive (`sessions-index.json`'s first prompt when it has neither), with the
    /// messages earlier versions held marked superseded; `inline` picks one inline
    /// subagent run's lines. Not yet redacted. True when read from the archive.
    pub(super) fn read_messages(
        &self,
        source: &SourceRecord,
        episode: &Node,
        inline: Option<&str>,
        history: &dyn crate::claude::History,
        reference: &str,
        reading: Reading,
    ) -> Result<(Vec<Message>, bool)> {
        // Lines of earlier versions are in the archive only.
        let live = std::fs::metadata(&source.path)
            .ok()
            .filter(|m| crate::archive::Stamp::of(m).matches(source) && source.shift == 0);
        let session = source.session_id.as_str();
        // Every line of a subagent's own transcript is a sidechain line: its messages.
        let mode = if source.agent {
            Mode::Agent
        } else {
            Mode::Main
        };
        let read = |reader: Box<dyn std::io::Read>| match inline {
            Some(run) => {
                let lines = crate::claude::inline_run_lines(reader, run)?;
                read_messages_as(
                    std::io::Cursor::new(lines),
                    session,
                    Mode::Agent,
                    history,
                    reading,
                )
            }
            None => read_messages_as(reader, session, mode, history, reading),
        };
        let (messages, from_archive) = match (live, &source.archive) {
            (Some(_), _) => {
                let file = std::fs::File::open(&source.path).map_err(Error::io(&source.path))?;
                (
                    read(Box::new(file)).map_err(Error::io(&source.path))?,
                    false,
                )
            }
            (None, Some(_)) => {
                let reader = Archive::new(self.graph)
                    .archive_reader(source)?
                    .ok_or_else(|| {
                        Error::NotFound(format!(
                            "the archive of session {reference} is missing",
                            reference = crate::error::quote(reference)
                        ))
                    })?;
                (read(reader).map_err(Error::io(&source.path))?, true)
            }
            (None, None) if episode.properties.contains_key(crate::extract::INDEX_ONLY) => {
                // Known from `sessions-index.json` only: its first prompt is all there is.
                let prompt = episode.properties.get(crate::extract::FIRST_PROMPT);
                let start = episode.episode().map(|e| e.start);
                let messages = prompt
                    .map(|text| crate::claude::Message {
                        uuid: None,
                        role: crate::claude::Role::User,
                        kind: crate::claude::MessageKind::Prompt,
                        timestamp: start,
                        text: text.clone(),
                        tool_calls: Vec::new(),
                        superseded: false,
                        parent_uuid: None,
                        cwd: episode.episode().map(|e| e.cwd.clone()),
                        git_branch: episode.episode().and_then(|e| e.git_branch.clone()),
                        is_sidechain: false,
                        model: None,
                        usage: None,
                        stop_reason: None,
                        thinking: None,
                        tracked_files: Vec::new(),
                    })
                    .into_iter()
                    .collect();
                (messages, false)
            }
            // Imported from a Python Eywa folder: its handoff is all there ever was.
            (None, None) if crate::claude::is_imported(&source.session_id) => (Vec::new(), false),
            (None, None) => {
                return Err(Error::NotFound(format!(
                    "the transcript of session {reference} is gone and was not archived",
                    reference = crate::error::quote(reference)
                )));
            }
        };
        let mut messages = messages;
        if inline.is_none() {
            self.insert_superseded(source, &mut messages)?;
        }
        Ok((messages, from_archive))
    }

    /// Puts the messages earlier versions of the file said and the file now contradicts
    /// (its lines with the same uuid differ) before what it says now, marked superseded,
    /// oldest first.
    fn insert_superseded(&self, source: &SourceRecord, messages: &mut Vec<Message>) -> Result<()> {
        for version in &source.versions {
            let Some(hash) = &version.superseded else {
                continue;
            };
            let reader = self.graph.store().open_blob(hash)?.ok_or_else(|| {
                Error::NotFound(format!(
                    "the superseded lines of session `{}` are missing",
                    source.session_id
                ))
            })?;
            let mode = if source.agent {
                Mode::Agent
            } else {
                Mode::Main
            };
            let old = read_messages_with(reader, &source.session_id, mode, &NoHistory)
                .map_err(Error::io(&source.path))?;
            // Labels and snapshots have no uuid to be contradicted by: they stand as read.
            for mut m in old.into_iter().filter(|m| m.kind.is_conversation()) {
                m.superseded = true;
                // Before the first message that is not itself superseded and has its uuid.
                let at = m.uuid.as_ref().and_then(|uuid| {
                    messages
                        .iter()
                        .position(|n| !n.superseded && n.uuid.as_ref() == Some(uuid))
                });
                match at {
                    Some(at) => messages.insert(at, m),
                    None => messages.push(m),
                }
            }
        }
        Ok(())
    }
}

/// Of two sources of one session, the one it is served from first: the one still on
/// disk, else the latest.
pub(super) fn served_first(a: &SourceRecord, b: &SourceRecord) -> std::cmp::Ordering {
    let live = |s: &SourceRecord| std::path::Path::new(&s.path).is_file();
    live(b)
        .cmp(&live(a))
        .then_with(|| b.modified_ms.cmp(&a.modified_ms))
}

/// Results Claude Code moved to `<session>/tool-results/<call id>.txt` (the transcript
/// holds a preview) are served from that file, cut like every result. A missing file, or
/// a symlink, leaves the preview.
fn persisted_results(path: &str, session: &str, messages: &mut [crate::claude::Message]) {
    // 16,000 characters are at most 64,000 bytes.
    const MAX_BYTES: u64 = 64_000;
    for call in messages.iter_mut().flat_map(|m| m.tool_calls.iter_mut()) {
        // The preview says where the whole result went.
        let previewed = call
            .result
            .as_deref()
            .is_some_and(|r| r.contains("<persisted-output>") || r.contains("tool-results"));
        if !previewed {
            continue;
        }
        let file = crate::claude::read_tool_result(
            std::path::Path::new(path),
            session,
            &call.id,
            MAX_BYTES,
        );
        if let Some(text) = file {
            call.result = Some(crate::claude::cut_tool_text(&text));
        }
    }
}
