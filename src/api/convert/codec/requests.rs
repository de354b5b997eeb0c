//! Codecs of requests: counts with their defaults and bounds, filters, modes and formats.
//! A request reads back checked; what is out of range is `INVALID_ARGUMENT` naming the
//! field.

/// A count in `1..=max` as an `optional int32`: absent is `default`.
pub(crate) mod count {
    use tonic::Status;

    pub(crate) fn to<T: TryInto<i32>>(value: T, default: usize, max: usize) -> Option<i32> {
        super::bounded::to(value, default, 1, max)
    }

    pub(crate) fn from<T: TryFrom<usize>>(
        value: Option<i32>,
        field: &str,
        default: usize,
        max: usize,
    ) -> Result<T, Status> {
        super::bounded::from(value, field, default, 1, max)
    }
}

/// A number in `min..=max` as an `optional int32`: absent is `default`.
pub(crate) mod bounded {
    use tonic::Status;

    pub(crate) fn to<T: TryInto<i32>>(
        value: T,
        _default: usize,
        _min: usize,
        _max: usize,
    ) -> Option<i32> {
        Some(value.try_into().unwrap_or(i32::MAX))
    }

    pub(crate) fn from<T: TryFrom<usize>>(
        value: Option<i32>,
        field: &str,
        default: usize,
        min: usize,
        max: usize,
    ) -> Result<T, Status> {
        let n = crate::api::convert::bounded(field, value, default, min, max)?;
        T::try_from(n).map_err(|_| Status::invalid_argument(format!("{field} is too large")))
    }
}

/// A name that may be left out: a blank string is none.
pub(crate) mod blank {
    pub(crate) fn to(value: Option<String>) -> String {
        value.unwrap_or_default()
    }

    pub(crate) fn from(value: String, _field: &str) -> Result<Option<String>, tonic::Status> {
        Ok((!value.trim().is_empty()).then_some(value))
    }
}

/// A reference that may be left out, trimmed: a blank string is none.
pub(crate) mod trimmed {
    pub(crate) fn to(value: Option<String>) -> String {
        value.unwrap_or_default()
    }

    pub(crate) fn from(value: String, _field: &str) -> Result<Option<String>, tonic::Status> {
        Ok(Some(value.trim().to_owned()).filter(|v| !v.is_empty()))
    }
}

/// Words to search for: never blank.
pub(crate) mod words {
    use tonic::Status;

    pub(crate) fn to(value: String) -> String {
        value
    }

    pub(crate) fn from(value: String, field: &str) -> Result<String, Status> {
        if value.trim().is_empty() {
            return Err(Status::invalid_argument(format!(
                "{field}: give words to search for"
            )));
        }
        Ok(value)
    }
}

/// Project names: none of them blank.
pub(crate) mod names {
    use tonic::Status;

    pub(crate) fn to(value: Vec<String>) -> Vec<String> {
        value
    }

    pub(crate) fn from(value: Vec<String>, field: &str) -> Result<Vec<String>, Status> {
        if value.iter().any(|p| p.trim().is_empty()) {
            return Err(Status::invalid_argument(format!("{field}: an empty name")));
        }
        Ok(value)
    }
}

/// Whose sessions: `users`, `machines`, names never blank.
pub(crate) mod attribution {
    use tonic::Status;

    use crate::model::Attribution;

    type Wire = (Vec<String>, Vec<String>);

    pub(crate) fn to(a: Attribution) -> Wire {
        (a.users, a.machines)
    }

    pub(crate) fn from((users, machines): Wire) -> Result<Attribution, Status> {
        Ok(Attribution {
            users: super::names::from(users, "users")?,
            machines: super::names::from(machines, "machines")?,
        })
    }
}

/// A folder to read: never blank.
pub(crate) mod folder {
    use std::path::PathBuf;

    use tonic::Status;

    pub(crate) fn to(value: PathBuf) -> String {
        value.display().to_string()
    }

    pub(crate) fn from(value: String, field: &str) -> Result<PathBuf, Status> {
        if value.trim().is_empty() {
            return Err(Status::invalid_argument(format!(
                "{field}: give the Eywa folder to import"
            )));
        }
        Ok(value.into())
    }
}

