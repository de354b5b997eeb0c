//! The trigram index's tests.

use super::*;

fn grams(text: &str) -> HashSet<u64> {
    let mut out = Vec::new();
    grams_of(text, &mut out);
    out.into_iter().collect()
}

/// Whether text holding `grams` can satisfy `need`.
fn holds(need: &Need, grams: &HashSet<u64>) -> bool {
    match need {
        Need::Any => true,
        Need::Gram(g) => grams.contains(g),
        Need::All(parts) => parts.iter().all(|p| holds(p, grams)),
        Need::Either(parts) => parts.iter().any(|p| holds(p, grams)),
    }
}

#[test]
fn a_word_needs_its_trigrams_in_any_case() {
    let need = need_of("Recipe", false);
    assert!(holds(&need, &grams("a RECIPE for bread")));
    assert!(holds(&need, &grams("recipes")));
    assert!(!holds(&need, &grams("recip e")));
    assert_eq!(need_of("ab", false), Need::Any);
}

#[test]
fn unicode_case_variants_key_the_same_trigram() {
    // The Kelvin sign and long s fold with k and s, as the regex crate's (?i) does.
    assert!(holds(&need_of("kiss", false), &grams("\u{212A}i\u{17F}s")));
    assert!(holds(&need_of("ÉTÉ", false), &grams("un été chaud")));
}

#[test]
fn regexes_need_their_literal_parts() {
    let need = need_of(r"fn\s+parse_(line|row)s?", true);
    assert!(holds(&need, &grams("fn  parse_rows(")));
    assert!(holds(&need, &grams("fn parse_line")));
    assert!(!holds(&need, &grams("fn parse_col")));
    // (?i) classes of one letter's cases still make literal runs.
    let need = need_of("(?i)error", true);
    assert!(holds(&need, &grams("ERROR")));
    assert!(!holds(&need, &grams("erro")));
    // Nothing to key on: every session may match.
    assert_eq!(need_of(r"\d+", true), Need::Any);
    assert_eq!(need_of("a|bcd", true), Need::Any);
    assert_eq!(need_of("(abc)?", true), Need::Any);
    assert_eq!(need_of("(", true), Need::Any);
}

#[test]
fn the_index_narrows_to_the_sessions_that_hold_every_trigram() {
    let dir = tempfile::tempdir().unwrap();
    let index = GramIndex::open(dir.path()).unwrap();
    assert_eq!(index.synced().unwrap(), None);
    let doc = |path: &str, session: &str, text: &str| GramDoc {
        path: path.into(),
        session: session.into(),
        episode: u128::from(session.as_bytes()[0]),
        fingerprint: text.len() as u64,
        always: Vec::new(),
        messages: text
            .split('|')
            .map(|message| GramMessage::of(None, message.to_owned()))
            .collect(),
    };
    index
        .put(&[
            doc("/a.jsonl", "a", "the recipe for bread"),
            doc("/b.jsonl", "b", "a regex parser"),
            doc("/b2.jsonl", "b", "moved copy"),
        ])
        .unwrap();
    index.commit(Some(7)).unwrap();
    assert_eq!(index.synced().unwrap(), Some(7));
    let found = |p: &str, regex| index.sessions(&need_of(p, regex)).unwrap();
    assert_eq!(
        found("RECIPE", false),
        Some(HashSet::from(["a".to_owned()]))
    );
    assert_eq!(
        found("recipe|parser", true),
        Some(HashSet::from(["a".to_owned(), "b".to_owned()]))
    );
    assert_eq!(found("nowhere", false), Some(HashSet::new()));
    // Every trigram in the session, in any of its messages: the grep decides.
    index
        .put(&[doc("/c.jsonl", "c", "a loaf of bre|ad, then read")])
        .unwrap();
    index.commit(Some(7)).unwrap();
    assert_eq!(
        found("bread", false),
        Some(HashSet::from(["a".to_owned(), "c".to_owned()]))
    );
    assert_eq!(found(".*", true), None);
    let mut paths = index.paths_of("b").unwrap();
    paths.sort();
    assert_eq!(paths, ["/b.jsonl", "/b2.jsonl"]);

    // Replaced and removed entries are gone from what it answers.
    index.put(&[doc("/a.jsonl", "a", "no bread")]).unwrap();
    index.remove(&["/b.jsonl".into()]);
    index.commit(Some(8)).unwrap();
    assert_eq!(found("recipe", false), Some(HashSet::new()));
    assert_eq!(found("parser", false), Some(HashSet::new()));
    let entries = index.entries().unwrap();
    assert_eq!(
        entries,
        HashMap::from([
            ("/a.jsonl".to_owned(), 8),
            ("/b2.jsonl".to_owned(), 10),
            ("/c.jsonl".to_owned(), 27)
        ])
    );
    drop(index);
    // What was committed is there after a reopen; a commit not known to hold every
    // session says so.
    let index = GramIndex::open(dir.path()).unwrap();
    assert_eq!(index.synced().unwrap(), Some(8));
    index.commit(None).unwrap();
    assert_eq!(index.synced().unwrap(), None);
    assert_eq!(index.all_sessions().unwrap().len(), 3);
}

