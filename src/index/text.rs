//! The full-text index (Tantivy, BM25) over the typed content of sessions: prompts,
//! assistant responses, compact summaries, tool calls, subagent reports, summary labels,
//! handoffs, plans and memory files. It lives in the index tier (`<store>/index/text`) and
//! can be rebuilt from the warm and cold tiers.

use std::ops::Bound;
use std::path::Path;
use std::sync::Mutex;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, RangeQuery, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TantivyDocument,
    TextFieldIndexing, TextOptions, Value,
};
use tantivy::snippet::SnippetGenerator;
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexReader, IndexWriter, Term, doc};

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

/// The full-text index: one writer, searched through a reader refreshed on commit.
pub struct TextIndex {
    index: Index,
    fields: Fields,
    writer: Mutex<IndexWriter>,
    reader: IndexReader,
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
            },
            created,
        ))
    }

    fn register_analyzer(index: &Index) {
        let analyzer = TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(RemoveLongFilter::limit(40))
            .filter(LowerCaser)
            .filter(StopWordFilter::new(Language::English).expect("English stopwords exist"))
            .filter(Stemmer::new(Language::English))
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
        let writer = self.writer();
        let f = self.fields;
        for d in docs {
            writer.delete_term(Term::from_field_text(f.id, &d.id));
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
            writer.add_document(document).map_err(tantivy_error)?;
        }
        Ok(())
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

    /// Makes what was put and deleted durable and visible to searches.
    pub fn commit(&self) -> Result<()> {
        self.writer().commit().map_err(tantivy_error)?;
        self.reader.reload().map_err(tantivy_error)?;
        Ok(())
    }

    /// Documents in the committed index.
    pub fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The distinct terms of a query as the text field's analyzer makes them.
    fn query_terms(&self, query: &str) -> Vec<String> {
        let mut analyzer = self
            .index
            .tokenizers()
            .get(ANALYZER)
            .expect("the analyzer is registered at open");
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
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        let top = searcher
            .search(
                &query,
                &TopDocs::with_limit(q.limit.max(1)).order_by_score(),
            )
            .map_err(tantivy_error)?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
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
        let query = self.text_query(query)?;
        let searcher = self.reader.searcher();
        let mut generator =
            SnippetGenerator::create(&searcher, &query, self.fields.text).map_err(tantivy_error)?;
        generator.set_max_num_chars(SNIPPET_CHARS);
        Ok(Snippets(generator))
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
}
