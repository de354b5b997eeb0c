//! The web view against hostile input: secrets planted in sessions, memories and
//! documents never reach a page; huge, deeply nested and broken transcript lines leave
//! every page answering; query strings, paths and forms that are too long, malformed or
//! aimed elsewhere get a 4xx saying why, never a 500.

use std::sync::Arc;

use eywa::engine::{Engine, EngineConfig};
use eywa::model::{Clock, Timestamp};
use serde_json::json;

use crate::secrets::{planted_texts, secrets};
use crate::support::fixture::{ClaudeHome, days_ago, session_lines};
use crate::support::http::{self, Reply, csrf};
use crate::support::server::TestServer;

const VAULT: &str = "5ec2e7a1-0000-4000-8000-0000000000a1";
const HUGE: &str = "5ec2e7a1-0000-4000-8000-0000000000a2";

/// A page answered without a server error, and without any of `secrets`.
fn clean(reply: &Reply, what: &str, secrets: &[(&str, String)]) {
    assert!(
        reply.status < 500,
        "{what}: {} {}",
        reply.status,
        reply.body
    );
    for (kind, secret) in secrets {
        assert!(
            !reply.body.contains(secret.as_str()),
            "{what} shows the {kind} secret"
        );
    }
}

#[test]
fn planted_secrets_reach_no_page() {
    let secrets = secrets();
    let texts = planted_texts(&secrets);
    let home = ClaudeHome::new();
    let exchanges: Vec<(&str, &str)> = texts.iter().map(|t| (t.as_str(), t.as_str())).collect();
    let lines = session_lines(VAULT, "/w/vault", days_ago(1), &exchanges);
    home.write_raw(
        "-w-vault",
        &format!("{VAULT}.jsonl"),
        &(lines.join("\n") + "\n"),
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let clock = Clock::manual(Timestamp(days_ago(0).timestamp_millis()));
    let server = TestServer::start_web(Arc::new(engine), clock, &[]);
    let addr = server.addr;

    // A memory and a document with secrets in them, written through the pages' forms.
    let token = csrf(&http::get(addr, "/memories").body);
    let remembered = http::post_form(
        addr,
        "/memories",
        &[
            ("csrf", &token),
            ("content", &format!("deploy key is {}", secrets[1].1)),
            ("project", "vault"),
        ],
    );
    assert_eq!(remembered.status, 303, "{}", remembered.body);
    let memory = remembered.header("location").unwrap().to_owned();
    let notes = home.root().join("notes.md");
    std::fs::write(
        &notes,
        format!("# Vault notes\n\n{}\n{}\n", texts[0], texts[4]),
    )
    .unwrap();
    let added = http::post_form(
        addr,
        "/documents",
        &[("csrf", &token), ("path", &notes.display().to_string())],
    );
    assert_eq!(added.status, 303, "{}", added.body);
    let document = added.header("location").unwrap().to_owned();

    let session = http::get(addr, &format!("/sessions/{VAULT}"));
    assert_eq!(session.status, 200);
    assert!(session.body.contains("[REDACTED:"), "{}", session.body);
    let pages = vec![
        "/".to_owned(),
        "/projects/vault".to_owned(),
        format!("/sessions/{VAULT}"),
        format!("/sessions/{VAULT}/markdown"),
        "/search?q=key".to_owned(),
        "/search?q=password&mode=lexical".to_owned(),
        "/context?project=vault".to_owned(),
        "/nodes/project:vault".to_owned(),
        format!("/nodes/session:{VAULT}"),
        "/memories".to_owned(),
        "/memories?q=deploy+key".to_owned(),
        memory,
        "/documents".to_owned(),
        document,
        "/stats".to_owned(),
    ];
    for page in &pages {
        clean(&http::get(addr, page), page, &secrets);
    }
    // Searching for a secret itself finds nothing that shows it (the search box keeps
    // what was typed in it).
    for (_, secret) in &secrets {
        let query = secret.replace(['-', '.', '+', '/'], " ");
        let page = format!("/search?q={}", query.replace(' ', "+"));
        let mut reply = http::get(addr, &page);
        reply.body = reply.body.replace(&query, "");
        clean(&reply, &page, &secrets);
    }
}

/// One transcript of what a broken or hostile writer leaves: a 3 MB prompt, a line
/// nested 100,000 deep, a line that is not UTF-8, a 2 MB tool input, markup and control
/// characters.
fn hostile_home() -> ClaudeHome {
    let home = ClaudeHome::new();
    let huge = format!("Summarize this log:\n{}", "x".repeat(3_000_000));
    let mut lines = session_lines(
        HUGE,
        "/w/odd",
        days_ago(1),
        &[
            (huge.as_str(), "Done."),
            (
                "A \u{0}\u{7}\u{1b}[31m bell and escape",
                "<svg onload=alert(1)>",
            ),
        ],
    );
    lines.push(format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)));
    lines.push(
        json!({"type": "assistant", "uuid": "odd-call", "sessionId": HUGE, "cwd": "/w/odd",
               "message": {"id": "msg_odd", "role": "assistant", "content": [
                   {"type": "tool_use", "id": "toolu_odd", "name": "Write",
                    "input": {"content": "y".repeat(2_000_000)}}]}})
        .to_string(),
    );
    let mut bytes = (lines.join("\n") + "\n").into_bytes();
    bytes.extend_from_slice(b"{\"type\":\"user\",\"message\":{\"content\":\"\xff\xfe bad\"}}\n");
    let dir = home.root().join("projects/-w-odd");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{HUGE}.jsonl")), bytes).unwrap();
    home
}

