//! Conversions written once for both ways. [`wire!`] takes a domain struct, its proto
//! message and one list of fields, each through a codec (how its value looks on the wire
//! and how it reads back), and writes `From<Domain> for Message` (the server's answer) and
//! `TryFrom<Message> for Domain` (the client reading it). Both destructure exhaustively:
//! a field added on either side is a compile error until it is listed.
//!
//! ```text
//! wire! {
//!     Domain <=> pb::Message {
//!         same_name,                 // the same type both ways
//!         maybe: text,               // Option<String> <-> String, empty for none
//!         ours = theirs: size,       // renamed on the wire, usize <-> u64
//!     }
//!     to_wire(d) { computed: d.method() }    // only on the wire, from &mut Domain
//!     from_wire(m) { unsent: Vec::new() }    // only in the domain, from &mut Message
//! }
//! ```
//!
//! The computed fields are worked out first, in order, from the value as it came: one may
//! take (`std::mem::take`) what an earlier one has read.

/// How a field's value goes to the wire (`to`) and reads back (`from`).
pub mod codec {
    use crate::api::convert::bad;

    /// The same type both ways.
    pub mod same {
        pub fn to<T>(value: T) -> T {
            value
        }

        pub fn from<T>(value: T) -> Result<T, tonic::Status> {
            Ok(value)
        }
    }

    /// A list of messages.
    pub mod messages {
        use tonic::Status;

        pub fn to<D, W: From<D>>(values: Vec<D>) -> Vec<W> {
            values.into_iter().map(W::from).collect()
        }

        pub fn from<D: TryFrom<W, Error = Status>, W>(values: Vec<W>) -> Result<Vec<D>, Status> {
            values.into_iter().map(D::try_from).collect()
        }
    }

    /// A message that may be absent on both sides.
    pub mod maybe {
        use tonic::Status;

        pub fn to<D, W: From<D>>(value: Option<D>) -> Option<W> {
            value.map(W::from)
        }

        pub fn from<D: TryFrom<W, Error = Status>, W>(
            value: Option<W>,
        ) -> Result<Option<D>, Status> {
            value.map(D::try_from).transpose()
        }
    }

    /// A message the domain always has and proto3 makes optional: absent reads as the
    /// domain's default.
    pub mod required {
        use tonic::Status;

        pub fn to<D, W: From<D>>(value: D) -> Option<W> {
            Some(W::from(value))
        }

        pub fn from<D: TryFrom<W, Error = Status> + Default, W>(
            value: Option<W>,
        ) -> Result<D, Status> {
            value.map_or_else(|| Ok(D::default()), D::try_from)
        }
    }

    /// Through `From` both ways.
    pub mod into {
        pub fn to<A, B: From<A>>(value: A) -> B {
            B::from(value)
        }

        pub fn from<A, B: From<A>>(value: A) -> Result<B, tonic::Status> {
            Ok(B::from(value))
        }
    }

    /// A collection of another kind on the wire (maps, sets).
    pub mod collect {
        pub fn to<A: IntoIterator, B: FromIterator<A::Item>>(values: A) -> B {
            values.into_iter().collect()
        }

        pub fn from<A: IntoIterator, B: FromIterator<A::Item>>(
            values: A,
        ) -> Result<B, tonic::Status> {
            Ok(values.into_iter().collect())
        }
    }

    /// Text that may be absent: the empty string on the wire.
    pub mod text {
        pub fn to(value: Option<String>) -> String {
            value.unwrap_or_default()
        }

        pub fn from(value: String) -> Result<Option<String>, tonic::Status> {
            Ok(crate::api::convert::some(value))
        }
    }

    /// A moment; absent on the wire reads as the epoch.
    pub mod time {
        use crate::model::Timestamp;

        pub fn to(value: Timestamp) -> Option<prost_types::Timestamp> {
            Some(crate::api::convert::timestamp(value))
        }

        pub fn from(value: Option<prost_types::Timestamp>) -> Result<Timestamp, tonic::Status> {
            Ok(crate::api::convert::time(value))
        }
    }

    /// A moment that may be absent.
    pub mod maybe_time {
        use crate::model::Timestamp;

        pub fn to(value: Option<Timestamp>) -> Option<prost_types::Timestamp> {
            value.map(crate::api::convert::timestamp)
        }

        pub fn from(
            value: Option<prost_types::Timestamp>,
        ) -> Result<Option<Timestamp>, tonic::Status> {
            Ok(value.map(|t| crate::api::convert::time(Some(t))))
        }
    }

