//! Documents a user adds: markdown, text and PDF (made with lopdf, a real PDF writer) read
//! into text and found by search (a PDF by page); a changed file is a new version with the
//! old one readable (by number and as of a time); unchanged content stores nothing new; an
//! encrypted or image-only PDF is refused with the reason and leaves nothing behind.

use std::path::{Path, PathBuf};

use eywa::docs::Added;
use eywa::engine::{Engine, EngineConfig, SearchRequest};
use eywa::model::{SearchFilter, Timestamp};
use eywa::retrieve::SearchMode;
use lopdf::content::{Content, Operation};
use lopdf::{Document, Object, Stream, dictionary};

use crate::support::fixture::ClaudeHome;

/// A PDF with one page per text (empty text: a page that only draws a box).
fn pdf(pages: &[&str]) -> Document {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
        "Encoding" => "WinAnsiEncoding",
    });
    let resources_id = doc.add_object(dictionary! {
        "Font" => dictionary! { "F1" => font_id },
    });
    let mut kids: Vec<Object> = Vec::new();
    for text in pages {
        let operations = if text.is_empty() {
            vec![
                Operation::new("re", vec![10.into(), 10.into(), 200.into(), 200.into()]),
                Operation::new("f", vec![]),
            ]
        } else {
            vec![
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), 12.into()]),
                Operation::new("Td", vec![72.into(), 720.into()]),
                Operation::new("Tj", vec![Object::string_literal(*text)]),
                Operation::new("ET", vec![]),
            ]
        };
        let content = Content { operations };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
        });
        kids.push(page_id.into());
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => kids,
            "Count" => count,
            "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    doc.trailer.set(
        "ID",
        Object::Array(vec![
            Object::string_literal(b"eywa-test-pdf-id".to_vec()),
            Object::string_literal(b"eywa-test-pdf-id".to_vec()),
        ]),
    );
    doc
}

