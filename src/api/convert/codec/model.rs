//! Codecs of the model's values: dates, ids, relations, layouts, what a node is, counts.

/// A day, as `YYYY-MM-DD`.
pub(crate) mod date {
    use chrono::NaiveDate;

    pub(crate) fn to(value: NaiveDate) -> String {
        value.to_string()
    }

    pub(crate) fn from(value: String, field: &str) -> Result<NaiveDate, tonic::Status> {
        NaiveDate::parse_from_str(&value, "%Y-%m-%d").map_err(|e| {
            crate::api::convert::bad(&format!("{field} {}: {e}", crate::error::quote(&value)))
        })
    }
}

/// A day that may be absent, as `YYYY-MM-DD` or empty.
pub(crate) mod maybe_date {
    use chrono::NaiveDate;

    pub(crate) fn to(value: Option<NaiveDate>) -> String {
        value.map(|d| d.to_string()).unwrap_or_default()
    }

    pub(crate) fn from(value: String, field: &str) -> Result<Option<NaiveDate>, tonic::Status> {
        if value.is_empty() {
            return Ok(None);
        }
        super::date::from(value, field).map(Some)
    }
}

/// An edge id, as its string.
pub(crate) mod edge_id {
    use crate::model::EdgeId;

    pub(crate) fn to(value: EdgeId) -> String {
        value.to_string()
    }

    pub(crate) fn from(value: String, _field: &str) -> Result<EdgeId, tonic::Status> {
        EdgeId::parse(&value).ok_or_else(|| crate::api::convert::bad("edge id"))
    }
}

/// A relation, by its name (`TOUCHED`).
pub(crate) mod relation {
    use crate::model::Relation;

    pub(crate) fn to(value: Relation) -> String {
        value.as_str().to_owned()
    }

    pub(crate) fn from(value: String, _field: &str) -> Result<Relation, tonic::Status> {
        Relation::parse(&value).ok_or_else(|| crate::api::convert::bad("relation"))
    }
}

/// How a subagent's transcript was laid out, by name.
pub(crate) mod layout {
    use crate::model::AgentLayout;

    pub(crate) fn to(value: AgentLayout) -> String {
        match value {
            AgentLayout::Inline => "inline",
            AgentLayout::RootLevel => "root_level",
            AgentLayout::Nested => "nested",
            AgentLayout::Workflow => "workflow",
        }
        .to_owned()
    }

    pub(crate) fn from(value: String, _field: &str) -> Result<AgentLayout, tonic::Status> {
        match value.as_str() {
            "inline" => Ok(AgentLayout::Inline),
            "root_level" => Ok(AgentLayout::RootLevel),
            "nested" => Ok(AgentLayout::Nested),
            "workflow" => Ok(AgentLayout::Workflow),
            _ => Err(crate::api::convert::bad("agent layout")),
        }
    }
}

/// What a node is, as the detail its message carries.
pub(crate) mod node_kind {
    use crate::api::pb;
    use crate::api::pb::node::Detail;
    use crate::model::{DecayState, Document, Entity, EntityType, Memory, MemoryType, NodeKind};

    pub(crate) fn to(value: NodeKind) -> Option<Detail> {
        Some(match value {
            NodeKind::Episode(e) => Detail::Episode((*e).into()),
            NodeKind::Entity(e) => Detail::Entity(pb::Entity {
                entity_type: e.entity_type.as_str().to_owned(),
                aliases: e.aliases,
                path: e.path.unwrap_or_default(),
            }),
            NodeKind::Document(d) => Detail::Document(pb::Document {
                mime: d.mime,
                path: d.path,
                hash: d.hash,
            }),
            NodeKind::Memory(m) => Detail::Memory(pb::MemoryNode {
                memory_type: m.memory_type.as_str().to_owned(),
                importance: m.importance,
                last_access: Some(crate::api::convert::timestamp(m.decay_state.last_access)),
                weight: m.decay_state.weight,
            }),
        })
    }

