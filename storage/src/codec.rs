use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Error, Keyspace, Result};

/// Encodes a value as MessagePack with field names, so that fields can be added later
/// (with `#[serde(default)]`) without breaking stores written before.
pub fn encode<V: Serialize + ?Sized>(keyspace: Keyspace, value: &V) -> Result<Vec<u8>> {
    rmp_serde::to_vec_named(value).map_err(|source| Error::Encode {
        keyspace: keyspace.name(),
        source,
    })
}

/// Decodes a value written by [`encode`].
pub fn decode<V: DeserializeOwned>(keyspace: Keyspace, bytes: &[u8]) -> Result<V> {
    rmp_serde::from_slice(bytes).map_err(|source| Error::Decode {
        keyspace: keyspace.name(),
        source,
    })
}
