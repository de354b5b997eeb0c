//! `get` against scores computed by hand from seed 000's formula.

use super::*;
use crate::model::{NodeId, Timestamp};

fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 3, 1).unwrap()
}

fn h(id: &str, days_ago: i64, projects: &[&str], keywords: &[&str]) -> Handoff {
    let date = today() - chrono::Duration::days(days_ago);
    Handoff {
        session_id: id.to_owned(),
        short_id: id.chars().take(8).collect(),
        episode: NodeId::episode(id),
        date,
        started_at: Timestamp::parse(&date.to_string()).unwrap(),
        duration_minutes: None,
        model: None,
        headline: format!("session {id}"),
        projects: projects
            .iter()
            .map(std::string::ToString::to_string)
            .collect(),
        keywords: keywords
            .iter()
            .map(std::string::ToString::to_string)
            .collect(),
        substance: 1,
        cwd: String::new(),
        sections: Default::default(),
        user: "ana".into(),
        machine: "laptop".into(),
    }
}

fn ranked(index: &HandoffIndex, query: &str, options: &GetOptions) -> Vec<(String, f64)> {
    index
        .get(query, options, today())
        .hits
        .into_iter()
        .map(|s| (s.handoff.session_id.clone(), s.score.unwrap_or(f64::NAN)))
        .collect()
}

fn assert_close(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-9, "got {got}, want {want}");
}

fn all() -> GetOptions {
    GetOptions {
        limit: 100,
        ..GetOptions::default()
    }
}

#[test]
fn tokens_follow_the_python_word_lists() {
    assert_eq!(
        query_tokens("Let's continue work on the API for auth-service in UI!"),
        ["api", "auth-service", "ui"]
    );
    assert_eq!(query_tokens("3d ml x ab go"), ["3d", "ml"]);
    assert_eq!(query_tokens("Show me what you know"), Vec::<String>::new());
    assert_eq!(
        query_tokens("Sled_Tree tantivy"),
        ["sled", "tree", "tantivy"]
    );
}

#[test]
fn keyword_idf_with_substring_match() {
    // N = 4. "graph" equals keyword `graph` (2 sessions: idf ln 2) and is contained in
    // `graph-walk` (1 session: idf ln 4).
    let mut zero = h("d", 0, &["fourth"], &["graph"]);
    zero.substance = 0;
    let index = HandoffIndex::new(vec![
        h("a", 0, &["eywa"], &["graph"]),
        h("b", 3, &["other"], &["graph-walk"]),
        h("c", 0, &["third"], &["tantivy"]),
        zero,
    ]);
    let got = ranked(&index, "graph", &all());
    // a: 2·ln2 × (1 + 1/√1); b: 2·ln4 × (1 + 1/√4). d has substance 0: never returned.
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].0, "b");
    assert_close(got[0].1, 2.0 * 4f64.ln() * 1.5);
    assert_eq!(got[1].0, "a");
    assert_close(got[1].1, 2.0 * 2f64.ln() * 2.0);
}

#[test]
fn a_project_match_weighs_three_a_keyword_match_two() {
    let index = HandoffIndex::new(vec![
        h("p", 0, &["indexer"], &["misc"]),
        h("k", 0, &["elsewhere"], &["indexer"]),
        h("x", 0, &["x1"], &["y1"]),
        h("z", 0, &["x2"], &["y2"]),
    ]);
    let got = ranked(&index, "indexer", &all());
    assert_eq!(got[0].0, "p");
    assert_close(got[0].1, 3.0 * 4f64.ln() * 2.0);
    assert_eq!(got[1].0, "k");
    assert_close(got[1].1, 2.0 * 4f64.ln() * 2.0);
    // A project matches when its name contains the token.
    let got = ranked(&index, "index", &all());
    assert_eq!(got[0].0, "p");
    assert_close(got[0].1, 3.0 * 4f64.ln() * 2.0);
}

#[test]
fn recency_inside_and_beyond_days_back() {
    let index = HandoffIndex::new(vec![
        h("edge", 13, &["alpha"], &[]),   // age 14 = days_back: inside
        h("beyond", 20, &["alpha"], &[]), // age 21: one half-life past
        h("far", 34, &["alpha"], &[]),    // age 35: three half-lives past
        h("other", 0, &["beta"], &[]),
    ]);
    let idf = (4f64 / 3f64).ln();
    let got = ranked(&index, "alpha", &all());
    let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["edge", "beyond", "far"]);
    assert_close(got[0].1, 3.0 * idf * (1.0 + 1.0 / 14f64.sqrt()));
    assert_close(got[1].1, 3.0 * idf * 0.5);
    assert_close(got[2].1, 3.0 * idf * 0.125);
    // A wider window brings them inside: × (1 + 1/√age).
    let wide = GetOptions {
        days_back: 60,
        ..all()
    };
    let got = ranked(&index, "alpha", &wide);
    assert_close(got[2].1, 3.0 * idf * (1.0 + 1.0 / 35f64.sqrt()));
}

