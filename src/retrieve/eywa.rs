//! Seed 000's `eywa get`, exactly: IDF-weighted project (×3) and keyword (×2) matches,
//! boosted by recency inside `days_back` and halved every 7 days beyond it, scaled by
//! session length; substance-0 sessions never returned. Word lists and edge cases follow
//! the Python Eywa (`research/eywa-get-parity.md`) so both rank the same index the same way.

mod rank;
mod segment;

use chrono::NaiveDate;

use self::rank::{Recency, TopK, length, newest_first};
pub use self::segment::{KeyKind, Segment, SegmentError, build as build_segment};
use crate::model::Handoff;

pub const DEFAULT_DAYS_BACK: u32 = 14;
pub const DEFAULT_LIMIT: usize = 3;

const PROJECT_WEIGHT: f64 = 3.0;
const KEYWORD_WEIGHT: f64 = 2.0;
const HALF_LIFE_DAYS: f64 = 7.0;

const STOPWORDS: [&str; 73] = [
    "a", "about", "all", "also", "an", "and", "any", "are", "be", "been", "being", "can",
    "continue", "could", "did", "do", "does", "find", "for", "get", "give", "had", "has", "have",
    "here", "how", "i", "in", "is", "just", "know", "let", "let's", "lets", "list", "me", "more",
    "much", "my", "need", "of", "on", "or", "our", "search", "shall", "should", "show", "some",
    "that", "the", "their", "there", "these", "they", "think", "this", "those", "to", "very",
    "want", "was", "we", "what", "when", "where", "why", "will", "with", "work", "would", "you",
    "your",
];

const KNOWN_SHORT: [&str; 15] = [
    "3d", "ai", "api", "cli", "gpu", "hr", "kb", "llm", "mcp", "ml", "os", "qa", "tg", "ui", "ux",
];

/// The query's scoring tokens: lowercased, split on every run outside `[a-z0-9-]`, tokens of
/// two characters or fewer dropped unless a known short term, stopwords dropped.
pub fn query_tokens(query: &str) -> Vec<String> {
    query
        .to_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
        .filter(|w| !w.is_empty())
        .filter(|w| w.len() > 2 || KNOWN_SHORT.contains(w))
        .filter(|w| !STOPWORDS.contains(w))
        .map(str::to_owned)
        .collect()
}

/// How to run a `get`.
#[derive(Debug, Clone)]
pub struct GetOptions {
    pub days_back: u32,
    pub limit: usize,
    /// Only handoffs of these projects (names, case-insensitive); empty = all.
    pub projects: Vec<String>,
    /// Only handoffs of sessions by these users, on these machines; empty = all.
    pub authors: crate::model::Attribution,
}

impl Default for GetOptions {
    fn default() -> Self {
        GetOptions {
            days_back: DEFAULT_DAYS_BACK,
            limit: DEFAULT_LIMIT,
            projects: Vec::new(),
            authors: crate::model::Attribution::default(),
        }
    }
}

/// One returned handoff; `score` is `None` when it came from the most-recent fallback.
/// Its body (`sections`) is not part of the index: it is empty here.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub handoff: Handoff,
    pub score: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GetResult {
    pub tokens: Vec<String>,
    pub hits: Vec<Scored>,
    /// True when no token scored and the most recent handoffs were returned instead.
    pub fallback_recent: bool,
    /// When nothing was found: how many handoffs (of the projects asked for, with
    /// substance) lie beyond the `days_back` window.
    pub older: usize,
    /// The date of the newest of them.
    pub newest_older: Option<NaiveDate>,
}

/// Every handoff `get` ranks, as the two inverted indexes of `handoff-index.json` (by
/// project, by keyword) plus the per-session fields it scores, in two segments: a large
/// `base` and a small `delta` holding the sessions changed since the base was built, which
/// hides their old versions. A query costs what its tokens touch: the keys containing them
/// (one pass over each segment's joined keys) and those keys' postings.
#[derive(Debug)]
pub struct HandoffIndex {
    /// Shared by the indexes that differ only in their delta.
    base: std::sync::Arc<Segment>,
    delta: Segment,
    /// Base docs the delta replaces or removes.
    hidden: Vec<bool>,
    /// Live handoffs: Eywa's N.
    total: usize,
    /// How many live handoffs list each key, across both segments, per segment and kind.
    lens: [[Vec<u32>; 2]; 2],
    /// The largest length factor of each segment.
    max_length: [f64; 2],
}

/// Which segment [`HandoffIndex::with_changes`] built anew.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rebuilt {
    /// Only the delta: the base is unchanged.
    Delta,
    /// A new base (and an empty delta).
    Base,
}

