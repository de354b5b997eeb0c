//! A dense layer for many rows, `y = x · Wᵀ + b` in f32, on AVX-512.
//!
//! The encoder's matrix products take most of an embedding's time. The general matrix
//! product it otherwise uses (the `gemm` crate, as candle builds it) runs AVX2: eight
//! multiply-adds an instruction. AVX-512 does sixteen at the same rate on the Xeon these
//! benches run on. Here the weight is stored in the order the kernel reads it (sixteen
//! outputs of one input side by side), once, when the layer is built, and eight rows times
//! thirty-two outputs are summed at once, in registers.
//!
//! The sums are f32 throughout, as the model's own: only their order differs from a plain
//! loop's. (Rounding to bf16 or int8 would do more a cycle, but on that Xeon `vdpbf16ps`
//! runs slower than f32, and int8 left the encoder's vectors at cosine 0.998 with its f32
//! ones: `benches/README.md`.)

use std::ops::Range;

use rayon::prelude::*;

/// Outputs of one SIMD register of sums.
const LANES: usize = 16;
/// Rows one call of the SIMD kernel computes at most.
const TILE_ROWS: usize = 8;
/// Output blocks one call of the SIMD kernel computes at most: with [`TILE_ROWS`], 24
/// registers of sums, and eleven loads for every 24 multiply-adds.
const TILE_BLOCKS: usize = 3;
/// Rows one task computes at least.
const ROWS_PER_TASK: usize = 8 * TILE_ROWS;
/// Output blocks one task computes, when the rows are few.
const BLOCKS_PER_TASK: usize = 4;

/// Whether this CPU runs [`PackedDense`] on its SIMD kernel (AVX-512 F). Elsewhere the
/// layer still computes the same numbers, one at a time, far slower than a matrix product.
pub fn packed_fast() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A dense layer's weight, stored for the kernel, and bias.
#[derive(Debug, Clone)]
pub struct PackedDense {
    inputs: usize,
    outputs: usize,
    /// Outputs rounded up to whole [`LANES`].
    padded_outputs: usize,
    /// `[output block][input][LANES]`: sixteen outputs' weights of one input side by side.
    packed: Vec<f32>,
    bias: Vec<f32>,
}

impl PackedDense {
    /// Stores `weight` (`outputs × inputs`, row-major, as a model stores it) for the
    /// kernel, and keeps `bias`.
    pub fn new(weight: &[f32], bias: &[f32]) -> PackedDense {
        let outputs = bias.len();
        assert!(outputs > 0, "a layer with no outputs");
        let inputs = weight.len() / outputs;
        assert_eq!(
            weight.len(),
            outputs * inputs,
            "the weight is not outputs × inputs"
        );
        let padded_outputs = outputs.next_multiple_of(LANES);
        let mut packed = vec![0f32; padded_outputs * inputs];
        for (j, row) in weight.chunks_exact(inputs.max(1)).enumerate() {
            let (block, lane) = (j / LANES, j % LANES);
            for (k, w) in row.iter().enumerate() {
                packed[(block * inputs + k) * LANES + lane] = *w;
            }
        }
        let mut padded_bias = bias.to_vec();
        padded_bias.resize(padded_outputs, 0.0);
        PackedDense {
            inputs,
            outputs,
            padded_outputs,
            packed,
            bias: padded_bias,
        }
    }

    /// Inputs a row has.
    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// Outputs a row gets.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// `x · Wᵀ + b` for `x` of `rows × inputs`, row-major: `rows × outputs`, row-major.
    ///
    /// Many rows are split between the cores by rows; a few (a query) by outputs.
    pub fn forward(&self, x: &[f32], rows: usize) -> Vec<f32> {
        assert_eq!(x.len(), rows * self.inputs, "x is not rows × inputs");
        let n = self.padded_outputs;
        let blocks = n / LANES;
        let y = if rows > ROWS_PER_TASK {
            let mut y = vec![0f32; rows * n];
            y.par_chunks_mut(ROWS_PER_TASK * n)
                .enumerate()
                .for_each(|(task, y)| {
                    self.rows_into(x, task * ROWS_PER_TASK, 0..blocks, y, n);
                });
            y
        } else {
            let parts: Vec<Vec<f32>> = (0..blocks.div_ceil(BLOCKS_PER_TASK))
                .into_par_iter()
                .map(|part| {
                    let range = part * BLOCKS_PER_TASK..((part + 1) * BLOCKS_PER_TASK).min(blocks);
                    let width = range.len() * LANES;
                    let mut y = vec![0f32; rows * width];
                    self.rows_into(x, 0, range, &mut y, width);
                    y
                })
                .collect();
            let mut y = Vec::with_capacity(rows * n);
            for r in 0..rows {
                for part in &parts {
                    let width = part.len() / rows;
                    y.extend_from_slice(&part[r * width..(r + 1) * width]);
                }
            }
            y
        };
        if n == self.outputs {
            return y;
        }
        y.chunks_exact(n)
            .flat_map(|row| &row[..self.outputs])
            .copied()
            .collect()
    }

