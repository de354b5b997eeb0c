//! What each source becomes in the text index and the embedding queue: a session's
//! passages (with the message before each as context), its handoff and summary labels,
//! and documents (plans, memory files) whole.

use super::TextDoc;
use crate::claude::Passage;
use crate::model::{Handoff, Node};

/// What one read of a transcript gives the text index.
pub(crate) struct IndexInput<'a> {
    pub source: &'a str,
    /// The episode (a session or a subagent run).
    pub node: &'a Node,
    pub handoff: Option<&'a Handoff>,
    pub passages: &'a [Passage],
    /// `summary` labels of the session's messages.
    pub labels: &'a [String],
    /// The source was read from its start.
    pub whole: bool,
}

impl IndexInput<'_> {
    /// The session a hit leads to: the session, or a subagent's parent.
    fn session(&self) -> String {
        let Some(e) = self.node.episode() else {
            return String::new();
        };
        match &e.agent {
            Some(agent) => agent.parent_session.clone().unwrap_or_default(),
            None => e.session_id.clone(),
        }
    }

    fn project(&self) -> String {
        self.node
            .episode()
            .map(|e| e.project.to_lowercase())
            .unwrap_or_default()
    }

    fn agent(&self) -> Option<String> {
        let agent = self.node.episode()?.agent.as_ref()?;
        Some(
            agent
                .agent_type
                .clone()
                .unwrap_or_else(|| agent.agent_id.clone()),
        )
    }
}

/// Characters of the message before that a message is embedded with.
const EMBED_CONTEXT_CHARS: usize = 300;

/// The last `n` characters of `text`, from a word start when there is one.
fn tail(text: &str, n: usize) -> &str {
    let count = text.chars().count();
    if count <= n {
        return text;
    }
    let start = text.char_indices().nth(count - n).map_or(0, |(i, _)| i);
    match text[start..].find(char::is_whitespace) {
        Some(space) if space < 40 => text[start + space..].trim_start(),
        _ => &text[start..],
    }
}

/// The documents of a read's passages. `with_context`: a message carries the one before
/// it (for the text index: a question and its answer hold the words between them);
/// without, the end of it (what semantic memory embeds).
pub(crate) fn passage_docs(
    input: &IndexInput<'_>,
    passages: &[Passage],
    with_context: bool,
) -> Vec<TextDoc> {
    let session = input.session();
    let project = input.project();
    let own_agent = input.agent();
    let start = input.node.created_at.0;
    passages
        .iter()
        .map(|p| {
            let lead = match &p.context {
                Some(context) if with_context => context.as_str(),
                // Embedded with the end of the message before: what a turn answers says
                // what it means (LoCoMo dev, semantic alone: R@1 0.477 without, 0.533 with).
                Some(context) => tail(context, EMBED_CONTEXT_CHARS),
                None => "",
            };
            let (text, lead) = match lead {
                "" => (p.text.clone(), 0),
                lead => (format!("{lead}\n{}", p.text), lead.chars().count() + 1),
            };
            let id = match &p.agent {
                Some(run) => format!("{}#{run}#{}.{}", input.source, p.seq, p.part),
                None => format!("{}#{}.{}", input.source, p.seq, p.part),
            };
            TextDoc {
                id,
                source: input.source.to_owned(),
                session: session.clone(),
                project: project.clone(),
                kind: p.kind.as_str().to_owned(),
                agent: p.agent.clone().or_else(|| own_agent.clone()),
                timestamp: p.timestamp.map_or(start, |t| t.0),
                text,
                message: p.uuid.clone(),
                lead,
                page: None,
            }
        })
        .collect()
}

/// The session-level documents: the handoff, the summary labels, a subagent's report.
pub(crate) fn session_docs(input: &IndexInput<'_>) -> Vec<TextDoc> {
    let session = input.session();
    let project = input.project();
    let at = input.node.updated_at.0;
    let doc = |suffix: &str, kind: &str, text: String| TextDoc {
        id: format!("{}#{suffix}", input.source),
        source: input.source.to_owned(),
        session: session.clone(),
        project: project.clone(),
        kind: kind.to_owned(),
        agent: input.agent(),
        timestamp: at,
        text,
        message: None,
        lead: 0,
        page: None,
    };
    let mut docs = Vec::new();
    if let Some(h) = input.handoff {
        let s = &h.sections;
        let mut text = vec![h.headline.clone(), h.keywords.join(" ")];
        text.extend(s.what_happened.iter().cloned());
        text.extend(s.insights.iter().map(|(t, e)| format!("{t}: {e}")));
        text.extend(s.key_files.iter().cloned());
        text.extend(s.open_threads.iter().cloned());
        docs.push(doc("handoff", "handoff", text.join("\n")));
    }
    for label in input.labels {
        // Named by its text: a read of what was appended adds labels, never renames them.
        docs.push(doc(&label_suffix(label), "summary_label", label.clone()));
    }
    if let Some(agent) = input.node.episode().and_then(|e| e.agent.as_ref())
        && let Some(report) = &agent.summary
    {
        let suffix = format!("report.{}", agent.agent_id);
        docs.push(doc(&suffix, "subagent_summary", report.clone()));
    }
    docs
}

/// The id suffix of a label's document.
fn label_suffix(label: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(label.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("label.{hex}")
}

/// A plan or memory file's document.
pub(crate) fn document_docs(source: &str, node: &Node, session: &str) -> Vec<TextDoc> {
    let kind = if node.properties.get("kind").map(String::as_str) == Some("memory") {
        "memory"
    } else {
        "plan"
    };
    vec![TextDoc {
        id: format!("{source}#doc"),
        source: source.to_owned(),
        session: session.to_owned(),
        project: node
            .properties
            .get("project")
            .map(|p| p.to_lowercase())
            .unwrap_or_default(),
        kind: kind.to_owned(),
        agent: None,
        timestamp: node.updated_at.0,
        text: format!("{}\n{}", node.name, node.content.as_deref().unwrap_or("")),
        message: None,
        lead: node.name.chars().count() + 1,
        page: None,
    }]
}
