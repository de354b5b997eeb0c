//! The full-text index (Tantivy, BM25) over the typed content of sessions: prompts,
//! assistant responses, compact summaries, tool calls, subagent reports, summary labels,
//! handoffs, plans and memory files. It lives in the index tier (`<store>/index/text`) and
//! can be rebuilt from the warm and cold tiers.

use std::collections::HashMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::{Mutex, RwLock};

use tantivy::collector::TopDocs;
use tantivy::query::{Bm25StatisticsProvider, BooleanQuery, Occur, Query, RangeQuery, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TantivyDocument,
    TextFieldIndexing, TextOptions, Value,
};
use tantivy::snippet::SnippetGenerator;
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexReader, IndexWriter, Searcher, Term, doc};

use super::stem::CachedStemmer;
use super::tantivy_error;

use crate::model::SearchFilter;
use crate::{Error, Result};

/// Name of the analyzer: words, lowercased, English stopwords dropped, stemmed.
const ANALYZER: &str = "eywa_en";
/// Memory the writer may use before it flushes a segment.
const WRITER_HEAP: usize = 64 * 1024 * 1024;
/// Characters of a snippet.
const SNIPPET_CHARS: usize = 240;

/// One document of the index.
#[derive(Debug, Clone, PartialEq)]
pub struct TextDoc {
    /// Unique: re-adding a document with the same id replaces it.
    pub id: String,
    /// The file it came from: every document of a file is dropped when the file is read
    /// whole again.
    pub source: String,
    /// The session a search hit leads to (a subagent's passages lead to its parent).
    pub session: String,
    /// Project name, lowercased.
    pub project: String,
    /// Content type: `user_message`, `assistant_response`, `compact_summary`, `tool_call`,
    /// `subagent_summary`, `summary_label`, `handoff`, `plan`, `memory`.
    pub kind: String,
    /// The subagent it came from (its type, or the inline run), if any.
    pub agent: Option<String>,
    /// Milliseconds since the epoch.
    pub timestamp: i64,
    pub text: String,
    /// The transcript message the passage is (its uuid), if it is one.
    pub message: Option<String>,
    /// Characters of `text` before the passage itself: the message before it, or a
    /// document's title, that it is indexed with. Chunk positions count from there.
    pub lead: usize,
    /// The page of a paged document it is, counted from 1.
    pub page: Option<u32>,
}

/// What to look for, and where.
#[derive(Debug, Clone, Default)]
pub struct TextQuery {
    pub query: String,
    /// What a passage must be to be found.
    pub filter: SearchFilter,
    /// Documents to collect before grouping.
    pub limit: usize,
}

/// A matching document, with its score and a snippet around the match.
#[derive(Debug, Clone, PartialEq)]
pub struct TextHit {
    pub score: f32,
    pub doc: TextDoc,
    pub snippet: String,
}

#[derive(Debug, Clone, Copy)]
struct Fields {
    id: Field,
    source: Field,
    session: Field,
    project: Field,
    kind: Field,
    agent: Field,
    timestamp: Field,
    text: Field,
}

impl Fields {
    fn schema() -> (Schema, Fields) {
        let mut b = Schema::builder();
        let text_options = TextOptions::default()
            .set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer(ANALYZER)
                    .set_index_option(IndexRecordOption::WithFreqsAndPositions),
            )
            .set_stored();
        let fields = Fields {
            id: b.add_text_field("id", STRING | STORED),
            source: b.add_text_field("source", STRING),
            session: b.add_text_field("session", STRING | STORED | FAST),
            project: b.add_text_field("project", STRING | STORED),
            kind: b.add_text_field("kind", STRING | STORED),
            agent: b.add_text_field("agent", STRING | STORED),
            timestamp: b.add_i64_field("timestamp", INDEXED | STORED | FAST),
            text: b.add_text_field("text", text_options),
        };
        (b.build(), fields)
    }
}

/// The full-text index: one writer, searched through a reader refreshed on commit; and
/// the writes a commit has not covered yet, searchable at once (see [`Recent`]).
pub struct TextIndex {
    index: Index,
    fields: Fields,
    writer: Mutex<IndexWriter>,
    reader: IndexReader,
    recent: Recent,
}

