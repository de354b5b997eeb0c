//! The web view as a browser asks for it: a real `eywa serve`, each page asked for over
//! HTTP/1.1, one request at a time on a new connection. For each page: the first answer
//! (before any cache holds it), then p50 and p99 of the rest, timed by the client from
//! connecting to the last byte; and the weight of the first page with what it loads.
//!
//! Two stores of N sessions each:
//! - `web_pages/N/…`: imported from a Python Eywa folder (the store `served_get` times):
//!   the projects, a project's first page of sessions, a session, a search, a node, the
//!   SessionStart context, the stats, the memories and the documents;
//! - `web_pages/transcripts-N/…`: ingested from a Claude tree of N transcripts shaped
//!   like a heavy user's (`claude_tree_shaped`: 60 projects, sizes log-normal around
//!   10 KB) and one 5 MB session of ~2,500 messages: the same pages, a median session,
//!   and the 5 MB one's first and last pages of messages and its Markdown export.
//!
//! ```sh
//! cargo bench --bench web_pages                      # 1k, 10k and 100k sessions
//! EYWA_BENCH_SIZES=100000 cargo bench --bench web_pages
//! ```

mod fixture;
mod scale;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Requests timed per page, after the first.
const REQUESTS: usize = 200;
/// Requests timed for a page of the 5 MB session, after the first.
const BIG_REQUESTS: usize = 40;
/// The 5 MB session's id.
const BIG: &str = "b1600000-5555-4000-8000-000000000005";

fn main() {
    for n in scale::sizes() {
        imported(n);
    }
    for n in scale::sizes() {
        transcripts(n);
    }
}

/// The pages of a store imported from a Python Eywa folder of `n` sessions.
fn imported(n: usize) {
    let store = scale::imported_store(n);
    let server = scale::Serve::start(&store.data_dir);
    let addr = server.addr.trim_start_matches("http://").to_owned();
    let label = n.to_string();
    let (project, session) = first_listed(&addr, &label);
    let pages = common_pages(&project, &session);
    time_pages(&addr, &label, &pages, REQUESTS);
    weigh(&addr, &label, &server);
}

/// The pages of a store ingested from a Claude tree of `n` transcripts and one of 5 MB.
fn transcripts(n: usize) {
    let sessions = u32::try_from(n).expect("sessions fit a u32");
    let (tree, bytes, _) =
        fixture::claude_tree_shaped(&format!("claude-small-{n}"), sessions, 10e3, 0.25);
    let big = big_session(&tree);
    let data_dir = scale::ingested_store(&format!("eywa-transcripts-{n}"), &tree);
    let server = scale::Serve::start(&data_dir);
    let addr = server.addr.trim_start_matches("http://").to_owned();
    let label = format!("transcripts-{n}");
    println!(
        "web_pages/{label}: {n} transcripts of {} MB, and one of {:.1} MB",
        bytes / 1_000_000,
        big as f64 / 1e6
    );
    let (project, session) = first_listed(&addr, &label);
    let mut pages = common_pages(&project, &session);
    pages.retain(|(name, _)| *name != "search");
    pages.push(("search", "/search?q=refactor+QUERY".to_owned()));
    time_pages(&addr, &label, &pages, REQUESTS);

    let first = get(&addr, &format!("/sessions/{BIG}"));
    assert_eq!(first.status, 200, "{}", first.body);
    let last_page = between(&first.body, "Page 1 of ", "<")
        .and_then(|p| p.trim().parse::<usize>().ok())
        .unwrap_or(1);
    let big_pages = [
        ("session_5mb_first", format!("/sessions/{BIG}")),
        (
            "session_5mb_last",
            format!("/sessions/{BIG}?page={last_page}"),
        ),
        ("session_5mb_markdown", format!("/sessions/{BIG}/markdown")),
    ];
    time_pages(&addr, &label, &big_pages, BIG_REQUESTS);
    weigh(&addr, &label, &server);
    drop(server);
    after_changes(&data_dir, &label, &project);
}

