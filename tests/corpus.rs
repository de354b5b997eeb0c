//! Ingest of the real Claude Code transcripts in `../shared/corpus/claude-code`. Expected
//! values are derived here by reading the files directly, so added files keep passing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use eywa::engine::{Engine, EngineConfig};
use eywa::graph::EdgeFilter;
use eywa_storage::Keyspace;

use crate::support;

/// Every line of a transcript that parses as JSON, read by the test itself.
fn json_lines(path: &Path) -> impl Iterator<Item = serde_json::Value> {
    let text = std::fs::read(path).unwrap();
    let values: Vec<serde_json::Value> = text
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect();
    values.into_iter()
}

/// The corpus copied in as a Claude home and ingested into a temporary store. The home
/// must outlive the engine.
fn ingested(real: &Path) -> (tempfile::TempDir, Engine) {
    let home = support::corpus_home(real);
    let engine = Engine::open(EngineConfig::temporary(home.path())).unwrap();
    engine.ingest().unwrap();
    (home, engine)
}

/// What the test itself reads from a main session file: whether it holds a user or
/// assistant message, and the first `cwd` in file order.
fn read_session(path: &Path) -> (bool, Option<String>) {
    let mut has_message = false;
    let mut first_cwd = None;
    for v in json_lines(path) {
        let kind = v.get("type").and_then(|t| t.as_str()).unwrap_or("");
        has_message |= kind == "user" || kind == "assistant";
        if first_cwd.is_none()
            && let Some(cwd) = v
                .get("cwd")
                .and_then(|c| c.as_str())
                .filter(|c| !c.is_empty())
        {
            first_cwd = Some(cwd.to_owned());
        }
    }
    (has_message, first_cwd)
}

/// Main session files (`projects/*/*.jsonl`, not `agent-*`) → (has message, first cwd).
fn expected_sessions(real_projects: &Path) -> BTreeMap<String, (bool, Option<String>)> {
    let mut out = BTreeMap::new();
    for dir in std::fs::read_dir(real_projects).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_file() && name.ends_with(".jsonl") && !name.starts_with("agent-") {
                let stem = name.trim_end_matches(".jsonl").to_owned();
                out.insert(stem, read_session(&path));
            }
        }
    }
    out
}

