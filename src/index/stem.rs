//! English stemming that remembers each word's stem. Prose repeats a few thousand words,
//! and the Snowball stemmer took a fifth of the text index's indexing time on
//! conversational transcripts (`perf`, `eywa ingest` of the LongMemEval tree): a lookup
//! costs less than the stemmer's suffix tables. The stems are Tantivy's `Stemmer`'s
//! (the same Snowball English algorithm), so an index written either way reads the same.

use std::borrow::Cow;

use rustc_hash::FxHashMap;
use tantivy::tokenizer::{Token, TokenFilter, TokenStream, Tokenizer};

/// Words remembered by one tokenizer before it forgets them all and starts again.
const REMEMBERED: usize = 64 * 1024;
/// Words longer than this (bytes) are stemmed each time: they are rarely repeated.
const LONGEST_REMEMBERED: usize = 32;

/// A [`TokenFilter`] that stems English words as Tantivy's `Stemmer` does.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct CachedStemmer;

impl TokenFilter for CachedStemmer {
    type Tokenizer<T: Tokenizer> = CachedStemmerFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> CachedStemmerFilter<T> {
        CachedStemmerFilter {
            inner: tokenizer,
            stems: FxHashMap::default(),
        }
    }
}

/// Each clone (Tantivy clones an analyzer per indexing thread and per query) starts with
/// nothing remembered.
pub(super) struct CachedStemmerFilter<T> {
    inner: T,
    /// Word to stem; an empty stem means the word is its own.
    stems: FxHashMap<Box<str>, Box<str>>,
}

impl<T: Clone> Clone for CachedStemmerFilter<T> {
    fn clone(&self) -> Self {
        CachedStemmerFilter {
            inner: self.inner.clone(),
            stems: FxHashMap::default(),
        }
    }
}

impl<T: Tokenizer> Tokenizer for CachedStemmerFilter<T> {
    type TokenStream<'a> = CachedStemmerStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        CachedStemmerStream {
            tail: self.inner.token_stream(text),
            stemmer: frostem::Stemmer::new(frostem::Algorithm::English),
            stems: &mut self.stems,
        }
    }
}

pub(super) struct CachedStemmerStream<'a, T> {
    tail: T,
    stemmer: frostem::Stemmer,
    stems: &'a mut FxHashMap<Box<str>, Box<str>>,
}

impl<T: TokenStream> TokenStream for CachedStemmerStream<'_, T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let token = self.tail.token_mut();
        if token.text.len() > LONGEST_REMEMBERED {
            if let Cow::Owned(stem) = self.stemmer.stem(&token.text) {
                token.text = stem;
            }
            return true;
        }
        if let Some(stem) = self.stems.get(token.text.as_str()) {
            if !stem.is_empty() {
                token.text.clear();
                token.text.push_str(stem);
            }
            return true;
        }
        if self.stems.len() >= REMEMBERED {
            self.stems.clear();
        }
        let stem: Box<str> = match self.stemmer.stem(&token.text) {
            Cow::Borrowed(_) => "".into(),
            Cow::Owned(stem) => stem.into(),
        };
        self.stems.insert(token.text.as_str().into(), stem.clone());
        if !stem.is_empty() {
            token.text.clear();
            token.text.push_str(&stem);
        }
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

#[cfg(test)]
mod tests {
    use tantivy::tokenizer::{Language, SimpleTokenizer, Stemmer, TextAnalyzer};

    use super::*;

    fn tokens(analyzer: &mut TextAnalyzer, text: &str) -> Vec<(String, usize)> {
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push((stream.token().text.clone(), stream.token().position));
        }
        out
    }

    /// Ours, and Tantivy's to check it against.
    fn analyzers() -> (TextAnalyzer, TextAnalyzer) {
        let ours = TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(CachedStemmer)
            .build();
        let theirs = TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(Stemmer::new(Language::English))
            .build();
        (ours, theirs)
    }

    #[test]
    fn stems_as_tantivy_does_whatever_it_remembers() {
        let (mut ours, mut theirs) = analyzers();
        let long = "internationalizations".repeat(2);
        let text = format!(
            "running runs ran runner easily fairly generously cats cat's skies dying \
             the the running {long} {long} caresses ponies ties"
        );
        // Twice through one analyzer: the second time every stem is remembered.
        for _ in 0..2 {
            assert_eq!(tokens(&mut ours, &text), tokens(&mut theirs, &text));
        }
        assert_eq!(tokens(&mut ours, "running")[0].0, "run");
        // A clone starts empty and stems the same.
        let mut clone = ours.clone();
        assert_eq!(tokens(&mut clone, &text), tokens(&mut theirs, &text));
    }

    #[test]
    fn forgets_everything_when_full_and_stems_the_same_after() {
        let (mut ours, mut theirs) = analyzers();
        let words: String = (0..REMEMBERED + 10).map(|n| format!("w{n}ings ")).collect();
        assert_eq!(tokens(&mut ours, &words), tokens(&mut theirs, &words));
        assert_eq!(
            tokens(&mut ours, "w1ings generously"),
            tokens(&mut theirs, "w1ings generously")
        );
    }
}
