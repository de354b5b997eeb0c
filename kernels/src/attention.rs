//! The encoder's self-attention and its residual layer norm, on plain vectors: each text
//! attends over its own real tokens only, head by head.
//!
//! Run through candle, attention makes the whole `texts × heads × tokens × tokens` score
//! tensor (100 MB for 32 texts of 256 tokens), adds a mask to it, and takes each
//! exponential through the C library. Here a text's scores for one token at a time (at most
//! 256 values) stay in cache, padding is never computed (a padded token attends nowhere and
//! nothing attends to it), and the exponentials are a polynomial the compiler vectorizes.

use rayon::prelude::*;

/// Values of one SIMD register.
const LANES: usize = 16;
/// Rows one layer-norm task takes at least.
const NORM_ROWS_PER_TASK: usize = 64;

/// The context of each token: for every head, the softmax of its query's scaled dot
/// products with the keys of its text's real tokens, times their values.
///
/// `q`, `k` and `v` are `texts × len` rows of `heads × head_dim` values (text-major, each
/// head's values side by side); text `t` has `lengths[t]` real tokens, first. The result is
/// laid out the same; the rows of padding are zero.
pub fn attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    len: usize,
    lengths: &[usize],
    heads: usize,
) -> Vec<f32> {
    let texts = lengths.len();
    let width = q.len() / (texts * len).max(1);
    assert!(
        heads > 0 && width.is_multiple_of(heads),
        "the width is not heads × head_dim"
    );
    assert!(
        q.len() == texts * len * width && k.len() == q.len() && v.len() == q.len(),
        "q, k and v are not texts × len × width"
    );
    assert!(lengths.iter().all(|&n| n <= len), "a text longer than len");
    let mut out = vec![0f32; q.len()];
    if out.is_empty() {
        return out;
    }
    let at = |t: usize| t * len * width..(t + 1) * len * width;
    out.par_chunks_mut(len * width)
        .enumerate()
        .for_each(|(t, out)| {
            let text = Text {
                q: &q[at(t)],
                k: &k[at(t)],
                v: &v[at(t)],
                tokens: lengths[t],
                width,
                heads,
            };
            text.attend_dispatch(out);
        });
    out
}

/// One text's queries, keys and values.
struct Text<'a> {
    q: &'a [f32],
    k: &'a [f32],
    v: &'a [f32],
    tokens: usize,
    width: usize,
    heads: usize,
}

impl Text<'_> {
    fn attend_dispatch(&self, out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512 F.
                return unsafe { self.attend_avx512(out) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                return unsafe { self.attend_avx2(out) };
            }
        }
        self.attend(out, false);
    }

    /// # Safety
    /// The CPU has AVX-512 F.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn attend_avx512(&self, out: &mut [f32]) {
        self.attend(out, true);
    }

    /// # Safety
    /// The CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn attend_avx2(&self, out: &mut [f32]) {
        self.attend(out, false);
    }

    /// The loops the compiler vectorizes for each target above; with `wide` (the CPU has
    /// AVX-512 F) scores and values are summed in registers.
    #[inline(always)]
    fn attend(&self, out: &mut [f32], wide: bool) {
        let (n, width) = (self.tokens, self.width);
        if n == 0 {
            return;
        }
        let dim = width / self.heads;
        let scale = 1.0 / (dim as f32).sqrt();
        // One head's keys turned around (`dim × n`), so that sixteen scores are summed at
        // once; and one token's scores.
        let mut keys = vec![0f32; dim * n];
        let mut scores = vec![0f32; n];
        for h in 0..self.heads {
            let cols = h * dim..(h + 1) * dim;
            for j in 0..n {
                for (d, key) in self.k[j * width..][cols.clone()].iter().enumerate() {
                    keys[d * n + j] = *key;
                }
            }
            for i in 0..n {
                let q = &self.q[i * width..][cols.clone()];
                #[cfg(target_arch = "x86_64")]
                if wide {
                    // SAFETY: the caller found AVX-512 F.
                    unsafe { avx512::scores_of(q, scale, &keys, &mut scores) };
                } else {
                    scores_of(q, scale, &keys, &mut scores);
                }
                #[cfg(not(target_arch = "x86_64"))]
                scores_of(q, scale, &keys, &mut scores);
                let max = max_of(&scores);
                for s in &mut scores {
                    *s = exp(*s - max);
                }
                let inv = 1.0 / sum_of(&scores);
                let context = &mut out[i * width..][cols.clone()];
                #[cfg(target_arch = "x86_64")]
                if wide && dim.is_multiple_of(LANES) {
                    // SAFETY: the caller found AVX-512 F; the head's values are whole
                    // sixteens.
                    unsafe { avx512::weigh_values(&scores, self.v, width, cols.start, context) };
                } else {
                    weigh_values(&scores, self.v, width, cols.start, context);
                }
                #[cfg(not(target_arch = "x86_64"))]
                weigh_values(&scores, self.v, width, cols.start, context);
                for c in context {
                    *c *= inv;
                }
            }
        }
    }
}

