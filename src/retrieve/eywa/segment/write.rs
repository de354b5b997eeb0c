//! Writing a segment: handoffs laid out in the sections of the format the parent module
//! describes, strings pooled once each.

use std::collections::BTreeMap;

use super::{DOC_STRINGS, HEADER_LEN, MAGIC, NONE, S, SECTIONS, day_of};
use crate::model::Handoff;

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
            .flat_map(|h| super::super::length(h.duration_minutes).to_le_bytes())
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
            Some(h.user.as_str()),
            Some(h.machine.as_str()),
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
    recent.sort_by(|&a, &b| super::super::newest_first(docs[a as usize], docs[b as usize]));
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
