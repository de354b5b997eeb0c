//! The trigram index behind `SearchSessions`: for each main session's transcript, the
//! distinct three-character sequences of its message text as eywa serves it (redacted),
//! case-folded. A search asks it which sessions hold every trigram its pattern's literal
//! parts require, and greps only those: the index narrows, the grep decides, so results
//! are the scan's. It lives in the index tier (`<store>/index/grams`) and is rebuilt from
//! the store.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;
use tantivy::collector::DocSetCollector;
use tantivy::index::SegmentId;
use tantivy::postings::Postings;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STRING, Schema, TantivyDocument, TextFieldIndexing,
    TextOptions,
};
use tantivy::{DocSet, IndexReader, IndexWriter, TERMINATED, Term};

mod doc;
mod keys;
mod vocabulary;
mod words;

pub use self::doc::{GramDoc, GramMessage};
pub use self::keys::{Need, fold, grams_of, need_of};
pub use self::words::is_word_pattern;

use self::vocabulary::Vocabulary;
use self::words::{LINE_WORDS, LineWords};
use super::tantivy_error;

use crate::{Error, Result};

/// Memory the writer may use before it flushes a segment.
const WRITER_HEAP: usize = 32 * 1024 * 1024;
/// Words longer than this (bytes) are not kept: their message is marked [`INEXACT`].
const MAX_WORD_BYTES: usize = 1024;
/// The key of a message whose words do not tell its served lines exactly (a word too
/// long to keep, a read another session's lines were taken from): a word search reads
/// its session when its trigrams hold the word's. No trigram is this: they take 63 bits.
pub const INEXACT: u64 = u64::MAX - 1;

/// Lines of one session's messages that hold a word, as its index entry counts them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WordLines {
    /// The session's episode id.
    pub episode: u128,
    /// Lines holding the word, over all its sources' messages.
    pub lines: u64,
    /// The uuid keys of the messages those lines are in, when asked for.
    pub uuids: Vec<u128>,
}

/// Sessions by episode id.
pub type Shared = FxHashMap<u128, String>;

/// What a document of the index is: a source's own, or one of its messages'.
const SOURCE_DOC: u64 = 0;
const MESSAGE_DOC: u64 = 1;

#[derive(Debug, Clone, Copy)]
struct Fields {
    path: Field,
    session: Field,
    fingerprint: Field,
    kind: Field,
    gram: Field,
    words: Field,
    uuid_high: Field,
    uuid_low: Field,
    episode_high: Field,
    episode_low: Field,
}

impl Fields {
    fn schema() -> (Schema, Fields) {
        let mut b = Schema::builder();
        let fields = Fields {
            path: b.add_text_field("path", STRING | FAST),
            session: b.add_text_field("session", STRING | FAST),
            fingerprint: b.add_u64_field("fingerprint", FAST),
            kind: b.add_u64_field("kind", INDEXED | FAST),
            gram: b.add_u64_field("gram", INDEXED),
            // Each word of a line at the position of its line ([`LineWords`]).
            words: b.add_text_field(
                "words",
                TextOptions::default().set_indexing_options(
                    TextFieldIndexing::default()
                        .set_tokenizer(LINE_WORDS)
                        .set_index_option(IndexRecordOption::WithFreqsAndPositions),
                ),
            ),
            uuid_high: b.add_u64_field("uuid_high", FAST),
            uuid_low: b.add_u64_field("uuid_low", FAST),
            episode_high: b.add_u64_field("episode_high", FAST),
            episode_low: b.add_u64_field("episode_low", FAST),
        };
        (b.build(), fields)
    }
}

/// The trigram index: one writer, searched through a reader refreshed on commit. The
/// commit's payload is the store's sources generation it holds every session of.
pub struct GramIndex {
    fields: Fields,
    writer: Mutex<IndexWriter>,
    reader: IndexReader,
    /// Each segment's words, read on first use (segments never change).
    vocabularies: Mutex<HashMap<SegmentId, Arc<Vocabulary>>>,
    /// The sessions with more than one source, as of a searcher generation.
    shared: Mutex<Option<(u64, Arc<Shared>)>>,
    /// The last commit's payload, as [`GramIndex::synced`] answers it: this process is
    /// the index's one writer, so it needs no read of the index's metadata.
    synced: Mutex<Option<u64>>,
}

impl std::fmt::Debug for GramIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GramIndex").finish_non_exhaustive()
    }
}