    pub(crate) fn from(value: Option<Detail>, _field: &str) -> Result<NodeKind, tonic::Status> {
        Ok(
            match value.ok_or_else(|| crate::api::convert::bad("node without its details"))? {
                Detail::Episode(e) => NodeKind::Episode(Box::new(e.try_into()?)),
                Detail::Entity(e) => NodeKind::Entity(Entity {
                    entity_type: EntityType::parse(&e.entity_type)
                        .ok_or_else(|| crate::api::convert::bad("entity type"))?,
                    aliases: e.aliases,
                    path: crate::api::convert::some(e.path),
                }),
                Detail::Document(d) => NodeKind::Document(Document {
                    mime: d.mime,
                    path: d.path,
                    hash: d.hash,
                }),
                Detail::Memory(m) => NodeKind::Memory(Memory {
                    memory_type: MemoryType::parse(&m.memory_type)
                        .ok_or_else(|| crate::api::convert::bad("memory type"))?,
                    importance: m.importance,
                    decay_state: DecayState {
                        last_access: crate::api::convert::time(m.last_access),
                        weight: m.weight,
                    },
                }),
            },
        )
    }
}

/// A search mode by name; one not known reads as the default.
pub(crate) mod search_mode {
    use crate::retrieve::SearchMode;

    pub(crate) fn to(value: SearchMode) -> String {
        value.as_str().to_owned()
    }

    pub(crate) fn from(value: String, _field: &str) -> Result<SearchMode, tonic::Status> {
        Ok(SearchMode::parse(&value).unwrap_or_default())
    }
}

/// The store's counts, flattened on the wire: sessions, agents, episodes, entities,
/// edges, sources, skipped lines.
pub(crate) mod counts {
    use crate::engine::Counts;

    type Wire = (u64, u64, u64, u64, u64, u64, u64);

    pub(crate) fn to(c: Counts) -> Wire {
        (
            c.sessions,
            c.agents,
            c.episodes,
            c.entities,
            c.edges,
            c.sources,
            c.skipped_lines,
        )
    }

    pub(crate) fn from(w: Wire) -> Result<Counts, tonic::Status> {
        let (sessions, agents, episodes, entities, edges, sources, skipped_lines) = w;
        Ok(Counts {
            sessions,
            agents,
            episodes,
            entities,
            edges,
            sources,
            skipped_lines,
        })
    }
}

/// Where a page sits in the whole list: total, limit, offset, has more.
pub(crate) mod page {
    use crate::api::pb;

    pub(crate) fn to(
        (total, limit, offset, has_more): (u64, usize, usize, bool),
    ) -> Option<pb::Pagination> {
        Some(crate::api::convert::pagination(
            total, limit, offset, has_more,
        ))
    }

    pub(crate) fn from(
        value: Option<pb::Pagination>,
    ) -> Result<(u64, usize, usize, bool), tonic::Status> {
        Ok(crate::api::convert::page_of(value))
    }
}

/// Tokens used, flattened on the wire: input, output, cache creation, cache read.
pub(crate) mod tokens {
    use crate::model::TokenUsage;

    pub(crate) fn to(t: TokenUsage) -> (u64, u64, u64, u64) {
        (t.input, t.output, t.cache_creation, t.cache_read)
    }

    pub(crate) fn from(w: (u64, u64, u64, u64)) -> Result<TokenUsage, tonic::Status> {
        let (input, output, cache_creation, cache_read) = w;
        Ok(TokenUsage {
            input,
            output,
            cache_creation,
            cache_read,
        })
    }
}

/// A node held behind an `Arc`, as its message.
pub(crate) mod shared_node {
    use std::sync::Arc;

    use crate::api::pb;
    use crate::model::Node;

    pub(crate) fn to(value: Arc<Node>) -> Option<pb::Node> {
        Some(Arc::unwrap_or_clone(value).into())
    }

    pub(crate) fn from(value: Option<pb::Node>, field: &str) -> Result<Arc<Node>, tonic::Status> {
        Ok(Arc::new(super::super::present::from(value, field)?))
    }
}

