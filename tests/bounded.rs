//! Answers of bounded size whatever the input (issue 14): a 5 MB line is served in
//! parts and never dropped, long inputs are cut or refused without being echoed, and
//! bytes that do not decode are the caller's error.

use eywa::api::pb;
use eywa::engine::{Engine, EngineConfig, ExportFormat};
use prost::Message as _;
use tonic::Code;

use crate::support::fixture::{ClaudeHome, days_ago};
use crate::support::raw::RawCodec;
use crate::support::server::TestServer;

const BIG: &str = "b16b16b1-0000-4000-8000-000000000001";

/// One session whose first prompt is a single 5 MB line (a pasted log) with a needle in
/// its middle and multibyte characters throughout.
fn big_prompt() -> String {
    let half = "log line ü ".repeat(240_000);
    format!("{half}NEEDLE-42 {half}")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_huge_message_is_served_in_parts_and_long_inputs_are_not_echoed() {
    let home = ClaudeHome::new();
    let prompt = big_prompt();
    assert!(prompt.len() > 5_000_000);
    home.session(
        BIG,
        "/w/logs",
        days_ago(1),
        &[
            (prompt.as_str(), "The log shows one failure."),
            ("thanks", "ok"),
        ],
    );
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let expected: Vec<String> = engine
        .session(BIG)
        .unwrap()
        .messages
        .iter()
        .map(|m| m.text.clone())
        .collect();
    assert!(expected.iter().any(|t| t.len() > 5_000_000));
    let markdown = engine.export_session(BIG, ExportFormat::Markdown).unwrap();
    let server = TestServer::start(engine);
    let url = format!("http://{}", server.addr());

    runtime().block_on(async {
        let mut sessions = pb::sessions_client::SessionsClient::connect(url.clone())
            .await
            .unwrap();
        // GetSession, part by part, each under the default 1 MiB (plus framing).
        let mut texts: Vec<String> = Vec::new();
        let (mut message, mut offset, mut parts) = (0, 0, 0);
        loop {
            let part = sessions
                .get_session(pb::GetSessionRequest {
                    session: BIG.into(),
                    max_bytes: 0,
                    from_message: message,
                    from_offset: offset,
                    include_thinking: false,
                })
                .await
                .unwrap()
                .into_inner();
            parts += 1;
            assert!(
                part.encoded_len() < (1 << 20) + 4096,
                "{}",
                part.encoded_len()
            );
            assert_eq!(part.episode.is_some(), parts == 1);
            assert_eq!(part.message_count as usize, expected.len());
            for (i, m) in part.messages.iter().enumerate() {
                let index = part.first_message as usize + i;
                if index == texts.len() {
                    texts.push(String::new());
                }
                assert_eq!(
                    m.text_offset as usize,
                    texts[index].len(),
                    "message {index}"
                );
                assert_eq!(m.text_length as usize, expected[index].len());
                texts[index].push_str(&m.text);
            }
            if !part.has_more {
                break;
            }
            (message, offset) = (part.next_message, part.next_offset);
        }
        assert!(parts >= 5, "{parts} parts");
        assert_eq!(texts, expected, "the parts add up to every message, whole");

        // A cursor inside a character is refused.
        let ü = expected[0].find('ü').unwrap();
        let err = sessions
            .get_session(pb::GetSessionRequest {
                session: BIG.into(),
                from_offset: (ü + 1) as u64,
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");

        // SearchSessions with limit 1 answered 52 MB before: now the line around the match.
        let found = sessions
            .search_sessions(pb::SearchSessionsRequest {
                pattern: "NEEDLE-42".into(),
                limit: Some(1),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(found.matches.len(), 1);
        let line = &found.matches[0].r#match;
        assert!(found.encoded_len() < 10_000, "{}", found.encoded_len());
        assert!(line.contains("NEEDLE-42") && line.starts_with('…') && line.ends_with('…'));

        // ExportSession in parts, as the CLI's client reads it: the same Markdown.
        let first = sessions
            .export_session(pb::ExportSessionRequest {
                session: BIG.into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert!(first.has_more && first.content.len() <= 1 << 20);
        assert_eq!(first.total_bytes as usize, markdown.len());
        let mut remote = eywa::api::RemoteClient::connect(&server.addr())
            .await
            .unwrap();
        let whole = remote
            .export_session(BIG, ExportFormat::Markdown, false)
            .await
            .unwrap();
        assert!(whole == markdown, "the parts add up to the export");

        // A 1 MB session reference is not echoed back whole.
        let long = "7".repeat(1 << 20);
        let err = sessions
            .get_session(pb::GetSessionRequest {
                session: long.clone(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert!(err.message().len() < 600, "{} bytes", err.message().len());

        // A 1 MB query is read as its first 2,000 characters, control characters as spaces.
        let mut retrieval = pb::retrieval_client::RetrievalClient::connect(url.clone())
            .await
            .unwrap();
        let query = format!("log\u{7}failure {}", "padding ".repeat(1 << 17));
        let got = retrieval
            .get_handoffs(pb::GetHandoffsRequest {
                query: query.clone(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert!(got.tokens.len() < 300, "{} tokens", got.tokens.len());
        assert_eq!(got.tokens[..2], ["log", "failure"]);
        let searched = retrieval
            .search(pb::SearchRequest {
                query,
                mode: "lexical".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert!(searched.hits.iter().any(|h| h.session_id == BIG));
    });
}

#[test]
fn a_string_field_that_is_not_utf8_is_invalid_argument() {
    let home = ClaudeHome::new();
    home.session(BIG, "/w/logs", days_ago(1), &[("hello there", "hi")]);
    let engine = Engine::open(EngineConfig::temporary(home.root())).unwrap();
    engine.ingest().unwrap();
    let server = TestServer::start(engine);
    let url = format!("http://{}", server.addr());
    // Field 1 (a string in each of these requests), length 2, bytes that are not UTF-8.
    let bad = vec![0x0A, 0x02, 0xFF, 0xFE];
    runtime().block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(url)
            .unwrap()
            .connect()
            .await
            .unwrap();
        for path in [
            "/eywa.v1.Sessions/GetSession",
            "/eywa.v1.Sessions/SearchSessions",
            "/eywa.v1.Retrieval/GetHandoffs",
            "/eywa.v1.Retrieval/Search",
            "/eywa.v1.Graph/GetNode",
        ] {
            let mut grpc = tonic::client::Grpc::new(channel.clone());
            grpc.ready().await.unwrap();
            let err = grpc
                .unary(
                    tonic::Request::new(bad.clone()),
                    path.parse().unwrap(),
                    RawCodec,
                )
                .await
                .unwrap_err();
            assert_eq!(err.code(), Code::InvalidArgument, "{path}: {err:?}");
        }
    });
}