/// Reusable per-thread buffers: scores kept at -0.0 ("not matched") between queries, and
/// the docs a query touched.
#[derive(Default)]
struct Scratch {
    scores: Vec<f64>,
    touched: Vec<u32>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

const KINDS: [(KeyKind, f64); 2] = [
    (KeyKind::Project, PROJECT_WEIGHT),
    (KeyKind::Keyword, KEYWORD_WEIGHT),
];

impl HandoffIndex {
    /// An index of these handoffs (one per session id: the first of each).
    pub fn new(handoffs: Vec<Handoff>) -> Self {
        HandoffIndex::build(&handoffs, 0)
    }

    /// An index of these handoffs in one base segment, tagged with the store `generation`
    /// they were read at.
    pub fn build(handoffs: &[Handoff], generation: u64) -> Self {
        let refs: Vec<&Handoff> = handoffs.iter().collect();
        let open = |bytes| Segment::open(Box::new(bytes)).expect("a built segment is valid");
        let base = open(segment::build(&refs, &[], generation, generation));
        let delta = open(segment::build(&[], &[], generation, generation));
        HandoffIndex::from_segments(base.into(), delta)
    }

    /// The store generation the index describes.
    pub fn generation(&self) -> u64 {
        self.base.generation().max(self.delta.generation())
    }

    /// The index of a base and the delta on top of it.
    pub fn from_segments(base: std::sync::Arc<Segment>, delta: Segment) -> Self {
        let mut hidden = vec![false; base.len()];
        let mut hide = |session: &str| {
            if let Some(doc) = base.find_session(session) {
                hidden[doc] = true;
            }
        };
        for session in delta.masked() {
            hide(session);
        }
        for doc in 0..delta.len() {
            hide(delta.session_id(doc));
        }
        let total = hidden.iter().filter(|h| !**h).count() + delta.len();
        let mut lens: [[Vec<u32>; 2]; 2] = Default::default();
        for (k, (kind, _)) in KINDS.iter().enumerate() {
            let mut base_lens: Vec<u32> = (0..base.keys(*kind) as u32)
                .map(|key| base.postings_len(*kind, key) as u32)
                .collect();
            for (doc, _) in hidden.iter().enumerate().filter(|(_, h)| **h) {
                let keys: Vec<u32> = match kind {
                    KeyKind::Project => base.doc_projects(doc).collect(),
                    KeyKind::Keyword => base.doc_keywords(doc).collect(),
                };
                let mut keys = keys;
                keys.sort_unstable();
                keys.dedup();
                for key in keys {
                    base_lens[key as usize] = base_lens[key as usize].saturating_sub(1);
                }
            }
            let mut delta_lens: Vec<u32> = (0..delta.keys(*kind) as u32)
                .map(|key| delta.postings_len(*kind, key) as u32)
                .collect();
            for key in 0..delta.keys(*kind) as u32 {
                if let Some(b) = base.find_key(*kind, delta.key_name(*kind, key)) {
                    let sum = base_lens[b as usize].saturating_add(delta_lens[key as usize]);
                    base_lens[b as usize] = sum;
                    delta_lens[key as usize] = sum;
                }
            }
            lens[0][k] = base_lens;
            lens[1][k] = delta_lens;
        }
        let max_length = [base.columns().max_length(), delta.columns().max_length()];
        HandoffIndex {
            base,
            delta,
            hidden,
            total,
            lens,
            max_length,
        }
    }

    pub fn base(&self) -> &std::sync::Arc<Segment> {
        &self.base
    }

    pub fn delta(&self) -> &Segment {
        &self.delta
    }

    /// Live handoffs.
    pub fn len(&self) -> usize {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Every live handoff (bodies empty), base then delta.
    pub fn handoffs(&self) -> impl Iterator<Item = Handoff> + '_ {
        (0..self.base.len())
            .filter(|d| !self.hidden[*d])
            .map(|d| self.base.handoff(d))
            .chain(self.delta.handoffs())
    }

    /// The sessions of the delta, and the ones it hides without replacing.
    pub fn delta_sessions(&self) -> (Vec<Handoff>, Vec<String>) {
        let kept: std::collections::HashSet<&str> = (0..self.delta.len())
            .map(|d| self.delta.session_id(d))
            .collect();
        let removed = self
            .delta
            .masked()
            .filter(|s| !kept.contains(s))
            .map(str::to_owned)
            .collect();
        (self.delta.handoffs().collect(), removed)
    }

    /// The index once `changed` handoffs (each replacing its session's) are written at
    /// `generation`: a new delta on the same base, or, once the delta would outgrow a
    /// sixteenth of the base, a new base with an empty delta.
    pub fn with_changes(&self, changed: &[Handoff], generation: u64) -> (HandoffIndex, Rebuilt) {
        let most = (self.base.len() / 16).max(1024);
        self.with_changes_within(changed, generation, most)
    }

