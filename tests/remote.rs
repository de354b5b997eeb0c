//! A server that takes remote callers (issue 14): `serve --allow-remote` on a second
//! loopback address, asked by the real grpcurl over TLS. No token: UNAUTHENTICATED; the
//! read-only token: Search answers and MigrateSessions is PERMISSION_DENIED; the token
//! that may write: a migration to a sane target runs, to `/proc` or `..` it is refused.
//! Its `/mcp` (issue 30) answers the official MCP SDK over TLS by HTTP/1.1 and HTTP/2 at
//! the address it serves on; without a token it is HTTP 401, with the read-only one 403.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::clients;
use crate::support::fixture::{ClaudeHome, days_ago};
use crate::support::grpcurl::{self, Output};
use crate::support::serve::Serve;

const SESSION: &str = "7e3a0e11-0000-4000-8000-000000000001";

fn eywa(home: &ClaudeHome, data: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_eywa"));
    cmd.env("EYWA_DATA_DIR", data)
        .env("EYWA_CLAUDE_DIR", home.root())
        .env("EYWA_MODEL_INSTALL", "never")
        .env_remove("EYWA_ADDR")
        .env_remove("EYWA_LOG")
        .env_remove("EYWA_TOKEN_FILE")
        .env_remove("EYWA_TLS_CA");
    cmd
}

