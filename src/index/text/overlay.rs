//! The writes a commit of the text index has not covered yet, searchable at once and
//! scored as the index will score them.

use std::collections::HashMap;
use std::sync::RwLock;

use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::Field;
use tantivy::{Searcher, Term};

use super::{Fields, TextDoc, TextHit, TextIndex, TextQuery};
use crate::Result;
use crate::index::tantivy_error;

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
pub(super) struct Recent {
    pub(super) state: RwLock<Overlay>,
}

#[derive(Default)]
pub(super) struct Overlay {
    /// Each source in the overlay: the number of its last write, and its documents.
    pub(super) sources: HashMap<String, (u64, std::sync::Arc<Vec<Analyzed>>)>,
    /// Writes numbered so far.
    pub(super) written: u64,
    /// The writes the next commit of the index takes in.
    pub(super) uncommitted: Vec<(String, Vec<TextDoc>)>,
}

/// A document of the overlay, with its text's terms as the index's analyzer makes them.
pub(super) struct Analyzed {
    pub(super) doc: TextDoc,
    /// Each term, and how often the text holds it.
    pub(super) terms: HashMap<String, u32>,
    /// Tokens of the text (its field norm).
    pub(super) tokens: u32,
}

impl Recent {
    pub(super) fn read(&self) -> std::sync::RwLockReadGuard<'_, Overlay> {
        self.state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn write(&self) -> std::sync::RwLockWriteGuard<'_, Overlay> {
        self.state
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The statistics of the overlay's documents, field by field as the index keeps them.
pub(super) struct OverlayStats {
    pub(super) fields: Fields,
    pub(super) docs: Vec<std::sync::Arc<Vec<Analyzed>>>,
}

impl OverlayStats {
    pub(super) fn docs(&self) -> impl Iterator<Item = &Analyzed> {
        self.docs.iter().flat_map(|docs| docs.iter())
    }

    /// The value a document holds in a one-token field.
    pub(super) fn value<'d>(&self, doc: &'d TextDoc, field: Field) -> Option<&'d str> {
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
pub(super) struct Both<'a>(pub(super) &'a Searcher, pub(super) &'a OverlayStats);

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

impl TextIndex {
    /// The index's searcher, the sources in the overlay and its documents' statistics,
    /// taken under the overlay's lock (see `Recent`).
    pub(super) fn snapshot(&self) -> (Searcher, Vec<String>, OverlayStats) {
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
    pub(super) fn overlay_hits(
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
                    page: None,
                    ..d.clone()
                },
            });
        }
        Ok(hits)
    }
}
