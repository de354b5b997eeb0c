//! Seed 000's `eywa get`, exactly: IDF-weighted project (×3) and keyword (×2) matches,
//! boosted by recency inside `days_back` and halved every 7 days beyond it, scaled by
//! session length; substance-0 sessions never returned. Word lists and edge cases follow
//! the Python Eywa (`research/eywa-get-parity.md`) so both rank the same index the same way.

use std::collections::BTreeMap;

use chrono::NaiveDate;

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
}

impl Default for GetOptions {
    fn default() -> Self {
        GetOptions {
            days_back: DEFAULT_DAYS_BACK,
            limit: DEFAULT_LIMIT,
            projects: Vec::new(),
        }
    }
}

/// One returned handoff; `score` is `None` when it came from the most-recent fallback.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored<'a> {
    pub handoff: &'a Handoff,
    pub score: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GetResult<'a> {
    pub tokens: Vec<String>,
    pub hits: Vec<Scored<'a>>,
    /// True when no token scored and the most recent handoffs were returned instead.
    pub fallback_recent: bool,
}

/// Every handoff with the two inverted indexes of `handoff-index.json`, laid out so that
/// the substring matches of a query token take one pass over a joined string.
#[derive(Debug, Clone, Default)]
pub struct HandoffIndex {
    handoffs: Vec<Handoff>,
    /// Lowercased project names (Eywa matches `token in project.lower()`).
    projects: Postings,
    /// Keywords as stored (Eywa matches `token == keyword or token in keyword`).
    keywords: Postings,
    /// Handoff positions, newest first.
    by_recency: Vec<usize>,
}

/// Keys joined by `\n`, each with the handoffs listing it. A query token never holds a
/// `\n`, so a match lies within one key, found by its offset.
#[derive(Debug, Clone, Default)]
struct Postings {
    joined: String,
    /// Byte offset in `joined` where each key starts.
    starts: Vec<usize>,
    lists: Vec<Vec<usize>>,
}

impl Postings {
    fn new(keys: impl IntoIterator<Item = (String, Vec<usize>)>) -> Self {
        let mut postings = Postings::default();
        for (key, list) in keys {
            postings.starts.push(postings.joined.len());
            postings.joined.push_str(&key);
            postings.joined.push('\n');
            postings.lists.push(list);
        }
        postings
    }

    /// The lists of every key containing `token`, each key once.
    fn containing<'a>(&'a self, token: &'a str) -> impl Iterator<Item = &'a [usize]> + 'a {
        let mut last = None;
        self.joined.match_indices(token).filter_map(move |(at, _)| {
            let key = self.starts.partition_point(|&start| start <= at) - 1;
            if last == Some(key) {
                return None;
            }
            last = Some(key);
            Some(self.lists[key].as_slice())
        })
    }
}

