//! `SearchSessions` through its trigram index gives what a grep of every session as
//! served gives: the same matches, in the same order, with the same totals, for words and
//! regexes, in either case, in a workspace, and while the index is behind the store.

use std::collections::BTreeSet;

use eywa::engine::{Engine, EngineConfig, SessionSearch};

use crate::support::fixture::{ClaudeHome, append, days_ago, session_lines};

/// A match as compared: session, message, line number and line.
type Hit = (String, String, u32, String);

/// Every session's messages as `Engine::session` serves them: what a grep reads.
struct Served(Vec<(String, Vec<(String, String)>)>);

impl Served {
    fn of(engine: &Engine, workspace: Option<&str>) -> Served {
        let mut sessions = Vec::new();
        let mut offset = 0;
        loop {
            let page = engine.list_sessions(workspace, 1_000, offset).unwrap();
            offset += page.sessions.len();
            for s in &page.sessions {
                let Ok(session) = engine.session(&s.session_id) else {
                    continue;
                };
                let messages = session
                    .messages
                    .iter()
                    .map(|m| (m.uuid.clone().unwrap_or_default(), m.text.clone()))
                    .collect();
                sessions.push((s.session_id.clone(), messages));
            }
            if !page.has_more || page.sessions.is_empty() {
                break;
            }
        }
        Served(sessions)
    }

    /// Every line that matches, in order: the scan `SearchSessions` answered with before
    /// it had an index.
    fn grep(&self, search: &SessionSearch) -> Vec<Hit> {
        let source = if search.regex {
            search.pattern.clone()
        } else {
            regex::escape(&search.pattern)
        };
        let matcher = regex::RegexBuilder::new(&source)
            .case_insensitive(!search.case_sensitive)
            .build()
            .unwrap();
        let mut hits = Vec::new();
        for (session, messages) in &self.0 {
            for (uuid, text) in messages {
                for (i, line) in text.lines().enumerate() {
                    if matcher.is_match(line) {
                        hits.push((session.clone(), uuid.clone(), i as u32 + 1, cut(line)));
                    }
                }
            }
        }
        hits
    }

    /// `n` distinct words of three or more letters, spread over their sorted order.
    fn words(&self, n: usize) -> Vec<String> {
        let mut words = BTreeSet::new();
        for (_, messages) in &self.0 {
            for (_, text) in messages {
                for word in text.split(|c: char| !c.is_alphanumeric()) {
                    if word.chars().count() >= 3 {
                        words.insert(word.to_owned());
                    }
                }
            }
        }
        let step = (words.len() / n.max(1)).max(1);
        words.into_iter().step_by(step).take(n).collect()
    }
}

/// A line as a page shows it; long lines are cut around the match, so only their start
/// is compared.
fn cut(line: &str) -> String {
    line.chars().take(200).collect()
}

fn search(pattern: &str, regex: bool) -> SessionSearch {
    SessionSearch {
        pattern: pattern.into(),
        regex,
        case_sensitive: false,
        workspace: None,
        context: 0,
        limit: 1_000,
        offset: 0,
    }
}

/// Asks the engine for every page of `search` and checks them against the grep.
fn check(engine: &Engine, served: &Served, search: &SessionSearch) {
    let expected = served.grep(search);
    let page = engine.search_sessions(search).unwrap();
    let got: Vec<Hit> = page
        .matches
        .iter()
        .map(|m| {
            (
                m.session_id.clone(),
                m.message_uuid.clone(),
                m.line_number,
                cut(m.line.trim_start_matches('…')),
            )
        })
        .collect();
    assert_eq!(
        page.total as usize,
        expected.len(),
        "total for {:?} (regex {}, case {})",
        search.pattern,
        search.regex,
        search.case_sensitive
    );
    let shown = got.len();
    assert_eq!(
        got.iter().map(|h| (&h.0, &h.1, h.2)).collect::<Vec<_>>(),
        expected[..shown]
            .iter()
            .map(|h| (&h.0, &h.1, h.2))
            .collect::<Vec<_>>(),
        "matches for {:?}",
        search.pattern
    );
    for (g, e) in got.iter().zip(&expected) {
        // A long line is shown around its match: the start may differ.
        if e.3.chars().count() < 200 && !g.3.is_empty() {
            assert_eq!(g.3, e.3, "line for {:?}", search.pattern);
        }
    }
}

