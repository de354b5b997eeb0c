//! A handoff segment: every field `get` scores and prints, for a set of sessions, laid out
//! as one validated byte buffer that can be read in place (from an mmapped file or from
//! memory) without decoding it first.
//!
//! Layout (little-endian; `u32` offsets):
//!
//! | section | content |
//! |---|---|
//! | header | magic, version, then `(offset, len)` of every section |
//! | meta | generation and base generation (`u64` each), docs, project keys, keyword keys |
//! | day, started, length, substance, duration, episode | one column per doc field |
//! | strings | per doc: session id, short id, headline, cwd, model (`u32::MAX` = none), user, machine |
//! | doc_projects, doc_keywords | per doc: `start..end` into the key id lists below |
//! | project_ids, keyword_ids | the doc's keys in their handoff order |
//! | project_joined, keyword_joined | keys joined by `\n` (projects lowercased) |
//! | project_starts, keyword_starts | byte offset of each key in its joined text |
//! | project_original | each project key as spelled (an offset into `pool`) |
//! | project_postings, keyword_postings | per key: `start..end` into `postings` |
//! | postings | doc ids per key, ascending, each once |
//! | recent | doc ids, newest first |
//! | masked | session ids this segment hides in the one below it (a delta's) |
//! | pool | `u32` length + UTF-8 bytes, for every string |
//!
//! Docs are sorted by session id. [`Segment::open`] checks every section, range and id
//! once, and strings are checked as they are read, so reads never index out of bounds,
//! whatever the bytes.

mod keys;
mod write;

use std::ops::Range;

use chrono::{Datelike, NaiveDate};

pub use self::write::build;
use crate::model::{Handoff, HandoffSections, NodeId, Timestamp};

/// Version 02 added each doc's user and machine; files of 01 are rebuilt from the store.
const MAGIC: &[u8; 8] = b"EYWAHS02";
const SECTIONS: usize = 26;
const HEADER_LEN: usize = 8 + SECTIONS * 8;
const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
#[repr(usize)]
enum S {
    Meta,
    Day,
    Started,
    Length,
    Substance,
    Duration,
    Episode,
    Strings,
    DocProjects,
    DocKeywords,
    ProjectIds,
    KeywordIds,
    ProjectJoined,
    KeywordJoined,
    ProjectStarts,
    KeywordStarts,
    ProjectOriginal,
    ProjectPostings,
    KeywordPostings,
    Postings,
    Recent,
    Masked,
    Pool,
    Reserved1,
    Reserved2,
    Reserved3,
}

/// Strings kept per doc, in this order.
const DOC_STRINGS: usize = 7;

/// Why bytes are not a segment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a handoff segment: {0}")]
pub struct SegmentError(&'static str);

/// The two kinds of key: project names (matched lowercased) and keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyKind {
    Project,
    Keyword,
}

/// A read-only segment over any byte buffer.
pub struct Segment {
    bytes: Box<dyn AsRef<[u8]> + Send + Sync>,
    sections: [Range<usize>; SECTIONS],
    docs: usize,
    project_keys: usize,
    keyword_keys: usize,
    generation: u64,
    base_generation: u64,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("docs", &self.docs)
            .field("project_keys", &self.project_keys)
            .field("keyword_keys", &self.keyword_keys)
            .field("generation", &self.generation)
            .finish()
    }
}

fn u32_at(bytes: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(bytes[i * 4..i * 4 + 4].try_into().expect("4 bytes"))
}

impl Segment {
    /// An empty segment.
    pub fn empty() -> Segment {
        Segment::open(Box::new(build(&[], &[], 0, 0))).expect("an empty segment is valid")
    }

