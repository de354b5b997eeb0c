//! eywa's MCP tools, each answering from the client as compact markdown: handoffs
//! (`eywa_get`), search, context, related sessions, what touched a file, walks, a
//! session, memories and documents.

use eywa::engine::{ContextMode, SearchRequest};
use eywa::memory::{NewMemory, RecallQuery};
use eywa::model::{Handoff, MemoryType, SearchFilter, Timestamp};
use eywa::retrieve::GetOptions;
use eywa::tools::{Arguments, TOOLS};
use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Value, json};
use std::sync::Arc;

use super::{Answer, DEFAULT_MAX_TOKENS, MAX_HANDOFFS, MAX_TOKENS, ToolError};
use crate::app::client::Client;
use crate::app::render::node_line;

pub(super) fn tool_list() -> Vec<Tool> {
    TOOLS
        .iter()
        .map(|spec| {
            let mut properties = serde_json::Map::new();
            let mut required = Vec::new();
            for (name, kind, description, needed) in spec.arguments {
                let mut property = json!({"type": kind, "description": description});
                if *kind == "array" {
                    property["items"] = json!({"type": "string"});
                }
                properties.insert((*name).to_owned(), property);
                if *needed {
                    required.push(*name);
                }
            }
            let schema = json!({
                "type": "object",
                "properties": properties,
                "required": required,
            });
            let Value::Object(schema) = schema else {
                unreachable!("a JSON object literal")
            };
            let annotations = ToolAnnotations::new()
                .read_only(spec.read_only)
                .destructive(spec.name == "eywa_forget");
            Tool::new(spec.name, spec.description, Arc::new(schema)).with_annotations(annotations)
        })
        .collect()
}

/// The Python eywa-mcp's `eywa_get`: `## Eywa: N past session(s)` and the handoff bodies,
/// frontmatter left out, joined by `---` rules.
pub(super) fn eywa_get(client: &Client, args: &Arguments) -> Answer {
    let query = args.text("query")?.unwrap_or_default();
    let days_back = args.int(
        "days_back",
        i64::from(eywa::retrieve::DEFAULT_DAYS_BACK),
        0,
        36_500,
    )?;
    // As the Python Eywa does: more than 5 is 5.
    let max_handoffs = args.int("max_handoffs", 3, 1, i64::MAX)?.min(MAX_HANDOFFS);
    let options = GetOptions {
        days_back: days_back as u32,
        limit: max_handoffs as usize,
        ..GetOptions::default()
    };
    let outcome = client.get(&query, &options)?;
    let mut bodies = Vec::new();
    for hit in &outcome.hits {
        let handoff = full_handoff(client, &hit.handoff)?;
        let body = eywa::present::handoff::body(&handoff);
        if !body.is_empty() {
            bodies.push(body);
        }
    }
    Ok(eywa::present::handoff::get_text(&bodies))
}

/// A handoff with its sections: a hit read from the index files carries only what `get`
/// prints.
pub(crate) fn full_handoff(client: &Client, handoff: &Handoff) -> anyhow::Result<Handoff> {
    eywa::present::context::full(client, handoff.clone())
}

pub(super) fn eywa_search(client: &Client, args: &Arguments) -> Answer {
    let query = args.required_text("query")?;
    let limit = args.int("limit", 5, 1, 50)? as usize;
    let kinds: Vec<String> = args.text("type")?.into_iter().collect();
    if let Err(why) = eywa::retrieve::search::content_types(&kinds) {
        return Err(ToolError(format!("Invalid arguments: eywa_search: {why}")));
    }
    let mode = match args.text("mode")? {
        None => Default::default(),
        Some(m) => eywa::retrieve::SearchMode::parse(&m).ok_or_else(|| {
            ToolError(format!(
                "Invalid arguments: eywa_search: mode must be hybrid, lexical or semantic, got {m:?}"
            ))
        })?,
    };
    let request = SearchRequest {
        query,
        filter: SearchFilter {
            kinds,
            projects: args.text("project")?.into_iter().collect(),
            ..SearchFilter::default()
        },
        limit,
        mode,
        focus: None,
        as_of: None,
    };
    let results = client.search(&request)?;
    Ok(eywa::present::hit::results_markdown(
        &request.query,
        &results,
        Timestamp::now(),
    ))
}