/// Sessions that exercise what the index keys on: secrets (redacted before indexing),
/// case variants outside ASCII, a resumed session replaying its predecessor's lines, a
/// copy in another workspace, and one file rewritten after it was read.
fn fixtures(home: &ClaudeHome) -> std::path::PathBuf {
    let start = days_ago(4);
    home.session(
        "5e000000-0000-4000-8000-000000000001",
        "/w/keys",
        start,
        &[
            (
                "my key is AKIAIOSFODNN7EXAMPLE and the token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                "Stored the \u{212A}elvin reading and the ſtraße notes.",
            ),
            ("where is the recipe", "The Recipe is in RECIPES.md"),
        ],
    );
    // A session, and its resumption: the second file replays the first's lines (same
    // uuids), then goes on.
    let first = session_lines(
        "5e000000-0000-4000-8000-000000000002",
        "/w/resume",
        start,
        &[("plan the zeppelin launch", "Zeppelin plan drafted.")],
    );
    home.write_raw(
        "-w-resume",
        "5e000000-0000-4000-8000-000000000002.jsonl",
        &(first.join("\n") + "\n"),
    );
    let mut second = first.clone();
    second.extend(session_lines(
        "5e000000-0000-4000-8000-000000000003",
        "/w/resume",
        days_ago(3),
        &[(
            "launch the zeppelin now",
            "Launched; quokka mascot painted.",
        )],
    ));
    home.write_raw(
        "-w-resume",
        "5e000000-0000-4000-8000-000000000003.jsonl",
        &(second.join("\n") + "\n"),
    );
    // The same session in two workspaces.
    let copy = session_lines(
        "5e000000-0000-4000-8000-000000000004",
        "/w/one",
        days_ago(2),
        &[("copied walrus question", "Walrus answer, copied.")],
    );
    for dir in ["-w-one", "-w-two"] {
        home.write_raw(
            dir,
            "5e000000-0000-4000-8000-000000000004.jsonl",
            &(copy.join("\n") + "\n"),
        );
    }
    home.session(
        "5e000000-0000-4000-8000-000000000005",
        "/w/rewrite",
        days_ago(1),
        &[
            ("first pangolin prompt", "Pangolin answer one."),
            ("second pangolin prompt", "Pangolin answer two."),
        ],
    )
}

fn patterns(served: &Served) -> Vec<SessionSearch> {
    let mut all: Vec<SessionSearch> = served.words(40).iter().map(|w| search(w, false)).collect();
    for (pattern, regex) in [
        ("recipe", false),
        ("RECIPE", false),
        ("kelvin", false),
        ("STRASSE", false),
        ("straße", false),
        ("ſtr", false),
        ("AKIA", false),
        ("REDACTED", false),
        ("zeppelin", false),
        ("quokka", false),
        ("walrus", false),
        ("pangolin", false),
        ("pangolin answer t", false),
        ("ab", false),
        ("(shop", false),
        (r"fn\s+\w+\(", true),
        (r"(?i)zeppel(in|ine)s?", true),
        (r"pangolin|walrus", true),
        (r"^Task", true),
        (r"\d{4}-\d{2}", true),
        (r"error|warn", true),
        (r"(recipe)?s\b", true),
        (r"[Rr]ecipe", true),
        (r"re.ipe", true),
        (r"\bthe\b", true),
    ] {
        all.push(search(pattern, regex));
        all.push(SessionSearch {
            case_sensitive: true,
            ..search(pattern, regex)
        });
    }
    all
}

