//! Who wrote a session: every episode names its user and machine (set by `[team]` in
//! `config.toml`, `EYWA_USER` / `EYWA_MACHINE`, else `$USER` and the host name), shown in
//! lists, hits and the API, and usable as filters.

use eywa::engine::{Engine, EngineConfig, SearchRequest};
use eywa::model::{Attribution, Identity, SearchFilter};
use eywa::retrieve::SearchMode;
use serde_json::Value;

use crate::support::fixture::{ClaudeHome, days_ago};

const ANA: &str = "aaaa0000-0000-4000-8000-00000000000a";
const BO: &str = "bbbb0000-0000-4000-8000-00000000000b";

fn open(data: &std::path::Path, home: &ClaudeHome, user: &str, machine: &str) -> Engine {
    Engine::open(EngineConfig {
        identity: Identity::new(user, machine).unwrap(),
        ..EngineConfig::new(data, home.root())
    })
    .unwrap()
}

fn by(users: &[&str], machines: &[&str]) -> Attribution {
    Attribution {
        users: users.iter().map(|s| (*s).to_owned()).collect(),
        machines: machines.iter().map(|s| (*s).to_owned()).collect(),
    }
}

/// Sessions ingested by two identities into one store keep each their own; lists and
/// searches filter on them, names compared without regard to case.
#[test]
fn each_session_keeps_who_ingested_it_and_filters_find_it() {
    let home = ClaudeHome::new();
    let data = tempfile::tempdir().unwrap();
    home.session(
        ANA,
        "/w/shop",
        days_ago(2),
        &[("Fix the checkout totals", "Fixed the rounding.")],
    );
    open(data.path(), &home, "ana", "laptop").ingest().unwrap();
    home.session(
        BO,
        "/w/shop",
        days_ago(1),
        &[("Speed up the checkout page", "Cached the totals.")],
    );
    let engine = open(data.path(), &home, "bo", "desk");
    engine.ingest().unwrap();

    let order = eywa::engine::SessionOrder::Recent;
    let all = engine.list_sessions(None, 50, 0).unwrap();
    let who: Vec<(&str, &str, &str)> = all
        .sessions
        .iter()
        .map(|s| (&s.session_id[..4], s.user.as_str(), s.machine.as_str()))
        .collect();
    assert_eq!(who, [("bbbb", "bo", "desk"), ("aaaa", "ana", "laptop")]);
    let ids = |authors: Attribution, workspace: Option<&str>| -> (Vec<String>, u64) {
        let page = engine
            .list_sessions_of(workspace, &authors, 50, 0, order)
            .unwrap();
        let ids = page
            .sessions
            .iter()
            .map(|s| s.session_id[..4].to_owned())
            .collect();
        (ids, page.total)
    };
    assert_eq!(ids(by(&["ANA"], &[]), None), (vec!["aaaa".to_owned()], 1));
    assert_eq!(ids(by(&[], &["Desk"]), None), (vec!["bbbb".to_owned()], 1));
    assert_eq!(ids(by(&["ana", "bo"], &["laptop"]), Some("/w/shop")).1, 1);
    assert_eq!(ids(by(&["cy"], &[]), None), (vec![], 0));
    // A workspace with sessions, none of them by the user asked for: an empty page, not
    // "no such workspace".
    assert_eq!(ids(by(&["cy"], &[]), Some("/w/shop")), (vec![], 0));
    let by_depth = engine
        .list_sessions_of(
            None,
            &by(&["bo"], &[]),
            50,
            0,
            eywa::engine::SessionOrder::Messages,
        )
        .unwrap();
    assert_eq!(by_depth.total, 1);

    // `get`: each handoff says whose it is, and the filter keeps only theirs.
    let got = |authors: Attribution| -> Vec<(String, String, String)> {
        let options = eywa::retrieve::GetOptions {
            authors,
            ..Default::default()
        };
        let outcome = engine.get_handoffs("checkout", &options).unwrap();
        outcome
            .hits
            .iter()
            .map(|h| {
                let h = &h.handoff;
                (
                    h.session_id[..4].to_owned(),
                    h.user.clone(),
                    h.machine.clone(),
                )
            })
            .collect()
    };
    assert_eq!(got(by(&[], &[])).len(), 2);
    assert_eq!(
        got(by(&["ANA"], &[])),
        [("aaaa".to_owned(), "ana".to_owned(), "laptop".to_owned())]
    );
    assert!(got(by(&["ana"], &["desk"])).is_empty());

    // What touched a project: the newest of those kept, even when another's is newer.
    let touched = |authors: Attribution, limit: usize| -> Vec<String> {
        engine
            .what_touched_by("project:shop", &Default::default(), &authors, limit)
            .unwrap()
            .iter()
            .map(|t| t.episode.episode().unwrap().session_id[..4].to_owned())
            .collect()
    };
    assert_eq!(touched(by(&[], &[]), 10), ["bbbb", "aaaa"]);
    assert_eq!(touched(by(&["Ana"], &[]), 1), ["aaaa"]);
    assert!(touched(by(&[], &["tower"]), 10).is_empty());

    let search = |authors: Attribution| {
        let filter = SearchFilter {
            users: authors.users,
            machines: authors.machines,
            ..SearchFilter::default()
        };
        engine
            .search(&SearchRequest {
                query: "checkout totals".into(),
                mode: SearchMode::Lexical,
                filter,
                ..SearchRequest::default()
            })
            .unwrap()
            .hits
    };
    let every = search(by(&[], &[]));
    assert_eq!(every.len(), 2);
    assert!(
        every
            .iter()
            .any(|h| (h.user.as_str(), h.machine.as_str()) == ("ana", "laptop"))
    );
    let bo = search(by(&["BO"], &[]));
    assert_eq!(bo.len(), 1);
    assert_eq!(
        (
            bo[0].session_id.as_str(),
            bo[0].user.as_str(),
            bo[0].machine.as_str()
        ),
        (BO, "bo", "desk")
    );
    assert!(search(by(&[], &["nowhere"])).is_empty());
}