#[test]
fn duration_scales_the_score() {
    let mut long = h("long", 0, &["gamma"], &[]);
    long.duration_minutes = Some(10);
    let mut zero = h("zero", 0, &["gamma"], &[]);
    zero.duration_minutes = Some(0);
    let index = HandoffIndex::new(vec![
        long,
        zero,
        h("o1", 0, &["o"], &[]),
        h("o2", 0, &["o"], &[]),
    ]);
    let got = ranked(&index, "gamma", &all());
    let base = 3.0 * 2f64.ln() * 2.0;
    assert_eq!(got[0].0, "long");
    assert_close(got[0].1, base * (1.0 + 0.1 * 11f64.ln()));
    assert_close(got[1].1, base);
}

#[test]
fn tokens_add_up_and_zero_idf_still_counts_as_a_hit() {
    // "shared" is every session's project: IDF ln(2/2) = 0, yet both are scored hits, so
    // the recent fallback does not kick in.
    let index = HandoffIndex::new(vec![
        h("s1", 1, &["shared"], &["parser"]),
        h("s2", 0, &["shared"], &["lexer"]),
    ]);
    let result = index.get("shared", &all(), today());
    assert!(!result.fallback_recent);
    assert_eq!(result.hits.len(), 2);
    assert!(result.hits.iter().all(|s| s.score == Some(0.0)));
    // Equal scores: newest first.
    assert_eq!(result.hits[0].handoff.session_id, "s2");
    let got = ranked(&index, "shared parser", &all());
    assert_eq!(got[0].0, "s1");
    assert_close(got[0].1, 2.0 * 2f64.ln() * (1.0 + 1.0 / 2f64.sqrt()));
}

#[test]
fn empty_or_unmatched_queries_return_the_most_recent_inside_days_back() {
    let mut nothing = h("nothing", 0, &["p"], &[]);
    nothing.substance = 0;
    let index = HandoffIndex::new(vec![
        h("d14", 14, &["p"], &[]), // age 14 (no +1 here): inside
        h("d15", 15, &["p"], &[]), // outside
        h("d2", 2, &["p"], &[]),
        h("d5", 5, &["p"], &[]),
        nothing,
    ]);
    for query in ["", "the what how", "unmatched-term"] {
        let result = index.get(query, &all(), today());
        assert!(result.fallback_recent, "{query}");
        let ids: Vec<&str> = result
            .hits
            .iter()
            .map(|s| s.handoff.session_id.as_str())
            .collect();
        assert_eq!(ids, ["d2", "d5", "d14"], "{query}");
        assert!(result.hits.iter().all(|s| s.score.is_none()));
    }
    let three = index.get("", &GetOptions::default(), today());
    assert_eq!(three.hits.len(), 3);
    let one = GetOptions {
        limit: 1,
        ..GetOptions::default()
    };
    assert_eq!(
        index.get("", &one, today()).hits[0].handoff.session_id,
        "d2"
    );
}

#[test]
fn project_filter_applies_to_hits_and_fallback() {
    let index = HandoffIndex::new(vec![
        h("a", 0, &["Eywa"], &["graph"]),
        h("b", 0, &["other"], &["graph"]),
    ]);
    let only = GetOptions {
        projects: vec!["eywa".into()],
        ..all()
    };
    let got = ranked(&index, "graph", &only);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, "a");
    let recent = index.get("", &only, today());
    assert_eq!(recent.hits.len(), 1);
}

