//! Chunk tiering: a chunk lives inline in the warm tier until it sits idle, then as a blob
//! (cold), and comes back warm when it is read.

use serde::{Deserialize, Serialize};

use crate::{Batch, BlobInfo, Error, Keyspace, Result, Store, codec};

/// A warm read rewrites `last_access` only when it is older than this, so that reads do
/// not each cost a write: one hour, in milliseconds.
const REFRESH_AFTER_MS: i64 = 60 * 60 * 1000;

/// The value under a key of [`Keyspace::Chunks`]. Times are milliseconds since the epoch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChunkSlot {
    /// The chunk's bytes, inline.
    Warm {
        /// The chunk's content.
        #[serde(with = "bin")]
        bytes: Vec<u8>,
        /// When the chunk was last written or read; a read refreshes it at most hourly.
        last_access: i64,
    },
    /// The chunk's bytes are the blob `hash` of the cold tier.
    Cold {
        /// Lowercase hex sha256 of the chunk's content: the blob's name.
        hash: String,
        /// Bytes of the content before compression.
        raw_len: u64,
        /// When the chunk was last accessed while warm.
        last_access: i64,
    },
}

impl ChunkSlot {
    /// When the chunk was last accessed, in milliseconds since the epoch, in either tier.
    pub fn last_access(&self) -> i64 {
        match self {
            ChunkSlot::Warm { last_access, .. } | ChunkSlot::Cold { last_access, .. } => {
                *last_access
            }
        }
    }
}

/// Encodes like [`ChunkSlot::Warm`] without copying the bytes.
#[derive(Serialize)]
enum WarmRef<'a> {
    Warm {
        #[serde(serialize_with = "bin::serialize")]
        bytes: &'a [u8],
        last_access: i64,
    },
}

fn encode_warm(bytes: &[u8], last_access: i64) -> Result<Vec<u8>> {
    codec::encode(Keyspace::Chunks, &WarmRef::Warm { bytes, last_access })
}

/// What [`Store::sweep_chunks`] moved to the cold tier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepReport {
    /// Chunks that became cold.
    pub moved: u64,
    /// Their raw bytes.
    pub bytes: u64,
}

/// Sizes of the warm and cold tiers, from one walk of [`Keyspace::Chunks`] and
/// [`Keyspace::Blobs`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TierStats {
    /// Chunks held inline in the warm tier.
    pub warm_chunks: u64,
    /// Bytes of the warm chunks' content (not of their encoding).
    pub warm_bytes: u64,
    /// Chunks whose bytes are in a blob.
    pub cold_chunks: u64,
    /// Raw bytes of the cold chunks' content.
    pub cold_raw_bytes: u64,
    /// Blob records; a blob shared by identical chunks, or kept after its chunk came back
    /// warm, counts once.
    pub blobs: u64,
    /// Raw bytes of the blobs' content, each blob once.
    pub blob_raw_bytes: u64,
    /// Bytes of the compressed blob files.
    pub blob_stored_bytes: u64,
    /// Bytes the whole warm tier (every keyspace) uses on disk.
    pub warm_disk_bytes: u64,
}

impl TierStats {
    /// Counts one encoded record of `keyspace` in (`add`) or out of the sums. A change
    /// may take away more than it adds: the sums wrap, and come right once added to
    /// what they change.
    pub(crate) fn count(&mut self, keyspace: Keyspace, raw: &[u8], add: bool) -> Result<()> {
        let sign = |n: u64| if add { n } else { n.wrapping_neg() };
        match keyspace {
            Keyspace::Chunks => match codec::decode::<ChunkSlot>(keyspace, raw)? {
                ChunkSlot::Warm { bytes, .. } => {
                    self.warm_chunks = self.warm_chunks.wrapping_add(sign(1));
                    self.warm_bytes = self.warm_bytes.wrapping_add(sign(bytes.len() as u64));
                }
                ChunkSlot::Cold { raw_len, .. } => {
                    self.cold_chunks = self.cold_chunks.wrapping_add(sign(1));
                    self.cold_raw_bytes = self.cold_raw_bytes.wrapping_add(sign(raw_len));
                }
            },
            Keyspace::Blobs => {
                let info: BlobInfo = codec::decode(keyspace, raw)?;
                self.blobs = self.blobs.wrapping_add(sign(1));
                self.blob_raw_bytes = self.blob_raw_bytes.wrapping_add(sign(info.raw_len));
                self.blob_stored_bytes = self.blob_stored_bytes.wrapping_add(sign(info.stored_len));
            }
            _ => {}
        }
        Ok(())
    }

    /// These sums and `other`'s (disk bytes aside).
    pub(crate) fn plus(&self, other: &TierStats) -> TierStats {
        TierStats {
            warm_chunks: self.warm_chunks.wrapping_add(other.warm_chunks),
            warm_bytes: self.warm_bytes.wrapping_add(other.warm_bytes),
            cold_chunks: self.cold_chunks.wrapping_add(other.cold_chunks),
            cold_raw_bytes: self.cold_raw_bytes.wrapping_add(other.cold_raw_bytes),
            blobs: self.blobs.wrapping_add(other.blobs),
            blob_raw_bytes: self.blob_raw_bytes.wrapping_add(other.blob_raw_bytes),
            blob_stored_bytes: self.blob_stored_bytes.wrapping_add(other.blob_stored_bytes),
            warm_disk_bytes: 0,
        }
    }

