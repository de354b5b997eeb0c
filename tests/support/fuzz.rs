//! A small mutation fuzzer on the stable toolchain, for the readers of outside input: the
//! JSONL line reader, the transcript accumulator, the handoff markdown parser, the
//! `handoff-index.json` import, and (issue 30) the PDF and markdown readers of documents
//! and the decoding and checking of MCP tool calls. Realistic seeds are mutated (bit flips, inserted and
//! deleted runs, splices of two seeds, tokens that break JSON, Markdown and UTF-8, deep
//! nesting, huge numbers) by a fixed-seed generator, and each input runs under
//! `catch_unwind`: a panic is a crash, kept with its input. Shared by `benches/fuzz.rs`
//! (ten million executions a target) and a short pass in the tests.

use std::panic::AssertUnwindSafe;

/// A target: a name, and what it does with one input.
pub(crate) struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
    pub seeds: fn() -> Vec<Vec<u8>>,
}

/// What a run of one target did.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub executions: u64,
    /// Inputs that panicked (at most ten kept), with the panic's message.
    pub crashes: Vec<(Vec<u8>, String)>,
    pub crash_count: u64,
}

pub(crate) fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "jsonl_line",
            run: |bytes| {
                if let Some(line) = eywa::claude::Line::parse(bytes) {
                    let _ = (line.uuid(), line.timestamp(), line.cwd(), line.message_id());
                    let _ = line.blocks().len();
                }
            },
            seeds: line_seeds,
        },
        Target {
            name: "transcript",
            run: |bytes| {
                let _ = eywa::claude::read_transcript_from(bytes, "s", eywa::claude::Mode::Main);
                let _ = eywa::claude::read_messages(bytes);
            },
            seeds: transcript_seeds,
        },
        Target {
            name: "handoff_markdown",
            run: |bytes| {
                let _ = eywa::extract::parse_markdown(&String::from_utf8_lossy(bytes));
            },
            seeds: markdown_seeds,
        },
        Target {
            name: "pdf",
            run: |bytes| {
                let _ = eywa::docs::read_here("f.pdf", bytes);
            },
            seeds: pdf_seeds,
        },
        Target {
            name: "markdown",
            run: |bytes| {
                let _ = eywa::docs::read_here("f.md", bytes);
            },
            seeds: document_markdown_seeds,
        },
        Target {
            name: "mcp_arguments",
            run: mcp_call,
            seeds: mcp_seeds,
        },
        Target {
            name: "handoff_index",
            run: |bytes| {
                let _ = eywa::extract::read_index(bytes, &mut |_| {});
                if let Ok(value) = serde_json::from_slice(bytes) {
                    let _ = eywa::extract::parse_index(&value);
                }
            },
            seeds: index_seeds,
        },
    ]
}

