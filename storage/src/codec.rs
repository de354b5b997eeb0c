//! Values as MessagePack: how a keyspace's values are encoded and decoded.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Error, Keyspace, Result};

/// Encodes a value as compact MessagePack: a struct is an array of its fields in order,
/// without their names (a third of the bytes of a named map). A field may be added at the
/// end with `#[serde(default)]`, and values written before still decode; fields are never
/// reordered or removed, and nothing skips a field only sometimes.
pub fn encode<V: Serialize + ?Sized>(keyspace: Keyspace, value: &V) -> Result<Vec<u8>> {
    rmp_serde::to_vec(value).map_err(|source| Error::Encode {
        keyspace: keyspace.name(),
        source,
    })
}

/// Decodes a value written by [`encode`], or by layout 1 (named maps).
pub fn decode<V: DeserializeOwned>(keyspace: Keyspace, bytes: &[u8]) -> Result<V> {
    rmp_serde::from_slice(bytes).map_err(|source| Error::Decode {
        keyspace: keyspace.name(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    enum Kind {
        Plain,
        Detailed { depth: u8 },
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Before {
        id: u64,
        name: String,
        kind: Kind,
        tags: Vec<String>,
    }

    /// The same type after a field was added at the end.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct After {
        id: u64,
        name: String,
        kind: Kind,
        tags: Vec<String>,
        #[serde(default)]
        weight: Option<f32>,
    }

    #[test]
    fn compact_values_are_smaller_and_old_values_still_read() {
        let before = Before {
            id: 7,
            name: "sled".into(),
            kind: Kind::Detailed { depth: 2 },
            tags: vec!["db".into()],
        };
        let compact = encode(Keyspace::Nodes, &before).unwrap();
        let named = rmp_serde::to_vec_named(&before).unwrap();
        assert!(compact.len() * 2 < named.len(), "{compact:?} vs {named:?}");
        // Layout 1 wrote named maps; layout 2 writes arrays: both read back.
        for bytes in [&compact, &named] {
            let read: Before = decode(Keyspace::Nodes, bytes).unwrap();
            assert_eq!(read, before);
            let grown: After = decode(Keyspace::Nodes, bytes).unwrap();
            assert_eq!(grown.weight, None);
            assert_eq!(grown.kind, Kind::Detailed { depth: 2 });
        }
        let plain = encode(Keyspace::Nodes, &Kind::Plain).unwrap();
        assert_eq!(
            decode::<Kind>(Keyspace::Nodes, &plain).unwrap(),
            Kind::Plain
        );
    }
}