    /// A count in memory, a `uint64` on the wire (saturating when it reads back).
    pub mod size {
        pub fn to(value: usize) -> u64 {
            value as u64
        }

        pub fn from(value: u64) -> Result<usize, tonic::Status> {
            Ok(usize::try_from(value).unwrap_or(usize::MAX))
        }
    }

    /// A count in memory, a `uint32` on the wire (saturating both ways).
    pub mod size32 {
        pub fn to(value: usize) -> u32 {
            crate::api::convert::n32(value)
        }

        pub fn from(value: u32) -> Result<usize, tonic::Status> {
            Ok(value as usize)
        }
    }

    /// A byte-sized number, a `uint32` on the wire.
    pub mod small {
        pub fn to(value: u8) -> u32 {
            u32::from(value)
        }

        pub fn from(value: u32) -> Result<u8, tonic::Status> {
            u8::try_from(value).map_err(|_| super::bad("number over 255"))
        }
    }

    /// A node id, as its string.
    pub mod id {
        use crate::model::NodeId;

        pub fn to(value: NodeId) -> String {
            value.to_string()
        }

        pub fn from(value: String) -> Result<NodeId, tonic::Status> {
            crate::api::convert::node_id(&value)
        }
    }

    /// A path, as its string.
    pub mod path {
        use std::path::PathBuf;

        pub fn to(value: PathBuf) -> String {
            value.display().to_string()
        }

        pub fn from(value: String) -> Result<PathBuf, tonic::Status> {
            Ok(PathBuf::from(value))
        }
    }

    /// Seconds as a float on the wire.
    pub mod seconds {
        use std::time::Duration;

        pub fn to(value: Duration) -> f64 {
            value.as_secs_f64()
        }

        pub fn from(value: f64) -> Result<Duration, tonic::Status> {
            Ok(Duration::try_from_secs_f64(value).unwrap_or_default())
        }
    }

    /// A number whose zero means none.
    pub mod nonzero {
        pub fn to<T: Default>(value: Option<T>) -> T {
            value.unwrap_or_default()
        }

        pub fn from<T: Default + PartialEq>(value: T) -> Result<Option<T>, tonic::Status> {
            Ok((value != T::default()).then_some(value))
        }
    }

    /// A day, as `YYYY-MM-DD`.
    pub mod date {
        use chrono::NaiveDate;

        pub fn to(value: NaiveDate) -> String {
            value.to_string()
        }

        pub fn from(value: String) -> Result<NaiveDate, tonic::Status> {
            NaiveDate::parse_from_str(&value, "%Y-%m-%d").map_err(|_| super::bad("date"))
        }
    }

    /// An edge id, as its string.
    pub mod edge_id {
        use crate::model::EdgeId;

        pub fn to(value: EdgeId) -> String {
            value.to_string()
        }

        pub fn from(value: String) -> Result<EdgeId, tonic::Status> {
            EdgeId::parse(&value).ok_or_else(|| super::bad("edge id"))
        }
    }

    /// A relation, by its name (`TOUCHED`).
    pub mod relation {
        use crate::model::Relation;

        pub fn to(value: Relation) -> String {
            value.as_str().to_owned()
        }

        pub fn from(value: String) -> Result<Relation, tonic::Status> {
            Relation::parse(&value).ok_or_else(|| super::bad("relation"))
        }
    }

    /// How a subagent's transcript was laid out, by name.
    pub mod layout {
        use crate::model::AgentLayout;

        pub fn to(value: AgentLayout) -> String {
            match value {
                AgentLayout::Inline => "inline",
                AgentLayout::RootLevel => "root_level",
                AgentLayout::Nested => "nested",
                AgentLayout::Workflow => "workflow",
            }
            .to_owned()
        }

        pub fn from(value: String) -> Result<AgentLayout, tonic::Status> {
            match value.as_str() {
                "inline" => Ok(AgentLayout::Inline),
                "root_level" => Ok(AgentLayout::RootLevel),
                "nested" => Ok(AgentLayout::Nested),
                "workflow" => Ok(AgentLayout::Workflow),
                _ => Err(super::bad("agent layout")),
            }
        }
    }

    /// What a node is, as the detail its message carries.
    pub mod node_kind {
        use crate::api::pb;
        use crate::api::pb::node::Detail;
        use crate::model::{
            DecayState, Document, Entity, EntityType, Memory, MemoryType, NodeKind,
        };

