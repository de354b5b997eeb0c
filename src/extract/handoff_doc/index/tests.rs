use chrono::{TimeZone, Utc};
use serde_json::json;

use super::*;
use crate::extract::handoff_doc::tests::{date, handoff, seed_handoff, strings};

#[test]
fn builds_index_in_seed_shape() {
    let mut other = handoff("1b2f6f6b", "2026-01-08", "2026-01-08T09:00:00Z");
    other.projects = strings(&["pratchett-os"]);
    other.keywords = strings(&["day-plan", "day-plan", ""]);
    other.headline = "Older".into();
    other.substance = 0;
    other.duration_minutes = None;
    let last_updated = Utc.with_ymd_and_hms(2026, 2, 16, 10, 48, 3).unwrap()
        + chrono::Duration::microseconds(529_150);
    let index = build_index(&[seed_handoff(), other], last_updated);
    assert_eq!(
        index,
        json!({
            "meta": {
                "last_updated": "2026-02-16T10:48:03.529150+00:00",
                "handoff_count": 2,
                "date_range": ["2026-01-08", "2026-02-16"]
            },
            "handoffs": {
                "8735508d": {
                    "date": "2026-02-16",
                    "headline": "Generated day plan for 2026-02-16",
                    "projects": ["pratchett-os", "sorbent"],
                    "keywords": ["day-plan", "sorbent-commercial", "coordinator-background-job"],
                    "substance": 1,
                    "duration_minutes": 10
                },
                "1b2f6f6b": {
                    "date": "2026-01-08",
                    "headline": "Older",
                    "projects": ["pratchett-os"],
                    "keywords": ["day-plan", "day-plan", ""],
                    "substance": 0,
                    "duration_minutes": null
                }
            },
            "by_project": {
                "pratchett-os": ["1b2f6f6b", "8735508d"],
                "sorbent": ["8735508d"]
            },
            "by_keyword": {
                "coordinator-background-job": ["8735508d"],
                "day-plan": ["1b2f6f6b", "8735508d"],
                "sorbent-commercial": ["8735508d"]
            }
        })
    );
    let empty = build_index(&[], last_updated);
    assert_eq!(empty["meta"]["handoff_count"], 0);
    assert_eq!(empty["meta"]["date_range"], json!([]));
    assert_eq!(empty["handoffs"], json!({}));
}

#[test]
fn index_is_deterministic_whatever_the_input_order() {
    let mut handoffs: Vec<Handoff> = (0..6)
        .map(|i| {
            let mut h = handoff(&format!("{i:08x}"), "2026-02-10", "2026-02-10T08:00:00Z");
            h.keywords = strings(&["zeta", "alpha", &format!("k{}", i % 2)]);
            h
        })
        .collect();
    let now = Utc.with_ymd_and_hms(2026, 2, 16, 0, 0, 0).unwrap();
    let forward = serde_json::to_string(&build_index(&handoffs, now)).unwrap();
    handoffs.reverse();
    handoffs.swap(1, 4);
    let shuffled = serde_json::to_string(&build_index(&handoffs, now)).unwrap();
    assert_eq!(forward, shuffled);
    let index = build_index(&handoffs, now);
    let keys: Vec<&String> = index["by_keyword"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["alpha", "k0", "k1", "zeta"]);
    assert_eq!(
        index["by_keyword"]["k1"],
        json!(["00000001", "00000003", "00000005"])
    );
}

#[test]
fn short_id_collision_keeps_newer_handoff() {
    let mut old = handoff("8735508d", "2026-02-15", "2026-02-15T23:00:00Z");
    old.projects = strings(&["old-project"]);
    let mut same_day_early = handoff("8735508d", "2026-02-16", "2026-02-16T01:00:00Z");
    same_day_early.headline = "Early".into();
    let mut newest = handoff("8735508d", "2026-02-16", "2026-02-16T09:00:00Z");
    newest.headline = "Newest".into();
    let now = Utc.with_ymd_and_hms(2026, 2, 17, 0, 0, 0).unwrap();
    for order in [
        [&old, &same_day_early, &newest],
        [&newest, &old, &same_day_early],
        [&same_day_early, &newest, &old],
    ] {
        let handoffs: Vec<Handoff> = order.into_iter().cloned().collect();
        let index = build_index(&handoffs, now);
        assert_eq!(index["meta"]["handoff_count"], 1);
        assert_eq!(
            index["meta"]["date_range"],
            json!(["2026-02-16", "2026-02-16"])
        );
        assert_eq!(index["handoffs"]["8735508d"]["headline"], "Newest");
        assert!(index["by_project"].get("old-project").is_none());
    }
}

