//! Key lookup in a segment: a doc's keys, a key's text and postings, and the keys that
//! contain a token or are exactly a name.

use std::ops::Range;

use super::{KeyKind, S, Segment, u32_at};

impl Segment {
    fn range(&self, starts: S, i: usize) -> Range<usize> {
        self.u32_of(starts, i) as usize..self.u32_of(starts, i + 1) as usize
    }

    /// The doc's project keys (ids), in its handoff's order.
    pub fn doc_projects(&self, doc: usize) -> impl Iterator<Item = u32> + '_ {
        let ids = self.section(S::ProjectIds);
        self.range(S::DocProjects, doc).map(move |i| u32_at(ids, i))
    }

    pub fn doc_keywords(&self, doc: usize) -> impl Iterator<Item = u32> + '_ {
        let ids = self.section(S::KeywordIds);
        self.range(S::DocKeywords, doc).map(move |i| u32_at(ids, i))
    }

    /// The key's text as matched: a project lowercased, a keyword as stored.
    pub fn key_text(&self, kind: KeyKind, key: u32) -> &str {
        let (joined, starts) = match kind {
            KeyKind::Project => (S::ProjectJoined, S::ProjectStarts),
            KeyKind::Keyword => (S::KeywordJoined, S::KeywordStarts),
        };
        let r = self.range(starts, key as usize);
        std::str::from_utf8(&self.section(joined)[r.start..r.end - 1]).expect("checked on open")
    }

    /// The key as the handoffs spell it.
    pub fn key_name(&self, kind: KeyKind, key: u32) -> &str {
        match kind {
            KeyKind::Project => self.pool_str(self.u32_of(S::ProjectOriginal, key as usize)),
            KeyKind::Keyword => self.key_text(kind, key),
        }
    }

    /// The docs listing a key, ascending.
    pub fn postings(&self, kind: KeyKind, key: u32) -> &[u8] {
        let starts = match kind {
            KeyKind::Project => S::ProjectPostings,
            KeyKind::Keyword => S::KeywordPostings,
        };
        let r = self.range(starts, key as usize);
        &self.section(S::Postings)[r.start * 4..r.end * 4]
    }

    pub fn postings_len(&self, kind: KeyKind, key: u32) -> usize {
        self.postings(kind, key).len() / 4
    }

    /// Keys whose text contains `token`, ascending, each once.
    pub fn keys_containing<'a>(
        &'a self,
        kind: KeyKind,
        token: &'a str,
    ) -> impl Iterator<Item = u32> + 'a {
        let (joined, starts) = match kind {
            KeyKind::Project => (S::ProjectJoined, S::ProjectStarts),
            KeyKind::Keyword => (S::KeywordJoined, S::KeywordStarts),
        };
        let text = self.section(joined);
        let starts = self.section(starts);
        let count = self.keys(kind);
        // Matches come in text order, so the key holding each is found by walking forward.
        let mut key = 0usize;
        let mut last = None;
        let empty = token.is_empty() || token.contains('\n');
        memchr::memmem::find_iter(text, token.as_bytes())
            .take_while(move |_| !empty)
            .filter_map(move |at| {
                while key < count && u32_at(starts, key + 1) as usize <= at {
                    key += 1;
                }
                if key >= count || last == Some(key) {
                    return None;
                }
                last = Some(key);
                Some(key as u32)
            })
    }

    /// The key of exactly this text, if any (keys are sorted by their name).
    pub fn find_key(&self, kind: KeyKind, name: &str) -> Option<u32> {
        let (mut lo, mut hi) = (0usize, self.keys(kind));
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.key_name(kind, mid as u32).cmp(name) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid as u32),
            }
        }
        None
    }
}