/// Checks every pattern of [`patterns`] (`all`), or those of the fixtures' words.
fn check_all(engine: &Engine, all: bool) {
    let served = Served::of(engine, None);
    let mut patterns = patterns(&served);
    if !all {
        patterns.retain(|p| {
            let p = p.pattern.to_lowercase();
            [
                "zeppelin", "pangolin", "walrus", "ocelot", "capybara", "recipe", "ab",
            ]
            .iter()
            .any(|w| p.contains(w))
        });
    }
    for p in &patterns {
        check(engine, &served, p);
    }
    // In a workspace (words found outside it too), and a page further on.
    let served = Served::of(engine, Some("/w/resume"));
    for word in ["zeppelin", "the", "answer", "prompt"] {
        check(
            engine,
            &served,
            &SessionSearch {
                workspace: Some("/w/resume".into()),
                ..search(word, false)
            },
        );
    }
    let all = Served::of(engine, None);
    let expected = all.grep(&search("the", false));
    let page = engine
        .search_sessions(&SessionSearch {
            limit: 3,
            offset: 2,
            ..search("the", false)
        })
        .unwrap();
    assert_eq!(page.total as usize, expected.len());
    let got: Vec<(String, u32)> = page
        .matches
        .iter()
        .map(|m| (m.session_id.clone(), m.line_number))
        .collect();
    let want: Vec<(String, u32)> = expected
        .iter()
        .skip(2)
        .take(3)
        .map(|h| (h.0.clone(), h.2))
        .collect();
    assert_eq!(got, want);
    assert!(matches!(
        engine.search_sessions(&SessionSearch {
            workspace: Some("/w/nowhere".into()),
            ..search("zeppelin", false)
        }),
        Err(eywa::Error::NotFound(_))
    ));
}

#[test]
fn search_through_the_index_gives_what_a_grep_of_every_session_gives() {
    let home = match crate::support::shared("corpus/claude-code/real_projects") {
        Some(projects) => ClaudeHome {
            dir: crate::support::corpus_home(&projects),
        },
        None => ClaudeHome::new(),
    };
    let rewritten = fixtures(&home);
    let data = tempfile::tempdir().unwrap();
    let config = || EngineConfig::new(data.path(), home.root());
    let engine = Engine::open(config()).unwrap();
    engine.ingest().unwrap();
    assert!(
        data.path().join("store/index/grams").is_dir(),
        "the ingest built the index"
    );
    check_all(&engine, true);

    // A file that grew since it was read is served as read (from its archive) until the
    // next ingest; then with what it gained.
    append(
        &rewritten,
        &session_lines(
            "5e000000-0000-4000-8000-000000000005",
            "/w/rewrite",
            days_ago(0),
            &[("third pangolin prompt about axolotls", "Axolotl answer.")],
        )[..],
    );
    check_all(&engine, false);
    engine.ingest().unwrap();
    check_all(&engine, false);
    // Rewritten shorter, with another answer: what the earlier version said is served
    // (superseded), and found.
    let lines = session_lines(
        "5e000000-0000-4000-8000-000000000005",
        "/w/rewrite",
        days_ago(1),
        &[("first pangolin prompt", "Narwhal answer instead.")],
    );
    std::fs::write(&rewritten, lines.join("\n") + "\n").unwrap();
    engine.ingest().unwrap();
    check_all(&engine, false);
    let found = |engine: &Engine, p: &str| engine.search_sessions(&search(p, false)).unwrap();
    assert_eq!(found(&engine, "narwhal").total, 1);
    assert!(
        found(&engine, "axolotl").total >= 1,
        "superseded lines are served"
    );
    drop(engine);

    // An index left behind the store (a copy from before an ingest, as after a crash
    // between the store's commit and the index's): sessions it has not caught up with are
    // grepped whatever it says.
    let grams = data.path().join("store/index/grams");
    let saved = tempfile::tempdir().unwrap();
    crate::support::copy_tree(&grams, saved.path());
    home.session(
        "5e000000-0000-4000-8000-000000000006",
        "/w/late",
        days_ago(0),
        &[("a late ocelot prompt", "Ocelot answer.")],
    );
    std::fs::write(
        &rewritten,
        session_lines(
            "5e000000-0000-4000-8000-000000000005",
            "/w/rewrite",
            days_ago(1),
            &[(
                "first pangolin prompt",
                "Narwhal answer, now with a capybara.",
            )],
        )
        .join("\n")
            + "\n",
    )
    .unwrap();
    let engine = Engine::open(config()).unwrap();
    engine.ingest().unwrap();
    drop(engine);
    std::fs::remove_dir_all(&grams).unwrap();
    crate::support::copy_tree(saved.path(), &grams);
    let engine = Engine::open(config()).unwrap();
    assert_eq!(found(&engine, "ocelot").total, 2);
    assert_eq!(found(&engine, "capybara").total, 1);
    check_all(&engine, false);
    drop(engine);

    // No index at all (removed): every session is grepped, and the next write builds it.
    std::fs::remove_dir_all(&grams).unwrap();
    let engine = Engine::open(config()).unwrap();
    check_all(&engine, false);
    engine.ingest().unwrap();
    check_all(&engine, true);
}