fn save(mut doc: Document, path: &Path) {
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn encrypted(doc: &Document) -> Document {
    let mut doc = doc.clone();
    let state = lopdf::EncryptionState::try_from(lopdf::EncryptionVersion::V2 {
        document: &doc,
        owner_password: "owner",
        user_password: "secret",
        key_length: 128,
        permissions: lopdf::Permissions::all(),
    })
    .unwrap();
    doc.encrypt(&state).unwrap();
    doc
}

struct World {
    engine: Engine,
    clock: eywa::model::Clock,
    dir: tempfile::TempDir,
    _home: ClaudeHome,
}

fn world() -> World {
    let home = ClaudeHome::new();
    std::fs::create_dir_all(home.root().join("projects")).unwrap();
    let clock = eywa::model::Clock::manual(Timestamp::now());
    let engine = Engine::open(EngineConfig {
        clock: clock.clone(),
        ..EngineConfig::temporary(home.root())
    })
    .unwrap();
    World {
        engine,
        clock,
        dir: tempfile::tempdir().unwrap(),
        _home: home,
    }
}

impl World {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn add(&self, name: &str) -> eywa::Result<(eywa::docs::DocumentInfo, Added)> {
        let mut outcomes = self.engine.add_documents(&[self.path(name)], None)?;
        assert_eq!(outcomes.len(), 1);
        Ok(outcomes.remove(0).result.unwrap())
    }

    /// Document hits for `query`: (document id, page, title).
    fn found(&self, query: &str) -> Vec<(String, Option<u32>, String)> {
        self.engine
            .search(&SearchRequest {
                query: query.into(),
                mode: SearchMode::Lexical,
                filter: SearchFilter {
                    kinds: vec!["document".into()],
                    ..SearchFilter::default()
                },
                ..SearchRequest::default()
            })
            .unwrap()
            .hits
            .into_iter()
            .map(|h| (h.document_id.unwrap_or_default(), h.page, h.title))
            .collect()
    }

    fn blobs(&self) -> u64 {
        self.engine.stats().unwrap().tiers.blobs
    }
}

#[test]
fn markdown_versions_chain_by_hash_and_old_ones_stay_readable() {
    let w = world();
    let notes = w.path("runbook.md");
    std::fs::write(
        &notes,
        "# Deploy runbook\n\nDeploys go out on Tuesdays with a canary.\n",
    )
    .unwrap();
    let (v1, added) = w.add("runbook.md").unwrap();
    assert_eq!((v1.version, added, v1.mime.as_str()), (1, Added::New, "md"));
    assert_eq!(v1.title, "Deploy runbook");
    assert_eq!(
        w.found("tuesdays canary"),
        [(v1.id.clone(), None, "Deploy runbook".into())]
    );

    // Unchanged content: nothing new is stored.
    let blobs = w.blobs();
    let (same, added) = w.add("runbook.md").unwrap();
    assert_eq!((same.version, added), (1, Added::Unchanged));
    assert_eq!(w.blobs(), blobs);

    // Edited: version 2, linked to version 1, which stays readable.
    w.clock.advance(60_000);
    let between = w.clock.now();
    w.clock.advance(60_000);
    std::fs::write(
        &notes,
        "# Deploy runbook\n\nDeploys go out on Wednesdays after the freeze.\n",
    )
    .unwrap();
    let (v2, added) = w.add("runbook.md").unwrap();
    assert_eq!(
        (v2.version, added, v2.id.as_str()),
        (2, Added::Changed, v1.id.as_str())
    );
    let history = w
        .engine
        .document_history(&notes.display().to_string())
        .unwrap();
    assert_eq!(history.len(), 2);
    assert!(history[0].replaced_at.is_some() && history[1].replaced_at.is_none());
    let old = w.engine.document(&v1.id, Some(1), None).unwrap();
    assert!(old.pages[0].contains("Tuesdays"));
    let then = w.engine.document(&v1.id, None, Some(between)).unwrap();
    assert_eq!(then.info.version, 1);
    assert!(then.pages[0].contains("Tuesdays"));
    let now = w
        .engine
        .document(&notes.display().to_string(), None, None)
        .unwrap();
    assert!(now.pages[0].contains("Wednesdays"));
    // Search sees the latest version only.
    assert!(w.found("tuesdays").is_empty());
    assert_eq!(w.found("wednesdays freeze").len(), 1);
    let (listed, total) = w.engine.list_documents(10, 0).unwrap();
    assert_eq!((listed.len(), total, listed[0].version), (1, 1, 2));
    let e = w.engine.document(&v1.id, Some(3), None).unwrap_err();
    assert!(matches!(e, eywa::Error::NotFound(_)), "{e}");
}

#[test]
fn text_and_pdf_files_are_found_and_a_pdf_by_its_page() {
    let w = world();
    std::fs::write(
        w.path("notes.txt"),
        "Meeting notes\nThe cache warms in ninety seconds.\n",
    )
    .unwrap();
    save(
        pdf(&[
            "Quarterly report on the storage engine",
            "Compaction pauses dropped below four milliseconds",
        ]),
        &w.path("report.pdf"),
    );
    let (txt, _) = w.add("notes.txt").unwrap();
    assert_eq!((txt.mime.as_str(), txt.pages), ("txt", 0));
    let (report, _) = w.add("report.pdf").unwrap();
    assert_eq!((report.mime.as_str(), report.pages), ("pdf", 2));
    assert_eq!(report.title, "Quarterly report on the storage engine");
    assert_eq!(w.found("ninety seconds")[0].0, txt.id);
    let hits = w.found("compaction pauses");
    assert_eq!(hits, [(report.id.clone(), Some(2), report.title.clone())]);
    // Seed 002's type names: `doc` is the documents, `chunk` every chunked type.
    for alias in ["doc", "chunk"] {
        let hits = w
            .engine
            .search(&SearchRequest {
                query: "compaction pauses".into(),
                mode: SearchMode::Lexical,
                filter: SearchFilter {
                    kinds: vec![alias.into()],
                    ..SearchFilter::default()
                },
                ..SearchRequest::default()
            })
            .unwrap();
        assert_eq!(
            hits.hits[0].document_id.as_deref(),
            Some(report.id.as_str()),
            "{alias}"
        );
    }
    let text = w.engine.document(&report.id, None, None).unwrap();
    assert_eq!(text.pages.len(), 2);
    assert!(text.pages[1].contains("Compaction pauses dropped"));
}

#[test]
fn an_encrypted_or_image_only_pdf_is_refused_and_leaves_nothing() {
    let w = world();
    let readable = pdf(&["Secret plans for the launch"]);
    save(encrypted(&readable), &w.path("locked.pdf"));
    save(pdf(&[""]), &w.path("scan.pdf"));
    std::fs::write(w.path("slides.pptx"), b"not ours").unwrap();
    let blobs = w.blobs();
    for (name, why) in [
        ("locked.pdf", "encrypted"),
        ("scan.pdf", "no text layer"),
        ("slides.pptx", ".pptx"),
        ("missing.md", "no such file"),
    ] {
        let e = w.engine.add_documents(&[w.path(name)], None).unwrap_err();
        assert!(matches!(e, eywa::Error::InvalidArgument(_)), "{name}: {e}");
        assert!(e.to_string().contains(why), "{name}: {e}");
    }
    assert_eq!(w.blobs(), blobs);
    assert_eq!(w.engine.list_documents(10, 0).unwrap().1, 0);
    assert!(w.found("secret launch").is_empty());
    // A folder: what can be read is added, what cannot is reported.
    std::fs::write(w.path("ok.md"), "# Fine\n\nThis one reads well.\n").unwrap();
    let outcomes = w
        .engine
        .add_documents(&[w.dir.path().to_path_buf()], None)
        .unwrap();
    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.result.is_err())
        .map(|o| o.path.rsplit('/').next().unwrap())
        .collect();
    assert_eq!(
        failed,
        ["locked.pdf", "scan.pdf"],
        "the .pptx is not looked at"
    );
    assert_eq!(w.engine.list_documents(10, 0).unwrap().1, 1);
}

