//! The counts and sizes of the warm and cold tiers: walked once, then kept in step by
//! every write.

use super::Store;
use crate::tier::TierSums;
use crate::{Keyspace, Result, TierStats};

impl Store {
    /// Counts and sizes of both tiers. The first call walks every chunk and blob record
    /// (of a snapshot, writes going on); from then on every write keeps the sums, and a
    /// call reads them.
    pub fn tier_stats(&self) -> Result<TierStats> {
        let _counting = self
            .warm
            .tier_count
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let known = match *self.tier_sums() {
            TierSums::Known(stats) => Some(stats),
            _ => None,
        };
        let mut stats = if let Some(stats) = known {
            stats
        } else {
            let counted = self.count_tiers();
            let mut sums = self.tier_sums();
            let counted = match counted {
                Ok(counted) => counted,
                Err(e) => {
                    *sums = TierSums::Unknown;
                    return Err(e);
                }
            };
            // Only this count turns `Counting` into anything else.
            let stats = match *sums {
                TierSums::Counting(since) => counted.plus(&since),
                _ => counted,
            };
            *sums = TierSums::Known(stats);
            stats
        };
        stats.warm_disk_bytes = self.size_on_disk()?;
        Ok(stats)
    }

    /// Counts the chunk and blob records of a snapshot, from which on every write keeps
    /// what it changes in [`TierSums::Counting`].
    fn count_tiers(&self) -> Result<TierStats> {
        let instant = {
            let _writer = self
                .warm
                .writer
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *self.tier_sums() = TierSums::Counting(TierStats::default());
            self.warm.keyspace.instant()
        };
        let mut stats = TierStats::default();
        for keyspace in [Keyspace::Chunks, Keyspace::Blobs] {
            for entry in self.partition(keyspace).snapshot_at(instant).iter() {
                let (_, value) = entry.map_err(|e| {
                    crate::error::fjall_error(fjall::Error::Storage(e), &self.path, self.min_free)
                })?;
                stats.count(keyspace, &value, true)?;
            }
        }
        Ok(stats)
    }

    pub(crate) fn tier_sums(&self) -> std::sync::MutexGuard<'_, TierSums> {
        self.warm
            .tiers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What the writes `last` (partition index, key, new value or `None` to delete) change
    /// in the tiers' sums, read before they land; `None` while no sums are kept. Called
    /// with the writer's lock held.
    pub(crate) fn tier_change(
        &self,
        last: &std::collections::BTreeMap<(usize, &[u8]), Option<&[u8]>>,
    ) -> Result<Option<TierStats>> {
        if matches!(*self.tier_sums(), TierSums::Unknown) {
            return Ok(None);
        }
        let mut change = TierStats::default();
        for keyspace in [Keyspace::Chunks, Keyspace::Blobs] {
            let index = keyspace.index();
            let from: (usize, &[u8]) = (index, &[]);
            for (&(partition, key), value) in last.range(from..).take_while(|(k, _)| k.0 == index) {
                debug_assert_eq!(partition, index);
                if let Some(old) = self.partition(keyspace).get(key)? {
                    change.count(keyspace, &old, false)?;
                }
                if let Some(new) = value {
                    change.count(keyspace, new, true)?;
                }
            }
        }
        Ok(Some(change))
    }
}
