//! Memories: remember, recall (relevance × decayed weight), update with history and a new
//! embedding, forget (hidden from recall, kept in history), decay and promotion on an
//! injected clock, and the graph edges a memory gets.

use std::sync::Arc;

use eywa::engine::{Embedding, Engine, EngineConfig};
use eywa::graph::EdgeFilter;
use eywa::memory::{Change, MemoryFilter, MemoryUpdate, NewMemory, RecallQuery};
use eywa::model::{Clock, MemoryType, Timestamp};

use crate::support::fixture::{ClaudeHome, days_ago};
use crate::support::model::WordsEmbedder;

const SHOP: &str = "d0000000-0000-4000-8000-000000000001";
const DAY: i64 = 86_400_000;

fn home() -> ClaudeHome {
    let home = ClaudeHome::new();
    home.session(
        SHOP,
        "/w/shop",
        days_ago(2),
        &[(
            "Fix the coupon rounding",
            "Totals now round once, in cents.",
        )],
    );
    home
}

fn open(home: &ClaudeHome, clock: &Clock, model: Option<Arc<WordsEmbedder>>) -> Engine {
    let config = EngineConfig {
        clock: clock.clone(),
        ..EngineConfig::temporary(home.root())
    };
    let config = match model {
        Some(m) => config.with_embedding(Embedding::Embedder(m)),
        None => config,
    };
    let engine = Engine::open(config).unwrap();
    engine.ingest().unwrap();
    engine
}

fn recall(engine: &Engine, query: &str) -> Vec<(String, f32)> {
    engine
        .recall(&RecallQuery {
            query: query.into(),
            limit: 10,
            project: None,
            types: Vec::new(),
            tags: Vec::new(),
        })
        .unwrap()
        .into_iter()
        .map(|h| (h.memory.content, h.score))
        .collect()
}