    /// Rows from `first` on, as many as `y` holds at `stride` a row, times the output
    /// blocks `blocks` (written from column 0 of each row of `y`).
    fn rows_into(
        &self,
        x: &[f32],
        first: usize,
        blocks: Range<usize>,
        y: &mut [f32],
        stride: usize,
    ) {
        assert!(stride >= blocks.len() * LANES && blocks.end * LANES <= self.padded_outputs);
        let count = y.len() / stride;
        assert!(
            (first + count) * self.inputs <= x.len(),
            "rows past the end of x"
        );
        let fast = packed_fast();
        // Three blocks of outputs (their weights stay in the core's cache) times every row
        // of the task, then the next three.
        for start in blocks.clone().step_by(TILE_BLOCKS) {
            let pair = start..(start + TILE_BLOCKS).min(blocks.end);
            let column = (start - blocks.start) * LANES;
            let mut r = 0;
            while r < count {
                let tile_rows = (count - r).min(TILE_ROWS);
                let tile = &mut y[r * stride + column
                    ..(r + tile_rows - 1) * stride + column + pair.len() * LANES];
                #[cfg(target_arch = "x86_64")]
                if fast {
                    // SAFETY: `packed_fast` found AVX-512 F; `tile_rows` is 1..=8.
                    unsafe {
                        avx512::tile(self, x, first + r, tile_rows, pair.clone(), tile, stride);
                    }
                    r += tile_rows;
                    continue;
                }
                let _ = fast;
                self.tile_portable(x, first + r, tile_rows, pair.clone(), tile, stride);
                r += tile_rows;
            }
        }
    }