/// xorshift64*: fast, fixed-seed, good enough to pick mutations.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545F4914F6CDD1D)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    /// One of `items`, not empty.
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Pieces that break the formats the targets read.
const TOKENS: &[&[u8]] = &[
    b"\"",
    b"\\",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"null",
    b"true",
    b"-0",
    b"1e999",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"\\u0000",
    b"\\ud800",
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\n",
    b"\r\n",
    b"\t",
    b"\0",
    b"---",
    b"## ",
    b"- ",
    b"**",
    b"`",
    b"\xef\xbb\xbf",
    b"\"type\":\"assistant\"",
    b"\"type\":\"user\"",
    b"\"content\":[",
    b"\"tool_use\"",
    b"\"tool_result\"",
    b"\"parentUuid\":",
    b"\"uuid\":\"",
    b"\"isSidechain\":true",
    b"\"message\":{",
    b"\"handoffs\":{",
    b"\"duration_minutes\":",
    b"\"substance\":",
    b"headline:",
    b"date: 2026-13-45",
    b"duration: 99999999999h",
    b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    b"{\"a\":{\"a\":{\"a\":{",
    b"<<",
    b">>",
    b"<< /A ",
    b"(",
    b")",
    b"obj",
    b"endobj",
    b"stream\n",
    b"endstream",
    b" 0 R",
    b"/Filter /FlateDecode",
    b"/Length 99999999",
    b"/Type /ObjStm /N 99999 /First 0",
    b"beginbfrange",
    b"<0000> <FFFF> <0041>",
    b"BT /F1 12 Tf",
    b"Tj",
    b" TJ ET",
    b"BI /W 1 ID x EI",
    b"xref\n0 1\n",
    b"trailer",
    b"startxref",
    b"\"arguments\":",
    b"\"max_tokens\":",
    b"\"query\":",
    b"\"jsonrpc\":\"2.0\"",
];

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&seeds[rng.below(seeds.len())]);
    for _ in 0..=rng.below(6) {
        let at = rng.below(out.len() + 1);
        match rng.below(9) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = rng.next() as u8;
            }
            2 => {
                let token = TOKENS[rng.below(TOKENS.len())];
                out.splice(at..at, token.iter().copied());
            }
            3 if !out.is_empty() => {
                let end = (at + 1 + rng.below(32)).min(out.len());
                out.drain(at.min(end)..end);
            }
            4 => {
                // Splice in a run of another seed.
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len() + 1);
                let to = (from + rng.below(256)).min(other.len());
                out.splice(at..at, other[from..to].iter().copied());
            }
            5 if !out.is_empty() => {
                // Repeat a run (long lines, deep structure).
                let end = (at + 1 + rng.below(16)).min(out.len());
                let run: Vec<u8> = out[at.min(end)..end].to_vec();
                for _ in 0..rng.below(64) {
                    out.splice(at..at, run.iter().copied());
                }
            }
            6 => out.truncate(at),
            7 if !out.is_empty() => {
                // A digit run grown past every integer type.
                let digits = b"98765432109876543210987654321";
                out.splice(
                    at..at,
                    digits[..=rng.below(digits.len() - 1)].iter().copied(),
                );
            }
            _ => {
                let token = TOKENS[rng.below(TOKENS.len())];
                let end = (at + token.len()).min(out.len());
                out.splice(at..end, token.iter().copied());
            }
        }
        if out.len() > 1 << 16 {
            out.truncate(1 << 16);
        }
    }
}

/// Runs `target` on `executions` mutated inputs (the seeds themselves first).
pub(crate) fn fuzz(target: &Target, executions: u64, seed: u64) -> Outcome {
    let seeds = (target.seeds)();
    let mut rng = Rng::new(seed);
    let mut input = Vec::with_capacity(4096);
    let mut outcome = Outcome {
        executions: 0,
        crashes: Vec::new(),
        crash_count: 0,
    };
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for i in 0..executions {
        if (i as usize) < seeds.len() {
            input.clear();
            input.extend_from_slice(&seeds[i as usize]);
        } else {
            mutate(&mut rng, &seeds, &mut input);
        }
        let run = target.run;
        if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(|| run(&input))) {
            outcome.crash_count += 1;
            if outcome.crashes.len() < 10 {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| {
                        panic
                            .downcast_ref::<&str>()
                            .map(std::string::ToString::to_string)
                    })
                    .unwrap_or_default();
                outcome.crashes.push((input.clone(), message));
            }
        }
        outcome.executions += 1;
    }
    std::panic::set_hook(quiet);
    outcome
}

fn line_seeds() -> Vec<Vec<u8>> {
    transcript_lines()
        .into_iter()
        .map(String::into_bytes)
        .collect()
}

