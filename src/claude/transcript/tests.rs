use super::*;
use crate::claude::line::Usage;
use crate::model::Timestamp;

fn read(lines: &[&str]) -> Transcript {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    read_transcript(&path, "s").unwrap()
}

#[test]
fn wrappers_meta_and_tool_results_are_not_prompts() {
    let t = read(&[
        r#"{"type":"user","isMeta":true,"message":{"content":"Caveat: ignore"}}"#,
        r#"{"type":"user","message":{"content":"<command-name>/clear</command-name>"}}"#,
        r#"{"type":"user","message":{"content":"<system-reminder>x</system-reminder>  "}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","content":"ok"}]}}"#,
        r#"{"type":"user","message":{"content":"[Request interrupted by user]"}}"#,
        r#"{"type":"user","message":{"content":"<system-reminder>r</system-reminder>Fix the parser"}}"#,
        r#"{"type":"user","message":{"content":"<ide_selection>lines 1-2</ide_selection>"}}"#,
    ]);
    assert_eq!(t.user_lines, 7);
    assert_eq!(t.prompts, ["Fix the parser"]);
}

#[test]
fn steering_messages_taken_from_the_queue_are_prompts() {
    let t = read(&[
        r#"{"type":"user","uuid":"u1","message":{"content":"Refactor the cache"}}"#,
        r#"{"type":"queue-operation","operation":"enqueue","content":[{"type":"text","text":"queued"}]}"#,
        r#"{"type":"queue-operation","operation":"dequeue"}"#,
        r#"{"type":"queue-operation","operation":"remove","content":"<system-reminder>x</system-reminder>actually keep the old API"}"#,
        r#"{"type":"queue-operation","operation":"remove","content":[{"type":"text","text":"and skip the tests"}]}"#,
    ]);
    assert_eq!(
        t.prompts,
        [
            "Refactor the cache",
            "actually keep the old API",
            "and skip the tests"
        ]
    );
    assert_eq!(t.prompt_count, 3);
}

#[test]
fn split_responses_count_once_and_tools_are_deduped() {
    let t = read(&[
        r#"{"type":"assistant","timestamp":"2026-01-01T00:00:02Z","message":{"id":"m1","model":"claude-x","content":[{"type":"thinking","thinking":""}]}}"#,
        r#"{"type":"assistant","timestamp":"2026-01-01T00:00:01Z","message":{"id":"m1","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}]}}"#,
        r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}]}}"#,
        r#"{"type":"assistant","message":{"id":"m2","model":"<synthetic>","content":[{"type":"text","text":"done"}]}}"#,
    ]);
    assert_eq!(t.assistant_lines, 4);
    assert_eq!(t.assistant_responses, 2);
    assert_eq!(t.tool_calls, 1);
    assert_eq!(t.models.get("claude-x"), Some(&1));
    assert_eq!(t.models.len(), 1);
    assert_eq!(t.first_ts, Timestamp::parse("2026-01-01T00:00:01Z"));
    assert_eq!(t.last_ts, Timestamp::parse("2026-01-01T00:00:02Z"));
}

#[test]
fn long_pauses_do_not_count_as_active_time() {
    let line =
        |ts: &str| format!(r#"{{"type":"user","timestamp":"{ts}","message":{{"content":"x"}}}}"#);
    let lines = [
        line("2026-01-01T10:10:00Z"),
        line("2026-01-01T10:00:00Z"),
        line("2026-01-01T18:00:00Z"), // 7h50m later: capped at 30m
        line("2026-01-01T18:05:00Z"),
    ];
    let t = read(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(t.active_ms, (10 + 30 + 5) * 60 * 1000);
}

#[test]
fn usage_of_a_response_split_over_lines_counts_once_at_its_most_complete() {
    // Q4: one response, three lines, usage growing; a second response; a line without
    // an id counts on its own.
    let t = read(&[
        r#"{"type":"assistant","requestId":"r1","message":{"id":"m1","usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":100},"content":[{"type":"thinking","thinking":"x"}]}}"#,
        r#"{"type":"assistant","requestId":"r1","message":{"id":"m1","usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":100},"content":[{"type":"text","text":"a"}]}}"#,
        r#"{"type":"assistant","requestId":"r1","message":{"id":"m1","usage":{"input_tokens":10,"output_tokens":120,"cache_read_input_tokens":100},"content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}}"#,
        r#"{"type":"assistant","requestId":"r2","message":{"id":"m2","usage":{"input_tokens":7,"output_tokens":30},"content":[{"type":"text","text":"b"}]}}"#,
        r#"{"type":"assistant","usage":{"input_tokens":1,"output_tokens":2},"message":{"content":[{"type":"text","text":"old"}]}}"#,
    ]);
    assert_eq!(
        t.usage,
        Usage {
            input: 10 + 7 + 1,
            output: 120 + 30 + 2,
            cache_creation: 0,
            cache_read: 100,
        }
    );
}

#[test]
fn the_last_ai_title_is_kept() {
    let t = read(&[
        r#"{"type":"ai-title","aiTitle":"Old title","sessionId":"s"}"#,
        r#"{"type":"user","message":{"content":"hi"}}"#,
        r#"{"type":"ai-title","aiTitle":"Fix the parser race","sessionId":"s"}"#,
    ]);
    assert_eq!(t.ai_title.as_deref(), Some("Fix the parser race"));
}

#[test]
fn garbage_and_truncated_lines_are_skipped_and_counted() {
    let t = read(&[
        r#"{"type":"user","cwd":"/w/p","message":{"content":"hello there"}}"#,
        "this is not json",
        r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"hi"}]}}"#,
        r#"{"type":"assistant","message":{"id":"m2","cont"#,
    ]);
    assert_eq!(t.lines, 4);
    assert_eq!(t.skipped_lines, 2);
    assert!(t.has_messages());
    assert_eq!(t.cwds, ["/w/p"]);
}