#[test]
fn real_projects_ingest_into_one_episode_per_session_with_projects_from_cwd() {
    let Some(real) = support::shared("corpus/claude-code/real_projects") else {
        return;
    };
    let home = support::corpus_home(&real);
    let engine = Engine::open(EngineConfig::temporary(home.path())).unwrap();
    let report = engine.ingest().unwrap();

    let expected = expected_sessions(&real);
    let sessions: Vec<&String> = expected
        .iter()
        .filter(|(_, (has, _))| *has)
        .map(|(id, _)| id)
        .collect();
    assert!(sessions.len() >= 10, "the corpus has sessions");
    assert_eq!(report.files_scanned as usize, expected.len());
    assert_eq!(report.counts.sessions as usize, sessions.len());
    assert_eq!(
        report.counts.episodes,
        report.counts.sessions + report.counts.agents,
        "subagent runs are episodes of their own"
    );
    assert_eq!(report.files_failed, 0);

    let episodes: Vec<_> = engine
        .graph()
        .episodes()
        .unwrap()
        .into_iter()
        .filter(|n| n.episode().is_some_and(|e| e.agent.is_none()))
        .collect();
    assert_eq!(episodes.len(), sessions.len());
    for node in &episodes {
        let episode = node.episode().unwrap();
        let (has, first_cwd) = &expected[&episode.session_id];
        assert!(has, "{} holds no message", episode.session_id);
        let cwd = first_cwd.as_deref().expect("sessions carry a cwd");
        // The project is the cwd in the lines, never the decoded folder name.
        assert_eq!(episode.cwd, cwd);
        assert_eq!(episode.project_path, cwd.trim_end_matches(['/', '\\']));
        let last = cwd
            .trim_end_matches(['/', '\\'])
            .rsplit(['/', '\\'])
            .next()
            .unwrap();
        assert_eq!(episode.project, last, "{}", episode.session_id);
        let touched = engine
            .what_touched(
                &format!("project:{}", episode.project),
                &EdgeFilter::default(),
                1000,
            )
            .unwrap();
        assert!(
            touched.iter().any(|t| t.episode.id == node.id),
            "project:{} lists {}",
            episode.project,
            episode.session_id
        );
    }
    // Scrubbed folder names (`-src-deep-manifest`) would decode to `/src/deep/manifest`.
    if expected.contains_key("a7da6a22-facc-4fcd-8bab-f83c87862004") {
        let touched = engine
            .what_touched("project:deep-manifest", &EdgeFilter::default(), 1000)
            .unwrap();
        let sessions: Vec<&str> = touched
            .iter()
            .filter_map(|t| t.episode.episode())
            .filter(|e| e.agent.is_none())
            .map(|e| e.session_id.as_str())
            .collect();
        assert_eq!(sessions, ["a7da6a22-facc-4fcd-8bab-f83c87862004"]);
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Every node, every edge (by id, without record time) and every index key.
fn snapshot(engine: &Engine) -> BTreeMap<Vec<u8>, String> {
    let store = engine.graph().store();
    let mut out = BTreeMap::new();
    for (key, node) in store
        .scan::<eywa::model::Node>(Keyspace::Nodes, &[])
        .map(Result::unwrap)
    {
        out.insert(key, format!("{node:?}"));
    }
    // Edge versions are keyed by edge id and record time: compare ids and facts.
    for (_, mut edge) in store
        .scan::<eywa::model::Edge>(Keyspace::Edges, &[])
        .map(Result::unwrap)
    {
        edge.recorded_at = eywa::model::Timestamp(0);
        out.insert(edge.id.as_bytes().to_vec(), format!("{edge:?}"));
    }
    for ks in [
        Keyspace::EdgesBySrc,
        Keyspace::EdgesByDst,
        Keyspace::NodesByName,
        Keyspace::EpisodesByTime,
    ] {
        for key in store.keys(ks, &[]) {
            let mut k = ks.name().as_bytes().to_vec();
            k.extend(key.unwrap());
            out.insert(k, String::new());
        }
    }
    out
}

#[test]
fn re_ingesting_the_same_tree_changes_no_count_and_no_id() {
    let Some(real) = support::shared("corpus/claude-code/real_projects") else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    support::copy_tree(&real, &home.path().join("projects"));
    let engine = Engine::open(EngineConfig::temporary(home.path())).unwrap();
    let first = engine.ingest().unwrap();
    let before = snapshot(&engine);

    // Unchanged files are skipped...
    let again = engine.ingest().unwrap();
    assert_eq!(again.files_read, 0);
    assert_eq!(again.files_unchanged, first.files_scanned);
    assert_eq!(again.counts, first.counts);

    // ...and files that look changed are read again, to the same graph.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    for path in files(&home.path().join("projects")) {
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later)
            .unwrap();
    }
    let reread = engine.ingest().unwrap();
    assert_eq!(reread.files_read, first.files_scanned);
    assert_eq!(reread.counts, first.counts);
    assert_eq!(snapshot(&engine), before);

    // A fresh store derives the very same ids.
    let fresh = Engine::open(EngineConfig::temporary(home.path())).unwrap();
    fresh.ingest().unwrap();
    assert_eq!(snapshot(&fresh), before);
}

#[test]
fn the_excerpt_files_ingest_without_panicking() {
    let Some(corpus) = support::shared("corpus/claude-code") else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("projects/excerpts");
    std::fs::create_dir_all(&project).unwrap();
    let mut copied = 0;
    for entry in std::fs::read_dir(&corpus).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            std::fs::copy(&path, project.join(path.file_name().unwrap())).unwrap();
            copied += 1;
        }
    }
    let engine = Engine::open(EngineConfig::temporary(home.path())).unwrap();
    let report = engine.ingest().unwrap();
    assert_eq!(report.files_scanned, copied);
    assert_eq!(report.files_failed, 0);
    // The Windows excerpt is named after its last path component.
    if project.join("edit_tool.jsonl").exists() {
        let episode = engine
            .graph()
            .episodes()
            .unwrap()
            .into_iter()
            .find(|n| n.episode().is_some_and(|e| e.session_id == "edit_tool"));
        let episode = episode.expect("edit_tool.jsonl is a session");
        let e = episode.episode().unwrap();
        assert!(e.cwd.contains('\\'), "{}", e.cwd);
        assert!(
            !e.project.contains('\\') && !e.project.is_empty(),
            "{}",
            e.project
        );
    }
}