#[test]
fn author_filter_applies_to_hits_fallback_and_the_window_count() {
    let mut bo = h("b", 0, &["shop"], &["graph"]);
    bo.user = "bo".into();
    bo.machine = "desk".into();
    let mut old_bo = h("c", 40, &["shop"], &["graph"]);
    old_bo.user = "bo".into();
    let index = HandoffIndex::new(vec![h("a", 0, &["shop"], &["graph"]), bo, old_bo]);
    let by = |users: &[&str], machines: &[&str]| GetOptions {
        authors: crate::model::Attribution {
            users: users.iter().map(|s| (*s).to_owned()).collect(),
            machines: machines.iter().map(|s| (*s).to_owned()).collect(),
        },
        days_back: 14,
        ..all()
    };
    let ids = |got: Vec<(String, f64)>| got.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
    assert_eq!(ids(ranked(&index, "graph", &by(&[], &[]))).len(), 3);
    assert_eq!(ids(ranked(&index, "graph", &by(&["BO"], &["desk"]))), ["b"]);
    assert_eq!(
        ids(ranked(&index, "graph", &by(&[], &["laptop"]))),
        ["a", "c"]
    );
    // The fallback (no query), with each handoff's user and machine as written.
    let recent = index.get("", &by(&["bo"], &[]), today());
    let who: Vec<(&str, &str, &str)> = recent
        .hits
        .iter()
        .map(|s| {
            (
                s.handoff.session_id.as_str(),
                s.handoff.user.as_str(),
                s.handoff.machine.as_str(),
            )
        })
        .collect();
    assert_eq!(who, [("b", "bo", "desk")]);
    // Nothing of cy's: the handoffs beyond the window are counted for cy only.
    let none = index.get("", &by(&["cy"], &[]), today());
    assert!(none.hits.is_empty());
    assert_eq!(none.older, 0);
    assert_eq!(
        index.get("zzz", &by(&["bo"], &["laptop"]), today()).older,
        1
    );
}

#[test]
fn project_spellings_keep_their_own_idf() {
    // Eywa matches `token in project.lower()` per by_project key: "Eywa" and "eywa" are
    // two keys with a list of one each, so each scores 3·ln(4/1).
    let index = HandoffIndex::new(vec![
        h("upper", 0, &["Eywa"], &[]),
        h("lower", 0, &["eywa"], &[]),
        h("x", 0, &["x"], &[]),
        h("y", 0, &["y"], &[]),
    ]);
    let got = ranked(&index, "EYWA", &all());
    assert_eq!(got.len(), 2);
    for (_, score) in got {
        assert_close(score, 3.0 * 4f64.ln() * 2.0);
    }
}

#[test]
fn a_key_matches_once_per_token_however_often_it_holds_it() {
    let index = HandoffIndex::new(vec![
        h("a", 0, &["p"], &["tok-tok"]),
        h("b", 0, &["q"], &["other"]),
    ]);
    let got = ranked(&index, "tok", &all());
    assert_close(got[0].1, 2.0 * 2f64.ln() * 2.0);
}

#[test]
fn the_limit_keeps_the_best_in_order() {
    let handoffs: Vec<Handoff> = (0..50)
        .map(|i| h(&format!("s{i:02}"), i, &["proj"], &[]))
        .chain([h("other", 0, &["z"], &[])])
        .collect();
    let index = HandoffIndex::new(handoffs);
    let top = GetOptions {
        limit: 5,
        days_back: 100,
        ..GetOptions::default()
    };
    let got = ranked(&index, "proj", &top);
    let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["s00", "s01", "s02", "s03", "s04"]);
}

/// A small deterministic generator for the equivalence tests.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn random_handoff(rng: &mut Rng, id: usize) -> Handoff {
    let projects = ["Eywa", "eywa", "shop", "shop-api", "ledger", "graph-db"];
    let words = [
        "graph",
        "graph-walk",
        "sled",
        "tantivy",
        "api",
        "auth",
        "auth-service",
        "ui",
        "parser",
        "lexer",
        "emoji",
        "kw1",
        "kw12",
        "kw123",
    ];
    let mut handoff = h(
        &format!("s{id:04}"),
        rng.below(60) as i64,
        &[projects[rng.below(projects.len() as u64) as usize]],
        &[],
    );
    for _ in 0..rng.below(5) {
        handoff
            .keywords
            .push(words[rng.below(words.len() as u64) as usize].to_owned());
    }
    if rng.below(3) == 0 {
        handoff
            .projects
            .push(projects[rng.below(projects.len() as u64) as usize].to_owned());
    }
    handoff.substance = rng.below(3) as u8;
    handoff.duration_minutes = [None, Some(0), Some(5), Some(90)][rng.below(4) as usize];
    handoff
}

const QUERIES: [&str; 9] = [
    "graph",
    "eywa graph",
    "auth ui",
    "kw1",
    "shop",
    "",
    "nothing-matches",
    "SLED tantivy lexer",
    "api",
];

fn same_results(a: &HandoffIndex, b: &HandoffIndex, context: &str) {
    assert_eq!(a.len(), b.len(), "{context}: sizes");
    for query in QUERIES {
        for options in [
            all(),
            GetOptions::default(),
            GetOptions {
                projects: vec!["EYWA".into(), "ledger".into()],
                ..all()
            },
            GetOptions {
                days_back: 3,
                limit: 7,
                ..GetOptions::default()
            },
        ] {
            let (x, y) = (
                a.get(query, &options, today()),
                b.get(query, &options, today()),
            );
            assert_eq!(x, y, "{context}: {query:?} {options:?}");
        }
    }
}

