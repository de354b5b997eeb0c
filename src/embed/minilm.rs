//! all-MiniLM-L6-v2 (a 6-layer BERT, 384 dimensions) on the CPU with candle: the
//! sentence-transformers recipe exactly — WordPiece tokens truncated at 256, the encoder,
//! mean pooling over real tokens (padding excluded), L2 normalization.

use std::path::Path;

use candle_core::{Device, Tensor};
use tokenizers::{Tokenizer, TruncationParams};

mod layers;

use self::layers::{Config, Dense, DenseWeights, Layer, Layers, Norm, Weights};
use super::{Embedder, ModelDir};
use crate::{Error, Result};

/// Tokens a text is cut to, [CLS] and [SEP] included (sentence-transformers'
/// `max_seq_length` for this model; the tokenizer file says 128).
const MAX_TOKENS: usize = 256;
/// Tokens of one forward pass at most (texts × padded length), to bound memory.
const BATCH_TOKENS: usize = 8_192;
/// Texts of one forward pass at most.
const BATCH_TEXTS: usize = 64;

fn model_error(e: impl std::fmt::Display) -> Error {
    Error::Embedding(e.to_string())
}

/// all-MiniLM-L6-v2, loaded from a model directory.
pub struct MiniLm {
    id: String,
    tokenizer: Tokenizer,
    words: Tensor,
    positions: Tensor,
    token_type: Tensor,
    embedding_norm: Norm,
    layers: Layers,
    heads: usize,
    hidden: usize,
    device: Device,
}

impl std::fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLm").field("id", &self.id).finish()
    }
}

/// The model of an installed [`ModelDir`], loaded on its first embedding: a store that
/// only queues text for embedding, or reports on it, never reads the 87 MB of weights.
pub struct LazyMiniLm {
    model: ModelDir,
    id: String,
    dim: usize,
    loaded: std::sync::OnceLock<std::result::Result<MiniLm, String>>,
}

impl std::fmt::Debug for LazyMiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyMiniLm")
            .field("id", &self.id)
            .field("loaded", &self.loaded.get().is_some())
            .finish()
    }
}

impl LazyMiniLm {
    /// The model in `model`, its dimensions read from its config; the weights wait.
    pub fn new(model: ModelDir) -> Result<LazyMiniLm> {
        let path = model.config();
        let text = std::fs::read_to_string(&path).map_err(Error::io(&path))?;
        let config: Config = serde_json::from_str(&text)
            .map_err(|e| model_error(format!("{}: {e}", path.display())))?;
        Ok(LazyMiniLm {
            id: model.model_id(),
            dim: config.hidden_size,
            model,
            loaded: std::sync::OnceLock::new(),
        })
    }

    /// Loads the weights now (a server does, so that a broken model shows at start).
    pub fn load(&self) -> Result<&MiniLm> {
        self.loaded
            .get_or_init(|| MiniLm::load(&self.model).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| {
                model_error(format!(
                    "the model at {} does not load: {e}",
                    self.model.path().display()
                ))
            })
    }
}

impl Embedder for LazyMiniLm {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.load()?.embed(texts)
    }

    fn prepare(&self) -> Result<()> {
        self.load().map(|_| ())
    }

    fn failure(&self) -> Option<String> {
        match self.loaded.get() {
            Some(Err(e)) => Some(format!(
                "the model at {} does not load: {e}",
                self.model.path().display()
            )),
            _ => None,
        }
    }
}

impl MiniLm {
    /// Loads the model an installed [`ModelDir`] holds: where the CPU has AVX-512, on
    /// eywa's own kernels (`eywa_kernels::PackedDense`, `attention`), elsewhere through
    /// candle's operations.
    pub fn load(model: &ModelDir) -> Result<MiniLm> {
        Self::load_files(
            &model.weights(),
            &model.tokenizer(),
            &model.config(),
            &model.model_id(),
        )
    }

    /// Loads the model through candle's operations whatever the CPU has: the reference the
    /// packed kernels are checked against, and the speed they are measured against.
    pub fn load_unpacked(model: &ModelDir) -> Result<MiniLm> {
        Self::load_parts(
            &model.weights(),
            &model.tokenizer(),
            &model.config(),
            &model.model_id(),
            false,
        )
    }

    /// Loads weights (safetensors), tokenizer and config from their files; `id` names
    /// them in cache keys.
    pub fn load_files(weights: &Path, tokenizer: &Path, config: &Path, id: &str) -> Result<MiniLm> {
        Self::load_parts(weights, tokenizer, config, id, eywa_kernels::packed_fast())
    }