/// Sessions written one after another while the store is served: once each is in, the
/// first answer of the pages that add up every session (the projects, `/stats`).
fn after_changes(data_dir: &std::path::Path, label: &str, project: &str) {
    const CHANGES: u32 = 5;
    // A Claude dir of its own, watched often: the bench's tree stays as it was built.
    let claude = tempfile::tempdir().unwrap();
    let dir = claude.path().join(format!("projects/-home-dev-{project}"));
    std::fs::create_dir_all(&dir).unwrap();
    let server = scale::Serve::start_with(
        data_dir,
        claude.path(),
        &["--no-ingest", "--watch-interval-ms", "100"],
    );
    let addr = server.addr.trim_start_matches("http://").to_owned();
    // Both made once before the first change.
    for path in ["/", "/stats"] {
        assert_eq!(get(&addr, path).status, 200);
    }
    let mut rng = fixture::Rng::new(7);
    // Ids of this run's own: the store keeps the sessions earlier runs wrote.
    let run = (eywa::model::Timestamp::now().0 / 1000) & 0xff_ffff;
    let (mut home, mut stats, mut session) = (Vec::new(), Vec::new(), Vec::new());
    for n in 0..CHANGES {
        let id = format!("c4{run:06x}-0000-4000-8000-{n:012}");
        let mut out = Vec::new();
        let mut turn = 0;
        // Later than every session of the tree (whose dates run into 2028): the newest.
        let now = eywa::model::Timestamp::parse("2030-01-01").unwrap().0
            + run * 1000
            + i64::from(n) * 60_000;
        let cwd = format!("/home/dev/{project}");
        fixture::session_lines_of(&mut out, &mut rng, &id, &cwd, now, &mut turn, 10_000, false);
        let part = dir.join(format!("{id}.jsonl.part"));
        std::fs::write(&part, &out).unwrap();
        std::fs::rename(&part, dir.join(format!("{id}.jsonl"))).unwrap();
        let waited = Instant::now();
        loop {
            let page = get(&addr, &format!("/sessions/{id}"));
            if page.status == 200 {
                // Its first answer: the session's id found in the index kept in step.
                session.push(page.took);
                break;
            }
            assert!(
                waited.elapsed() < Duration::from_secs(60),
                "session {id} never came in"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let first = get(&addr, "/");
        assert_eq!(first.status, 200);
        home.push(first.took);
        stats.push(get(&addr, "/stats").took);
        // The project's page, from the same overview, lists the new session first.
        let listed = get(&addr, &format!("/projects/{project}")).body;
        let newest = between(&listed, "href=\"/sessions/", "\"");
        assert_eq!(
            newest.as_deref(),
            Some(id.as_str()),
            "the project's newest session"
        );
    }
    let show = |times: &[Duration]| times.iter().map(|t| ms(*t)).collect::<Vec<_>>().join(", ");
    println!(
        "web_pages/{label}/after_change: {CHANGES} sessions written one by one; first answer after \
         each: its page {}; projects {}; stats {}",
        show(&session),
        show(&home),
        show(&stats)
    );
}

/// A session of about 5 MB (~400 turns of prompt, thinking, a file read, its result and
/// an answer) in a project of its own, written once beside the tree's; its bytes.
fn big_session(tree: &std::path::Path) -> u64 {
    let dir = tree.join("projects/-home-dev-monolith");
    let path = dir.join(format!("{BIG}.jsonl"));
    if let Ok(meta) = std::fs::metadata(&path) {
        return meta.len();
    }
    std::fs::create_dir_all(&dir).unwrap();
    let part = dir.join(format!("{BIG}.jsonl.part"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(&part).unwrap());
    let mut rng = fixture::Rng::new(5);
    let start = eywa::model::Timestamp::parse("2026-02-01").unwrap().0;
    let mut turn = 0;
    fixture::session_lines_of(
        &mut out,
        &mut rng,
        BIG,
        "/home/dev/monolith",
        start,
        &mut turn,
        5_000_000,
        false,
    );
    out.flush().unwrap();
    drop(out);
    std::fs::rename(&part, &path).unwrap();
    std::fs::metadata(&path).unwrap().len()
}

/// The first project the home page lists, and that project's newest session. This first
/// request builds the projects' overview (every session read once).
fn first_listed(addr: &str, label: &str) -> (String, String) {
    let cold = get(addr, "/");
    println!(
        "web_pages/{label}/projects: cold {} ({} KB)",
        ms(cold.took),
        cold.bytes / 1024
    );
    let project = between(&cold.body, "href=\"/projects/", "\"").expect("a project is listed");
    let sessions = get(addr, &format!("/projects/{project}")).body;
    let session = between(&sessions, "href=\"/sessions/", "\"").expect("a session is listed");
    (project, session)
}

/// The pages every store is timed on.
fn common_pages(project: &str, session: &str) -> Vec<(&'static str, String)> {
    vec![
        ("projects", "/".to_owned()),
        ("project", format!("/projects/{project}")),
        ("session", format!("/sessions/{session}")),
        ("search", "/search?q=QUERY".to_owned()),
        ("node", format!("/nodes/project:{project}")),
        ("context", format!("/context?project={project}")),
        ("stats", "/stats".to_owned()),
        ("memories", "/memories".to_owned()),
        ("documents", "/documents".to_owned()),
    ]
}

/// Times each page: its first answer, then p50, p99 and the slowest of `requests` more.
fn time_pages(addr: &str, label: &str, pages: &[(&str, String)], requests: usize) {
    for (name, path) in pages {
        // Searches take the bench's queries in turn (no result is cached, and a word
        // no session holds would find nothing: every word must match).
        let queries: Vec<&str> = scale::QUERIES
            .iter()
            .copied()
            .filter(|q| !q.is_empty())
            .collect();
        let mut asked = 0;
        let mut ask = || {
            asked += 1;
            let path = path.replace("QUERY", &segment(queries[asked % queries.len()]));
            let answer = get(addr, &path);
            assert_eq!(answer.status, 200, "{path}: {}", answer.body);
            answer
        };
        let first = ask();
        let mut times: Vec<Duration> = (0..requests).map(|_| ask().took).collect();
        times.sort();
        let hits = first.body.matches("<li class=\"hit\"").count();
        println!(
            "web_pages/{label}/{name}: first {} ({} KB{}), p50={} p99={} max={}",
            ms(first.took),
            first.bytes / 1024,
            if name.starts_with("search") {
                format!(", {hits} hits")
            } else {
                String::new()
            },
            ms(percentile(&times, 0.50)),
            ms(percentile(&times, 0.99)),
            ms(percentile(&times, 1.0)),
        );
    }
}

/// The weight of the first page with its stylesheet, script and icon.
fn weigh(addr: &str, label: &str, server: &scale::Serve) {
    let weight: usize = ["/", "/assets/eywa.css", "/assets/eywa.js", "/favicon.svg"]
        .iter()
        .map(|path| get(addr, path).bytes)
        .sum();
    println!(
        "web_pages/{label}: the first page with its stylesheet, script and icon weighs {} KB \
         (server RSS {:.0} MiB)",
        weight / 1024,
        server.rss_mib()
    );
}

struct Answer {
    status: u16,
    /// Bytes of the whole answer, headers included.
    bytes: usize,
    body: String,
    took: Duration,
}

/// `GET path`, on a connection of its own, read to its end.
fn get(addr: &str, path: &str) -> Answer {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/html\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.to_owned());
    Answer {
        status,
        bytes: raw.len(),
        body,
        took,
    }
}

/// The text between the first `start` and the `end` after it.
fn between(text: &str, start: &str, end: &str) -> Option<String> {
    let from = text.find(start)? + start.len();
    let to = text[from..].find(end)? + from;
    Some(text[from..to].to_owned())
}

/// `s` as one query value.
fn segment(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b' ' => "+".to_owned(),
            b if b.is_ascii_alphanumeric() || b"-._~".contains(&b) => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}
