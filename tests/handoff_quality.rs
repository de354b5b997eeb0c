//! Handoffs built from what a transcript proves (commits, checks, files, todos, next
//! steps), seed 001's report and plan rules, context items that are whole or listed, and
//! the handoff rubric on the shared corpus.

use std::path::Path;

use eywa::engine::{ContextMode, Engine, EngineConfig};
use eywa::model::NodeId;
use serde_json::{Value, json};

use crate::support::fixture::{ClaudeHome, days_ago};
use crate::support::{self, corpus_home};

const CART: &str = "d8000000-0000-4000-8000-000000000001";

/// Lines of a session from `(type, content)` pairs: a chain, one minute apart. Assistant
/// content is a list of blocks; user content a string or a list of tool results.
pub(crate) fn chain(session: &str, cwd: &str, lines: &[(&str, Value)]) -> String {
    let start = days_ago(1);
    let mut parent: Option<String> = None;
    let mut out = String::new();
    for (n, (kind, content)) in lines.iter().enumerate() {
        let uuid = format!("{session}-{n}");
        let mut line = json!({
            "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": session,
            "cwd": cwd, "version": "2.1.0",
            "timestamp": (start + chrono::Duration::minutes(n as i64)).to_rfc3339(),
            "message": {"role": kind, "content": content},
        });
        if *kind == "assistant" {
            line["message"]["id"] = json!(format!("msg-{session}-{n}"));
            line["message"]["model"] = json!("claude-sonnet-4-5");
        }
        out.push_str(&line.to_string());
        out.push('\n');
        parent = Some(uuid);
    }
    out
}

fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

fn tool(id: &str, name: &str, input: Value) -> Value {
    json!([{"type": "tool_use", "id": id, "name": name, "input": input}])
}

fn result(id: &str, output: &str, is_error: bool) -> Value {
    json!([{"type": "tool_result", "tool_use_id": id, "content": output, "is_error": is_error}])
}

#[test]
fn a_handoff_tells_what_the_session_did_and_what_it_left() {
    let home = ClaudeHome::new();
    let lines = chain(
        CART,
        "/w/shop",
        &[
            (
                "user",
                json!("Hey Claude, can you please fix the cart rounding?"),
            ),
            (
                "assistant",
                text("I'll help you fix the cart total rounding in checkout."),
            ),
            (
                "assistant",
                tool(
                    "t1",
                    "Edit",
                    json!({"file_path": "/w/shop/src/cart.rs", "old_string": "a", "new_string": "b"}),
                ),
            ),
            ("user", result("t1", "ok", false)),
            (
                "assistant",
                tool("t2", "Bash", json!({"command": "cargo test --all"})),
            ),
            ("user", result("t2", "test cart::total ... FAILED", true)),
            (
                "assistant",
                tool(
                    "t3",
                    "Edit",
                    json!({"file_path": "/w/shop/src/cart.rs", "old_string": "b", "new_string": "c"}),
                ),
            ),
            ("user", result("t3", "ok", false)),
            (
                "assistant",
                tool("t4", "Bash", json!({"command": "cargo test --all"})),
            ),
            ("user", result("t4", "test result: ok. 12 passed", false)),
            (
                "assistant",
                tool(
                    "t5",
                    "TodoWrite",
                    json!({"todos": [
                {"content": "Fix the rounding", "status": "completed", "activeForm": "Fixing"},
                {"content": "Round the refunds too", "status": "pending", "activeForm": "Rounding"}]}),
                ),
            ),
            ("user", result("t5", "ok", false)),
            (
                "assistant",
                tool(
                    "t6",
                    "Bash",
                    json!({"command": "git add src/cart.rs && git commit -m \"fix: round cart totals to whole cents\""}),
                ),
            ),
            (
                "user",
                result(
                    "t6",
                    "[main 1a2b3c4] fix: round cart totals to whole cents\n 1 file changed",
                    false,
                ),
            ),
            (
                "assistant",
                tool(
                    "t7",
                    "Bash",
                    json!({"command": "gh pr create --title \"Round cart totals\" --body x"}),
                ),
            ),
            (
                "user",
                result("t7", "https://github.com/o/shop/pull/7\n", false),
            ),
            (
                "assistant",
                text(
                    "The root cause was summing floats before rounding.\n\n## Next steps\n- Check the tax path",
                ),
            ),
            ("user", json!("And the invoices?")),
        ],
    );
    home.write_raw("-w-shop", &format!("{CART}.jsonl"), &lines);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let h = engine.graph().handoff(CART).unwrap().unwrap();
    let s = &h.sections;

    assert_eq!(
        h.headline, "Round cart totals to whole cents",
        "from the commit"
    );
    assert!(
        (2..=5).contains(&s.what_happened.len()),
        "{:?}",
        s.what_happened
    );
    assert_eq!(
        s.what_happened,
        [
            "Edited 1 file: src/cart.rs",
            "Ran `cargo test` 2 times (failed 1, then passed)",
            "Committed \"fix: round cart totals to whole cents\"",
            "Opened a pull request \"Round cart totals\"",
            "Completed 1 of 2 todos: Fix the rounding",
        ],
        "five events: no room for the request"
    );
    assert_eq!(
        s.insights,
        [
            (
                "`cargo test`".to_owned(),
                "failed once before passing: the errors it hit were fixed in this session"
                    .to_owned()
            ),
            (
                "Root cause".to_owned(),
                "The root cause was summing floats before rounding.".to_owned()
            ),
        ]
    );
    assert_eq!(s.key_files, ["src/cart.rs"]);
    assert_eq!(
        s.open_threads,
        [
            "Round the refunds too",
            "Check the tax path",
            "Unanswered last request: And the invoices?"
        ]
    );
}

