//! How values go to the wire (`to`) and read back (`from`): one module a codec, named in
//! [`wire!`](super::wire::wire) field lists. A codec's `from` is given the wire's field
//! name, for its errors; a codec of several fields (`counts`) takes and gives a tuple.

mod model;
mod requests;

pub(crate) use self::model::*;
pub(crate) use self::requests::*;

/// The same type both ways.
pub(crate) mod same {
    pub(crate) fn to<T>(value: T) -> T {
        value
    }

    pub(crate) fn from<T>(value: T, _field: &str) -> Result<T, tonic::Status> {
        Ok(value)
    }
}

/// A list of messages.
pub(crate) mod messages {
    use tonic::Status;

    pub(crate) fn to<D, W: From<D>>(values: Vec<D>) -> Vec<W> {
        values.into_iter().map(W::from).collect()
    }

    pub(crate) fn from<D: TryFrom<W, Error = Status>, W>(
        values: Vec<W>,
        _field: &str,
    ) -> Result<Vec<D>, Status> {
        values.into_iter().map(D::try_from).collect()
    }
}

/// A message that may be absent on both sides.
pub(crate) mod maybe {
    use tonic::Status;

    pub(crate) fn to<D, W: From<D>>(value: Option<D>) -> Option<W> {
        value.map(W::from)
    }

    pub(crate) fn from<D: TryFrom<W, Error = Status>, W>(
        value: Option<W>,
        _field: &str,
    ) -> Result<Option<D>, Status> {
        value.map(D::try_from).transpose()
    }
}

/// domain's default.
pub(crate) mod required {
    use tonic::Status;

    pub(crate) fn to<D, W: From<D>>(value: D) -> Option<W> {
        Some(W::from(value))
    }

    pub(crate) fn from<D: TryFrom<W, Error = Status> + Default, W>(
        value: Option<W>,
        _field: &str,
    ) -> Result<D, Status> {
        value.map_or_else(|| Ok(D::default()), D::try_from)
    }
}

/// Through `From` both ways.
pub(crate) mod into {
    pub(crate) fn to<A, B: From<A>>(value: A) -> B {
        B::from(value)
    }

    pub(crate) fn from<A, B: From<A>>(value: A, _field: &str) -> Result<B, tonic::Status> {
        Ok(B::from(value))
    }
}

/// A collection of another kind on the wire (maps, sets).
pub(crate) mod collect {
    pub(crate) fn to<A: IntoIterator, B: FromIterator<A::Item>>(values: A) -> B {
        values.into_iter().collect()
    }

    pub(crate) fn from<A: IntoIterator, B: FromIterator<A::Item>>(
        values: A,
        _field: &str,
    ) -> Result<B, tonic::Status> {
        Ok(values.into_iter().collect())
    }
}

/// Text that may be absent: the empty string on the wire.
pub(crate) mod text {
    pub(crate) fn to(value: Option<String>) -> String {
        value.unwrap_or_default()
    }

    pub(crate) fn from(value: String, _field: &str) -> Result<Option<String>, tonic::Status> {
        Ok(crate::api::convert::some(value))
    }
}

/// A moment; absent on the wire reads as the epoch.
pub(crate) mod time {
    use crate::model::Timestamp;

    pub(crate) fn to(value: Timestamp) -> Option<prost_types::Timestamp> {
        Some(crate::api::convert::timestamp(value))
    }

    pub(crate) fn from(
        value: Option<prost_types::Timestamp>,
        _field: &str,
    ) -> Result<Timestamp, tonic::Status> {
        Ok(crate::api::convert::time(value))
    }
}

/// A moment that may be absent.
pub(crate) mod maybe_time {
    use crate::model::Timestamp;

    pub(crate) fn to(value: Option<Timestamp>) -> Option<prost_types::Timestamp> {
        value.map(crate::api::convert::timestamp)
    }

    /// Checked: a moment out of range (a request's) is the caller's error.
    pub(crate) fn from(
        value: Option<prost_types::Timestamp>,
        field: &str,
    ) -> Result<Option<Timestamp>, tonic::Status> {
        crate::api::convert::optional_time(field, value)
    }
}

/// A count in memory, a `uint64` on the wire (saturating when it reads back).
pub(crate) mod size {
    pub(crate) fn to(value: usize) -> u64 {
        value as u64
    }

    pub(crate) fn from(value: u64, _field: &str) -> Result<usize, tonic::Status> {
        Ok(usize::try_from(value).unwrap_or(usize::MAX))
    }
}

/// A count in memory, a `uint32` on the wire (saturating both ways).
pub(crate) mod size32 {
    pub(crate) fn to(value: usize) -> u32 {
        crate::api::convert::n32(value)
    }

    pub(crate) fn from(value: u32, _field: &str) -> Result<usize, tonic::Status> {
        Ok(value as usize)
    }
}

/// A byte-sized number, a `uint32` on the wire.
pub(crate) mod small {
    pub(crate) fn to(value: u8) -> u32 {
        u32::from(value)
    }

    pub(crate) fn from(value: u32, field: &str) -> Result<u8, tonic::Status> {
        u8::try_from(value).map_err(|_| crate::api::convert::bad(&format!("{field} {value}")))
    }
}

/// A node id, as its string.
pub(crate) mod id {
    use crate::model::NodeId;

    pub(crate) fn to(value: NodeId) -> String {
        value.to_string()
    }

    pub(crate) fn from(value: String, _field: &str) -> Result<NodeId, tonic::Status> {
        crate::api::convert::node_id(&value)
    }
}

/// A path, as its string.
pub(crate) mod path {
    use std::path::PathBuf;

    pub(crate) fn to(value: PathBuf) -> String {
        value.display().to_string()
    }

    pub(crate) fn from(value: String, _field: &str) -> Result<PathBuf, tonic::Status> {
        Ok(PathBuf::from(value))
    }
}

/// Seconds as a float on the wire.
pub(crate) mod seconds {
    use std::time::Duration;

    pub(crate) fn to(value: Duration) -> f64 {
        value.as_secs_f64()
    }

    pub(crate) fn from(value: f64, _field: &str) -> Result<Duration, tonic::Status> {
        Ok(Duration::try_from_secs_f64(value).unwrap_or_default())
    }
}

/// A number whose zero means none.
pub(crate) mod nonzero {
    pub(crate) fn to<T: Default>(value: Option<T>) -> T {
        value.unwrap_or_default()
    }

    pub(crate) fn from<T: Default + PartialEq>(
        value: T,
        _field: &str,
    ) -> Result<Option<T>, tonic::Status> {
        Ok((value != T::default()).then_some(value))
    }
}

/// A message the domain always has: absent on the wire is a bad answer.
pub(crate) mod present {
    use tonic::Status;

    pub(crate) fn to<D, W: From<D>>(value: D) -> Option<W> {
        Some(W::from(value))
    }

    pub(crate) fn from<D: TryFrom<W, Error = Status>, W>(
        value: Option<W>,
        field: &str,
    ) -> Result<D, Status> {
        D::try_from(
            value
                .ok_or_else(|| crate::api::convert::bad(&format!("answer without its {field}")))?,
        )
    }
}

/// A score: `f32` in memory, `double` on the wire.
pub(crate) mod float {
    pub(crate) fn to(value: f32) -> f64 {
        f64::from(value)
    }

    pub(crate) fn from(value: f64, _field: &str) -> Result<f32, tonic::Status> {
        Ok(value as f32)
    }
}