#[test]
fn remember_recall_update_and_forget_keep_every_version() {
    let home = home();
    let clock = Clock::manual(Timestamp::now());
    let model = Arc::new(WordsEmbedder::default());
    let engine = open(&home, &clock, Some(model.clone()));
    let m = engine
        .remember(NewMemory {
            project: Some("shop".into()),
            session: Some(SHOP[..8].into()),
            tags: vec!["Money".into()],
            ..NewMemory::new("Money is kept in integer cents, never floats")
        })
        .unwrap();
    assert_eq!(
        (m.version, m.change, m.memory_type),
        (1, Change::Remembered, MemoryType::Stm)
    );
    assert_eq!(
        m.session.as_deref(),
        Some(SHOP),
        "a prefix resolves to the session"
    );
    assert_eq!(m.tags, ["money"]);
    assert_eq!(
        m.about.len(),
        1,
        "the shop project exists: the memory is about it"
    );
    // The same text in the same project is the same memory.
    let again = engine
        .remember(NewMemory {
            project: Some("shop".into()),
            ..NewMemory::new("  Money is kept in integer cents, never floats ")
        })
        .unwrap();
    assert_eq!((again.id.as_str(), again.version), (m.id.as_str(), 1));
    engine
        .remember(NewMemory::new("Deploys go out on Tuesdays"))
        .unwrap();

    // Recall by words, and by meaning once embedded.
    let found = recall(&engine, "integer cents");
    assert_eq!(found[0].0, m.content);
    assert_eq!(found.len(), 1);
    engine.embed_pending(&mut |_, _| {}).unwrap();
    let found = recall(&engine, "floats");
    assert_eq!(found[0].0, m.content);

    // The graph: ABOUT the project, DERIVED_FROM the session.
    let node = format!("{}", eywa::model::NodeId::memory(&m.id));
    let (_, out) = engine.neighbors(&node, &EdgeFilter::default(), 50).unwrap();
    let relations: Vec<String> = out
        .iter()
        .map(|n| n.edge.relation.as_str().to_owned())
        .collect();
    assert!(relations.contains(&"ABOUT".to_owned()), "{relations:?}");
    assert!(
        relations.contains(&"DERIVED_FROM".to_owned()),
        "{relations:?}"
    );

    // Update: a new version, the old one kept, the new text embedded.
    let seen = model.seen.lock().unwrap().len();
    clock.advance(DAY);
    let updated = engine
        .update_memory(
            &m.id,
            &MemoryUpdate {
                content: Some("Money is kept in integer cents; totals round once".into()),
                importance: Some(0.9),
                reason: Some("rounding rule".into()),
                ..MemoryUpdate::default()
            },
        )
        .unwrap();
    assert_eq!((updated.version, updated.change), (2, Change::Updated));
    assert_eq!(updated.reason.as_deref(), Some("rounding rule"));
    engine.embed_pending(&mut |_, _| {}).unwrap();
    assert!(
        model.seen.lock().unwrap().len() > seen,
        "the new text is embedded"
    );
    assert_eq!(recall(&engine, "totals round once")[0].0, updated.content);
    assert!(
        recall(&engine, "floats").is_empty(),
        "the old text is not recalled"
    );
    let history = engine.memory_history(&m.id).unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].content, m.content);

    // Forget: hidden from recall and lists, kept in history, edges expired.
    let forgotten = engine
        .forget_memory(&m.id, Some("obsolete".into()))
        .unwrap();
    assert_eq!(
        (forgotten.version, forgotten.change),
        (3, Change::Forgotten)
    );
    assert!(recall(&engine, "totals round once").is_empty());
    let (listed, total) = engine
        .list_memories(&MemoryFilter::default(), 10, 0)
        .unwrap();
    assert_eq!((listed.len(), total), (1, 1));
    let (all, _) = engine
        .list_memories(
            &MemoryFilter {
                include_forgotten: true,
                ..MemoryFilter::default()
            },
            10,
            0,
        )
        .unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(engine.memory_history(&m.id).unwrap().len(), 3);
    let (_, out) = engine.neighbors(&node, &EdgeFilter::default(), 50).unwrap();
    assert!(out.is_empty(), "{out:?}");
    // A forgotten memory is not updated; remembered again, it comes back as version 4.
    let e = engine
        .update_memory(
            &m.id,
            &MemoryUpdate {
                importance: Some(0.1),
                ..MemoryUpdate::default()
            },
        )
        .unwrap_err();
    assert!(matches!(e, eywa::Error::FailedPrecondition(_)), "{e}");
    let back = engine
        .remember(NewMemory {
            project: Some("shop".into()),
            ..NewMemory::new("Money is kept in integer cents, never floats")
        })
        .unwrap();
    assert_eq!((back.id.as_str(), back.version), (m.id.as_str(), 4));
}