/// Sources written with [`TextIndex::write_now`] that no commit of the index has covered
/// yet: their documents wait for the next commit, and meanwhile a search scores them here,
/// in memory, as the index would (BM25 with the statistics of the index and these
/// documents together), and leaves out what the index holds of these sources (an older
/// version, or what was forgotten). A write then costs no segment and no sync. Once a
/// commit covers a source, it leaves the overlay.
///
/// A commit reloads the index before it takes its sources out of the overlay, and a
/// search reads the overlay and takes the index's searcher under one read lock: a search
/// finds each document once, in the overlay or in the index.
#[derive(Default)]
struct Recent {
    state: RwLock<Overlay>,
}

#[derive(Default)]
struct Overlay {
    /// Each source in the overlay: the number of its last write, and its documents.
    sources: HashMap<String, (u64, std::sync::Arc<Vec<Analyzed>>)>,
    /// Writes numbered so far.
    written: u64,
    /// The writes the next commit of the index takes in.
    uncommitted: Vec<(String, Vec<TextDoc>)>,
}

/// A document of the overlay, with its text's terms as the index's analyzer makes them.
struct Analyzed {
    doc: TextDoc,
    /// Each term, and how often the text holds it.
    terms: HashMap<String, u32>,
    /// Tokens of the text (its field norm).
    tokens: u32,
}

impl Recent {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Overlay> {
        self.state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Overlay> {
        self.state
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The statistics of the overlay's documents, field by field as the index keeps them.
struct OverlayStats {
    fields: Fields,
    docs: Vec<std::sync::Arc<Vec<Analyzed>>>,
}

impl OverlayStats {
    fn docs(&self) -> impl Iterator<Item = &Analyzed> {
        self.docs.iter().flat_map(|docs| docs.iter())
    }

    /// The value a document holds in a one-token field.
    fn value<'d>(&self, doc: &'d TextDoc, field: Field) -> Option<&'d str> {
        let f = self.fields;
        match field {
            x if x == f.id => Some(&doc.id),
            x if x == f.source => Some(&doc.source),
            x if x == f.session => Some(&doc.session),
            x if x == f.project => Some(&doc.project),
            x if x == f.kind => Some(&doc.kind),
            x if x == f.agent => doc.agent.as_deref(),
            _ => None,
        }
    }
}

impl Bm25StatisticsProvider for OverlayStats {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        Ok(if field == self.fields.text {
            self.docs().map(|d| u64::from(d.tokens)).sum()
        } else {
            self.docs()
                .filter(|d| self.value(&d.doc, field).is_some())
                .count() as u64
        })
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.docs().count() as u64)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let value = term.value();
        let Some(text) = value.as_str() else {
            return Ok(0);
        };
        let field = term.field();
        Ok(self
            .docs()
            .filter(|d| {
                if field == self.fields.text {
                    d.terms.contains_key(text)
                } else {
                    self.value(&d.doc, field) == Some(text)
                }
            })
            .count() as u64)
    }
}

/// The statistics of the index and its overlay together, so a document scores alike in
/// either.
struct Both<'a>(&'a Searcher, &'a OverlayStats);

impl Bm25StatisticsProvider for Both<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        Ok(self.0.total_num_tokens(field)? + self.1.total_num_tokens(field)?)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(Bm25StatisticsProvider::total_num_docs(self.0)? + self.1.total_num_docs()?)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        Ok(self.0.doc_freq(term)? + self.1.doc_freq(term)?)
    }
}

impl std::fmt::Debug for TextIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextIndex").finish_non_exhaustive()
    }
}

impl TextIndex {
    /// Opens the index in `dir`, creating it if missing. An index of another schema (an
    /// older eywa) is removed and created empty; `created` tells the caller to refill it.
    pub fn open(dir: &Path) -> Result<(TextIndex, bool)> {
        let (schema, fields) = Fields::schema();
        let (index, created) = super::open_or_create(dir, schema, "text index")?;
        Self::register_analyzer(&index);
        let (writer, reader) = super::writer_and_reader(&index, WRITER_HEAP)?;
        Ok((
            TextIndex {
                index,
                fields,
                writer: Mutex::new(writer),
                reader,
                recent: Recent::default(),
            },
            created,
        ))
    }

