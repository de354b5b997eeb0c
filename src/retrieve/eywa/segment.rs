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
//! | strings | per doc: session id, short id, headline, cwd, model (`u32::MAX` = none) |
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

use std::collections::BTreeMap;
use std::ops::Range;

use chrono::{Datelike, NaiveDate};

use crate::model::{Handoff, HandoffSections, NodeId, Timestamp};

const MAGIC: &[u8; 8] = b"EYWAHS01";
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
const DOC_STRINGS: usize = 5;

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
pub fn date_of_day(day: i32) -> NaiveDate {
    NaiveDate::from_num_days_from_ce_opt(day).unwrap_or(NaiveDate::MIN)
}

pub fn day_of(date: NaiveDate) -> i32 {
    date.num_days_from_ce()
}

/// Builds a segment of `handoffs` (one per session id: the first of each) that hides
/// `masked` sessions of the segment below it (built at `base_generation`), tagged with
/// `generation`.
pub fn build(
    handoffs: &[&Handoff],
    masked: &[&str],
    generation: u64,
    base_generation: u64,
) -> Vec<u8> {
    let mut docs: Vec<&Handoff> = handoffs.to_vec();
    docs.sort_by(|a, b| a.session_id.cmp(&b.session_id));
    docs.dedup_by(|a, b| a.session_id == b.session_id);
    let n = docs.len();

    let mut pool = Pool::default();
    let mut by_project: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    let mut by_keyword: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for (i, h) in docs.iter().enumerate() {
        for (map, keys) in [
            (&mut by_project, &h.projects),
            (&mut by_keyword, &h.keywords),
        ] {
            for key in keys {
                let list = map.entry(key.as_str()).or_default();
                if list.last() != Some(&(i as u32)) {
                    list.push(i as u32);
                }
            }
        }
    }
    let project_id: BTreeMap<&str, u32> = by_project
        .keys()
        .enumerate()
        .map(|(i, k)| (*k, i as u32))
        .collect();
    let keyword_id: BTreeMap<&str, u32> = by_keyword
        .keys()
        .enumerate()
        .map(|(i, k)| (*k, i as u32))
        .collect();

    let mut w = Writer::new();
    let col = |s: S, bytes: Vec<u8>, w: &mut Writer| w.section(s, &bytes);

    let mut meta = generation.to_le_bytes().to_vec();
    meta.extend_from_slice(&base_generation.to_le_bytes());
    for v in [n, by_project.len(), by_keyword.len()] {
        meta.extend_from_slice(&(v as u32).to_le_bytes());
    }
    col(S::Meta, meta, &mut w);
    col(
        S::Day,
        docs.iter()
            .flat_map(|h| day_of(h.date).to_le_bytes())
            .collect(),
        &mut w,
    );
    col(
        S::Started,
        docs.iter()
            .flat_map(|h| h.started_at.0.to_le_bytes())
            .collect(),
        &mut w,
    );
    col(
        S::Length,
        docs.iter()
            .flat_map(|h| super::length(h.duration_minutes).to_le_bytes())
            .collect(),
        &mut w,
    );
    col(
        S::Substance,
        docs.iter().map(|h| h.substance).collect(),
        &mut w,
    );
    // A duration of u32::MAX minutes or more (8,000 years) is kept as one minute less.
    let mut durations = Vec::with_capacity(n * 4);
    for h in &docs {
        let d = h.duration_minutes.map_or(NONE, |m| m.min(NONE - 1));
        durations.extend_from_slice(&d.to_le_bytes());
    }
    col(S::Duration, durations, &mut w);
    col(
        S::Episode,
        docs.iter().flat_map(|h| *h.episode.as_bytes()).collect(),
        &mut w,
    );
    let mut strings = Vec::with_capacity(n * DOC_STRINGS * 4);
    for h in &docs {
        for s in [
            Some(h.session_id.as_str()),
            Some(h.short_id.as_str()),
            Some(h.headline.as_str()),
            Some(h.cwd.as_str()),
            h.model.as_deref(),
        ] {
            let o = s.map_or(NONE, |s| pool.add(s));
            strings.extend_from_slice(&o.to_le_bytes());
        }
    }
    col(S::Strings, strings, &mut w);
    let lists = |keys: &dyn Fn(&Handoff) -> &Vec<String>, ids: &BTreeMap<&str, u32>| {
        let mut starts = vec![0u32];
        let mut list = Vec::new();
        for h in &docs {
            for k in keys(h) {
                list.push(ids[k.as_str()]);
            }
            starts.push(list.len() as u32);
        }
        (u32_bytes(&starts), u32_bytes(&list))
    };
    let (doc_projects, project_ids) = lists(&|h| &h.projects, &project_id);
    let (doc_keywords, keyword_ids) = lists(&|h| &h.keywords, &keyword_id);
    col(S::DocProjects, doc_projects, &mut w);
    col(S::DocKeywords, doc_keywords, &mut w);
    col(S::ProjectIds, project_ids, &mut w);
    col(S::KeywordIds, keyword_ids, &mut w);
    let joined = |keys: &mut dyn Iterator<Item = String>| {
        let mut text = String::new();
        let mut starts = vec![0u32];
        for k in keys {
            // A `\n` inside a key would split it in two: matching sees a space there.
            text.push_str(&k.replace('\n', " "));
            text.push('\n');
            starts.push(text.len() as u32);
        }
        (text.into_bytes(), u32_bytes(&starts))
    };
    // Lowercased for matching, but still one key (one IDF) per spelling, as in Eywa.
    let (pj, ps) = joined(&mut by_project.keys().map(|k| k.to_lowercase()));
    let (kj, ks) = joined(&mut by_keyword.keys().map(|k| (*k).to_owned()));
    col(S::ProjectJoined, pj, &mut w);
    col(S::KeywordJoined, kj, &mut w);
    col(S::ProjectStarts, ps, &mut w);
    col(S::KeywordStarts, ks, &mut w);
    let originals: Vec<u32> = by_project.keys().map(|k| pool.add(k)).collect();
    col(S::ProjectOriginal, u32_bytes(&originals), &mut w);
    let mut postings = Vec::new();
    let mut starts_of = |lists: &mut dyn Iterator<Item = &Vec<u32>>| {
        let mut starts = vec![postings.len() as u32];
        for list in lists {
            postings.extend_from_slice(list);
            starts.push(postings.len() as u32);
        }
        u32_bytes(&starts)
    };
    let pp = starts_of(&mut by_project.values());
    let kp = starts_of(&mut by_keyword.values());
    col(S::ProjectPostings, pp, &mut w);
    col(S::KeywordPostings, kp, &mut w);
    col(S::Postings, u32_bytes(&postings), &mut w);
    let mut recent: Vec<u32> = (0..n as u32).collect();
    recent.sort_by(|&a, &b| super::newest_first(docs[a as usize], docs[b as usize]));
    col(S::Recent, u32_bytes(&recent), &mut w);
    let masked: Vec<u32> = masked.iter().map(|s| pool.add(s)).collect();
    col(S::Masked, u32_bytes(&masked), &mut w);
    col(S::Pool, std::mem::take(&mut pool.bytes), &mut w);
    for s in [S::Reserved1, S::Reserved2, S::Reserved3] {
        col(s, Vec::new(), &mut w);
    }
    w.finish()
}

