//! One JSONL line of a transcript, read defensively: its kind, uuids, blocks and usage.

use serde_json::Value;

/// The kinds of JSONL lines eywa reads for meaning; everything else is kept as `Other`
/// (new line types keep appearing, and they never fail a file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineKind {
    User,
    Assistant,
    System,
    Summary,
    CustomTitle,
    AiTitle,
    Other(String),
}

/// One parsed transcript line. Every field is optional: lines from different Claude Code
/// versions carry different fields, and a field of an unexpected type reads as absent.
#[derive(Debug, Clone)]
pub struct Line {
    pub kind: LineKind,
    value: Value,
}

impl Line {
    /// Parses one line; `None` for anything that is not a JSON object (a garbage or
    /// half-written line).
    pub fn parse(bytes: &[u8]) -> Option<Line> {
        Line::read(bytes).ok()
    }

    /// [`Line::parse`], saying why a line is not one: the JSON error, or what the value
    /// was instead of an object.
    pub fn read(bytes: &[u8]) -> Result<Line, String> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON ({e})"))?;
        if !value.is_object() {
            let what = match value {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                Value::Array(_) => "an array",
                Value::Object(_) => unreachable!("checked above"),
            };
            return Err(format!("{what}, not a JSON object"));
        }
        Ok(Line::of(value))
    }

    /// [`Line::parse`] for a reader of message texts only: the line without what no
    /// text is made of, skipped unread (tool inputs and results, thinking and its
    /// signature, images, `toolUseResult`). Every accessor answers as on the whole line
    /// except [`Line::blocks`]' tool inputs and results (`null`) and thinking (absent:
    /// the block reads as [`Block::Other`]), [`Line::agent_run`] and
    /// [`Line::spawned_agent`]. A transcript's bytes are mostly tool results, which a
    /// `Value` copies whole: `SearchSessions` reads every session this way.
    pub fn parse_texts(bytes: &[u8]) -> Option<Line> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let Skimmed(value) = serde::de::DeserializeSeed::deserialize(Skim::Line, &mut de).ok()?;
        de.end().ok()?;
        value.is_object().then(|| Line::of(value))
    }

    /// The line a JSON object is.
    fn of(value: Value) -> Line {
        let kind = match value.get("type").and_then(Value::as_str).unwrap_or("") {
            "user" => LineKind::User,
            "assistant" => LineKind::Assistant,
            "system" => LineKind::System,
            "summary" => LineKind::Summary,
            "custom-title" => LineKind::CustomTitle,
            "ai-title" => LineKind::AiTitle,
            other => LineKind::Other(other.to_owned()),
        };
        Line { kind, value }
    }

    fn str(&self, key: &str) -> Option<&str> {
        self.value.get(key).and_then(Value::as_str)
    }

    fn flag(&self, key: &str) -> bool {
        self.value
            .get(key)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    pub fn uuid(&self) -> Option<&str> {
        self.str("uuid")
    }

    pub fn timestamp(&self) -> Option<&str> {
        self.str("timestamp")
    }

    pub fn cwd(&self) -> Option<&str> {
        self.str("cwd").filter(|s| !s.trim().is_empty())
    }

    pub fn git_branch(&self) -> Option<&str> {
        self.str("gitBranch").filter(|s| !s.trim().is_empty())
    }

    /// `slug`: names a conversation across resumes (2.0.5x+).
    pub fn slug(&self) -> Option<&str> {
        self.str("slug").filter(|s| !s.is_empty())
    }

    pub fn version(&self) -> Option<&str> {
        self.str("version")
    }

    pub fn is_sidechain(&self) -> bool {
        self.flag("isSidechain")
    }

    pub fn is_meta(&self) -> bool {
        self.flag("isMeta")
    }

    pub fn is_compact_summary(&self) -> bool {
        self.flag("isCompactSummary")
    }

    /// A `file-history-snapshot` line's files (`snapshot.trackedFileBackups`' keys), in
    /// order, at most 1,000.
    pub fn tracked_files(&self) -> Vec<String> {
        self.value
            .get("snapshot")
            .and_then(|s| s.get("trackedFileBackups"))
            .and_then(Value::as_object)
            .map(|files| files.keys().take(1_000).cloned().collect())
            .unwrap_or_default()
    }

    /// `summary` lines: the label and the message it describes (often in another file).
    pub fn summary(&self) -> Option<(&str, Option<&str>)> {
        Some((self.str("summary")?, self.str("leafUuid")))
    }

    /// `agentId`: set on every line of a subagent transcript.
    pub fn agent_id(&self) -> Option<&str> {
        self.str("agentId").filter(|s| !s.is_empty())
    }

    /// `sessionId` (a subagent's lines carry their parent's).
    pub fn session_id(&self) -> Option<&str> {
        self.str("sessionId").filter(|s| !s.is_empty())
    }

    pub fn parent_uuid(&self) -> Option<&str> {
        self.str("parentUuid")
    }

    /// The parent in conversation order: `parentUuid`, or for a `compact_boundary` (which
    /// starts a new root) the `logicalParentUuid` it continues from.
    pub fn chain_parent(&self) -> Option<&str> {
        self.parent_uuid()
            .or_else(|| self.str("logicalParentUuid"))
            .filter(|p| !p.is_empty())
    }

    /// The text of a `queue-operation` line with `operation: "remove"`: a message the
    /// person typed while Claude worked, taken out of the queue to steer the turn (Q12).
    /// Enqueued messages are not returned: they come back as ordinary user lines.
    pub fn steering_text(&self) -> Option<String> {
        if self.kind != LineKind::Other("queue-operation".to_owned())
            || self.str("operation") != Some("remove")
        {
            return None;
        }
        match self.value.get("content")? {
            Value::String(s) => Some(s.clone()),
            Value::Array(items) => Some(
                items
                    .iter()
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            _ => None,
        }
    }

    /// `subtype` of a `system` line (`compact_boundary`, `local_command`, …).
    pub fn subtype(&self) -> Option<&str> {
        self.str("subtype")
    }

    /// A `compact_boundary` line's metadata: what triggered it and the tokens before.
    pub fn compact_boundary(&self) -> Option<CompactBoundary> {
        if self.kind != LineKind::System || self.subtype() != Some("compact_boundary") {
            return None;
        }
        let meta = self.value.get("compactMetadata");
        let field = |k: &str| meta.and_then(|m| m.get(k));
        Some(CompactBoundary {
            trigger: field("trigger").and_then(Value::as_str).map(str::to_owned),
            pre_tokens: field("preTokens").and_then(Value::as_u64),
        })
    }

    /// The `toolUseResult` of a `Task`/`Agent` call's answer: how long the subagent ran,
    /// the tokens it used and its tool calls.
    pub fn agent_run(&self) -> AgentRun {
        let result = self.value.get("toolUseResult").filter(|v| v.is_object());
        let n = |k: &str| result.and_then(|r| r.get(k)).and_then(Value::as_u64);
        AgentRun {
            duration_ms: n("totalDurationMs"),
            tokens: n("totalTokens"),
            tool_uses: n("totalToolUseCount"),
        }
    }

    /// On a user line answering a `Task`/`Agent` call: the spawned agent's id and type
    /// (`toolUseResult.agentId`, `.agentType`).
    pub fn spawned_agent(&self) -> Option<(&str, Option<&str>)> {
        let result = self.value.get("toolUseResult")?;
        let id = result.get("agentId")?.as_str().filter(|s| !s.is_empty())?;
        Some((id, result.get("agentType").and_then(Value::as_str)))
    }

    pub fn custom_title(&self) -> Option<&str> {
        self.str("customTitle")
    }

    pub fn ai_title(&self) -> Option<&str> {
        self.str("aiTitle")
    }

    pub fn request_id(&self) -> Option<&str> {
        self.str("requestId")
    }

    /// Token usage of an assistant line: `message.usage`, or the entry-level `usage` of
    /// older versions.
    pub fn usage(&self) -> Option<Usage> {
        let u = self
            .message()
            .and_then(|m| m.get("usage"))
            .or_else(|| self.value.get("usage"))?;
        let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        Some(Usage {
            input: n("input_tokens"),
            output: n("output_tokens"),
            cache_creation: n("cache_creation_input_tokens"),
            cache_read: n("cache_read_input_tokens"),
        })
    }

    fn message(&self) -> Option<&Value> {
        self.value.get("message").filter(|m| m.is_object())
    }

    /// `message.id`: one API response may be spread over several lines sharing it.
    pub fn message_id(&self) -> Option<&str> {
        self.message()?.get("id").and_then(Value::as_str)
    }

    pub fn model(&self) -> Option<&str> {
        self.message()?.get("model").and_then(Value::as_str)
    }

    /// Why an assistant response ended (`end_turn`, `tool_use`, `max_tokens`…).
    pub fn stop_reason(&self) -> Option<&str> {
        self.message()?.get("stop_reason").and_then(Value::as_str)
    }

    /// Content blocks of the message; string content reads as one text block.
    pub fn blocks(&self) -> Vec<Block<'_>> {
        let Some(content) = self.message().and_then(|m| m.get("content")) else {
            return Vec::new();
        };
        match content {
            Value::String(s) => vec![Block::Text(s)],
            Value::Array(items) => items.iter().map(Block::from_value).collect(),
            _ => Vec::new(),
        }
    }
}

