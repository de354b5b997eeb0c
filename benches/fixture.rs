//! Synthetic data shared by the benches, from a fixed seed so runs compare.

#![allow(dead_code)]

use chrono::{Duration, NaiveDate};
use eywa::model::{Handoff, NodeId, Timestamp};

/// A small, fixed-seed generator (SplitMix64): no dependency, same data every run.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Skewed towards 0 (a few projects and terms are very common, most are rare).
    pub(crate) fn skewed(&mut self, n: u64) -> u64 {
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64).powf(u) - 1.0) as u64 % n
    }
}

const SYLLABLES: [&str; 24] = [
    "ka", "to", "ri", "mon", "sel", "da", "vi", "ne", "lo", "pra", "sum", "ter", "ga", "bel", "fo",
    "qui", "zen", "ar", "ul", "ex", "dri", "ost", "ply", "wen",
];

/// The `k`-th word of a synthetic vocabulary: distinct, word-like (`kamon`, `selvi`), so
/// substring matches are about as rare as among real keywords.
pub(crate) fn word(k: u64) -> String {
    let base = SYLLABLES.len() as u64;
    let mut n = k + base; // at least two syllables
    let mut w = String::new();
    while n > 0 {
        w.push_str(SYLLABLES[(n % base) as usize]);
        n /= base;
    }
    w
}

pub(crate) fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 1).unwrap()
}

/// `n` handoffs over a year: projects and keywords drawn with a skew, as real ones are.
pub(crate) fn handoffs(n: usize, seed: u64) -> Vec<Handoff> {
    let mut rng = Rng::new(seed);
    let projects = (n / 30).max(10) as u64;
    let vocabulary = (n / 2).max(100) as u64;
    (0..n)
        .map(|i| {
            let id = format!("{:08x}-0000-4000-8000-{:012x}", rng.next_u64() as u32, i);
            let date = today() - Duration::days(rng.below(365) as i64);
            let keywords = (0..8).map(|_| word(rng.skewed(vocabulary))).collect();
            Handoff {
                short_id: id[..8].to_owned(),
                episode: NodeId::episode(&id),
                session_id: id,
                date,
                started_at: Timestamp::parse(&date.to_string()).unwrap(),
                duration_minutes: Some(rng.below(180) as u32),
                model: Some("claude-sonnet-4-5".to_owned()),
                headline: "Synthetic session".to_owned(),
                projects: vec![format!("{}-app", word(rng.skewed(projects)))],
                keywords,
                substance: (rng.below(10) as u8).min(2),
                cwd: String::new(),
                sections: Default::default(),
                user: "ana".to_owned(),
                machine: "laptop".to_owned(),
            }
        })
        .collect()
}

/// Episodes of the synthetic graph.
pub(crate) const GRAPH_EPISODES: u32 = 100_000;
/// Edges per episode: 1 TOUCHED, 3 USED, 6 READ/EDITED → 1,000,000 edges.
pub(crate) const EDGES_PER_EPISODE: u32 = 10;
const GRAPH_PROJECTS: u64 = 500;
const GRAPH_TOOLS: u64 = 20;
const FILES_PER_PROJECT: u64 = 200;
/// Bump when the generator changes, so a stale cached graph is rebuilt.
const GRAPH_VERSION: u32 = 1;

