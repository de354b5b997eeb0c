//! The trigram index behind `SearchSessions`: for each main session's transcript, the
//! distinct three-character sequences of its message text as eywa serves it (redacted),
//! case-folded. A search asks it which sessions hold every trigram its pattern's literal
//! parts require, and greps only those: the index narrows, the grep decides, so results
//! are the scan's. It lives in the index tier (`<store>/index/grams`) and is rebuilt from
//! the store.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use regex_syntax::hir::{Class, Hir, HirKind};
use rustc_hash::FxHashMap;
use tantivy::collector::DocSetCollector;
use tantivy::index::SegmentId;
use tantivy::postings::Postings;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STRING, Schema, TantivyDocument, TextFieldIndexing,
    TextOptions,
};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};
use tantivy::{DocSet, IndexReader, IndexWriter, TERMINATED, Term};

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

/// One source's entry: which transcript, its fingerprint when indexed, and the trigrams
/// of each of its messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GramDoc {
    /// The source file (its key in the store): one entry each.
    pub path: String,
    pub session: String,
    /// The session's episode id ([`NodeId::episode`](crate::model::NodeId::episode)), as
    /// a number: a word search counts lines by it.
    pub episode: u128,
    /// What the source record said when its text was read: a different one means stale.
    pub fingerprint: u64,
    /// Keys the source itself is found by, whatever a pattern needs (a source that could
    /// not be read).
    pub always: Vec<u64>,
    /// Each message's trigrams and words. The index keeps the trigrams of the source as a
    /// whole (a session can hold a match only if it holds every trigram a line of it
    /// needs), and each message's words with its uuid.
    pub messages: Vec<GramMessage>,
}

/// What the index keeps of one message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GramMessage {
    /// Its uuid key ([`uuid_key`](crate::model::uuid_key)), when it has one: a search
    /// asks who owns it before it counts its lines.
    pub uuid: Option<u128>,
    /// Its distinct folded trigrams ([`grams_of`]), with [`INEXACT`] when its words do
    /// not tell its lines exactly.
    pub grams: Vec<u64>,
    /// The served text, whose lines' words the index keeps: [`LineWords`] reads them
    /// in the indexing thread.
    pub text: String,
    /// Whether a line of it holds a word the index keeps.
    has_words: bool,
}

impl GramMessage {
    /// The entry of a message with `uuid` whose served text is `text`.
    pub fn of(uuid: Option<u128>, text: String) -> GramMessage {
        let mut grams = Vec::new();
        grams_of(&text, &mut grams);
        let mut has_words = false;
        let mut inexact = false;
        // Lines as the grep splits them. The tokenizer reads their words in the indexing
        // thread; here only whether there are any, and (in a line long enough to hold
        // one) whether one is too long to keep.
        for (n, line) in text.lines().enumerate() {
            if u32::try_from(n).is_err() {
                inexact = true;
                break;
            }
            if line.len() <= MAX_WORD_BYTES {
                has_words = has_words || line.chars().any(is_word);
                continue;
            }
            for word in words_of(line) {
                if word.len() > MAX_WORD_BYTES {
                    inexact = true;
                } else {
                    has_words = true;
                }
            }
        }
        if inexact {
            grams.push(INEXACT);
        }
        grams.sort_unstable();
        grams.dedup();
        GramMessage {
            uuid,
            grams,
            text,
            has_words,
        }
    }

    /// The distinct words of each line the index keeps, by line number from 0, in line
    /// order: what [`LineWords`] makes of the text.
    #[cfg(test)]
    fn words(&self) -> Vec<(String, u32)> {
        let mut stream = LineWordStream::new(&self.text);
        let mut out = Vec::new();
        while stream.advance() {
            let token = stream.token();
            out.push((token.text.clone(), token.position as u32));
        }
        out
    }
}

/// The name the index knows [`LineWords`] by.
const LINE_WORDS: &str = "line_words";

/// The tokenizer of a message's words: each line's distinct words ([`is_word`] runs, as
/// written, none over [`MAX_WORD_BYTES`]) in byte order, each at its line's number as
/// its position. A word search counts lines by those positions.
#[derive(Debug, Clone, Copy, Default)]
struct LineWords;

