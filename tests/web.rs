//! The web view through the real server: every page from a fixture store, bad input,
//! escaping, the security headers and the `Host` allowlist.

use std::sync::Arc;

use eywa::engine::{Engine, EngineConfig};
use eywa::model::{Clock, Timestamp};
use eywa::web::{CONTENT_SECURITY_POLICY, MESSAGES_PER_PAGE, ROUTES};

use crate::support::fixture::{ClaudeHome, days_ago};
use crate::support::http::{self, Reply, csrf};
use crate::support::server::TestServer;

const CART: &str = "5e110001-0000-4000-8000-000000000001";
const BLOG: &str = "5e110002-0000-4000-8000-000000000002";
const LONG: &str = "5e110003-0000-4000-8000-000000000003";
const MEMORY: &str = "Totals round half to even in the cart";

/// Three sessions in two projects, one with a prompt that is markup, one long enough to
/// take two pages; served with the web view on a clock fixed at noon today.
fn served() -> (ClaudeHome, TestServer) {
    let home = ClaudeHome::new();
    home.session(
        CART,
        "/w/shop",
        days_ago(3),
        &[(
            "<script>alert(1)</script> fix the cart total",
            "Fixed the rounding <img src=x onerror=alert(2)> in `cart.rs`.",
        )],
    );
    let blog = home.session(
        BLOG,
        "/w/blog",
        days_ago(5),
        &[("Write the release post", "Drafted it.")],
    );
    // A line that is not JSON: the ingest skips it, and /stats lists the file.
    crate::support::fixture::append(&blog, &["{not json".to_owned()]);
    let many: Vec<(String, String)> = (0..MESSAGES_PER_PAGE)
        .map(|i| {
            (
                format!("Step {i} of the migration"),
                format!("Did step {i}."),
            )
        })
        .collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(p, a)| (p.as_str(), a.as_str())).collect();
    home.session(LONG, "/w/shop", days_ago(2), &many);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    engine
        .remember(eywa::memory::NewMemory {
            content: MEMORY.to_owned(),
            memory_type: eywa::model::MemoryType::Ltm,
            importance: 0.7,
            project: Some("shop".to_owned()),
            session: Some(CART.to_owned()),
            tags: vec!["cart".to_owned()],
            about: Vec::new(),
            origin: None,
        })
        .unwrap();
    // A document read twice: the second time with a changed line.
    let notes = home.root().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let doc = notes.join("cart.md");
    std::fs::write(
        &doc,
        "# Cart rules\n\nTotals round half to even.\nTaxes apply last.\n",
    )
    .unwrap();
    engine
        .add_documents(std::slice::from_ref(&doc), Some("shop"))
        .unwrap();
    std::fs::write(
        &doc,
        "# Cart rules\n\nTotals round half up.\nTaxes apply last.\n",
    )
    .unwrap();
    engine.add_documents(&[doc], Some("shop")).unwrap();
    let clock = Clock::manual(Timestamp(days_ago(0).timestamp_millis()));
    let server = TestServer::start_web(Arc::new(engine), clock, &["eywa.internal"]);
    (home, server)
}

/// The script tag every page has: the view's own file, nothing inline.
const SCRIPT_TAG: &str = r#"<script src="/assets/eywa.js" defer></script>"#;

/// The header's way out, on the pages of a browser signed in with a token.
const SIGN_OUT: &str = r#"<form class="signout" method="post" action="/logout">"#;

