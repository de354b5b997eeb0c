//! GELU, `x · Φ(x) = ½ x (1 + erf(x / √2))`, in place, sixteen values at a time.
//!
//! The encoder applies it to every value of its 1,536-wide inner layer: 2.4 million values
//! for one text of 256 tokens. `erf` from the C library takes a branchy path per value;
//! here a rational approximation of it (Eigen's `generic_fast_erf_float`, accurate to a few
//! units in the last place of f32) is compiled for the widest vectors the CPU has.

use rayon::prelude::*;

/// Values one task computes at least.
const PER_TASK: usize = 16 * 1024;

/// `x[i] = gelu(x[i])` for every value, split between the cores.
pub fn gelu(x: &mut [f32]) {
    x.par_chunks_mut(PER_TASK).for_each(gelu_run);
}

fn gelu_run(x: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512 F.
            return unsafe { gelu_avx512(x) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has AVX2 and FMA.
            return unsafe { gelu_avx2(x) };
        }
    }
    gelu_portable(x);
}

/// # Safety
/// The CPU has AVX-512 F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn gelu_avx512(x: &mut [f32]) {
    gelu_portable(x);
}

/// # Safety
/// The CPU has AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn gelu_avx2(x: &mut [f32]) {
    gelu_portable(x);
}

/// The loop the compiler vectorizes for each target above.
#[inline(always)]
fn gelu_portable(x: &mut [f32]) {
    for v in x {
        *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// erf(x) as x · P(x²) / Q(x²) on [-4, 4], where f32's erf is ±1 outside.
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_4e-5;
    p = x2 * p + -7.349_906_3e-4;
    p = x2 * p + -2.954_6e-3;
    p = x2 * p + -1.609_603_3e-2;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329e-3;
    q = x2 * q + -1.426_474e-2;
    x * p / q
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf in f64 by its series (|x| < 3) or continued fraction, exact to well past f32.
    fn erf_f64(x: f64) -> f64 {
        if x.abs() >= 3.0 {
            // erfc(x) = e^{-x²}/(x√π) · (1 − 1/(2x²) + 3/(4x⁴) − …): tiny past 3.
            let t = 1.0 / (2.0 * x * x);
            let tail = (-x * x).exp() / (x.abs() * std::f64::consts::PI.sqrt())
                * (1.0 - t + 3.0 * t * t - 15.0 * t * t * t);
            return x.signum() * (1.0 - tail);
        }
        // erf(x) = 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1))
        let mut sum = 0.0;
        let mut term = x;
        for n in 0..200 {
            sum += term / (2 * n + 1) as f64;
            term *= -x * x / (n + 1) as f64;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn erf_is_within_a_few_ulp_of_the_exact_value() {
        let mut worst = 0f64;
        for i in -6000..=6000 {
            let x = i as f32 / 1000.0;
            let got = f64::from(erf(x));
            let want = erf_f64(f64::from(x));
            worst = worst.max((got - want).abs());
        }
        assert!(worst < 5e-7, "worst |erf error| {worst:e}");
    }

    #[test]
    fn every_path_gives_the_portable_values() {
        // Long enough for several tasks and a tail after the last whole vector.
        let mut x: Vec<f32> = (0..3 * PER_TASK + 13)
            .map(|i| (i as f32 * 0.37).sin() * 6.0)
            .collect();
        let mut want = x.clone();
        gelu_portable(&mut want);
        gelu(&mut x);
        for (i, (a, b)) in x.iter().zip(&want).enumerate() {
            assert!(
                (a - b).abs() <= 1e-6 * (1.0 + b.abs()),
                "at {i}: {a} vs {b}"
            );
        }
        assert_eq!(want[0], 0.0);
        // gelu(x) → x for large x, → 0 for very negative x.
        let mut edges = [10.0, -10.0, 1.0, -1.0];
        gelu(&mut edges);
        assert!((edges[0] - 10.0).abs() < 1e-6 && edges[1].abs() < 1e-6);
        assert!((edges[2] - 0.841_344_7).abs() < 1e-6 && (edges[3] + 0.158_655_3).abs() < 1e-6);
    }
}