    /// Checks `bytes` and reads them in place.
    pub fn open(bytes: Box<dyn AsRef<[u8]> + Send + Sync>) -> Result<Segment, SegmentError> {
        let data = (*bytes).as_ref();
        if data.len() < HEADER_LEN || &data[..8] != MAGIC {
            return Err(SegmentError("bad magic"));
        }
        let mut sections: [Range<usize>; SECTIONS] = std::array::from_fn(|_| 0..0);
        for (i, section) in sections.iter_mut().enumerate() {
            let at = 8 + i * 8;
            let offset = u32_at(&data[at..at + 4], 0) as usize;
            let len = u32_at(&data[at + 4..at + 8], 0) as usize;
            let end = offset
                .checked_add(len)
                .filter(|&e| e <= data.len() && offset >= HEADER_LEN)
                .ok_or(SegmentError("a section lies outside the file"))?;
            *section = offset..end;
        }
        let meta = &data[sections[S::Meta as usize].clone()];
        if meta.len() != 28 {
            return Err(SegmentError("bad meta"));
        }
        let generation = u64::from_le_bytes(meta[..8].try_into().expect("8 bytes"));
        let base_generation = u64::from_le_bytes(meta[8..16].try_into().expect("8 bytes"));
        let docs = u32_at(&meta[16..], 0) as usize;
        let project_keys = u32_at(&meta[16..], 1) as usize;
        let keyword_keys = u32_at(&meta[16..], 2) as usize;
        let segment = Segment {
            bytes,
            sections,
            docs,
            project_keys,
            keyword_keys,
            generation,
            base_generation,
        };
        segment.validate()?;
        Ok(segment)
    }

    fn section(&self, s: S) -> &[u8] {
        &(*self.bytes).as_ref()[self.sections[s as usize].clone()]
    }

    fn u32s(&self, s: S) -> &[u8] {
        self.section(s)
    }

    fn u32_of(&self, s: S, i: usize) -> u32 {
        u32_at(self.section(s), i)
    }

