//! Codecs of the model's values: dates, ids, relations, layouts, what a node is, counts.

/// A day, as `YYYY-MM-DD`.
pub(crate) mod date {
    use chrono::NaiveDate;

    pub(crate) fn to(value: NaiveDate) -> String {
        value.to_string()
    }

    pub(crate) fn from(value: String, field: &str) -> Result<NaiveDate, tonic::Status> {
        NaiveDate::parse_from_str(&value, "%Y-%m-%d")
            .map_err(|e| crate::api::convert::bad(&format!("{field} `{value}`: {e}")))
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
            NodeKind::Memory(m) => Detail::Memory(pb::Memory {
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
    use crate::graph::Counts;

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