/// Lines of each shape Claude Code writes (seed 004), tool calls and results included.
fn transcript_lines() -> Vec<String> {
    let mut lines = vec![
        r#"{"type":"summary","summary":"Fix the tokenizer","leafUuid":"a1"}"#.to_owned(),
        r#"{"type":"custom-title","customTitle":"tokenizer","sessionId":"s"}"#.to_owned(),
        r#"{"type":"ai-title","aiTitle":"Unicode tokenizer fix","sessionId":"s"}"#.to_owned(),
        r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","cwd":"/w/app","gitBranch":"main","version":"2.1.3","timestamp":"2026-11-20T10:00:00.000Z","message":{"role":"user","content":"Fix the unicode tokenizer in src/lib.rs"}}"#.to_owned(),
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","timestamp":"2026-11-20T10:00:05.000Z","message":{"id":"msg_1","role":"assistant","model":"claude-sonnet-4","content":[{"type":"text","text":"Reading it."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/w/app/src/lib.rs"}}],"usage":{"input_tokens":12,"output_tokens":40,"cache_read_input_tokens":1000}}}"#.to_owned(),
        r#"{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s","timestamp":"2026-11-20T10:00:06.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"fn main() {}","is_error":false}]},"toolUseResult":{"agentId":"ab12"}}"#.to_owned(),
        r#"{"type":"assistant","uuid":"a2","parentUuid":"u2","sessionId":"s","timestamp":"2026-11-20T10:00:09.000Z","message":{"id":"msg_2","role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"Task","input":{"subagent_type":"Explore","description":"find uses","prompt":"Find every caller"}},{"type":"tool_use","id":"toolu_3","name":"TodoWrite","input":{"todos":[{"content":"add tests","status":"pending"}]}}]}}"#.to_owned(),
        r#"{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"a2","sessionId":"s","compactMetadata":{"trigger":"auto","preTokens":150000}}"#.to_owned(),
        r#"{"type":"user","uuid":"c1","parentUuid":"b1","sessionId":"s","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued from a previous conversation."}}"#.to_owned(),
        r#"{"type":"assistant","uuid":"a3","parentUuid":"c1","isSidechain":true,"agentId":"ab12","sessionId":"s","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"Done: fixed the tokenizer and added tests for emoji."}]}}"#.to_owned(),
        r#"{"type":"queue-operation","operation":"enqueue","content":"and the docs","sessionId":"s"}"#.to_owned(),
    ];
    lines.push(format!(
        r#"{{"type":"user","uuid":"u9","sessionId":"s","message":{{"role":"user","content":"{}"}}}}"#,
        "a long pasted log line ".repeat(40)
    ));
    lines
}

fn transcript_seeds() -> Vec<Vec<u8>> {
    let lines = transcript_lines();
    let mut seeds = vec![(lines.join("\n") + "\n").into_bytes()];
    for window in lines.windows(3) {
        seeds.push(window.join("\n").into_bytes());
    }
    seeds
}

fn markdown_seeds() -> Vec<Vec<u8>> {
    let ours = "---\nsession_id: 7acd37a8\ndate: 2026-11-20\nduration: 1h 5m\nduration_minutes: 65\nmodel: claude-sonnet-4\nheadline: \"Fix the unicode tokenizer\"\nprojects: [tokenizer-service]\nkeywords: [unicode, tokenizer, \"a:b\"]\nsubstance: 2\n---\n\n# Fix the unicode tokenizer\n\n## What Happened\n- Read src/lib.rs\n- Fixed emoji splitting\n\n## Insights\n- **Tokenizer** -- emoji are one grapheme\n\n## Key Files\n- src/lib.rs\n\n## Open Threads\n- add tests\n";
    let python = "---\nsession_id: '3680252d'\ndate: '2026-02-16'\nduration: 45m\nheadline: Ledger reconciliation\nprojects:\n  - ledger\nkeywords:\n  - csv\n  - ~\nsubstance: 1\n---\n## What Happened\n\n* Reconciled the ledger\n";
    vec![
        ours.as_bytes().to_vec(),
        python.as_bytes().to_vec(),
        b"---\n---\n".to_vec(),
    ]
}

fn index_seeds() -> Vec<Vec<u8>> {
    let index = r#"{"version": 1, "handoffs": {"7acd37a8": {"date": "2026-11-20", "headline": "Fix the tokenizer", "projects": ["tokenizer-service"], "keywords": ["unicode", "tokenizer"], "substance": 2, "duration_minutes": 65, "path": "handoffs/2026/11/20/7acd37a8.md"}, "3680252d": {"date": "2026-02-16", "headline": "Ledger", "projects": [], "keywords": [], "substance": 0}}}"#;
    vec![
        index.as_bytes().to_vec(),
        br#"{"handoffs": {}}"#.to_vec(),
        br#"{"handoffs": {"x": {"date": null}}}"#.to_vec(),
    ]
}

/// A PDF of `objects` (object 1 the catalog), with its cross-reference table.
pub(crate) fn pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.5\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n", i + 1).into_bytes());
        out.extend(body);
        out.extend(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).into_bytes());
    for offset in offsets {
        out.extend(format!("{offset:010} 00000 n \n").into_bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .into_bytes(),
    );
    out
}

/// A stream object: `dictionary` and its `/Length`, then `data`.
pub(crate) fn stream(dictionary: &str, data: &[u8]) -> Vec<u8> {
    let mut out = format!("<< {dictionary} /Length {} >>\nstream\n", data.len()).into_bytes();
    out.extend(data);
    out.extend(b"\nendstream");
    out
}