pub(super) fn eywa_context(client: &Client, args: &Arguments) -> Answer {
    let sessions = args.strings("sessions")?;
    if sessions.is_empty() {
        return Err(ToolError(
            "Invalid arguments: eywa_context: sessions must name at least one session".into(),
        ));
    }
    let mode = ContextMode::parse(&args.text("mode")?.unwrap_or_else(|| "smart".into()))
        .map_err(|e| ToolError(format!("Invalid arguments: eywa_context: {e}")))?;
    let budget = args.int("max_tokens", DEFAULT_MAX_TOKENS as i64, 1, MAX_TOKENS)? as usize;
    let context = client.context(&sessions, mode, budget, false)?;
    let mut out = context.text;
    for warning in &context.warnings {
        out.push_str(&format!("\n> {warning}"));
    }
    Ok(out)
}

/// A session reference as the engine takes it: `session:<id>` unless already typed.
fn session_reference(given: &str) -> String {
    match given.contains(':') {
        true => given.to_owned(),
        false => format!("session:{given}"),
    }
}

pub(super) fn eywa_related(client: &Client, args: &Arguments) -> Answer {
    let session = session_reference(&args.required_text("session")?);
    let limit = args.int("limit", 5, 1, 100)? as usize;
    let related = client.related(&session, limit)?;
    let mut out = format!("## eywa: {} related session(s)\n", related.len());
    for r in &related {
        let shared: Vec<&str> = r.shared.iter().map(|s| s.entity.name.as_str()).collect();
        out.push_str(&format!(
            "\n- {} · score {:.2}{}\n  shares: {}\n",
            episode_line(&r.episode),
            r.score,
            if r.similarity > 0.0 {
                format!(" · similarity {:.2}", r.similarity)
            } else {
                String::new()
            },
            if shared.is_empty() {
                "nothing named".to_owned()
            } else {
                shared.join(", ")
            }
        ));
    }
    Ok(out)
}

/// An Episode as a line with its id and resume command; another node as the CLI shows it.
fn episode_line(node: &eywa::model::Node) -> String {
    eywa::present::session::episode_markdown(node).unwrap_or_else(|| node_line(node))
}

pub(super) fn eywa_what_touched(client: &Client, args: &Arguments) -> Answer {
    let given = args.required_text("entity")?;
    let entity = match given.contains(':') {
        true => given,
        false => format!("file:{given}"),
    };
    let limit = args.int("limit", 10, 1, 1_000)? as usize;
    let touches = client.what_touched(
        &entity,
        &eywa::engine::EdgeFilter::default(),
        &eywa::model::Attribution::default(),
        limit,
    )?;
    let mut out = format!("## eywa: {} session(s) touched {entity}\n", touches.len());
    for t in &touches {
        out.push_str(&format!(
            "\n- {} · {}\n",
            episode_line(&t.episode),
            crate::app::render::edge_line(&t.edge)
        ));
    }
    Ok(out)
}

pub(super) fn eywa_walk(client: &Client, args: &Arguments) -> Answer {
    let node = args.required_text("node")?;
    let depth = args.int("depth", 2, 1, 4)? as u32;
    let max_nodes = args.int("max_nodes", 30, 1, 1_000)? as usize;
    let walk = client.walk(
        &node,
        depth,
        max_nodes,
        &eywa::engine::EdgeFilter::default(),
    )?;
    let mut out = format!("## eywa: walk from {node} ({} nodes)\n", walk.steps.len());
    for step in &walk.steps {
        let via = step
            .via
            .as_ref()
            .map(|(e, _)| format!(" (via {})", e.relation.as_str()))
            .unwrap_or_default();
        out.push_str(&format!(
            "{}- {}{via}\n",
            "  ".repeat(step.depth as usize),
            episode_line(&step.node)
        ));
    }
    if walk.truncated {
        out.push_str(&format!(
            "(stopped at {max_nodes} nodes: raise max_nodes)\n"
        ));
    }
    Ok(out)
}

pub(super) fn eywa_session(client: &Client, args: &Arguments) -> Answer {
    let session = session_reference(&args.required_text("session")?);
    let (node, handoff) = client.node(&session)?;
    let mut out = format!("## {}\n", episode_line(&node));
    match handoff {
        Some(h) => {
            out.push_str(&format!(
                "{} · {}\n\n",
                h.date,
                eywa::present::handoff::facts(&h)
            ));
            out.push_str(&eywa::present::handoff::body(&h));
            out.push_str(&format!(
                "\n\n{}\n",
                eywa::present::handoff::resume_line(&h)
            ));
        }
        None => out.push_str("(no handoff yet)\n"),
    }
    Ok(out)
}

