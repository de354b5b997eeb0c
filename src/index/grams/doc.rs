//! What the index keeps of one source: its messages' trigrams and words.

use super::keys::grams_of;
use super::words::{is_word, words_of};
use super::{INEXACT, MAX_WORD_BYTES};

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
    pub(super) has_words: bool,
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
    pub(super) fn words(&self) -> Vec<(String, u32)> {
        use tantivy::tokenizer::TokenStream;
        let mut stream = super::words::LineWordStream::new(&self.text);
        let mut out = Vec::new();
        while stream.advance() {
            let token = stream.token();
            out.push((token.text.clone(), token.position as u32));
        }
        out
    }
}