/// The synthetic graph's store directory, generated on first use (through the real write
/// path, one batch per episode) and reused after.
pub(crate) fn graph_dir() -> std::path::PathBuf {
    use eywa::extract::SessionFacts;
    use eywa::graph::{Graph, SourceRecord};
    use eywa::model::{Edge, EntityType, Episode, Node, Relation};

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "target/bench-data/graph-{GRAPH_EPISODES}-v{GRAPH_VERSION}"
    ));
    let done = dir.join("complete");
    if done.exists() {
        ensure_view_snapshot(&dir.join("store"));
        return dir.join("store");
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "generating the synthetic graph in {} (once)…",
        dir.display()
    );
    let started = std::time::Instant::now();
    let store = eywa_storage::Config::new()
        .path(dir.join("store"))
        .open()
        .unwrap();
    let graph = Graph::open(store).unwrap();
    let mut rng = Rng::new(7);
    let base = Timestamp::parse("2025-01-01").unwrap().0;
    let entity =
        |kind: EntityType, id: NodeId, name: String, path: Option<String>, at: Timestamp| {
            eywa::extract::entity(kind, id, &name, path.as_deref(), at, at)
        };
    for i in 0..GRAPH_EPISODES {
        let session_id = format!("{i:08x}-0000-4000-8000-{:012x}", u64::from(i));
        let start = Timestamp(base + i64::from(i) * 300_000 + rng.below(60_000) as i64);
        let end = Timestamp(start.0 + 60_000 * (1 + rng.below(120) as i64));
        let project = rng.skewed(GRAPH_PROJECTS);
        let project_path = format!("/w/{}", word(project));
        let episode_id = NodeId::episode(&session_id);
        let mut entities = vec![entity(
            EntityType::Project,
            NodeId::project(&project_path),
            word(project),
            Some(project_path.clone()),
            start,
        )];
        let mut edges = Vec::new();
        let mut edge = |dst: NodeId, relation: Relation| {
            let mut e = Edge::new(episode_id, relation, dst, start);
            e.valid_to = Some(end);
            edges.push(e);
        };
        edge(NodeId::project(&project_path), Relation::Touched);
        let mut tools: Vec<u64> = Vec::new();
        while tools.len() < 3 {
            let t = rng.skewed(GRAPH_TOOLS);
            if !tools.contains(&t) {
                tools.push(t);
            }
        }
        for t in tools {
            let name = format!("Tool{t}");
            edge(NodeId::tool(&name), Relation::Used);
            entities.push(entity(
                EntityType::Tool,
                NodeId::tool(&name),
                name,
                None,
                start,
            ));
        }
        let mut files: Vec<u64> = Vec::new();
        while files.len() < 6 {
            let f = rng.skewed(FILES_PER_PROJECT);
            if !files.contains(&f) {
                files.push(f);
            }
        }
        for (k, f) in files.into_iter().enumerate() {
            let path = format!("{project_path}/src/{}.rs", word(f));
            let id = NodeId::file(&path);
            edge(
                id,
                if k % 2 == 0 {
                    Relation::Read
                } else {
                    Relation::Edited
                },
            );
            entities.push(entity(EntityType::File, id, word(f), Some(path), start));
        }
        let episode = Episode {
            session_id: session_id.clone(),
            short_id: session_id[..8].to_owned(),
            source_path: format!("/synthetic/{session_id}.jsonl"),
            project: word(project),
            project_path: project_path.clone(),
            cwd: project_path,
            git_branch: Some("main".to_owned()),
            models: vec!["claude-sonnet-4-5".to_owned()],
            version: Some("2.1.0".to_owned()),
            start,
            end,
            active_minutes: ((end.0 - start.0) / 60_000) as u32,
            user_messages: 10,
            assistant_messages: 10,
            prompts: 3,
            tool_calls: 12,
            title: "Synthetic session".to_owned(),
            substance: 2,
            agent: None,
            tokens: Default::default(),
            slug: None,
            compactions: Vec::new(),
            resumes: Vec::new(),
            user: "ana".to_owned(),
            machine: "laptop".to_owned(),
        };
        let handoff = Handoff {
            session_id: session_id.clone(),
            short_id: session_id[..8].to_owned(),
            episode: episode_id,
            date: start.date(),
            started_at: start,
            duration_minutes: Some(episode.active_minutes),
            model: None,
            headline: "Synthetic session".to_owned(),
            projects: vec![episode.project.clone()],
            keywords: vec![word(rng.skewed(5_000))],
            substance: 2,
            cwd: episode.cwd.clone(),
            sections: Default::default(),
            user: episode.user.clone(),
            machine: episode.machine.clone(),
        };
        let facts = SessionFacts {
            episode: Node::from_episode(episode_id, "Synthetic session".to_owned(), episode),
            handoff: Some(handoff),
            entities,
            edges,
        };
        let source = SourceRecord {
            path: format!("/synthetic/{session_id}.jsonl"),
            len: 0,
            modified_ms: 0,
            session_id,
            lines: 0,
            skipped_lines: 0,
            episode: Some(episode_id),
            ..SourceRecord::default()
        };
        graph
            .write_session(
                eywa_storage::Batch::new(),
                std::slice::from_ref(&facts),
                &source,
            )
            .unwrap();
        if i % 10_000 == 9_999 {
            eprintln!("  {} episodes ({:.0?})", i + 1, started.elapsed());
        }
    }
    graph.store().flush().unwrap();
    graph.save_view().unwrap();
    let counts = graph.counts().unwrap();
    assert_eq!(counts.episodes, u64::from(GRAPH_EPISODES));
    assert_eq!(counts.edges, u64::from(GRAPH_EPISODES * EDGES_PER_EPISODE));
    drop(graph);
    std::fs::write(&done, format!("{counts:?}\n")).unwrap();
    eprintln!("generated in {:.1?}: {counts:?}", started.elapsed());
    dir.join("store")
}