/// Asserts an answer is an HTML page with `status` and the headers every answer carries.
fn page(reply: &Reply, status: u16) {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert_eq!(
        reply.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(
        reply.header("content-security-policy"),
        Some(CONTENT_SECURITY_POLICY)
    );
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(
        reply.header("cross-origin-resource-policy"),
        Some("same-origin")
    );
    assert_eq!(reply.header("cache-control"), Some("no-store"));
    assert!(reply.body.starts_with("<!DOCTYPE html>"), "{}", reply.body);
}

#[test]
fn every_page_shows_what_the_store_holds() {
    let (_home, server) = served();
    let home = http::get(server.addr, "/");
    page(&home, 200);
    assert!(
        !home.body.contains(SIGN_OUT),
        "no tokens, nothing to sign out of"
    );
    assert!(
        home.body.contains("2 projects, 3 sessions"),
        "{}",
        home.body
    );
    // Most recently active first: shop (2 days ago) before blog (5).
    let shop = home
        .body
        .find(r#"href="/projects/shop""#)
        .expect("shop listed");
    let blog = home
        .body
        .find(r#"href="/projects/blog""#)
        .expect("blog listed");
    assert!(shop < blog, "{}", home.body);
    assert!(home.body.contains("/w/shop"));

    let project = http::get(server.addr, "/projects/shop");
    page(&project, 200);
    assert!(project.body.contains("2 sessions"), "{}", project.body);
    let long = project.body.find(&format!("/sessions/{LONG}")).unwrap();
    let cart = project.body.find(&format!("/sessions/{CART}")).unwrap();
    assert!(long < cart, "newest first: {}", project.body);
    assert!(!project.body.contains(BLOG));
    // A session's row: its age on the page's clock, messages, its handoff's bullets.
    assert!(project.body.contains("1 day ago"), "{}", project.body);
    assert!(project.body.contains("2 days ago"), "{}", project.body);
    assert!(project.body.contains("400 messages"), "{}", project.body);
    assert!(project.body.contains("2 messages"), "{}", project.body);
    assert!(project.body.contains("Asked:"), "{}", project.body);

    // By its 8-character short id, as listings show it.
    let session = http::get(server.addr, &format!("/sessions/{}", &CART[..8]));
    page(&session, 200);
    assert!(session.body.contains("Handoff"), "{}", session.body);
    assert!(session.body.contains("fix the cart total"));
    assert!(session.body.contains(r#"href="/projects/shop""#));
    assert!(session.body.contains(&format!("claude --resume {CART}")));
    // The tool call is there, folded.
    assert!(
        session.body.contains(r#"<details class="tool">"#),
        "{}",
        session.body
    );

    // Saved as Markdown, as `eywa sessions export` writes it.
    let exported = http::get(server.addr, &format!("/sessions/{}/markdown", &CART[..8]));
    assert_eq!(exported.status, 200, "{}", exported.body);
    assert_eq!(
        exported.header("content-type"),
        Some("text/markdown; charset=utf-8")
    );
    assert_eq!(
        exported.header("content-disposition"),
        Some(format!(r#"attachment; filename="{CART}.md""#).as_str())
    );
    assert!(
        exported.body.contains("fix the cart total"),
        "{}",
        exported.body
    );
    assert!(
        session
            .body
            .contains(&format!(r#"href="/sessions/{CART}/markdown""#))
    );
    assert!(session.body.contains(r#"<button class="copy""#));
    let missing = http::get(server.addr, "/sessions/ffffffff/markdown");
    page(&missing, 404);

    let js = http::get(server.addr, "/assets/eywa.js");
    assert_eq!(js.status, 200);
    assert_eq!(
        js.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert!(js.body.contains("metaKey"));

    let css = http::get(server.addr, "/assets/eywa.css");
    assert_eq!(css.status, 200);
    assert_eq!(css.header("content-type"), Some("text/css; charset=utf-8"));
    assert!(css.body.contains("prefers-color-scheme: dark"));
    for icon in ["/favicon.ico", "/favicon.svg"] {
        let reply = http::get(server.addr, icon);
        assert_eq!(reply.status, 200, "{icon}");
        assert_eq!(reply.header("content-type"), Some("image/svg+xml"));
        assert!(reply.body.starts_with("<svg"));
    }
}

#[test]
fn transcript_text_is_shown_as_text_never_as_markup() {
    let (_home, server) = served();
    for path in [
        format!("/sessions/{CART}"),
        "/projects/shop".to_owned(),
        "/".to_owned(),
    ] {
        let reply = http::get(server.addr, &path);
        page(&reply, 200);
        // The one script is the view's own file.
        assert_eq!(reply.body.matches("<script").count(), 1, "{path}");
        assert!(reply.body.contains(SCRIPT_TAG), "{path}: {}", reply.body);
        assert!(!reply.body.contains("<img"), "{path}: {}", reply.body);
    }
    let session = http::get(server.addr, &format!("/sessions/{CART}"));
    assert!(
        session
            .body
            .contains("&lt;script&gt;alert(1)&lt;/script&gt; fix the cart total"),
        "{}",
        session.body
    );
    assert!(session.body.contains("&lt;img src=x onerror=alert(2)&gt;"));
}

#[test]
fn bad_input_gets_a_page_saying_why_never_a_500() {
    let (_home, server) = served();
    for (path, status, why) in [
        ("/sessions/ab", 400, "too short"),
        ("/sessions/ffffffff", 404, "ffffffff"),
        ("/projects/shop?page=abc", 400, "page must be a number"),
        ("/projects/shop?page=0", 400, "page must be a number"),
        ("/projects/shop?page=-1", 400, "page must be a number"),
        ("/projects/shop?page=2", 404, "no page 2"),
        ("/projects/nowhere", 404, "nowhere"),
        ("/sessions/5e110003?page=3", 404, "no page 3"),
        ("/no/such/page", 404, "no page here"),
        ("/search?q=cart&since=notadate", 400, "notadate"),
        (
            "/search?q=cart&mode=fuzzy",
            400,
            "lexical, semantic or hybrid",
        ),
        ("/search?q=cart&type=nope", 400, "unknown content type"),
        ("/search?q=cart&limit=0", 400, "limit must be"),
        ("/search?q=cart&limit=x", 400, "limit must be"),
        // No model in this store: semantic search cannot run, and says so.
        ("/search?q=cart&mode=semantic", 409, "model"),
        ("/nodes/project:shop?depth=9", 400, "depth must be 1 to 3"),
        ("/nodes/project:shop?valid=notadate", 400, "notadate"),
        ("/nodes/project:shop?recorded=yesterday", 400, "yesterday"),
        ("/nodes/project:nowhere", 404, "nowhere"),
        ("/nodes/bogus", 400, "neither a node id"),
        ("/context?project=shop&cwd=/w/shop", 400, "not both"),
        ("/context?project=shop&tokens=0", 400, "tokens must be"),
    ] {
        let reply = http::get(server.addr, path);
        page(&reply, status);
        assert!(reply.body.contains(why), "{path}: {}", reply.body);
    }
}

#[test]
fn a_long_transcript_is_served_a_page_at_a_time() {
    let (_home, server) = served();
    // 200 exchanges: 400 messages, on two pages.
    let first = http::get(server.addr, &format!("/sessions/{LONG}"));
    page(&first, 200);
    assert_eq!(first.body.matches("<article ").count(), MESSAGES_PER_PAGE);
    assert!(first.body.contains("Step 0 of the migration"));
    assert!(!first.body.contains("Step 100 of the migration"));
    assert!(
        first
            .body
            .contains(&format!(r#"rel="next" href="/sessions/{LONG}?page=2""#)),
        "{}",
        first.body
    );
    // A message's page found by its uuid, as evidence links ask for it.
    let at = http::get(server.addr, &format!("/sessions/{LONG}?at={LONG}-u150"));
    page(&at, 200);
    assert!(at.body.contains(&format!(r#"id="m-{LONG}-u150""#)));
    assert!(at.body.contains("Page 2 of 2"), "{}", at.body);
    let second = http::get(server.addr, &format!("/sessions/{LONG}?page=2"));
    page(&second, 200);
    assert_eq!(second.body.matches("<article ").count(), MESSAGES_PER_PAGE);
    assert!(second.body.contains("Step 199 of the migration"));
    assert!(!second.body.contains(r#"rel="next""#));
    assert!(second.body.contains(r#"rel="prev""#));
}

#[test]
fn only_the_names_this_machine_is_reached_by_are_answered() {
    let (_home, server) = served();
    let port = server.addr.port();
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "localhost".to_owned(),
        format!("[::1]:{port}"),
        format!("eywa.internal:{port}"),
        "EYWA.internal".to_owned(),
    ] {
        let reply = http::request(server.addr, "GET", "/", &host);
        page(&reply, 200);
        assert!(reply.body.contains("3 sessions"), "{host}");
    }
    // A page whose name was made to resolve here (DNS rebinding), or a look-alike.
    for host in [
        format!("evil.example:{port}"),
        "eywa.internal.evil.example".to_owned(),
        "localhost.evil.example".to_owned(),
        "0.0.0.0".to_owned(),
    ] {
        let reply = http::request(server.addr, "GET", &format!("/sessions/{CART}"), &host);
        page(&reply, 421);
        assert!(
            !reply.body.contains("fix the cart"),
            "{host}: {}",
            reply.body
        );
        assert!(reply.body.contains("--allow-host"), "{host}");
    }
}

#[test]
fn every_route_reads_or_writes_as_its_table_says() {
    use eywa::web::Effect::{Read, SignIn, Write};
    // The table of routes, pinned.
    assert_eq!(
        ROUTES,
        [
            ("/", Read),
            ("/projects/{name}", Read),
            ("/sessions/{reference}", Read),
            ("/sessions/{reference}/markdown", Read),
            ("/search", Read),
            ("/nodes/{*reference}", Read),
            ("/context", Read),
            ("/stats", Read),
            ("/events", Read),
            ("/memories", Read),
            ("/memories/{id}", Read),
            ("/documents", Read),
            ("/documents/{id}", Read),
            ("/assets/eywa.css", Read),
            ("/assets/eywa.js", Read),
            ("/favicon.svg", Read),
            ("/favicon.ico", Read),
            ("/memories/{id}/update", Write),
            ("/memories/{id}/forget", Write),
            ("/memories", Write),
            ("/documents", Write),
            ("/login", SignIn),
            ("/logout", SignIn),
        ]
    );
    let (_home, server) = served();
    let host = server.addr.to_string();
    let id = memory_id(&server);
    let document = document_id(&server);
    let writes: Vec<&str> = ROUTES
        .iter()
        .filter(|(_, e)| *e == Write)
        .map(|(r, _)| *r)
        .collect();
    for (route, effect) in ROUTES {
        let path = route
            .replace("{name}", "shop")
            .replace("{reference}", &CART[..8])
            .replace("{*reference}", "project:shop")
            .replace("/documents/{id}", &format!("/documents/{document}"))
            .replace("{id}", &id);
        match effect {
            Read => {
                // The event stream never ends by itself: `serving.rs` reads it.
                if path != "/events" {
                    assert_eq!(http::get(server.addr, &path).status, 200, "{path}");
                }
                for method in ["POST", "PUT", "DELETE", "PATCH"] {
                    if method == "POST" && writes.contains(&route) {
                        continue;
                    }
                    let reply = http::request(server.addr, method, &path, &host);
                    assert_eq!(reply.status, 405, "{method} {path}");
                }
            }
            Write => {
                if !ROUTES.contains(&(route, Read)) {
                    assert_eq!(http::get(server.addr, &path).status, 405, "GET {path}");
                }
                // A form without this server's token is refused before it writes.
                let forged = http::post_form(
                    server.addr,
                    &path,
                    &[
                        ("csrf", "0123"),
                        ("content", "forged"),
                        ("reason", "forged"),
                    ],
                );
                page(&forged, 403);
                assert!(forged.body.contains("reload the page"), "{}", forged.body);
            }
            // A server without tokens has nothing to sign in to: back where asked.
            SignIn => {
                let reply = if route == "/login" {
                    http::get(server.addr, "/login?next=%2Fstats")
                } else {
                    http::post_form(server.addr, &path, &[])
                };
                assert_eq!(reply.status, 303, "{path}");
                let to = if route == "/login" {
                    "/stats"
                } else {
                    "/login"
                };
                assert_eq!(reply.header("location"), Some(to), "{path}");
            }
        }
    }
    // Nothing was written by the forged forms.
    let memory = http::get(server.addr, &format!("/memories/{id}"));
    assert!(!memory.body.contains("forged"), "{}", memory.body);
    assert!(memory.body.contains("v1 remembered"), "{}", memory.body);
}

/// The fixture memory's id, from its listing.
fn memory_id(server: &TestServer) -> String {
    let list = http::get(server.addr, "/memories");
    list.body
        .split(r#"href="/memories/"#)
        .nth(1)
        .and_then(|h| h.split('"').next())
        .expect("the memory is listed")
        .to_owned()
}

/// The fixture document's id, from its listing.
fn document_id(server: &TestServer) -> String {
    let list = http::get(server.addr, "/documents");
    list.body
        .split(r#"href="/documents/"#)
        .nth(1)
        .and_then(|h| h.split('"').next())
        .expect("the document is listed")
        .to_owned()
}

#[test]
fn memories_are_listed_recalled_remembered_updated_and_forgotten() {
    let (_home, server) = served();
    let list = http::get(server.addr, "/memories");
    page(&list, 200);
    assert!(list.body.contains(MEMORY), "{}", list.body);
    assert!(list.body.contains("1 memory"), "{}", list.body);
    // The session it came from, linked.
    assert!(list.body.contains(&format!(r#"href="/sessions/{CART}""#)));
    let recalled = http::get(server.addr, "/memories?q=rounding+cart+totals");
    page(&recalled, 200);
    assert!(recalled.body.contains(MEMORY), "{}", recalled.body);
    assert!(recalled.body.contains("recall score"));
    let bad = http::get(server.addr, "/memories?type=LONG");
    page(&bad, 400);

    let token = csrf(&list.body);
    let made = http::post_form(
        server.addr,
        "/memories",
        &[
            ("csrf", &token),
            ("content", "Invoices close on the <b>last</b> day"),
            ("type", "PROCEDURAL"),
            ("importance", "0.9"),
            ("project", "shop"),
            ("tags", "billing, dates"),
        ],
    );
    assert_eq!(made.status, 303, "{}", made.body);
    let at = made
        .header("location")
        .expect("to the memory's page")
        .to_owned();
    assert!(at.starts_with("/memories/"), "{at}");
    let new = http::get(server.addr, &at);
    page(&new, 200);
    assert!(
        new.body
            .contains("Invoices close on the &lt;b&gt;last&lt;/b&gt; day")
    );
    assert!(new.body.contains("PROCEDURAL"));
    assert!(
        new.body.contains(r#"<span class="tag">billing</span>"#),
        "{}",
        new.body
    );

    let id = at.trim_start_matches("/memories/");
    let updated = http::post_form(
        server.addr,
        &format!("/memories/{id}/update"),
        &[
            ("csrf", &token),
            ("content", "Invoices close on the first day"),
            ("reason", "the ledger moved"),
        ],
    );
    assert_eq!(updated.status, 303, "{}", updated.body);
    let history = http::get(server.addr, &at);
    assert!(history.body.contains("v2 updated"), "{}", history.body);
    assert!(history.body.contains("the ledger moved"));
    assert!(
        history
            .body
            .contains("<del>- Invoices close on the &lt;b&gt;last&lt;/b&gt; day"),
        "{}",
        history.body
    );
    assert!(
        history
            .body
            .contains("<ins>+ Invoices close on the first day"),
        "{}",
        history.body
    );

    let bad = http::post_form(
        server.addr,
        &format!("/memories/{id}/update"),
        &[("csrf", &token), ("importance", "7")],
    );
    page(&bad, 400);
    assert!(bad.body.contains("importance must be"), "{}", bad.body);

    let forgotten = http::post_form(
        server.addr,
        &format!("/memories/{id}/forget"),
        &[("csrf", &token), ("reason", "wrong")],
    );
    assert_eq!(forgotten.status, 303);
    let gone = http::get(server.addr, &at);
    assert!(gone.body.contains("v3 forgotten"), "{}", gone.body);
    assert!(
        !gone.body.contains("/forget\""),
        "no forms for a forgotten memory"
    );
    let list = http::get(server.addr, "/memories");
    assert!(!list.body.contains("Invoices close"), "{}", list.body);
    let missing = http::get(server.addr, "/memories/ffffffffffffffff");
    page(&missing, 404);
}

#[test]
fn a_grpc_call_to_an_unknown_method_is_still_unimplemented() {
    // The web view's 404 page answers browsers; a gRPC client still hears UNIMPLEMENTED.
    let (_home, server) = served();
    let url = format!("http://{}", server.addr);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(url)
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut grpc = tonic::client::Grpc::new(channel);
        grpc.ready().await.unwrap();
        let err = grpc
            .unary(
                tonic::Request::new(Vec::new()),
                "/eywa.v1.Nothing/Here".parse().unwrap(),
                crate::support::raw::RawCodec,
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unimplemented, "{err:?}");
    });
}

#[test]
fn search_shows_each_hit_with_the_signals_behind_its_rank() {
    let (_home, server) = served();
    let form = http::get(server.addr, "/search");
    page(&form, 200);
    assert!(
        form.body.contains(r#"<form class="search""#),
        "{}",
        form.body
    );
    assert!(!form.body.contains("Nothing found"));

    let found = http::get(server.addr, "/search?q=cart+total&mode=lexical");
    page(&found, 200);
    let first = found.body.find(r#"<li class="hit">"#).expect("a hit");
    let cart = found
        .body
        .find(&format!(r#"href="/sessions/{CART}""#))
        .unwrap();
    assert!(first < cart, "{}", found.body);
    assert!(found.body.contains("Why this rank"));
    assert!(found.body.contains("Lexical (BM25)"));
    assert!(found.body.contains("#1 ("), "{}", found.body);
    assert!(found.body.contains(r#"href="/projects/shop""#));
    // The mode asked is the one selected in the form again.
    assert!(
        found.body.contains(r#"<option value="lexical" selected>"#),
        "{}",
        found.body
    );

    // Hybrid without the model: lexical results, and a notice saying why.
    let hybrid = http::get(server.addr, "/search?q=cart+total");
    page(&hybrid, 200);
    assert!(hybrid.body.contains("lexical results"), "{}", hybrid.body);
    assert!(hybrid.body.contains(CART));

    // Filters: a project with no match, a type that holds none.
    let other = http::get(
        server.addr,
        "/search?q=cart+total&mode=lexical&project=blog",
    );
    page(&other, 200);
    assert!(other.body.contains("Nothing found"), "{}", other.body);
    assert!(!other.body.contains(CART));

    // What was typed is text, in the title, the form and the notice alike.
    let typed = http::get(server.addr, "/search?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E");
    page(&typed, 200);
    assert_eq!(typed.body.matches("<script").count(), 1, "{}", typed.body);
    assert!(typed.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

#[test]
fn a_node_page_shows_what_touched_it_its_neighbours_and_the_graph_as_it_was() {
    let (_home, server) = served();
    let project = http::get(server.addr, "/nodes/project:shop");
    page(&project, 200);
    assert!(project.body.contains("What touched it"), "{}", project.body);
    for session in [CART, LONG] {
        assert!(
            project
                .body
                .contains(&format!(r#"href="/sessions/{session}""#)),
            "{session}: {}",
            project.body
        );
    }
    assert!(!project.body.contains(BLOG));
    assert!(project.body.contains("<code>TOUCHED</code>"));
    // The drawing: the node and its neighbours, each a link to its own page.
    let drawn = |body: &str| body.matches("<circle").count();
    // The project, its two sessions, the memory about it and the document mentioning it.
    assert_eq!(drawn(&project.body), 5, "{}", project.body);
    assert!(project.body.contains(r#"<svg class="graph""#));
    // A session among the neighbours, through its link.
    let neighbour = project
        .body
        .split(r#"<table class="list neighbors">"#)
        .nth(1)
        .and_then(|t| {
            t.split(r#"href="/nodes/"#)
                .find(|h| h.contains(r#"<span class="kind">Episode</span>"#))
        })
        .and_then(|h| h.split('"').next())
        .expect("a neighbour links to its node")
        .to_owned();
    let next = http::get(server.addr, &format!("/nodes/{neighbour}"));
    page(&next, 200);
    assert!(
        next.body.contains(r#"<span class="kind">Episode</span>"#),
        "{}",
        next.body
    );

    // Two hops reach what the sessions touched beyond the project.
    let deeper = http::get(server.addr, "/nodes/project:shop?depth=2");
    page(&deeper, 200);
    assert!(
        drawn(&deeper.body) > drawn(&project.body),
        "{}",
        deeper.body
    );
    assert!(deeper.body.contains(r#"<option value="2" selected>"#));

    // Before eywa knew anything, the project had no neighbours.
    let then = http::get(server.addr, "/nodes/project:shop?recorded=2000-01-01");
    page(&then, 200);
    assert!(
        then.body.contains("None, as of these times."),
        "{}",
        then.body
    );
    assert!(then.body.contains("as eywa knew it at 2000-01-01"));
    assert_eq!(drawn(&then.body), 1);

    // From a session's and a project's pages to the graph.
    let session = http::get(server.addr, &format!("/sessions/{CART}"));
    let node = session
        .body
        .split(r#"<a href="/nodes/"#)
        .nth(1)
        .and_then(|h| h.split('"').next())
        .expect("a session links to its node");
    let episode = http::get(server.addr, &format!("/nodes/{node}"));
    page(&episode, 200);
    assert!(episode.body.contains("fix the cart total"));
    let listed = http::get(server.addr, "/projects/shop");
    assert!(listed.body.contains(r#"href="/nodes/project:shop""#));
}

#[test]
fn another_sites_page_may_link_here_but_not_load_from_here() {
    let (_home, server) = served();
    let host = server.addr.to_string();
    let path = "/search?q=cart";
    let get =
        |headers: &[(&str, &str)]| http::request_with(server.addr, "GET", path, &host, headers);
    // A link followed from another site: the page.
    let followed = get(&[
        ("Sec-Fetch-Site", "cross-site"),
        ("Sec-Fetch-Mode", "navigate"),
    ]);
    page(&followed, 200);
    // An image or a fetch pointed here by another site's page: refused unread.
    for mode in ["no-cors", "cors"] {
        let loaded = get(&[("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", mode)]);
        page(&loaded, 403);
        assert!(!loaded.body.contains(CART), "{mode}");
    }
    // This site's own pages, and clients that send no such header (curl).
    page(
        &get(&[
            ("Sec-Fetch-Site", "same-origin"),
            ("Sec-Fetch-Mode", "cors"),
        ]),
        200,
    );
    page(&get(&[]), 200);
}

#[test]
fn a_grpc_call_naming_another_host_is_refused() {
    // DNS rebinding reaches the API as well as the pages: a call whose authority is not a
    // name this server is reached by never runs.
    let (_home, server) = served();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let call = |origin: &'static str| {
            let addr = server.addr;
            async move {
                let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
                    .unwrap()
                    .origin(origin.parse().unwrap())
                    .connect()
                    .await
                    .unwrap();
                let mut grpc = tonic::client::Grpc::new(channel);
                grpc.ready().await.unwrap();
                grpc.unary(
                    tonic::Request::new(Vec::new()),
                    "/eywa.v1.Admin/Stats".parse().unwrap(),
                    crate::support::raw::RawCodec,
                )
                .await
            }
        };
        let refused = call("http://evil.example:50051").await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
        assert!(refused.message().contains("--allow-host"), "{refused:?}");
        call("http://eywa.internal").await.unwrap();
        call("http://localhost:50051").await.unwrap();
    });
}

#[test]
fn stats_show_counts_tiers_tokens_and_what_the_last_ingest_skipped() {
    let (_home, server) = served();
    let stats = http::get(server.addr, "/stats");
    page(&stats, 200);
    let body = &stats.body;
    assert!(
        body.contains("<th>Sessions</th><td class=\"num\">3</td>"),
        "{body}"
    );
    assert!(body.contains("Tokens per day"));
    assert!(body.contains(r#"<svg class="chart""#), "{body}");
    // Per project, each a link to its page.
    let projects = body.split("Tokens per project").nth(1).unwrap();
    assert!(projects.contains(r#"href="/projects/shop""#), "{projects}");
    assert!(projects.contains(r#"href="/projects/blog""#), "{projects}");
    assert!(body.contains("No model: searches are lexical."), "{body}");
    assert!(body.contains("Cold blobs (zstd"));
    // The ingest that built the store skipped the line that is not JSON.
    let last = body.split("<h2>Last ingest</h2>").nth(1).unwrap();
    assert!(last.contains("3 of 3 session files read"), "{last}");
    assert!(last.contains(&format!("{BLOG}.jsonl")), "{last}");
}

#[test]
fn documents_show_their_versions_what_each_changed_and_their_text() {
    let (_home, server) = served();
    let list = http::get(server.addr, "/documents");
    page(&list, 200);
    assert!(list.body.contains("1 document"), "{}", list.body);
    assert!(list.body.contains("Cart rules"), "{}", list.body);
    assert!(list.body.contains("v2"), "{}", list.body);
    let id = document_id(&server);
    let latest = http::get(server.addr, &format!("/documents/{id}"));
    page(&latest, 200);
    assert!(latest.body.contains("version 2 of 2"), "{}", latest.body);
    assert!(
        latest.body.contains("<del>- Totals round half to even."),
        "{}",
        latest.body
    );
    assert!(
        latest.body.contains("<ins>+ Totals round half up."),
        "{}",
        latest.body
    );
    assert!(
        !latest.body.contains("- Taxes apply last."),
        "unchanged lines are not listed"
    );
    assert!(
        latest
            .body
            .contains(&format!(r#"href="/documents/{id}?version=1""#))
    );
    let first = http::get(server.addr, &format!("/documents/{id}?version=1"));
    page(&first, 200);
    assert!(first.body.contains("version 1 of 2"), "{}", first.body);
    assert!(first.body.contains("Totals round half to even."));
    assert!(!first.body.contains("What version"), "{}", first.body);
    for (path, status) in [
        (format!("/documents/{id}?version=x"), 400),
        (format!("/documents/{id}?version=0"), 400),
        (format!("/documents/{id}?version=9"), 404),
        ("/documents/ffffffffffffffff".to_owned(), 404),
        ("/documents?page=nope".to_owned(), 400),
    ] {
        page(&http::get(server.addr, &path), status);
    }
}

#[test]
fn a_document_is_added_from_its_page() {
    let (home, server) = served();
    let list = http::get(server.addr, "/documents");
    let token = csrf(&list.body);
    let add = |path: &str| {
        http::post_form(
            server.addr,
            "/documents",
            &[("csrf", &token), ("path", path), ("project", "blog")],
        )
    };
    // One file: to its page.
    let drafts = home.root().join("drafts");
    std::fs::create_dir_all(&drafts).unwrap();
    std::fs::write(
        drafts.join("launch.md"),
        "# Launch plan\n\nShip on Friday.\n",
    )
    .unwrap();
    let one = add(&drafts.join("launch.md").display().to_string());
    assert_eq!(one.status, 303, "{}", one.body);
    let to = one.header("location").expect("to the document").to_owned();
    assert!(to.starts_with("/documents/"), "{to}");
    let shown = http::get(server.addr, &to);
    page(&shown, 200);
    assert!(shown.body.contains("Launch plan"), "{}", shown.body);
    assert!(shown.body.contains("Ship on Friday."), "{}", shown.body);
    assert!(
        shown.body.contains(r#"href="/projects/blog""#),
        "{}",
        shown.body
    );

    // A folder with a file that cannot be read: what happened to each, the readable one
    // added.
    std::fs::write(drafts.join("notes.txt"), "Remember the changelog.").unwrap();
    std::fs::write(drafts.join("scan.pdf"), "not a pdf").unwrap();
    let folder = add(&drafts.display().to_string());
    page(&folder, 200);
    assert!(folder.body.contains("2 of 3 files read"), "{}", folder.body);
    assert!(folder.body.contains("unchanged"), "{}", folder.body);
    assert!(folder.body.contains("scan.pdf"), "{}", folder.body);
    assert!(folder.body.contains(r#"class="error""#), "{}", folder.body);
    let list = http::get(server.addr, "/documents");
    assert!(list.body.contains("3 documents"), "{}", list.body);

    // Bad input says why, and writes nothing.
    for (path, status, why) in [
        ("", 400, "give the path"),
        ("/nowhere/at/all.md", 400, "all.md"),
        (
            &*drafts.join("scan.pdf").display().to_string(),
            400,
            "scan.pdf",
        ),
    ] {
        let reply = add(path);
        page(&reply, status);
        assert!(reply.body.contains(why), "{path}: {}", reply.body);
    }
    assert!(
        http::get(server.addr, "/documents")
            .body
            .contains("3 documents")
    );
}

#[test]
fn a_server_with_tokens_signs_a_browser_in_with_a_cookie_that_reads_or_writes_by_scope() {
    const WRITE: &str = "w-0123456789abcdef0123";
    const READ: &str = "r-0123456789abcdef0123";
    let home = ClaudeHome::new();
    home.session(
        CART,
        "/w/shop",
        days_ago(3),
        &[("fix the cart total", "Fixed the rounding.")],
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let clock = Clock::manual(Timestamp(days_ago(0).timestamp_millis()));
    let server = TestServer::start_web_signed(
        Arc::new(engine),
        clock,
        eywa::server::Tokens::new(WRITE, READ),
    );
    let addr = server.addr;
    let with = |cookie: &str, path: &str| {
        http::request_with(addr, "GET", path, &addr.to_string(), &[("Cookie", cookie)])
    };

    // Without a token a page sends the browser to sign in, and to come back; the form and
    // what it loads answer; nothing of a session shows.
    let asked = http::get(addr, &format!("/sessions/{CART}?at=x"));
    assert_eq!(asked.status, 303);
    assert_eq!(
        asked.header("location"),
        Some(format!("/login?next=%2Fsessions%2F{CART}%3Fat%3Dx").as_str())
    );
    assert!(!asked.body.contains("cart total"));
    let form = http::get(addr, "/login?next=%2Fstats");
    page(&form, 200);
    assert!(
        form.body.contains(r#"type="password" name="token""#),
        "{}",
        form.body
    );
    assert!(
        form.body.contains(r#"name="next" value="/stats""#),
        "{}",
        form.body
    );
    assert_eq!(http::get(addr, "/assets/eywa.css").status, 200);

    // A wrong token, or another site's form, signs nobody in.
    let wrong = http::post_form(
        addr,
        "/login",
        &[("token", "not-this-0123456789"), ("next", "/")],
    );
    page(&wrong, 401);
    assert!(wrong.header("set-cookie").is_none());
    let forged = http::post_form_with(
        addr,
        "/login",
        &[("token", WRITE), ("next", "/")],
        &[("Sec-Fetch-Site", "cross-site")],
    );
    page(&forged, 403);
    assert!(forged.header("set-cookie").is_none());

    // The read-only token: an HttpOnly, SameSite=Strict cookie, back where it was going;
    // every page reads, and a form that writes is refused.
    let sign_in = |token: &str| {
        let reply = http::post_form(addr, "/login", &[("token", token), ("next", "/stats")]);
        assert_eq!(reply.status, 303, "{}", reply.body);
        assert_eq!(reply.header("location"), Some("/stats"));
        let set = reply.header("set-cookie").expect("a cookie").to_owned();
        for part in ["HttpOnly", "SameSite=Strict", "Path=/"] {
            assert!(set.contains(part), "{set}");
        }
        assert!(!set.contains("Secure"), "{set}: no TLS here");
        assert!(
            !set.contains(token),
            "{set}: the token is not sent as written"
        );
        set.split(';').next().unwrap().to_owned()
    };
    let read = sign_in(READ);
    let stats = with(&read, "/stats");
    page(&stats, 200);
    assert!(
        stats.body.contains(SIGN_OUT),
        "a signed-in page offers to sign out"
    );
    let session = with(&read, &format!("/sessions/{CART}"));
    page(&session, 200);
    assert!(session.body.contains("fix the cart total"));
    let list = with(&read, "/memories");
    page(&list, 200);
    let token = csrf(&list.body);
    let remember = |cookie: &str| {
        http::post_form_with(
            addr,
            "/memories",
            &[("csrf", &token), ("content", "Totals round half up")],
            &[("Cookie", cookie)],
        )
    };
    assert_eq!(remember(&read).status, 403);
    assert!(
        !with(&read, "/memories")
            .body
            .contains("Totals round half up")
    );

    // The token that may write writes.
    let write = sign_in(WRITE);
    let made = remember(&write);
    assert_eq!(made.status, 303, "{}", made.body);
    assert!(
        with(&write, "/memories")
            .body
            .contains("Totals round half up")
    );

    // The cookie opens the web view only: `/mcp` still asks for the header.
    assert_eq!(with(&write, "/mcp").status, 401);

    // Signing out forgets the cookie.
    assert!(!http::get(addr, "/login").body.contains(SIGN_OUT));
    let out = http::post_form_with(addr, "/logout", &[], &[("Cookie", &write)]);
    assert_eq!(out.status, 303);
    assert_eq!(out.header("location"), Some("/login"));
    assert!(out.header("set-cookie").unwrap().contains("Max-Age=0"));
}