#[test]
fn a_headline_falls_back_to_the_cleaned_request() {
    let home = ClaudeHome::new();
    let id = "d8000000-0000-4000-8000-000000000002";
    let lines = chain(
        id,
        "/w/notes",
        &[
            (
                "user",
                json!("Hi! Could you please summarise the meeting notes in notes.md for me?"),
            ),
            ("assistant", text("Here is the summary of the notes.")),
        ],
    );
    home.write_raw("-w-notes", &format!("{id}.jsonl"), &lines);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let h = engine.graph().handoff(id).unwrap().unwrap();
    assert_eq!(h.headline, "Summarise the meeting notes in notes.md for me");
    assert_eq!(
        h.sections.what_happened,
        [
            "Asked: Summarise the meeting notes in notes.md for me",
            "Answered: Here is the summary of the notes."
        ]
    );
}

/// Seed 001: a subagent's report is the text of its last assistant message, skipped when
/// that message is a tool call or under 200 characters, and kept whole.
#[test]
fn a_subagent_report_is_its_last_message_whole_or_nothing() {
    let home = ClaudeHome::new();
    let main = "d8000000-0000-4000-8000-000000000003";
    home.session(main, "/w/app", days_ago(1), &[("Explore the app", "Done.")]);
    let long = "Findings about the app. ".repeat(700); // 16,800 characters
    let earlier = "An earlier long text that is not the last message. ".repeat(10);
    let agents: [(&str, Vec<(&str, Value)>); 3] = [
        (
            "whole",
            vec![("user", json!("Explore")), ("assistant", text(&long))],
        ),
        (
            "tool",
            vec![
                ("user", json!("Explore")),
                ("assistant", text(&earlier)),
                (
                    "assistant",
                    tool("x1", "Read", json!({"file_path": "/w/app/a.rs"})),
                ),
            ],
        ),
        (
            "short",
            vec![
                ("user", json!("Explore")),
                ("assistant", text(&earlier)),
                ("assistant", text("Done.")),
            ],
        ),
    ];
    for (id, lines) in &agents {
        let mut text = chain(&format!("{main}-{id}"), "/w/app", lines);
        text = text
            .lines()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                v["isSidechain"] = json!(true);
                v["agentId"] = json!(id);
                v["sessionId"] = json!(main);
                v.to_string() + "\n"
            })
            .collect();
        home.write_raw(
            &format!("-w-app/{main}/subagents"),
            &format!("agent-{id}.jsonl"),
            &text,
        );
    }
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let summary = |id: &str| {
        let node = engine
            .graph()
            .node(NodeId::agent(main, id))
            .unwrap()
            .unwrap();
        node.episode()
            .unwrap()
            .agent
            .as_ref()
            .unwrap()
            .summary
            .clone()
    };
    assert_eq!(summary("whole").as_deref(), Some(long.trim()));
    assert_eq!(summary("tool"), None, "ended on a tool call");
    assert_eq!(
        summary("short"),
        None,
        "the last message is under 200 characters"
    );

    // Context serves the report whole, or lists it with its size when it cannot fit.
    let ids = [main.to_owned()];
    let c = engine
        .retrieve_context(&ids, ContextMode::Agents, 15_000, false)
        .unwrap();
    assert!(c.text.contains(long.trim()), "whole");
    let item = c.sessions[0]
        .items
        .iter()
        .find(|i| i.kind == "subagent_summary")
        .unwrap()
        .text
        .clone();
    assert!(item.ends_with(&format!("\n{}\n\n", long.trim())), "{item}");
    let c = engine
        .retrieve_context(&ids, ContextMode::Agents, 1_000, false)
        .unwrap();
    assert!(!c.text.contains("Findings about the app."), "{}", c.text);
    let listed = format!(
        "[LEFT OUT · subagent_summary · {} tokens, whole with: eywa context {}",
        eywa::engine::estimate_tokens(&item),
        &main[..8]
    );
    assert!(c.text.contains(&listed), "{}", c.text);
    assert!(c.used <= 1_000 && eywa::engine::estimate_tokens(&c.text) <= c.used);
}

