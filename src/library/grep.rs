//! `SearchSessions`: every line of every session's messages that matches a substring or a
//! regular expression. The trigram index (`crate::index::GramIndex`) names the sessions
//! that can hold a match of the pattern's literal parts, and only those are read and
//! grepped; patterns without a literal run of three characters grep every session. The
//! index narrows and the grep decides, so both give the same page.

use std::collections::{HashMap, HashSet};

use rustc_hash::FxHashMap;

use super::{
    Library, MAX_CONTEXT_LINES, MAX_MATCH_LINE_BYTES, MAX_MATCH_PAGE_BYTES, MAX_MATCHES,
    MAX_PATTERN_CHARS, MatchPage, SearchMatch, SessionSearch, in_workspace,
};
use crate::claude::Message;
use crate::graph::SourceRecord;
use crate::index::{GramIndex, INEXACT, Need};
use crate::model::NodeId;
use crate::{Error, Result};

/// The key of a session whose text could not be read when it was indexed: every search
/// reads it again (no trigram is this: they take 63 bits).
const UNREAD: u64 = u64::MAX;

mod refresh;

use self::refresh::fingerprint;

impl Library<'_> {
    /// Every line of every message (prompts, responses, compact summaries; redacted as
    /// served) that matches a substring or a regular expression, sessions newest first.
    pub(crate) fn search_sessions(&self, search: &SessionSearch) -> Result<MatchPage> {
        if search.pattern.is_empty() {
            return Err(Error::InvalidArgument(
                "give a pattern to search for".into(),
            ));
        }
        let chars = search.pattern.chars().count();
        if chars > MAX_PATTERN_CHARS {
            return Err(Error::InvalidArgument(format!(
                "the pattern has {chars} characters; at most {MAX_PATTERN_CHARS}"
            )));
        }
        if search.limit == 0 || search.limit > MAX_MATCHES {
            return Err(Error::InvalidArgument(format!(
                "limit must be between 1 and {MAX_MATCHES}, got {}",
                search.limit
            )));
        }
        if search.context > MAX_CONTEXT_LINES {
            return Err(Error::InvalidArgument(format!(
                "context must be at most {MAX_CONTEXT_LINES} lines, got {}",
                search.context
            )));
        }
        let source = if search.regex {
            search.pattern.clone()
        } else {
            regex::escape(&search.pattern)
        };
        let matcher = regex::RegexBuilder::new(&source)
            .case_insensitive(!search.case_sensitive)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| {
                Error::InvalidArgument(format!(
                    "bad pattern {}: {}",
                    crate::error::quote(&search.pattern),
                    pattern_error(&e)
                ))
            })?;
        let workspace = search
            .workspace
            .as_deref()
            .map(|w| w.trim().trim_end_matches(['/', '\\']))
            .filter(|w| !w.is_empty());
        if let Some(grams) = self.grams
            && !search.regex
            && crate::index::is_word_pattern(&search.pattern)
            && grams.synced()? == Some(self.graph.sources_generation()?)
        {
            return self.search_word(grams, search, workspace, &matcher);
        }
        let need = match self.grams {
            Some(_) => crate::index::need_of(&search.pattern, search.regex),
            None => Need::Any,
        };
        let plan = self.grep_plan(workspace, &need)?;
        let mut page = Page::new(search, &matcher);
        for source in plan {
            // Reads of transcripts: a caller that stops waiting stops them.
            crate::cancel::checkpoint()?;
            let messages = match self.grep_messages(&source) {
                Ok(m) => m,
                // Gone and never archived: nothing to grep.
                Err(Error::NotFound(_)) => continue,
                Err(e) => return Err(e),
            };
            page.grep(&source.session_id, &messages);
        }
        let total = page.seen;
        Ok(page.finish(total))
    }

    /// [`Library::search_sessions`] for a word on a caught-up index: the lines holding it
    /// are counted from the index's postings (in `workspace`, of the sessions whose
    /// episodes are in it), and only the sessions on the page are read,
    /// with those whose entries cannot say exactly (an [`INEXACT`] message holding the
    /// word's trigrams, a message more than one session wrote, a session of several
    /// sources, an unread one), which are grepped whole.
    fn search_word(
        &self,
        grams: &GramIndex,
        search: &SessionSearch,
        workspace: Option<&str>,
        matcher: &regex::Regex,
    ) -> Result<MatchPage> {
        self.authors.load(self.graph)?;
        let inexact = Need::All(vec![
            crate::index::need_of(&search.pattern, false),
            Need::Gram(INEXACT),
        ]);
        // Sessions grepped whole, by episode id.
        let mut whole: FxHashMap<u128, String> = grams
            .sessions(&Need::Either(vec![inexact, Need::Gram(UNREAD)]))?
            .unwrap_or_default()
            .into_iter()
            .map(|s| (episode_key(&s), s))
            .collect();
        let shared = grams.shared_sessions()?;
        let mut lines: FxHashMap<u128, u64> = FxHashMap::default();
        let mut written_twice = Vec::new();
        {
            let guard = self.authors.owners();
            let owners = guard.as_ref().filter(|o| o.any_shared());
            let hits =
                grams.word_lines(&search.pattern, search.case_sensitive, owners.is_some())?;
            for hit in hits {
                if whole.contains_key(&hit.episode) {
                    continue;
                }
                if let Some(session) = shared.get(&hit.episode) {
                    whole.insert(hit.episode, session.clone());
                } else if owners.is_some_and(|o| hit.uuids.iter().any(|&u| o.is_shared(u))) {
                    written_twice.push(hit.episode);
                } else {
                    lines.insert(hit.episode, hit.lines);
                }
            }
        }
        for episode in written_twice {
            if let Some(e) = self.episode_by_key(episode)? {
                whole.insert(episode, e.session_id.clone());
            }
        }
        if let Some(w) = workspace {
            // Only the sessions of the workspace: each one's episode says.
            let mut outside = Vec::new();
            for &key in lines.keys().chain(whole.keys()) {
                let inside = self
                    .episode_by_key(key)?
                    .is_some_and(|e| in_workspace(&e.project_path, &e.project, w));
                if !inside {
                    outside.push(key);
                }
            }
            for key in outside {
                lines.remove(&key);
                whole.remove(&key);
            }
        }
        // Sessions grepped whole, kept for the page.
        let mut grepped: FxHashMap<u128, (String, Vec<Message>, u64)> = FxHashMap::default();
        for (episode, session) in whole {
            crate::cancel::checkpoint()?;
            lines.remove(&episode);
            let Some(source) = self.served_source(grams, &session)? else {
                continue;
            };
            let messages = match self.grep_messages(&source) {
                Ok(m) => m,
                Err(Error::NotFound(_)) => continue,
                Err(e) => return Err(e),
            };
            let n = count_lines(&messages, matcher);
            if n > 0 {
                grepped.insert(episode, (session, messages, n));
            }
        }
        if lines.is_empty()
            && grepped.is_empty()
            && let Some(w) = workspace
        {
            // No match in it, or no such workspace: the listing tells which.
            self.list_sessions(Some(w), 1, 0)?;
        }
        let total = lines.values().sum::<u64>() + grepped.values().map(|(_, _, n)| n).sum::<u64>();
        // The page: sessions in the library's order, read only from the one it starts in.
        let mut page = Page::new(search, matcher);
        let mut left = lines.len() + grepped.len();
        let order = self.word_order(&lines, &grepped, search.offset + search.limit)?;
        for id in order {
            if left == 0 || page.full() {
                break;
            }
            let key = u128::from_be_bytes(*id?.as_bytes());
            if let Some((session, messages, n)) = grepped.get(&key) {
                left -= 1;
                if page.seen + n <= search.offset as u64 {
                    page.seen += n;
                } else {
                    page.grep(session, messages);
                }
                continue;
            }
            let Some(&n) = lines.get(&key) else {
                continue;
            };
            left -= 1;
            if page.seen + n <= search.offset as u64 {
                page.seen += n;
                continue;
            }
            crate::cancel::checkpoint()?;
            let Some(e) = self.episode_by_key(key)? else {
                continue;
            };
            let Some(source) = self.served_source(grams, &e.session_id)? else {
                continue;
            };
            match self.grep_messages(&source) {
                Ok(messages) => page.grep(&e.session_id, &messages),
                Err(Error::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(page.finish(total))
    }

    /// The sessions of a word search in the library's order: found by walking every
    /// session newest first, or (when they are few against the sessions a walk would pass
    /// to gather `wanted` lines) by reading each one's episode and sorting them.
    fn word_order(
        &self,
        lines: &FxHashMap<u128, u64>,
        grepped: &FxHashMap<u128, (String, Vec<Message>, u64)>,
        wanted: usize,
    ) -> Result<Box<dyn Iterator<Item = Result<NodeId>> + '_>> {
        // Per session, measured on 101,517 sessions: ~0.4 µs a step of the walk, a few µs
        // an episode read.
        const WALK_STEP: f64 = 0.4;
        const EPISODE_READ: f64 = 3.0;
        let found = (lines.len() + grepped.len()).max(1) as f64;
        let sessions = self.graph.counts()?.sessions as f64;
        let walk = WALK_STEP * (sessions / found * wanted as f64).min(sessions);
        if EPISODE_READ * found >= walk {
            return Ok(Box::new(self.graph.session_ids_newest_first()?));
        }
        let mut keyed = Vec::with_capacity(found as usize);
        for &key in lines.keys().chain(grepped.keys()) {
            if let Some(e) = self.episode_by_key(key)? {
                keyed.push((e.end.0, key));
            }
        }
        keyed.sort_unstable_by(|a, b| b.cmp(a));
        Ok(Box::new(keyed.into_iter().map(|(_, key)| {
            Ok(NodeId::from_slice(&key.to_be_bytes()).expect("16 bytes"))
        })))
    }

    /// The episode of a main session, by its id as a number.
    fn episode_by_key(&self, key: u128) -> Result<Option<crate::model::Episode>> {
        let id = NodeId::from_slice(&key.to_be_bytes()).expect("16 bytes");
        Ok(self
            .graph
            .node(id)?
            .and_then(|n| n.episode().cloned())
            .filter(|e| e.agent.is_none()))
    }

    /// The source `session` is served from, of those the index holds for it; `None` when
    /// none is a main session's in the store.
    fn served_source(&self, grams: &GramIndex, session: &str) -> Result<Option<SourceRecord>> {
        let mut records = Vec::new();
        for path in grams.paths_of(session)? {
            records.extend(
                self.graph
                    .source(&path)?
                    .filter(|s| s.session_id == session && is_main(s)),
            );
        }
        Ok(served(records))
    }

    /// The sessions to grep, most recently active first (the library's order), each as
    /// the source it is served from: those the trigram index says can hold what `need`
    /// asks, with those it has not caught up with; every session when it cannot tell.
    fn grep_plan(&self, workspace: Option<&str>, need: &Need) -> Result<Vec<SourceRecord>> {
        let narrowed = match (self.grams, need) {
            (Some(grams), need) if *need != Need::Any => Some(grams),
            _ => None,
        };
        let Some(grams) = narrowed else {
            // Every session, as the library lists them.
            let mut by_session = main_sources(self.graph.sources()?);
            let mut plan = Vec::new();
            let mut any = false;
            for node in self.graph.sessions_newest_first()? {
                let node = node?;
                let Some(e) = node.episode() else { continue };
                if let Some(w) = workspace
                    && !in_workspace(&e.project_path, &e.project, w)
                {
                    continue;
                }
                any = true;
                if let Some(source) = by_session.remove(&e.session_id).and_then(served) {
                    plan.push(source);
                }
            }
            if !any && let Some(w) = workspace {
                return Err(no_workspace(w));
            }
            return Ok(plan);
        };
        let found = grams
            .sessions(&Need::Either(vec![need.clone(), Need::Gram(UNREAD)]))?
            .unwrap_or_default();
        let synced = grams.synced()? == Some(self.graph.sources_generation()?);
        let mut candidates: Vec<SourceRecord> = Vec::new();
        if synced {
            for session in found {
                candidates.extend(self.served_source(grams, &session)?);
            }
        } else {
            // Sessions written since the index last caught up are grepped whatever it
            // says of them.
            let entries = grams.entries()?;
            let mut stale: HashSet<String> = HashSet::new();
            let sources = self.graph.sources()?;
            for s in sources.iter().filter(|s| is_main(s)) {
                if entries.get(&s.path) != Some(&fingerprint(s)) {
                    stale.insert(s.session_id.clone());
                }
            }
            for (session, records) in main_sources(sources) {
                if found.contains(&session) || stale.contains(&session) {
                    candidates.extend(served(records));
                }
            }
        }
        // In the library's order: by last activity, then node id, newest first.
        let mut keyed = Vec::with_capacity(candidates.len());
        for source in candidates {
            let Some(node) = self.graph.node(episode_of(&source))? else {
                continue;
            };
            let Some(e) = node.episode() else { continue };
            if e.agent.is_some() || e.session_id != source.session_id {
                continue;
            }
            if let Some(w) = workspace
                && !in_workspace(&e.project_path, &e.project, w)
            {
                continue;
            }
            keyed.push(((e.end.0, node.id), source));
        }
        if keyed.is_empty()
            && let Some(w) = workspace
        {
            // No match in it, or no such workspace: the listing tells which.
            self.list_sessions(Some(w), 1, 0)?;
        }
        keyed.sort_by(|a, b| {
            b.0.0
                .cmp(&a.0.0)
                .then_with(|| b.0.1.as_bytes().cmp(a.0.1.as_bytes()))
        });
        Ok(keyed.into_iter().map(|(_, s)| s).collect())
    }

    /// A session's messages as `SearchSessions` greps them: as [`Library::session`]
    /// serves them, their text redacted.
    fn grep_messages(&self, source: &SourceRecord) -> Result<Vec<Message>> {
        self.authors.load(self.graph)?;
        let no_labels = HashMap::new();
        let history = self.authors.history(&no_labels);
        self.served_texts(source, &history)
    }
}

/// A page of matches being gathered: `seen` counts every match before it and in it.
struct Page<'a> {
    search: &'a SessionSearch,
    matcher: &'a regex::Regex,
    seen: u64,
    out: Vec<SearchMatch>,
    bytes: usize,
}

