//! Context retrieval (seed 001): priorities, a token budget that is never exceeded, items
//! never cut, sessions dropped last-first, staleness notices, and dry runs.

use eywa::engine::{Context, ContextMode, Engine, EngineConfig, estimate_tokens};
use serde_json::json;

use crate::support::fixture::{ClaudeHome, days_ago, session_lines, with_slug};

const MAIN: &str = "c7000000-0000-4000-8000-000000000001";
const OLD: &str = "c7000000-0000-4000-8000-000000000002";
const ANCIENT: &str = "c7000000-0000-4000-8000-000000000003";

fn report(topic: &str) -> String {
    format!("Summary report on {topic}. ").repeat(12)
}

/// MAIN: four prompts, a plan, two subagents with reports, a summary label from a later
/// file. OLD (40 days) and ANCIENT (100 days): one prompt each.
fn engine() -> (ClaudeHome, Engine) {
    let home = ClaudeHome::new();
    let lines = with_slug(
        session_lines(
            MAIN,
            "/w/app",
            days_ago(2),
            &[
                ("Plan the overnight time handling", "Planned."),
                ("Implement it", "Implemented."),
                ("Add the edge cases", "Added."),
                ("Fourth prompt, least important", "Ok."),
            ],
        ),
        "brave-ocean",
    );
    home.write_raw(
        "-w-app",
        &format!("{MAIN}.jsonl"),
        &(lines.join("\n") + "\n"),
    );
    for (id, topic) in [("aa11", "timezones"), ("bb22", "daylight saving")] {
        let agent = [
            json!({"type": "user", "uuid": format!("{id}-u"), "isSidechain": true, "sessionId": MAIN,
                   "agentId": id, "cwd": "/w/app", "timestamp": days_ago(2).to_rfc3339(),
                   "message": {"role": "user", "content": format!("Explore {topic}")}}),
            json!({"type": "assistant", "uuid": format!("{id}-a"), "parentUuid": format!("{id}-u"),
                   "isSidechain": true, "sessionId": MAIN, "agentId": id, "cwd": "/w/app",
                   "timestamp": days_ago(2).to_rfc3339(),
                   "message": {"id": format!("m-{id}"), "role": "assistant",
                               "content": [{"type": "text", "text": report(topic)}]}}),
        ];
        let text: Vec<String> = agent.iter().map(std::string::ToString::to_string).collect();
        home.write_raw(
            &format!("-w-app/{MAIN}/subagents"),
            &format!("agent-{id}.jsonl"),
            &(text.join("\n") + "\n"),
        );
    }
    let label = json!({"type": "summary", "summary": "OB overnight time handling",
                       "leafUuid": format!("{MAIN}-a3")});
    home.write_raw(
        "-w-app",
        "c7000000-0000-4000-8000-00000000000f.jsonl",
        &(label.to_string() + "\n"),
    );
    std::fs::create_dir_all(home.root().join("plans")).unwrap();
    std::fs::write(
        home.root().join("plans/brave-ocean.md"),
        "# Overnight time handling\n\nSplit shifts at midnight; store UTC.\n",
    )
    .unwrap();
    home.session(OLD, "/w/app", days_ago(40), &[("Old work", "Done.")]);
    home.session(
        ANCIENT,
        "/w/app",
        days_ago(100),
        &[("Ancient work", "Done.")],
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    (home, engine)
}

fn ctx(engine: &Engine, ids: &[&str], mode: ContextMode, budget: usize) -> Context {
    let ids: Vec<String> = ids.iter().map(std::string::ToString::to_string).collect();
    engine.retrieve_context(&ids, mode, budget, false).unwrap()
}

fn kinds(c: &Context, s: usize) -> Vec<(String, bool)> {
    c.sessions[s]
        .items
        .iter()
        .map(|i| (i.kind.clone(), i.included))
        .collect()
}

#[test]
fn smart_context_holds_plan_summaries_prompts_and_labels() {
    let (_home, engine) = engine();
    let c = ctx(&engine, &[MAIN], ContextMode::Smart, 15_000);
    let k = |s: &str| (s.to_owned(), true);
    assert_eq!(
        kinds(&c, 0),
        [
            k("plan"),
            k("subagent_summary"),
            k("subagent_summary"),
            k("user_message"),
            k("user_message"),
            k("user_message"),
            k("summary_labels"),
        ],
        "the first three prompts only"
    );
    assert!(c.text.contains("Split shifts at midnight; store UTC."));
    assert!(c.text.contains(report("daylight saving").trim()));
    assert!(c.text.contains("• OB overnight time handling"));
    assert!(!c.text.contains("Fourth prompt"));
    assert!(c.sessions[0].staleness.is_none(), "two days is recent");
    assert!(
        c.text
            .starts_with("=== CONTEXT FROM PREVIOUS SESSIONS ===\nToken budget: 15000 | Used: ")
    );
    assert!(c.text.ends_with("=== END PREVIOUS SESSION CONTEXT ===\n"));
    assert!(c.used > c.sessions[0].tokens, "the frame counts too");
    // The modes that take one kind.
    let only = |mode| kinds(&ctx(&engine, &[MAIN], mode, 15_000), 0);
    assert_eq!(only(ContextMode::Plan), [k("plan")]);
    assert_eq!(only(ContextMode::Labels), [k("summary_labels")]);
    assert_eq!(
        only(ContextMode::Agents),
        [k("subagent_summary"), k("subagent_summary")]
    );
    let full = ctx(&engine, &[MAIN], ContextMode::Full, 15_000);
    assert!(full.text.contains("Fourth prompt"));
    assert!(full.text.contains("ASSISTANT: Implemented."));
}

#[test]
fn the_budget_is_never_exceeded_and_no_item_is_cut() {
    let (_home, engine) = engine();
    for budget in [1, 20, 60, 90, 120, 150, 200, 260, 400, 800, 15_000] {
        for ids in [&[MAIN][..], &[MAIN, OLD, ANCIENT][..]] {
            let c = ctx(&engine, ids, ContextMode::Full, budget);
            assert!(c.used <= budget, "{budget}: used {}", c.used);
            assert!(estimate_tokens(&c.text) <= budget, "{budget}");
            let dry = engine
                .retrieve_context(
                    &ids.iter()
                        .map(std::string::ToString::to_string)
                        .collect::<Vec<_>>(),
                    ContextMode::Full,
                    budget,
                    true,
                )
                .unwrap();
            assert!(dry.text.is_empty());
            assert_eq!(dry.used, c.used, "dry run accounts the same");
            let strip = |c: &Context| -> Vec<Vec<(String, usize, bool)>> {
                c.sessions
                    .iter()
                    .map(|s| {
                        s.items
                            .iter()
                            .map(|i| (i.kind.clone(), i.tokens, i.included))
                            .collect()
                    })
                    .collect()
            };
            assert_eq!(strip(&dry), strip(&c));
            // Every included item is in the text whole; the text is exactly the headers
            // and the included items.
            let mut total = 0;
            for s in &c.sessions {
                for item in s.items.iter().filter(|i| i.included) {
                    assert!(c.text.contains(&item.text), "{budget}: {}", item.kind);
                    total += item.tokens;
                }
            }
            assert!(total <= c.used);
        }
    }
}

#[test]
fn priorities_decide_what_a_tight_budget_keeps() {
    let (_home, engine) = engine();
    let all = ctx(&engine, &[MAIN], ContextMode::Smart, 15_000);
    let tokens = |kind: &str, nth: usize| {
        all.sessions[0]
            .items
            .iter()
            .filter(|i| i.kind == kind)
            .nth(nth)
            .unwrap()
            .tokens
    };
    // What is not an item: the frame and the session's header.
    let header = all.used
        - all.sessions[0]
            .items
            .iter()
            .map(|i| i.tokens)
            .sum::<usize>();
    let must =
        header + tokens("plan", 0) + tokens("subagent_summary", 0) + tokens("user_message", 0);
    // Room for the must-haves and the second report: the second report comes before the
    // other prompts and the labels.
    let c = ctx(
        &engine,
        &[MAIN],
        ContextMode::Smart,
        must + tokens("subagent_summary", 1),
    );
    let included: Vec<(String, bool)> = kinds(&c, 0);
    assert_eq!(
        included,
        [
            ("plan".to_owned(), true),
            ("subagent_summary".to_owned(), true),
            ("subagent_summary".to_owned(), true),
            ("user_message".to_owned(), true),
            ("user_message".to_owned(), false),
            ("user_message".to_owned(), false),
            ("summary_labels".to_owned(), false),
        ]
    );
    // Several sessions whose must-haves do not all fit: the last ones are dropped.
    let c = ctx(&engine, &[MAIN, OLD, ANCIENT], ContextMode::Smart, must + 5);
    let dropped: Vec<bool> = c.sessions.iter().map(|s| s.dropped).collect();
    assert_eq!(dropped, [false, true, true]);
    assert!(
        c.warnings[0].starts_with("Reduced to 1 of 3 sessions"),
        "{:?}",
        c.warnings
    );
}

#[test]
fn old_context_carries_a_staleness_notice_by_age() {
    let (_home, engine) = engine();
    let c = ctx(&engine, &[OLD, ANCIENT], ContextMode::Smart, 15_000);
    assert!(
        c.sessions[0]
            .staleness
            .as_deref()
            .unwrap()
            .starts_with("STALENESS NOTICE")
    );
    assert!(
        c.sessions[1]
            .staleness
            .as_deref()
            .unwrap()
            .starts_with("OLD CONTEXT WARNING")
    );
    // Forty days ago at noon: 39 or 40 whole days, by the time of day the test runs.
    let days = c.sessions[0].age_days;
    assert!((39..=40).contains(&days), "{days}");
    assert!(c.text.contains(&format!(
        "STALENESS NOTICE: this context is {days} days old"
    )));
    for bad in [
        engine.retrieve_context(&[], ContextMode::Smart, 100, false),
        engine.retrieve_context(&["nope-nope".into()], ContextMode::Smart, 100, false),
        engine.retrieve_context(&[MAIN.into()], ContextMode::Smart, 0, false),
    ] {
        assert!(bad.is_err());
    }
}

/// The thresholds come from the engine's config (`staleness_days` in config.toml,
/// `EYWA_STALENESS_DAYS`): other ages, or no notices at all.
#[test]
fn staleness_thresholds_can_be_set_or_turned_off() {
    let (home, engine) = engine();
    drop(engine);
    for (days, old, ancient) in [
        (Some([50, 60, 120]), None, Some("STALENESS NOTICE")),
        (
            Some([10, 20, 30]),
            Some("OLD CONTEXT WARNING"),
            Some("OLD CONTEXT WARNING"),
        ),
        (None, None, None),
    ] {
        let engine = Engine::open(EngineConfig {
            staleness_days: days,
            ..EngineConfig::temporary(home.root())
        })
        .unwrap();
        engine.ingest().unwrap();
        let c = ctx(&engine, &[OLD, ANCIENT], ContextMode::Smart, 15_000);
        let notice = |s: usize| c.sessions[s].staleness.clone();
        assert_eq!(notice(0).is_some(), old.is_some(), "{days:?}");
        assert_eq!(notice(1).is_some(), ancient.is_some(), "{days:?}");
        if let (Some(n), Some(prefix)) = (notice(0), old) {
            assert!(n.starts_with(prefix), "{n}");
        }
        if let (Some(n), Some(prefix)) = (notice(1), ancient) {
            assert!(n.starts_with(prefix), "{n}");
        }
    }
    // The CLI reads them from the environment and the config file, and refuses bad ones.
    let data = tempfile::tempdir().unwrap();
    let show = |env: Option<&str>| {
        let mut cmd = crate::support::eywa_command(data.path(), home.root());
        cmd.args(["config", "show", "--json"]);
        if let Some(v) = env {
            cmd.env("EYWA_STALENESS_DAYS", v);
        }
        cmd.output().unwrap()
    };
    let value = |out: std::process::Output| -> serde_json::Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["settings"]["staleness_days"].clone()
    };
    assert_eq!(value(show(None))["value"], json!([7, 30, 90]));
    assert_eq!(value(show(Some("3,14,60")))["value"], json!([3, 14, 60]));
    assert_eq!(value(show(Some("never")))["value"], json!(null));
    std::fs::write(
        data.path().join("config.toml"),
        "staleness_days = [1, 2, 3]\n",
    )
    .unwrap();
    assert_eq!(
        value(show(None)),
        json!({"value": [1, 2, 3], "source": "file"})
    );
    let bad = show(Some("30,7,90"));
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("three rising numbers"));
}

#[test]
fn the_cli_prints_context_and_its_accounting() {
    let (home, _engine) = engine();
    drop(_engine);
    let data = tempfile::tempdir().unwrap();
    let eywa =
        |args: &[&str]| crate::support::eywa_cli(&data.path().join("eywa"), home.root(), args);
    assert!(eywa(&["ingest"]).0);
    let (ok, text, err) = eywa(&["context", MAIN]);
    assert!(ok, "{err}");
    assert!(
        text.starts_with("=== CONTEXT FROM PREVIOUS SESSIONS ==="),
        "{text}"
    );
    assert!(text.contains("[PLAN · "), "{text}");
    let (ok, text, _) = eywa(&["context", MAIN, OLD, "--max-tokens", "40", "--dry-run"]);
    assert!(ok);
    assert!(text.starts_with("Token budget: 40 | Used: "), "{text}");
    assert!(text.contains("(dropped)"), "{text}");
    let (ok, _, err) = eywa(&["context", MAIN, "--mode", "everything"]);
    assert!(!ok);
    assert!(err.contains("unknown mode `everything`"), "{err}");
}
