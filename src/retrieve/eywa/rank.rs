//! What `get` keeps while it scores: the best `limit` so far, and each age's recency
//! weight, computed once a day of age.

use super::HALF_LIFE_DAYS;
use crate::model::Handoff;

/// The best `limit` (score, segment, doc) seen, kept in a buffer that is cut back to the
/// best `limit` whenever it fills up; offers below the worst kept are refused at once.
pub(super) struct TopK {
    limit: usize,
    kept: Vec<(f64, usize, usize)>,
    /// The worst kept score once `limit` are kept.
    pub(super) floor: f64,
}

type Tie<'a> = dyn Fn((usize, usize), (usize, usize)) -> std::cmp::Ordering + 'a;

impl TopK {
    pub(super) fn new(limit: usize) -> TopK {
        TopK {
            limit,
            kept: Vec::with_capacity(limit.saturating_mul(2).min(4096) + 64),
            floor: f64::NEG_INFINITY,
        }
    }

    pub(super) fn order<'a>(
        tie: &'a Tie<'_>,
    ) -> impl Fn(&(f64, usize, usize), &(f64, usize, usize)) -> std::cmp::Ordering + 'a {
        move |a, b| {
            b.0.partial_cmp(&a.0)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| tie((a.1, a.2), (b.1, b.2)))
        }
    }

    pub(super) fn offer(&mut self, score: f64, segment: usize, doc: usize, tie: &Tie<'_>) {
        if self.limit == 0 || score < self.floor {
            return;
        }
        self.kept.push((score, segment, doc));
        if self.kept.len() >= self.limit * 2 + 64 {
            self.cut(tie);
        }
    }

    pub(super) fn cut(&mut self, tie: &Tie<'_>) {
        if self.kept.len() > self.limit {
            self.kept
                .select_nth_unstable_by(self.limit - 1, Self::order(tie));
            self.kept.truncate(self.limit);
        }
        if self.kept.len() == self.limit {
            self.floor = self.kept.iter().map(|k| k.0).fold(f64::INFINITY, f64::min);
        }
    }

    pub(super) fn into_sorted(mut self, tie: &Tie<'_>) -> Vec<(f64, usize, usize)> {
        if self.limit == 0 {
            return Vec::new();
        }
        self.cut(tie);
        self.kept.sort_by(Self::order(tie));
        self.kept
    }
}

/// Recency factors by age, computed once per age seen in a query.
pub(super) struct Recency {
    days_back: u32,
    /// By `today - day` (0 = today), for ages up to the table's length.
    table: Vec<f64>,
}

impl Recency {
    const TABLE: usize = 4096;

    pub(super) fn new(days_back: u32) -> Recency {
        Recency {
            days_back,
            table: Vec::new(),
        }
    }

    /// The factor of a handoff `days` days old.
    #[inline]
    pub(super) fn factor(&mut self, days: i32) -> f64 {
        let at = |days: i32| recency_days(i64::from(days), self.days_back);
        match usize::try_from(days) {
            Ok(i) if i < Self::TABLE => {
                if self.table.is_empty() {
                    self.table = vec![f64::NAN; Self::TABLE];
                }
                let slot = &mut self.table[i];
                if slot.is_nan() {
                    *slot = at(days);
                }
                *slot
            }
            _ => at(days),
        }
    }
}

/// `age_days` = days + 1; inside `days_back`: × (1 + 1/√age), beyond it:
/// × 0.5^((age − days_back) / 7).
pub(super) fn recency_days(days: i64, days_back: u32) -> f64 {
    let age_days = days + 1;
    if age_days <= i64::from(days_back) {
        1.0 + 1.0 / (age_days.max(1) as f64).sqrt()
    } else {
        0.5_f64.powf((age_days - i64::from(days_back)) as f64 / HALF_LIFE_DAYS)
    }
}

/// × (1 + 0.1·ln(minutes + 1)) when the duration is known and positive.
pub(super) fn length(duration_minutes: Option<u32>) -> f64 {
    match duration_minutes {
        Some(m) if m > 0 => 1.0 + 0.1 * (f64::from(m) + 1.0).ln(),
        _ => 1.0,
    }
}

pub(super) fn newest_first(a: &Handoff, b: &Handoff) -> std::cmp::Ordering {
    b.date
        .cmp(&a.date)
        .then(b.started_at.cmp(&a.started_at))
        .then(a.session_id.cmp(&b.session_id))
}
