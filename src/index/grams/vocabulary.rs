//! A segment's words, read once and searched by substring.

use super::keys::fold;
use crate::{Error, Result};

/// A segment's words, each once and sorted, as written and folded: a word search finds
/// the words holding it with one substring search over all of them. About twice the
/// words' bytes, and 10 bytes a word; where their postings are is asked of the segment
/// for the words found.
#[derive(Debug, Default)]
pub(super) struct Vocabulary {
    /// Every word, each followed by a 0 byte (no word holds one).
    raw: Vec<u8>,
    /// Where each word starts in `raw`, by term ordinal.
    raw_at: Vec<u32>,
    folded: Vec<u8>,
    folded_at: Vec<u32>,
}

impl Vocabulary {
    pub(super) fn read(terms: &tantivy::termdict::TermDictionary) -> Result<Vocabulary> {
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
    pub(super) fn holding(&self, needle: &str, folded: bool) -> Vec<&[u8]> {
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
