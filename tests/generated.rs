//! Generated requests (issue 30): every RPC the API's descriptors list, and every tool
//! `eywa mcp` lists, is called with inputs built from hostile values of each field's type
//! (empty, huge, control characters, paths out of the store, numbers at every bound,
//! times out of range, lists of thousands). No answer may be INTERNAL or a panic, the
//! server must stay up, and no error may quote more than 200 characters of an input or
//! run past 2,000.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use prost::Message as _;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FileDescriptorSet};
use serde_json::{Value, json};
use tonic::Code;

use crate::support::fixture::{ClaudeHome, days_ago};
use crate::support::fuzz::Rng;
use crate::support::raw::RawCodec;
use crate::support::serve::Serve;
use crate::support::stdio_mcp::Mcp;
use crate::support::{eywa_command, succeed};

/// Requests generated for each RPC, and calls for each tool.
const PER_RPC: u64 = 40;
const PER_TOOL: u64 = 30;

/// Strings a field may be given: what the API names things by, at every size, and what
/// it should refuse. Those over 200 characters are kept to check that no error quotes
/// them at length.
struct Palette {
    strings: Vec<String>,
}

impl Palette {
    fn new(session: &str, scratch: &Path) -> Palette {
        let scratch = scratch.display().to_string();
        let mut strings: Vec<String> = [
            "",
            " ",
            "\t\n",
            "x",
            "0",
            "-1",
            "abc",
            "*",
            "a:b:c",
            "\\",
            "%s%n%x",
            "STM",
            "LTM",
            "PROCEDURAL",
            "lexical",
            "semantic",
            "hybrid",
            "markdown",
            "json",
            "copy",
            "move",
            "recent",
            "messages",
            "smart",
            "full",
            "plan",
            "agents",
            "READ",
            "EDITED",
            "used",
            "user_message",
            "document",
            "memory",
            "0123456789abcdef",
            "ffffffffffffffff",
            "../../../../etc/passwd",
            "/etc/passwd",
            "/proc/self/mem",
            "/dev/zero",
            "~/x",
            "/",
            "((((((((((",
            "(a+)+$",
            ".*",
            "[",
            "project:",
            "project:vault",
            "session:",
            "file:",
            "concept:deploy",
            "doc:",
            "doc:/nowhere.md",
            "tool:Bash",
            "\u{0}\u{0}",
            "\u{1b}[31mred",
            "\u{202e}evil",
            "2026-13-45",
            "1970-01-01",
            "NaN",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        strings.extend([
            session.to_owned(),
            session[..8].to_owned(),
            format!("session:{}", &session[..8]),
            format!("{scratch}/sub"),
            scratch.clone(),
            format!("project:{}", "P".repeat(70_000)),
            "n".repeat(65_536),
            "a".repeat(70_000),
            "é".repeat(300),
            "😀".repeat(4_000),
            format!("file:{}", "/d".repeat(5_000)),
            "\u{0}x".repeat(1_000),
            "line\n".repeat(2_000),
            "`quoted` ".repeat(500),
            "w ".repeat(600_000),
        ]);
        Palette { strings }
    }

    /// A string of at most 64 bytes (for lists of thousands).
    fn short<'a>(&'a self, rng: &mut Rng) -> &'a str {
        loop {
            let s = rng.pick(&self.strings);
            if s.len() <= 64 {
                return s;
            }
        }
    }

    /// The inputs of more than 200 characters: none may come back in an error whole.
    fn long(&self) -> impl Iterator<Item = &str> {
        self.strings
            .iter()
            .filter(|s| s.chars().count() > 200)
            .map(String::as_str)
    }
}

const INTS: &[i64] = &[
    0,
    1,
    -1,
    2,
    3,
    7,
    100,
    1_000,
    65_536,
    i32::MAX as i64,
    i32::MIN as i64,
    u32::MAX as i64,
    i64::MAX,
    i64::MIN,
];

const FLOATS: &[f64] = &[
    0.5,
    -0.5,
    2.0,
    1e38,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
];