/// Seed 001's plan rules: under 50 characters or over 100 KB a plan file is skipped (the
/// big one with a warning); without a plan file, the plan handed to `ExitPlanMode`.
#[test]
fn plans_follow_the_size_rules_and_come_from_exit_plan_mode_without_a_file() {
    let home = ClaudeHome::new();
    let tiny = "d8000000-0000-4000-8000-000000000004";
    let huge = "d8000000-0000-4000-8000-000000000005";
    let inline = "d8000000-0000-4000-8000-000000000006";
    let plan = "# Plan: split night shifts at midnight\n\nStore every time in UTC. ".repeat(3);
    for (id, slug) in [(tiny, "tiny-plan"), (huge, "huge-plan")] {
        let mut lines = String::new();
        for l in chain(
            id,
            "/w/app",
            &[("user", json!("Plan it")), ("assistant", text("Planned."))],
        )
        .lines()
        {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v["slug"] = json!(slug);
            lines.push_str(&(v.to_string() + "\n"));
        }
        home.write_raw("-w-app", &format!("{id}.jsonl"), &lines);
    }
    std::fs::create_dir_all(home.root().join("plans")).unwrap();
    std::fs::write(home.root().join("plans/tiny-plan.md"), "# Plan\n\nDo it.\n").unwrap();
    std::fs::write(
        home.root().join("plans/huge-plan.md"),
        "x".repeat(100 * 1024 + 1),
    )
    .unwrap();
    let lines = chain(
        inline,
        "/w/app",
        &[
            ("user", json!("Plan the shifts")),
            (
                "assistant",
                tool("p1", "ExitPlanMode", json!({"plan": plan})),
            ),
            ("user", result("p1", "User has approved your plan.", false)),
            ("assistant", text("Planned.")),
        ],
    );
    home.write_raw("-w-app", &format!("{inline}.jsonl"), &lines);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    let report = engine.ingest().unwrap();
    let skipped: Vec<&str> = report
        .skipped_files
        .iter()
        .map(|s| s.reason.as_str())
        .collect();
    assert!(
        skipped.iter().any(|r| r.contains("over 100 KB")),
        "{skipped:?}"
    );
    let plan_items = |id: &str| {
        let c = engine
            .retrieve_context(&[id.to_owned()], ContextMode::Plan, 15_000, false)
            .unwrap();
        c.sessions[0]
            .items
            .iter()
            .filter(|i| i.kind == "plan")
            .map(|i| i.text.clone())
            .collect::<Vec<_>>()
    };
    assert!(plan_items(tiny).is_empty(), "a plan under 50 characters");
    assert!(plan_items(huge).is_empty(), "a plan over 100 KB");
    let tokens = eywa::engine::estimate_tokens(plan.trim());
    assert_eq!(
        plan_items(inline),
        [format!("[PLAN · {tokens} tokens]\n{}\n\n", plan.trim())]
    );
    let h = engine.graph().handoff(inline).unwrap().unwrap();
    assert_eq!(
        h.headline, "Split night shifts at midnight",
        "the plan's title"
    );
}

/// The texts a transcript holds, read here independently of eywa: each prompt typed as a
/// string, and each assistant line's text blocks joined by newlines.
fn source_texts(path: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let content = &v["message"]["content"];
        if let Some(s) = content.as_str() {
            out.push(s.trim().to_owned());
        }
        if let Some(blocks) = content.as_array() {
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect();
            if !texts.is_empty() {
                out.push(texts.join("\n").trim().to_owned());
            }
            for t in texts {
                out.push(t.trim().to_owned());
            }
        }
    }
    out
}

fn jsonl_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            jsonl_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
}