/// Saves the view snapshot of a store generated before snapshots existed.
fn ensure_view_snapshot(store: &std::path::Path) {
    let store = eywa_storage::Config::new().path(store).open().unwrap();
    let graph = eywa::graph::Graph::open(store).unwrap();
    if !graph.view_from_snapshot().unwrap() {
        graph.save_view().unwrap();
    }
}

/// Opens the synthetic graph.
pub(crate) fn open_graph() -> eywa::graph::Graph {
    let store = eywa_storage::Config::new()
        .path(graph_dir())
        .open()
        .unwrap();
    eywa::graph::Graph::open(store).unwrap()
}

/// Times `f` once per input and prints p50/p95/p99 (criterion reports means, the targets
/// are percentiles).
pub(crate) fn percentiles<T>(label: &str, inputs: &[T], mut f: impl FnMut(&T)) {
    let mut times: Vec<std::time::Duration> = inputs
        .iter()
        .map(|input| {
            let t = std::time::Instant::now();
            f(input);
            t.elapsed()
        })
        .collect();
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    println!(
        "{label}: n={} p50={:.3?} p95={:.3?} p99={:.3?} max={:.3?}",
        times.len(),
        at(0.50),
        at(0.95),
        at(0.99),
        times[times.len() - 1]
    );
}

/// Sessions of the synthetic Claude tree, about 2 MB each: over 500 MB in all.
pub(crate) const TREE_SESSIONS: u32 = 260;
const TREE_VERSION: u32 = 1;

/// A synthetic `~/.claude` with a realistic mix of lines: typed prompts, assistant
/// responses split over thinking/text/tool_use lines sharing a message id, tool results
/// with code-sized outputs, progress and snapshot noise, and now and then a large
/// base64 image. Generated once, reused after.
pub(crate) fn claude_tree() -> (std::path::PathBuf, u64) {
    use std::io::Write;

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "target/bench-data/claude-{TREE_SESSIONS}-v{TREE_VERSION}"
    ));
    let done = root.join("complete");
    let size = |root: &std::path::Path| -> u64 {
        let mut total = 0;
        for dir in std::fs::read_dir(root.join("projects")).unwrap() {
            for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
                total += f.unwrap().metadata().unwrap().len();
            }
        }
        total
    };
    if done.exists() {
        return (root.clone(), size(&root));
    }
    let _ = std::fs::remove_dir_all(&root);
    let mut rng = Rng::new(99);
    for s in 0..TREE_SESSIONS {
        let project = word(rng.skewed(40));
        let cwd = format!("/home/dev/{project}");
        let dir = root.join("projects").join(cwd.replace('/', "-"));
        std::fs::create_dir_all(&dir).unwrap();
        let id = format!("{s:08x}-1111-4000-8000-{:012x}", u64::from(s));
        let mut out = std::io::BufWriter::new(
            std::fs::File::create(dir.join(format!("{id}.jsonl"))).unwrap(),
        );
        let start = Timestamp::parse("2026-06-01").unwrap().0 + i64::from(s) * 3_600_000;
        let mut turn = 0;
        session_turns(&mut out, &mut rng, &id, &cwd, start, &mut turn, 2_000_000);
        out.flush().unwrap();
    }
    std::fs::write(&done, "").unwrap();
    (root.clone(), size(&root))
}