    fn register_analyzer(index: &Index) {
        let analyzer = TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(RemoveLongFilter::limit(40))
            .filter(LowerCaser)
            .filter(StopWordFilter::new(Language::English).expect("English stopwords exist"))
            .filter(CachedStemmer)
            .build();
        index.tokenizers().register(ANALYZER, analyzer);
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, IndexWriter> {
        self.writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds documents, each replacing any earlier one with its id.
    pub fn put(&self, docs: &[TextDoc]) -> Result<()> {
        self.put_with(&self.writer(), docs)
    }

    fn put_with(&self, writer: &IndexWriter, docs: &[TextDoc]) -> Result<()> {
        let f = self.fields;
        for d in docs {
            writer.delete_term(Term::from_field_text(f.id, &d.id));
            writer
                .add_document(self.document(d))
                .map_err(tantivy_error)?;
        }
        Ok(())
    }

    fn document(&self, d: &TextDoc) -> TantivyDocument {
        let f = self.fields;
        let mut document = doc!(
            f.id => d.id.as_str(),
            f.source => d.source.as_str(),
            f.session => d.session.as_str(),
            f.project => d.project.as_str(),
            f.kind => d.kind.as_str(),
            f.timestamp => d.timestamp,
            f.text => d.text.as_str(),
        );
        if let Some(agent) = &d.agent {
            document.add_text(f.agent, agent);
        }
        document
    }

    /// Drops every document of a source file.
    pub fn delete_source(&self, source: &str) {
        self.writer()
            .delete_term(Term::from_field_text(self.fields.source, source));
    }

    /// Drops the document with this id.
    pub fn delete_id(&self, id: &str) {
        self.writer()
            .delete_term(Term::from_field_text(self.fields.id, id));
    }

    /// Drops every document.
    pub fn clear(&self) -> Result<()> {
        self.writer()
            .delete_all_documents()
            .map_err(tantivy_error)?;
        Ok(())
    }

    /// Makes what was put and deleted durable and visible to searches, with the writes
    /// [`TextIndex::write_now`] made before it began, which leave the overlay.
    pub fn commit(&self) -> Result<()> {
        let (taken, covered) = {
            let mut overlay = self.recent.write();
            (std::mem::take(&mut overlay.uncommitted), overlay.written)
        };
        let committed = (|| {
            let mut writer = self.writer();
            for (source, docs) in &taken {
                writer.delete_term(Term::from_field_text(self.fields.source, source));
                self.put_with(&writer, docs)?;
            }
            writer.commit().map_err(tantivy_error)?;
            drop(writer);
            self.reader.reload().map_err(tantivy_error)
        })();
        let mut overlay = self.recent.write();
        if let Err(e) = committed {
            // The next commit takes them again (a put again is a replace).
            let newer = std::mem::replace(&mut overlay.uncommitted, taken);
            overlay.uncommitted.extend(newer);
            return Err(e);
        }
        overlay.sources.retain(|_, (last, _)| *last > covered);
        Ok(())
    }

    /// Replaces each source's documents with the ones given (none: the source is
    /// dropped), searchable when this returns, in the index at the next
    /// [`TextIndex::commit`] (see [`Recent`]). Waits for no commit.
    pub fn write_now(&self, writes: Vec<(String, Vec<TextDoc>)>) -> Result<()> {
        let mut analyzer = self.analyzer();
        let analyzed: Vec<Vec<Analyzed>> = writes
            .iter()
            .map(|(_, docs)| {
                docs.iter()
                    .map(|doc| {
                        let mut terms: HashMap<String, u32> = HashMap::new();
                        let mut tokens = 0u32;
                        let mut stream = analyzer.token_stream(&doc.text);
                        while let Some(token) = stream.next() {
                            *terms.entry(token.text.clone()).or_default() += 1;
                            tokens += 1;
                        }
                        Analyzed {
                            doc: doc.clone(),
                            terms,
                            tokens,
                        }
                    })
                    .collect()
            })
            .collect();
        let mut overlay = self.recent.write();
        for ((source, _), docs) in writes.iter().zip(analyzed) {
            overlay.written += 1;
            let number = overlay.written;
            overlay
                .sources
                .insert(source.clone(), (number, std::sync::Arc::new(docs)));
        }
        overlay.uncommitted.extend(writes);
        Ok(())
    }

    /// Sources written with [`TextIndex::write_now`] that no commit covers yet.
    pub fn uncommitted(&self) -> usize {
        self.recent.read().sources.len()
    }

    /// Documents in the committed index.
    pub fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The text field's analyzer.
    fn analyzer(&self) -> TextAnalyzer {
        self.index
            .tokenizers()
            .get(ANALYZER)
            .expect("the analyzer is registered at open")
    }

    /// The distinct terms of a query as the text field's analyzer makes them.
    fn query_terms(&self, query: &str) -> Vec<String> {
        let mut analyzer = self.analyzer();
        let mut stream = analyzer.token_stream(query);
        let mut terms: Vec<String> = Vec::new();
        while let Some(token) = stream.next() {
            if !terms.contains(&token.text) {
                terms.push(token.text.clone());
            }
        }
        terms
    }

    /// Every committed document's stored text, up to `limit` (for checks and exports).
    pub fn texts(&self, limit: usize) -> Result<Vec<String>> {
        let searcher = self.reader.searcher();
        let top = searcher
            .search(
                &tantivy::query::AllQuery,
                &TopDocs::with_limit(limit.max(1)).order_by_score(),
            )
            .map_err(tantivy_error)?;
        top.into_iter()
            .map(|(_, address)| {
                let doc: TantivyDocument = searcher.doc(address).map_err(tantivy_error)?;
                Ok(doc
                    .get_first(self.fields.text)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned())
            })
            .collect()
    }

    /// The query's words as a BM25 disjunction over the text field; free text, not query
    /// syntax: every word as the index analyzes it (stemmed, stopwords dropped).
    fn text_query(&self, query: &str) -> Result<BooleanQuery> {
        let terms = self.query_terms(query);
        if terms.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "{} has no words to search for (common words like `the` are not indexed)",
                crate::error::quote(query.trim())
            )));
        }
        Ok(BooleanQuery::new(
            terms
                .into_iter()
                .map(|t| {
                    let term = Term::from_field_text(self.fields.text, &t);
                    (
                        Occur::Should,
                        Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs))
                            as Box<dyn Query>,
                    )
                })
                .collect(),
        ))
    }

    /// The best-scoring documents (BM25) for `q`, best first, each with a snippet around
    /// the match.
    pub fn search(&self, q: &TextQuery) -> Result<Vec<TextHit>> {
        let mut hits = self.search_passages(q)?;
        let snippets = self.snippets(&q.query)?;
        for hit in &mut hits {
            hit.snippet = snippets.snippet(&hit.doc.text);
        }
        Ok(hits)
    }

    /// [`TextIndex::search`] without snippets (empty): for callers that keep only a few
    /// of the documents, and cut snippets for those with [`TextIndex::snippets`].
    pub fn search_passages(&self, q: &TextQuery) -> Result<Vec<TextHit>> {
        let f = self.fields;
        let text_query: Box<dyn Query> = Box::new(self.text_query(&q.query)?);
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, text_query)];
        let any_of = |field: Field, values: &[String]| -> Box<dyn Query> {
            let terms: Vec<(Occur, Box<dyn Query>)> = values
                .iter()
                .map(|v| {
                    let term = Term::from_field_text(field, v);
                    (
                        Occur::Should,
                        Box::new(TermQuery::new(term, IndexRecordOption::Basic)) as Box<dyn Query>,
                    )
                })
                .collect();
            Box::new(BooleanQuery::new(terms))
        };
        let filter = &q.filter;
        if !filter.kinds.is_empty() {
            clauses.push((Occur::Must, any_of(f.kind, &filter.kinds)));
        }
        if !filter.projects.is_empty() {
            clauses.push((Occur::Must, any_of(f.project, &filter.project_keys())));
        }
        if !filter.agent_types.is_empty() {
            clauses.push((Occur::Must, any_of(f.agent, &filter.agent_types)));
        }
        let (since, until) = (filter.since.map(|t| t.0), filter.until.map(|t| t.0));
        if since.is_some() || until.is_some() {
            let bound = |v: Option<i64>, inclusive: bool| match v {
                Some(v) if inclusive => Bound::Included(Term::from_field_i64(f.timestamp, v)),
                Some(v) => Bound::Excluded(Term::from_field_i64(f.timestamp, v)),
                None => Bound::Unbounded,
            };
            clauses.push((
                Occur::Must,
                Box::new(RangeQuery::new(bound(since, true), bound(until, false))),
            ));
        }
        let top = TopDocs::with_limit(q.limit.max(1)).order_by_score();
        let (searcher, shadowed, stats) = self.snapshot();
        if shadowed.is_empty() {
            let query = BooleanQuery::new(clauses);
            let found = searcher.search(&query, &top).map_err(tantivy_error)?;
            return self.hits(&searcher, found);
        }
        let both = Both(&searcher, &stats);
        let from_overlay = self.overlay_hits(q, &stats, &both)?;
        let shadowed = shadowed
            .iter()
            .map(|source| Term::from_field_text(f.source, source));
        clauses.push((
            Occur::MustNot,
            Box::new(tantivy::query::TermSetQuery::new(shadowed)),
        ));
        let query = BooleanQuery::new(clauses);
        let found = searcher
            .search_with_statistics_provider(&query, &top, &both)
            .map_err(tantivy_error)?;
        // Ties as the index will break them once these are committed: its own first.
        let mut hits = self.hits(&searcher, found)?;
        hits.extend(from_overlay);
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(q.limit.max(1));
        Ok(hits)
    }

    /// The index's searcher, the sources in the overlay and its documents' statistics,
    /// taken under the overlay's lock (see `Recent`).
    fn snapshot(&self) -> (Searcher, Vec<String>, OverlayStats) {
        let overlay = self.recent.read();
        // In the order of their writes: as a commit will add them, after what the index
        // holds, which breaks ties of score.
        let mut written: Vec<&(u64, std::sync::Arc<Vec<Analyzed>>)> =
            overlay.sources.values().collect();
        written.sort_by_key(|(number, _)| *number);
        let stats = OverlayStats {
            fields: self.fields,
            docs: written.into_iter().map(|(_, d)| d.clone()).collect(),
        };
        let shadowed: Vec<String> = overlay.sources.keys().cloned().collect();
        (self.reader.searcher(), shadowed, stats)
    }

    /// The overlay's documents that `q` finds, scored as [`TextIndex::search_passages`]'
    /// query scores them in the index: the sum of the BM25 scores of the text's terms and
    /// of each filter's term (a one-token field: a frequency of 1, a norm of 1), and 1 for
    /// a time range.
    fn overlay_hits(
        &self,
        q: &TextQuery,
        stats: &OverlayStats,
        both: &Both<'_>,
    ) -> Result<Vec<TextHit>> {
        let f = self.fields;
        let filter = &q.filter;
        let terms = self.query_terms(&q.query);
        let projects = filter.project_keys();
        let one = tantivy::fieldnorm::FieldNormReader::fieldnorm_to_id(1);
        // Each term's weight once: its statistics walk every document of the overlay.
        let mut weights: HashMap<Term, tantivy::query::Bm25Weight> = HashMap::new();
        let mut score_of = |field: Field, value: &str, norm: u8, freq: u32| -> Result<f32> {
            let term = Term::from_field_text(field, value);
            if !weights.contains_key(&term) {
                let weight =
                    tantivy::query::Bm25Weight::for_terms(both, std::slice::from_ref(&term))
                        .map_err(tantivy_error)?;
                weights.insert(term.clone(), weight);
            }
            let weight = &weights[&term];
            Ok(weight.score(norm, freq))
        };
        let mut hits = Vec::new();
        for analyzed in stats.docs() {
            let d = &analyzed.doc;
            let in_time = filter.since.is_none_or(|t| d.timestamp >= t.0)
                && filter.until.is_none_or(|t| d.timestamp < t.0);
            let kept = in_time
                && (filter.kinds.is_empty() || filter.kinds.contains(&d.kind))
                && (projects.is_empty() || projects.contains(&d.project))
                && (filter.agent_types.is_empty()
                    || d.agent
                        .as_ref()
                        .is_some_and(|a| filter.agent_types.contains(a)));
            if !kept {
                continue;
            }
            let norm = tantivy::fieldnorm::FieldNormReader::fieldnorm_to_id(analyzed.tokens);
            let mut score = 0.0f32;
            let mut found = false;
            for term in &terms {
                if let Some(&freq) = analyzed.terms.get(term) {
                    score += score_of(f.text, term, norm, freq)?;
                    found = true;
                }
            }
            if !found {
                continue;
            }
            if !filter.kinds.is_empty() {
                score += score_of(f.kind, &d.kind, one, 1)?;
            }
            if !projects.is_empty() {
                score += score_of(f.project, &d.project, one, 1)?;
            }
            if let Some(agent) = d
                .agent
                .as_deref()
                .filter(|_| !filter.agent_types.is_empty())
            {
                score += score_of(f.agent, agent, one, 1)?;
            }
            if filter.since.is_some() || filter.until.is_some() {
                score += 1.0;
            }
            hits.push(TextHit {
                score,
                snippet: String::new(),
                doc: TextDoc {
                    source: String::new(),
                    message: None,
                    lead: 0,
                    page: None,
                    ..d.clone()
                },
            });
        }
        Ok(hits)
    }

    /// The stored documents of what a search found.
    fn hits(
        &self,
        searcher: &Searcher,
        found: Vec<(f32, tantivy::DocAddress)>,
    ) -> Result<Vec<TextHit>> {
        let f = self.fields;
        let mut hits = Vec::with_capacity(found.len());
        for (score, address) in found {
            let stored: TantivyDocument = searcher.doc(address).map_err(tantivy_error)?;
            let text = |field: Field| {
                stored
                    .get_first(field)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            let agent = text(f.agent);
            hits.push(TextHit {
                score,
                snippet: String::new(),
                doc: TextDoc {
                    id: text(f.id),
                    source: String::new(),
                    session: text(f.session),
                    project: text(f.project),
                    kind: text(f.kind),
                    agent: (!agent.is_empty()).then_some(agent),
                    timestamp: stored
                        .get_first(f.timestamp)
                        .and_then(|v| v.as_i64())
                        .unwrap_or(0),
                    text: text(f.text),
                    message: None,
                    lead: 0,
                    page: None,
                },
            });
        }
        Ok(hits)
    }

    /// Cuts snippets for `query`: the best fragment of a text, its matched words in
    /// `**bold**`.
    pub fn snippets(&self, query: &str) -> Result<Snippets> {
        // Refused as a search refuses it.
        self.text_query(query)?;
        let (searcher, _, overlay) = self.snapshot();
        // As Tantivy's own generator weighs a query's terms, over the overlay too.
        let mut weights = std::collections::BTreeMap::new();
        for word in self.query_terms(query) {
            let term = Term::from_field_text(self.fields.text, &word);
            let found = searcher.doc_freq(&term).map_err(tantivy_error)?
                + overlay.doc_freq(&term).map_err(tantivy_error)?;
            if found > 0 {
                weights.insert(word, 1.0 / (1.0 + found as f32));
            }
        }
        Ok(Snippets(SnippetGenerator::new(
            weights,
            self.analyzer(),
            self.fields.text,
            SNIPPET_CHARS,
        )))
    }
}

