//! Planted secrets never reach the graph, a handoff, an index keyspace or an answer.

use eywa::engine::{Engine, EngineConfig};
use eywa::retrieve::GetOptions;
use eywa_storage::Keyspace;
use serde_json::json;

use crate::support::fixture::{ClaudeHome, days_ago, session_lines};

/// One secret of each kind, as they appear in real sessions. Built from pieces so that
/// this file holds no scannable secret itself.
fn secrets() -> Vec<(&'static str, String)> {
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

fn planted_texts(s: &[(&'static str, String)]) -> Vec<String> {
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