#[test]
fn short_term_memories_fade_and_recalled_ones_are_promoted() {
    let home = home();
    let start = Timestamp::now();
    let clock = Clock::manual(start);
    let engine = open(&home, &clock, None);
    let faint = engine
        .remember(NewMemory::new("The staging password rotates monthly"))
        .unwrap();
    let used = engine
        .remember(NewMemory::new("Run migrations before the deploy"))
        .unwrap();
    let rule = engine
        .remember(NewMemory {
            memory_type: MemoryType::Procedural,
            ..NewMemory::new("Always run cargo fmt before a commit")
        })
        .unwrap();
    let lasting = engine
        .remember(NewMemory {
            memory_type: MemoryType::Ltm,
            ..NewMemory::new("The shop deploy runs on fly")
        })
        .unwrap();
    // A week later an STM has half its weight; LTM and PROCEDURAL hardly or not at all.
    clock.advance(7 * DAY);
    let w = |id: &str| engine.memory(id).unwrap().decay.weight;
    assert!((w(&faint.id) - 0.75 * 0.5).abs() < 1e-3, "{}", w(&faint.id));
    assert!(w(&lasting.id) > 0.72);
    assert!((w(&rule.id) - 0.75).abs() < 1e-6);
    // Recalling `used` three times makes its weight whole again each time.
    for _ in 0..3 {
        let hits = engine
            .recall(&RecallQuery {
                query: "migrations deploy".into(),
                limit: 1,
                project: None,
                types: vec![MemoryType::Stm],
                tags: Vec::new(),
            })
            .unwrap();
        assert_eq!(hits[0].memory.id, used.id);
        clock.advance(DAY);
    }
    let now_used = engine.memory(&used.id).unwrap();
    assert_eq!(now_used.recalls, 3);
    assert!(now_used.decay.weight > 0.6);
    // Consolidation: `used` is promoted; `faint` (3 more weeks alone) has faded.
    clock.advance(21 * DAY);
    let report = engine.consolidate_memories().unwrap();
    assert_eq!((report.promoted, report.faded, report.kept), (1, 1, 3));
    let promoted = engine.memory(&used.id).unwrap();
    assert_eq!(
        (promoted.memory_type, promoted.change),
        (MemoryType::Ltm, Change::Promoted)
    );
    let gone = engine.memory(&faint.id).unwrap();
    assert_eq!(gone.change, Change::Faded);
    assert!(gone.forgotten_at.is_some());
    assert_eq!(
        engine.memory(&rule.id).unwrap().version,
        1,
        "procedural never fades"
    );
    // Nothing more to do: consolidation again changes nothing.
    let report = engine.consolidate_memories().unwrap();
    assert_eq!((report.promoted, report.faded), (0, 0));
}

#[test]
fn bad_memories_are_refused_with_reasons() {
    let home = home();
    let engine = open(&home, &Clock::system(), None);
    let bad = |new: NewMemory| engine.remember(new).unwrap_err().to_string();
    assert!(bad(NewMemory::new("   ")).contains("needs content"));
    assert!(bad(NewMemory::new("x".repeat(16_001))).contains("at most 16000"));
    assert!(
        bad(NewMemory {
            importance: 1.5,
            ..NewMemory::new("a")
        })
        .contains("0 to 1")
    );
    assert!(
        bad(NewMemory {
            tags: vec![" ".into()],
            ..NewMemory::new("a")
        })
        .contains("tag")
    );
    assert!(
        bad(NewMemory {
            session: Some("ffffffff".into()),
            ..NewMemory::new("a")
        })
        .contains("ffffffff")
    );
    assert!(
        bad(NewMemory {
            about: vec!["project:nowhere".into()],
            ..NewMemory::new("a")
        })
        .contains("nowhere")
    );
    let e = engine.memory("0123456789abcdef").unwrap_err();
    assert!(matches!(e, eywa::Error::NotFound(_)), "{e}");
    let e = engine.forget_memory("nope", None).unwrap_err();
    assert!(matches!(e, eywa::Error::InvalidArgument(_)), "{e}");
    let e = engine
        .recall(&RecallQuery {
            query: " ".into(),
            limit: 5,
            project: None,
            types: vec![],
            tags: vec![],
        })
        .unwrap_err();
    assert!(matches!(e, eywa::Error::InvalidArgument(_)), "{e}");
}

