//! eywa's MCP tools as data: their table (name, description, arguments) and the checking
//! of the arguments a call gives, with the words an agent gets back when one is wrong.
//! Pure: the CLI's `mcp` serves them (over stdio and `serve`'s `/mcp`) and answers each
//! through its client; the fuzz targets drive the checking with generated JSON.

use serde_json::{Map, Value};

/// Why a call's arguments were refused: said to the agent as a tool error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentError(pub String);

impl std::fmt::Display for ArgumentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One tool: its name, what it is for, and its arguments (name, JSON type, description,
/// required).
pub struct Spec {
    /// What an agent calls it.
    pub name: &'static str,
    /// What it is for, as the agent reads it.
    pub description: &'static str,
    /// Its arguments: (name, JSON type, description, required).
    pub arguments: &'static [(&'static str, &'static str, &'static str, bool)],
    /// Whether it only reads.
    pub read_only: bool,
}

/// The `max_tokens` argument most tools take.
const MAX_TOKENS_ARG: (&str, &str, &str, bool) = (
    "max_tokens",
    "integer",
    "Cut the answer to about this many tokens (whole lines; default 2000).",
    false,
);

/// Every tool, in the order they are listed.
pub const TOOLS: &[Spec] = &[
    Spec {
        name: "eywa_get",
        description: "Retrieve past session handoffs for context continuity.\n\nCall it at \
            session start, or when you need context about past work.\n\n- No query: the 3 \
            most recent substantial sessions.\n- With a query: keyword-matches past sessions \
            (projects weigh most, then keywords, newer first) and returns the top ones.\n\n\
            Examples: eywa_get(), eywa_get(query=\"sorbent reasoning tokens\"), \
            eywa_get(query=\"river mcp\", days_back=30, max_handoffs=5)",
        arguments: &[
            (
                "query",
                "string",
                "What are we working on? Keywords, project name, topic.",
                false,
            ),
            (
                "days_back",
                "integer",
                "How far back to search (default 14 days).",
                false,
            ),
            (
                "max_handoffs",
                "integer",
                "How many handoffs to return (default 3, max 5).",
                false,
            ),
            (
                "max_tokens",
                "integer",
                "Cut the answer to about this many tokens (default: whole).",
                false,
            ),
        ],
        read_only: true,
    },
    Spec {
        name: "eywa_extract",
        description: "Read a session into eywa now and return its handoff (what happened, \
            insights, open threads). Call it at the end of a session, or before handing work \
            over, so the next session finds this one at once.\n\n- No arguments: the current \
            session (the newest transcript of this working directory).\n- With session_id: \
            that session (full id or an 8+ character prefix).",
        arguments: &[(
            "session_id",
            "string",
            "Session id. The current session when omitted.",
            false,
        )],
        read_only: false,
    },
    Spec {
        name: "eywa_search",
        description: "Search earlier sessions by words and meaning: one hit per session with \
            its best passage, session id and resume command. Call it to find where something \
            was discussed, decided or fixed.",
        arguments: &[
            ("query", "string", "What to look for.", true),
            (
                "limit",
                "integer",
                "Sessions to return (default 5, at most 50).",
                false,
            ),
            (
                "type",
                "string",
                "Only passages of this type: user_message, assistant_response, tool_call, \
                 plan, handoff, memory, doc, ...",
                false,
            ),
            ("project", "string", "Only sessions of this project.", false),
            (
                "mode",
                "string",
                "hybrid (default), lexical or semantic.",
                false,
            ),
            MAX_TOKENS_ARG,
        ],
        read_only: true,
    },
    Spec {
        name: "eywa_context",
        description: "Context from earlier sessions, fitted to a token budget: each \
            session's plan, subagent summaries and first prompts (mode smart), or its whole \
            transcript (mode full). Call it after eywa_get or eywa_search to read sessions \
            in depth. doc:<id> names a document.",
        arguments: &[
            (
                "sessions",
                "array",
                "Session ids or 8+ character prefixes, best first (a single id may be a \
                 string).",
                true,
            ),
            (
                "mode",
                "string",
                "smart (default), plan, labels, agents or full.",
                false,
            ),
            ("max_tokens", "integer", "The budget (default 2000).", false),
        ],
        read_only: true,
    },
    Spec {
        name: "eywa_related",
        description: "Sessions related to one session: sharing its files, projects and \
            concepts, or close in meaning. Call it to follow a thread of work across \
            sessions.",
        arguments: &[
            (
                "session",
                "string",
                "Session id or 8+ character prefix.",
                true,
            ),
            ("limit", "integer", "Sessions to return (default 5).", false),
            MAX_TOKENS_ARG,
        ],
        read_only: true,
    },
    Spec {
        name: "eywa_what_touched",
        description: "The sessions that read, edited or created a file (or worked in a \
            project, used a tool), newest first. Call it before changing a file to learn \
            its history.",
        arguments: &[
            (
                "entity",
                "string",
                "A file path (file:src/main.rs, or just the path), project:<name>, \
                 tool:<name> or concept:<name>.",
                true,
            ),
            (
                "limit",
                "integer",
                "Sessions to return (default 10).",
                false,
            ),
            MAX_TOKENS_ARG,
        ],
        read_only: true,
    },
    Spec {
        name: "eywa_walk",
        description: "Walk the knowledge graph from a node: the sessions, files, projects \
            and concepts around it, hop by hop.",
        arguments: &[
            (
                "node",
                "string",
                "project:<name>, file:<path>, session:<id>, concept:<name>, or a node id.",
                true,
            ),
            ("depth", "integer", "Hops (default 2, at most 4).", false),
            (
                "max_nodes",
                "integer",
                "Nodes to visit (default 30).",
                false,
            ),
            MAX_TOKENS_ARG,
        ],
        read_only: true,
    },
    Spec {
        name: "eywa_session",
        description: "One session: its project, date and handoff (what happened, insights, \
            key files, open threads) and how to resume it.",
        arguments: &[
            (
                "session",
                "string",
                "Session id or 8+ character prefix.",
                true,
            ),
            MAX_TOKENS_ARG,
        ],
        read_only: true,
    },
    Spec {
        name: "eywa_remember",
        description: "Keep a fact, decision or preference for later sessions. STM (the \
            default) fades in about a week unless recalled; LTM lasts months; PROCEDURAL (how \
            to do something) never fades.",
        arguments: &[
            (
                "content",
                "string",
                "What to remember, self-contained.",
                true,
            ),
            ("type", "string", "STM (default), LTM or PROCEDURAL.", false),
            ("importance", "number", "From 0 to 1 (default 0.5).", false),
            ("project", "string", "The project it is about.", false),
            ("tags", "array", "Tags (strings).", false),
        ],
        read_only: false,
    },
    Spec {
        name: "eywa_recall",
        description: "Memories relevant to a query, weighted by importance and how recently \
            they were used. Call it when starting a task, to see what was kept about it.",
        arguments: &[
            (
                "query",
                "string",
                "What the memories should be about.",
                true,
            ),
            ("limit", "integer", "Memories to return (default 5).", false),
            ("project", "string", "Only memories of this project.", false),
            MAX_TOKENS_ARG,
        ],
        read_only: false,
    },
    Spec {
        name: "eywa_forget",
        description: "Forget a memory: recall no longer returns it (its history keeps it).",
        arguments: &[
            ("id", "string", "The memory's id.", true),
            ("reason", "string", "Why.", false),
        ],
        read_only: false,
    },
    Spec {
        name: "eywa_docs",
        description: "Documents eywa holds (markdown, text, PDF added with `eywa docs \
            add`): with no argument, the list; with document, one document's text; with \
            query, the documents matching it.",
        arguments: &[
            (
                "document",
                "string",
                "A document id or path: its text.",
                false,
            ),
            ("query", "string", "Search the documents for this.", false),
            (
                "limit",
                "integer",
                "Documents to list or find (default 10).",
                false,
            ),
            MAX_TOKENS_ARG,
        ],
        read_only: true,
    },
];

