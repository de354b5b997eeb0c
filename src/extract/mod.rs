//! Transcript → episode, handoff, entities and relations. Pure functions: no storage.

/// The version of what extraction makes of a file: raised when a change to it (a
/// handoff's sections, a subagent's report) should reach files already read, which are
/// then read again whole on the next ingest. 3: repositories changed from a session's
/// own are its projects too; every summary label of a file is its session's. 4: commit
/// authors are Person entities, their mail domains Organizations.
pub const EXTRACT_VERSION: u32 = 4;

/// A plan over this many bytes is likely not a plan: skipped, with a warning (seed 001).
pub const MAX_PLAN_BYTES: u64 = 100 * 1024;
/// A plan under this many characters is too small to be of use: skipped (seed 001).
pub const MIN_PLAN_CHARS: usize = 50;

/// Whether a text is worth serving as a plan: 50 characters or more (trimmed) and at most
/// 100 KB.
pub fn is_plan(text: &str) -> bool {
    text.len() as u64 <= MAX_PLAN_BYTES && text.trim().chars().count() >= MIN_PLAN_CHARS
}

mod facts;
mod handoff;
mod handoff_doc;
mod imported;
mod keywords;
mod project;
mod redact;
mod scrub;
mod sections;

pub(crate) use self::facts::person_facts;
pub use self::facts::{
    FIRST_PROMPT, INDEX_ONLY, INDEX_SUMMARY, MESSAGE_COUNT, Origin, entity, episode_facts, spawned,
};
pub use self::handoff::{headline, substance};
pub use self::handoff_doc::{
    HandoffDocError, HandoffFrontmatter, HandoffSections, IndexEntry, build_index, handoff_path,
    parse_index, parse_markdown, read_index, render_markdown,
};
pub use self::imported::{imported_facts, markdown_files};
pub use self::keywords::{keywords, text_keywords};
pub use self::project::{ProjectPath, project_of};
pub use self::redact::{Redaction, RedactionCounts, redact};
pub use self::scrub::{redact_handoff, redact_in_place, scrub, scrub_read_point};
pub use self::sections::subagent_key_files;
pub use crate::model::SessionFacts;