/// The API's messages by full name, and its methods: (path, input message).
struct Api {
    messages: HashMap<String, DescriptorProto>,
    methods: Vec<(String, String)>,
}

fn api() -> Api {
    let set = FileDescriptorSet::decode(eywa::api::FILE_DESCRIPTOR_SET).unwrap();
    let mut messages = HashMap::new();
    let mut methods = Vec::new();
    for file in &set.file {
        let package = file.package();
        for message in &file.message_type {
            let name = format!(".{package}.{}", message.name());
            for nested in &message.nested_type {
                messages.insert(format!("{name}.{}", nested.name()), nested.clone());
            }
            messages.insert(name, message.clone());
        }
        for service in &file.service {
            for method in &service.method {
                methods.push((
                    format!("/{package}.{}/{}", service.name(), method.name()),
                    method.input_type().to_owned(),
                ));
            }
        }
    }
    Api { messages, methods }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(out: &mut Vec<u8>, field: i32, wire: u64) {
    varint(out, ((field as u64) << 3) | wire);
}

fn delimited(out: &mut Vec<u8>, field: i32, bytes: &[u8]) {
    key(out, field, 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A message of type `name` with fields drawn from the palette, nested ones too.
fn message(api: &Api, name: &str, rng: &mut Rng, palette: &Palette, depth: u32) -> Vec<u8> {
    let mut out = Vec::new();
    if name == ".google.protobuf.Timestamp" {
        key(&mut out, 1, 0);
        varint(&mut out, *rng.pick(INTS) as u64);
        key(&mut out, 2, 0);
        varint(&mut out, *rng.pick(INTS) as u64);
        return out;
    }
    let Some(descriptor) = api.messages.get(name) else {
        panic!("no descriptor for {name}");
    };
    for field in &descriptor.field {
        if rng.below(4) == 0 {
            continue;
        }
        let count = if field.label() == Label::Repeated {
            *rng.pick(&[0, 1, 2, 3, 2_000])
        } else {
            1
        };
        for _ in 0..count {
            let n = field.number();
            match field.r#type() {
                Type::String | Type::Bytes if count > 3 => {
                    delimited(&mut out, n, palette.short(rng).as_bytes());
                }
                Type::String | Type::Bytes => {
                    delimited(&mut out, n, rng.pick(&palette.strings).as_bytes());
                }
                Type::Double => {
                    key(&mut out, n, 1);
                    out.extend(rng.pick(FLOATS).to_le_bytes());
                }
                Type::Float => {
                    key(&mut out, n, 5);
                    out.extend((*rng.pick(FLOATS) as f32).to_le_bytes());
                }
                Type::Message if depth < 3 && count <= 3 => {
                    let nested = message(api, field.type_name(), rng, palette, depth + 1);
                    delimited(&mut out, n, &nested);
                }
                Type::Message | Type::Group => {}
                _ => {
                    key(&mut out, n, 0);
                    varint(&mut out, *rng.pick(INTS) as u64);
                }
            }
        }
    }
    out
}

/// A Claude home with one session, a data dir with a document and a memory beside it, and
/// a scratch folder generated paths may name.
struct Fixture {
    home: ClaudeHome,
    data: tempfile::TempDir,
    scratch: tempfile::TempDir,
    session: String,
}

impl Fixture {
    fn new() -> Fixture {
        let home = ClaudeHome::new();
        let session = "9e4e7a7e-0000-4000-8000-000000000030".to_owned();
        home.session(
            &session,
            "/w/vault",
            days_ago(2),
            &[("Rotate the vault deploy keys", "Rotated; canary first.")],
        );
        let data = tempfile::tempdir().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let note = scratch.path().join("note.md");
        std::fs::write(&note, "# Deploys\n\nCanary first, then the rest.\n").unwrap();
        let fixture = Fixture {
            home,
            data,
            scratch,
            session,
        };
        succeed(fixture.eywa().args(["ingest"]));
        succeed(
            fixture
                .eywa()
                .args(["docs", "add", &note.display().to_string()]),
        );
        succeed(fixture.eywa().args([
            "memory",
            "add",
            "Deploys go canary first",
            "--project",
            "vault",
        ]));
        fixture
    }

    fn eywa(&self) -> std::process::Command {
        eywa_command(&self.data.path().join("eywa"), self.home.root())
    }
}

/// What a status or tool error must never be: longer than 2,000 characters, or quoting
/// more than 200 characters of an input.
fn echo_problem(message: &str, palette: &Palette) -> Option<String> {
    if message.chars().count() > eywa::error::MAX_MESSAGE {
        return Some(format!("{} characters", message.chars().count()));
    }
    palette
        .long()
        .map(|s| {
            s.chars()
                .take(eywa::error::MAX_QUOTED + 1)
                .collect::<String>()
        })
        .find(|head| message.contains(head.as_str()))
        .map(|head| {
            format!(
                "quotes {}… whole",
                head.chars().take(20).collect::<String>()
            )
        })
}

#[test]
fn issue_30_generated_requests_to_every_rpc_never_panic_or_answer_internal() {
    let fixture = Fixture::new();
    let palette = Palette::new(&fixture.session, fixture.scratch.path());
    let api = api();
    assert!(api.methods.len() >= 36, "{} methods", api.methods.len());
    let mut cmd = fixture.eywa();
    cmd.args([
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--watch-interval-ms",
        "0",
        "--no-ingest",
    ]);
    let server = Serve::spawn(cmd);
    let url = format!("http://{}", server.addr);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut rng = Rng::new(0x30_5eed);
    // Per method: how many answers of each code.
    let mut codes: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut problems = Vec::new();
    runtime.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(url)
            .unwrap()
            .connect()
            .await
            .unwrap();
        for (path, input) in &api.methods {
            // The embedder loads the model it does not have; the rest is quick.
            let count = if path.ends_with("/Embed") { 3 } else { PER_RPC };
            for _ in 0..count {
                let request = message(&api, input, &mut rng, &palette, 0);
                let mut grpc =
                    tonic::client::Grpc::new(channel.clone()).max_decoding_message_size(64 << 20);
                grpc.ready().await.unwrap();
                let answer = grpc
                    .unary(
                        tonic::Request::new(request),
                        http::uri::PathAndQuery::try_from(path.as_str()).unwrap(),
                        RawCodec,
                    )
                    .await;
                let code = match &answer {
                    Ok(_) => Code::Ok,
                    Err(status) => status.code(),
                };
                *codes
                    .entry(path.clone())
                    .or_default()
                    .entry(format!("{code:?}"))
                    .or_default() += 1;
                if let Err(status) = &answer {
                    if matches!(
                        code,
                        Code::Internal | Code::Unknown | Code::Unavailable | Code::Cancelled
                    ) {
                        problems.push(format!("{path}: {code:?}: {}", status.message()));
                    }
                    if status.message().len() > eywa::error::MAX_STATUS_BYTES {
                        problems.push(format!(
                            "{path}: a status of {} bytes",
                            status.message().len()
                        ));
                    }
                    if let Some(why) = echo_problem(status.message(), &palette) {
                        problems.push(format!("{path}: the status {why}"));
                    }
                }
            }
        }
    });
    let total: u64 = codes.values().flat_map(BTreeMap::values).sum();
    eprintln!("{total} generated requests over {} RPCs:", codes.len());
    for (path, counts) in &codes {
        eprintln!("  {path}: {counts:?}");
    }
    // The server is still up and says nothing of a panic.
    let lines = server.stop();
    let panics: Vec<&String> = lines.iter().filter(|l| l.contains("panicked")).collect();
    assert!(panics.is_empty(), "{panics:#?}");
    assert!(
        problems.is_empty(),
        "{} problems: {problems:#?}",
        problems.len()
    );
}