fn deflate(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

/// PDFs of the shapes the reader meets: plain and compressed pages, fonts with ToUnicode
/// maps, an object stream, marked content, inline images, arrays of kerned strings.
fn pdf_seeds() -> Vec<Vec<u8>> {
    let catalog = b"<< /Type /Catalog /Pages 2 0 R >>".to_vec();
    let pages = b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec();
    let page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>".to_vec();
    let font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec();
    let type0 =
        b"<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /ToUnicode 6 0 R >>"
            .to_vec();
    let content = b"BT /F1 12 Tf 72 720 Td (Deploys go canary first.) Tj T* [(Ker) -120 (ned)] TJ ' (next) ET\n/P << /MCID 0 >> BDC EMC BI /W 1 /H 1 ID x EI";
    let cmap = b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n2 beginbfrange\n<0041> <005A> <0041>\n<0061> <007A> [<0061> <0062>]\nendbfrange\n1 beginbfchar\n<0020> <0020>\nendbfchar\nendcmap";
    vec![
        pdf(&[
            catalog.clone(),
            pages.clone(),
            page.clone(),
            font.clone(),
            stream("", content),
        ]),
        pdf(&[
            catalog.clone(),
            pages.clone(),
            page.clone(),
            font.clone(),
            stream("/Filter /FlateDecode", &deflate(content)),
        ]),
        pdf(&[
            catalog.clone(),
            pages.clone(),
            page.clone(),
            type0,
            stream("", b"BT /F1 12 Tf <00480069> Tj ET"),
            stream("/Filter /FlateDecode", &deflate(cmap)),
        ]),
        pdf(&[
            catalog,
            pages,
            page,
            font,
            stream("", content),
            stream(
                "/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode",
                &deflate(b"7 0 << /Kind /Note >>"),
            ),
        ]),
    ]
}

fn document_markdown_seeds() -> Vec<Vec<u8>> {
    let mut seeds = markdown_seeds();
    seeds.push(
        "# Runbook\n\nDeploys go canary first. Rollbacks take ten minutes.\n\n## Keys\n\n\
         export AWS_ACCESS_KEY_ID=AKIA0000000000000000\n- a list\n  - nested\n\n```sh\ncurl -u a:b x\n```\n\n\
         | a | b |\n|---|---|\n| 1 | 2 |\n"
            .as_bytes()
            .to_vec(),
    );
    seeds.push(
        "\u{c}page\u{c}break\r\nwindows line. Ünïcödé text — dashes!"
            .as_bytes()
            .to_vec(),
    );
    seeds
}

/// An MCP call's bytes as `eywa mcp` takes them: the JSON-RPC message decoded, then its
/// arguments checked against each tool and every argument read as its tool reads it.
fn mcp_call(bytes: &[u8]) {
    let _ = serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(bytes);
    let value: serde_json::Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(_) => return,
    };
    let arguments = value
        .pointer("/params/arguments")
        .and_then(serde_json::Value::as_object)
        .or_else(|| value.as_object());
    let Some(arguments) = arguments else { return };
    for spec in eywa::tools::TOOLS {
        let Ok(args) = eywa::tools::Arguments::check(spec, arguments) else {
            continue;
        };
        for (name, kind, ..) in spec.arguments {
            match *kind {
                "integer" => {
                    let _ = args.int(name, 5, 1, 100);
                    let _ = args.optional_int(name, i64::MIN, i64::MAX);
                }
                "array" => {
                    let _ = args.strings(name);
                }
                "number" => {
                    let _ = args.get(name).map(serde_json::Value::as_f64);
                }
                _ => {
                    let _ = args.text(name);
                    let _ = args.required_text(name);
                }
            }
        }
    }
}

fn mcp_seeds() -> Vec<Vec<u8>> {
    [
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"eywa_search","arguments":{"query":"canary deploys","limit":"5","type":"document","max_tokens":2000}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"eywa_context","arguments":{"sessions":["7acd37a8","3680252d"],"mode":"full"}}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"eywa_remember","arguments":{"content":"x","importance":0.7,"tags":["a","b"],"type":"LTM"}}}"#,
        r#"{"query":"x","days_back":30.0,"max_handoffs":9,"qurey":1}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}
