//! The text index's tests.

use super::*;

fn doc(id: &str, session: &str, kind: &str, ts: i64, text: &str) -> TextDoc {
    TextDoc {
        id: id.into(),
        source: format!("/src/{session}"),
        session: session.into(),
        project: "shop".into(),
        kind: kind.into(),
        agent: None,
        timestamp: ts,
        text: text.into(),
        message: None,
        lead: 0,
        page: None,
    }
}

#[test]
fn search_ranks_by_bm25_filters_and_replaces_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let (index, created) = TextIndex::open(dir.path()).unwrap();
    assert!(created);
    index
        .put(&[
            doc(
                "a1",
                "a",
                "user_message",
                10,
                "Fix the flaky checkout tests",
            ),
            doc(
                "b1",
                "b",
                "assistant_response",
                20,
                "The checkout page renders",
            ),
            doc("c1", "c", "user_message", 30, "Deploy the blog"),
        ])
        .unwrap();
    index.commit().unwrap();
    let q = |query: &str| TextQuery {
        query: query.into(),
        limit: 10,
        ..TextQuery::default()
    };
    let hits = index.search(&q("flaky checkout")).unwrap();
    let sessions: Vec<&str> = hits.iter().map(|h| h.doc.session.as_str()).collect();
    assert_eq!(sessions, ["a", "b"]);
    assert!(hits[0].score > hits[1].score);
    assert_eq!(hits[0].snippet, "Fix the **flaky** **checkout** tests");
    // Stemming: "tests" matches "testing".
    assert_eq!(index.search(&q("testing")).unwrap().len(), 1);
    // Filters.
    let only_users = TextQuery {
        filter: SearchFilter {
            kinds: vec!["assistant_response".into()],
            ..SearchFilter::default()
        },
        ..q("checkout")
    };
    assert_eq!(index.search(&only_users).unwrap()[0].doc.session, "b");
    let recent = TextQuery {
        filter: SearchFilter {
            since: Some(crate::model::Timestamp(15)),
            ..SearchFilter::default()
        },
        ..q("checkout")
    };
    assert_eq!(index.search(&recent).unwrap().len(), 1);
    // Replace by id, delete by source.
    index
        .put(&[doc("a1", "a", "user_message", 10, "Fix the parser")])
        .unwrap();
    index.delete_source("/src/b");
    index.commit().unwrap();
    assert!(index.search(&q("checkout")).unwrap().is_empty());
    assert_eq!(index.len(), 2);
    // Query syntax is not interpreted; a query without words, or with only common
    // words, is refused.
    assert_eq!(index.search(&q("parser:\"(")).unwrap().len(), 1);
    for empty in ["  ?? ", "the of and"] {
        assert!(matches!(
            index.search(&q(empty)),
            Err(Error::InvalidArgument(_))
        ));
    }
    drop(index);
    let (again, created) = TextIndex::open(dir.path()).unwrap();
    assert!(!created);
    assert_eq!(again.len(), 2);
}

/// A query's hits as ids and scores, best first.
fn ranked(index: &TextIndex, q: &TextQuery) -> Vec<(String, f32)> {
    index
        .search_passages(q)
        .unwrap()
        .into_iter()
        .map(|h| (h.doc.id, h.score))
        .collect()
}

fn assert_same_ranking(overlay: &[(String, f32)], committed: &[(String, f32)], what: &str) {
    let ids = |r: &[(String, f32)]| r.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(overlay),
        ids(committed),
        "{what}: the same documents, in order"
    );
    for ((id, a), (_, b)) in overlay.iter().zip(committed) {
        assert!(
            (a - b).abs() <= 1e-4 * b.abs().max(1.0),
            "{what}: {id} scores {a} before the commit and {b} after"
        );
    }
}