/// A base with deltas on top ranks exactly as one index of the same handoffs, whichever
/// sessions changed, however many times, and across a rebuilt base.
#[test]
fn a_delta_on_a_base_ranks_as_one_index() {
    let mut rng = Rng(7);
    let mut current: Vec<Handoff> = (0..300).map(|i| random_handoff(&mut rng, i)).collect();
    let mut index = HandoffIndex::build(&current, 1);
    let mut saw_base = false;
    for round in 0..40u64 {
        let mut changed = Vec::new();
        for _ in 0..=rng.below(80) {
            let id = rng.below(400) as usize;
            let fresh = random_handoff(&mut rng, id);
            match current
                .iter_mut()
                .find(|h| h.session_id == fresh.session_id)
            {
                Some(old) => *old = fresh.clone(),
                None => current.push(fresh.clone()),
            }
            changed.push(fresh);
        }
        let (next, rebuilt) = index.with_changes_within(&changed, round + 2, 150);
        saw_base |= rebuilt == Rebuilt::Base;
        assert_eq!(next.generation(), round + 2);
        same_results(
            &next,
            &HandoffIndex::new(current.clone()),
            &format!("round {round}"),
        );
        // Bytes written and read back are the same index.
        let reread = HandoffIndex::from_segments(
            Segment::open(Box::new(next.base().bytes().to_vec()))
                .unwrap()
                .into(),
            Segment::open(Box::new(next.delta().bytes().to_vec())).unwrap(),
        );
        same_results(&next, &reread, &format!("round {round}, read back"));
        index = next;
    }
    assert!(saw_base, "the delta never grew into a new base");
}

#[test]
fn a_segment_keeps_every_field_get_prints() {
    let mut one = h("keeps", 3, &["Eywa", "eywa-tools"], &["graph", "sled"]);
    one.model = Some("claude-opus-4-6".into());
    one.cwd = "/w/eywa".into();
    one.duration_minutes = Some(42);
    one.substance = 2;
    one.sections.what_happened = vec!["dropped: the body lives in the store".into()];
    let index = HandoffIndex::new(vec![one.clone(), h("other", 1, &["x"], &[])]);
    let got = index.get("sled", &all(), today());
    one.sections = Default::default();
    assert_eq!(got.hits[0].handoff, one);
}

/// Damaged bytes are refused or read without a panic, never out of bounds.
#[test]
fn damaged_segments_are_refused_or_read_safely() {
    let mut rng = Rng(11);
    let handoffs: Vec<Handoff> = (0..40).map(|i| random_handoff(&mut rng, i)).collect();
    let refs: Vec<&Handoff> = handoffs.iter().collect();
    let bytes = build_segment(&refs, &["s0001"], 3, 2);
    assert!(Segment::open(Box::new(bytes.clone())).is_ok());
    for cut in [0, 7, 8, 100, bytes.len() / 2, bytes.len() - 1] {
        assert!(
            Segment::open(Box::new(bytes[..cut].to_vec())).is_err(),
            "cut at {cut}"
        );
    }
    let mut opened = 0;
    for trial in 0..3_000 {
        let mut damaged = bytes.clone();
        for _ in 0..=(trial % 4) {
            let at = rng.below(damaged.len() as u64) as usize;
            damaged[at] ^= 1 << rng.below(8);
        }
        if let Ok(segment) = Segment::open(Box::new(damaged)) {
            opened += 1;
            let index = HandoffIndex::from_segments(Segment::empty().into(), segment);
            for query in QUERIES {
                let _ = index.get(query, &all(), today());
            }
            let _ = index.handoffs().count();
        }
    }
    // Most single-bit flips land in data (dates, scores), not in structure.
    assert!(opened > 100, "{opened}");
}

/// Every doc scored by several keys, on a thread whose buffers are fresh: the buffer of
/// touched docs must hold a write past the last distinct doc.
#[test]
fn every_doc_touched_many_times() {
    std::thread::spawn(|| {
        let index = HandoffIndex::new(vec![
            h("a", 0, &["aa-one"], &["aa-x", "aa-y"]),
            h("b", 1, &["aa-two"], &["aa-x", "aa-y"]),
        ]);
        let got = ranked(&index, "aa aa-x", &all());
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, "a");
    })
    .join()
    .unwrap();
}