fn u32_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Strings stored once each.
#[derive(Default)]
struct Pool {
    bytes: Vec<u8>,
    seen: std::collections::HashMap<String, u32>,
}

impl Pool {
    fn add(&mut self, s: &str) -> u32 {
        if let Some(&o) = self.seen.get(s) {
            return o;
        }
        let o = self.bytes.len() as u32;
        self.bytes
            .extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(s.as_bytes());
        self.seen.insert(s.to_owned(), o);
        o
    }
}

/// Sections appended after the header, 8-byte aligned.
struct Writer {
    out: Vec<u8>,
    table: [(u32, u32); SECTIONS],
}

impl Writer {
    fn new() -> Writer {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.resize(HEADER_LEN, 0);
        Writer {
            out,
            table: [(0, 0); SECTIONS],
        }
    }

    fn section(&mut self, s: S, bytes: &[u8]) {
        while !self.out.len().is_multiple_of(8) {
            self.out.push(0);
        }
        self.table[s as usize] = (self.out.len() as u32, bytes.len() as u32);
        self.out.extend_from_slice(bytes);
    }

    fn finish(mut self) -> Vec<u8> {
        assert!(
            u32::try_from(self.out.len()).is_ok(),
            "a handoff segment is limited to 4 GiB (about 25 million sessions)"
        );
        for (i, (offset, len)) in self.table.iter().enumerate() {
            let at = 8 + i * 8;
            self.out[at..at + 4].copy_from_slice(&offset.to_le_bytes());
            self.out[at + 4..at + 8].copy_from_slice(&len.to_le_bytes());
        }
        self.out
    }
}