impl<'a> Page<'a> {
    fn new(search: &'a SessionSearch, matcher: &'a regex::Regex) -> Page<'a> {
        Page {
            search,
            matcher,
            seen: 0,
            out: Vec::new(),
            bytes: 0,
        }
    }

    fn full(&self) -> bool {
        self.out.len() >= self.search.limit || self.bytes >= MAX_MATCH_PAGE_BYTES
    }

    /// Counts the matching lines of `session`'s `messages`, keeping those on the page.
    fn grep(&mut self, session: &str, messages: &[Message]) {
        let search = self.search;
        for m in messages {
            let lines: Vec<&str> = m.text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                if !self.matcher.is_match(line) {
                    continue;
                }
                self.seen += 1;
                if self.seen as usize <= search.offset || self.full() {
                    continue;
                }
                let from = i.saturating_sub(search.context);
                let to = (i + search.context + 1).min(lines.len());
                let at = self.matcher.find(line).map_or(0, |m| m.start());
                let found = SearchMatch {
                    session_id: session.to_owned(),
                    message_uuid: m.uuid.clone().unwrap_or_default(),
                    message_type: m.role.as_str().to_owned(),
                    line: around(line, at),
                    context: (from..to)
                        .filter(|&j| j != i)
                        .map(|j| around(lines[j], 0))
                        .collect(),
                    line_number: u32::try_from(i + 1).unwrap_or(u32::MAX),
                };
                self.bytes +=
                    found.line.len() + found.context.iter().map(String::len).sum::<usize>();
                self.out.push(found);
            }
        }
    }

    fn finish(self, total: u64) -> MatchPage {
        MatchPage {
            has_more: (self.search.offset + self.out.len()) < total as usize,
            matches: self.out,
            total,
            limit: self.search.limit,
            offset: self.search.offset,
        }
    }
}

