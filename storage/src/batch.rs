//! Atomic batches: puts and deletes across keyspaces that land together or not at all.

use serde::Serialize;

use crate::{Keyspace, Result, codec};

/// Writes to several keyspaces that land together or not at all ([`crate::Store::apply`]).
#[derive(Debug, Default, Clone)]
pub struct Batch {
    pub(crate) ops: Vec<(Keyspace, Vec<u8>, Option<Vec<u8>>)>,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts an encoded value.
    pub fn put<V: Serialize + ?Sized>(
        &mut self,
        keyspace: Keyspace,
        key: impl Into<Vec<u8>>,
        value: &V,
    ) -> Result<()> {
        let bytes = codec::encode(keyspace, value)?;
        self.ops.push((keyspace, key.into(), Some(bytes)));
        Ok(())
    }

    /// Puts raw bytes (index entries use an empty value).
    pub fn put_raw(&mut self, keyspace: Keyspace, key: impl Into<Vec<u8>>, value: Vec<u8>) {
        self.ops.push((keyspace, key.into(), Some(value)));
    }

    /// Deletes `key`; a key that is not there is no error.
    pub fn delete(&mut self, keyspace: Keyspace, key: impl Into<Vec<u8>>) {
        self.ops.push((keyspace, key.into(), None));
    }

    /// Moves `other`'s writes after this batch's own (a later write to a key wins).
    pub fn append(&mut self, other: Batch) {
        self.ops.extend(other.ops);
    }

    /// Writes queued, deletes included.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether no writes are queued.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}
