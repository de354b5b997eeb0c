//! Hostile files and inputs (issue 30): a crafted file is that file's error, never the
//! process's; what failed is listed and skipped until it changes; `serve` starts
//! regardless.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::serve::Serve;
use crate::support::{eywa_command, succeed};

/// Writes the crafted PDFs of `tests/untrusted/hostile_pdfs.py` into `dir`.
fn hostile_pdfs(dir: &Path) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/untrusted/hostile_pdfs.py");
    succeed(Command::new("python3").arg(script).arg(dir));
}

/// Runs `eywa ARGS` under python, which reports the largest resident set of it and its
/// children (the PDF reader): (exit code, stderr, peak RSS in MiB).
fn peak_rss(data: &Path, claude: &Path, args: &[&str]) -> (i32, String, u64) {
    let probe = "import resource, subprocess, sys\n\
                 r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n\
                 sys.stderr.buffer.write(r.stderr)\n\
                 print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)";
    let cmd = eywa_command(data, claude);
    let out = Command::new("python3")
        .envs(cmd.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .args(["-c", probe, cmd.get_program().to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let mut words = stdout.split_whitespace();
    let code: i32 = words.next().unwrap().parse().unwrap();
    let kib: u64 = words.next().unwrap().parse().unwrap();
    (code, String::from_utf8(out.stderr).unwrap(), kib / 1024)
}

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn issue_30_a_crafted_pdf_is_its_own_error_and_serve_starts_regardless() {
    let root = tempfile::tempdir().unwrap();
    let claude = root.path().join("claude");
    std::fs::create_dir_all(claude.join("projects")).unwrap();
    let data = root.path().join("data");
    let inbox = root.path().join("inbox");
    hostile_pdfs(&inbox);
    std::fs::write(
        inbox.join("notes.md"),
        "# Notes\n\nThe release train leaves on Tuesdays.\n",
    )
    .unwrap();
    let eywa = || eywa_command(&data, &claude);
    let path = |name: &str| inbox.join(name).display().to_string();

    // The issue's reproduction reads as the page it shows; the nesting is skipped.
    let added = json(&succeed(eywa().args([
        "docs",
        "add",
        &path("deep.pdf"),
        "--json",
    ])));
    assert_eq!(added["outcomes"][0]["added"], "new", "{added}");
    let shown = json(&succeed(eywa().args([
        "docs",
        "show",
        &path("deep.pdf"),
        "--json",
    ])));
    assert_eq!(shown["text"][0], "x");

    // The 1.5 MB bomb is refused, the reader and eywa together under 200 MB.
    let (code, err, mib) = peak_rss(&data, &claude, &["docs", "add", &path("bomb.pdf")]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("inflates past 32 MB"), "{err}");
    assert!(mib < 200, "adding the bomb took {mib} MiB");

    // A followed folder of them: what can be read is added, the rest noted with why.
    let watched = json(&succeed(eywa().args([
        "docs",
        "watch",
        &inbox.display().to_string(),
        "--json",
    ])));
    let refused = watched["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["error"].is_string())
        .count();
    assert_eq!(refused, 4, "{watched}");

    // serve starts with them in the folder it follows, and reads it again at start.
    let mut cmd = eywa();
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--watch-interval-ms", "0"]);
    let server = Serve::spawn(cmd);
    // Sent to the running server, a bomb is the request's error; the server goes on.
    let out = eywa()
        .args(["docs", "add", &path("objstm_bomb.pdf")])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("inflates past"),
        "{err}"
    );
    let listed = json(&succeed(eywa().args(["docs", "list", "--json"])));
    let mut titles: Vec<&str> = listed["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    titles.sort_unstable();
    assert_eq!(
        titles,
        [
            "deep.pdf",
            "deep_cmap.pdf",
            "deep_plain.pdf",
            "notes.md",
            "pages_count.pdf"
        ]
    );
    let failed = json(&succeed(
        eywa().args(["docs", "list", "--failed", "--json"]),
    ));
    let reasons: std::collections::BTreeMap<&str, &str> = failed["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().rsplit('/').next().unwrap(),
                f["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(failed["total"], 4, "{failed}");
    assert!(
        reasons["bomb.pdf"].contains("inflates past 32 MB"),
        "{reasons:?}"
    );
    assert!(
        reasons["objstm_bomb.pdf"].contains("inflates past 32 MB"),
        "{reasons:?}"
    );
    assert!(
        reasons["dup_offsets.pdf"].contains("four times its size"),
        "{reasons:?}"
    );
    assert!(
        reasons["tounicode_range.pdf"].contains("16777216 codes"),
        "{reasons:?}"
    );
    let stats = json(&succeed(eywa().args(["stats", "--json"])));
    assert_eq!(stats["failed_documents"]["count"], 4, "{stats}");

    // A failed file is skipped until it changes; then it is read again.
    std::fs::write(inbox.join("bomb.pdf"), b"%PDF-1.4 still not a PDF").unwrap();
    succeed(eywa().args(["ingest", "--json"]));
    let failed = json(&succeed(
        eywa().args(["docs", "list", "--failed", "--json"]),
    ));
    let bomb = failed["failed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("/bomb.pdf"))
        .unwrap();
    assert!(
        bomb["reason"].as_str().unwrap().starts_with("not a PDF"),
        "{bomb}"
    );
    std::fs::remove_file(inbox.join("bomb.pdf")).unwrap();
    std::fs::copy(inbox.join("deep.pdf"), inbox.join("bomb.pdf")).unwrap();
    succeed(eywa().args(["ingest", "--json"]));
    let failed = json(&succeed(
        eywa().args(["docs", "list", "--failed", "--json"]),
    ));
    assert_eq!(failed["total"], 3, "{failed}");
    let lines = server.stop();
    assert!(!lines.iter().any(|l| l.contains("panicked")), "{lines:#?}");
}

#[test]
fn issue_30_the_cli_quotes_at_most_200_characters_of_an_input() {
    let root = tempfile::tempdir().unwrap();
    let claude = root.path().join("claude");
    std::fs::create_dir_all(claude.join("projects")).unwrap();
    let data = root.path().join("data");
    // 100,000 bytes: an argument may have 128 KiB.
    let long = |c: &str| c.repeat(100_000 / c.len());
    let cases: Vec<Vec<String>> = vec![
        // Refused by the command line's own parser.
        vec!["search".into(), "x".into(), "--mode".into(), long("m")],
        vec![
            "memory".into(),
            "add".into(),
            "x".into(),
            "--type".into(),
            long("t"),
        ],
        vec!["docs".into(), "list".into(), "--limit".into(), long("9")],
        // Refused by eywa.
        vec!["docs".into(), "show".into(), long("d")],
        vec![
            "graph".into(),
            "node".into(),
            format!("project:{}", long("p")),
        ],
        vec!["memory".into(), "history".into(), long("é")],
        vec!["sessions".into(), "show".into(), long("s")],
        vec!["docs".into(), "add".into(), format!("/tmp/{}", long("f"))],
    ];
    for args in cases {
        let out = eywa_command(&data, &claude).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{:?}", &args[..2]);
        assert!(
            err.chars().count() <= 2_100,
            "{:?}: {} characters",
            &args[..2],
            err.chars().count()
        );
        let input = args.last().unwrap();
        let head: String = input
            .trim_start_matches("project:")
            .chars()
            .take(201)
            .collect();
        assert!(
            !err.contains(&head),
            "{:?} quotes its input whole: {err}",
            &args[..2]
        );
    }
}