/// The lines of `messages` that `matcher` matches.
fn count_lines(messages: &[Message], matcher: &regex::Regex) -> u64 {
    messages
        .iter()
        .flat_map(|m| m.text.lines())
        .filter(|line| matcher.is_match(line))
        .count() as u64
}

/// A main session's own transcript (not a subagent's), with an episode.
fn is_main(source: &SourceRecord) -> bool {
    source.episode.is_some() && !source.agent
}

/// A session's episode id, as a number (as the index keeps it).
fn episode_key(session: &str) -> u128 {
    u128::from_be_bytes(*NodeId::episode(session).as_bytes())
}

fn episode_of(source: &SourceRecord) -> NodeId {
    source
        .episode
        .unwrap_or_else(|| NodeId::episode(&source.session_id))
}

/// Main sources by session id.
fn main_sources(sources: Vec<SourceRecord>) -> HashMap<String, Vec<SourceRecord>> {
    let mut by_session: HashMap<String, Vec<SourceRecord>> = HashMap::new();
    for s in sources.into_iter().filter(is_main) {
        by_session.entry(s.session_id.clone()).or_default().push(s);
    }
    by_session
}

/// Of one session's sources, the one it is served from: the one still on disk, else the
/// latest (as [`Library::session`] picks).
fn served(records: Vec<SourceRecord>) -> Option<SourceRecord> {
    records.into_iter().min_by(super::session::served_first)
}