impl GramIndex {
    /// Opens the index in `dir`, creating it if missing; one of another schema is removed
    /// and created empty (every session reads as stale, and is indexed again).
    pub fn open(dir: &Path) -> Result<GramIndex> {
        let (schema, fields) = Fields::schema();
        let (index, _) = super::open_or_create(dir, schema, "trigram index")?;
        index.tokenizers().register(LINE_WORDS, LineWords);
        let (writer, reader) = super::writer_and_reader(&index, WRITER_HEAP)?;
        let metas = index.load_metas().map_err(tantivy_error)?;
        let synced = metas.payload.and_then(|p| p.parse().ok());
        Ok(GramIndex {
            fields,
            writer: Mutex::new(writer),
            reader,
            vocabularies: Mutex::new(HashMap::new()),
            shared: Mutex::new(None),
            synced: Mutex::new(synced),
        })
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, IndexWriter> {
        self.writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The sources generation the last commit brought the index up to; `None` before one.
    pub fn synced(&self) -> Result<Option<u64>> {
        Ok(*self
            .synced
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Every entry's source path and fingerprint.
    pub fn entries(&self) -> Result<HashMap<String, u64>> {
        let searcher = self.reader.searcher();
        let mut out = HashMap::new();
        for (segment, docs) in source_docs(&searcher)? {
            let fast = segment.fast_fields();
            let Some(paths) = fast.str("path").map_err(tantivy_error)? else {
                continue;
            };
            let prints = fast.u64("fingerprint").map_err(tantivy_error)?;
            let mut path = String::new();
            for doc in docs {
                let Some(ord) = paths.term_ords(doc).next() else {
                    continue;
                };
                path.clear();
                paths
                    .ord_to_str(ord, &mut path)
                    .map_err(|e| Error::Index(e.to_string()))?;
                out.insert(path.clone(), prints.first(doc).unwrap_or(0));
            }
        }
        Ok(out)
    }

    /// Replaces the entries of `docs`' paths (committed by [`GramIndex::commit`]).
    pub fn put(&self, docs: &[GramDoc]) -> Result<()> {
        let f = self.fields;
        let writer = self.writer();
        for d in docs {
            writer.delete_term(Term::from_field_text(f.path, &d.path));
            let entry = |kind: u64, grams: &[u64]| {
                let mut doc = TantivyDocument::new();
                doc.add_text(f.path, &d.path);
                doc.add_text(f.session, &d.session);
                doc.add_u64(f.fingerprint, d.fingerprint);
                doc.add_u64(f.kind, kind);
                doc.add_u64(f.episode_high, (d.episode >> 64) as u64);
                doc.add_u64(f.episode_low, d.episode as u64);
                for &g in grams {
                    doc.add_u64(f.gram, g);
                }
                doc
            };
            // The source holds its messages' trigrams: a session's own are fewer than the
            // sum of its messages', and the grep decides where they meet.
            let mut grams = d.always.clone();
            for m in &d.messages {
                grams.extend_from_slice(&m.grams);
            }
            grams.sort_unstable();
            grams.dedup();
            writer
                .add_document(entry(SOURCE_DOC, &grams))
                .map_err(tantivy_error)?;
            for m in d.messages.iter().filter(|m| m.has_words) {
                let mut doc = entry(MESSAGE_DOC, &[]);
                let uuid = m.uuid.unwrap_or(0);
                doc.add_u64(f.uuid_high, (uuid >> 64) as u64);
                doc.add_u64(f.uuid_low, uuid as u64);
                doc.add_text(f.words, &m.text);
                writer.add_document(doc).map_err(tantivy_error)?;
            }
        }
        Ok(())
    }

    /// Drops the entries of these source paths (committed by [`GramIndex::commit`]).
    pub fn remove(&self, paths: &[String]) {
        let writer = self.writer();
        for path in paths {
            writer.delete_term(Term::from_field_text(self.fields.path, path));
        }
    }

    /// Makes what was put and removed durable and visible, as holding every session of
    /// sources generation `synced` (`None`: not known to hold them all).
    pub fn commit(&self, synced: Option<u64>) -> Result<()> {
        let mut writer = self.writer();
        let mut prepared = writer.prepare_commit().map_err(tantivy_error)?;
        if let Some(generation) = synced {
            prepared.set_payload(&generation.to_string());
        }
        let payload = || {
            self.synced
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        // Not known to hold anything while a commit is under way; what it holds once its
        // searcher is the one every search gets.
        *payload() = None;
        prepared.commit().map_err(tantivy_error)?;
        drop(writer);
        self.reader.reload().map_err(tantivy_error)?;
        *payload() = synced;
        Ok(())
    }

    /// The sessions (by id) some of whose sources hold what `need` asks; `None` when the
    /// index cannot narrow it (every session may match).
    pub fn sessions(&self, need: &Need) -> Result<Option<HashSet<String>>> {
        let Some(query) = self.query(need) else {
            return Ok(None);
        };
        self.sessions_for(query.as_ref()).map(Some)
    }

    /// For each session with a message line that holds `word` (every character of it
    /// [`is_word`]; case-folded unless `case_sensitive`), how many such lines its entries
    /// count, and (`with_uuids`) the messages they are in. Messages marked [`INEXACT`] may
    /// hold more (their sessions are found by the word's trigrams with [`INEXACT`]).
    pub fn word_lines(
        &self,
        word: &str,
        case_sensitive: bool,
        with_uuids: bool,
    ) -> Result<Vec<WordLines>> {
        let needle: String = if case_sensitive {
            word.to_owned()
        } else {
            word.chars().map(fold).collect()
        };
        let searcher = self.reader.searcher();
        let mut by_episode: FxHashMap<u128, WordLines> = FxHashMap::default();
        let mut positions = Vec::new();
        let mut hits: Vec<(u32, u32)> = Vec::new();
        for segment in searcher.segment_readers() {
            let inverted = segment
                .inverted_index(self.fields.words)
                .map_err(tantivy_error)?;
            let vocabulary = self.vocabulary(segment.segment_id(), inverted.terms())?;
            // (doc, line) of every word holding the needle, then each line once.
            hits.clear();
            for word in vocabulary.holding(&needle, !case_sensitive) {
                let Some(info) = inverted
                    .terms()
                    .get(word)
                    .map_err(|e| Error::Index(e.to_string()))?
                else {
                    continue;
                };
                let mut postings = inverted
                    .read_postings_from_terminfo(&info, IndexRecordOption::WithFreqsAndPositions)
                    .map_err(|e| Error::Index(e.to_string()))?;
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if !segment.is_deleted(doc) {
                        postings.positions(&mut positions);
                        hits.extend(positions.iter().map(|&line| (doc, line)));
                    }
                    doc = postings.advance();
                }
            }
            if hits.is_empty() {
                continue;
            }
            hits.sort_unstable();
            hits.dedup();
            let fast = segment.fast_fields();
            let column = |name: &str| fast.u64(name).map_err(tantivy_error);
            let (episode_high, episode_low) = (column("episode_high")?, column("episode_low")?);
            let (uuid_high, uuid_low) = (column("uuid_high")?, column("uuid_low")?);
            let mut at = 0;
            while at < hits.len() {
                let doc = hits[at].0;
                let lines = hits[at..].iter().take_while(|h| h.0 == doc).count();
                at += lines;
                let episode = wide(&episode_high, &episode_low, doc);
                let entry = by_episode.entry(episode).or_insert_with(|| WordLines {
                    episode,
                    ..WordLines::default()
                });
                entry.lines += lines as u64;
                if with_uuids {
                    entry.uuids.push(wide(&uuid_high, &uuid_low, doc));
                }
            }
        }
        Ok(by_episode.into_values().collect())
    }

    /// The words of a segment, read once.
    fn vocabulary(
        &self,
        segment: SegmentId,
        terms: &tantivy::termdict::TermDictionary,
    ) -> Result<Arc<Vocabulary>> {
        let mut cache = self
            .vocabularies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(v) = cache.get(&segment) {
            return Ok(v.clone());
        }
        let v = Arc::new(Vocabulary::read(terms)?);
        // Segments merged away are not asked for again.
        if cache.len() > 256 {
            cache.clear();
        }
        cache.insert(segment, v.clone());
        Ok(v)
    }

    /// The sessions indexed from more than one source (a copy in another workspace, a
    /// file moved), by episode id: which one is served is for the store to say.
    pub fn shared_sessions(&self) -> Result<Arc<Shared>> {
        let searcher = self.reader.searcher();
        let generation = searcher.generation().generation_id();
        let mut cache = self
            .shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((g, shared)) = cache.as_ref()
            && *g == generation
        {
            return Ok(shared.clone());
        }
        let mut sources: FxHashMap<u128, (u32, String)> = FxHashMap::default();
        for (segment, docs) in source_docs(&searcher)? {
            let fast = segment.fast_fields();
            let Some(sessions) = fast.str("session").map_err(tantivy_error)? else {
                continue;
            };
            let high = fast.u64("episode_high").map_err(tantivy_error)?;
            let low = fast.u64("episode_low").map_err(tantivy_error)?;
            for doc in docs {
                let episode = wide(&high, &low, doc);
                let entry = sources.entry(episode).or_default();
                entry.0 += 1;
                if entry.0 == 2 {
                    let Some(ord) = sessions.term_ords(doc).next() else {
                        continue;
                    };
                    sessions
                        .ord_to_str(ord, &mut entry.1)
                        .map_err(|e| Error::Index(e.to_string()))?;
                }
            }
        }
        let shared: Arc<Shared> = Arc::new(
            sources
                .into_iter()
                .filter(|(_, (n, _))| *n > 1)
                .map(|(episode, (_, session))| (episode, session))
                .collect(),
        );
        *cache = Some((generation, shared.clone()));
        Ok(shared)
    }

    /// The source paths indexed for `session`.
    pub fn paths_of(&self, session: &str) -> Result<Vec<String>> {
        let term = |t| Box::new(TermQuery::new(t, IndexRecordOption::Basic)) as Box<dyn Query>;
        let query = BooleanQuery::new(vec![
            (
                Occur::Must,
                term(Term::from_field_text(self.fields.session, session)),
            ),
            (
                Occur::Must,
                term(Term::from_field_u64(self.fields.kind, SOURCE_DOC)),
            ),
        ]);
        self.column_of(&query, "path")
    }

    /// Every indexed session.
    pub fn all_sessions(&self) -> Result<HashSet<String>> {
        let query = TermQuery::new(
            Term::from_field_u64(self.fields.kind, SOURCE_DOC),
            IndexRecordOption::Basic,
        );
        self.sessions_for(&query)
    }

    fn sessions_for(&self, query: &dyn Query) -> Result<HashSet<String>> {
        Ok(self.column_of(query, "session")?.into_iter().collect())
    }

    /// The values of the string column `name` of every document `query` matches.
    fn column_of(&self, query: &dyn Query, name: &str) -> Result<Vec<String>> {
        let searcher = self.reader.searcher();
        let found = searcher
            .search(query, &DocSetCollector)
            .map_err(tantivy_error)?;
        let mut by_segment: HashMap<u32, Vec<u32>> = HashMap::new();
        for address in found {
            by_segment
                .entry(address.segment_ord)
                .or_default()
                .push(address.doc_id);
        }
        let mut out = Vec::new();
        let mut value = String::new();
        for (segment, docs) in by_segment {
            let reader = searcher.segment_reader(segment);
            let Some(column) = reader.fast_fields().str(name).map_err(tantivy_error)? else {
                continue;
            };
            for doc in docs {
                for ord in column.term_ords(doc) {
                    value.clear();
                    column
                        .ord_to_str(ord, &mut value)
                        .map_err(|e| Error::Index(e.to_string()))?;
                    out.push(value.clone());
                }
            }
        }
        Ok(out)
    }

    fn query(&self, need: &Need) -> Option<Box<dyn Query>> {
        match need {
            Need::Any => None,
            Need::Gram(g) => Some(Box::new(TermQuery::new(
                Term::from_field_u64(self.fields.gram, *g),
                IndexRecordOption::Basic,
            ))),
            Need::All(parts) => {
                let clauses: Vec<(Occur, Box<dyn Query>)> = parts
                    .iter()
                    .filter_map(|p| self.query(p))
                    .map(|q| (Occur::Must, q))
                    .collect();
                (!clauses.is_empty()).then(|| Box::new(BooleanQuery::new(clauses)) as _)
            }
            Need::Either(parts) => {
                let clauses: Option<Vec<(Occur, Box<dyn Query>)>> = parts
                    .iter()
                    .map(|p| self.query(p).map(|q| (Occur::Should, q)))
                    .collect();
                clauses.map(|c| Box::new(BooleanQuery::new(c)) as _)
            }
        }
    }
}

/// Each segment of `searcher` with its live source documents.
fn source_docs(searcher: &tantivy::Searcher) -> Result<Vec<(&tantivy::SegmentReader, Vec<u32>)>> {
    let mut out = Vec::new();
    for segment in searcher.segment_readers() {
        let kinds = segment.fast_fields().u64("kind").map_err(tantivy_error)?;
        let docs = (0..segment.max_doc())
            .filter(|&doc| !segment.is_deleted(doc) && kinds.first(doc) == Some(SOURCE_DOC))
            .collect();
        out.push((segment, docs));
    }
    Ok(out)
}

/// A 128-bit value kept as two u64 columns, at `doc` (0 when missing).
fn wide(
    high: &tantivy::columnar::Column<u64>,
    low: &tantivy::columnar::Column<u64>,
    doc: u32,
) -> u128 {
    (u128::from(high.first(doc).unwrap_or(0)) << 64) | u128::from(low.first(doc).unwrap_or(0))
}

#[cfg(test)]
mod tests;