/// A search mode by name; blank is the default, one not known is refused.
pub(crate) mod strict_mode {
    use tonic::Status;

    use crate::retrieve::SearchMode;

    pub(crate) fn to(value: SearchMode) -> String {
        value.as_str().to_owned()
    }

    pub(crate) fn from(value: String, field: &str) -> Result<SearchMode, Status> {
        if value.trim().is_empty() {
            return Ok(SearchMode::default());
        }
        SearchMode::parse(&value).ok_or_else(|| {
            crate::api::status::invalid(format!(
                "{field}: {} is not lexical, semantic or hybrid",
                crate::error::quote(&value)
            ))
        })
    }
}

/// A choice among a few, by name (`as_str` and `parse`; blank is the default).
pub(crate) mod named {
    use crate::engine::{ContextMode, ExportFormat, MigrateMode, SessionOrder};

    /// A type chosen by name on the wire.
    pub(crate) trait Named: Sized {
        fn name(self) -> &'static str;
        fn named(name: &str) -> crate::Result<Self>;
    }

    macro_rules! named {
        ($($t:ty),*) => {$(
            impl Named for $t {
                fn name(self) -> &'static str {
                    self.as_str()
                }

                fn named(name: &str) -> crate::Result<Self> {
                    <$t>::parse(name)
                }
            }
        )*};
    }

    named!(ContextMode, ExportFormat, MigrateMode, SessionOrder);

    pub(crate) fn to<T: Named>(value: T) -> String {
        value.name().to_owned()
    }

    pub(crate) fn from<T: Named>(value: String, _field: &str) -> Result<T, tonic::Status> {
        Ok(T::named(&value)?)
    }
}

/// Bytes of a session part: 0 for the default, at most 3 MiB (under the 4 MiB a gRPC
/// client takes by default).
pub(crate) mod part_bytes {
    use tonic::Status;

    /// Bytes of a part by default.
    pub(crate) const DEFAULT: usize = 1 << 20;
    /// Bytes of a part at most.
    pub(crate) const MAX: usize = 3 << 20;

    pub(crate) fn to(value: usize) -> u32 {
        crate::api::convert::n32(value)
    }

    pub(crate) fn from(value: u32, field: &str) -> Result<usize, Status> {
        match value as usize {
            0 => Ok(DEFAULT),
            n if n <= MAX => Ok(n.max(1)),
            n => Err(Status::invalid_argument(format!(
                "{field} {n} is over the maximum of {MAX}"
            ))),
        }
    }
}

/// Where to go on reading a session: `from_message`, `from_offset`.
pub(crate) mod cursor {
    use crate::api::convert::sessions::SessionCursor;

    pub(crate) fn to(value: SessionCursor) -> (u32, u64) {
        (crate::api::convert::n32(value.message), value.offset as u64)
    }

    pub(crate) fn from(value: (u32, u64)) -> Result<SessionCursor, tonic::Status> {
        Ok(SessionCursor {
            message: value.0 as usize,
            offset: usize::try_from(value.1).unwrap_or(usize::MAX),
        })
    }
}

/// Which edges a graph query follows: `relations`, `direction`, `since`, `until`,
/// `as_of`.
pub(crate) mod edge_filter {
    use tonic::Status;

    use crate::api::convert::{optional_time, timestamp};
    use crate::api::pb;
    use crate::engine::parse_relations;
    use crate::engine::{AsOf, Direction, EdgeFilter};

    type Time = Option<prost_types::Timestamp>;

    pub(crate) fn to(f: EdgeFilter) -> (Vec<String>, i32, Time, Time, Option<pb::AsOf>) {
        let direction = match f.direction {
            Direction::Both => pb::Direction::Both,
            Direction::Out => pb::Direction::Out,
            Direction::In => pb::Direction::In,
        };
        let as_of = (!f.as_of.is_current()).then(|| pb::AsOf {
            valid: f.as_of.valid.map(timestamp),
            recorded: f.as_of.recorded.map(timestamp),
        });
        (
            f.relations.iter().map(|r| r.as_str().to_owned()).collect(),
            direction as i32,
            f.from.map(timestamp),
            f.until.map(timestamp),
            as_of,
        )
    }

