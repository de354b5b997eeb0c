//! Sessions that `sessions-index.json` lists but whose transcript was gone before eywa
//! read it (seed 004): an Episode and a handoff from what the index says (summary, first
//! prompt, project, branch, times, depth), so they are listed, found and handed off.

use std::collections::HashSet;

use super::{Run, Writer};
use crate::Result;
use crate::claude::{IndexEntry, Passage, PassageKind, SessionFile, Transcript, claude_id};
use crate::extract::{FIRST_PROMPT, INDEX_ONLY, INDEX_SUMMARY, Origin, episode_facts, redact};
use crate::graph::SourceRecord;
use crate::index::docs::IndexInput;
use crate::model::{Handoff, NodeId, SessionFacts, Timestamp};

impl Writer<'_> {
    /// Writes the sessions the index lists that have no transcript among `files` and no
    /// episode yet, and rewrites those written so before whose entry changed. Returns how
    /// many.
    pub(super) fn ingest_index_only(&self, files: &[SessionFile], run: &mut Run) -> Result<u64> {
        let present: HashSet<&str> = files.iter().map(|f| claude_id(&f.session_id)).collect();
        let mut entries: Vec<(String, IndexEntry)> = run
            .index
            .iter()
            .filter(|(id, e)| !present.contains(id.as_str()) && !e.is_sidechain)
            .map(|(id, e)| (id.clone(), e.clone()))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut pending: Vec<(SessionFacts, SourceRecord)> = Vec::new();
        let mut updates: Vec<(SessionFacts, SourceRecord)> = Vec::new();
        for (id, entry) in &entries {
            let path = entry
                .full_path
                .clone()
                .unwrap_or_else(|| format!("sessions-index.json#{id}"));
            if std::path::Path::new(&path).exists() {
                continue;
            }
            // Written before from the index: again only when its entry changed.
            let known = self.graph.source(&path)?;
            let update = match &known {
                Some(k) if k.len == 0 && k.archive.is_none() => {
                    if k.index_stamp == entry.stamp() {
                        continue;
                    }
                    true
                }
                Some(_) => continue,
                None => {
                    if self.graph.node(NodeId::episode(id))?.is_some() {
                        continue;
                    }
                    false
                }
            };
            let Some(facts) = index_only_facts(id, &path, entry, self.identity, run) else {
                continue;
            };
            let record = SourceRecord {
                path,
                session_id: id.clone(),
                episode: Some(facts.episode.id),
                extracted: crate::extract::EXTRACT_VERSION,
                index_stamp: entry.stamp(),
                ..SourceRecord::default()
            };
            if update {
                updates.push((facts, record));
            } else {
                pending.push((facts, record));
            }
        }
        if pending.is_empty() && updates.is_empty() {
            return Ok(0);
        }
        self.sinks.handoffs_will_change()?;
        // Each with its search documents (seed 004: the summary and the first prompt
        // are what such a session is found by), in its own transaction.
        for (facts, record) in pending.iter().chain(&updates) {
            let mut batch = eywa_storage::Batch::new();
            let mut staged = self.semantic()?.begin();
            let (passages, labels) = index_only_texts(&facts.episode);
            self.index_sessions_into(
                &[IndexInput {
                    source: &record.path,
                    node: &facts.episode,
                    handoff: facts.handoff.as_ref(),
                    passages: &passages,
                    labels: &labels,
                    whole: true,
                }],
                &mut batch,
                &mut staged,
            )?;
            self.graph
                .write_session(batch, std::slice::from_ref(facts), record)?;
            self.semantic()?.applied(staged);
        }
        let count = (pending.len() + updates.len()) as u64;
        for (facts, _) in pending.into_iter().chain(updates) {
            if let Some(handoff) = facts.handoff {
                self.write_handoff_file(&handoff)?;
                run.handoffs.push(Handoff {
                    sections: Default::default(),
                    ..handoff
                });
            }
        }
        Ok(count)
    }
}

/// The facts of a session known from its index entry only: a transcript of one prompt
/// (and an answer, when the index counts more than one message) built from the entry, its
/// handoff saying where it came from. `None` without a first prompt or a summary.
fn index_only_facts(
    id: &str,
    path: &str,
    entry: &IndexEntry,
    identity: &crate::model::Identity,
    run: &mut Run,
) -> Option<SessionFacts> {
    let mut clean = |s: &str| redact(s, &mut run.redacted).into_owned();
    let prompt = entry.first_prompt.as_deref().map(&mut clean);
    let summary = entry.summary.as_deref().map(&mut clean);
    if prompt.is_none() && summary.is_none() {
        return None;
    }
    let at = |t: &Option<String>| t.as_deref().and_then(Timestamp::parse);
    let messages = entry.message_count.unwrap_or(1);
    let transcript = Transcript {
        session_id: id.to_owned(),
        first_ts: at(&entry.created).or(at(&entry.modified)),
        last_ts: at(&entry.modified).or(at(&entry.created)),
        cwds: entry.project_path.iter().cloned().collect(),
        git_branch: entry.git_branch.clone(),
        user_lines: 1,
        assistant_lines: u32::from(messages > 1),
        assistant_responses: u32::from(messages > 1),
        prompts: prompt.iter().cloned().collect(),
        prompt_uuids: vec![None; usize::from(prompt.is_some())],
        prompt_count: u32::from(prompt.is_some()),
        index_summary: summary,
        index_message_count: entry.message_count,
        ..Transcript::default()
    };
    let mut facts = episode_facts(
        Origin {
            session_id: id,
            episode_id: NodeId::episode(id),
            source_path: path,
            agent: None,
            identity,
        },
        &transcript,
    )?;
    facts
        .episode
        .properties
        .insert(INDEX_ONLY.to_owned(), "true".to_owned());
    if let Some(prompt) = prompt {
        facts
            .episode
            .properties
            .insert(FIRST_PROMPT.to_owned(), prompt);
    }
    if let Some(summary) = &transcript.index_summary {
        facts
            .episode
            .properties
            .insert(INDEX_SUMMARY.to_owned(), summary.clone());
    }
    if let Some(handoff) = &mut facts.handoff {
        // From the first message to the last, as the index times them (Python Eywa's
        // duration); no pause is known to take out.
        handoff.duration_minutes = match (transcript.first_ts, transcript.last_ts) {
            (Some(first), Some(last)) if last.0 >= first.0 => {
                u32::try_from((last.0 - first.0) / 60_000).ok()
            }
            _ => None,
        };
        handoff.sections.what_happened.push(format!(
            "Known only from sessions-index.json ({messages} messages): its transcript was gone before eywa read it"
        ));
    }
    Some(facts)
}

/// What a session known from its index entry only is found by: its first prompt as a
/// message, its summary as a label.
pub(crate) fn index_only_texts(episode: &crate::model::Node) -> (Vec<Passage>, Vec<String>) {
    let at = episode.episode().map(|e| e.start);
    let passages = episode
        .properties
        .get(FIRST_PROMPT)
        .map(|text| Passage {
            kind: PassageKind::UserMessage,
            uuid: None,
            seq: 0,
            part: 0,
            timestamp: at,
            text: text.clone(),
            context: None,
            agent: None,
        })
        .into_iter()
        .collect();
    let labels = episode
        .properties
        .get(INDEX_SUMMARY)
        .cloned()
        .into_iter()
        .collect();
    (passages, labels)
}