    fn validate(&self) -> Result<(), SegmentError> {
        let bad = SegmentError;
        let n = self.docs;
        let sized = |s: S, want: usize| {
            if self.section(s).len() == want {
                Ok(())
            } else {
                Err(bad("a column has the wrong length"))
            }
        };
        sized(S::Day, n * 4)?;
        sized(S::Started, n * 8)?;
        sized(S::Length, n * 8)?;
        sized(S::Substance, n)?;
        sized(S::Duration, n * 4)?;
        sized(S::Episode, n * 16)?;
        sized(S::Strings, n * DOC_STRINGS * 4)?;
        sized(S::DocProjects, (n + 1) * 4)?;
        sized(S::DocKeywords, (n + 1) * 4)?;
        sized(S::ProjectStarts, (self.project_keys + 1) * 4)?;
        sized(S::KeywordStarts, (self.keyword_keys + 1) * 4)?;
        sized(S::ProjectOriginal, self.project_keys * 4)?;
        sized(S::ProjectPostings, (self.project_keys + 1) * 4)?;
        sized(S::KeywordPostings, (self.keyword_keys + 1) * 4)?;
        sized(S::Recent, n * 4)?;
        for s in [S::ProjectIds, S::KeywordIds, S::Postings, S::Masked] {
            if !self.section(s).len().is_multiple_of(4) {
                return Err(bad("a list has a torn entry"));
            }
        }
        // Ranges: monotonic and inside their lists; ids inside their tables.
        let ranges = |starts: S, count: usize, list: S| -> Result<(), SegmentError> {
            let len = self.section(list).len() / 4;
            let mut last = 0;
            for i in 0..=count {
                let v = self.u32_of(starts, i) as usize;
                if v < last || v > len || (i == 0 && v != 0) || (i == count && v != len) {
                    return Err(bad("a range is out of order"));
                }
                last = v;
            }
            Ok(())
        };
        ranges(S::DocProjects, n, S::ProjectIds)?;
        ranges(S::DocKeywords, n, S::KeywordIds)?;
        let all_ids_below = |list: S, bound: usize| {
            self.u32s(list)
                .chunks_exact(4)
                .all(|c| (u32::from_le_bytes(c.try_into().expect("4")) as usize) < bound)
        };
        if !all_ids_below(S::ProjectIds, self.project_keys)
            || !all_ids_below(S::KeywordIds, self.keyword_keys)
            || !all_ids_below(S::Postings, n)
            || !all_ids_below(S::Recent, n)
        {
            return Err(bad("an id is out of range"));
        }
        // Project postings come first in `postings`, keyword postings after them.
        let postings = self.section(S::Postings).len() / 4;
        let mut last = 0;
        for (starts, count) in [
            (S::ProjectPostings, self.project_keys),
            (S::KeywordPostings, self.keyword_keys),
        ] {
            for i in 0..=count {
                let v = self.u32_of(starts, i) as usize;
                if v < last || v > postings {
                    return Err(bad("a posting range is out of order"));
                }
                last = v;
            }
        }
        if last != postings {
            return Err(bad("postings are not all owned"));
        }
        for (joined, starts, count) in [
            (S::ProjectJoined, S::ProjectStarts, self.project_keys),
            (S::KeywordJoined, S::KeywordStarts, self.keyword_keys),
        ] {
            let text = self.section(joined);
            std::str::from_utf8(text).map_err(|_| bad("keys are not UTF-8"))?;
            let mut last = 0;
            for i in 0..=count {
                let v = self.u32_of(starts, i) as usize;
                if v < last || v > text.len() || (i == count && v != text.len()) {
                    return Err(bad("key offsets are out of order"));
                }
                if i > 0 && (v == last || text[v - 1] != b'\n') {
                    return Err(bad("a key is not \\n-terminated"));
                }
                last = v;
            }
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.docs
    }

    pub fn is_empty(&self) -> bool {
        self.docs == 0
    }

    /// The store generation this segment was built at (0 when unknown).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// For a delta: the generation of the base it was built on.
    pub fn base_generation(&self) -> u64 {
        self.base_generation
    }

    /// The bytes, as written.
    pub fn bytes(&self) -> &[u8] {
        (*self.bytes).as_ref()
    }

    pub fn keys(&self, kind: KeyKind) -> usize {
        match kind {
            KeyKind::Project => self.project_keys,
            KeyKind::Keyword => self.keyword_keys,
        }
    }

    /// A string of the pool; a reference that leads nowhere valid reads as "" (strings
    /// are checked when read, not on open, so a fresh process reads only what it shows).
    fn pool_str(&self, offset: u32) -> &str {
        let pool = self.section(S::Pool);
        let at = offset as usize;
        let Some(len) = pool.get(at..at + 4).map(|b| u32_at(b, 0) as usize) else {
            return "";
        };
        pool.get(at + 4..at + 4 + len)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }

    fn doc_str(&self, doc: usize, field: usize) -> Option<&str> {
        let o = self.u32_of(S::Strings, doc * DOC_STRINGS + field);
        (o != NONE).then(|| self.pool_str(o))
    }

    pub fn session_id(&self, doc: usize) -> &str {
        self.doc_str(doc, 0).unwrap_or_default()
    }

    /// Who wrote the doc's session.
    pub fn user(&self, doc: usize) -> &str {
        self.doc_str(doc, 5).unwrap_or_default()
    }

    /// The machine the doc's session was written on.
    pub fn machine(&self, doc: usize) -> &str {
        self.doc_str(doc, 6).unwrap_or_default()
    }

    /// Days since 0001-01-01 (chrono's day numbering).
    pub fn day(&self, doc: usize) -> i32 {
        i32::from_le_bytes(
            self.section(S::Day)[doc * 4..doc * 4 + 4]
                .try_into()
                .expect("4"),
        )
    }

    pub fn days(&self) -> impl Iterator<Item = i32> + '_ {
        self.section(S::Day)
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes(c.try_into().expect("4")))
    }

    pub fn started_at(&self, doc: usize) -> i64 {
        i64::from_le_bytes(
            self.section(S::Started)[doc * 8..doc * 8 + 8]
                .try_into()
                .expect("8"),
        )
    }

    /// The length factor `1 + 0.1·ln(minutes + 1)`, or 1.
    pub fn length(&self, doc: usize) -> f64 {
        f64::from_le_bytes(
            self.section(S::Length)[doc * 8..doc * 8 + 8]
                .try_into()
                .expect("8"),
        )
    }

    pub fn substance(&self, doc: usize) -> u8 {
        self.section(S::Substance)[doc]
    }

    /// The columns a query reads for every doc it touches, borrowed once.
    pub fn columns(&self) -> Columns<'_> {
        Columns {
            day: self.section(S::Day),
            length: self.section(S::Length),
            substance: self.section(S::Substance),
        }
    }

    /// The doc of a session, by binary search.
    pub fn find_session(&self, session_id: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0usize, self.docs);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.session_id(mid).cmp(session_id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Doc ids, newest first.
    pub fn recent(&self) -> impl Iterator<Item = usize> + '_ {
        self.section(S::Recent)
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4")) as usize)
    }

    /// Sessions this segment hides in the segment below it.
    pub fn masked(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.section(S::Masked).len() / 4).map(|i| self.pool_str(self.u32_of(S::Masked, i)))
    }

    /// The handoff of a doc, without its body (sections live in the store).
    pub fn handoff(&self, doc: usize) -> Handoff {
        let episode: [u8; 16] = self.section(S::Episode)[doc * 16..doc * 16 + 16]
            .try_into()
            .expect("16 bytes");
        let duration = u32_at(self.section(S::Duration), doc);
        Handoff {
            session_id: self.session_id(doc).to_owned(),
            short_id: self.doc_str(doc, 1).unwrap_or_default().to_owned(),
            episode: NodeId::from_slice(&episode).expect("16 bytes are an id"),
            date: date_of_day(self.day(doc)),
            started_at: Timestamp(self.started_at(doc)),
            duration_minutes: (duration != NONE).then_some(duration),
            model: self.doc_str(doc, 4).map(str::to_owned),
            headline: self.doc_str(doc, 2).unwrap_or_default().to_owned(),
            projects: self
                .doc_projects(doc)
                .map(|k| self.key_name(KeyKind::Project, k).to_owned())
                .collect(),
            keywords: self
                .doc_keywords(doc)
                .map(|k| self.key_name(KeyKind::Keyword, k).to_owned())
                .collect(),
            substance: self.substance(doc),
            cwd: self.doc_str(doc, 3).unwrap_or_default().to_owned(),
            sections: HandoffSections::default(),
            user: self.user(doc).to_owned(),
            machine: self.machine(doc).to_owned(),
        }
    }

    /// Every handoff of the segment, in session id order.
    pub fn handoffs(&self) -> impl Iterator<Item = Handoff> + '_ {
        (0..self.docs).map(|d| self.handoff(d))
    }
}

/// Per-doc columns of a segment, for loops over many docs.
pub struct Columns<'a> {
    day: &'a [u8],
    length: &'a [u8],
    substance: &'a [u8],
}

impl Columns<'_> {
    #[inline]
    pub fn day(&self, doc: usize) -> i32 {
        i32::from_le_bytes(self.day[doc * 4..doc * 4 + 4].try_into().expect("4"))
    }

    #[inline]
    pub fn length(&self, doc: usize) -> f64 {
        f64::from_le_bytes(self.length[doc * 8..doc * 8 + 8].try_into().expect("8"))
    }

    #[inline]
    pub fn substance(&self, doc: usize) -> u8 {
        self.substance[doc]
    }

    /// The largest length factor (1 when there are no docs).
    pub fn max_length(&self) -> f64 {
        self.length
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8")))
            .fold(1.0, f64::max)
    }
}

/// The date of a chrono day number; dates outside chrono's range read as its minimum.
pub(super) fn date_of_day(day: i32) -> NaiveDate {
    NaiveDate::from_num_days_from_ce_opt(day).unwrap_or(NaiveDate::MIN)
}

pub(super) fn day_of(date: NaiveDate) -> i32 {
    date.num_days_from_ce()
}