/// Snippets of texts for one query ([`TextIndex::snippets`]).
pub struct Snippets(SnippetGenerator);

impl Snippets {
    /// The best fragment of `text`, matched words in `**bold**`; its start when nothing
    /// matches.
    pub fn snippet(&self, text: &str) -> String {
        let snippet = self.0.snippet(text);
        if snippet.fragment().is_empty() {
            text.chars().take(SNIPPET_CHARS).collect()
        } else {
            marked(snippet.fragment(), snippet.highlighted())
        }
    }
}

/// A fragment with its matched words wrapped in `**` (markdown bold).
fn marked(fragment: &str, ranges: &[std::ops::Range<usize>]) -> String {
    let mut out = String::with_capacity(fragment.len() + ranges.len() * 4);
    let mut at = 0;
    for r in ranges {
        if r.start < at || r.end > fragment.len() {
            continue;
        }
        out.push_str(&fragment[at..r.start]);
        out.push_str("**");
        out.push_str(&fragment[r.clone()]);
        out.push_str("**");
        at = r.end;
    }
    out.push_str(&fragment[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, session: &str, kind: &str, ts: i64, text: &str) -> TextDoc {
        TextDoc {
            id: id.into(),
            source: format!("/src/{session}"),
            session: session.into(),
            project: "shop".into(),
            kind: kind.into(),
            agent: None,
            timestamp: ts,
            text: text.into(),
            message: None,
            lead: 0,
            page: None,
        }
    }

    #[test]
    fn search_ranks_by_bm25_filters_and_replaces_by_id() {
        let dir = tempfile::tempdir().unwrap();
        let (index, created) = TextIndex::open(dir.path()).unwrap();
        assert!(created);
        index
            .put(&[
                doc(
                    "a1",
                    "a",
                    "user_message",
                    10,
                    "Fix the flaky checkout tests",
                ),
                doc(
                    "b1",
                    "b",
                    "assistant_response",
                    20,
                    "The checkout page renders",
                ),
                doc("c1", "c", "user_message", 30, "Deploy the blog"),
            ])
            .unwrap();
        index.commit().unwrap();
        let q = |query: &str| TextQuery {
            query: query.into(),
            limit: 10,
            ..TextQuery::default()
        };
        let hits = index.search(&q("flaky checkout")).unwrap();
        let sessions: Vec<&str> = hits.iter().map(|h| h.doc.session.as_str()).collect();
        assert_eq!(sessions, ["a", "b"]);
        assert!(hits[0].score > hits[1].score);
        assert_eq!(hits[0].snippet, "Fix the **flaky** **checkout** tests");
        // Stemming: "tests" matches "testing".
        assert_eq!(index.search(&q("testing")).unwrap().len(), 1);
        // Filters.
        let only_users = TextQuery {
            filter: SearchFilter {
                kinds: vec!["assistant_response".into()],
                ..SearchFilter::default()
            },
            ..q("checkout")
        };
        assert_eq!(index.search(&only_users).unwrap()[0].doc.session, "b");
        let recent = TextQuery {
            filter: SearchFilter {
                since: Some(crate::model::Timestamp(15)),
                ..SearchFilter::default()
            },
            ..q("checkout")
        };
        assert_eq!(index.search(&recent).unwrap().len(), 1);
        // Replace by id, delete by source.
        index
            .put(&[doc("a1", "a", "user_message", 10, "Fix the parser")])
            .unwrap();
        index.delete_source("/src/b");
        index.commit().unwrap();
        assert!(index.search(&q("checkout")).unwrap().is_empty());
        assert_eq!(index.len(), 2);
        // Query syntax is not interpreted; a query without words, or with only common
        // words, is refused.
        assert_eq!(index.search(&q("parser:\"(")).unwrap().len(), 1);
        for empty in ["  ?? ", "the of and"] {
            assert!(matches!(
                index.search(&q(empty)),
                Err(Error::InvalidArgument(_))
            ));
        }
        drop(index);
        let (again, created) = TextIndex::open(dir.path()).unwrap();
        assert!(!created);
        assert_eq!(again.len(), 2);
    }

    /// A query's hits as ids and scores, best first.
    fn ranked(index: &TextIndex, q: &TextQuery) -> Vec<(String, f32)> {
        index
            .search_passages(q)
            .unwrap()
            .into_iter()
            .map(|h| (h.doc.id, h.score))
            .collect()
    }

    fn assert_same_ranking(overlay: &[(String, f32)], committed: &[(String, f32)], what: &str) {
        let ids = |r: &[(String, f32)]| r.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
        assert_eq!(
            ids(overlay),
            ids(committed),
            "{what}: the same documents, in order"
        );
        for ((id, a), (_, b)) in overlay.iter().zip(committed) {
            assert!(
                (a - b).abs() <= 1e-4 * b.abs().max(1.0),
                "{what}: {id} scores {a} before the commit and {b} after"
            );
        }
    }

    #[test]
    fn writes_are_found_at_once_and_score_as_they_will_once_committed() {
        let dir = tempfile::tempdir().unwrap();
        let (index, _) = TextIndex::open(dir.path()).unwrap();
        let mut docs = Vec::new();
        for i in 0..40 {
            let kind = ["user_message", "assistant_response", "memory"][i % 3];
            let words = ["checkout", "parser", "deploy", "flaky", "cache", "tests"];
            let text: Vec<&str> = (0..=(i % 7)).map(|j| words[(i + j * j) % 6]).collect();
            let mut d = doc(
                &format!("d{i}"),
                &format!("s{}", i % 5),
                kind,
                i as i64,
                &text.join(" the "),
            );
            d.project = ["shop", "blog"][i % 2].into();
            d.agent = (i % 4 == 0).then(|| "explorer".to_owned());
            docs.push(d);
        }
        index.put(&docs[..30]).unwrap();
        index.commit().unwrap();
        // Memories written now: one new source, and one that replaces a source the index
        // holds (its old documents must not be found), and one that forgets one.
        let mut replaced: Vec<TextDoc> = docs[30..35].to_vec();
        for d in &mut replaced {
            d.source = "/src/s0".into();
        }
        let fresh: Vec<TextDoc> = docs[35..]
            .iter()
            .cloned()
            .map(|mut d| {
                d.source = "memory:new".into();
                d
            })
            .collect();
        let writes = vec![
            ("/src/s0".to_owned(), replaced.clone()),
            ("memory:new".to_owned(), fresh.clone()),
            ("/src/s1".to_owned(), Vec::new()),
        ];
        index.write_now(writes).unwrap();
        assert_eq!(index.uncommitted(), 3);
        let queries: Vec<TextQuery> = {
            let q = |query: &str, filter: SearchFilter| TextQuery {
                query: query.into(),
                filter,
                limit: 50,
            };
            vec![
                q("checkout parser", SearchFilter::default()),
                q("flaky tests cache", SearchFilter::default()),
                q(
                    "deploy checkout",
                    SearchFilter {
                        kinds: vec!["memory".into(), "user_message".into()],
                        ..SearchFilter::default()
                    },
                ),
                q(
                    "parser cache",
                    SearchFilter {
                        projects: vec!["blog".into()],
                        agent_types: vec!["explorer".into()],
                        ..SearchFilter::default()
                    },
                ),
                q(
                    "tests deploy",
                    SearchFilter {
                        since: Some(crate::model::Timestamp(12)),
                        until: Some(crate::model::Timestamp(38)),
                        ..SearchFilter::default()
                    },
                ),
            ]
        };
        let before: Vec<Vec<(String, f32)>> = queries.iter().map(|q| ranked(&index, q)).collect();
        let found: Vec<&str> = before.iter().flatten().map(|(id, _)| id.as_str()).collect();
        assert!(
            found.contains(&"d36"),
            "a new source is found before any commit"
        );
        assert!(
            found.contains(&"d31"),
            "a replaced source's new documents are found"
        );
        for gone in ["d0", "d5", "d1", "d6"] {
            // s0's and s1's documents as the index held them.
            assert!(!found.contains(&gone), "{gone} was replaced or forgotten");
        }
        index.commit().unwrap();
        assert_eq!(index.uncommitted(), 0);
        for (q, before) in queries.iter().zip(&before) {
            assert_same_ranking(before, &ranked(&index, q), &q.query);
        }
        // After a commit, the committed index alone answers, and nothing is lost on reopening.
        drop(index);
        let (again, _) = TextIndex::open(dir.path()).unwrap();
        for (q, before) in queries.iter().zip(&before) {
            assert_same_ranking(before, &ranked(&again, q), &q.query);
        }
        // Snippets weigh a term found only in the overlay as they will once committed.
        let snippet = |index: &TextIndex| {
            let snippets = index.snippets("zephyr checkout").unwrap();
            snippets.snippet("A zephyr of checkout words")
        };
        again
            .write_now(vec![(
                "memory:zephyr".to_owned(),
                vec![doc("z1", "z", "memory", 50, "The zephyr rule")],
            )])
            .unwrap();
        let snippet_before = snippet(&again);
        assert!(snippet_before.contains("**zephyr**"), "{snippet_before}");
        again.commit().unwrap();
        assert_eq!(snippet(&again), snippet_before);
    }
}
