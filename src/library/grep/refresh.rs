//! Keeping the trigram index up to the store: each main session's served text read
//! again (on every core) when its source changed, and entries of sources gone dropped.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::{UNREAD, episode_key, episode_of, is_main};
use crate::claude::{History, Message, NoHistory, Reading};
use crate::extract::{RedactionCounts, redact_in_place};
use crate::graph::SourceRecord;
use crate::index::{GramDoc, GramIndex, GramMessage, INEXACT};
use crate::library::Library;
use crate::model::{NodeId, uuid_key};
use crate::{Error, Result};

/// Changed when what the index keeps of a session changes: every entry is then stale.
const GRAMS_VERSION: u32 = 3;
/// Sessions a refresh reads (on every core) before it hands them to the index.
const REFRESH_BATCH: usize = 256;
/// Batches a refresh hands the index between commits.
const REFRESH_COMMIT_BATCHES: usize = 2;

impl Library<'_> {
    /// The messages of `source` read with `history`, text redacted.
    pub(super) fn served_texts(
        &self,
        source: &SourceRecord,
        history: &dyn History,
    ) -> Result<Vec<Message>> {
        let episode = self.graph.node(episode_of(source))?.ok_or_else(|| {
            Error::NotFound(format!("no episode for session `{}`", source.session_id))
        })?;
        let (mut messages, _) = self.read_messages(
            source,
            &episode,
            None,
            history,
            &source.session_id,
            Reading::Texts,
        )?;
        let mut ignored = RedactionCounts::default();
        for m in &mut messages {
            redact_in_place(&mut m.text, &mut ignored);
        }
        Ok(messages)
    }

    /// The index entry of `source`: the trigrams of each message text it serves, and of
    /// the lines another session is taken to have written (a later ingest can give them
    /// back to it); found by [`UNREAD`] whatever is asked when it cannot be read.
    fn gram_doc(&self, source: &SourceRecord, fingerprint: u64) -> GramDoc {
        let no_labels = HashMap::new();
        let history = Watched {
            inner: self.authors.history(&no_labels),
            replayed: Cell::new(false),
        };
        let mut messages: Vec<GramMessage> = Vec::new();
        let mut add = |read: Vec<Message>| {
            messages.extend(
                read.into_iter()
                    .map(|m| GramMessage::of(m.uuid.as_deref().map(uuid_key), m.text)),
            );
        };
        let read = self.served_texts(source, &history).and_then(|read| {
            add(read);
            if history.replayed.get() {
                add(self.served_texts(source, &NoHistory)?);
            }
            Ok(())
        });
        let mut always = Vec::new();
        if let Err(e) = read {
            if !matches!(e, Error::NotFound(_)) {
                tracing::warn!(session = %source.session_id, error = %e, "could not read a session to index its text");
            }
            always.push(UNREAD);
            messages.clear();
        }
        // Words count a session's lines only when they are what it serves: read with no
        // line taken for another session's, from an archive that stays, as its own
        // episode.
        let exact = !history.replayed.get()
            && source.archive.is_some()
            && source.episode == Some(NodeId::episode(&source.session_id));
        if !exact {
            for m in &mut messages {
                m.grams.push(INEXACT);
            }
        }
        GramDoc {
            path: source.path.clone(),
            session: source.session_id.clone(),
            episode: episode_key(&source.session_id),
            fingerprint,
            always,
            messages,
        }
    }

    /// Brings the trigram index up to the store: every main session's source written
    /// since is read again, and sources no longer in the store are dropped. Returns the
    /// sessions read. Cancelled between batches, it keeps what it read, not marked as
    /// caught up.
    pub(crate) fn refresh_grams(&self, grams: &GramIndex) -> Result<usize> {
        let generation = self.graph.sources_generation()?;
        if grams.synced()? == Some(generation) {
            return Ok(0);
        }
        let entries = grams.entries()?;
        let sources: Vec<SourceRecord> =
            self.graph.sources()?.into_iter().filter(is_main).collect();
        let paths: HashSet<&str> = sources.iter().map(|s| s.path.as_str()).collect();
        let removed: Vec<String> = entries
            .keys()
            .filter(|p| !paths.contains(p.as_str()))
            .cloned()
            .collect();
        let stale: Vec<&SourceRecord> = sources
            .iter()
            .filter(|s| entries.get(&s.path) != Some(&fingerprint(s)))
            .collect();
        self.index_sources(grams, &stale, &removed, generation)
    }

    /// [`Library::refresh_grams`] for an index that was caught up before the sources at
    /// `paths` (and only they) were written: only those are read again.
    pub(crate) fn refresh_grams_at(&self, grams: &GramIndex, paths: &[String]) -> Result<usize> {
        let generation = self.graph.sources_generation()?;
        if grams.synced()? == Some(generation) {
            return Ok(0);
        }
        let mut stale = Vec::new();
        let mut removed = Vec::new();
        for path in paths {
            match self.graph.source(path)? {
                Some(source) if is_main(&source) => stale.push(source),
                _ => removed.push(path.clone()),
            }
        }
        let stale: Vec<&SourceRecord> = stale.iter().collect();
        self.index_sources(grams, &stale, &removed, generation)
    }

    /// Reads `stale` into the index on every core, a batch at a time, drops `removed`, and
    /// commits as caught up with `generation`.
    fn index_sources(
        &self,
        grams: &GramIndex,
        stale: &[&SourceRecord],
        removed: &[String],
        generation: u64,
    ) -> Result<usize> {
        self.authors.load(self.graph)?;
        grams.remove(removed);
        for (n, batch) in stale.chunks(REFRESH_BATCH).enumerate() {
            if let Err(e) = crate::cancel::checkpoint() {
                grams.commit(None)?;
                return Err(e);
            }
            let docs: Vec<GramDoc> = batch
                .par_iter()
                .map(|s| self.gram_doc(s, fingerprint(s)))
                .collect();
            grams.put(&docs)?;
            // The writer queues what it is handed faster than it indexes it: a commit
            // now and then waits for it, and holds the memory of a long refresh down.
            if (n + 1) % REFRESH_COMMIT_BATCHES == 0 {
                grams.commit(None)?;
            }
        }
        grams.commit(Some(generation))?;
        Ok(stale.len())
    }
}

/// A history that notes whether it took any line for another session's.
struct Watched<H> {
    inner: H,
    replayed: Cell<bool>,
}

impl<H: History> History for Watched<H> {
    fn owner(&self, uuid: u128, reading: &str) -> Option<String> {
        let owner = self.inner.owner(uuid, reading);
        if owner.is_some() {
            self.replayed.set(true);
        }
        owner
    }

    fn label(&self, uuid: u128) -> Option<String> {
        self.inner.label(uuid)
    }
}

/// What a source's served text depends on, hashed: its record (stamp, archive, versions)
/// and path, and the index's version.
pub(super) fn fingerprint(source: &SourceRecord) -> u64 {
    let mut hash = Sha256::new();
    hash.update(GRAMS_VERSION.to_le_bytes());
    hash.update(source.path.as_bytes());
    hash.update([0]);
    hash.update(serde_json::to_vec(source).unwrap_or_default());
    let digest = hash.finalize();
    u64::from_le_bytes(digest[..8].try_into().expect("a sha256 has 8 bytes"))
}