/// Paths a main session edited or created, read straight from its tool calls.
fn changed_files(path: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for v in json_lines(path) {
        if v.get("type").and_then(|t| t.as_str()) != Some("assistant")
            || v.get("isSidechain").and_then(serde_json::Value::as_bool) == Some(true)
        {
            continue;
        }
        let Some(blocks) = v.pointer("/message/content").and_then(|c| c.as_array()) else {
            continue;
        };
        for b in blocks {
            let name = b.get("name").and_then(|n| n.as_str()).unwrap_or("");
            if b.get("type").and_then(|t| t.as_str()) == Some("tool_use")
                && matches!(name, "Edit" | "MultiEdit" | "Write" | "NotebookEdit")
                && let Some(p) = ["file_path", "notebook_path"]
                    .iter()
                    .find_map(|k| b.pointer(&format!("/input/{k}")).and_then(|p| p.as_str()))
            {
                out.insert(p.to_owned());
            }
        }
    }
    out
}

#[test]
fn files_edited_in_the_corpus_are_the_ones_its_tool_calls_name() {
    let Some(real) = support::shared("corpus/claude-code/real_projects") else {
        return;
    };
    let (_home, engine) = ingested(&real);
    let filter = EdgeFilter {
        direction: eywa::graph::Direction::Out,
        relations: vec![
            eywa::model::Relation::Edited,
            eywa::model::Relation::Created,
        ],
        ..EdgeFilter::default()
    };
    let mut sessions_with_edits = 0;
    for node in engine.graph().episodes().unwrap() {
        let Some(e) = node.episode().filter(|e| e.agent.is_none()) else {
            continue;
        };
        let expected = changed_files(Path::new(&e.source_path));
        let got: BTreeSet<String> = engine
            .graph()
            .neighbors(node.id, &filter, 1000)
            .unwrap()
            .into_iter()
            .filter_map(|n| n.node.entity().and_then(|f| f.path.clone()))
            .collect();
        // Tool paths are absolute in the corpus; relative ones would be joined to the cwd.
        assert_eq!(got, expected, "{}", e.session_id);
        sessions_with_edits += usize::from(!expected.is_empty());
    }
    assert!(
        sessions_with_edits >= 6,
        "the corpus edits files in many sessions"
    );
}

/// Distinct tool calls and output tokens of a main session's own (non-sidechain) assistant
/// lines, read straight from the file: usage per (message.id, requestId), largest kept.
fn tool_calls_and_output_tokens(path: &Path) -> (u32, u64) {
    let mut tools = BTreeSet::new();
    let mut usage: BTreeMap<(String, String), u64> = BTreeMap::new();
    for v in json_lines(path) {
        if v.get("type").and_then(|t| t.as_str()) != Some("assistant")
            || v.get("isSidechain").and_then(serde_json::Value::as_bool) == Some(true)
        {
            continue;
        }
        for b in v
            .pointer("/message/content")
            .and_then(|c| c.as_array())
            .into_iter()
            .flatten()
        {
            if b.get("type").and_then(|t| t.as_str()) == Some("tool_use") {
                tools.insert(
                    b.get("id")
                        .and_then(|i| i.as_str())
                        .unwrap_or("")
                        .to_owned(),
                );
            }
        }
        if let Some(out) = v
            .pointer("/message/usage/output_tokens")
            .and_then(serde_json::Value::as_u64)
        {
            let key = (
                v.pointer("/message/id")
                    .and_then(|i| i.as_str())
                    .unwrap_or("")
                    .to_owned(),
                v.get("requestId")
                    .and_then(|i| i.as_str())
                    .unwrap_or("")
                    .to_owned(),
            );
            let slot = usage.entry(key).or_insert(0);
            *slot = (*slot).max(out);
        }
    }
    (tools.len() as u32, usage.values().sum())
}