/// `scores[j] = scale · q · key j`, with `keys` turned around (`q.len() × n`).
#[inline(always)]
fn scores_of(q: &[f32], scale: f32, keys: &[f32], scores: &mut [f32]) {
    let n = scores.len();
    scores.fill(0.0);
    for (d, q) in q.iter().enumerate() {
        let q = q * scale;
        for (s, key) in scores.iter_mut().zip(&keys[d * n..(d + 1) * n]) {
            *s += q * key;
        }
    }
}

/// `context = Σ_j weights[j] · value j`, where value `j` is `context.len()` values from
/// column `column` of row `j` of `values` (rows of `width`).
#[inline(always)]
fn weigh_values(weights: &[f32], values: &[f32], width: usize, column: usize, context: &mut [f32]) {
    let dim = context.len();
    for (j, w) in weights.iter().enumerate() {
        for (c, v) in context.iter_mut().zip(&values[j * width + column..][..dim]) {
            *c += w * v;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::{
        __m512, _mm512_add_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_set1_ps, _mm512_setzero_ps,
        _mm512_storeu_ps,
    };

    use super::LANES;

    /// [`super::scores_of`] in registers: 64 scores at a time (four independent sums),
    /// then 16, then one by one.
    ///
    /// # Safety
    /// The CPU has AVX-512 F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn scores_of(q: &[f32], scale: f32, keys: &[f32], scores: &mut [f32]) {
        let n = scores.len();
        assert!(keys.len() >= q.len() * n, "fewer keys than q.len() × n");
        let k = keys.as_ptr();
        let mut j = 0;
        while j + 4 * LANES <= n {
            let mut sums = [_mm512_setzero_ps(); 4];
            for (d, q) in q.iter().enumerate() {
                let q = _mm512_set1_ps(q * scale);
                for (u, sum) in sums.iter_mut().enumerate() {
                    // SAFETY: d < q.len() and j + 64 <= n: inside `keys` (asserted).
                    *sum = _mm512_fmadd_ps(
                        q,
                        unsafe { _mm512_loadu_ps(k.add(d * n + j + u * LANES)) },
                        *sum,
                    );
                }
            }
            for (u, sum) in sums.iter().enumerate() {
                // SAFETY: j + 64 <= n.
                unsafe { _mm512_storeu_ps(scores.as_mut_ptr().add(j + u * LANES), *sum) };
            }
            j += 4 * LANES;
        }
        while j + LANES <= n {
            let mut sum = _mm512_setzero_ps();
            for (d, q) in q.iter().enumerate() {
                // SAFETY: d < q.len() and j + 16 <= n: inside `keys`.
                sum = _mm512_fmadd_ps(
                    _mm512_set1_ps(q * scale),
                    unsafe { _mm512_loadu_ps(k.add(d * n + j)) },
                    sum,
                );
            }
            // SAFETY: j + 16 <= n.
            unsafe { _mm512_storeu_ps(scores.as_mut_ptr().add(j), sum) };
            j += LANES;
        }
        for (jj, s) in scores.iter_mut().enumerate().skip(j) {
            *s = q
                .iter()
                .enumerate()
                .map(|(d, q)| q * scale * keys[d * n + jj])
                .sum();
        }
    }

    /// [`super::weigh_values`] in registers: sixteen values wide, four rows at a time into
    /// four independent sums.
    ///
    /// # Safety
    /// The CPU has AVX-512 F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn weigh_values(
        weights: &[f32],
        values: &[f32],
        width: usize,
        column: usize,
        context: &mut [f32],
    ) {
        let dim = context.len();
        assert!(dim.is_multiple_of(LANES), "a head not of whole sixteens");
        assert!(
            weights.is_empty() || (weights.len() - 1) * width + column + dim <= values.len(),
            "fewer values than weights"
        );
        let v = values.as_ptr();
        for start in (0..dim).step_by(LANES) {
            let at = |j: usize| j * width + column + start;
            let mut sums: [__m512; 4] = [_mm512_setzero_ps(); 4];
            let whole = weights.len() / 4 * 4;
            for j in (0..whole).step_by(4) {
                for (u, sum) in sums.iter_mut().enumerate() {
                    // SAFETY: j + u < weights.len(): a row of `values` (asserted).
                    *sum = _mm512_fmadd_ps(
                        _mm512_set1_ps(weights[j + u]),
                        unsafe { _mm512_loadu_ps(v.add(at(j + u))) },
                        *sum,
                    );
                }
            }
            for (j, w) in weights.iter().enumerate().skip(whole) {
                // SAFETY: j < weights.len(): a row of `values`.
                sums[0] = _mm512_fmadd_ps(
                    _mm512_set1_ps(*w),
                    unsafe { _mm512_loadu_ps(v.add(at(j))) },
                    sums[0],
                );
            }
            let total = _mm512_add_ps(
                _mm512_add_ps(sums[0], sums[1]),
                _mm512_add_ps(sums[2], sums[3]),
            );
            // SAFETY: start + 16 <= dim = context.len().
            unsafe { _mm512_storeu_ps(context.as_mut_ptr().add(start), total) };
        }
    }
}