impl HandoffIndex {
    pub fn new(mut handoffs: Vec<Handoff>) -> Self {
        handoffs.sort_by(|a, b| a.session_id.cmp(&b.session_id));
        handoffs.dedup_by(|a, b| a.session_id == b.session_id);
        let mut by_project: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut by_keyword: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, h) in handoffs.iter().enumerate() {
            for (map, keys) in [
                (&mut by_project, &h.projects),
                (&mut by_keyword, &h.keywords),
            ] {
                for key in keys {
                    let list = map.entry(key.clone()).or_default();
                    if list.last() != Some(&i) {
                        list.push(i);
                    }
                }
            }
        }
        let mut by_recency: Vec<usize> = (0..handoffs.len()).collect();
        by_recency.sort_by(|&a, &b| newest_first(&handoffs[a], &handoffs[b]));
        HandoffIndex {
            handoffs,
            // Lowercased for matching, but still one key (one IDF) per spelling, as in Eywa.
            projects: Postings::new(by_project.into_iter().map(|(k, v)| (k.to_lowercase(), v))),
            keywords: Postings::new(by_keyword),
            by_recency,
        }
    }

    pub fn len(&self) -> usize {
        self.handoffs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.handoffs.is_empty()
    }

    pub fn handoffs(&self) -> &[Handoff] {
        &self.handoffs
    }

    /// Ranks handoffs for `query` as of `today`.
    pub fn get(&self, query: &str, options: &GetOptions, today: NaiveDate) -> GetResult<'_> {
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
        GetResult {
            tokens,
            hits,
            fallback_recent,
        }
    }

    fn score(&self, tokens: &[String], options: &GetOptions, today: NaiveDate) -> Vec<Scored<'_>> {
        let n_total = self.handoffs.len().max(1) as f64;
        let idf = |list_len: usize| (n_total / list_len.max(1) as f64).ln().max(0.0);
        // NaN = not matched. A session that matched with IDF 0 is still a scored hit.
        let mut scores = vec![f64::NAN; self.handoffs.len()];
        let mut matched = Vec::new();
        let mut add = |list: &[usize], weight: f64| {
            for &i in list {
                if scores[i].is_nan() {
                    scores[i] = 0.0;
                    matched.push(i);
                }
                scores[i] += weight;
            }
        };
        for token in tokens {
            for list in self.projects.containing(token) {
                add(list, PROJECT_WEIGHT * idf(list.len()));
            }
            for list in self.keywords.containing(token) {
                add(list, KEYWORD_WEIGHT * idf(list.len()));
            }
        }
        let mut hits: Vec<Scored<'_>> = matched
            .into_iter()
            .map(|i| (&self.handoffs[i], scores[i]))
            .filter(|(h, _)| h.substance > 0 && in_projects(h, &options.projects))
            .map(|(h, s)| Scored {
                handoff: h,
                score: Some(s * recency(h.date, today, options.days_back) * length(h)),
            })
            .collect();
        let by_score = |a: &Scored<'_>, b: &Scored<'_>| {
            b.score
                .partial_cmp(&a.score)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| newest_first(a.handoff, b.handoff))
        };
        if hits.len() > options.limit && options.limit > 0 {
            hits.select_nth_unstable_by(options.limit - 1, by_score);
            hits.truncate(options.limit);
        }
        hits.sort_by(by_score);
        hits.truncate(options.limit);
        hits
    }

    /// Handoffs dated within `days_back` of today, newest first.
    fn recent(&self, options: &GetOptions, today: NaiveDate) -> Vec<Scored<'_>> {
        self.by_recency
            .iter()
            .map(|&i| &self.handoffs[i])
            .filter(|h| h.substance > 0 && in_projects(h, &options.projects))
            .filter(|h| (today - h.date).num_days() <= i64::from(options.days_back))
            .take(options.limit)
            .map(|h| Scored {
                handoff: h,
                score: None,
            })
            .collect()
    }
}

/// `age_days` = days since the handoff's date + 1; inside `days_back`: × (1 + 1/√age),
/// beyond it: × 0.5^((age − days_back) / 7).
pub(crate) fn recency(date: NaiveDate, today: NaiveDate, days_back: u32) -> f64 {
    let age_days = (today - date).num_days() + 1;
    if age_days <= i64::from(days_back) {
        1.0 + 1.0 / (age_days.max(1) as f64).sqrt()
    } else {
        0.5_f64.powf((age_days - i64::from(days_back)) as f64 / HALF_LIFE_DAYS)
    }
}

/// × (1 + 0.1·ln(minutes + 1)) when the duration is known and positive.
fn length(h: &Handoff) -> f64 {
    match h.duration_minutes {
        Some(m) if m > 0 => 1.0 + 0.1 * (f64::from(m) + 1.0).ln(),
        _ => 1.0,
    }
}

fn in_projects(h: &Handoff, projects: &[String]) -> bool {
    projects.is_empty()
        || h.projects
            .iter()
            .any(|p| projects.iter().any(|q| q.eq_ignore_ascii_case(p)))
}

fn newest_first(a: &Handoff, b: &Handoff) -> std::cmp::Ordering {
    b.date
        .cmp(&a.date)
        .then(b.started_at.cmp(&a.started_at))
        .then(a.session_id.cmp(&b.session_id))
}

#[cfg(test)]
mod tests;