/// Reading a file whole and reading it in two goes (cut anywhere, even mid-line, the
/// read point stored as MessagePack in between) give the same transcript.
#[test]
fn reading_on_from_a_read_point_matches_reading_whole() {
    let lines = [
        r#"{"type":"summary","summary":"Label","leafUuid":"a2"}"#,
        r#"{"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:00Z","cwd":"/w/p","message":{"content":"Fix the parser"}}"#,
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","requestId":"r1","timestamp":"2026-01-01T00:00:05Z","message":{"id":"m1","model":"claude-x","usage":{"input_tokens":3,"output_tokens":1},"content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/w/p/a.rs"}}]}}"#,
        r#"{"type":"user","uuid":"r1","parentUuid":"a1","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"no"}]}}"#,
        r#"{"type":"user","uuid":"s1","parentUuid":"r1","isSidechain":true,"message":{"content":"agent task"}}"#,
        r#"{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"r1","compactMetadata":{"trigger":"auto","preTokens":9}}"#,
        r#"{"type":"user","uuid":"c1","parentUuid":"b1","isCompactSummary":true,"message":{"content":"This session is being continued."}}"#,
        r#"{"type":"user","uuid":"u2","parentUuid":"c1","timestamp":"2026-01-01T00:09:00Z","message":{"content":"Now the lexer"}}"#,
        r#"{"type":"assistant","uuid":"a2","parentUuid":"u2","requestId":"r2","message":{"id":"m2","usage":{"input_tokens":4,"output_tokens":8},"content":[{"type":"text","text":"Done with the lexer."}]}}"#,
        r#"{"type":"ai-title","aiTitle":"Parser and lexer"}"#,
    ];
    let text = lines.join("\n") + "\n";
    let mut whole = read_transcript_from(text.as_bytes(), "s", Mode::Main).unwrap();
    let passages = std::mem::take(&mut whole.passages);
    let expected = format!("{whole:?}");
    for cut in (0..text.len()).step_by(7) {
        let (first, point) =
            read_resumable(&text.as_bytes()[..cut], "s", Mode::Main, &NoHistory, None).unwrap();
        let bytes = rmp_serde::to_vec(&point).unwrap();
        let point: ReadPoint = rmp_serde::from_slice(&bytes).unwrap();
        let rest = &text.as_bytes()[point.offset as usize..];
        let (mut resumed, end) =
            read_resumable(rest, "s", Mode::Main, &NoHistory, Some(point)).unwrap();
        // The two reads' passages are the whole read's (a half-written line read twice
        // gives its passage twice, the same both times).
        let mut both = first.passages.clone();
        both.extend(std::mem::take(&mut resumed.passages));
        both.sort_by_key(|p| (p.agent.clone(), p.seq, p.part));
        both.dedup();
        let mut want = passages.clone();
        want.sort_by_key(|p| (p.agent.clone(), p.seq, p.part));
        assert_eq!(both, want, "cut at {cut}");
        assert_eq!(format!("{resumed:?}"), expected, "cut at {cut}");
        assert_eq!(end.offset, text.len() as u64);
    }
    // Passages: messages with the message before as context; tool calls and compact
    // summaries without; the inline run's prompt is its own.
    let shown: Vec<(&str, &str, Option<&str>, Option<&str>)> = passages
        .iter()
        .map(|p| {
            (
                p.kind.as_str(),
                p.text.as_str(),
                p.context.as_deref(),
                p.agent.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("user_message", "Fix the parser", None, None),
            ("tool_call", r#"Edit {"file_path":"/w/p/a.rs"}"#, None, None),
            (
                "compact_summary",
                "This session is being continued.",
                None,
                None
            ),
            (
                "user_message",
                "Now the lexer",
                Some("Fix the parser"),
                None
            ),
            (
                "assistant_response",
                "Done with the lexer.",
                Some("Now the lexer"),
                None
            ),
            ("user_message", "agent task", None, Some("inline-s1")),
        ]
    );
    assert_eq!(whole.summaries, ["Label"]);
    assert_eq!(whole.compactions.len(), 1);
    assert_eq!(whole.tools["Edit"].errors, 1);
}

#[test]
fn only_summaries_of_this_file_are_kept() {
    let t = read(&[
        r#"{"type":"summary","summary":"Elsewhere","leafUuid":"other"}"#,
        r#"{"type":"summary","summary":"Here","leafUuid":"u1"}"#,
        r#"{"type":"user","uuid":"u1","message":{"content":"x"}}"#,
    ]);
    assert_eq!(t.summaries, ["Here"]);
}