impl Tokenizer for LineWords {
    type TokenStream<'a> = LineWordStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> LineWordStream<'a> {
        LineWordStream::new(text)
    }
}

struct LineWordStream<'a> {
    lines: std::iter::Enumerate<std::str::Lines<'a>>,
    /// The words of the line being read, sorted and each once, and the next to give.
    line: Vec<&'a str>,
    next: usize,
    token: Token,
}

impl<'a> LineWordStream<'a> {
    fn new(text: &'a str) -> LineWordStream<'a> {
        LineWordStream {
            lines: text.lines().enumerate(),
            line: Vec::new(),
            next: 0,
            token: Token::default(),
        }
    }
}

impl TokenStream for LineWordStream<'_> {
    fn advance(&mut self) -> bool {
        while self.next == self.line.len() {
            // Lines past u32's count are not kept (the message is marked inexact).
            let Some((n, line)) = self.lines.next().filter(|(n, _)| u32::try_from(*n).is_ok())
            else {
                return false;
            };
            self.line.clear();
            self.line
                .extend(words_of(line).filter(|w| w.len() <= MAX_WORD_BYTES));
            self.line.sort_unstable();
            self.line.dedup();
            self.next = 0;
            self.token.position = n;
        }
        self.token.text.clear();
        self.token.text.push_str(self.line[self.next]);
        self.next += 1;
        true
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

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

/// A segment's words, each once and sorted, as written and folded: a word search finds
/// the words holding it with one substring search over all of them. About twice the
/// words' bytes, and 10 bytes a word; where their postings are is asked of the segment
/// for the words found.
#[derive(Debug, Default)]
struct Vocabulary {
    /// Every word, each followed by a 0 byte (no word holds one).
    raw: Vec<u8>,
    /// Where each word starts in `raw`, by term ordinal.
    raw_at: Vec<u32>,
    folded: Vec<u8>,
    folded_at: Vec<u32>,
}

impl Vocabulary {
    fn read(terms: &tantivy::termdict::TermDictionary) -> Result<Vocabulary> {
        let too_large = || Error::Index("a segment's words pass 4 GiB".into());
        let mut v = Vocabulary::default();
        let mut stream = terms.stream().map_err(|e| Error::Index(e.to_string()))?;
        let mut folded = String::new();
        while stream.advance() {
            let key = stream.key();
            v.raw_at
                .push(u32::try_from(v.raw.len()).map_err(|_| too_large())?);
            v.raw.extend_from_slice(key);
            v.raw.push(0);
            v.folded_at
                .push(u32::try_from(v.folded.len()).map_err(|_| too_large())?);
            folded.clear();
            folded.extend(String::from_utf8_lossy(key).chars().map(fold));
            v.folded.extend_from_slice(folded.as_bytes());
            v.folded.push(0);
        }
        Ok(v)
    }

    /// The words holding `needle` (folded first when `folded`), as written.
    fn holding(&self, needle: &str, folded: bool) -> Vec<&[u8]> {
        let (text, at) = if folded {
            (&self.folded, &self.folded_at)
        } else {
            (&self.raw, &self.raw_at)
        };
        let mut ords: Vec<usize> = Vec::new();
        for found in memchr::memmem::find_iter(text, needle.as_bytes()) {
            let ord = at.partition_point(|&start| start as usize <= found) - 1;
            if ords.last() != Some(&ord) {
                ords.push(ord);
            }
        }
        ords.into_iter()
            .map(|ord| {
                let start = self.raw_at[ord] as usize;
                let end = self
                    .raw_at
                    .get(ord + 1)
                    .map_or(self.raw.len(), |&next| next as usize)
                    - 1;
                &self.raw[start..end]
            })
            .collect()
    }
}

/// Sessions by episode id.
pub type Shared = FxHashMap<u128, String>;

/// What a document of the index is: a source's own, or one of its messages'.
const SOURCE_DOC: u64 = 0;
const MESSAGE_DOC: u64 = 1;

/// What a pattern needs of a line's text, in trigrams: every one of `All`, one of
/// `Either`, or nothing the index can tell (`Any`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    Any,
    Gram(u64),
    All(Vec<Need>),
    Either(Vec<Need>),
}

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

/// `c` as the index keeps it: the least character of its simple case-folding orbit
/// (lowercased when that is ASCII), so every character a case-insensitive pattern takes
/// for `c` keys the same trigram.
pub fn fold(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    thread_local! {
        static FOLDED: std::cell::RefCell<HashMap<char, char>> =
            std::cell::RefCell::new(HashMap::new());
    }
    FOLDED.with(|folded| {
        *folded.borrow_mut().entry(c).or_insert_with(|| {
            let mut class =
                regex_syntax::hir::ClassUnicode::new([regex_syntax::hir::ClassUnicodeRange::new(
                    c, c,
                )]);
            class.case_fold_simple();
            class
                .ranges()
                .first()
                .map_or(c, |r| r.start().to_ascii_lowercase())
        })
    })
}

/// Whether `c` is a word character: its fold is alphanumeric or `_`. Every character a
/// case-insensitive pattern takes for a word character is one, so a match of a pattern of
/// word characters lies inside one run of them.
fn is_word(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    let f = fold(c);
    f.is_alphanumeric() || f == '_'
}

/// Whether a literal pattern is a word the index counts: three or more word characters.
pub fn is_word_pattern(pattern: &str) -> bool {
    pattern.chars().count() >= 3 && pattern.chars().all(is_word)
}

/// The runs of word characters of `line`, as written.
fn words_of(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !is_word(c)).filter(|w| !w.is_empty())
}