/// The edge a walk came by and the node it came from: `via`, `from`.
pub(crate) mod via {
    use crate::api::pb;
    use crate::model::{Edge, NodeId};

    pub(crate) fn to(value: Option<(Edge, NodeId)>) -> (Option<pb::Edge>, String) {
        match value {
            Some((edge, from)) => (Some(edge.into()), from.to_string()),
            None => (None, String::new()),
        }
    }

    pub(crate) fn from(
        (via, from): (Option<pb::Edge>, String),
    ) -> Result<Option<(Edge, NodeId)>, tonic::Status> {
        match via {
            Some(edge) => Ok(Some((
                edge.try_into()?,
                crate::api::convert::node_id(&from)?,
            ))),
            None => Ok(None),
        }
    }
}

/// A page number counted from 1; 0 on the wire is no page.
pub(crate) mod page_number {
    pub(crate) fn to(value: Option<u32>) -> u32 {
        value.unwrap_or(0)
    }

    pub(crate) fn from(value: u32, _field: &str) -> Result<Option<u32>, tonic::Status> {
        Ok((value > 0).then_some(value))
    }
}

/// A memory type by name (`STM`, `LTM`, `PROCEDURAL`, any case); blank is STM.
pub(crate) mod memory_type {
    use crate::model::MemoryType;

    pub(crate) fn to(value: MemoryType) -> String {
        value.as_str().to_owned()
    }

    pub(crate) fn from(value: String, field: &str) -> Result<MemoryType, tonic::Status> {
        if value.trim().is_empty() {
            return Ok(MemoryType::Stm);
        }
        super::maybe_memory_type::from(value, field).map(|t| t.unwrap_or(MemoryType::Stm))
    }
}

/// A memory type that may be absent (blank).
pub(crate) mod maybe_memory_type {
    use crate::model::MemoryType;

    pub(crate) fn to(value: Option<MemoryType>) -> String {
        value.map(|t| t.as_str().to_owned()).unwrap_or_default()
    }

    pub(crate) fn from(value: String, field: &str) -> Result<Option<MemoryType>, tonic::Status> {
        if value.trim().is_empty() {
            return Ok(None);
        }
        MemoryType::parse(&value).map(Some).ok_or_else(|| {
            crate::api::status::invalid(format!(
                "{field} {} is not STM, LTM or PROCEDURAL",
                crate::error::quote(&value)
            ))
        })
    }
}

/// Memory types by name.
pub(crate) mod memory_types {
    use crate::model::MemoryType;

    pub(crate) fn to(value: Vec<MemoryType>) -> Vec<String> {
        value.into_iter().map(|t| t.as_str().to_owned()).collect()
    }

    pub(crate) fn from(value: Vec<String>, field: &str) -> Result<Vec<MemoryType>, tonic::Status> {
        value
            .into_iter()
            .map(|v| super::memory_type::from(v, field))
            .collect()
    }
}

/// Why a memory's version was written, by name.
pub(crate) mod change {
    use crate::memory::Change;

    pub(crate) fn to(value: Change) -> String {
        value.as_str().to_owned()
    }

    pub(crate) fn from(value: String, field: &str) -> Result<Change, tonic::Status> {
        Change::parse(&value).ok_or_else(|| {
            crate::api::convert::bad(&format!("{field} {}", crate::error::quote(&value)))
        })
    }
}

/// How far a memory has faded, flattened: last access, weight.
pub(crate) mod decay {
    use crate::model::{DecayState, Timestamp};

    pub(crate) fn to(d: DecayState) -> (Option<prost_types::Timestamp>, f32) {
        (
            Some(crate::api::convert::timestamp(d.last_access)),
            d.weight,
        )
    }

    pub(crate) fn from(
        (last_access, weight): (Option<prost_types::Timestamp>, f32),
    ) -> Result<DecayState, tonic::Status> {
        let last_access: Timestamp = crate::api::convert::time(last_access);
        Ok(DecayState {
            last_access,
            weight,
        })
    }
}

/// An importance as an `optional float`: absent is the default (0.5).
pub(crate) mod importance {
    pub(crate) fn to(value: f32) -> Option<f32> {
        Some(value)
    }