#[test]
fn huge_nested_and_broken_lines_leave_every_page_answering() {
    let home = hostile_home();
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let clock = Clock::manual(Timestamp(days_ago(0).timestamp_millis()));
    let server = TestServer::start_web(Arc::new(engine), clock, &[]);
    let addr = server.addr;

    let session = http::get(addr, &format!("/sessions/{HUGE}"));
    assert_eq!(session.status, 200, "{}", session.body);
    // The 3 MB prompt is cut on the page, the rest left to the export.
    assert!(
        session.body.len() < 1_000_000,
        "{} bytes",
        session.body.len()
    );
    assert!(session.body.contains("more bytes"), "the cut is said");
    assert!(session.body.contains("&lt;svg onload=alert(1)&gt;"));
    assert!(!session.body.contains("<svg onload"));
    assert!(
        !session.body.contains('\u{1b}'),
        "no escape sequence reaches a page"
    );
    for page in [
        "/".to_owned(),
        "/projects/odd".to_owned(),
        format!("/sessions/{HUGE}/markdown"),
        "/search?q=summarize".to_owned(),
        "/context?project=odd".to_owned(),
        "/nodes/project:odd".to_owned(),
        "/stats".to_owned(),
    ] {
        let reply = http::get(addr, &page);
        assert_eq!(reply.status, 200, "{page}: {}", reply.body);
    }
}

#[test]
fn hostile_paths_queries_and_forms_get_a_4xx_that_says_why() {
    let home = hostile_home();
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let clock = Clock::manual(Timestamp(days_ago(0).timestamp_millis()));
    let tokens = eywa::server::Tokens::new("w-0123456789abcdef0123", "r-0123456789abcdef0123");
    let server = TestServer::start_web_signed(Arc::new(engine), clock, tokens);
    let addr = server.addr;
    let long = "a".repeat(6_000);
    let host = addr.to_string();
    let cookie = {
        let reply = http::post_form(
            addr,
            "/login",
            &[("token", "w-0123456789abcdef0123"), ("next", "/")],
        );
        reply
            .header("set-cookie")
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_owned()
    };
    let get = |path: &str| http::request_with(addr, "GET", path, &host, &[("Cookie", &cookie)]);
    for (path, statuses) in [
        (format!("/search?q={long}"), &[200, 400][..]),
        (format!("/nodes/{long}"), &[400, 404][..]),
        (format!("/sessions/{long}"), &[400, 404][..]),
        ("/sessions/%00%00%00%00".to_owned(), &[400, 404][..]),
        (
            "/sessions/..%2F..%2F..%2Fetc%2Fpasswd".to_owned(),
            &[400, 404][..],
        ),
        ("/nodes/file:..%2F..%2Fetc%2Fpasswd".to_owned(), &[404][..]),
        (
            "/projects/odd?page=99999999999999999999999".to_owned(),
            &[400][..],
        ),
        ("/search?q=x&since=notadate".to_owned(), &[400][..]),
        ("/search?q=x&mode=%FF%FE".to_owned(), &[400][..]),
        ("/search?q=%FF%FE".to_owned(), &[200, 400][..]),
        ("/memories?q=%E2%28%A1".to_owned(), &[200, 400][..]),
        ("/context?tokens=-5".to_owned(), &[400][..]),
        ("/nodes/project:odd?depth=999".to_owned(), &[400][..]),
        (
            "/nodes/project:odd?valid=yesterday-ish".to_owned(),
            &[400][..],
        ),
    ] {
        let reply = get(&path);
        assert!(
            statuses.contains(&reply.status),
            "{}: {} {}",
            &path[..path.len().min(80)],
            reply.status,
            &reply.body[..reply.body.len().min(400)]
        );
        if reply.status >= 400 {
            assert!(reply.body.contains(r#"<p class="why">"#), "{}", reply.body);
        }
        assert!(reply.body.len() < 400_000, "{} bytes", reply.body.len());
    }

    // A request line too long for the server is refused before any page's work.
    let status = get(&format!("/search?q={}", "a".repeat(100_000))).status;
    assert!([400, 414, 431].contains(&status), "{status}");

    // The sign-in form: a 1 MB token, a token of control characters, a `next` elsewhere.
    for token in ["t".repeat(1_000_000), "\u{0}\r\nSet-Cookie: x=1".to_owned()] {
        let reply = http::post_form(addr, "/login", &[("token", &token), ("next", "/")]);
        assert!([400, 401, 413].contains(&reply.status), "{}", reply.status);
        assert!(reply.header("set-cookie").is_none());
    }
    for next in [
        "//evil.example/",
        "https://evil.example/",
        "/\\evil.example",
        "javascript:alert(1)",
    ] {
        let reply = http::post_form(
            addr,
            "/login",
            &[("token", "r-0123456789abcdef0123"), ("next", next)],
        );
        assert_eq!(reply.status, 303, "{next}");
        assert_eq!(reply.header("location"), Some("/"), "{next}");
    }
    // A form with fields too long, or not a form at all, writes nothing.
    let token = csrf(&get("/memories").body);
    let write = |fields: &[(&str, &str)]| {
        http::post_form_with(addr, "/memories", fields, &[("Cookie", &cookie)])
    };
    let huge = "m".repeat(3_000_000);
    for fields in [
        vec![("csrf", token.as_str()), ("content", huge.as_str())],
        vec![
            ("csrf", token.as_str()),
            ("content", "ok"),
            ("importance", "NaN"),
        ],
        vec![("csrf", token.as_str())],
    ] {
        let reply = write(&fields);
        assert!(
            (400..500).contains(&reply.status),
            "{}: {}",
            reply.status,
            reply.body
        );
    }
    assert!(get("/memories").body.contains("0 memories"));
}