fn no_workspace(w: &str) -> Error {
    Error::NotFound(format!(
        "no workspace {w}: no session worked in a project of that path or name",
        w = crate::error::quote(w)
    ))
}

/// `line` whole, or the [`MAX_MATCH_LINE_BYTES`] around byte `at`, cut at char
/// boundaries and marked `…`.
fn around(line: &str, at: usize) -> String {
    if line.len() <= MAX_MATCH_LINE_BYTES {
        return line.to_owned();
    }
    let half = MAX_MATCH_LINE_BYTES / 2;
    let mut start = at.saturating_sub(half);
    while !line.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + MAX_MATCH_LINE_BYTES).min(line.len());
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = String::with_capacity(end - start + 8);
    if start > 0 {
        out.push('…');
    }
    out.push_str(&line[start..end]);
    if end < line.len() {
        out.push('…');
    }
    out
}
/// What is wrong with a pattern, without the pattern: the regex crate's message repeats it
/// whole (with a caret under the fault), which an error must not.
fn pattern_error(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(message) => message
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("error: "))
            .unwrap_or("not a valid regular expression")
            .to_owned(),
        regex::Error::CompiledTooBig(limit) => {
            format!("it compiles to more than {limit} bytes; make it simpler")
        }
        _ => "not a valid regular expression".to_owned(),
    }
}