/// A tree of `~/.claude` shaped like a real one: `sessions` transcripts over 60 projects
/// whose sizes spread around `median` bytes (log-normal, σ = `spread`, clipped to 8 KB –
/// 4 MB), no images; written once into `target/bench-data/<name>`. Returns the root,
/// the bytes of its transcripts and the sessions.
pub(crate) fn claude_tree_shaped(
    name: &str,
    sessions: u32,
    median: f64,
    spread: f64,
) -> (std::path::PathBuf, u64, u32) {
    use std::io::Write;

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/bench-data")
        .join(name);
    let done = root.join("complete");
    if let Ok(text) = std::fs::read_to_string(&done)
        && let Ok(bytes) = text.trim().parse()
    {
        return (root, bytes, sessions);
    }
    let _ = std::fs::remove_dir_all(&root);
    let mut rng = Rng::new(u64::from(sessions) ^ 0x5eed);
    let mut normal = || {
        // Box–Muller.
        let u = |r: &mut Rng| ((r.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let (a, b) = (u(&mut rng), u(&mut rng));
        (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
    };
    let sizes: Vec<usize> = (0..sessions)
        .map(|_| (median * (spread * normal()).exp()).clamp(8e3, 4e6) as usize)
        .collect();
    let mut rng = Rng::new(u64::from(sessions));
    let mut total = 0u64;
    for (s, &size) in sizes.iter().enumerate() {
        let project = word(rng.skewed(60));
        let cwd = format!("/home/dev/{project}");
        let dir = root.join("projects").join(cwd.replace('/', "-"));
        std::fs::create_dir_all(&dir).unwrap();
        let id = format!("{s:08x}-2222-4000-8000-{:012x}", s as u64);
        let mut out = std::io::BufWriter::new(
            std::fs::File::create(dir.join(format!("{id}.jsonl"))).unwrap(),
        );
        let start = Timestamp::parse("2026-03-01").unwrap().0 + s as i64 * 600_000;
        let mut turn = 0;
        total +=
            session_lines_of(&mut out, &mut rng, &id, &cwd, start, &mut turn, size, false) as u64;
        out.flush().unwrap();
    }
    std::fs::write(&done, total.to_string()).unwrap();
    (root, total, sessions)
}

/// Writes turns of a synthetic session to `out` until `target` bytes: a typed prompt, an
/// assistant response split over thinking and tool_use lines sharing a message id, a tool
/// result of code, a hook progress line, a text answer, now and then a snapshot line and a
/// ~190 KB base64 image. `turn` carries on across calls (unique uuids).
pub(crate) fn session_turns(
    out: &mut impl std::io::Write,
    rng: &mut Rng,
    id: &str,
    cwd: &str,
    start_ms: i64,
    turn: &mut u32,
    target: usize,
) -> usize {
    session_lines_of(out, rng, id, cwd, start_ms, turn, target, true)
}

/// [`session_turns`], with or without the occasional image.
#[allow(clippy::too_many_arguments)]
pub(crate) fn session_lines_of(
    out: &mut impl std::io::Write,
    rng: &mut Rng,
    id: &str,
    cwd: &str,
    start_ms: i64,
    turn: &mut u32,
    target: usize,
    images: bool,
) -> usize {
    use serde_json::json;

    let code = "fn handle(request: &Request) -> Result<Response, Error> {\n    let user = request.user()?;\n    if !user.can(\"write\") { return Err(Error::Forbidden); }\n    Ok(Response::ok(render(&user)))\n}\n";
    let image = "iVBORw0KGgoAAAANSUhEUgAA".repeat(8_000);
    let mut bytes = 0usize;
    while bytes < target {
        *turn += 1;
        let turn = *turn;
        let t = start_ms + i64::from(turn) * 20_000;
        let ts = Timestamp(t).to_rfc3339();
        let mut lines = vec![
            json!({"type": "user", "uuid": format!("{id}-u{turn}"), "sessionId": id, "cwd": cwd,
            "gitBranch": "main", "version": "2.1.17", "timestamp": ts,
            "message": {"role": "user", "content": format!("Please refactor the {} handler and add tests for {}", word(rng.below(5_000)), word(rng.below(5_000)))}}),
        ];
        let msg = format!("msg_{id}_{turn}");
        lines.push(json!({"type": "assistant", "uuid": format!("{id}-t{turn}"), "sessionId": id, "cwd": cwd, "timestamp": ts, "requestId": format!("req_{turn}"),
            "message": {"id": msg, "role": "assistant", "model": "claude-opus-4-6", "usage": {"input_tokens": 1200, "output_tokens": 40},
                "content": [{"type": "thinking", "thinking": "Let me look at the handler first. ".repeat(20), "signature": "EqoBCkgIARABGAIiQ"}]}}));
        lines.push(json!({"type": "assistant", "uuid": format!("{id}-x{turn}"), "sessionId": id, "cwd": cwd, "timestamp": ts, "requestId": format!("req_{turn}"),
            "message": {"id": msg, "role": "assistant", "model": "claude-opus-4-6", "usage": {"input_tokens": 1200, "output_tokens": 400},
                "content": [{"type": "tool_use", "id": format!("toolu_{id}_{turn}"), "name": "Read", "input": {"file_path": format!("{cwd}/src/{}.rs", word(rng.below(300)))}}]}}));
        lines.push(json!({"type": "user", "uuid": format!("{id}-r{turn}"), "sessionId": id, "cwd": cwd, "timestamp": ts,
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{id}_{turn}"), "content": code.repeat(20 + rng.below(60) as usize)}]},
            "toolUseResult": {"type": "text", "file": {"numLines": 400}}}));
        lines.push(json!({"type": "progress", "uuid": format!("{id}-p{turn}"), "sessionId": id, "timestamp": ts, "data": {"type": "hook_progress", "hookName": "PostToolUse"}}));
        lines.push(json!({"type": "assistant", "uuid": format!("{id}-a{turn}"), "sessionId": id, "cwd": cwd, "timestamp": ts, "requestId": format!("req_{turn}b"),
            "message": {"id": format!("{msg}b"), "role": "assistant", "model": "claude-opus-4-6", "usage": {"input_tokens": 2000, "output_tokens": 300},
                "content": [{"type": "text", "text": format!("I refactored {} and added three tests. ", word(rng.below(5_000))).repeat(6)}]}}));
        if turn.is_multiple_of(7) {
            lines.push(json!({"type": "file-history-snapshot", "messageId": msg, "isSnapshotUpdate": false, "snapshot": {"trackedFileBackups": {}}}));
        }
        if images && rng.below(40) == 0 {
            lines.push(json!({"type": "user", "uuid": format!("{id}-i{turn}"), "sessionId": id, "cwd": cwd, "timestamp": ts,
                "message": {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}}, {"type": "text", "text": "see this"}]}}));
        }
        for line in lines {
            let text = line.to_string();
            bytes += text.len() + 1;
            writeln!(out, "{text}").unwrap();
        }
    }
    bytes
}