/// Where [`Line::parse_texts`] is in a line: the line's object, its `message`, the
/// message's `content`, or one of its blocks. Each object keeps every member but those
/// its level skips; anything not an object (or array, for `Content`) is kept whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Skim {
    Line,
    Message,
    Content,
    Block,
}

/// A value [`Skim`] kept.
struct Skimmed(Value);

impl Skim {
    /// The level a member `key` of an object at this level is read at, `None` to skip it,
    /// and `Some(None)` to keep it whole.
    fn member(self, key: &str) -> Option<Option<Skim>> {
        match (self, key) {
            (Skim::Line, "toolUseResult") => None,
            (Skim::Line, "message") => Some(Some(Skim::Message)),
            (Skim::Message, "content") => Some(Some(Skim::Content)),
            (Skim::Block, "content" | "input" | "thinking" | "signature" | "source" | "data") => {
                None
            }
            _ => Some(None),
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Skim {
    type Value = Skimmed;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Skimmed, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Skim {
    type Value = Skimmed;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a transcript line's JSON")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Skimmed, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match self.member(&key) {
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
                Some(None) => {
                    out.insert(key, map.next_value::<Value>()?);
                }
                Some(Some(level)) => {
                    out.insert(key, map.next_value_seed(level)?.0);
                }
            }
        }
        Ok(Skimmed(Value::Object(out)))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Skimmed, A::Error> {
        // A line is an object: one that is not is refused by the caller. The blocks of
        // `content` are skimmed; any other array is kept whole.
        let each = match self {
            Skim::Content => Some(Skim::Block),
            _ => None,
        };
        let mut out = Vec::new();
        loop {
            let item = match each {
                Some(level) => seq.next_element_seed(level)?.map(|s| s.0),
                None => seq.next_element::<Value>()?,
            };
            match item {
                Some(item) => out.push(item),
                None => return Ok(Skimmed(Value::Array(out))),
            }
        }
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Skimmed, E> {
        Ok(Skimmed(Value::String(v.to_owned())))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Skimmed, E> {
        Ok(Skimmed(Value::String(v)))
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Skimmed, E> {
        Ok(Skimmed(Value::Bool(v)))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Skimmed, E> {
        Ok(Skimmed(Value::from(v)))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Skimmed, E> {
        Ok(Skimmed(Value::from(v)))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Skimmed, E> {
        Ok(Skimmed(Value::from(v)))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Skimmed, E> {
        Ok(Skimmed(Value::Null))
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Skimmed, E> {
        Ok(Skimmed(Value::Null))
    }
}

/// What a `compact_boundary` line says about its compaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactBoundary {
    /// `manual` (`/compact`) or `auto`.
    pub trigger: Option<String>,
    pub pre_tokens: Option<u64>,
}

/// A subagent's run as its parent's tool result reports it (2.0.x+).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentRun {
    pub duration_ms: Option<u64>,
    pub tokens: Option<u64>,
    pub tool_uses: Option<u64>,
}

/// Tokens of one API response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_creation: u64,
    pub cache_read: u64,
}

impl Usage {
    /// Field by field, the larger: lines of one response repeat or grow its usage, so the
    /// most complete record is the maximum (Q4: first-wins undercounts).
    pub fn max(self, other: Usage) -> Usage {
        Usage {
            input: self.input.max(other.input),
            output: self.output.max(other.output),
            cache_creation: self.cache_creation.max(other.cache_creation),
            cache_read: self.cache_read.max(other.cache_read),
        }
    }
}

impl std::ops::Add for Usage {
    type Output = Usage;

    fn add(self, other: Usage) -> Usage {
        Usage {
            input: self.input + other.input,
            output: self.output + other.output,
            cache_creation: self.cache_creation + other.cache_creation,
            cache_read: self.cache_read + other.cache_read,
        }
    }
}

/// A content block, reduced to what eywa reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Block<'a> {
    Text(&'a str),
    ToolUse {
        id: Option<&'a str>,
        name: &'a str,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: Option<&'a str>,
        content: &'a Value,
        is_error: bool,
    },
    /// A thinking block with text (redacted ones, `"thinking":""`, read as `Other`).
    Thinking(&'a str),
    Other,
}

impl<'a> Block<'a> {
    fn from_value(v: &'a Value) -> Block<'a> {
        match v.get("type").and_then(Value::as_str) {
            Some("text") => v
                .get("text")
                .and_then(Value::as_str)
                .map_or(Block::Other, Block::Text),
            Some("tool_use") => match v.get("name").and_then(Value::as_str) {
                Some(name) => Block::ToolUse {
                    id: v.get("id").and_then(Value::as_str),
                    name,
                    input: v.get("input").unwrap_or(&Value::Null),
                },
                None => Block::Other,
            },
            Some("tool_result") => Block::ToolResult {
                tool_use_id: v.get("tool_use_id").and_then(Value::as_str),
                content: v.get("content").unwrap_or(&Value::Null),
                is_error: v.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            },
            Some("thinking") => v
                .get("thinking")
                .and_then(Value::as_str)
                .filter(|t| !t.trim().is_empty())
                .map_or(Block::Other, Block::Thinking),
            _ => Block::Other,
        }
    }
}

/// The text of a tool result's content: a string, or the text blocks of a list (Q2:
/// images and `tool_reference` blocks carry no text), joined by newlines.
pub fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.as_str()),
                _ => b.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_and_array_content_both_read_as_text() {
        let a =
            Line::parse(br#"{"type":"user","message":{"role":"user","content":"hi"}}"#).unwrap();
        assert_eq!(a.blocks(), vec![Block::Text("hi")]);
        let b = Line::parse(
            br#"{"type":"user","message":{"content":[{"type":"text","text":"hi"},{"type":"image"}]}}"#,
        )
        .unwrap();
        assert_eq!(b.blocks(), vec![Block::Text("hi"), Block::Other]);
    }

    #[test]
    fn a_texts_only_parse_skips_what_no_text_is_made_of() {
        let bytes = br#"{"type":"user","uuid":"u1","parentUuid":null,"isSidechain":false,"cwd":"/w","toolUseResult":{"agentId":"a1","file":{"content":"big"}},"message":{"role":"user","usage":{"input_tokens":3},"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"out"},{"type":"image","source":{"type":"base64","data":"AAAA"}}],"is_error":true},{"type":"text","text":"hi"},{"type":"thinking","thinking":"hmm","signature":"c2ln"},{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"ls"}},{"type":"image","source":{"data":"AAAA"}}]}}"#;
        let whole = Line::parse(bytes).unwrap();
        let texts = Line::parse_texts(bytes).unwrap();
        assert_eq!(texts.kind, whole.kind);
        assert_eq!(texts.uuid(), Some("u1"));
        assert_eq!(texts.cwd(), whole.cwd());
        assert_eq!(texts.parent_uuid(), None);
        assert_eq!(texts.usage(), whole.usage());
        assert_eq!(whole.spawned_agent(), Some(("a1", None)));
        assert_eq!(texts.spawned_agent(), None);
        let null = Value::Null;
        assert_eq!(
            texts.blocks(),
            vec![
                Block::ToolResult {
                    tool_use_id: Some("t1"),
                    content: &null,
                    is_error: true
                },
                Block::Text("hi"),
                Block::Other,
                Block::ToolUse {
                    id: Some("t2"),
                    name: "Bash",
                    input: &null
                },
                Block::Other,
            ]
        );
        assert_eq!(whole.blocks()[2], Block::Thinking("hmm"));
        // String content stays whole; what is not one object is refused as before.
        let prompt = Line::parse_texts(br#"{"type":"user","message":{"content":"typed"}}"#);
        assert_eq!(prompt.unwrap().blocks(), vec![Block::Text("typed")]);
        for bad in [
            &b"[1,2]"[..],
            b"not json",
            br#"{"type":"user"} trailing"#,
            b"7",
        ] {
            assert!(Line::parse_texts(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn odd_lines_are_kept_or_refused_without_panicking() {
        assert!(Line::parse(b"not json").is_none());
        assert!(Line::parse(b"[1,2]").is_none());
        assert!(Line::parse(br#"{"type":"user","message":{"con"#).is_none());
        let odd = Line::parse(br#"{"type":"atis-latch","isMeta":"yes","cwd":7}"#).unwrap();
        assert_eq!(odd.kind, LineKind::Other("atis-latch".into()));
        assert!(!odd.is_meta());
        assert_eq!(odd.cwd(), None);
        assert!(odd.blocks().is_empty());
    }
}