    /// [`HandoffIndex::with_changes`], with a new base once the delta holds more than
    /// `most` sessions.
    pub fn with_changes_within(
        &self,
        changed: &[Handoff],
        generation: u64,
        most: usize,
    ) -> (HandoffIndex, Rebuilt) {
        let (delta, removed) = self.delta_sessions();
        let mut sessions: std::collections::BTreeMap<&str, &Handoff> =
            delta.iter().map(|h| (h.session_id.as_str(), h)).collect();
        for h in changed {
            sessions.insert(h.session_id.as_str(), h);
        }
        let open =
            |bytes: Vec<u8>| Segment::open(Box::new(bytes)).expect("a built segment is valid");
        if sessions.len() > most {
            let fresh: std::collections::HashSet<&str> = sessions.keys().copied().collect();
            let kept: Vec<Handoff> = (0..self.base.len())
                .filter(|&d| !self.hidden[d] && !fresh.contains(self.base.session_id(d)))
                .map(|d| self.base.handoff(d))
                .collect();
            let all: Vec<&Handoff> = kept.iter().chain(sessions.values().copied()).collect();
            let base = open(segment::build(&all, &[], generation, generation));
            let delta = open(segment::build(&[], &[], generation, generation));
            return (
                HandoffIndex::from_segments(base.into(), delta),
                Rebuilt::Base,
            );
        }
        let docs: Vec<&Handoff> = sessions.values().copied().collect();
        let masked: Vec<&str> = sessions
            .keys()
            .copied()
            .chain(removed.iter().map(String::as_str))
            .collect();
        let delta = open(segment::build(
            &docs,
            &masked,
            generation,
            self.base.generation(),
        ));
        (
            HandoffIndex::from_segments(self.base.clone(), delta),
            Rebuilt::Delta,
        )
    }

    /// Ranks handoffs for `query` as of `today`.
    pub fn get(&self, query: &str, options: &GetOptions, today: NaiveDate) -> GetResult {
        let tokens = query_tokens(query);
        let mut hits = if tokens.is_empty() {
            Vec::new()
        } else {
            self.score(&tokens, options, today)
        };
        let fallback_recent = hits.is_empty();
        if fallback_recent {
            hits = self.recent(options, today);
        }
        let (older, newest_older) = if hits.is_empty() {
            self.beyond(options, today)
        } else {
            (0, None)
        };
        GetResult {
            tokens,
            hits,
            fallback_recent,
            older,
            newest_older,
        }
    }

    /// The handoffs `recent` would list but for the window: how many, and the date of the
    /// newest. Only asked when nothing was found, to say why.
    fn beyond(&self, options: &GetOptions, today: NaiveDate) -> (usize, Option<NaiveDate>) {
        let oldest = segment::day_of(today)
            .saturating_sub(i32::try_from(options.days_back).unwrap_or(i32::MAX));
        let mut count = 0;
        let mut newest: Option<(i32, usize, usize)> = None;
        for s in 0..2 {
            let seg = self.segment(s);
            let admitted = self.admitted(s, &options.projects);
            for d in seg.recent() {
                if seg.day(d) >= oldest || seg.substance(d) == 0 || (s == 0 && self.hidden[d]) {
                    continue;
                }
                if let Some(admitted) = &admitted
                    && !seg.doc_projects(d).any(|k| admitted[k as usize])
                {
                    continue;
                }
                if !authored(seg, d, &options.authors) {
                    continue;
                }
                count += 1;
                if newest.is_none_or(|(day, _, _)| seg.day(d) > day) {
                    newest = Some((seg.day(d), s, d));
                }
            }
        }
        let date = newest.map(|(_, s, d)| self.segment(s).handoff(d).date);
        (count, date)
    }

    fn segment(&self, s: usize) -> &Segment {
        if s == 0 { &self.base } else { &self.delta }
    }

    /// Per segment, which project keys a project filter admits (`None`: no filter).
    fn admitted(&self, s: usize, projects: &[String]) -> Option<Vec<bool>> {
        if projects.is_empty() {
            return None;
        }
        let seg = self.segment(s);
        Some(
            (0..seg.keys(KeyKind::Project) as u32)
                .map(|k| {
                    let name = seg.key_name(KeyKind::Project, k);
                    projects.iter().any(|q| q.eq_ignore_ascii_case(name))
                })
                .collect(),
        )
    }