/// Values summed side by side: a float sum in one accumulator is a chain the compiler
/// may not reorder, so it would add one value at a time.
const SIDE_BY_SIDE: usize = 16;

/// The largest value (negative infinity for none).
#[inline(always)]
fn max_of(values: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; SIDE_BY_SIDE];
    let mut chunks = values.chunks_exact(SIDE_BY_SIDE);
    for chunk in &mut chunks {
        for (m, v) in lanes.iter_mut().zip(chunk) {
            *m = if *v > *m { *v } else { *m };
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |m, v| m.max(*v));
    lanes.iter().fold(tail, |m, v| m.max(*v))
}

/// The sum of the values.
#[inline(always)]
fn sum_of(values: &[f32]) -> f32 {
    let mut lanes = [0f32; SIDE_BY_SIDE];
    let mut chunks = values.chunks_exact(SIDE_BY_SIDE);
    for chunk in &mut chunks {
        for (s, v) in lanes.iter_mut().zip(chunk) {
            *s += v;
        }
    }
    chunks.remainder().iter().sum::<f32>() + lanes.iter().sum::<f32>()
}

/// e^x for x ≤ 0 (a score less the largest), to about an f32 unit in the last place:
/// x = n ln 2 + r with |r| ≤ ln 2 / 2, e^r by its series to r⁶, times 2ⁿ. Without a
/// branch, so that the compiler vectorizes it.
#[inline(always)]
fn exp(x: f32) -> f32 {
    // Below -87 e^x is under f32's smallest normal number: zero (chosen after the
    // arithmetic, on a value kept in range).
    let under = x < -87.0;
    let x = x.max(-87.0);
    let n = (x * std::f32::consts::LOG2_E).round();
    // ln 2 in two parts, so that n · LN2_HI is exact.
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    let e = p * f32::from_bits(((n as i32 + 127) << 23) as u32);
    if under { 0.0 } else { e }
}

