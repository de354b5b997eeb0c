//! Keyspaces over fjall for eywa: MessagePack values, order-preserving keys and a
//! format-version record checked on open. This crate knows bytes and keys, not graphs.
//!
//! Three tiers: LRU caches of decoded values in memory ([`HotCache`]), a fjall
//! keyspace in `<path>/keyspaces`, and content-addressed zstd blobs in `<path>/cold` ([`BlobStore`]) where
//! idle chunks go ([`Store::sweep_chunks`]).
//!
//! ```
//! use eywa_storage::{Batch, Config, Keyspace};
//!
//! let store = Config::new().temporary(true).open()?;
//! let mut batch = Batch::new();
//! batch.put(Keyspace::Settings, b"greeting".to_vec(), &"hello")?;
//! store.apply(batch)?;
//! let value: Option<String> = store.get(Keyspace::Settings, b"greeting")?;
//! assert_eq!(value.as_deref(), Some("hello"));
//! # Ok::<(), eywa_storage::Error>(())
//! ```

mod batch;
mod blob;
mod cache;
mod codec;
mod config;
mod dirs;
mod error;
pub mod key;
mod keyspace;
mod store;
mod tier;

pub use self::batch::Batch;
pub use self::blob::{BlobInfo, BlobStore, BlobWriter, INLINE_MAX};
pub use self::cache::{CacheStats, GenerationalCache, HotCache};
pub use self::codec::{decode, encode};
pub use self::config::Config;
pub use self::error::{Error, Result, free_bytes};
pub use self::keyspace::Keyspace;
pub use self::store::{FORMAT_VERSION, MAX_KEY_LEN, Moved, Scan, Store};
pub use self::tier::{ChunkSlot, SweepReport, TierStats};