#[test]
fn tool_calls_and_tokens_in_the_corpus_match_the_raw_lines() {
    let Some(real) = support::shared("corpus/claude-code/real_projects") else {
        return;
    };
    let (_home, engine) = ingested(&real);
    let mut checked = 0;
    for node in engine.graph().episodes().unwrap() {
        let Some(e) = node.episode().filter(|e| e.agent.is_none()) else {
            continue;
        };
        let (tools, output) = tool_calls_and_output_tokens(Path::new(&e.source_path));
        assert_eq!(e.tool_calls, tools, "{}: tool calls", e.session_id);
        assert_eq!(e.tokens.output, output, "{}: output tokens", e.session_id);
        checked += 1;
    }
    assert!(checked >= 10);
}

/// Seven real files across Claude Code 1.0.24 to 2.1.114, with what reading them by hand
/// gives: the headline (custom/AI title, a summary label of its messages from any file,
/// else the first real prompt's first sentence, at most ten words), the distinct tool calls of the session's
/// own lines, and the subagents its Task results name that have files of their own.
#[test]
fn seven_real_files_across_versions_pin_title_tools_and_subagents() {
    let Some(real) = support::shared("corpus/claude-code/real_projects") else {
        return;
    };
    let (_home, engine) = ingested(&real);
    let cases: [(&str, &str, u32, &[&str]); 7] = [
        // 1.0.24: 15 summary labels at the top all describe other files.
        (
            "fe869ecb-c176-478f-9734-7e4b8ef12cff",
            "Add a GitHub Action to run tests and linting for",
            32,
            &[],
        ),
        (
            "0d3a8e6f-290f-4105-a327-a2496e5e2a83",
            "Fix both issues in the timeline component",
            14,
            &[],
        ),
        // 1.0.x: no title of its own; a summary line at the top of a later file
        // (3680252d) labels its last message (Q5).
        (
            "f852ad25-1024-47da-964e-5eaae5bd6e6a",
            "Tokenizer App Documentation: Technical Details and Usage",
            35,
            &[],
        ),
        // 2.0.37: the first prompt opens with an IDE selection block, which is not typed.
        (
            "cb2e607c-c758-415a-8b45-c49e4631906a",
            "Make Project Installable as UV Tool",
            76,
            &["ea02459f"],
        ),
        (
            "a7da6a22-facc-4fcd-8bab-f83c87862004",
            "Add support for tar archives (.tar, .tar.gz, .tgz)",
            108,
            &["c8d9b115"],
        ),
        (
            "29ccd257-68b1-427f-ae5f-6524b7cb6f20",
            "Use the Explore task in sub-agents with Haiku model to",
            1,
            &["a2271d1"],
        ),
        (
            "ef958aa1-0e93-49f0-bb71-150f63befcd1",
            "Make a little experiment here",
            40,
            &["a4ca7529859c158c2", "a52886dc180afb356"],
        ),
    ];
    let spawned = EdgeFilter {
        direction: eywa::graph::Direction::Out,
        relations: vec![eywa::model::Relation::Spawned],
        ..EdgeFilter::default()
    };
    for (id, title, tools, agents) in cases {
        let Some(node) = engine
            .graph()
            .node(eywa::model::NodeId::episode(id))
            .unwrap()
        else {
            panic!("{id} is a session of the corpus");
        };
        let e = node.episode().unwrap();
        assert_eq!(e.title, title, "{id}");
        assert_eq!(e.tool_calls, tools, "{id}");
        let mut linked: Vec<String> = engine
            .graph()
            .neighbors(node.id, &spawned, 100)
            .unwrap()
            .into_iter()
            .filter_map(|n| {
                n.node
                    .episode()
                    .and_then(|e| e.agent.clone())
                    .map(|a| a.agent_id)
            })
            .collect();
        linked.sort();
        assert_eq!(linked, agents, "{id}");
    }
}

