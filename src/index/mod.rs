//! The index tier: what is rebuilt from the warm and cold tiers and kept beside them.

pub(crate) mod docs;
mod grams;
mod handoffs;
mod hnsw;
mod text;
mod vector;

pub use self::grams::{GramDoc, GramIndex, Need, fold, grams_of, need_of};
pub use self::handoffs::HandoffFiles;
pub use self::hnsw::HnswIndex;
pub use self::text::{Snippets, TextDoc, TextHit, TextIndex, TextQuery};
pub use self::vector::{FlatIndex, VectorIndex};