/// Peak resident memory of this process so far (VmHWM), in MiB.
pub(crate) fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// `n` synthetic text-like vectors of `dim` dimensions, of low rank: each is a weighted
/// sum of three of `rank` shared topic directions (the first drawn with a skew, weights
/// 0.2 to 1) plus a little noise, so that neighbours are told apart by what they are
/// about, as with real text. Deterministic for a seed. (Vectors whose neighbours differ
/// only by isotropic noise make every approximate index look broken: at a million, the
/// top 10 of a few hundred equidistant vectors is a lottery.)
pub(crate) fn low_rank_vectors(
    n: usize,
    dim: usize,
    rank: usize,
    seed: u64,
) -> impl Iterator<Item = Vec<f32>> {
    let mut rng = Rng::new(seed);
    let mut uniform = move || (rng.next_u64() >> 11) as f32 / (1u64 << 53) as f32 - 0.5;
    let topics: Vec<Vec<f32>> = (0..rank)
        .map(|_| (0..dim).map(|_| uniform()).collect())
        .collect();
    let mut pick = Rng::new(seed ^ 0xA5A5);
    (0..n).map(move |_| {
        let mut v: Vec<f32> = (0..dim).map(|_| 0.1 * uniform()).collect();
        for i in 0..3 {
            let t = if i == 0 {
                pick.skewed(rank as u64)
            } else {
                pick.below(rank as u64)
            };
            let w = 0.2 + 0.8 * (pick.below(10_000) as f32 / 10_000.0);
            for (x, y) in v.iter_mut().zip(&topics[t as usize]) {
                *x += w * y;
            }
        }
        v
    })
}

/// The installed all-MiniLM-L6-v2: `EYWA_MODEL_DIR`, or where the tests install it
/// (`target/tools/models/`). Panics with what to do when there is none.
/// Where the model the tests installed is: `EYWA_MODEL_DIR`, else `target/tools/models`.
pub(crate) fn model_dir() -> std::path::PathBuf {
    std::env::var_os("EYWA_MODEL_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/tools/models/all-MiniLM-L6-v2")
        })
}

pub(crate) fn minilm() -> eywa::embed::MiniLm {
    eywa::embed::MiniLm::load(&installed_model()).unwrap()
}

/// The model through candle's operations, not eywa's AVX-512 kernels.
pub(crate) fn minilm_unpacked() -> eywa::embed::MiniLm {
    eywa::embed::MiniLm::load_unpacked(&installed_model()).unwrap()
}

fn installed_model() -> eywa::embed::ModelDir {
    let dir = model_dir();
    eywa::embed::ModelDir::open(&dir)
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            panic!(
                "no embedding model at {}: run `cargo test` once (it installs one there), or \
                 `eywa model install` and set EYWA_MODEL_DIR to the installed folder",
                dir.display()
            )
        })
}