/// A call's arguments, checked against its tool's list.
pub struct Arguments<'a> {
    tool: &'static str,
    map: &'a Map<String, Value>,
}

impl<'a> Arguments<'a> {
    /// `map` checked against `spec`: no argument it does not list, every required one
    /// given.
    pub fn check(
        spec: &'static Spec,
        map: &'a Map<String, Value>,
    ) -> Result<Arguments<'a>, ArgumentError> {
        let known = |k: &str| spec.arguments.iter().any(|(name, ..)| *name == k);
        if let Some(unknown) = map.keys().find(|k| !known(k)) {
            let names: Vec<&str> = spec.arguments.iter().map(|(n, ..)| *n).collect();
            return Err(ArgumentError(format!(
                "{} takes no argument {}; its arguments: {}",
                spec.name,
                crate::error::quote(unknown),
                names.join(", ")
            )));
        }
        for (name, ..) in spec.arguments.iter().filter(|(.., needed)| *needed) {
            if map.get(*name).is_none_or(Value::is_null) {
                return Err(ArgumentError(format!("{} needs {name:?}", spec.name)));
            }
        }
        Ok(Arguments {
            tool: spec.name,
            map,
        })
    }

    /// Argument `key`, unless absent or null.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// The error of argument `key` given as `got` where `what` was wanted.
    pub fn bad(&self, key: &str, what: &str, got: &Value) -> ArgumentError {
        ArgumentError(format!(
            "Invalid arguments: {}: {key} must be {what}, got {}",
            self.tool,
            crate::error::quote(&got.to_string())
        ))
    }

    /// A string argument, trimmed; `None` when absent or empty.
    pub fn text(&self, key: &str) -> Result<Option<String>, ArgumentError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_owned()).filter(|s| !s.is_empty())),
            Some(other) => Err(self.bad(key, "a string", other)),
        }
    }

    /// A string argument that must be given and not be empty.
    pub fn required_text(&self, key: &str) -> Result<String, ArgumentError> {
        self.text(key)?.ok_or_else(|| {
            ArgumentError(format!(
                "Invalid arguments: {}: {key} must not be empty",
                self.tool
            ))
        })
    }

    /// An integer from `min` to `max`: a JSON integer, a float without a fraction, or a
    /// string of digits (as the Python Eywa's `int()` takes them).
    pub fn optional_int(
        &self,
        key: &str,
        min: i64,
        max: i64,
    ) -> Result<Option<i64>, ArgumentError> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        let n = match value {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
            Value::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        }
        .ok_or_else(|| self.bad(key, "an integer", value))?;
        if n < min || n > max {
            return Err(self.bad(key, &format!("from {min} to {max}"), value));
        }
        Ok(Some(n))
    }

    /// [`Arguments::optional_int`], `default` when absent.
    pub fn int(&self, key: &str, default: i64, min: i64, max: i64) -> Result<i64, ArgumentError> {
        Ok(self.optional_int(key, min, max)?.unwrap_or(default))
    }

    /// A list of strings: a JSON array of them, or one string.
    pub fn strings(&self, key: &str) -> Result<Vec<String>, ArgumentError> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s.trim().to_owned()]),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.trim().to_owned()),
                    other => Err(self.bad(key, "a list of strings", other)),
                })
                .filter(|s| !matches!(s, Ok(s) if s.is_empty()))
                .collect(),
            Some(other) => Err(self.bad(key, "a list of strings", other)),
        }
    }
}