/// Three folded characters as one key: 21 bits each.
fn gram(a: char, b: char, c: char) -> u64 {
    (u64::from(a) << 42) | (u64::from(b) << 21) | u64::from(c)
}

/// Adds the folded trigrams of `text` to `out` (unsorted, with repeats).
pub fn grams_of(text: &str, out: &mut Vec<u64>) {
    let mut window = ['\0'; 2];
    for (seen, c) in text.chars().enumerate() {
        let c = fold(c);
        if seen >= 2 {
            out.push(gram(window[0], window[1], c));
        }
        window = [window[1], c];
    }
}

/// The trigrams a match of `pattern` must contain, from its literal parts; `Any` when it
/// has no literal run of three characters the index can key (or does not parse: the
/// caller's regex reports that).
pub fn need_of(pattern: &str, regex: bool) -> Need {
    if !regex {
        return literal_need(&pattern.chars().map(fold).collect::<Vec<_>>());
    }
    match regex_syntax::ParserBuilder::new().build().parse(pattern) {
        Ok(hir) => simplify(need_hir(&hir)),
        Err(_) => Need::Any,
    }
}

fn literal_need(chars: &[char]) -> Need {
    if chars.len() < 3 {
        return Need::Any;
    }
    let mut grams: Vec<u64> = chars.windows(3).map(|w| gram(w[0], w[1], w[2])).collect();
    grams.sort_unstable();
    grams.dedup();
    Need::All(grams.into_iter().map(Need::Gram).collect())
}

/// The one folded character a class stands for, when all it holds fold to one.
fn single_char(class: &Class) -> Option<char> {
    let Class::Unicode(class) = class else {
        return None;
    };
    let mut one = None;
    for range in class.ranges() {
        // Orbits are small: a wider range is not one character's cases.
        if u32::from(range.end()) - u32::from(range.start()) > 4 {
            return None;
        }
        for c in range.start()..=range.end() {
            let f = fold(c);
            match one {
                None => one = Some(f),
                Some(o) if o == f => {}
                Some(_) => return None,
            }
        }
    }
    one
}

fn need_hir(hir: &Hir) -> Need {
    match hir.kind() {
        HirKind::Literal(lit) => match std::str::from_utf8(&lit.0) {
            Ok(s) => literal_need(&s.chars().map(fold).collect::<Vec<_>>()),
            Err(_) => Need::Any,
        },
        HirKind::Repetition(rep) if rep.min >= 1 => need_hir(&rep.sub),
        HirKind::Capture(cap) => need_hir(&cap.sub),
        HirKind::Concat(parts) => {
            let mut all = Vec::new();
            let mut run: Vec<char> = Vec::new();
            for part in parts {
                let chars = match part.kind() {
                    HirKind::Literal(lit) => std::str::from_utf8(&lit.0)
                        .ok()
                        .map(|s| s.chars().map(fold).collect::<Vec<_>>()),
                    HirKind::Class(class) => single_char(class).map(|c| vec![c]),
                    _ => None,
                };
                if let Some(chars) = chars {
                    run.extend(chars);
                } else {
                    all.push(literal_need(&run));
                    run.clear();
                    all.push(need_hir(part));
                }
            }
            all.push(literal_need(&run));
            Need::All(all)
        }
        HirKind::Alternation(parts) => Need::Either(parts.iter().map(need_hir).collect()),
        HirKind::Class(_) | HirKind::Empty | HirKind::Look(_) | HirKind::Repetition(_) => Need::Any,
    }
}

