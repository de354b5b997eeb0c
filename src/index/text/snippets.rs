//! Snippets of a text for a query: its best fragment, matched words in `**bold**`.

use tantivy::Term;
use tantivy::query::Bm25StatisticsProvider;
use tantivy::snippet::SnippetGenerator;

use super::{SNIPPET_CHARS, TextIndex};
use crate::Result;
use crate::index::tantivy_error;

impl TextIndex {
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