#[test]
fn writes_are_found_at_once_and_score_as_they_will_once_committed() {
    let dir = tempfile::tempdir().unwrap();
    let (index, _) = TextIndex::open(dir.path()).unwrap();
    let mut docs = Vec::new();
    for i in 0..40 {
        let kind = ["user_message", "assistant_response", "memory"][i % 3];
        let words = ["checkout", "parser", "deploy", "flaky", "cache", "tests"];
        let text: Vec<&str> = (0..=(i % 7)).map(|j| words[(i + j * j) % 6]).collect();
        let mut d = doc(
            &format!("d{i}"),
            &format!("s{}", i % 5),
            kind,
            i as i64,
            &text.join(" the "),
        );
        d.project = ["shop", "blog"][i % 2].into();
        d.agent = (i % 4 == 0).then(|| "explorer".to_owned());
        docs.push(d);
    }
    index.put(&docs[..30]).unwrap();
    index.commit().unwrap();
    // Memories written now: one new source, and one that replaces a source the index
    // holds (its old documents must not be found), and one that forgets one.
    let mut replaced: Vec<TextDoc> = docs[30..35].to_vec();
    for d in &mut replaced {
        d.source = "/src/s0".into();
    }
    let fresh: Vec<TextDoc> = docs[35..]
        .iter()
        .cloned()
        .map(|mut d| {
            d.source = "memory:new".into();
            d
        })
        .collect();
    let writes = vec![
        ("/src/s0".to_owned(), replaced.clone()),
        ("memory:new".to_owned(), fresh.clone()),
        ("/src/s1".to_owned(), Vec::new()),
    ];
    index.write_now(writes).unwrap();
    assert_eq!(index.uncommitted(), 3);
    let queries: Vec<TextQuery> = {
        let q = |query: &str, filter: SearchFilter| TextQuery {
            query: query.into(),
            filter,
            limit: 50,
        };
        vec![
            q("checkout parser", SearchFilter::default()),
            q("flaky tests cache", SearchFilter::default()),
            q(
                "deploy checkout",
                SearchFilter {
                    kinds: vec!["memory".into(), "user_message".into()],
                    ..SearchFilter::default()
                },
            ),
            q(
                "parser cache",
                SearchFilter {
                    projects: vec!["blog".into()],
                    agent_types: vec!["explorer".into()],
                    ..SearchFilter::default()
                },
            ),
            q(
                "tests deploy",
                SearchFilter {
                    since: Some(crate::model::Timestamp(12)),
                    until: Some(crate::model::Timestamp(38)),
                    ..SearchFilter::default()
                },
            ),
        ]
    };
    let before: Vec<Vec<(String, f32)>> = queries.iter().map(|q| ranked(&index, q)).collect();
    let found: Vec<&str> = before.iter().flatten().map(|(id, _)| id.as_str()).collect();
    assert!(
        found.contains(&"d36"),
        "a new source is found before any commit"
    );
    assert!(
        found.contains(&"d31"),
        "a replaced source's new documents are found"
    );
    for gone in ["d0", "d5", "d1", "d6"] {
        // s0's and s1's documents as the index held them.
        assert!(!found.contains(&gone), "{gone} was replaced or forgotten");
    }
    index.commit().unwrap();
    assert_eq!(index.uncommitted(), 0);
    for (q, before) in queries.iter().zip(&before) {
        assert_same_ranking(before, &ranked(&index, q), &q.query);
    }
    // After a commit, the committed index alone answers, and nothing is lost on reopening.
    drop(index);
    let (again, _) = TextIndex::open(dir.path()).unwrap();
    for (q, before) in queries.iter().zip(&before) {
        assert_same_ranking(before, &ranked(&again, q), &q.query);
    }
    // Snippets weigh a term found only in the overlay as they will once committed.
    let snippet = |index: &TextIndex| {
        let snippets = index.snippets("zephyr checkout").unwrap();
        snippets.snippet("A zephyr of checkout words")
    };
    again
        .write_now(vec![(
            "memory:zephyr".to_owned(),
            vec![doc("z1", "z", "memory", 50, "The zephyr rule")],
        )])
        .unwrap();
    let snippet_before = snippet(&again);
    assert!(snippet_before.contains("**zephyr**"), "{snippet_before}");
    again.commit().unwrap();
    assert_eq!(snippet(&again), snippet_before);
}
