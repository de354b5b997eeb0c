//! Transcript → episode, handoff, entities and relations. Pure functions: no storage.

mod facts;
mod handoff;
mod handoff_doc;
mod imported;
mod keywords;
mod project;
mod redact;
mod scrub;

pub use self::facts::{Origin, entity, episode_facts, spawned};
pub use self::handoff::{headline, substance};
pub use self::handoff_doc::{
    HandoffDocError, HandoffFrontmatter, HandoffSections, IndexEntry, build_index, handoff_path,
    parse_index, parse_markdown, read_index, render_markdown,
};
pub use self::imported::{imported_facts, markdown_files};
pub use self::keywords::{keywords, text_keywords};
pub use self::project::{ProjectPath, project_of};
pub use self::redact::{Redaction, RedactionCounts, redact};
pub use self::scrub::{redact_in_place, scrub, scrub_read_point};
pub use crate::model::SessionFacts;