    /// The same sums as the SIMD kernel, in its order, one at a time.
    fn tile_portable(
        &self,
        x: &[f32],
        first: usize,
        count: usize,
        blocks: Range<usize>,
        y: &mut [f32],
        stride: usize,
    ) {
        let inputs = self.inputs;
        for r in 0..count {
            let row = &x[(first + r) * inputs..(first + r + 1) * inputs];
            for (c, j) in (blocks.start * LANES..blocks.end * LANES).enumerate() {
                let (block, lane) = (j / LANES, j % LANES);
                let weights = &self.packed[block * inputs * LANES..(block + 1) * inputs * LANES];
                let sum = row.iter().enumerate().fold(0f32, |sum, (k, v)| {
                    v.mul_add(weights[k * LANES + lane], sum)
                });
                y[r * stride + c] = sum + self.bias[j];
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::{
        _mm512_add_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_set1_ps, _mm512_setzero_ps,
        _mm512_storeu_ps,
    };
    use std::ops::Range;

    use super::{LANES, PackedDense};

    /// Rows `first..first + count` of `x` times the output blocks `blocks` into `y`
    /// (`count` rows of `stride`, from column 0).
    ///
    /// # Safety
    /// The CPU has AVX-512 F. `count` is 1..=8 and `blocks` holds 1..=3 blocks.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile(
        layer: &PackedDense,
        x: &[f32],
        first: usize,
        count: usize,
        blocks: Range<usize>,
        y: &mut [f32],
        stride: usize,
    ) {
        // SAFETY: as the caller promised; each arm passes its own block count.
        unsafe {
            match blocks.len() {
                1 => with_blocks::<1>(layer, x, first, count, blocks.start, y, stride),
                2 => with_blocks::<2>(layer, x, first, count, blocks.start, y, stride),
                3 => with_blocks::<3>(layer, x, first, count, blocks.start, y, stride),
                n => unreachable!("a tile of {n} blocks"),
            }
        }
    }

    /// # Safety
    /// As [`tile`], with `B` blocks from `block`.
    #[target_feature(enable = "avx512f")]
    unsafe fn with_blocks<const B: usize>(
        layer: &PackedDense,
        x: &[f32],
        first: usize,
        count: usize,
        block: usize,
        y: &mut [f32],
        stride: usize,
    ) {
        // SAFETY: as the caller promised; each arm passes its own row count.
        unsafe {
            match count {
                1 => rows::<1, B>(layer, x, first, block, y, stride),
                2 => rows::<2, B>(layer, x, first, block, y, stride),
                3 => rows::<3, B>(layer, x, first, block, y, stride),
                4 => rows::<4, B>(layer, x, first, block, y, stride),
                5 => rows::<5, B>(layer, x, first, block, y, stride),
                6 => rows::<6, B>(layer, x, first, block, y, stride),
                7 => rows::<7, B>(layer, x, first, block, y, stride),
                8 => rows::<8, B>(layer, x, first, block, y, stride),
                _ => unreachable!("a tile of {count} rows"),
            }
        }
    }

    /// `R` rows from `first` times `B` output blocks from `block`.
    ///
    /// # Safety
    /// The CPU has AVX-512 F.
    #[target_feature(enable = "avx512f")]
    unsafe fn rows<const R: usize, const B: usize>(
        layer: &PackedDense,
        x: &[f32],
        first: usize,
        block: usize,
        y: &mut [f32],
        stride: usize,
    ) {
        let inputs = layer.inputs;
        // What every unchecked access below relies on.
        assert!(x.len() >= (first + R) * inputs);
        assert!((block + B) * LANES <= layer.padded_outputs && stride >= B * LANES);
        assert!(y.len() >= (R - 1) * stride + B * LANES);
        assert_eq!(layer.packed.len(), layer.padded_outputs * inputs);
        let rows: [*const f32; R] = std::array::from_fn(|r| x[(first + r) * inputs..].as_ptr());
        let weights: [*const f32; B] =
            std::array::from_fn(|b| layer.packed[(block + b) * inputs * LANES..].as_ptr());
        let mut sums = [[_mm512_setzero_ps(); B]; R];
        for k in 0..inputs {
            // SAFETY: k < inputs: each weight block holds `inputs` runs of 16, and each row
            // `inputs` values.
            unsafe {
                let w: [_; B] = std::array::from_fn(|b| _mm512_loadu_ps(weights[b].add(k * LANES)));
                for (sum, row) in sums.iter_mut().zip(rows) {
                    let v = _mm512_set1_ps(*row.add(k));
                    for (sum, w) in sum.iter_mut().zip(w) {
                        *sum = _mm512_fmadd_ps(v, w, *sum);
                    }
                }
            }
        }
        for (r, sum) in sums.iter().enumerate() {
            for (b, sum) in sum.iter().enumerate() {
                // SAFETY: (block + b + 1) · 16 <= padded outputs, inside the bias; (b + 1) ·
                // 16 <= stride, inside row r of `y` (asserted above).
                unsafe {
                    let bias = _mm512_loadu_ps(layer.bias.as_ptr().add((block + b) * LANES));
                    _mm512_storeu_ps(
                        y.as_mut_ptr().add(r * stride + b * LANES),
                        _mm512_add_ps(*sum, bias),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{dense_reference as reference, values};

    #[test]
    fn the_simd_and_portable_kernels_give_the_same_numbers() {
        if !packed_fast() {
            println!("this CPU has no AVX-512: only the portable kernel runs here");
            return;
        }
        for (rows, inputs, outputs) in [(13, 384, 384), (9, 1536, 80), (30, 101, 17), (1, 1, 16)] {
            let layer = PackedDense::new(&values(outputs * inputs, 2), &values(outputs, 3));
            let x = values(rows * inputs, 1);
            let n = layer.padded_outputs;
            let mut simd = vec![0f32; rows * n];
            let mut portable = vec![0f32; rows * n];
            for first in (0..rows).step_by(TILE_ROWS) {
                let count = (rows - first).min(TILE_ROWS);
                let at = first * n..(first + count) * n;
                // Up to three blocks at a time, as `rows_into` calls it.
                for start in (0..n / LANES).step_by(TILE_BLOCKS) {
                    let blocks = start..(start + TILE_BLOCKS).min(n / LANES);
                    let at = at.start + start * LANES..at.end;
                    // SAFETY: checked above that the CPU has AVX-512 F.
                    unsafe {
                        avx512::tile(
                            &layer,
                            &x,
                            first,
                            count,
                            blocks.clone(),
                            &mut simd[at.clone()],
                            n,
                        );
                    }
                    layer.tile_portable(&x, first, count, blocks, &mut portable[at], n);
                }
            }
            // The same fused multiply-adds in the same order.
            assert_eq!(simd, portable, "{rows}×{inputs}→{outputs}");
        }
    }

    #[test]
    fn matches_the_definition_for_every_shape() {
        // Many rows (split by rows), a few (split by outputs), odd sizes, none.
        for (rows, inputs, outputs) in [
            (1, 384, 384),
            (7, 384, 1536),
            (40, 1536, 384),
            (100, 384, 384),
            (33, 9, 300),
            (3, 13, 1),
            (0, 384, 384),
        ] {
            let (x, w, b) = (
                values(rows * inputs, 1),
                values(outputs * inputs, 2),
                values(outputs, 3),
            );
            let layer = PackedDense::new(&w, &b);
            assert_eq!((layer.inputs(), layer.outputs()), (inputs, outputs));
            let got = layer.forward(&x, rows);
            let want = reference(&x, rows, &w, &b);
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(*g) - w).abs() <= 1e-4,
                    "{rows}×{inputs}→{outputs} at {i}: {g} vs {w}"
                );
            }
        }
    }
}