    pub(crate) fn from(value: Option<f32>, _field: &str) -> Result<f32, tonic::Status> {
        Ok(value.unwrap_or(crate::memory::DEFAULT_IMPORTANCE))
    }
}

/// What an update changes, flattened: content, type, importance, tags (sent when
/// `set_tags`), reason.
pub(crate) mod memory_update {
    use crate::memory::MemoryUpdate;

    type Wire = (
        Option<String>,
        String,
        Option<f32>,
        Vec<String>,
        bool,
        String,
    );

    pub(crate) fn to(u: MemoryUpdate) -> Wire {
        (
            u.content,
            super::maybe_memory_type::to(u.memory_type),
            u.importance,
            u.tags.clone().unwrap_or_default(),
            u.tags.is_some(),
            u.reason.unwrap_or_default(),
        )
    }

    pub(crate) fn from(
        (content, memory_type, importance, tags, set_tags, reason): Wire,
    ) -> Result<MemoryUpdate, tonic::Status> {
        Ok(MemoryUpdate {
            content,
            memory_type: super::maybe_memory_type::from(memory_type, "memory_type")?,
            importance,
            tags: set_tags.then_some(tags),
            reason: crate::api::convert::some(reason),
        })
    }
}

/// Which memories to list, flattened: project, types, tags, whether forgotten ones too.
pub(crate) mod memory_filter {
    use crate::memory::MemoryFilter;

    type Wire = (String, Vec<String>, Vec<String>, bool);

    pub(crate) fn to(f: MemoryFilter) -> Wire {
        (
            f.project.unwrap_or_default(),
            super::memory_types::to(f.types),
            f.tags,
            f.include_forgotten,
        )
    }

    pub(crate) fn from(
        (project, types, tags, include_forgotten): Wire,
    ) -> Result<MemoryFilter, tonic::Status> {
        Ok(MemoryFilter {
            project: Some(project.trim().to_owned()).filter(|p| !p.is_empty()),
            types: super::memory_types::from(types, "memory_types")?,
            tags: tags.into_iter().map(|t| t.trim().to_lowercase()).collect(),
            include_forgotten,
        })
    }
}

/// (type, name) pairs as `Type:name` strings.
pub(crate) mod pairs {
    pub(crate) fn to(value: Vec<(String, String)>) -> Vec<String> {
        value.into_iter().map(|(t, n)| format!("{t}:{n}")).collect()
    }

    pub(crate) fn from(
        value: Vec<String>,
        field: &str,
    ) -> Result<Vec<(String, String)>, tonic::Status> {
        value
            .into_iter()
            .map(|v| {
                v.split_once(':')
                    .map(|(t, n)| (t.to_owned(), n.to_owned()))
                    .ok_or_else(|| {
                        crate::api::convert::bad(&format!("{field} {}", crate::error::quote(&v)))
                    })
            })
            .collect()
    }
}

/// What adding a file did, flattened: `new`/`changed`/`unchanged` and the version, or
/// the reason it could not be read.
pub(crate) mod added {
    use crate::api::pb;
    use crate::docs::{Added, DocumentInfo};

    type Wire = (String, Option<pb::DocumentInfo>, String);

    pub(crate) fn to(value: Result<(DocumentInfo, Added), String>) -> Wire {
        match value {
            Ok((info, added)) => (added.as_str().to_owned(), Some(info.into()), String::new()),
            Err(why) => (String::new(), None, why),
        }
    }

    pub(crate) fn from(
        (added, document, error): Wire,
    ) -> Result<Result<(DocumentInfo, Added), String>, tonic::Status> {
        if !error.is_empty() {
            return Ok(Err(error));
        }
        let added = Added::parse(&added)
            .ok_or_else(|| crate::api::convert::bad(&format!("added {added:?}")))?;
        let info =
            document.ok_or_else(|| crate::api::convert::bad("outcome without its document"))?;
        Ok(Ok((info.try_into()?, added)))
    }
}
