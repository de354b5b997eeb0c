//! Planted secrets never reach the graph, a handoff, an index keyspace or an answer.

use eywa::engine::{Engine, EngineConfig};
use eywa::retrieve::GetOptions;
use eywa_storage::Keyspace;
use serde_json::json;

use crate::support::fixture::{ClaudeHome, days_ago, session_lines};

/// One secret of each kind, as they appear in real sessions. Built from pieces so that
/// this file holds no scannable secret itself.
pub(crate) fn secrets() -> Vec<(&'static str, String)> {
    let rep = |s: &str, n: usize| s.repeat(n);
    vec![
        ("anthropic", format!("sk-ant-api03-{}", rep("Ab3_", 22))),
        ("openai", format!("sk-proj-{}", rep("Zx9Q", 12))),
        ("aws_access_key", format!("AKIA{}", "IOSFODNN7EXAMPLE")),
        ("github", format!("ghp_{}", rep("a1B2", 9))),
        (
            "slack",
            format!("xoxb-{}-{}", "123456789012", rep("AbCd", 6)),
        ),
        ("stripe", format!("sk_live_{}", rep("4eC3", 6))),
        ("google", format!("AIza{}", rep("Sy9-", 9)[..35].to_owned())),
        (
            "jwt",
            format!(
                "eyJhbGciOiJIUzI1NiJ9.{}.{}",
                "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
                rep("dozjgNryP4J3jVmNHl0w5N", 1)
            ),
        ),
        ("password", format!("hunter2{}", "-correct-horse")),
        ("bearer", rep("tOkEn4bEaReR", 3)),
        ("url_password", format!("s3cr3t{}", "Pa55w0rd")),
        (
            "private_key",
            format!("MIIEowIBAAKCAQEA{}", rep("q7Zb", 10)),
        ),
        // Two a hostile run found reaching the index before issue 14.
        ("mysql_flag", format!("SpfM2oeq{}", "3hDavJA7")),
        ("short_hf", format!("hf_ns26lrwb{}", "qcab69m64p2g")),
    ]
}