pub(super) fn eywa_remember(client: &Client, args: &Arguments) -> Answer {
    let mut new = NewMemory::new(args.required_text("content")?);
    if let Some(t) = args.text("type")? {
        new.memory_type = MemoryType::parse(&t).ok_or_else(|| {
            ToolError(format!(
                "Invalid arguments: eywa_remember: type must be STM, LTM or PROCEDURAL, got {}",
                eywa::error::quote(&t)
            ))
        })?;
    }
    if let Some(value) = args.get("importance") {
        let importance = value
            .as_f64()
            .filter(|i| (0.0..=1.0).contains(i))
            .ok_or_else(|| args.bad("importance", "a number from 0 to 1", value))?;
        new.importance = importance as f32;
    }
    new.project = args.text("project")?;
    new.tags = args.strings("tags")?;
    let m = client.remember(&new)?;
    Ok(format!(
        "Remembered `{}` ({}, importance {:.2}{}). Forget it with eywa_forget(id=\"{}\").",
        m.id,
        m.memory_type.as_str(),
        m.importance,
        m.project
            .as_deref()
            .map(|p| format!(", project {p}"))
            .unwrap_or_default(),
        m.id
    ))
}

pub(super) fn eywa_recall(client: &Client, args: &Arguments) -> Answer {
    let query = RecallQuery {
        query: args.required_text("query")?,
        limit: args.int("limit", 5, 1, 100)? as usize,
        project: args.text("project")?,
        types: Vec::new(),
        tags: Vec::new(),
    };
    let hits = client.recall(&query)?;
    if hits.is_empty() {
        return Ok(format!(
            "No memory matches {}.",
            eywa::error::quote(&query.query)
        ));
    }
    let mut out = format!("## eywa: {} memor{}\n", hits.len(), plural_y(hits.len()));
    for h in &hits {
        let m = &h.memory;
        out.push_str(&format!(
            "\n- `{}` {} · score {:.2}{}: {}\n",
            m.id,
            m.memory_type.as_str(),
            h.score,
            m.project
                .as_deref()
                .map(|p| format!(" · {p}"))
                .unwrap_or_default(),
            m.content.trim()
        ));
    }
    Ok(out)
}

fn plural_y(n: usize) -> &'static str {
    if n == 1 { "y" } else { "ies" }
}

pub(super) fn eywa_forget(client: &Client, args: &Arguments) -> Answer {
    let id = args.required_text("id")?;
    let m = client.forget_memory(&id, args.text("reason")?)?;
    Ok(format!(
        "Forgot `{}`: recall no longer returns it (its history keeps it).",
        m.id
    ))
}

pub(super) fn eywa_docs(client: &Client, args: &Arguments) -> Answer {
    let limit = args.int("limit", 10, 1, 100)? as usize;
    if let Some(document) = args.text("document")? {
        let doc = client.document(&document, None, None)?;
        let d = &doc.info;
        let mut out = format!(
            "## {} · `{}` v{}\n{} · {} bytes{}\n\n",
            d.title,
            d.id,
            d.version,
            d.path,
            d.bytes,
            if d.pages > 0 {
                format!(" · {} pages", d.pages)
            } else {
                String::new()
            }
        );
        for (i, page) in doc.pages.iter().enumerate() {
            if doc.pages.len() > 1 {
                out.push_str(&format!("\n--- page {} ---\n", i + 1));
            }
            out.push_str(page.trim_end());
            out.push('\n');
        }
        return Ok(out);
    }
    if let Some(query) = args.text("query")? {
        let request = SearchRequest {
            query,
            filter: SearchFilter {
                kinds: vec!["doc".to_owned()],
                ..SearchFilter::default()
            },
            limit,
            mode: Default::default(),
            focus: None,
            as_of: None,
        };
        let results = client.search(&request)?;
        let mut out = format!("## eywa: {} document hit(s)\n", results.hits.len());
        let now = Timestamp::now();
        for h in &results.hits {
            out.push_str(&format!("\n- {}\n", eywa::present::hit::markdown(h, now)));
        }
        return Ok(out);
    }
    let (docs, total) = client.list_documents(limit, 0)?;
    let mut out = format!("## eywa: {total} document(s)\n");
    if docs.is_empty() {
        out.push_str("\nNone yet: `eywa docs add FILE…` adds markdown, text and PDF files.\n");
    }
    for d in &docs {
        out.push_str(&format!(
            "\n- `{}` **{}** v{} · {}\n",
            d.id, d.title, d.version, d.path
        ));
    }
    Ok(out)
}