#[test]
fn parses_python_eywa_index() {
    let value = json!({
        "meta": {"last_updated": "2026-02-16T10:48:03.529150+00:00", "handoff_count": 3},
        "handoffs": {
            "8735508d": {
                "date": "2026-02-16",
                "headline": "Generated day plan",
                "projects": ["pratchett-os"],
                "keywords": ["day-plan"],
                "duration_minutes": 10,
                "path": "handoffs/2026/02/16/8735508d.md"
            },
            "1b2f6f6b": {"date": "2026-01-08", "substance": 0, "duration_minutes": null},
            "00000000": {"date": "2026-02-16", "headline": "Same day", "substance": 2}
        },
        "by_project": {"pratchett-os": ["8735508d"]}
    });
    let entries = parse_index(&value).unwrap();
    let ids: Vec<&str> = entries.iter().map(|e| e.short_id.as_str()).collect();
    assert_eq!(ids, ["1b2f6f6b", "00000000", "8735508d"]);
    assert_eq!(
        entries[2],
        IndexEntry {
            short_id: "8735508d".into(),
            date: date("2026-02-16"),
            headline: "Generated day plan".into(),
            projects: strings(&["pratchett-os"]),
            keywords: strings(&["day-plan"]),
            substance: 1,
            duration_minutes: Some(10),
        }
    );
    assert_eq!(
        (entries[0].substance, entries[0].duration_minutes),
        (0, None)
    );
    assert!(entries[0].headline.is_empty() && entries[0].projects.is_empty());
}

#[test]
fn index_round_trips_and_rejects_bad_entries() {
    let now = Utc.with_ymd_and_hms(2026, 2, 17, 0, 0, 0).unwrap();
    let h = seed_handoff();
    let entries = parse_index(&build_index(std::slice::from_ref(&h), now)).unwrap();
    assert_eq!(
        entries,
        [IndexEntry {
            short_id: h.short_id.clone(),
            date: h.date,
            headline: h.headline.clone(),
            projects: h.projects.clone(),
            keywords: h.keywords.clone(),
            substance: h.substance,
            duration_minutes: h.duration_minutes,
        }]
    );
    let bad = |v: serde_json::Value| parse_index(&v).unwrap_err().to_string();
    assert_eq!(bad(json!([])), "bad handoff index: no `handoffs` object");
    assert_eq!(
        bad(json!({"handoffs": {"x": 1}})),
        "bad handoff index entry \"x\": not an object"
    );
    assert_eq!(
        bad(json!({"handoffs": {"x": {"headline": "h"}}})),
        "bad handoff index entry \"x\": no date"
    );
    assert!(bad(json!({"handoffs": {"x": {"date": "16/02/2026"}}})).contains("bad date"));
    assert!(
        bad(json!({"handoffs": {"x": {"date": "2026-02-16", "substance": 7}}}))
            .contains("bad substance")
    );
}

/// Streaming reads the same entries as parsing the whole value, reports a bad entry and
/// reads on, and refuses what is not an index.
#[test]
fn streamed_index_reads_every_entry_and_goes_on_past_a_bad_one() {
    let value = json!({
        "meta": {"handoff_count": 3, "date_range": ["2026-01-08", "2026-02-16"]},
        "by_project": {"p": ["8735508d"]},
        "handoffs": {
            "8735508d": {"date": "2026-02-16", "headline": "Day plan", "projects": ["p"]},
            "badbadba": {"headline": "no date"},
            "1b2f6f6b": {"date": "2026-01-08", "substance": 0},
        },
        "by_keyword": {}
    });
    let mut read = Vec::new();
    let mut errors = Vec::new();
    read_index(value.to_string().as_bytes(), &mut |e| match e {
        Ok(entry) => read.push(entry),
        Err(e) => errors.push(e.to_string()),
    })
    .unwrap();
    let whole = parse_index(&json!({"handoffs": {
        "8735508d": value["handoffs"]["8735508d"], "1b2f6f6b": value["handoffs"]["1b2f6f6b"]
    }}))
    .unwrap();
    read.sort_by(|a, b| (a.date, &a.short_id).cmp(&(b.date, &b.short_id)));
    assert_eq!(read, whole);
    assert_eq!(errors, ["bad handoff index entry \"badbadba\": no date"]);
    let refused = |text: &str| {
        read_index(text.as_bytes(), &mut |_| {})
            .unwrap_err()
            .to_string()
    };
    assert!(refused("{\"meta\": {}}").contains("no `handoffs` object"));
    assert!(refused("[]").contains("bad handoff index"));
    assert!(
        refused("{\"handoffs\": {\"x\": {\"date\": \"2026-01-01\"}").contains("bad handoff index")
    );
    assert!(refused("{\"handoffs\": {}} trailing").contains("bad handoff index"));
}