#[test]
fn documents_over_grpc_and_the_cli() {
    use crate::support::{eywa_cli, grpcurl, server::TestServer};
    let home = ClaudeHome::new();
    std::fs::create_dir_all(home.root().join("projects")).unwrap();
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("eywa");
    let files = tempfile::tempdir().unwrap();
    let guide = files.path().join("guide.md");
    std::fs::write(&guide, "# Style guide\n\nPrefer short functions.\n").unwrap();
    let cli = |args: &[&str]| eywa_cli(&dir, home.root(), args);
    let (ok, out, err) = cli(&["docs", "add", &guide.display().to_string(), "--json"]);
    assert!(ok, "{err}");
    let added: serde_json::Value = serde_json::from_str(&out).unwrap();
    let id = added["outcomes"][0]["document"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(added["outcomes"][0]["added"], "new");
    let (ok, out, err) = cli(&["docs", "show", &id, "--json"]);
    assert!(ok, "{err}");
    let shown: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        shown["text"][0]
            .as_str()
            .unwrap()
            .contains("short functions")
    );
    let locked = files.path().join("locked.pdf");
    save(encrypted(&pdf(&["x y z"])), &locked);
    let (ok, _, err) = cli(&["docs", "add", &locked.display().to_string()]);
    assert!(!ok && err.contains("encrypted"), "{err}");

    let Some(grpcurl) = grpcurl::grpcurl() else {
        return;
    };
    let server = TestServer::start(Engine::open(EngineConfig::new(&dir, home.root())).unwrap());
    let addr = server.addr();
    let call = |method: &str, body: &str| {
        grpcurl::run(
            &grpcurl,
            &[
                "-plaintext",
                "-d",
                body,
                &addr,
                &format!("eywa.v1.Documents/{method}"),
            ],
        )
    };
    std::fs::write(
        &guide,
        "# Style guide\n\nPrefer short functions and plain names.\n",
    )
    .unwrap();
    let out = call(
        "AddDocument",
        &format!(r#"{{"paths": ["{}"]}}"#, guide.display()),
    )
    .json();
    assert_eq!(out["outcomes"][0]["added"], "changed");
    assert_eq!(out["outcomes"][0]["document"]["version"], 2);
    let got = call(
        "GetDocument",
        &format!(r#"{{"document": "{id}", "version": 1}}"#),
    )
    .json();
    assert!(!got["pages"][0].as_str().unwrap().contains("plain names"));
    let history = call(
        "DocumentHistory",
        &format!(r#"{{"document": "{}"}}"#, guide.display()),
    )
    .json();
    assert_eq!(history["versions"].as_array().unwrap().len(), 2);
    let listed = call("ListDocuments", "{}").json();
    assert_eq!(listed["total"], "1");
    let followed = call(
        "FollowFolders",
        &format!(
            r#"{{"paths": ["{}"], "project": "style"}}"#,
            files.path().display()
        ),
    )
    .json();
    assert_eq!(
        followed["folders"][0]["path"],
        files.path().display().to_string()
    );
    assert_eq!(followed["folders"][0]["project"], "style");
    let listed = call("FollowFolders", "{}").json();
    assert_eq!(listed["folders"].as_array().unwrap().len(), 1);
    for (method, body, code) in [
        (
            "AddDocument",
            format!(r#"{{"paths": ["{}"]}}"#, locked.display()),
            "InvalidArgument",
        ),
        (
            "AddDocument",
            r#"{"paths": []}"#.to_owned(),
            "InvalidArgument",
        ),
        (
            "GetDocument",
            r#"{"document": "/nowhere.md"}"#.to_owned(),
            "NotFound",
        ),
        (
            "ListDocuments",
            r#"{"limit": 0}"#.to_owned(),
            "InvalidArgument",
        ),
    ] {
        let out = call(method, &body);
        assert!(
            !out.success && out.stderr.contains(&format!("Code: {code}")),
            "{method}: {}",
            out.stderr
        );
    }
}

#[test]
fn a_followed_folder_is_read_again_by_every_ingest() {
    let w = world();
    let notes = w.path("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("a.md"), "# A\n\nThe first note says hello.\n").unwrap();
    let outcomes = w
        .engine
        .follow_folders(std::slice::from_ref(&notes), Some("shop"), false)
        .unwrap();
    assert_eq!(outcomes.len(), 1);
    assert_eq!(
        w.engine.followed_folders().unwrap(),
        [(notes.display().to_string(), Some("shop".to_owned()))]
    );
    // A new file and a changed one: the next ingest adds both; a bad one is counted.
    std::fs::write(
        notes.join("b.txt"),
        "Second note about the release train.\n",
    )
    .unwrap();
    std::fs::write(
        notes.join("a.md"),
        "# A\n\nThe first note now says goodbye.\n",
    )
    .unwrap();
    save(pdf(&[""]), &notes.join("scan.pdf"));
    let report = w.engine.ingest().unwrap();
    assert_eq!((report.documents_added, report.documents_failed), (2, 1));
    assert_eq!(w.engine.list_documents(10, 0).unwrap().1, 2);
    assert_eq!(w.found("release train").len(), 1);
    let a = w
        .engine
        .document(&notes.join("a.md").display().to_string(), None, None)
        .unwrap();
    assert_eq!(
        (a.info.version, a.info.project.as_deref()),
        (2, Some("shop"))
    );
    // Nothing changed: nothing added (files of the same size and time are not read).
    assert_eq!(w.engine.ingest().unwrap().documents_added, 0);
    // Stopped: no longer followed, what was added stays.
    w.engine
        .follow_folders(std::slice::from_ref(&notes), None, true)
        .unwrap();
    assert!(w.engine.followed_folders().unwrap().is_empty());
    std::fs::write(notes.join("c.md"), "# C\n\nA third note.\n").unwrap();
    assert_eq!(w.engine.ingest().unwrap().documents_added, 0);
    assert_eq!(w.engine.list_documents(10, 0).unwrap().1, 2);
    let e = w
        .engine
        .follow_folders(&[w.path("nowhere")], None, false)
        .unwrap_err();
    assert!(e.to_string().contains("not a folder"), "{e}");
}

#[test]
fn context_gives_a_documents_pages_whole_or_leaves_them_out() {
    use eywa::engine::ContextMode;
    let w = world();
    let long = "The storage engine compacts in the background. ".repeat(40);
    save(
        pdf(&["Release checklist for the storage engine", &long]),
        &w.path("release.pdf"),
    );
    let (report, _) = w.add("release.pdf").unwrap();
    let reference = format!("doc:{}", report.id);
    let all = w
        .engine
        .retrieve_context(
            std::slice::from_ref(&reference),
            ContextMode::Smart,
            8_000,
            false,
        )
        .unwrap();
    assert_eq!(all.sessions[0].items.len(), 2);
    assert!(all.sessions[0].items.iter().all(|i| i.included));
    assert!(all.text.contains("[DOCUMENT · page 2]") && all.text.contains(long.trim()));
    // A budget that holds the first page only: the second is left out whole.
    let some = w
        .engine
        .retrieve_context(
            std::slice::from_ref(&reference),
            ContextMode::Smart,
            300,
            false,
        )
        .unwrap();
    let items = &some.sessions[0].items;
    assert!(items[0].included && !items[1].included, "{items:#?}");
    assert!(!some.text.contains("compacts in the background"));
    // By path too.
    let by_path = format!("doc:{}", w.path("release.pdf").display());
    let again = w
        .engine
        .retrieve_context(&[by_path], ContextMode::Smart, 8_000, true)
        .unwrap();
    assert_eq!(again.sessions[0].session_id, reference);
}

/// A session that reads `file` once, `days` days ago.
fn reading_session(home: &ClaudeHome, id: &str, file: &Path, days: i64) {
    use crate::support::fixture::{days_ago, session_lines};
    let mut lines = session_lines(
        id,
        "/w/shop",
        days_ago(days),
        &[("Read the guide", "Read it.")],
    );
    let at = days_ago(days) + chrono::Duration::minutes(5);
    lines.push(
        serde_json::json!({"type": "assistant", "uuid": format!("{id}-read"), "sessionId": id,
            "cwd": "/w/shop", "timestamp": at.to_rfc3339(),
            "message": {"id": format!("msg_{id}_read"), "role": "assistant", "model": "claude-opus-4-1",
                "content": [{"type": "tool_use", "id": format!("toolu_{id}_read"), "name": "Read",
                             "input": {"file_path": file.display().to_string()}}]}})
        .to_string(),
    );
    home.write_raw(
        "-w-shop",
        &format!("{id}.jsonl"),
        &(lines.join("\n") + "\n"),
    );
}

#[test]
fn sessions_that_read_a_documents_file_link_to_its_version() {
    use eywa::graph::{Direction, EdgeFilter};
    let home = ClaudeHome::new();
    let files = tempfile::tempdir().unwrap();
    let guide = files.path().join("guide.md");
    std::fs::write(&guide, "# Guide\n\nUse cents.\n").unwrap();
    const BEFORE: &str = "d0c00000-0000-4000-8000-000000000001";
    const AFTER: &str = "d0c00000-0000-4000-8000-000000000002";
    reading_session(&home, BEFORE, &guide, 3);
    // The document's versions are added two days and one day ago.
    let clock = eywa::model::Clock::manual(Timestamp(
        crate::support::fixture::days_ago(2).timestamp_millis(),
    ));
    let engine = Engine::open(EngineConfig {
        clock: clock.clone(),
        ..EngineConfig::temporary(home.root())
    })
    .unwrap();
    engine.ingest().unwrap();
    // Added after a session read it: that session is linked, to version 1.
    let outcome = engine
        .add_documents(std::slice::from_ref(&guide), None)
        .unwrap();
    let (doc, _) = outcome[0].result.clone().unwrap();
    let node = eywa::model::NodeId::document(&doc.id).to_string();
    let readers = |engine: &Engine| {
        let filter = EdgeFilter {
            direction: Direction::In,
            ..EdgeFilter::default()
        };
        let (_, ins) = engine.neighbors(&node, &filter, 50).unwrap();
        let mut out: Vec<(String, String, String)> = ins
            .iter()
            .filter_map(|n| {
                let e = n.node.episode()?;
                Some((
                    e.session_id.clone(),
                    n.edge.relation.as_str().to_owned(),
                    n.edge.evidence[0].chunk_id.clone(),
                ))
            })
            .collect();
        out.sort();
        out
    };
    assert_eq!(
        readers(&engine),
        [(BEFORE.to_owned(), "READ".to_owned(), "v1".to_owned())]
    );
    // Changed, then read by a new session: that one is linked to version 2.
    std::fs::write(&guide, "# Guide\n\nUse cents, always.\n").unwrap();
    clock.advance(86_400_000);
    engine
        .add_documents(std::slice::from_ref(&guide), None)
        .unwrap();
    reading_session(&home, AFTER, &guide, 0);
    engine.ingest().unwrap();
    assert_eq!(
        readers(&engine),
        [
            (BEFORE.to_owned(), "READ".to_owned(), "v1".to_owned()),
            (AFTER.to_owned(), "READ".to_owned(), "v2".to_owned()),
        ]
    );
}

#[test]
fn a_text_files_own_form_feeds_are_text_not_pages() {
    let w = world();
    std::fs::write(
        w.path("rfc.txt"),
        "Section one says hello.\n\u{c}\nSection two mentions the zeppelin.\n",
    )
    .unwrap();
    let (doc, _) = w.add("rfc.txt").unwrap();
    assert_eq!(doc.pages, 0);
    let text = w.engine.document(&doc.id, None, None).unwrap();
    assert_eq!(text.pages.len(), 1);
    // Still found whole after the text index is rebuilt from the store.
    w.engine.reindex().unwrap();
    assert_eq!(w.found("zeppelin").len(), 1);
    assert_eq!(w.found("hello").len(), 1);
}
