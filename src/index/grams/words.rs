//! A message's words as the index keeps them: runs of word characters, each line's once,
//! at its line's number ([`LineWords`]); a word search counts lines by them.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

use super::MAX_WORD_BYTES;
use super::keys::fold;

/// The name the index knows [`LineWords`] by.
pub(super) const LINE_WORDS: &str = "line_words";

/// The tokenizer of a message's words: each line's distinct words ([`is_word`] runs, as
/// written, none over [`MAX_WORD_BYTES`]) in byte order, each at its line's number as
/// its position. A word search counts lines by those positions.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct LineWords;

impl Tokenizer for LineWords {
    type TokenStream<'a> = LineWordStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> LineWordStream<'a> {
        LineWordStream::new(text)
    }
}

pub(super) struct LineWordStream<'a> {
    lines: std::iter::Enumerate<std::str::Lines<'a>>,
    /// The words of the line being read, sorted and each once, and the next to give.
    line: Vec<&'a str>,
    next: usize,
    token: Token,
}

impl<'a> LineWordStream<'a> {
    pub(super) fn new(text: &'a str) -> LineWordStream<'a> {
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

/// Whether `c` is a word character: its fold is alphanumeric or `_`. Every character a
/// case-insensitive pattern takes for a word character is one, so a match of a pattern of
/// word characters lies inside one run of them.
pub(super) fn is_word(c: char) -> bool {
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
pub(super) fn words_of(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !is_word(c)).filter(|w| !w.is_empty())
}