        pub fn to(value: NodeKind) -> Option<Detail> {
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

        pub fn from(value: Option<Detail>) -> Result<NodeKind, tonic::Status> {
            Ok(
                match value.ok_or_else(|| super::bad("node without its details"))? {
                    Detail::Episode(e) => NodeKind::Episode(Box::new(e.try_into()?)),
                    Detail::Entity(e) => NodeKind::Entity(Entity {
                        entity_type: EntityType::parse(&e.entity_type)
                            .ok_or_else(|| super::bad("entity type"))?,
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
                            .ok_or_else(|| super::bad("memory type"))?,
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

    /// A message the domain always has: absent on the wire is a bad answer.
    pub mod present {
        use tonic::Status;

        pub fn to<D, W: From<D>>(value: D) -> Option<W> {
            Some(W::from(value))
        }

        pub fn from<D: TryFrom<W, Error = Status>, W>(value: Option<W>) -> Result<D, Status> {
            D::try_from(value.ok_or_else(|| super::bad("answer without a part it must hold"))?)
        }
    }

    /// A score: `f32` in memory, `double` on the wire.
    pub mod float {
        pub fn to(value: f32) -> f64 {
            f64::from(value)
        }

        pub fn from(value: f64) -> Result<f32, tonic::Status> {
            Ok(value as f32)
        }
    }

    /// A search mode by name; one not known reads as the default.
    pub mod search_mode {
        use crate::retrieve::SearchMode;

        pub fn to(value: SearchMode) -> String {
            value.as_str().to_owned()
        }

        pub fn from(value: String) -> Result<SearchMode, tonic::Status> {
            Ok(SearchMode::parse(&value).unwrap_or_default())
        }
    }
}

/// Both conversions between a domain struct and its proto message, from one field list
/// (see the module's documentation).
macro_rules! wire {
    (
        $domain:ident <=> $($wire:ident)::+ { $($fields:tt)* }
        $($rest:tt)*
    ) => {
        $crate::api::convert::wire::wire!(
            @munch ($domain) ($($wire)::+) ($($rest)*) [] $($fields)*
        );
    };
    // Every field read: write the two conversions.
    (@munch ($domain:ident) ($wire:path) ($($rest:tt)*) [$($done:tt)*]) => {
        $crate::api::convert::wire::wire!(@impl ($domain) ($wire) [$($done)*] $($rest)*);
    };
    (@munch $d:tt $w:tt $r:tt [$($done:tt)*] $ours:ident = $theirs:ident : $codec:ident $(, $($more:tt)*)?) => {
        $crate::api::convert::wire::wire!(@munch $d $w $r [$($done)* ($ours $theirs $codec)] $($($more)*)?);
    };
    (@munch $d:tt $w:tt $r:tt [$($done:tt)*] $ours:ident = $theirs:ident $(, $($more:tt)*)?) => {
        $crate::api::convert::wire::wire!(@munch $d $w $r [$($done)* ($ours $theirs same)] $($($more)*)?);
    };
    (@munch $d:tt $w:tt $r:tt [$($done:tt)*] $name:ident : $codec:ident $(, $($more:tt)*)?) => {
        $crate::api::convert::wire::wire!(@munch $d $w $r [$($done)* ($name $name $codec)] $($($more)*)?);
    };
    (@munch $d:tt $w:tt $r:tt [$($done:tt)*] $name:ident $(, $($more:tt)*)?) => {
        $crate::api::convert::wire::wire!(@munch $d $w $r [$($done)* ($name $name same)] $($($more)*)?);
    };
    (
        @impl ($domain:ident) ($wire:path) [$(($ours:ident $theirs:ident $codec:ident))*]
        $(to_wire($tv:ident) { $($tf:ident : $te:expr),* $(,)? })?
        $(from_wire($fv:ident) { $($ff:ident : $fe:expr),* $(,)? })?
    ) => {
        impl From<$domain> for $wire {
            #[allow(unused_mut)]
            fn from(mut value: $domain) -> Self {
                $(let $tv = &mut value; $(let $tf = $te;)*)?
                let $domain { $($ours: _,)* $($($ff: _,)*)? } = &value;
                $wire {
                    $($theirs: $crate::api::convert::wire::codec::$codec::to(value.$ours),)*
                    $($($tf,)*)?
                }
            }
        }

        impl TryFrom<$wire> for $domain {
            type Error = tonic::Status;

            #[allow(unused_mut)]
            fn try_from(mut value: $wire) -> Result<Self, tonic::Status> {
                $(let $fv = &mut value; $(let $ff = $fe;)*)?
                let $wire { $($theirs: _,)* $($($tf: _,)*)? } = &value;
                Ok($domain {
                    $($ours: $crate::api::convert::wire::codec::$codec::from(value.$theirs)?,)*
                    $($($ff,)*)?
                })
            }
        }
    };
}

pub(crate) use wire;