pub(crate) fn planted_texts(s: &[(&'static str, String)]) -> Vec<String> {
    let get = |k: &str| s.iter().find(|(n, _)| *n == k).unwrap().1.clone();
    vec![
        format!("Use this key: {} please", get("anthropic")),
        format!("export OPENAI_API_KEY={}", get("openai")),
        format!(
            "aws configure set aws_access_key_id {}",
            get("aws_access_key")
        ),
        format!(
            "git remote set-url origin https://{}@github.com/me/repo",
            get("github")
        ),
        format!("SLACK_TOKEN is {}", get("slack")),
        format!("stripe.api_key = \"{}\"", get("stripe")),
        format!("maps key {}", get("google")),
        format!("the session cookie was {}", get("jwt")),
        format!("DB_PASSWORD={} in .env", get("password")),
        format!(
            "curl -H 'Authorization: Bearer {}' https://api.example.com",
            get("bearer")
        ),
        format!(
            "DATABASE_URL=postgres://app:{}@db.internal:5432/app",
            get("url_password")
        ),
        format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
            get("private_key")
        ),
        format!("mysql -u root --password {} app", get("mysql_flag")),
        format!("log in with {} then push", get("short_hf")),
    ]
}

/// Documents the session must have put in the text index: every prompt and answer.
fn texts_min() -> usize {
    28
}

#[test]
fn planted_secrets_of_fourteen_kinds_never_reach_the_store_or_an_answer() {
    let secrets = secrets();
    let texts = planted_texts(&secrets);
    let home = ClaudeHome::new();
    let id = "5ec2e7a1-0000-4000-8000-000000000001";
    let exchanges: Vec<(&str, &str)> = texts.iter().map(|t| (t.as_str(), t.as_str())).collect();
    let mut lines = session_lines(id, "/w/vault", days_ago(1), &exchanges);
    lines.push(json!({"type": "custom-title", "customTitle": format!("rotate {}", secrets[3].1), "sessionId": id}).to_string());
    // Secrets in what else a transcript carries: a tool call's input and result, a todo
    // list, a compact summary.
    let stripe = &secrets[5].1;
    lines.push(
        json!({"type": "assistant", "uuid": "t-call", "sessionId": id, "cwd": "/w/vault",
        "message": {"id": "msg_tools", "role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_env", "name": "Bash",
             "input": {"command": format!("export STRIPE_KEY={stripe}")}},
            {"type": "tool_use", "id": "toolu_todo", "name": "TodoWrite",
             "input": {"todos": [{"content": format!("rotate {stripe}"), "status": "pending"}]}}]}})
        .to_string(),
    );
    lines.push(json!({"type": "user", "uuid": "t-result", "parentUuid": "t-call", "sessionId": id,
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_env", "content": format!("STRIPE_KEY={stripe}")}]}}).to_string());
    lines.push(
        json!({"type": "system", "subtype": "compact_boundary", "uuid": "t-b", "parentUuid": null,
        "logicalParentUuid": "t-result", "sessionId": id, "compactMetadata": {"trigger": "auto"}})
        .to_string(),
    );
    lines.push(json!({"type": "user", "uuid": "t-s", "parentUuid": "t-b", "sessionId": id, "isCompactSummary": true,
        "message": {"role": "user", "content": format!("This session is being continued. The key was {}", secrets[0].1)}}).to_string());
    let path = home.root().join("projects/-w-vault");
    std::fs::create_dir_all(path.join("memory")).unwrap();
    std::fs::write(path.join(format!("{id}.jsonl")), lines.join("\n") + "\n").unwrap();
    std::fs::write(
        path.join("memory/MEMORY.md"),
        format!("# Memory\n- deploy with {}\n", secrets[2].1),
    )
    .unwrap();

    let data = tempfile::tempdir().unwrap();
    let config = EngineConfig::new(data.path().join("eywa"), home.root());
    let engine = Engine::open(config).unwrap();
    let report = engine.ingest().unwrap();
    assert_eq!(report.counts.sessions, 1);
    // Each planted text appears twice (prompt and answer); the title once more.
    assert!(report.redacted.total() >= 24, "{:?}", report.redacted);

    // Every byte of every warm keyspace (but the blob records: small archives live there,
    // and an archive is the user's own file), the view snapshot and the `get` index.
    let store = engine.graph().store();
    let mut haystack: Vec<u8> = Vec::new();
    for keyspace in Keyspace::ALL.into_iter().filter(|k| *k != Keyspace::Blobs) {
        for entry in store.entries(keyspace, &[]) {
            let (k, v) = entry.unwrap();
            haystack.extend(k);
            haystack.extend(v);
        }
    }
    if let Ok(snapshot) = std::fs::read(store.path().join("index/graph-view.bin")) {
        haystack.extend(snapshot);
    }
    for file in ["base.seg", "delta.seg"] {
        haystack.extend(std::fs::read(store.path().join("index/handoffs").join(file)).unwrap());
    }
    // The saved read states in the cold tier (the archives are the sources themselves).
    let mut states = 0;
    for source in engine.graph().sources().unwrap() {
        if let Some(hash) = &source.state {
            haystack.extend(store.read_blob(hash).unwrap().unwrap());
            states += 1;
        }
    }
    assert_eq!(states, 1);
    // Every document of the text index.
    let indexed = engine.text_index().unwrap().texts(100_000).unwrap();
    assert!(indexed.len() > texts_min(), "{}", indexed.len());
    haystack.extend(indexed.join("\n").into_bytes());
    // What the API serves: the handoff ranking and the session's messages.
    let got = engine
        .get_handoffs(
            "vault",
            &GetOptions {
                days_back: 30,
                ..GetOptions::default()
            },
        )
        .unwrap();
    assert_eq!(got.hits.len(), 1);
    haystack.extend(format!("{:?}", got.hits).into_bytes());
    let session = engine.session(id).unwrap();
    // The exchanges, the tool-calling response and the compact summary.
    assert_eq!(session.messages.len(), texts.len() * 2 + 2);
    assert!(session.messages.iter().any(|m| !m.tool_calls.is_empty()));
    haystack.extend(format!("{:?} {:?}", session.messages, session.episode).into_bytes());

    let haystack = String::from_utf8_lossy(&haystack);
    for (kind, secret) in &secrets {
        assert!(!haystack.contains(secret.as_str()), "{kind} secret leaked");
    }
    assert!(
        haystack.contains("[REDACTED:"),
        "redaction markers are kept"
    );
}

// Issue 30: every way text enters, and every way it comes back out.

#[path = "../src/extract/redact/planted.rs"]
mod planted;

use eywa::extract::Redaction;

use crate::support::{eywa_command, succeed};

/// The secret of a planted row: what its text has that the redacted line has not.
fn secret_of(text: &str, redacted: &str) -> String {
    let prefix = text
        .char_indices()
        .zip(redacted.chars())
        .find(|((_, a), b)| a != b)
        .map_or(text.len(), |((i, _), _)| i);
    let suffix = text[prefix..]
        .chars()
        .rev()
        .zip(redacted[prefix..].chars().rev())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a.len_utf8())
        .sum::<usize>();
    text[prefix..text.len() - suffix].to_owned()
}

/// Every planted row of every kind the README lists: (kind, text, its secret).
fn planted_rows() -> Vec<(Redaction, String, String)> {
    let rows: Vec<(Redaction, String, String)> = planted::planted()
        .into_iter()
        .map(|(kind, text, redacted)| {
            let secret = secret_of(&text, &redacted);
            (kind, text, secret)
        })
        .collect();
    for kind in Redaction::ALL {
        assert!(rows.iter().any(|(k, ..)| *k == kind), "no planted {kind:?}");
    }
    rows
}

/// Asks `eywa mcp` each tool call in turn; returns each answer's text.
fn mcp_answers(eywa: std::process::Command, calls: &[serde_json::Value]) -> Vec<String> {
    let mut mcp = crate::support::stdio_mcp::Mcp::start(eywa);
    let answers = calls
        .iter()
        .map(|call| {
            let answer = mcp.call("tools/call", call.clone());
            let result = &answer["result"];
            assert_eq!(result["isError"], false, "{call}: {answer}");
            result["content"][0]["text"].as_str().unwrap().to_owned()
        })
        .collect();
    mcp.stop();
    answers
}

/// Every key and value of every warm keyspace but the blob records (small archives live
/// there, and an archive is the user's own file).
fn warm_bytes(store: &eywa_storage::Store) -> Vec<u8> {
    let mut held = Vec::new();
    for keyspace in Keyspace::ALL.into_iter().filter(|k| *k != Keyspace::Blobs) {
        for entry in store.entries(keyspace, &[]) {
            let (k, v) = entry.unwrap();
            held.extend(k);
            held.extend(v);
        }
    }
    held
}

#[test]
fn issue_30_no_planted_secret_comes_back_from_documents_memories_hooks_or_mcp() {
    let rows = planted_rows();
    let home = ClaudeHome::new();
    let session = "5ec2e7a1-0000-4000-8000-000000000030";
    home.session(
        session,
        "/w/vault",
        days_ago(1),
        &[("Rotate the keys of the vault service", "Rotated them.")],
    );
    let data = tempfile::tempdir().unwrap();
    let data = data.path().join("eywa");
    let files = tempfile::tempdir().unwrap();
    let runbook = files.path().join("runbook.md");
    let lines: Vec<&str> = rows.iter().map(|(_, text, _)| text.as_str()).collect();
    std::fs::write(
        &runbook,
        format!("# Vault runbook\n\n{}\n", lines.join("\n\n")),
    )
    .unwrap();
    let runbook = runbook.display().to_string();
    let eywa = || eywa_command(&data, home.root());
    let text = |out: std::process::Output| String::from_utf8(out.stdout).unwrap();
    succeed(eywa().args(["ingest"]));
    succeed(eywa().args(["docs", "add", &runbook, "--project", "vault"]));
    // A client's memory: every planted line, and a token as a tag.
    let github = &rows
        .iter()
        .find(|(k, ..)| *k == Redaction::GithubToken)
        .unwrap()
        .2;
    let memory = lines.join("\n");
    assert!(memory.chars().count() < 16_000);
    succeed(eywa().args([
        "memory",
        "add",
        &memory,
        "--project",
        "vault",
        "--tag",
        github,
    ]));

    let mut answers: Vec<(&str, String)> = vec![
        (
            "docs show",
            text(succeed(eywa().args(["docs", "show", &runbook]))),
        ),
        (
            "docs show --json",
            text(succeed(eywa().args(["docs", "show", &runbook, "--json"]))),
        ),
        (
            "search --type document",
            text(succeed(eywa().args([
                "search",
                "export key token password secret",
                "--type",
                "document",
                "--json",
            ]))),
        ),
        (
            "memory recall",
            text(succeed(eywa().args([
                "memory",
                "recall",
                "export key token password",
                "--json",
            ]))),
        ),
        (
            "memory list",
            text(succeed(eywa().args(["memory", "list", "--json"]))),
        ),
    ];
    // The SessionStart hook of a new session in that project.
    let mut hook = eywa()
        .args(["hook", "session-start"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let input = json!({"session_id": "new-session", "cwd": "/w/vault",
                           "hook_event_name": "SessionStart", "source": "startup"});
        hook.stdin
            .take()
            .unwrap()
            .write_all(input.to_string().as_bytes())
            .unwrap();
    }
    let hook = text(hook.wait_with_output().unwrap());
    assert!(hook.contains("additionalContext"), "{hook}");
    answers.push(("hook session-start", hook));
    // An agent's tools over MCP.
    let mcp = mcp_answers(
        eywa(),
        &[
            json!({"name": "eywa_recall", "arguments": {"query": "export key token password", "max_tokens": 20000}}),
            json!({"name": "eywa_docs", "arguments": {"document": runbook, "max_tokens": 20000}}),
            json!({"name": "eywa_docs", "arguments": {"query": "export key token password", "max_tokens": 20000}}),
            json!({"name": "eywa_search", "arguments": {"query": "export key token password", "type": "document", "max_tokens": 20000}}),
        ],
    );
    for (name, answer) in [
        "eywa_recall",
        "eywa_docs document",
        "eywa_docs query",
        "eywa_search",
    ]
    .into_iter()
    .zip(mcp)
    {
        answers.push((name, answer));
    }
    // And the store itself: every warm keyspace but the blob records, and the document's
    // text in the cold tier.
    let engine = Engine::open(EngineConfig::new(&data, home.root())).unwrap();
    let store = engine.graph().store();
    let mut held = warm_bytes(store);
    let doc = engine.document(&runbook, None, None).unwrap();
    held.extend(store.read_blob(&doc.info.text_blob).unwrap().unwrap());
    held.extend(
        engine
            .text_index()
            .unwrap()
            .texts(100_000)
            .unwrap()
            .join("\n")
            .into_bytes(),
    );
    answers.push(("the store", String::from_utf8_lossy(&held).into_owned()));

    for (kind, _, secret) in &rows {
        for (place, answer) in &answers {
            assert!(
                !answer.contains(secret.as_str()),
                "a {kind:?} secret came back from {place}"
            );
        }
    }
    for (place, answer) in &answers[..5] {
        assert!(
            answer.contains("[REDACTED:"),
            "{place} shows where secrets were: {answer}"
        );
    }
}

#[test]
fn issue_30_a_store_written_before_is_scrubbed_once_on_open() {
    let rows = planted_rows();
    let secret = |kind: Redaction| rows.iter().find(|(k, ..)| *k == kind).unwrap().2.clone();
    let (github, aws, stripe) = (
        secret(Redaction::GithubToken),
        secret(Redaction::AwsAccessKeyId),
        secret(Redaction::StripeKey),
    );
    let home = ClaudeHome::new();
    let session = "5ec2e7a1-0000-4000-8000-000000000031";
    home.session(
        session,
        "/w/vault",
        days_ago(1),
        &[("Rotate the vault keys", "Done.")],
    );
    let data = tempfile::tempdir().unwrap();
    let data = data.path().join("eywa");
    let files = tempfile::tempdir().unwrap();
    let note = files.path().join("note.md");
    std::fs::write(&note, "# Vault\n\nThe vault keys rotate monthly.\n").unwrap();
    {
        // Written as eywa did before: a document, a memory and a handoff holding secrets,
        // and a text index built from them.
        let engine = Engine::open(EngineConfig::new(&data, home.root())).unwrap();
        engine.ingest().unwrap();
        engine
            .add_documents(std::slice::from_ref(&note), None)
            .unwrap();
        let store = engine.graph().store();
        let mut batch = eywa_storage::Batch::new();
        for entry in store.scan::<eywa::docs::DocumentInfo>(Keyspace::Docs, b"v") {
            let (key, mut info) = entry.unwrap();
            let raw = format!("# Vault {github}\n\nThe vault keys rotate monthly. Key {aws}.\n");
            let blob = store.blobs().put_small(raw.as_bytes()).unwrap();
            batch.put_blob(&blob).unwrap();
            info.text_blob = blob.hash;
            info.title = format!("Vault {github}");
            batch.put(Keyspace::Docs, key, &info).unwrap();
        }
        engine
            .remember(eywa::memory::NewMemory::new(
                "The vault's keys are rotated monthly.",
            ))
            .unwrap();
        for entry in store.scan::<eywa::memory::MemoryItem>(Keyspace::Memories, b"v") {
            let (key, mut m) = entry.unwrap();
            m.content = format!("The vault's keys are rotated monthly; stripe uses {stripe}");
            batch.put(Keyspace::Memories, key, &m).unwrap();
        }
        for entry in store.scan::<eywa::model::Handoff>(Keyspace::Docs, b"h") {
            let (key, mut h) = entry.unwrap();
            h.headline = format!("Rotate the vault keys {github}");
            batch.put(Keyspace::Docs, key, &h).unwrap();
        }
        batch
            .put(Keyspace::Settings, b"text_index_dirty".to_vec(), &true)
            .unwrap();
        store.apply(batch).unwrap();
        engine.reindex().unwrap();
        let found = engine
            .text_index()
            .unwrap()
            .texts(100_000)
            .unwrap()
            .join("\n");
        assert!(
            found.contains(&stripe) && found.contains(&github),
            "the old index held them"
        );
        // As a store of the version before this change: never scrubbed.
        let mut batch = eywa_storage::Batch::new();
        batch.delete(Keyspace::Settings, b"secrets_scrubbed".to_vec());
        store.apply(batch).unwrap();
    }
    // The first command to open it says what it scrubbed.
    let out = succeed(
        eywa_command(&data, home.root())
            .env("EYWA_LOG", "eywa=info")
            .args(["docs", "show", &note.display().to_string()]),
    );
    let said = String::from_utf8_lossy(&out.stderr);
    let line = said
        .lines()
        .find(|l| l.contains("scrubbed the store once"))
        .unwrap_or_else(|| panic!("no scrub line in:\n{said}"));
    for count in ["documents=1", "memories=1", "handoffs=1"] {
        assert!(line.contains(count), "{line}");
    }
    let shown = String::from_utf8(out.stdout).unwrap();
    assert!(shown.contains("[REDACTED:github_token]"), "{shown}");
    // Nothing of them is left: records, the cold tier, the index, the handoff files.
    let engine = Engine::open(EngineConfig::new(&data, home.root())).unwrap();
    let store = engine.graph().store();
    let mut held = warm_bytes(store);
    for hash in store.blobs().list().unwrap() {
        held.extend(store.read_blob(&hash).unwrap().unwrap_or_default());
    }
    held.extend(
        engine
            .text_index()
            .unwrap()
            .texts(100_000)
            .unwrap()
            .join("\n")
            .into_bytes(),
    );
    for file in walk(&data.join("handoffs")) {
        held.extend(std::fs::read(file).unwrap());
    }
    held.extend(std::fs::read(data.join("handoff-index.json")).unwrap());
    let held = String::from_utf8_lossy(&held);
    for (what, secret) in [("github", &github), ("aws", &aws), ("stripe", &stripe)] {
        assert!(
            !held.contains(secret.as_str()),
            "the {what} secret is still held"
        );
    }
    // Once: a second open scrubs nothing and says nothing.
    drop(engine);
    let out = succeed(
        eywa_command(&data, home.root())
            .env("EYWA_LOG", "eywa=info")
            .args(["stats"]),
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("scrubbed"));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}