/// A JSON value of any kind, from the palette.
fn value(rng: &mut Rng, palette: &Palette, depth: u32) -> Value {
    match rng.below(if depth < 2 { 9 } else { 6 }) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(*rng.pick(INTS)),
        3 => json!(*rng.pick(FLOATS)),
        4 | 5 => json!(rng.pick(&palette.strings)),
        6 => Value::Array(
            (0..*rng.pick(&[0, 1, 3]))
                .map(|_| value(rng, palette, depth + 1))
                .collect(),
        ),
        7 => Value::Array(
            (0..*rng.pick(&[1, 2, 2_000]))
                .map(|_| json!(palette.short(rng)))
                .collect(),
        ),
        _ => {
            let mut object = serde_json::Map::new();
            object.insert("a".to_owned(), value(rng, palette, depth + 1));
            object.insert(palette.short(rng).to_owned(), json!(1));
            Value::Object(object)
        }
    }
}

/// Calls every tool `eywa mcp` lists with generated arguments: the problems found, how
/// many calls were made, and what it wrote to stderr.
fn drive_tools(
    eywa: std::process::Command,
    palette: &Palette,
    rng: &mut Rng,
) -> (Vec<String>, u64, String) {
    let mut mcp = Mcp::start(eywa);
    let listed = mcp.call("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap().clone();
    assert_eq!(tools.len(), 12, "{listed}");
    let mut problems = Vec::new();
    let mut calls = 0;
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        let properties: Vec<String> = tool["inputSchema"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        for _ in 0..PER_TOOL {
            let mut arguments = serde_json::Map::new();
            for property in &properties {
                if rng.below(3) != 0 {
                    arguments.insert(property.clone(), value(rng, palette, 0));
                }
            }
            if rng.below(6) == 0 {
                arguments.insert(rng.pick(&palette.strings).clone(), json!("unknown"));
            }
            let answer = mcp.call("tools/call", json!({"name": name, "arguments": arguments}));
            calls += 1;
            let result = &answer["result"];
            if result.is_null() {
                problems.push(format!("{name}: a protocol error: {}", answer["error"]));
                continue;
            }
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            if result["isError"] == true {
                if let Some(why) = echo_problem(text, palette) {
                    problems.push(format!("{name}: the tool error {why}"));
                }
                if text.contains("failed on this call") {
                    problems.push(format!("{name}: {text}"));
                }
            }
        }
    }
    // An unknown tool is the protocol's error, its name cut.
    let unknown = mcp.call(
        "tools/call",
        json!({"name": "x".repeat(100_000), "arguments": {}}),
    );
    let message = unknown["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if message.contains(&"x".repeat(201)) {
        problems.push("an unknown tool's error quotes its name whole".to_owned());
    }
    (problems, calls, mcp.stop())
}

#[test]
fn issue_30_generated_arguments_to_every_mcp_tool_never_panic_or_echo() {
    let fixture = Fixture::new();
    let palette = Palette::new(&fixture.session, fixture.scratch.path());
    let mut rng = Rng::new(0x30_7001);
    // Without a server: eywa mcp opens the store itself.
    let (problems, calls, stderr) = drive_tools(fixture.eywa(), &palette, &mut rng);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        problems.is_empty(),
        "{} of {calls} calls: {problems:#?}",
        problems.len()
    );
    // Beside `eywa serve`: eywa mcp asks it.
    let mut cmd = fixture.eywa();
    cmd.args([
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--watch-interval-ms",
        "0",
        "--no-ingest",
    ]);
    let server = Serve::spawn(cmd);
    let (problems, calls, stderr) = drive_tools(fixture.eywa(), &palette, &mut rng);
    let lines = server.stop();
    assert!(!stderr.contains("panicked"), "{stderr}");
    let panics: Vec<&String> = lines.iter().filter(|l| l.contains("panicked")).collect();
    assert!(panics.is_empty(), "{panics:#?}");
    assert!(
        problems.is_empty(),
        "{} of {calls} calls: {problems:#?}",
        problems.len()
    );
}