/// Across sessions, modes and budgets, every item `eywa context` prints is a text of the
/// transcript byte for byte (its label and spacing aside): nothing is cut.
#[test]
fn context_items_equal_their_source_text_on_the_corpus() {
    let Some(real) = support::shared("corpus/claude-code/real_projects") else {
        return;
    };
    let home = corpus_home(&real);
    let mut files = Vec::new();
    jsonl_files(&real, &mut files);
    let sources: std::collections::HashSet<String> =
        files.iter().flat_map(|f| source_texts(f)).collect();
    let engine = Engine::open(EngineConfig::temporary(home.path())).unwrap();
    engine.ingest().unwrap();
    let sessions: Vec<String> = files
        .iter()
        .filter(|f| {
            !f.to_string_lossy().contains("subagents")
                && !f
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("agent-")
        })
        .map(|f| f.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    let modes = [
        ContextMode::Smart,
        ContextMode::Agents,
        ContextMode::Full,
        ContextMode::Plan,
    ];
    let mut checked = 0;
    for id in &sessions {
        for mode in modes {
            for budget in [400, 2_000, 15_000, 200_000] {
                let Ok(c) = engine.retrieve_context(std::slice::from_ref(id), mode, budget, false)
                else {
                    continue; // no messages: not a session
                };
                assert!(c.used <= budget);
                for item in c
                    .sessions
                    .iter()
                    .flat_map(|s| &s.items)
                    .filter(|i| i.included)
                {
                    assert!(c.text.contains(&item.text));
                    let body = item.text.strip_suffix("\n\n").unwrap();
                    let body = match item.kind.as_str() {
                        "user_message" => body.strip_prefix("USER: ").unwrap(),
                        "message" => body.strip_prefix("ASSISTANT: ").unwrap(),
                        "subagent_summary" | "plan" => body.split_once('\n').unwrap().1,
                        _ => continue,
                    };
                    if item.kind == "plan" {
                        continue; // plan files are not transcripts; checked above
                    }
                    assert!(
                        sources.contains(body),
                        "{id} {mode:?} {budget}: a {} item is not a source text: {:?}…",
                        item.kind,
                        body.chars().take(80).collect::<String>()
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 100, "{checked}");

    // The 13,481-character Explore report of 29ccd257 comes whole, or is listed.
    let report = source_texts(&real.join(
        "-src-experiments-claude_p/29ccd257-68b1-427f-ae5f-6524b7cb6f20/subagents/agent-a2271d1.jsonl",
    ))
    .into_iter()
    .max_by_key(String::len)
    .unwrap();
    assert_eq!(report.chars().count(), 13_481);
    let ids = ["29ccd257".to_owned()];
    let whole = engine
        .retrieve_context(&ids, ContextMode::Agents, 15_000, false)
        .unwrap();
    assert!(whole.text.contains(&format!("\n{report}\n\n")));
    let small = engine
        .retrieve_context(&ids, ContextMode::Agents, 2_000, false)
        .unwrap();
    assert!(!small.text.contains(&report[..200]));
    assert!(
        small.text.contains("[LEFT OUT · subagent_summary · 3382 tokens, whole with: eywa context 29ccd257 --mode agents --max-tokens"),
        "{}",
        small.text
    );
}

/// `scripts/handoff-report` on the shared corpus meets the issue's targets.
#[test]
fn the_handoff_rubric_holds_on_the_shared_corpus() {
    let Some(real) = support::shared("corpus/claude-code/real_projects") else {
        return;
    };
    let home = corpus_home(&real);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/handoff-report");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(home.path())
        .args(["--eywa", env!("CARGO_BIN_EXE_eywa"), "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    for rule in report["rules"].as_array().unwrap() {
        println!(
            "{}: {}/{} (target {})",
            rule["name"], rule["passed"], rule["total"], rule["target"]
        );
    }
    let rules: Vec<(&str, bool)> = report["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["key"].as_str().unwrap(), r["ok"].as_bool().unwrap()))
        .collect();
    assert_eq!(report["handoffs"].as_array().unwrap().len(), 16);
    for (key, ok) in rules {
        assert!(ok, "{key} is below its target: {report:#}");
    }
}

/// `--summarizer`: the session's markdown (secrets redacted) goes to the command; an
/// answer in seed 000's format becomes the handoff, anything else leaves the deterministic
/// one; answers are cached by what was asked; the daily cap stops calls.
#[test]
fn a_summarizer_command_writes_the_handoff_or_leaves_the_deterministic_one() {
    let home = ClaudeHome::new();
    let id = "d8000000-0000-4000-8000-000000000007";
    let secret = format!("sk-ant-api03-{}", "Ab3_".repeat(22));
    let path = home.session(
        id,
        "/w/shop",
        days_ago(1),
        &[
            (
                &format!("Fix the cart rounding; the key is {secret}"),
                "Fixed it.",
            ),
            ("Add a test", "Added."),
        ],
    );
    let work = tempfile::tempdir().unwrap();
    let answer = work.path().join("answer.md");
    std::fs::write(
        &answer,
        "```markdown\n---\nheadline: Round cart totals per line item\nkeywords: [cart, rounding]\n---\n\n# Round cart totals per line item\n\n## What Happened\n\n- Found the float sum\n- Rounded each line\n\n## Insights\n\n- **Money** -- keep cents as integers\n```\n",
    )
    .unwrap();
    let asked = work.path().join("asked.md");
    let calls = work.path().join("calls");
    let stub = |reply: &str| {
        format!(
            "cat > '{}'; echo call >> '{}'; {reply}",
            asked.display(),
            calls.display()
        )
    };
    let calls_made = || {
        std::fs::read_to_string(&calls)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let data = tempfile::tempdir().unwrap();
    let open = |command: String, daily_tokens: u64| {
        Engine::open(EngineConfig {
            summarizer: Some(eywa::engine::Summarizer {
                daily_tokens,
                ..eywa::engine::Summarizer::new(command)
            }),
            ..EngineConfig::new(data.path().join("eywa"), home.root())
        })
        .unwrap()
    };

    let engine = open(stub(&format!("cat '{}'", answer.display())), 1_000_000);
    let report = engine.ingest().unwrap();
    assert_eq!(report.summaries_made, 1);
    let h = engine.graph().handoff(id).unwrap().unwrap();
    assert_eq!(h.headline, "Round cart totals per line item");
    assert_eq!(h.keywords, ["cart", "rounding"]);
    assert_eq!(
        h.sections.what_happened,
        ["Found the float sum", "Rounded each line"]
    );
    assert_eq!(
        h.sections.insights,
        [("Money".to_owned(), "keep cents as integers".to_owned())]
    );
    assert_eq!(calls_made(), 1);
    let sent = std::fs::read_to_string(&asked).unwrap();
    assert!(sent.contains("## User\n\nFix the cart rounding"), "{sent}");
    assert!(!sent.contains(&secret), "secrets never leave eywa");
    assert!(sent.contains("[REDACTED"), "{sent}");
    drop(engine);

    // The same session read again (its file touched): the cached answer, no call.
    let touch = |p: &Path| {
        let f = std::fs::File::options().write(true).open(p).unwrap();
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
            .unwrap();
    };
    touch(&path);
    let engine = open(stub(&format!("cat '{}'", answer.display())), 1_000_000);
    let report = engine.ingest().unwrap();
    assert_eq!(calls_made(), 1, "cached");
    assert_eq!((report.summaries_made, report.summaries_cached), (0, 1));
    let h = engine.graph().handoff(id).unwrap().unwrap();
    assert_eq!(h.headline, "Round cart totals per line item");
    drop(engine);

    // A new question: a failing command, an answer out of format, and the cap all leave
    // the deterministic handoff.
    for (n, (command, cap, called)) in [
        (stub("exit 3"), 1_000_000, true),
        (stub("echo 'Sure! Here is a summary.'"), 1_000_000, true),
        (stub(&format!("cat '{}'", answer.display())), 10, false),
    ]
    .into_iter()
    .enumerate()
    {
        crate::support::fixture::append(
            &path,
            &[
                json!({"type": "user", "uuid": format!("{id}-extra-{n}"), "sessionId": id,
                      "cwd": "/w/shop", "timestamp": days_ago(1).to_rfc3339(),
                      "message": {"role": "user", "content": format!("One more thing {n}")}})
                .to_string(),
            ],
        );
        let before = calls_made();
        let engine = open(command, cap);
        let report = engine.ingest().unwrap();
        assert_eq!(calls_made() > before, called, "case {n}");
        let counted = (report.summaries_failed, report.summaries_capped);
        assert_eq!(counted, if called { (1, 0) } else { (0, 1) }, "case {n}");
        let h = engine.graph().handoff(id).unwrap().unwrap();
        assert_eq!(
            h.headline, "Fix the cart rounding; the key is [REDACTED:anthropic_key]",
            "case {n}"
        );
        assert!(
            h.sections.what_happened[0].starts_with("Asked: "),
            "case {n}"
        );
    }
}