    fn load_parts(
        weights: &Path,
        tokenizer: &Path,
        config: &Path,
        id: &str,
        packed: bool,
    ) -> Result<MiniLm> {
        let device = Device::Cpu;
        let config_text = std::fs::read_to_string(config).map_err(Error::io(config))?;
        let config: Config = serde_json::from_str(&config_text)
            .map_err(|e| model_error(format!("{}: {e}", config.display())))?;
        if config.num_attention_heads == 0
            || !config
                .hidden_size
                .is_multiple_of(config.num_attention_heads)
        {
            return Err(model_error("hidden size is not a multiple of the heads"));
        }
        if let Some(act) = config.hidden_act.as_deref()
            && act != "gelu"
        {
            return Err(model_error(format!("activation `{act}` is not supported")));
        }
        let mut tokenizer = Tokenizer::from_file(tokenizer)
            .map_err(|e| model_error(format!("{}: {e}", tokenizer.display())))?;
        // The file pads every text to 128 and cuts at 128: cut where sentence-transformers
        // does, and pad nothing (`embed` pads each batch to its longest text itself).
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(model_error)?;
        tokenizer.with_padding(None);
        let tensors = candle_core::safetensors::load(weights, &device)
            .map_err(|e| model_error(format!("{}: {e}", weights.display())))?;
        let mut w = Weights(tensors);
        let eps = config.layer_norm_eps as f32;
        let h = config.hidden_size;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{i}");
            let square = |w: &mut Weights, name: &str| w.dense(&format!("{p}.{name}"), h, Some(h));
            let intermediate = w.dense(&format!("{p}.intermediate.dense"), h, None)?;
            let inner = intermediate.bias_values.len();
            layers.push(Layer {
                query: square(&mut w, "attention.self.query")?,
                key: square(&mut w, "attention.self.key")?,
                value: square(&mut w, "attention.self.value")?,
                attention_out: square(&mut w, "attention.output.dense")?,
                attention_norm: w.norm(&format!("{p}.attention.output.LayerNorm"), eps, h)?,
                intermediate,
                output: w.dense(&format!("{p}.output.dense"), inner, Some(h))?,
                output_norm: w.norm(&format!("{p}.output.LayerNorm"), eps, h)?,
            });
        }
        let embedding_norm = w.norm("embeddings.LayerNorm", eps, h)?;
        let layers = if packed {
            Layers::Packed(
                layers
                    .into_iter()
                    .map(|l| l.map(DenseWeights::packed))
                    .collect::<Result<_>>()?,
            )
        } else {
            Layers::Candle(
                layers
                    .into_iter()
                    .map(|l| l.map(DenseWeights::plain))
                    .collect::<Result<_>>()?,
            )
        };
        let model = MiniLm {
            id: id.to_owned(),
            tokenizer,
            words: w.take("embeddings.word_embeddings.weight")?,
            positions: w.take("embeddings.position_embeddings.weight")?,
            token_type: w
                .take("embeddings.token_type_embeddings.weight")?
                .narrow(0, 0, 1)
                .map_err(model_error)?,
            embedding_norm,
            layers,
            heads: config.num_attention_heads,
            hidden: config.hidden_size,
            device,
        };
        if model.words.dim(1).map_err(model_error)? != model.hidden {
            return Err(model_error("word embeddings do not match the hidden size"));
        }
        Ok(model)
    }

    /// Tokens `text` is read as ([CLS] and [SEP] included, after truncation).
    pub fn count_tokens(&self, text: &str) -> Result<usize> {
        let encoding = self.tokenizer.encode(text, true).map_err(model_error)?;
        Ok(encoding
            .get_attention_mask()
            .iter()
            .filter(|m| **m == 1)
            .count())
    }

    /// One forward pass over texts padded to the same length.
    fn forward(
        &self,
        ids: &[u32],
        mask: &[u32],
        batch: usize,
        len: usize,
    ) -> Result<Vec<Vec<f32>>> {
        self.forward_tensors(ids, mask, batch, len)
            .map_err(model_error)
    }

    /// `layers` through candle's operations.
    fn layers_with_candle(
        &self,
        layers: &[Layer<Dense>],
        mut x: Tensor,
        mask: &Tensor,
        batch: usize,
        len: usize,
    ) -> candle_core::Result<Tensor> {
        let (h, heads) = (self.hidden, self.heads);
        let head_dim = h / heads;
        // Padding gets no attention: a large negative bias before the softmax.
        let bias = ((mask.clone() - 1.0)? * 1e9)?.reshape((batch, 1, 1, len))?;
        let scale = 1.0 / (head_dim as f64).sqrt();
        let split = |t: Tensor| -> candle_core::Result<Tensor> {
            t.reshape((batch, len, heads, head_dim))?
                .transpose(1, 2)?
                .contiguous()
        };
        for layer in layers {
            let q = split(layer.query.forward(&x)?)?;
            let k = split(layer.key.forward(&x)?)?;
            let v = split(layer.value.forward(&x)?)?;
            let scores = (q.matmul(&k.t()?.contiguous()?)? * scale)?.broadcast_add(&bias)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let context = probs
                .matmul(&v)?
                .transpose(1, 2)?
                .contiguous()?
                .reshape((batch * len, h))?;
            let attended = layer
                .attention_norm
                .forward(&(layer.attention_out.forward(&context)? + &x)?)?;
            let ffn = layer.feed_forward(&attended)?;
            x = layer.output_norm.forward(&(ffn + &attended)?)?;
        }
        Ok(x)
    }

    fn forward_tensors(
        &self,
        ids: &[u32],
        mask: &[u32],
        batch: usize,
        len: usize,
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let (h, heads) = (self.hidden, self.heads);
        // Real tokens first in each text, as `embed` lays them out.
        let lengths: Vec<usize> = mask
            .chunks_exact(len.max(1))
            .map(|m| m.iter().take_while(|&&m| m == 1).count())
            .collect();
        debug_assert!(
            mask.chunks_exact(len.max(1))
                .zip(&lengths)
                .all(|(m, &n)| m[n..].iter().all(|&m| m == 0)),
            "a mask with padding before a real token"
        );
        let ids = Tensor::from_slice(ids, batch * len, &self.device)?;
        let mask_f: Vec<f32> = mask.iter().map(|&m| m as f32).collect();
        let mask = Tensor::from_vec(mask_f, (batch, len), &self.device)?;
        // Embeddings: word + position + token type 0, normalized. Rows are (text, token).
        let words = self.words.index_select(&ids, 0)?.reshape((batch, len, h))?;
        let positions = self.positions.narrow(0, 0, len)?;
        let x = words
            .broadcast_add(&positions)?
            .broadcast_add(&self.token_type)?;
        let x = self.embedding_norm.forward(&x)?.reshape((batch * len, h))?;
        let x = match &self.layers {
            Layers::Packed(layers) => {
                let mut values = x.flatten_all()?.to_vec1::<f32>()?;
                for layer in layers {
                    values = layer.forward(&values, len, &lengths, heads);
                }
                Tensor::from_vec(values, (batch * len, h), &self.device)?
            }
            Layers::Candle(layers) => self.layers_with_candle(layers, x, &mask, batch, len)?,
        };
        // Mean over real tokens, then unit length.
        let x = x.reshape((batch, len, h))?;
        let summed = x.broadcast_mul(&mask.unsqueeze(2)?)?.sum(1)?;
        let counts = mask.sum_keepdim(1)?.clamp(1.0, f64::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        mean.broadcast_div(&norm)?.to_vec2::<f32>()
    }
}

impl Embedder for MiniLm {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.hidden
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(model_error)?;
        // Texts of similar length share a pass, so little is spent on padding.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        let mut start = 0;
        while start < order.len() {
            let mut end = start + 1;
            while end < order.len()
                && end - start < BATCH_TEXTS
                && (end + 1 - start) * encodings[order[end]].get_ids().len() <= BATCH_TOKENS
            {
                end += 1;
            }
            let group = &order[start..end];
            let len = group
                .iter()
                .map(|&i| encodings[i].get_ids().len())
                .max()
                .unwrap_or(0);
            let mut ids = Vec::with_capacity(group.len() * len);
            let mut mask = Vec::with_capacity(group.len() * len);
            for &i in group {
                let e = &encodings[i];
                ids.extend_from_slice(e.get_ids());
                mask.extend(std::iter::repeat_n(1u32, e.get_ids().len()));
                let pad = len - e.get_ids().len();
                ids.extend(std::iter::repeat_n(0u32, pad));
                mask.extend(std::iter::repeat_n(0u32, pad));
            }
            let vectors = self.forward(&ids, &mask, group.len(), len)?;
            for (&i, v) in group.iter().zip(vectors) {
                out[i] = v;
            }
            start = end;
        }
        Ok(out)
    }
}