    fn score(&self, tokens: &[String], options: &GetOptions, today: NaiveDate) -> Vec<Scored> {
        let n_total = self.total.max(1) as f64;
        let idf = |list_len: u32| (n_total / f64::from(list_len.max(1))).ln().max(0.0);
        let today_day = segment::day_of(today);
        let mut top = TopK::new(options.limit);
        SCRATCH.with(|scratch| {
            let scratch = &mut *scratch.borrow_mut();
            for s in 0..2 {
                let seg = self.segment(s);
                if seg.is_empty() {
                    continue;
                }
                if scratch.scores.len() < seg.len() {
                    scratch.scores.resize(seg.len(), -0.0);
                }
                // One slot more than docs: the last write lands past every distinct doc.
                if scratch.touched.len() <= seg.len() {
                    scratch.touched.resize(seg.len() + 1, 0);
                }
                // `touched[..count]` holds each doc scored, once (at its first touch: while
                // its score still reads -0.0), written without a branch.
                let scores = &mut scratch.scores[..seg.len()];
                let touched = &mut scratch.touched[..=seg.len()];
                let mut count = 0;
                for token in tokens {
                    for (k, (kind, weight)) in KINDS.iter().enumerate() {
                        for key in seg.keys_containing(*kind, token) {
                            let w = weight * idf(self.lens[s][k][key as usize]);
                            for id in seg.postings(*kind, key).chunks_exact(4) {
                                let doc = u32::from_le_bytes(id.try_into().expect("4"));
                                let slot = &mut scores[doc as usize];
                                touched[count] = doc;
                                count += usize::from(slot.is_sign_negative());
                                *slot += w;
                            }
                        }
                    }
                }
                let touched = &touched[..count];
                let admitted = self.admitted(s, &options.projects);
                let mut recency = Recency::new(options.days_back);
                let columns = seg.columns();
                // No factor exceeds (1 + 1/√1) × the longest session's: a doc whose raw
                // score times that is below the worst kept cannot enter.
                let most = 2.0 * self.max_length[s];
                for &doc in touched.iter() {
                    let d = doc as usize;
                    let raw = std::mem::replace(&mut scores[d], -0.0);
                    if raw * most < top.floor
                        || columns.substance(d) == 0
                        || (s == 0 && self.hidden[d])
                    {
                        continue;
                    }
                    if let Some(admitted) = &admitted
                        && !seg.doc_projects(d).any(|k| admitted[k as usize])
                    {
                        continue;
                    }
                    if !authored(seg, d, &options.authors) {
                        continue;
                    }
                    let age = today_day.saturating_sub(columns.day(d));
                    let score = raw * recency.factor(age) * columns.length(d);
                    top.offer(score, s, d, &|a, b| self.newest_first(a, b));
                }
            }
        });
        top.into_sorted(&|a, b| self.newest_first(a, b))
            .into_iter()
            .map(|(score, s, d)| Scored {
                handoff: self.segment(s).handoff(d),
                score: Some(score),
            })
            .collect()
    }

    /// Newest first: date, then start, then session id.
    fn newest_first(&self, a: (usize, usize), b: (usize, usize)) -> std::cmp::Ordering {
        let (sa, sb) = (self.segment(a.0), self.segment(b.0));
        sb.day(b.1)
            .cmp(&sa.day(a.1))
            .then(sb.started_at(b.1).cmp(&sa.started_at(a.1)))
            .then_with(|| sa.session_id(a.1).cmp(sb.session_id(b.1)))
    }

    /// Handoffs dated within `days_back` of today, newest first.
    fn recent(&self, options: &GetOptions, today: NaiveDate) -> Vec<Scored> {
        let admitted = [
            self.admitted(0, &options.projects),
            self.admitted(1, &options.projects),
        ];
        let oldest = segment::day_of(today)
            .saturating_sub(i32::try_from(options.days_back).unwrap_or(i32::MAX));
        let mut lists = [
            self.base.recent().peekable(),
            self.delta.recent().peekable(),
        ];
        let mut out = Vec::new();
        while out.len() < options.limit {
            let heads = (lists[0].peek().copied(), lists[1].peek().copied());
            let next = match heads {
                (None, None) => break,
                (Some(_), None) => 0,
                (None, Some(_)) => 1,
                (Some(a), Some(b)) => {
                    if self.newest_first((0, a), (1, b)).is_le() {
                        0
                    } else {
                        1
                    }
                }
            };
            let d = lists[next].next().expect("peeked");
            let seg = self.segment(next);
            if seg.day(d) < oldest {
                // The merged order is newest first: everything after is older still.
                break;
            }
            if seg.substance(d) == 0 || (next == 0 && self.hidden[d]) {
                continue;
            }
            if let Some(admitted) = &admitted[next]
                && !seg.doc_projects(d).any(|k| admitted[k as usize])
            {
                continue;
            }
            if !authored(seg, d, &options.authors) {
                continue;
            }
            out.push(Scored {
                handoff: seg.handoff(d),
                score: None,
            });
        }
        out
    }
}

/// Whether doc `d` of `seg` is by a user on a machine `authors` keeps.
fn authored(seg: &Segment, d: usize, authors: &crate::model::Attribution) -> bool {
    authors.is_empty() || authors.keeps(seg.user(d), seg.machine(d))
}

#[cfg(test)]
mod tests;