/// Q5: a `summary` line names a message by `leafUuid`, usually in another file. Read by
/// hand: every label whose leaf is a message of another session file that has no title
/// of its own (no custom or AI title) becomes that session's title, found whichever file
/// is read first.
#[test]
fn summary_labels_in_later_files_title_the_sessions_they_name() {
    let Some(real) = support::shared("corpus/claude-code/real_projects") else {
        return;
    };
    let files: Vec<std::path::PathBuf> = walk_jsonl(&real);
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    let mut titled: BTreeSet<String> = BTreeSet::new();
    for path in &files {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        for v in json_lines(path) {
            if let Some(uuid) = v.get("uuid").and_then(|u| u.as_str()) {
                owner.insert(uuid.to_owned(), stem.clone());
            }
            if matches!(
                v.get("type").and_then(|t| t.as_str()),
                Some("custom-title" | "ai-title")
            ) {
                titled.insert(stem.clone());
            }
        }
    }
    let mut expected: BTreeMap<String, String> = BTreeMap::new();
    for path in &files {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        for v in json_lines(path) {
            if v.get("type").and_then(|t| t.as_str()) != Some("summary") {
                continue;
            }
            let (Some(label), Some(leaf)) = (
                v.get("summary").and_then(|s| s.as_str()),
                v.get("leafUuid").and_then(|s| s.as_str()),
            ) else {
                continue;
            };
            if let Some(target) = owner.get(leaf)
                && *target != stem
                && !titled.contains(target)
                && !target.starts_with("agent-")
            {
                expected.insert(target.clone(), label.to_owned());
            }
        }
    }
    assert!(
        expected.len() >= 2,
        "the corpus labels sessions across files"
    );
    let (_home, engine) = ingested(&real);
    for (session, label) in &expected {
        let node = engine
            .graph()
            .node(eywa::model::NodeId::episode(session))
            .unwrap()
            .unwrap_or_else(|| panic!("{session} is a session"));
        // Labels here are short and have no sentence break, so the headline is the label.
        assert_eq!(node.episode().unwrap().title, *label, "{session}");
    }
}

fn walk_jsonl(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk_jsonl(&path));
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Every `.jsonl` file under `dir`, recursively, in path order.
fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn reading_texts_only_gives_every_message_text_a_whole_read_gives() {
    use eywa::claude::{Message, Mode, NoHistory, Reading, read_messages_as};
    let Some(corpus) = support::shared("corpus/claude-code") else {
        return;
    };
    // What a texts-only read keeps of a message: no thinking, no tool inputs or results,
    // and no message that had nothing else.
    let kept = |messages: Vec<Message>| -> Vec<(Option<String>, String, String, Vec<String>)> {
        messages
            .into_iter()
            .filter(|m| !m.text.is_empty() || !m.tool_calls.is_empty())
            .map(|m| {
                let calls = m.tool_calls.iter().map(|c| format!("{}:{}", c.id, c.name));
                (m.uuid, format!("{:?}", m.kind), m.text, calls.collect())
            })
            .collect()
    };
    let (mut files, mut messages, mut skipped_bytes) = (0, 0, 0);
    for path in jsonl_files(&corpus) {
        let bytes = std::fs::read(&path).unwrap();
        for mode in [Mode::Main, Mode::Agent] {
            let read = |reading| {
                read_messages_as(bytes.as_slice(), "", mode, &NoHistory, reading).unwrap()
            };
            let whole = read(Reading::Whole);
            let texts = read(Reading::Texts);
            assert!(texts.iter().all(|m| m.thinking.is_none()));
            assert!(
                texts
                    .iter()
                    .flat_map(|m| &m.tool_calls)
                    .all(|c| c.result.as_deref().is_none_or(str::is_empty))
            );
            skipped_bytes += whole
                .iter()
                .flat_map(|m| &m.tool_calls)
                .map(|c| c.result.as_ref().map_or(0, String::len))
                .sum::<usize>();
            messages += whole.len();
            assert_eq!(kept(texts), kept(whole), "{} ({mode:?})", path.display());
        }
        files += 1;
    }
    assert!(files > 0 && messages > 0 && skipped_bytes > 0);
}
