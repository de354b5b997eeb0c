//! Edges of the temporal graph: relations, evidence, and the two time axes (valid and
//! recorded) that let a fact be superseded without being deleted.

use serde::{Deserialize, Serialize};

use super::{EdgeId, NodeId, Timestamp};

/// What an edge says about its endpoints. Stored and shown in SCREAMING_SNAKE case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum Relation {
    /// Episode → Project: the session worked in the project.
    Touched,
    /// Episode → File.
    Read,
    /// Episode → File: the session changed it (`Edit`, `MultiEdit`, `NotebookEdit`).
    Edited,
    /// Episode → File: the session wrote it whole (`Write`).
    Created,
    /// Episode → Tool.
    Used,
    /// Episode → Concept, or Person (a commit author its commands named).
    Mentions,
    /// Episode → subagent Episode.
    Spawned,
    /// Episode → Episode: resume, compaction, same slug.
    Continues,
    /// Episode → previous Episode in the same project.
    Follows,
    /// Episode → Document.
    HasPlan,
    /// Project → Document: the project's memory file (`memory/MEMORY.md`).
    HasMemory,
    /// File → Project; Person → Organization.
    PartOf,
    /// Memory → Entity.
    About,
    /// Memory → Episode.
    DerivedFrom,
}

impl Relation {
    /// Every relation, in tag order.
    pub const ALL: [Relation; 14] = [
        Relation::Touched,
        Relation::Read,
        Relation::Edited,
        Relation::Created,
        Relation::Used,
        Relation::Mentions,
        Relation::Spawned,
        Relation::Continues,
        Relation::Follows,
        Relation::HasPlan,
        Relation::PartOf,
        Relation::About,
        Relation::DerivedFrom,
        Relation::HasMemory,
    ];

    /// The name as stored and shown: `TOUCHED`, `HAS_PLAN`, …
    pub fn as_str(self) -> &'static str {
        match self {
            Relation::Touched => "TOUCHED",
            Relation::Read => "READ",
            Relation::Edited => "EDITED",
            Relation::Created => "CREATED",
            Relation::Used => "USED",
            Relation::Mentions => "MENTIONS",
            Relation::Spawned => "SPAWNED",
            Relation::Continues => "CONTINUES",
            Relation::Follows => "FOLLOWS",
            Relation::HasPlan => "HAS_PLAN",
            Relation::HasMemory => "HAS_MEMORY",
            Relation::PartOf => "PART_OF",
            Relation::About => "ABOUT",
            Relation::DerivedFrom => "DERIVED_FROM",
        }
    }

    /// A one-byte tag for index keys; stable on disk.
    pub fn tag(self) -> u8 {
        match self {
            Relation::Touched => 1,
            Relation::Read => 2,
            Relation::Edited => 3,
            Relation::Created => 4,
            Relation::Used => 5,
            Relation::Mentions => 6,
            Relation::Spawned => 7,
            Relation::Continues => 8,
            Relation::Follows => 9,
            Relation::HasPlan => 10,
            Relation::PartOf => 11,
            Relation::About => 12,
            Relation::DerivedFrom => 13,
            Relation::HasMemory => 14,
        }
    }

    /// The relation a tag stands for; `None` for an unknown tag.
    pub fn from_tag(tag: u8) -> Option<Self> {
        Relation::ALL.into_iter().find(|r| r.tag() == tag)
    }

    /// Parses a relation name, case-insensitively.
    pub fn parse(s: &str) -> Option<Self> {
        let upper = s.trim().to_ascii_uppercase();
        Relation::ALL.into_iter().find(|r| r.as_str() == upper)
    }
}

impl std::fmt::Display for Relation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a fact was seen: a document (or session) and a chunk (or message) in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocRef {
    /// The document, or the session's Episode, the fact was seen in.
    pub doc_id: NodeId,
    /// The chunk or message in it: `msg:<uuid>` for a transcript line.
    pub chunk_id: String,
    /// How strongly it shows the fact; 1.0 for a line that states it.
    pub score: f32,
}

