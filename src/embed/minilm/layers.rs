//! The encoder's parts as read from the weights file: its config, dense layers (candle's,
//! or packed for our SIMD kernels), layer norms and transformer layers.

use candle_core::{DType, Tensor};

use super::model_error;
use crate::Result;

/// What `config.json` must say for the weights to be read as this encoder.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Config {
    pub(super) hidden_size: usize,
    pub(super) num_hidden_layers: usize,
    pub(super) num_attention_heads: usize,
    #[serde(default = "default_eps")]
    pub(super) layer_norm_eps: f64,
    #[serde(default)]
    pub(super) hidden_act: Option<String>,
}

pub(super) fn default_eps() -> f64 {
    1e-12
}

/// A dense layer on candle's path: its weight as stored (`(out, in)` rows, for a few
/// input rows) and transposed (for the matrix product of a batch).
pub(super) struct Dense {
    pub(super) weight: Vec<f32>,
    pub(super) weight_t: Tensor,
    pub(super) bias_values: Vec<f32>,
    pub(super) bias: Tensor,
}

impl Dense {
    /// `x` is `(rows, in)`; the result `(rows, out)`.
    pub(super) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let rows = x.dim(0)?;
        if rows <= eywa_kernels::FEW_ROWS {
            let values = x.flatten_all()?.to_vec1::<f32>()?;
            let y = eywa_kernels::dense_rows(&values, rows, &self.weight, &self.bias_values);
            return Tensor::from_vec(y, (rows, self.bias_values.len()), x.device());
        }
        x.matmul(&self.weight_t)?.broadcast_add(&self.bias)
    }
}

/// A dense layer's weight and bias as read (shapes checked), before either path takes it.
pub(super) struct DenseWeights {
    pub(super) weight: Tensor,
    pub(super) bias: Tensor,
    pub(super) values: Vec<f32>,
    pub(super) bias_values: Vec<f32>,
}

impl DenseWeights {
    pub(super) fn packed(self) -> Result<eywa_kernels::PackedDense> {
        Ok(eywa_kernels::PackedDense::new(
            &self.values,
            &self.bias_values,
        ))
    }

    pub(super) fn plain(self) -> Result<Dense> {
        Ok(Dense {
            weight_t: self
                .weight
                .t()
                .and_then(|t| t.contiguous())
                .map_err(model_error)?,
            weight: self.values,
            bias_values: self.bias_values,
            bias: self.bias,
        })
    }
}

pub(super) struct Norm {
    pub(super) weight: Tensor,
    pub(super) bias: Tensor,
    pub(super) gamma: Vec<f32>,
    pub(super) beta: Vec<f32>,
    pub(super) eps: f32,
}

impl Norm {
    pub(super) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        candle_nn::ops::layer_norm(x, &self.weight, &self.bias, self.eps)
    }

    /// `x = norm(x + residual)`, rows of the hidden size.
    pub(super) fn add_norm(&self, x: &mut [f32], residual: &[f32]) {
        eywa_kernels::add_norm(x, residual, &self.gamma, &self.beta, self.eps);
    }
}

/// One encoder layer, its dense layers `D`: [`Dense`] on candle's path,
/// `eywa_kernels::PackedDense` on eywa's kernels.
pub(super) struct Layer<D> {
    pub(super) query: D,
    pub(super) key: D,
    pub(super) value: D,
    pub(super) attention_out: D,
    pub(super) attention_norm: Norm,
    pub(super) intermediate: D,
    pub(super) output: D,
    pub(super) output_norm: Norm,
}

impl Layer<DenseWeights> {
    /// The same layer with each dense layer made into a `T`.
    pub(super) fn map<T>(self, into: impl Fn(DenseWeights) -> Result<T>) -> Result<Layer<T>> {
        Ok(Layer {
            query: into(self.query)?,
            key: into(self.key)?,
            value: into(self.value)?,
            attention_out: into(self.attention_out)?,
            attention_norm: self.attention_norm,
            intermediate: into(self.intermediate)?,
            output: into(self.output)?,
            output_norm: self.output_norm,
        })
    }
}