    /// Raw over stored bytes of the blobs; 0 when there are no blobs.
    pub fn compression_ratio(&self) -> f64 {
        if self.blob_stored_bytes == 0 {
            0.0
        } else {
            self.blob_raw_bytes as f64 / self.blob_stored_bytes as f64
        }
    }
}

impl Batch {
    /// Puts a chunk as a warm slot last accessed at `now_ms`.
    pub fn put_chunk(&mut self, key: impl Into<Vec<u8>>, bytes: &[u8], now_ms: i64) -> Result<()> {
        self.put_raw(Keyspace::Chunks, key, encode_warm(bytes, now_ms)?);
        Ok(())
    }
}

impl Store {
    /// The bytes of a chunk; `Ok(None)` if there is none. A cold chunk is read from its
    /// blob and written back warm (its blob stays: another chunk may share it).
    pub fn get_chunk(&self, key: &[u8], now_ms: i64) -> Result<Option<Vec<u8>>> {
        let Some(raw) = self.partition(Keyspace::Chunks).get(key)? else {
            return Ok(None);
        };
        let (bytes, rewrite) = match codec::decode(Keyspace::Chunks, &raw)? {
            ChunkSlot::Warm { bytes, last_access } => {
                let stale = now_ms.saturating_sub(last_access) > REFRESH_AFTER_MS;
                (bytes, stale)
            }
            ChunkSlot::Cold { hash, .. } => match self.blobs().read(&hash)? {
                Some(bytes) => (bytes, true),
                None => return Err(Error::MissingBlob { hash }),
            },
        };
        if rewrite {
            let mut batch = Batch::new();
            batch.put_raw(Keyspace::Chunks, key, encode_warm(&bytes, now_ms)?);
            // If the chunk was written since we read it, that write wins and ours is dropped.
            self.apply_if_unchanged(&batch, Keyspace::Chunks, key, Some(&raw))?;
        }
        Ok(Some(bytes))
    }

    /// Moves every warm chunk idle for more than `idle_ms` to the cold tier. Each chunk's
    /// blob is synced to disk before one batch records it and turns the slot cold, so a
    /// crash never leaves a cold slot without its blob (at worst an orphan blob). A chunk
    /// written while it is being moved keeps the new write.
    pub fn sweep_chunks(&self, idle_ms: i64, now_ms: i64) -> Result<SweepReport> {
        self.sweep_chunks_at_most(idle_ms, now_ms, u64::MAX)
    }

    /// [`Store::sweep_chunks`], moving at most `max` chunks (the rest wait for the next
    /// sweep), so that one sweep's time is bounded.
    pub fn sweep_chunks_at_most(&self, idle_ms: i64, now_ms: i64, max: u64) -> Result<SweepReport> {
        let mut report = SweepReport::default();
        for entry in self.partition(Keyspace::Chunks).iter() {
            if report.moved >= max {
                break;
            }
            let (key, raw) = entry?;
            let ChunkSlot::Warm { bytes, last_access } = codec::decode(Keyspace::Chunks, &raw)?
            else {
                continue;
            };
            if now_ms.saturating_sub(last_access) <= idle_ms {
                continue;
            }
            let _gate = self.lock_blob_gate();
            let info = self.blobs().put_bytes(&bytes)?;
            let mut batch = Batch::new();
            batch.put_blob(&info)?;
            let cold = ChunkSlot::Cold {
                hash: info.hash.clone(),
                raw_len: info.raw_len,
                last_access,
            };
            batch.put(Keyspace::Chunks, &*key, &cold)?;
            if self.apply_if_unchanged(&batch, Keyspace::Chunks, &key, Some(&raw))? {
                report.moved += 1;
                report.bytes += info.raw_len;
            }
        }
        Ok(report)
    }
}

/// The chunk and blob sums of [`Store::tier_stats`], kept by every write once counted.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) enum TierSums {
    /// Not counted yet: writes keep nothing.
    #[default]
    Unknown,
    /// A snapshot is being counted: what the writes since it changed.
    Counting(TierStats),
    /// What the tiers hold.
    Known(TierStats),
}

impl TierSums {
    /// Adds what a write changed, once it landed.
    pub(crate) fn add(&mut self, change: &TierStats) {
        match self {
            TierSums::Unknown => {}
            TierSums::Counting(stats) | TierSums::Known(stats) => *stats = stats.plus(change),
        }
    }
}

/// Chunk bytes as a MessagePack `bin` (one byte per byte) rather than an array of
/// integers (up to two bytes per byte).
mod bin {
    use serde::de::{Deserializer, SeqAccess, Visitor};
    use serde::ser::Serializer;

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(bytes)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        deserializer.deserialize_byte_buf(BytesVisitor)
    }

    struct BytesVisitor;

    impl<'de> Visitor<'de> for BytesVisitor {
        type Value = Vec<u8>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a byte string")
        }

        fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }

        fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
            while let Some(b) = seq.next_element()? {
                bytes.push(b);
            }
            Ok(bytes)
        }
    }
}

#[cfg(test)]
mod tests;