    pub(crate) fn from(
        (relations, direction, since, until, as_of): (
            Vec<String>,
            i32,
            Time,
            Time,
            Option<pb::AsOf>,
        ),
    ) -> Result<EdgeFilter, Status> {
        let direction = match pb::Direction::try_from(direction) {
            Ok(pb::Direction::Both) => Direction::Both,
            Ok(pb::Direction::Out) => Direction::Out,
            Ok(pb::Direction::In) => Direction::In,
            Err(_) => {
                return Err(Status::invalid_argument(format!(
                    "unknown direction {direction}"
                )));
            }
        };
        let as_of = match as_of {
            None => AsOf::default(),
            Some(pb::AsOf { valid, recorded }) => AsOf {
                valid: optional_time("as_of.valid", valid)?,
                recorded: optional_time("as_of.recorded", recorded)?,
            },
        };
        Ok(EdgeFilter {
            direction,
            relations: parse_relations(&relations)?,
            from: optional_time("since", since)?,
            until: optional_time("until", until)?,
            as_of,
        })
    }
}

/// What a passage must be to be found: `types`, `projects`, `agent_types`, `since`,
/// `until`, `users`, `machines`.
pub(crate) mod search_filter {
    use tonic::Status;

    use crate::api::convert::{optional_time, timestamp};
    use crate::model::SearchFilter;

    type Time = Option<prost_types::Timestamp>;
    type Names = Vec<String>;
    type Wire = (Names, Names, Names, Time, Time, Names, Names);

    pub(crate) fn to(f: SearchFilter) -> Wire {
        let SearchFilter {
            kinds,
            projects,
            agent_types,
            since,
            until,
            users,
            machines,
        } = f;
        (
            kinds,
            projects,
            agent_types,
            since.map(timestamp),
            until.map(timestamp),
            users,
            machines,
        )
    }

    pub(crate) fn from(
        (kinds, projects, agent_types, since, until, users, machines): Wire,
    ) -> Result<SearchFilter, Status> {
        Ok(SearchFilter {
            kinds,
            projects: super::names::from(projects, "projects")?,
            agent_types,
            since: optional_time("since", since)?,
            until: optional_time("until", until)?,
            users: super::names::from(users, "users")?,
            machines: super::names::from(machines, "machines")?,
        })
    }
}

/// How far back `get` looks, how many it returns, which projects, and whose sessions:
/// `days_back`, `limit`, `projects`, `users`, `machines`.
pub(crate) mod get_options {
    use tonic::Status;

    use crate::engine::{MAX_DAYS_BACK, MAX_LIMIT};
    use crate::retrieve::{DEFAULT_DAYS_BACK, DEFAULT_LIMIT, GetOptions};

    type Wire = (
        Option<i32>,
        Option<i32>,
        Vec<String>,
        Vec<String>,
        Vec<String>,
    );

    pub(crate) fn to(o: GetOptions) -> Wire {
        (
            super::count::to(
                o.days_back,
                DEFAULT_DAYS_BACK as usize,
                MAX_DAYS_BACK as usize,
            ),
            super::count::to(o.limit, DEFAULT_LIMIT, MAX_LIMIT),
            super::names::to(o.projects),
            o.authors.users,
            o.authors.machines,
        )
    }

    pub(crate) fn from(
        (days_back, limit, projects, users, machines): Wire,
    ) -> Result<GetOptions, Status> {
        Ok(GetOptions {
            days_back: super::count::from(
                days_back,
                "days_back",
                DEFAULT_DAYS_BACK as usize,
                MAX_DAYS_BACK as usize,
            )?,
            limit: super::count::from(limit, "limit", DEFAULT_LIMIT, MAX_LIMIT)?,
            projects: super::names::from(projects, "projects")?,
            authors: super::attribution::from((users, machines))?,
        })
    }
}