/// A Claude home with one billing session.
fn billing() -> ClaudeHome {
    let home = ClaudeHome::new();
    home.session(
        SESSION,
        "/w/billing",
        days_ago(1),
        &[("Fix the invoice rounding", "Rounded to cents.")],
    );
    home
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_remote_server_asks_for_tokens_by_scope_over_tls() {
    let Some(grpcurl) = grpcurl::grpcurl() else {
        return;
    };
    let home = billing();
    let data_dir = tempfile::tempdir().unwrap();
    let data = data_dir.path().join("eywa");
    let ingested = eywa(&home, &data)
        .args(["ingest", "--json"])
        .output()
        .unwrap();
    assert!(ingested.status.success());

    // Refused without --allow-remote on an address beyond loopback.
    let refused = eywa(&home, &data)
        .args(["--addr", "0.0.0.0:0", "serve", "--no-ingest"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--allow-remote"));

    let serve = Serve::spawn({
        let mut cmd = eywa(&home, &data);
        cmd.args([
            "--addr",
            "127.0.0.2:0",
            "serve",
            "--allow-remote",
            "--no-ingest",
            "--watch-interval-ms",
            "0",
        ]);
        cmd
    });
    let addr = serve.addr.clone();
    let (write, read, cert) = (
        data.join("token"),
        data.join("token.read"),
        data.join("tls/cert.pem"),
    );
    for file in [&write, &read, &cert, &data.join("tls/key.pem")] {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    let token = |f: &Path| std::fs::read_to_string(f).unwrap().trim().to_owned();
    let call = |token: Option<&str>, method: &str, body: &str| -> Output {
        let header = token.map(|t| format!("authorization: Bearer {t}"));
        let mut args = vec!["-cacert", cert.to_str().unwrap()];
        if let Some(h) = &header {
            args.extend(["-H", h.as_str()]);
        }
        args.extend(["-d", body, addr.as_str(), method]);
        grpcurl::run(&grpcurl, &args)
    };
    let search = (
        "eywa.v1.Retrieval/Search",
        r#"{"query": "invoice rounding"}"#,
    );

    // Health needs no token; everything else does.
    let health = call(None, "grpc.health.v1.Health/Check", "{}");
    assert!(health.stdout.contains("SERVING"), "{health:?}");
    let anonymous = call(None, search.0, search.1);
    assert!(
        !anonymous.success && anonymous.stderr.contains("Unauthenticated"),
        "{anonymous:?}"
    );
    let wrong = call(Some("not-the-token-0123456789"), search.0, search.1);
    assert!(wrong.stderr.contains("Unauthenticated"), "{wrong:?}");

    // The read-only token reads, and may not migrate.
    let found = call(Some(&token(&read)), search.0, search.1).json();
    assert_eq!(found["hits"][0]["sessionId"], SESSION, "{found}");
    let migrate = |t: &str, to: &str| {
        call(
            Some(t),
            "eywa.v1.Sessions/MigrateSessions",
            &format!(r#"{{"sessions": ["{SESSION}"], "destination": "{to}"}}"#),
        )
    };
    let denied = migrate(&token(&read), "/w/billing-v2");
    assert!(denied.stderr.contains("PermissionDenied"), "{denied:?}");
    // Nor write memories, nor have the server read its files as documents.
    for (method, body) in [
        ("eywa.v1.Memory/Remember", r#"{"content": "x"}"#),
        ("eywa.v1.Memory/Forget", r#"{"id": "0123456789abcdef"}"#),
        ("eywa.v1.Memory/Consolidate", "{}"),
        (
            "eywa.v1.Documents/AddDocument",
            r#"{"paths": ["/etc/hostname.txt"]}"#,
        ),
        ("eywa.v1.Documents/FollowFolders", r#"{"paths": ["/"]}"#),
    ] {
        let denied = call(Some(&token(&read)), method, body);
        assert!(
            denied.stderr.contains("PermissionDenied"),
            "{method}: {denied:?}"
        );
    }
    let listed = call(Some(&token(&read)), "eywa.v1.Memory/ListMemories", "{}");
    assert!(listed.success, "{listed:?}");

    // The token that may write: odd targets refused, a sane one migrated, its folder named.
    for target in ["/proc/self", "/srv/x/../../y", "relative/dir", "/sys"] {
        let refused = migrate(&token(&write), target);
        assert!(
            refused.stderr.contains("InvalidArgument"),
            "{target}: {refused:?}"
        );
    }
    let moved = migrate(&token(&write), "/w/billing-v2").json();
    assert_eq!(moved["successCount"], 1, "{moved}");
    assert_eq!(moved["createdDir"], true, "{moved}");
    assert!(
        moved["targetDir"]
            .as_str()
            .unwrap()
            .ends_with("projects/-w-billing-v2"),
        "{moved}"
    );

    // No TLS, no answer.
    let plain = grpcurl::run(
        &grpcurl,
        &[
            "-plaintext",
            "-max-time",
            "5",
            "-d",
            search.1,
            &addr,
            search.0,
        ],
    );
    assert!(!plain.success, "{plain:?}");

    // The CLI on the same data dir finds the server, its certificate and its token.
    let cli = eywa(&home, &data)
        .args(["search", "invoice", "--json"])
        .output()
        .unwrap();
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    assert!(String::from_utf8_lossy(&cli.stdout).contains(SESSION));
    serve.stop();
}

/// Runs `tests/mcp/drive.py` (the official MCP SDK) on `url` with `options`, writing its
/// calls in `dir`: whether it succeeded, and the JSON it printed.
fn drive(python: &Path, url: &str, calls: &Value, options: &[&str], dir: &Path) -> (bool, Value) {
    let file = dir.join("calls.json");
    std::fs::write(&file, calls.to_string()).unwrap();
    let out = Command::new(python)
        .arg(clients::script("drive.py"))
        .args(["http", url])
        .arg(&file)
        .args(options)
        .output()
        .unwrap();
    let printed = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "drive.py {options:?} printed no JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.success(), printed)
}

#[test]
fn issue_30_remote_mcp_answers_the_official_sdk_over_http1_and_http2() {
    let Some(python) = clients::mcp_python() else {
        return;
    };
    let home = billing();
    let data_dir = tempfile::tempdir().unwrap();
    let data = data_dir.path().join("eywa");
    let serve = Serve::spawn({
        let mut cmd = eywa(&home, &data);
        cmd.args([
            "--addr",
            "127.0.0.2:0",
            "serve",
            "--allow-remote",
            "--watch-interval-ms",
            "0",
        ]);
        cmd
    });
    // The server's own address, which is not a loopback name.
    let url = format!("https://{}/mcp", serve.addr);
    let cert = data.join("tls/cert.pem");
    let cafile = cert.to_str().unwrap();
    let bearer = |file: &str| {
        let token = std::fs::read_to_string(data.join(file)).unwrap();
        format!("Authorization: Bearer {}", token.trim())
    };
    let calls = json!([
        {"tool": "eywa_search", "arguments": {"query": "invoice rounding"}},
        {"tool": "eywa_remember", "arguments": {"content": "Invoices round to cents", "type": "LTM"}},
    ]);

    // The token that may write, by HTTP/1.1 (httpx's default) and by HTTP/2.
    let write = bearer("token");
    for (option, version) in [("--http1", "HTTP/1.1"), ("--http2", "HTTP/2")] {
        let options = ["--cafile", cafile, "--header", write.as_str(), option];
        let (ok, out) = drive(&python, &url, &calls, &options, data_dir.path());
        assert!(ok, "{option}: {out}");
        assert_eq!(out["server"], "eywa", "{option}: {out}");
        let results = out["results"].as_array().unwrap();
        for result in results {
            assert_eq!(result["is_error"], false, "{option}: {out}");
        }
        let found = results[0]["text"].as_str().unwrap();
        assert!(found.contains(SESSION), "{option}: {found}");
        let remembered = results[1]["text"].as_str().unwrap();
        assert!(
            remembered.contains("Remembered `"),
            "{option}: {remembered}"
        );
        let exchanges = out["http"].as_array().unwrap();
        assert!(
            !exchanges.is_empty() && exchanges.iter().all(|x| x["version"] == version),
            "{option}: {out}"
        );
    }

    // No token: 401 asking for a bearer one; the read-only token: 403, for the tools write.
    let read = bearer("token.read");
    for (header, status) in [(None, 401), (Some(read.as_str()), 403)] {
        for option in ["--http1", "--http2"] {
            let mut options = vec!["--cafile", cafile, option];
            if let Some(header) = header {
                options.extend(["--header", header]);
            }
            let (ok, out) = drive(&python, &url, &json!([]), &options, data_dir.path());
            assert!(!ok && out.get("init_error").is_some(), "{options:?}: {out}");
            let refused = &out["http"][0];
            assert_eq!(refused["status"], status, "{options:?}: {out}");
            let challenge = refused["challenge"].as_str().unwrap_or_default();
            assert!(challenge.starts_with("Bearer "), "{options:?}: {out}");
        }
    }
    serve.stop();
}
