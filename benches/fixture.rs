//! Synthetic data shared by the benches, from a fixed seed so runs compare.

#![allow(dead_code)]

use chrono::{Duration, NaiveDate};
use eywa::model::{Handoff, NodeId, Timestamp};

/// A small, fixed-seed generator (SplitMix64): no dependency, same data every run.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Skewed towards 0 (a few projects and terms are very common, most are rare).
    pub fn skewed(&mut self, n: u64) -> u64 {
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64).powf(u) - 1.0) as u64 % n
    }
}

const SYLLABLES: [&str; 24] = [
    "ka", "to", "ri", "mon", "sel", "da", "vi", "ne", "lo", "pra", "sum", "ter", "ga", "bel", "fo",
    "qui", "zen", "ar", "ul", "ex", "dri", "ost", "ply", "wen",
];

/// The `k`-th word of a synthetic vocabulary: distinct, word-like (`kamon`, `selvi`), so
/// substring matches are about as rare as among real keywords.
pub fn word(k: u64) -> String {
    let base = SYLLABLES.len() as u64;
    let mut n = k + base; // at least two syllables
    let mut w = String::new();
    while n > 0 {
        w.push_str(SYLLABLES[(n % base) as usize]);
        n /= base;
    }
    w
}

pub fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 1).unwrap()
}

/// `n` handoffs over a year: projects and keywords drawn with a skew, as real ones are.
pub fn handoffs(n: usize, seed: u64) -> Vec<Handoff> {
    let mut rng = Rng::new(seed);
    let projects = (n / 30).max(10) as u64;
    let vocabulary = (n / 2).max(100) as u64;
    (0..n)
        .map(|i| {
            let id = format!("{:08x}-0000-4000-8000-{:012x}", rng.next_u64() as u32, i);
            let date = today() - Duration::days(rng.below(365) as i64);
            let keywords = (0..8).map(|_| word(rng.skewed(vocabulary))).collect();
            Handoff {
                short_id: id[..8].to_owned(),
                episode: NodeId::episode(&id),
                session_id: id,
                date,
                started_at: Timestamp::parse(&date.to_string()).unwrap(),
                duration_minutes: Some(rng.below(180) as u32),
                model: Some("claude-sonnet-4-5".to_owned()),
                headline: "Synthetic session".to_owned(),
                projects: vec![format!("{}-app", word(rng.skewed(projects)))],
                keywords,
                substance: (rng.below(10) as u8).min(2),
                cwd: String::new(),
            }
        })
        .collect()
}