#[test]
fn memories_over_grpc_and_the_cli() {
    use crate::support::{eywa_cli, grpcurl, server::TestServer};
    let home = home();
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("eywa");
    let cli = |args: &[&str]| eywa_cli(&dir, home.root(), args);
    // The CLI on the store alone.
    let (ok, _, err) = cli(&["ingest"]);
    assert!(ok, "{err}");
    let (ok, out, err) = cli(&[
        "memory",
        "add",
        "Money is kept in integer cents",
        "--project",
        "shop",
        "--tag",
        "money,rules",
        "--session",
        &SHOP[..8],
        "--json",
    ]);
    assert!(ok, "{err}");
    let added: serde_json::Value = serde_json::from_str(&out).unwrap();
    let id = added["id"].as_str().unwrap().to_owned();
    assert_eq!(added["tags"], serde_json::json!(["money", "rules"]));
    assert_eq!(added["session"], SHOP);
    let (ok, out, err) = cli(&["memory", "recall", "integer", "cents", "--json"]);
    assert!(ok, "{err}");
    let recalled: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(recalled["memories"][0]["memory"]["id"], id.as_str());
    let (ok, _, err) = cli(&[
        "memory",
        "update",
        &id,
        "--importance",
        "0.9",
        "--reason",
        "core rule",
    ]);
    assert!(ok, "{err}");
    let (ok, out, err) = cli(&["memory", "history", &id]);
    assert!(ok, "{err}");
    assert!(
        out.contains("v1") && out.contains("v2") && out.contains("core rule"),
        "{out}"
    );
    let (ok, _, err) = cli(&["memory", "add", "x", "--type", "forever"]);
    assert!(!ok && err.contains("STM, LTM or PROCEDURAL"), "{err}");
    let (ok, _, err) = cli(&["memory", "forget", "0123456789abcdef"]);
    assert!(!ok && err.contains("no memory"), "{err}");

    // Over gRPC.
    let Some(grpcurl) = grpcurl::grpcurl() else {
        return;
    };
    let engine = Engine::open(EngineConfig::new(&dir, home.root())).unwrap();
    let server = TestServer::start(engine);
    let addr = server.addr();
    let call = |method: &str, body: &str| {
        grpcurl::run(
            &grpcurl,
            &[
                "-plaintext",
                "-d",
                body,
                &addr,
                &format!("eywa.v1.Memory/{method}"),
            ],
        )
    };
    let remembered = call(
        "Remember",
        r#"{"content": "Deploys go out on Tuesdays", "memory_type": "LTM", "importance": 0.7, "project": "shop"}"#,
    )
    .json();
    let deploy = remembered["memory"]["id"].as_str().unwrap().to_owned();
    assert_eq!(remembered["memory"]["memoryType"], "LTM");
    assert_eq!(remembered["memory"]["version"], 1);
    let found = call("Recall", r#"{"query": "deploys tuesdays", "limit": 3}"#).json();
    assert_eq!(found["memories"][0]["memory"]["id"], deploy.as_str());
    assert!(found["memories"][0]["score"].as_f64().unwrap() > 0.0);
    let updated = call(
        "Update",
        &format!(
            r#"{{"id": "{deploy}", "content": "Deploys go out on Wednesdays", "reason": "moved"}}"#
        ),
    )
    .json();
    assert_eq!(updated["memory"]["version"], 2);
    let history = call("MemoryHistory", &format!(r#"{{"id": "{deploy}"}}"#)).json();
    assert_eq!(history["versions"].as_array().unwrap().len(), 2);
    let forgot = call(
        "Forget",
        &format!(r#"{{"id": "{deploy}", "reason": "no longer true"}}"#),
    )
    .json();
    assert_eq!(forgot["memory"]["change"], "forgotten");
    let found = call("Recall", r#"{"query": "deploys wednesdays"}"#).json();
    assert!(
        found["memories"]
            .as_array()
            .is_none_or(|m| m.iter().all(|h| h["memory"]["id"] != deploy.as_str())),
        "{found}"
    );
    let listed = call("ListMemories", r#"{"include_forgotten": true}"#).json();
    assert_eq!(listed["total"], "2", "{listed}");
    let consolidated = call("Consolidate", "{}");
    assert!(consolidated.success, "{}", consolidated.stderr);
    for (method, body, code) in [
        ("Remember", r#"{"content": "  "}"#, "InvalidArgument"),
        (
            "Remember",
            r#"{"content": "a", "importance": 2}"#,
            "InvalidArgument",
        ),
        (
            "Remember",
            r#"{"content": "a", "memory_type": "FOREVER"}"#,
            "InvalidArgument",
        ),
        ("Recall", r#"{"query": "x", "limit": 0}"#, "InvalidArgument"),
        ("Update", r#"{"id": "nope"}"#, "InvalidArgument"),
        (
            "Update",
            &format!(r#"{{"id": "{deploy}", "importance": 0.2}}"#) as &str,
            "FailedPrecondition",
        ),
        ("MemoryHistory", r#"{"id": "0123456789abcdef"}"#, "NotFound"),
    ] {
        let out = call(method, body);
        assert!(
            !out.success && out.stderr.contains(&format!("Code: {code}")),
            "{method} {body}: {}",
            out.stderr
        );
    }
}

#[test]
fn claude_md_files_become_procedural_memories_versioned_as_they_change() {
    let projects = tempfile::tempdir().unwrap();
    let shop = projects.path().join("shop");
    std::fs::create_dir_all(&shop).unwrap();
    std::fs::write(
        shop.join("CLAUDE.md"),
        "# Shop\n\nRun `make check` before a commit.\n",
    )
    .unwrap();
    let home = ClaudeHome::new();
    home.session(
        SHOP,
        &shop.display().to_string(),
        days_ago(1),
        &[("Fix the coupon rounding", "Done.")],
    );
    std::fs::write(
        home.root().join("CLAUDE.md"),
        "Answer in British English.\n",
    )
    .unwrap();
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    let report = engine.ingest().unwrap();
    assert_eq!((report.claude_md_files, report.memories_written), (2, 2));
    let procedural = |engine: &Engine| {
        engine
            .list_memories(
                &MemoryFilter {
                    types: vec![MemoryType::Procedural],
                    ..MemoryFilter::default()
                },
                10,
                0,
            )
            .unwrap()
            .0
    };
    let memories = procedural(&engine);
    assert_eq!(memories.len(), 2);
    let project = memories
        .iter()
        .find(|m| m.project.as_deref() == Some("shop"))
        .unwrap();
    assert!(project.content.contains("make check"));
    assert_eq!(project.tags, ["claude-md"]);
    assert_eq!(
        project.origin.as_deref(),
        Some(shop.join("CLAUDE.md").display().to_string().as_str())
    );
    assert_eq!(project.about.len(), 1, "about the shop project");
    let user = memories.iter().find(|m| m.project.is_none()).unwrap();
    assert!(user.content.contains("British English"));
    // Found by recall, and read again only when changed.
    let hits = engine
        .recall(&RecallQuery {
            query: "make check commit".into(),
            limit: 5,
            project: None,
            types: vec![],
            tags: vec![],
        })
        .unwrap();
    assert_eq!(hits[0].memory.id, project.id);
    assert_eq!(engine.ingest().unwrap().memories_written, 0);
    std::fs::write(
        shop.join("CLAUDE.md"),
        "# Shop\n\nRun `make check` and `make lint` before a commit.\n",
    )
    .unwrap();
    assert_eq!(engine.ingest().unwrap().memories_written, 1);
    let history = engine.memory_history(&project.id).unwrap();
    assert_eq!(history.len(), 2);
    assert!(!history[0].content.contains("make lint"));
    assert!(history[1].content.contains("make lint"));
    assert_eq!(history[1].change, Change::Updated);
    assert_eq!(
        procedural(&engine).len(),
        2,
        "a new version, not a new memory"
    );
}

#[test]
fn a_handoffs_insights_become_short_term_memories_of_its_session() {
    let home = ClaudeHome::new();
    home.session(
        SHOP,
        "/w/shop",
        days_ago(1),
        &[(
            "Why do totals drift?",
            "Found it. The root cause is a race between the writer and the flush.",
        )],
    );
    // Two months old: its short-term memories have faded already and are not written.
    home.session(
        "d0000000-0000-4000-8000-000000000002",
        "/w/shop",
        days_ago(60),
        &[(
            "Why is the cache stale?",
            "It turned out the cache was never invalidated on rename.",
        )],
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    let report = engine.ingest().unwrap();
    assert_eq!(report.memories_written, 1);
    let (memories, _) = engine
        .list_memories(&MemoryFilter::default(), 10, 0)
        .unwrap();
    assert_eq!(memories.len(), 1, "{memories:#?}");
    let m = &memories[0];
    assert_eq!(m.memory_type, MemoryType::Stm);
    assert_eq!(m.session.as_deref(), Some(SHOP));
    assert_eq!(m.tags, ["insight"]);
    assert!(
        m.content
            .starts_with("**Root cause** -- The root cause is a race"),
        "{}",
        m.content
    );
    assert!(m.decay.weight < 0.75, "decays from when the session ended");
    let node = eywa::model::NodeId::memory(&m.id).to_string();
    let (_, out) = engine.neighbors(&node, &EdgeFilter::default(), 50).unwrap();
    assert!(
        out.iter()
            .any(|n| n.edge.relation.as_str() == "DERIVED_FROM"
                && n.node.episode().is_some_and(|e| e.session_id == SHOP))
    );
    assert_eq!(engine.ingest().unwrap().memories_written, 0);
}

/// Issue 32: while a committer runs (as in `serve`), a write answers once searchable,
/// without a commit of its own: recall finds a memory, its new version and its forgetting
/// at once, and the committer's last commit leaves nothing pending.
#[test]
fn memories_are_found_at_once_while_commits_run_behind_them() {
    let home = home();
    let clock = Clock::manual(Timestamp::now());
    let engine = open(&home, &clock, None);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let committer = engine.defer_text_commits();
    let texts = |engine: &Engine| {
        engine
            .text_index()
            .unwrap()
            .texts(10_000)
            .unwrap()
            .join("\n")
    };
    std::thread::scope(|scope| {
        let running = scope.spawn(|| engine.run_text_committer(committer, &stop));
        let mut ids = Vec::new();
        for i in 0..5 {
            let m = engine
                .remember(NewMemory {
                    project: Some("shop".into()),
                    ..NewMemory::new(format!("Refunds of order zephyrine{i} go to the wallet"))
                })
                .unwrap();
            let found = recall(&engine, &format!("zephyrine{i} refunds"));
            assert!(
                found
                    .first()
                    .is_some_and(|(c, _)| c.contains(&format!("zephyrine{i}"))),
                "memory {i} is found as soon as it is remembered: {found:?}"
            );
            ids.push(m.id);
        }
        engine
            .update_memory(
                &ids[0],
                &MemoryUpdate {
                    content: Some("Refunds of order quillmarsh go to the card".into()),
                    ..MemoryUpdate::default()
                },
            )
            .unwrap();
        assert!(
            recall(&engine, "quillmarsh")
                .iter()
                .any(|(c, _)| c.contains("quillmarsh"))
        );
        assert!(
            recall(&engine, "zephyrine0")
                .iter()
                .all(|(c, _)| !c.contains("zephyrine0"))
        );
        engine.forget_memory(&ids[1], None).unwrap();
        assert!(
            recall(&engine, "zephyrine1")
                .iter()
                .all(|(c, _)| !c.contains("zephyrine1"))
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        running.join().unwrap();
    });
    // The last commit covered every write: the index itself holds them, nothing waits.
    assert_eq!(engine.text_index().unwrap().uncommitted(), 0);
    let committed = texts(&engine);
    for word in ["quillmarsh", "zephyrine2", "zephyrine3", "zephyrine4"] {
        assert!(committed.contains(word), "{word} is committed");
    }
    for word in ["zephyrine0", "zephyrine1"] {
        assert!(
            !committed.contains(word),
            "{word} was replaced or forgotten"
        );
    }
    // And after the committer, writes commit themselves again.
    engine
        .remember(NewMemory::new("Invoices are numbered per year: larkspire"))
        .unwrap();
    assert_eq!(engine.text_index().unwrap().uncommitted(), 0);
    assert!(texts(&engine).contains("larkspire"));
}

/// Beside the thread that embeds client writes (as in `serve`), a memory answers before
/// the model has seen it, and a recall made after it waits for its embedding: it scores
/// the memory by meaning as well as by words, as a recall does once all is settled.
#[test]
fn a_memory_answers_before_its_embedding_and_a_recall_after_it_waits_for_it() {
    let home = home();
    let clock = Clock::manual(Timestamp::now());
    let model = Arc::new(WordsEmbedder::default());
    let engine = Arc::new(open(&home, &clock, Some(model.clone())));
    let deferred = engine.defer_write_embeddings();
    let vectors = || engine.semantic_status().vectors;
    let before = vectors();
    let text = "Invoices are numbered per tenant, never globally";
    let m = engine.remember(NewMemory::new(text)).unwrap();
    // Nothing embeds it yet: the write answered without the model.
    assert!(!model.seen.lock().unwrap().iter().any(|t| t == text));
    assert_eq!(vectors(), before);

    let (recalled, recalling) = std::sync::mpsc::channel();
    {
        let engine = engine.clone();
        std::thread::spawn(move || recalled.send(recall(&engine, "tenant invoices numbered")));
    }
    // Nothing embeds the memory until the thread below starts: a recall that did not wait
    // for it would answer now, by words alone.
    assert!(
        recalling
            .recv_timeout(std::time::Duration::from_secs(2))
            .is_err(),
        "the recall answered before the memory it follows was embedded"
    );
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writes = {
        let (engine, stop) = (engine.clone(), stop.clone());
        std::thread::spawn(move || engine.run_write_embedder(deferred, &stop))
    };
    let first = recalling.recv().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writes.join().unwrap();
    assert_eq!(vectors(), before + 1);
    assert!(model.seen.lock().unwrap().iter().any(|t| t == text));
    let settled = recall(&engine, "tenant invoices numbered");
    assert_eq!(first.first().map(|h| &h.0), Some(&m.content));
    assert_eq!(first, settled, "the first recall saw the memory's vector");
    // After the thread stops, a write embeds its own text before it answers.
    let later = "Refunds go back to the card they came from";
    engine.remember(NewMemory::new(later)).unwrap();
    assert_eq!(vectors(), before + 2);
}

/// A model that panics on a text holding `PANIC`, else embeds as [`WordsEmbedder`].
#[derive(Debug, Default)]
struct PanicsOnOneText(WordsEmbedder);

impl eywa::embed::Embedder for PanicsOnOneText {
    fn model_id(&self) -> &str {
        eywa::embed::Embedder::model_id(&self.0)
    }

    fn dim(&self) -> usize {
        eywa::embed::Embedder::dim(&self.0)
    }

    fn embed(&self, texts: &[&str]) -> eywa::Result<Vec<Vec<f32>>> {
        assert!(
            !texts.iter().any(|t| t.contains("PANIC")),
            "the model broke"
        );
        eywa::embed::Embedder::embed(&self.0, texts)
    }
}

/// When the thread that embeds client writes dies (the model panicked), searches by
/// meaning stop waiting for it: a recall answers, by words, instead of hanging.
#[test]
fn a_recall_does_not_wait_for_a_write_embedder_that_died() {
    let home = home();
    let config = EngineConfig::temporary(home.root())
        .with_embedding(Embedding::Embedder(Arc::new(PanicsOnOneText::default())));
    let engine = Arc::new(Engine::open(config).unwrap());
    engine.ingest().unwrap();
    let deferred = engine.defer_write_embeddings();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writes = {
        let (engine, stop) = (engine.clone(), stop.clone());
        std::thread::spawn(move || engine.run_write_embedder(deferred, &stop))
    };
    engine
        .remember(NewMemory::new("PANIC: the ledger closes at midnight"))
        .unwrap();
    assert!(writes.join().is_err(), "the model's panic ended the thread");
    let (recalled, recalling) = std::sync::mpsc::channel();
    {
        let engine = engine.clone();
        std::thread::spawn(move || recalled.send(recall(&engine, "ledger midnight")));
    }
    let hits = recalling
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the recall answers");
    assert!(hits.iter().any(|(text, _)| text.contains("ledger closes")));
}