/// `need` with `Any` parts of an `All` dropped, an `Either` with an `Any` branch made
/// `Any`, and one-part groups unwrapped.
fn simplify(need: Need) -> Need {
    match need {
        Need::All(parts) => {
            let mut kept: Vec<Need> = parts
                .into_iter()
                .map(simplify)
                .filter(|p| *p != Need::Any)
                .flat_map(|p| match p {
                    Need::All(inner) => inner,
                    other => vec![other],
                })
                .collect();
            kept.sort_by_key(|p| match p {
                Need::Gram(g) => *g,
                _ => u64::MAX,
            });
            kept.dedup();
            match kept.len() {
                0 => Need::Any,
                1 => kept.pop().expect("one part"),
                _ => Need::All(kept),
            }
        }
        Need::Either(parts) => {
            let mut kept = Vec::with_capacity(parts.len());
            for part in parts {
                match simplify(part) {
                    Need::Any => return Need::Any,
                    p => kept.push(p),
                }
            }
            match kept.len() {
                0 => Need::Any,
                1 => kept.pop().expect("one part"),
                _ => Need::Either(kept),
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grams(text: &str) -> HashSet<u64> {
        let mut out = Vec::new();
        grams_of(text, &mut out);
        out.into_iter().collect()
    }

    /// Whether text holding `grams` can satisfy `need`.
    fn holds(need: &Need, grams: &HashSet<u64>) -> bool {
        match need {
            Need::Any => true,
            Need::Gram(g) => grams.contains(g),
            Need::All(parts) => parts.iter().all(|p| holds(p, grams)),
            Need::Either(parts) => parts.iter().any(|p| holds(p, grams)),
        }
    }

    #[test]
    fn a_word_needs_its_trigrams_in_any_case() {
        let need = need_of("Recipe", false);
        assert!(holds(&need, &grams("a RECIPE for bread")));
        assert!(holds(&need, &grams("recipes")));
        assert!(!holds(&need, &grams("recip e")));
        assert_eq!(need_of("ab", false), Need::Any);
    }

    #[test]
    fn unicode_case_variants_key_the_same_trigram() {
        // The Kelvin sign and long s fold with k and s, as the regex crate's (?i) does.
        assert!(holds(&need_of("kiss", false), &grams("\u{212A}i\u{17F}s")));
        assert!(holds(&need_of("ÉTÉ", false), &grams("un été chaud")));
    }

    #[test]
    fn regexes_need_their_literal_parts() {
        let need = need_of(r"fn\s+parse_(line|row)s?", true);
        assert!(holds(&need, &grams("fn  parse_rows(")));
        assert!(holds(&need, &grams("fn parse_line")));
        assert!(!holds(&need, &grams("fn parse_col")));
        // (?i) classes of one letter's cases still make literal runs.
        let need = need_of("(?i)error", true);
        assert!(holds(&need, &grams("ERROR")));
        assert!(!holds(&need, &grams("erro")));
        // Nothing to key on: every session may match.
        assert_eq!(need_of(r"\d+", true), Need::Any);
        assert_eq!(need_of("a|bcd", true), Need::Any);
        assert_eq!(need_of("(abc)?", true), Need::Any);
        assert_eq!(need_of("(", true), Need::Any);
    }

    #[test]
    fn the_index_narrows_to_the_sessions_that_hold_every_trigram() {
        let dir = tempfile::tempdir().unwrap();
        let index = GramIndex::open(dir.path()).unwrap();
        assert_eq!(index.synced().unwrap(), None);
        let doc = |path: &str, session: &str, text: &str| GramDoc {
            path: path.into(),
            session: session.into(),
            episode: u128::from(session.as_bytes()[0]),
            fingerprint: text.len() as u64,
            always: Vec::new(),
            messages: text
                .split('|')
                .map(|message| GramMessage::of(None, message.to_owned()))
                .collect(),
        };
        index
            .put(&[
                doc("/a.jsonl", "a", "the recipe for bread"),
                doc("/b.jsonl", "b", "a regex parser"),
                doc("/b2.jsonl", "b", "moved copy"),
            ])
            .unwrap();
        index.commit(Some(7)).unwrap();
        assert_eq!(index.synced().unwrap(), Some(7));
        let found = |p: &str, regex| index.sessions(&need_of(p, regex)).unwrap();
        assert_eq!(
            found("RECIPE", false),
            Some(HashSet::from(["a".to_owned()]))
        );
        assert_eq!(
            found("recipe|parser", true),
            Some(HashSet::from(["a".to_owned(), "b".to_owned()]))
        );
        assert_eq!(found("nowhere", false), Some(HashSet::new()));
        // Every trigram in the session, in any of its messages: the grep decides.
        index
            .put(&[doc("/c.jsonl", "c", "a loaf of bre|ad, then read")])
            .unwrap();
        index.commit(Some(7)).unwrap();
        assert_eq!(
            found("bread", false),
            Some(HashSet::from(["a".to_owned(), "c".to_owned()]))
        );
        assert_eq!(found(".*", true), None);
        let mut paths = index.paths_of("b").unwrap();
        paths.sort();
        assert_eq!(paths, ["/b.jsonl", "/b2.jsonl"]);

        // Replaced and removed entries are gone from what it answers.
        index.put(&[doc("/a.jsonl", "a", "no bread")]).unwrap();
        index.remove(&["/b.jsonl".into()]);
        index.commit(Some(8)).unwrap();
        assert_eq!(found("recipe", false), Some(HashSet::new()));
        assert_eq!(found("parser", false), Some(HashSet::new()));
        let entries = index.entries().unwrap();
        assert_eq!(
            entries,
            HashMap::from([
                ("/a.jsonl".to_owned(), 8),
                ("/b2.jsonl".to_owned(), 10),
                ("/c.jsonl".to_owned(), 27)
            ])
        );
        drop(index);
        // What was committed is there after a reopen; a commit not known to hold every
        // session says so.
        let index = GramIndex::open(dir.path()).unwrap();
        assert_eq!(index.synced().unwrap(), Some(8));
        index.commit(None).unwrap();
        assert_eq!(index.synced().unwrap(), None);
        assert_eq!(index.all_sessions().unwrap().len(), 3);
    }

    #[test]
    fn word_lines_count_each_line_holding_the_word_once() {
        let dir = tempfile::tempdir().unwrap();
        let index = GramIndex::open(dir.path()).unwrap();
        let doc = |path: &str, session: &str, messages: &[(u128, &str)]| GramDoc {
            path: path.into(),
            session: session.into(),
            episode: u128::from(session.as_bytes()[0]),
            fingerprint: 1,
            always: Vec::new(),
            messages: messages
                .iter()
                .map(|(uuid, text)| GramMessage::of(Some(*uuid), (*text).to_owned()))
                .collect(),
        };
        index
            .put(&[
                doc(
                    "/a.jsonl",
                    "a",
                    &[
                        (1, "Recipe recipes\nno match here\nthe RECIPE_BOOK"),
                        (2, "pre-recipe, \u{212A}elvin"),
                    ],
                ),
                doc("/b.jsonl", "b", &[(3, "a recipe\r\nrecipe again")]),
            ])
            .unwrap();
        index.commit(Some(1)).unwrap();
        // A second segment.
        index
            .put(&[doc("/c.jsonl", "c", &[(4, "one recipe")])])
            .unwrap();
        index.commit(Some(2)).unwrap();
        let lines = |word: &str, case_sensitive| {
            let mut found: Vec<(String, u64, Vec<u128>)> = index
                .word_lines(word, case_sensitive, true)
                .unwrap()
                .into_iter()
                .map(|mut w| {
                    w.uuids.sort_unstable();
                    let session = char::from(u8::try_from(w.episode).unwrap()).to_string();
                    (session, w.lines, w.uuids)
                })
                .collect();
            found.sort();
            found
        };
        assert_eq!(
            lines("recipe", false),
            [
                ("a".to_owned(), 3, vec![1, 2]),
                ("b".to_owned(), 2, vec![3]),
                ("c".to_owned(), 1, vec![4]),
            ]
        );
        assert_eq!(
            lines("Recipe", true),
            [("a".to_owned(), 1, vec![1])],
            "as written when case counts"
        );
        assert_eq!(lines("kelvin", false), [("a".to_owned(), 1, vec![2])]);
        assert_eq!(lines("kelvin", true), []);
        assert_eq!(lines("cipe_bo", false), [("a".to_owned(), 1, vec![1])]);
        assert!(lines("nowhere", false).is_empty());

        // Replaced and removed entries count no more.
        index.put(&[doc("/a.jsonl", "a", &[(1, "bread")])]).unwrap();
        index.remove(&["/c.jsonl".into()]);
        index.commit(Some(3)).unwrap();
        assert_eq!(lines("recipe", false), [("b".to_owned(), 2, vec![3])]);
        assert!(index.shared_sessions().unwrap().is_empty());
        index.put(&[doc("/b2.jsonl", "b", &[(5, "copy")])]).unwrap();
        index.commit(Some(4)).unwrap();
        assert_eq!(
            *index.shared_sessions().unwrap(),
            Shared::from_iter([(u128::from(b'b'), "b".to_owned())])
        );
    }

    #[test]
    fn a_word_too_long_to_keep_marks_its_message_inexact() {
        let long = "x".repeat(MAX_WORD_BYTES + 1);
        let m = GramMessage::of(None, format!("short words\n{long}"));
        assert!(m.grams.contains(&INEXACT));
        assert_eq!(
            m.words(),
            [("short".to_owned(), 0), ("words".to_owned(), 0)]
        );
        let m = GramMessage::of(None, "b a b\n\nc, a".to_owned());
        assert_eq!(
            m.words(),
            [
                ("a".to_owned(), 0),
                ("b".to_owned(), 0),
                ("a".to_owned(), 2),
                ("c".to_owned(), 2)
            ],
            "each line's words once, in order"
        );
        assert!(
            !GramMessage::of(None, "short words".to_owned())
                .grams
                .contains(&INEXACT)
        );
        assert!(is_word_pattern("été_1"));
        assert!(!is_word_pattern("ab"));
        assert!(!is_word_pattern("two words"));
    }

    #[test]
    fn the_vocabulary_finds_every_word_holding_a_needle_once() {
        let dir = tempfile::tempdir().unwrap();
        let index = GramIndex::open(dir.path()).unwrap();
        index
            .put(&[GramDoc {
                path: "/a.jsonl".into(),
                session: "a".into(),
                episode: 1,
                fingerprint: 1,
                always: Vec::new(),
                messages: vec![GramMessage::of(
                    None,
                    "Banana bandana BAND zebra\nÉtude étude".to_owned(),
                )],
            }])
            .unwrap();
        index.commit(Some(1)).unwrap();
        let searcher = index.reader.searcher();
        let segment = &searcher.segment_readers()[0];
        let inverted = segment.inverted_index(index.fields.words).unwrap();
        let vocabulary = Vocabulary::read(inverted.terms()).unwrap();
        let found = |needle: &str, folded| -> Vec<String> {
            let needle: String = if folded {
                needle.chars().map(fold).collect()
            } else {
                needle.to_owned()
            };
            vocabulary
                .holding(&needle, folded)
                .into_iter()
                .map(|w| String::from_utf8(w.to_vec()).unwrap())
                .collect()
        };
        assert_eq!(found("ban", true), ["BAND", "Banana", "bandana"]);
        assert_eq!(found("ana", true), ["Banana", "bandana"], "each word once");
        assert_eq!(found("Ban", false), ["Banana"]);
        assert_eq!(found("zebra", true), ["zebra"], "the last word");
        assert_eq!(found("étude", true), ["Étude", "étude"]);
        assert!(found("nowhere", true).is_empty());
    }
}
