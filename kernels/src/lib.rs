//! Numeric kernels for eywa's embedder: dense layers ([`dense_rows`] for a few rows on
//! AVX2, [`PackedDense`] for any number on AVX-512), self-attention ([`attention`]), the
//! residual layer norm ([`add_norm`]) and GELU ([`gelu`]).
//!
//! `dense_rows` computes `y = x · Wᵀ + b` with `W` read straight from its stored `(out, in)`
//! rows.
//! A query is a handful of tokens, so the encoder multiplies a few rows by each weight
//! matrix once: the work is reading the 42 MB of weights, not the arithmetic. A general
//! matrix product repacks each weight matrix before multiplying (reading and writing it
//! again); here each weight row is read once and dotted with eight input rows at a time,
//! and the outputs are split between the cores.

use rayon::prelude::*;

mod attention;
mod gelu;
mod packed;

pub use attention::{add_norm, attention};
pub use gelu::gelu;
pub use packed::{PackedDense, packed_fast};

/// Rows at most for which [`dense_rows`] beats the packed matrix product.
pub const FEW_ROWS: usize = 24;
/// Input rows dotted with each weight row at once: eight independent sums keep the
/// multiply-add units busy.
const BLOCK: usize = 8;
/// Outputs one task computes at least.
const OUTPUTS_PER_TASK: usize = 128;

/// `y = x · Wᵀ + b`: `x` is `rows × inputs`, `weight` is `outputs × inputs`, `bias` has
/// `outputs` values; the result is `rows × outputs`, row-major.
pub fn dense_rows(x: &[f32], rows: usize, weight: &[f32], bias: &[f32]) -> Vec<f32> {
    let outputs = bias.len();
    let inputs = weight.len() / outputs.max(1);
    assert_eq!(x.len(), rows * inputs, "x is not rows × inputs");
    assert_eq!(
        weight.len(),
        outputs * inputs,
        "the weight is not outputs × inputs"
    );
    if rows == 0 || outputs == 0 {
        return Vec::new();
    }
    // Computed output-major (each task writes a run of outputs), then turned around.
    let mut by_output = vec![0f32; outputs * rows];
    by_output
        .par_chunks_mut(rows)
        .enumerate()
        .with_min_len(OUTPUTS_PER_TASK)
        .for_each(|(j, y)| {
            let w = &weight[j * inputs..(j + 1) * inputs];
            // Eight rows share each read of the weight row (the last repeated to fill).
            for (block, y) in y.chunks_mut(BLOCK).enumerate() {
                let sums = dots(
                    std::array::from_fn(|r| {
                        let r = (block * BLOCK + r).min(rows - 1);
                        &x[r * inputs..(r + 1) * inputs]
                    }),
                    w,
                );
                for (y, sum) in y.iter_mut().zip(sums) {
                    *y = bias[j] + sum;
                }
            }
        });
    let mut y = vec![0f32; rows * outputs];
    for j in 0..outputs {
        for r in 0..rows {
            y[r * outputs + j] = by_output[j * rows + r];
        }
    }
    y
}

/// The dot products of `w` with [`BLOCK`] rows as long as it (AVX2 and FMA when the CPU
/// has them).
fn dots(xs: [&[f32]; BLOCK], w: &[f32]) -> [f32; BLOCK] {
    assert!(
        xs.iter().all(|x| x.len() == w.len()),
        "rows and weights differ in length"
    );
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU was just checked for AVX2 and FMA, and every row is as long as
        // `w` (asserted above).
        return unsafe { dots_avx2(xs, w) };
    }
    dots_portable(xs, w)
}

fn dots_portable(xs: [&[f32]; BLOCK], w: &[f32]) -> [f32; BLOCK] {
    xs.map(|x| x.iter().zip(w).map(|(a, b)| a * b).sum())
}

/// # Safety
/// The CPU has AVX2 and FMA; every row of `xs` is as long as `w`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dots_avx2(xs: [&[f32]; BLOCK], w: &[f32]) -> [f32; BLOCK] {
    use std::arch::x86_64::{
        __m256, _mm_add_ps, _mm_cvtss_f32, _mm_hadd_ps, _mm256_castps256_ps128,
        _mm256_extractf128_ps, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps,
    };
    const LANES: usize = 8;
    let whole = w.len() / LANES * LANES;
    let mut acc: [__m256; BLOCK] = [_mm256_setzero_ps(); BLOCK];
    let mut k = 0;
    while k < whole {
        // SAFETY: k + 8 <= whole <= the length of `w` and of every row.
        unsafe {
            let wv = _mm256_loadu_ps(w.as_ptr().add(k));
            for (a, x) in acc.iter_mut().zip(&xs) {
                *a = _mm256_fmadd_ps(_mm256_loadu_ps(x.as_ptr().add(k)), wv, *a);
            }
        }
        k += LANES;
    }
    let mut out = [0f32; BLOCK];
    for ((o, a), x) in out.iter_mut().zip(acc).zip(&xs) {
        let half = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
        let quarter = _mm_hadd_ps(half, half);
        let sum = _mm_cvtss_f32(_mm_hadd_ps(quarter, quarter));
        let tail: f32 = x[whole..].iter().zip(&w[whole..]).map(|(a, b)| a * b).sum();
        *o = sum + tail;
    }
    out
}

/// What the tests of every kernel share.
#[cfg(test)]
mod testing {
    /// `n` values in [-0.5, 0.5), the same for the same seed.
    pub(crate) fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect()
    }

    /// `x · Wᵀ + b` as defined, in f64: `x` is `rows × inputs`, `weight` `outputs × inputs`.
    pub(crate) fn dense_reference(
        x: &[f32],
        rows: usize,
        weight: &[f32],
        bias: &[f32],
    ) -> Vec<f64> {
        let (outputs, inputs) = (bias.len(), weight.len() / bias.len());
        let mut y = Vec::with_capacity(rows * outputs);
        for r in 0..rows {
            for j in 0..outputs {
                let s: f64 = (0..inputs)
                    .map(|k| f64::from(x[r * inputs + k]) * f64::from(weight[j * inputs + k]))
                    .sum();
                y.push(s + f64::from(bias[j]));
            }
        }
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{dense_reference as reference, values};

    #[test]
    fn the_simd_and_portable_dots_agree() {
        #[cfg(target_arch = "x86_64")]
        if !(std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma"))
        {
            println!("this CPU has no AVX2/FMA: only the portable dots run here");
        }
        for len in [384, 1536, 13, 8, 1] {
            let x = values(BLOCK * len, 4);
            let w = values(len, 5);
            let rows: [&[f32]; BLOCK] = std::array::from_fn(|r| &x[r * len..(r + 1) * len]);
            for (a, b) in dots(rows, &w).iter().zip(dots_portable(rows, &w)) {
                assert!((a - b).abs() < 1e-4, "length {len}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn matches_the_definition_for_every_shape_the_encoder_uses() {
        // Odd sizes too: a tail after the last eight, one row, one output.
        for (rows, inputs, outputs) in [
            (1, 384, 384),
            (7, 384, 1536),
            (24, 1536, 384),
            (13, 384, 384),
            (17, 9, 300),
            (3, 13, 1),
            (5, 9, 300),
            (0, 384, 384),
        ] {
            let x = values(rows * inputs, 1);
            let w = values(outputs * inputs, 2);
            let b = values(outputs, 3);
            let got = dense_rows(&x, rows, &w, &b);
            let want = reference(&x, rows, &w, &b);
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(*g) - w).abs() < 1e-4,
                    "{rows}×{inputs}→{outputs} at {i}: {g} vs {w}"
                );
            }
        }
    }
}
