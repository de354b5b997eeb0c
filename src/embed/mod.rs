//! Sentence embeddings for semantic memory: the [`Embedder`] trait, all-MiniLM-L6-v2 run
//! in process on the CPU ([`MiniLm`], candle + tokenizers), and finding and installing
//! the model (`install`, [`ModelDir`]).

mod chunk;
mod install;
mod minilm;
mod pools;

pub use self::chunk::{MAX_CHUNK_CHARS, Span, chunks, spans};
pub use self::install::{
    InstallEvent, InstallOptions, InstallSource, Installed, MODEL_NAME, ModelDir, ModelStatus,
    WEIGHTS_SHA256, install, sha256_file,
};
pub use self::minilm::{LazyMiniLm, MiniLm};
pub use self::pools::{background_pool, reads_pool, writes_pool};

use sha2::{Digest, Sha256};

use crate::Result;

/// Turns texts into unit-length vectors whose cosine similarity measures likeness of
/// meaning. Implementations are deterministic: the same text gives the same vector.
pub trait Embedder: Send + Sync {
    /// Names the model and its weights; part of every cached embedding's key, so that
    /// vectors of two models are never mixed.
    fn model_id(&self) -> &str;
    /// Dimensions of every vector.
    fn dim(&self) -> usize;
    /// One L2-normalized vector per text, in order. Texts longer than the model reads
    /// are truncated.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// Makes the model ready to embed (a lazily loaded model loads now).
    fn prepare(&self) -> Result<()> {
        Ok(())
    }
    /// Why the model failed to get ready, if it tried and failed (nothing is loaded here).
    fn failure(&self) -> Option<String> {
        None
    }
}

impl std::fmt::Debug for dyn Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("model", &self.model_id())
            .field("dim", &self.dim())
            .finish()
    }
}

/// The cache key of `text` embedded by `model`: sha256 of both.
pub fn content_hash(model: &str, text: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(model.as_bytes());
    h.update([0]);
    h.update(text.as_bytes());
    h.finalize().into()
}