/// `x[i] = norm(x[i] + residual[i]) · γ + β` for each row of `gamma.len()` values:
/// a layer norm (mean and variance of the row, `eps` added to the variance) of the sum.
pub fn add_norm(x: &mut [f32], residual: &[f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let width = gamma.len();
    assert!(width > 0 && beta.len() == width, "γ and β differ in width");
    assert!(
        x.len() == residual.len() && x.len().is_multiple_of(width),
        "x and the residual are not rows of the width"
    );
    x.par_chunks_mut(NORM_ROWS_PER_TASK * width)
        .zip(residual.par_chunks(NORM_ROWS_PER_TASK * width))
        .for_each(|(x, residual)| {
            for (row, residual) in x.chunks_exact_mut(width).zip(residual.chunks_exact(width)) {
                norm_row(row, residual, gamma, beta, eps);
            }
        });
}

fn norm_row(x: &mut [f32], residual: &[f32], gamma: &[f32], beta: &[f32], eps: f32) {
    for (x, r) in x.iter_mut().zip(residual) {
        *x += r;
    }
    let width = x.len() as f32;
    let mean = x.iter().sum::<f32>() / width;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width;
    let inv = 1.0 / (var + eps).sqrt();
    for ((x, g), b) in x.iter_mut().zip(gamma).zip(beta) {
        *x = (*x - mean) * inv * g + b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` values in [-2, 2).
    fn values(n: usize, seed: u64) -> Vec<f32> {
        crate::testing::values(n, seed)
            .iter()
            .map(|v| v * 4.0)
            .collect()
    }

    #[test]
    fn exp_is_within_two_units_in_the_last_place() {
        for i in 0..=90_000 {
            let x = -(i as f32) / 1000.0;
            let (got, want) = (exp(x), f64::from(x).exp());
            if x < -87.0 {
                // e^-87 is 1.6e-38, a hair above the smallest normal f32: zero below it.
                assert_eq!(got, 0.0);
                continue;
            }
            let err = (f64::from(got) - want).abs() / want;
            assert!(err < 2.5e-7, "exp({x}) = {got}, want {want}");
        }
        assert_eq!(exp(-1000.0), 0.0);
    }

    /// Attention as defined, in f64, over every token (padding masked out of the keys).
    fn reference(
        q: &[f32],
        k: &[f32],
        v: &[f32],
        len: usize,
        lengths: &[usize],
        heads: usize,
    ) -> Vec<f64> {
        let width = q.len() / (lengths.len() * len);
        let dim = width / heads;
        let mut out = vec![0f64; q.len()];
        for (t, &n) in lengths.iter().enumerate() {
            for h in 0..heads {
                for i in 0..n {
                    let row = |m: &[f32], j: usize, d: usize| {
                        f64::from(m[(t * len + j) * width + h * dim + d])
                    };
                    let scores: Vec<f64> = (0..n)
                        .map(|j| {
                            (0..dim).map(|d| row(q, i, d) * row(k, j, d)).sum::<f64>()
                                / (dim as f64).sqrt()
                        })
                        .collect();
                    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let sum: f64 = e.iter().sum();
                    for d in 0..dim {
                        out[(t * len + i) * width + h * dim + d] =
                            (0..n).map(|j| e[j] / sum * row(v, j, d)).sum();
                    }
                }
            }
        }
        out
    }

    #[test]
    fn attends_to_real_tokens_only_as_defined() {
        // Heads of 8 (the portable loops) and of 32 (whole sixteens: the AVX-512 ones),
        // texts of 64 + 16 + 3 tokens, fewer, one and none.
        for (len, heads, dim, lengths) in [
            (9, 3, 8, vec![9, 4, 0, 1]),
            (83, 2, 32, vec![83, 70, 17, 3, 0]),
        ] {
            let size = lengths.len() * len * heads * dim;
            let (q, k, mut v) = (values(size, 1), values(size, 2), values(size, 3));
            // Padding's values must not reach any real token.
            for (t, &n) in lengths.iter().enumerate() {
                for j in n..len {
                    for d in 0..heads * dim {
                        v[(t * len + j) * heads * dim + d] = 1e6;
                    }
                }
            }
            let got = attention(&q, &k, &v, len, &lengths, heads);
            let want = reference(&q, &k, &v, len, &lengths, heads);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(*g) - w).abs() < 1e-5,
                    "head of {dim}, at {i}: {g} vs {w}"
                );
            }
            // The portable loops, whatever this CPU has.
            let width = heads * dim;
            let mut portable = vec![0f32; size];
            for (t, &tokens) in lengths.iter().enumerate() {
                let at = t * len * width..(t + 1) * len * width;
                let text = Text {
                    q: &q[at.clone()],
                    k: &k[at.clone()],
                    v: &v[at.clone()],
                    tokens,
                    width,
                    heads,
                };
                text.attend(&mut portable[at], false);
            }
            for (i, (p, w)) in portable.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(*p) - w).abs() < 1e-5,
                    "portable, head of {dim}, at {i}"
                );
            }
            // Padding rows are zero.
            let row = heads * dim;
            assert!(
                got[(len + lengths[1]) * row..2 * len * row]
                    .iter()
                    .all(|c| *c == 0.0)
            );
        }
        assert!(attention(&[], &[], &[], 0, &[], 2).is_empty());
    }

    #[test]
    fn add_norm_is_a_layer_norm_of_the_sum() {
        let width = 384;
        let rows = 3 * NORM_ROWS_PER_TASK + 5;
        let mut x = values(rows * width, 4);
        let residual = values(rows * width, 5);
        let (gamma, beta) = (values(width, 6), values(width, 7));
        let want: Vec<f64> = x
            .chunks_exact(width)
            .zip(residual.chunks_exact(width))
            .flat_map(|(x, r)| {
                let s: Vec<f64> = x
                    .iter()
                    .zip(r)
                    .map(|(a, b)| f64::from(*a) + f64::from(*b))
                    .collect();
                let mean = s.iter().sum::<f64>() / width as f64;
                let var = s.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / width as f64;
                let (g, b) = (&gamma, &beta);
                s.into_iter()
                    .enumerate()
                    .map(move |(i, v)| {
                        (v - mean) / (var + 1e-12).sqrt() * f64::from(g[i]) + f64::from(b[i])
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        add_norm(&mut x, &residual, &gamma, &beta, 1e-12);
        for (i, (g, w)) in x.iter().zip(&want).enumerate() {
            assert!((f64::from(*g) - w).abs() < 1e-4, "at {i}: {g} vs {w}");
        }
    }
}