/// A directed, typed fact between two nodes, with time on two axes: when it held in the
/// world (`valid_from`..`valid_to`) and when eywa recorded it (`recorded_at`) and learned it
/// was superseded (`expired_at`). Nothing is deleted by a later fact; it is expired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    /// Derived from the endpoints and relation, so every version of the fact shares it.
    pub id: EdgeId,
    /// The node the edge goes from.
    pub src: NodeId,
    /// The node the edge goes to.
    pub dst: NodeId,
    /// What the edge says of `src` and `dst`.
    pub relation: Relation,
    /// How sure eywa is of the fact, 0 to 1 (see [`Edge::supported`]): 1.0 for facts
    /// that are the source's structure (a session in its project, a subagent it started,
    /// sessions in sequence, a memory's links); for what tool calls and words show, from
    /// how many messages support it.
    pub confidence: f32,
    /// When the fact began to hold in the world.
    pub valid_from: Timestamp,
    /// When it stopped holding (inclusive); `None` while it still holds.
    #[serde(default)]
    pub valid_to: Option<Timestamp>,
    /// When eywa recorded this version.
    pub recorded_at: Timestamp,
    /// When eywa learned this version was superseded; `None` for the current one.
    #[serde(default)]
    pub expired_at: Option<Timestamp>,
    /// The lines or chunks that show the fact; empty for derived and structural edges.
    #[serde(default)]
    pub evidence: Vec<DocRef>,
}

impl Edge {
    /// The confidence of a fact `support` messages show and `against` contradict (calls
    /// that named the file or tool and came back with an error): `1 − 0.5^(k + 1)` for
    /// `k = support − against` messages, so one message gives 0.75, two 0.875, three
    /// 0.9375; 0.25 when every call failed (the session tried, and nothing came of it).
    /// A support of 0 (not counted: a read state saved before counts were kept) counts
    /// as one message.
    pub fn supported(support: u32, against: u32) -> f32 {
        if support > 0 && against >= support {
            return 0.25;
        }
        let k = support.saturating_sub(against).clamp(1, 30);
        1.0 - 0.5f32.powi(i32::try_from(k).unwrap_or(30) + 1)
    }

    /// A new edge whose id derives from its endpoints and relation.
    pub fn new(src: NodeId, relation: Relation, dst: NodeId, valid_from: Timestamp) -> Self {
        Edge {
            id: EdgeId::derive(src, relation.as_str(), dst),
            src,
            dst,
            relation,
            confidence: 1.0,
            valid_from,
            valid_to: None,
            recorded_at: Timestamp::now(),
            expired_at: None,
            evidence: Vec::new(),
        }
    }

    /// The same fact: everything but the record-time axis is equal.
    pub fn same_fact(&self, other: &Edge) -> bool {
        self.id == other.id
            && self.src == other.src
            && self.dst == other.dst
            && self.relation == other.relation
            && self.confidence == other.confidence
            && self.valid_from == other.valid_from
            && self.valid_to == other.valid_to
            && self.evidence == other.evidence
    }

    /// Whether eywa held this version at record time `at`.
    pub fn recorded_at_time(&self, at: Timestamp) -> bool {
        self.recorded_at <= at && self.expired_at.is_none_or(|e| e > at)
    }

    /// Whether the fact held in the world at `at`.
    pub fn valid_at(&self, at: Timestamp) -> bool {
        self.valid_from <= at && self.valid_to.is_none_or(|to| to >= at)
    }

    /// Whether the fact held at some point within `[from, until]` (either bound open).
    pub fn valid_within(&self, from: Option<Timestamp>, until: Option<Timestamp>) -> bool {
        let starts_before_end = until.is_none_or(|u| self.valid_from <= u);
        let ends_after_start = match (from, self.valid_to) {
            (Some(f), Some(to)) => to >= f,
            _ => true,
        };
        starts_before_end && ends_after_start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relation_names_and_tags_round_trip() {
        for r in Relation::ALL {
            assert_eq!(Relation::parse(r.as_str()), Some(r));
            assert_eq!(Relation::from_tag(r.tag()), Some(r));
        }
        assert_eq!(Relation::parse("has_plan"), Some(Relation::HasPlan));
        assert_eq!(Relation::parse("LIKES"), None);
    }

    #[test]
    fn validity_window_overlap() {
        let mut e = Edge::new(
            NodeId::episode("a"),
            Relation::Touched,
            NodeId::project("/p"),
            Timestamp(100),
        );
        e.valid_to = Some(Timestamp(200));
        assert!(e.valid_within(None, None));
        assert!(e.valid_within(Some(Timestamp(150)), Some(Timestamp(300))));
        assert!(e.valid_within(Some(Timestamp(200)), None));
        assert!(!e.valid_within(Some(Timestamp(201)), None));
        assert!(!e.valid_within(None, Some(Timestamp(99))));
        e.valid_to = None;
        assert!(e.valid_within(Some(Timestamp(10_000)), None));
    }
}
