//! Content types of what eywa indexes beside transcripts, and how their text-index
//! document ids read.

/// The content type memories are indexed as.
pub const MEMORY_TYPE: &str = "memory_item";

/// The content type documents a user adds are indexed as.
pub const DOCUMENT_TYPE: &str = "document";

/// Content types whose text is embedded, in chunks: what carries meaning. Tool calls are
/// not.
pub const EMBEDDED_TYPES: [&str; 10] = [
    "user_message",
    "assistant_response",
    "compact_summary",
    "subagent_summary",
    "summary_label",
    "handoff",
    "plan",
    "memory",
    MEMORY_TYPE,
    DOCUMENT_TYPE,
];

/// The document id and page of a text-index document id of a user's document
/// (`doc:<id>#p<page>` for a PDF page, `doc:<id>#text`); `None` for any other.
pub fn document_passage(doc: &str) -> Option<(String, Option<u32>)> {
    let rest = doc.strip_prefix("doc:")?;
    let (id, part) = rest.split_once('#')?;
    let page = part.strip_prefix('p').and_then(|p| p.parse().ok());
    Some((id.to_owned(), page))
}
