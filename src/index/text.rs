//! The full-text index (Tantivy, BM25) over the typed content of sessions: prompts,
//! assistant responses, compact summaries, tool calls, subagent reports, summary labels,
//! handoffs, plans and memory files. It lives in the index tier (`<store>/index/text`) and
//! can be rebuilt from the warm and cold tiers.

use std::collections::HashMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Mutex;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, RangeQuery, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TantivyDocument,
    TextFieldIndexing, TextOptions, Value,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexReader, IndexWriter, Searcher, Term, doc};

mod overlay;
mod snippets;

pub use self::snippets::Snippets;

use self::overlay::{Analyzed, Both, Recent};
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
    /// Characters of `text` before the passage itself (a search reads what the passage
    /// says, and who says it, from there).
    lead: Field,
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
            lead: b.add_u64_field("lead", STORED),
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
        if d.lead > 0 {
            document.add_u64(f.lead, d.lead as u64);
        }
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
                    lead: stored
                        .get_first(f.lead)
                        .and_then(|v| v.as_u64())
                        .map_or(0, |l| l as usize),
                    page: None,
                },
            });
        }
        Ok(hits)
    }
}

#[cfg(test)]
mod tests;
