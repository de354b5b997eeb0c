//! The web view as a browser asks for it: a real `eywa serve` on a store imported from a
//! Python Eywa folder of N sessions (the store `served_get` times), each page asked for
//! over HTTP/1.1, one request at a time on a new connection: the projects, a project's
//! first page of sessions, a session, a search, a node, the SessionStart context, the
//! stats, the memories and the documents. For each page: the first answer (before any
//! cache holds it), then p50 and p99 of the rest, timed by the client from connecting to
//! the last byte; and the weight of the first page with what it loads.
//!
//! ```sh
//! cargo bench --bench web_pages                      # 1k, 10k and 100k sessions
//! EYWA_BENCH_SIZES=100000 cargo bench --bench web_pages
//! ```

mod scale;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Requests timed per page, after the first.
const REQUESTS: usize = 200;

fn main() {
    for n in scale::sizes() {
        let store = scale::imported_store(n);
        let server = scale::Serve::start(&store.data_dir);
        let addr = server.addr.trim_start_matches("http://").to_owned();

        // What the pages name: the first project listed, and its newest session. This
        // first request builds the projects' overview (every session read once).
        let cold = get(&addr, "/");
        println!(
            "web_pages/{n}/projects: cold {} ({} KB)",
            ms(cold.took),
            cold.bytes / 1024
        );
        let home = cold.body;
        let project = between(&home, "href=\"/projects/", "\"").expect("a project is listed");
        let sessions = get(&addr, &format!("/projects/{project}")).body;
        let session = between(&sessions, "href=\"/sessions/", "\"").expect("a session is listed");
        let pages = [
            ("projects", "/".to_owned()),
            ("project", format!("/projects/{project}")),
            ("session", format!("/sessions/{session}")),
            ("search", "/search?q=QUERY".to_owned()),
            ("node", format!("/nodes/project:{project}")),
            ("context", format!("/context?project={project}")),
            ("stats", "/stats".to_owned()),
            ("memories", "/memories".to_owned()),
            ("documents", "/documents".to_owned()),
        ];
        for (name, path) in &pages {
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
                let answer = get(&addr, &path);
                assert_eq!(answer.status, 200, "{path}: {}", answer.body);
                answer
            };
            let first = ask();
            let mut times: Vec<Duration> = (0..REQUESTS).map(|_| ask().took).collect();
            times.sort();
            let hits = first.body.matches("<li class=\"hit\"").count();
            println!(
                "web_pages/{n}/{name}: first {} ({} KB{}), p50={} p99={} max={}",
                ms(first.took),
                first.bytes / 1024,
                if *name == "search" {
                    format!(", {hits} hits")
                } else {
                    String::new()
                },
                ms(percentile(&times, 0.50)),
                ms(percentile(&times, 0.99)),
                ms(percentile(&times, 1.0)),
            );
        }
        let weight: usize = ["/", "/assets/eywa.css", "/assets/eywa.js", "/favicon.svg"]
            .iter()
            .map(|path| get(&addr, path).bytes)
            .sum();
        println!(
            "web_pages/{n}: the first page with its stylesheet, script and icon weighs {} KB \
             (server RSS {:.0} MiB)",
            weight / 1024,
            server.rss_mib()
        );
    }
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