/// The encoder's layers, on one path or the other.
pub(super) enum Layers {
    /// Where the CPU has AVX-512: on plain vectors, attention included.
    Packed(Vec<Layer<eywa_kernels::PackedDense>>),
    Candle(Vec<Layer<Dense>>),
}

impl Layer<Dense> {
    /// The inner layer, GELU and the output layer (before the residual and norm).
    pub(super) fn feed_forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let h = self.intermediate.forward(x)?;
        let mut values = h.flatten_all()?.to_vec1::<f32>()?;
        eywa_kernels::gelu(&mut values);
        self.output
            .forward(&Tensor::from_vec(values, h.shape(), x.device())?)
    }
}

impl Layer<eywa_kernels::PackedDense> {
    /// The whole layer on plain vectors: `x` is `lengths.len() × len` rows, text `t`'s
    /// first `lengths[t]` real.
    pub(super) fn forward(
        &self,
        x: &[f32],
        len: usize,
        lengths: &[usize],
        heads: usize,
    ) -> Vec<f32> {
        let rows = lengths.len() * len;
        let context = eywa_kernels::attention(
            &self.query.forward(x, rows),
            &self.key.forward(x, rows),
            &self.value.forward(x, rows),
            len,
            lengths,
            heads,
        );
        let mut attended = self.attention_out.forward(&context, rows);
        self.attention_norm.add_norm(&mut attended, x);
        let mut h = self.intermediate.forward(&attended, rows);
        eywa_kernels::gelu(&mut h);
        let mut y = self.output.forward(&h, rows);
        self.output_norm.add_norm(&mut y, &attended);
        y
    }
}

/// The tensors of a safetensors file, taken out by name.
pub(super) struct Weights(pub(super) std::collections::HashMap<String, Tensor>);

impl Weights {
    pub(super) fn take(&mut self, name: &str) -> Result<Tensor> {
        let t = self
            .0
            .remove(name)
            .ok_or_else(|| model_error(format!("the weights have no `{name}`")))?;
        t.to_dtype(DType::F32).map_err(model_error)
    }

    /// A dense layer of `inputs` to `outputs` (any number when `None`); its weight and bias
    /// must have those shapes.
    pub(super) fn dense(
        &mut self,
        prefix: &str,
        inputs: usize,
        outputs: Option<usize>,
    ) -> Result<DenseWeights> {
        let weight = self.take(&format!("{prefix}.weight"))?;
        let bias = self.take(&format!("{prefix}.bias"))?;
        let rows = weight.dims().first().copied().unwrap_or(0);
        if weight.dims() != [outputs.unwrap_or(rows), inputs]
            || bias.dims() != [outputs.unwrap_or(rows)]
            || rows == 0
        {
            return Err(model_error(format!(
                "`{prefix}` is {:?} with a bias of {:?}, not {} × {inputs}",
                weight.dims(),
                bias.dims(),
                outputs.map_or("n".to_owned(), |o| o.to_string())
            )));
        }
        Ok(DenseWeights {
            values: weight
                .flatten_all()
                .and_then(|w| w.to_vec1::<f32>())
                .map_err(model_error)?,
            bias_values: bias.to_vec1::<f32>().map_err(model_error)?,
            weight,
            bias,
        })
    }

    /// A layer norm of `width` values.
    pub(super) fn norm(&mut self, prefix: &str, eps: f32, width: usize) -> Result<Norm> {
        let weight = self.take(&format!("{prefix}.weight"))?;
        let bias = self.take(&format!("{prefix}.bias"))?;
        if weight.dims() != [width] || bias.dims() != [width] {
            return Err(model_error(format!(
                "`{prefix}` is {:?} and {:?}, not {width} wide",
                weight.dims(),
                bias.dims()
            )));
        }
        Ok(Norm {
            gamma: weight.to_vec1::<f32>().map_err(model_error)?,
            beta: bias.to_vec1::<f32>().map_err(model_error)?,
            weight,
            bias,
            eps,
        })
    }
}