/// The CLI attributes to `EYWA_USER` / `EYWA_MACHINE`, else `[team]` in `config.toml`,
/// else the login and host name; `--user` and `--machine` filter `sessions list` and
/// `search`, locally and through `serve`; a bad name is refused with the reason.
#[test]
fn the_cli_attributes_sessions_shows_and_filters_them() {
    let home = ClaudeHome::new();
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("eywa");
    home.session(
        ANA,
        "/w/shop",
        days_ago(2),
        &[("Fix the checkout totals", "Fixed the rounding.")],
    );
    let eywa = || {
        let mut cmd = crate::support::eywa_command(&dir, home.root());
        cmd.env_remove("EYWA_USER").env_remove("EYWA_MACHINE");
        cmd
    };
    let json = |cmd: &mut std::process::Command| -> Value {
        serde_json::from_slice(&crate::support::succeed(cmd).stdout).unwrap()
    };

    // Unset: the login name and the host name.
    let shown = json(eywa().args(["config", "show", "--json"]));
    assert_eq!(shown["settings"]["team.machine"]["source"], "default");
    assert_eq!(
        shown["settings"]["team.machine"]["value"],
        eywa::host::host_name().unwrap().as_str()
    );

    // A bad name says which and why.
    let out = eywa()
        .env("EYWA_USER", "ana/ops")
        .args(["ingest"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("EYWA_USER") && err.contains("'/'"), "{err}");

    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[team]\nuser = \"cy\"\nmachine = \"build-01\"\n",
    )
    .unwrap();
    let shown = json(
        eywa()
            .env("EYWA_MACHINE", "laptop")
            .args(["config", "show", "--json"]),
    );
    assert_eq!(
        shown["settings"]["team.user"],
        serde_json::json!({"value": "cy", "source": "file"})
    );
    assert_eq!(
        shown["settings"]["team.machine"],
        serde_json::json!({"value": "laptop", "source": "env"})
    );
    json(
        eywa()
            .env("EYWA_MACHINE", "laptop")
            .args(["ingest", "--json"]),
    );

    let listed = json(eywa().args(["sessions", "list", "--json"]));
    assert_eq!(listed["sessions"][0]["user"], "cy");
    assert_eq!(listed["sessions"][0]["machine"], "laptop");
    let shown = json(eywa().args(["sessions", "show", ANA, "--json"]));
    assert_eq!(
        (shown["user"].as_str(), shown["machine"].as_str()),
        (Some("cy"), Some("laptop"))
    );
    let found = json(eywa().args([
        "search", "checkout", "--mode", "lexical", "--user", "CY", "--json",
    ]));
    assert_eq!(found["hits"][0]["user"], "cy");
    assert_eq!(found["hits"][0]["machine"], "laptop");
    let none = json(eywa().args([
        "search",
        "checkout",
        "--mode",
        "lexical",
        "--machine",
        "desk",
        "--json",
    ]));
    assert_eq!(none["hits"], serde_json::json!([]));
    let none = json(eywa().args(["sessions", "list", "--user", "ana", "--json"]));
    assert_eq!(none["total"], 0);
    for args in [
        ["sessions", "list", "--user", " "],
        ["search", "x", "--machine", ""],
    ] {
        let out = eywa().args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("name is empty"),
            "{args:?}"
        );
    }
    // `get` answers a fresh process from the index files: they carry the author too.
    let got = json(eywa().args(["get", "checkout", "--user", "cy", "--json"]));
    assert_eq!(got["handoffs"][0]["user"], "cy");
    assert_eq!(got["handoffs"][0]["machine"], "laptop");
    let none = json(eywa().args(["get", "checkout", "--machine", "desk", "--json"]));
    assert_eq!(none["handoffs"], serde_json::json!([]));

    // The human list names authors once a page holds more than one.
    let text = |cmd: &mut std::process::Command| {
        String::from_utf8(crate::support::succeed(cmd).stdout).unwrap()
    };
    let alone = text(eywa().args(["sessions", "list"]));
    assert!(!alone.contains(" · by "), "{alone}");
    home.session(
        BO,
        "/w/shop",
        days_ago(1),
        &[("Speed up the checkout page", "Cached.")],
    );
    json(
        eywa()
            .env("EYWA_USER", "dee")
            .env("EYWA_MACHINE", "desk")
            .args(["ingest", "--json"]),
    );
    let mixed = text(eywa().args(["sessions", "list"]));
    assert!(
        mixed.contains(" · by dee@desk") && mixed.contains(" · by cy@laptop"),
        "{mixed}"
    );
    let filtered = text(eywa().args(["sessions", "list", "--user", "dee"]));
    assert!(
        !filtered.contains(" · by ") && filtered.contains("bbbb0000"),
        "{filtered}"
    );

    // A `[team]` key eywa does not know is refused, not ignored.
    std::fs::write(
        dir.join("config.toml"),
        "[team]\nnats = \"nats://127.0.0.1:4222\"\n",
    )
    .unwrap();
    let out = eywa().args(["config", "show"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nats"));
    std::fs::remove_file(dir.join("config.toml")).unwrap();

    // The same answers through `serve` (the filters and fields cross gRPC).
    let mut serve = eywa();
    serve.args(["serve", "--addr", "127.0.0.1:0"]);
    let server = crate::support::serve::Serve::spawn(serve);
    let remote = || {
        let mut cmd = eywa();
        cmd.env("EYWA_ADDR", &server.addr);
        cmd
    };
    let listed = json(remote().args(["sessions", "list", "--machine", "LAPTOP", "--json"]));
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["sessions"][0]["user"], "cy");
    let none = json(remote().args(["sessions", "list", "--user", "ana", "--json"]));
    assert_eq!(none["total"], 0);
    let found = json(remote().args([
        "search", "checkout", "--mode", "lexical", "--user", "cy", "--json",
    ]));
    assert_eq!(found["hits"][0]["machine"], "laptop");
    let none = json(remote().args([
        "search", "checkout", "--mode", "lexical", "--user", "ana", "--json",
    ]));
    assert_eq!(none["hits"], serde_json::json!([]));
    let got = json(remote().args(["get", "checkout", "--user", "CY", "--json"]));
    assert_eq!(got["handoffs"][0]["machine"], "laptop");
    let none = json(remote().args(["get", "checkout", "--user", "ana", "--json"]));
    assert_eq!(none["handoffs"], serde_json::json!([]));
    let touched =
        json(remote().args(["graph", "touched", "project:shop", "--user", "cy", "--json"]));
    assert_eq!(touched["touches"][0]["episode"]["episode"]["user"], "cy");
    let desk = json(remote().args([
        "graph",
        "touched",
        "project:shop",
        "--machine",
        "desk",
        "--json",
    ]));
    assert_eq!(desk["touches"].as_array().unwrap().len(), 1);
    assert_eq!(desk["touches"][0]["episode"]["episode"]["user"], "dee");
    let none = json(remote().args([
        "graph",
        "touched",
        "project:shop",
        "--machine",
        "tower",
        "--json",
    ]));
    assert_eq!(none["touches"], serde_json::json!([]));
    server.stop();
}
