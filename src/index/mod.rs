//! The index tier: what is rebuilt from the warm and cold tiers and kept beside them.

pub(crate) mod docs;
mod grams;
mod handoffs;
mod hnsw;
mod stem;
mod text;
mod vector;

pub use self::grams::{
    GramDoc, GramIndex, GramMessage, INEXACT, Need, Shared, WordLines, fold, grams_of,
    is_word_pattern, need_of,
};
pub use self::handoffs::HandoffFiles;
pub use self::hnsw::HnswIndex;
pub use self::text::{Snippets, TextDoc, TextHit, TextIndex, TextQuery};
pub use self::vector::{FlatIndex, VectorIndex};

/// A Tantivy failure as eywa's error.
fn tantivy_error(e: tantivy::TantivyError) -> crate::Error {
    crate::Error::Index(e.to_string())
}

/// Opens the Tantivy index in `dir`, creating it if missing. One of another schema (an
/// older eywa) is removed and created empty; the flag says it was created, for the
/// caller to refill.
fn open_or_create(
    dir: &std::path::Path,
    schema: tantivy::schema::Schema,
    what: &str,
) -> crate::Result<(tantivy::Index, bool)> {
    use crate::Error;
    std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
    match tantivy::Index::open_in_dir(dir).ok() {
        Some(index) if index.schema() == schema => Ok((index, false)),
        other => {
            if other.is_some() {
                tracing::info!(dir = %dir.display(), "{what} of another schema: rebuilding");
            }
            drop(other);
            std::fs::remove_dir_all(dir).map_err(Error::io(dir))?;
            std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
            let index = tantivy::Index::create_in_dir(dir, schema).map_err(tantivy_error)?;
            Ok((index, true))
        }
    }
}

/// The one writer (one indexing thread, `heap` bytes before it flushes a segment) and a
/// reader refreshed on commit.
fn writer_and_reader(
    index: &tantivy::Index,
    heap: usize,
) -> crate::Result<(tantivy::IndexWriter, tantivy::IndexReader)> {
    let writer = index
        .writer_with_num_threads(1, heap)
        .map_err(tantivy_error)?;
    let reader = index
        .reader_builder()
        .reload_policy(tantivy::ReloadPolicy::Manual)
        .try_into()
        .map_err(tantivy_error)?;
    Ok((writer, reader))
}