#[test]
fn word_lines_count_each_line_holding_the_word_once() {
    let dir = tempfile::tempdir().unwrap();
    let index = GramIndex::open(dir.path()).unwrap();
    let doc = |path: &str, session: &str, messages: &[(u128, &str)]| GramDoc {
        path: path.into(),
        session: session.into(),
        episode: u128::from(session.as_bytes()[0]),
        fingerprint: 1,
        always: Vec::new(),
        messages: messages
            .iter()
            .map(|(uuid, text)| GramMessage::of(Some(*uuid), (*text).to_owned()))
            .collect(),
    };
    index
        .put(&[
            doc(
                "/a.jsonl",
                "a",
                &[
                    (1, "Recipe recipes\nno match here\nthe RECIPE_BOOK"),
                    (2, "pre-recipe, \u{212A}elvin"),
                ],
            ),
            doc("/b.jsonl", "b", &[(3, "a recipe\r\nrecipe again")]),
        ])
        .unwrap();
    index.commit(Some(1)).unwrap();
    // A second segment.
    index
        .put(&[doc("/c.jsonl", "c", &[(4, "one recipe")])])
        .unwrap();
    index.commit(Some(2)).unwrap();
    let lines = |word: &str, case_sensitive| {
        let mut found: Vec<(String, u64, Vec<u128>)> = index
            .word_lines(word, case_sensitive, true)
            .unwrap()
            .into_iter()
            .map(|mut w| {
                w.uuids.sort_unstable();
                let session = char::from(u8::try_from(w.episode).unwrap()).to_string();
                (session, w.lines, w.uuids)
            })
            .collect();
        found.sort();
        found
    };
    assert_eq!(
        lines("recipe", false),
        [
            ("a".to_owned(), 3, vec![1, 2]),
            ("b".to_owned(), 2, vec![3]),
            ("c".to_owned(), 1, vec![4]),
        ]
    );
    assert_eq!(
        lines("Recipe", true),
        [("a".to_owned(), 1, vec![1])],
        "as written when case counts"
    );
    assert_eq!(lines("kelvin", false), [("a".to_owned(), 1, vec![2])]);
    assert_eq!(lines("kelvin", true), []);
    assert_eq!(lines("cipe_bo", false), [("a".to_owned(), 1, vec![1])]);
    assert!(lines("nowhere", false).is_empty());

    // Replaced and removed entries count no more.
    index.put(&[doc("/a.jsonl", "a", &[(1, "bread")])]).unwrap();
    index.remove(&["/c.jsonl".into()]);
    index.commit(Some(3)).unwrap();
    assert_eq!(lines("recipe", false), [("b".to_owned(), 2, vec![3])]);
    assert!(index.shared_sessions().unwrap().is_empty());
    index.put(&[doc("/b2.jsonl", "b", &[(5, "copy")])]).unwrap();
    index.commit(Some(4)).unwrap();
    assert_eq!(
        *index.shared_sessions().unwrap(),
        Shared::from_iter([(u128::from(b'b'), "b".to_owned())])
    );
}

#[test]
fn a_word_too_long_to_keep_marks_its_message_inexact() {
    let long = "x".repeat(MAX_WORD_BYTES + 1);
    let m = GramMessage::of(None, format!("short words\n{long}"));
    assert!(m.grams.contains(&INEXACT));
    assert_eq!(
        m.words(),
        [("short".to_owned(), 0), ("words".to_owned(), 0)]
    );
    let m = GramMessage::of(None, "b a b\n\nc, a".to_owned());
    assert_eq!(
        m.words(),
        [
            ("a".to_owned(), 0),
            ("b".to_owned(), 0),
            ("a".to_owned(), 2),
            ("c".to_owned(), 2)
        ],
        "each line's words once, in order"
    );
    assert!(
        !GramMessage::of(None, "short words".to_owned())
            .grams
            .contains(&INEXACT)
    );
    assert!(is_word_pattern("été_1"));
    assert!(!is_word_pattern("ab"));
    assert!(!is_word_pattern("two words"));
}

#[test]
fn the_vocabulary_finds_every_word_holding_a_needle_once() {
    let dir = tempfile::tempdir().unwrap();
    let index = GramIndex::open(dir.path()).unwrap();
    index
        .put(&[GramDoc {
            path: "/a.jsonl".into(),
            session: "a".into(),
            episode: 1,
            fingerprint: 1,
            always: Vec::new(),
            messages: vec![GramMessage::of(
                None,
                "Banana bandana BAND zebra\nÉtude étude".to_owned(),
            )],
        }])
        .unwrap();
    index.commit(Some(1)).unwrap();
    let searcher = index.reader.searcher();
    let segment = &searcher.segment_readers()[0];
    let inverted = segment.inverted_index(index.fields.words).unwrap();
    let vocabulary = Vocabulary::read(inverted.terms()).unwrap();
    let found = |needle: &str, folded| -> Vec<String> {
        let needle: String = if folded {
            needle.chars().map(fold).collect()
        } else {
            needle.to_owned()
        };
        vocabulary
            .holding(&needle, folded)
            .into_iter()
            .map(|w| String::from_utf8(w.to_vec()).unwrap())
            .collect()
    };
    assert_eq!(found("ban", true), ["BAND", "Banana", "bandana"]);
    assert_eq!(found("ana", true), ["Banana", "bandana"], "each word once");
    assert_eq!(found("Ban", false), ["Banana"]);
    assert_eq!(found("zebra", true), ["zebra"], "the last word");
    assert_eq!(found("étude", true), ["Étude", "étude"]);
    assert!(found("nowhere", true).is_empty());
}
