//! The hot tier: bounded LRU caches of decoded values, with hit and eviction counters.

use std::borrow::{Borrow, Cow};
use std::hash::Hash;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use lru::LruCache;

/// A thread-safe LRU cache holding at most `capacity` entries. Values are cloned out, so
/// store them behind an `Arc`.
pub struct HotCache<K, V> {
    name: &'static str,
    entries: Mutex<LruCache<K, V>>,
    hits: AtomicU64,
    misses: AtomicU64,
    inserts: AtomicU64,
    evictions: AtomicU64,
}

/// A snapshot of a cache's size and counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheStats {
    /// The cache's name, as given to [`HotCache::new`] (e.g. `nodes`).
    pub name: Cow<'static, str>,
    /// Entries the cache holds at most.
    pub capacity: usize,
    /// Entries it holds now.
    pub len: usize,
    /// Lookups that found a value.
    pub hits: u64,
    /// Lookups that found nothing, or only a stale entry.
    pub misses: u64,
    /// Calls to insert, replacements included.
    pub inserts: u64,
    /// Entries dropped to make room for new ones (not removals nor replacements).
    pub evictions: u64,
}

impl CacheStats {
    /// Hits over lookups, in `[0, 1]`; 0 when there were no lookups.
    pub fn hit_rate(&self) -> f64 {
        let lookups = self.hits + self.misses;
        if lookups == 0 {
            0.0
        } else {
            self.hits as f64 / lookups as f64
        }
    }
}

impl<K: Hash + Eq, V: Clone> HotCache<K, V> {
    /// An empty cache named `name` (in its stats) holding at most `capacity` entries.
    pub fn new(name: &'static str, capacity: NonZeroUsize) -> Self {
        Self {
            name,
            entries: Mutex::new(LruCache::new(capacity)),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            inserts: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    /// The name given to [`HotCache::new`].
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The value under `key`, which becomes the most recently used entry.
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get_if(key, |_| true)
    }

    /// Like [`HotCache::get`], but an entry that fails `fresh` is removed and counted as a
    /// miss.
    fn get_if<Q>(&self, key: &Q, fresh: impl FnOnce(&V) -> bool) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut entries = self.lock();
        let found = match entries.get(key) {
            Some(value) if fresh(value) => Some(value.clone()),
            Some(_) => {
                entries.pop(key);
                None
            }
            None => None,
        };
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Inserts or replaces `key`, evicting the least recently used entry if the cache is full.
    pub fn insert(&self, key: K, value: V) {
        let mut entries = self.lock();
        let replaces = entries.contains(&key);
        let dropped = entries.push(key, value);
        drop(entries);
        self.inserts.fetch_add(1, Ordering::Relaxed);
        if !replaces && dropped.is_some() {
            self.evictions.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Removes `key`, returning its value if it was cached.
    pub fn remove<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.lock().pop(key)
    }

    /// Removes every entry; the counters are kept.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// Entries it holds now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds no entries.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Entries it holds at most.
    pub fn capacity(&self) -> NonZeroUsize {
        self.lock().cap()
    }

    /// A snapshot of its size and counters.
    pub fn stats(&self) -> CacheStats {
        let (capacity, len) = {
            let entries = self.lock();
            (entries.cap().get(), entries.len())
        };
        CacheStats {
            name: Cow::Borrowed(self.name),
            capacity,
            len,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            inserts: self.inserts.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }

    // No operation leaves the LRU half-updated when K's Hash or Eq panics in another
    // thread, so a poisoned lock is still a usable cache.
    fn lock(&self) -> MutexGuard<'_, LruCache<K, V>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<K, V> std::fmt::Debug for HotCache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HotCache")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A cache of query results that a write invalidates all at once: every write calls
/// [`GenerationalCache::bump`], and only entries inserted at the current generation are
/// returned.
#[derive(Debug)]
pub struct GenerationalCache<K, V> {
    entries: HotCache<K, (u64, V)>,
    generation: AtomicU64,
}

impl<K: Hash + Eq, V: Clone> GenerationalCache<K, V> {
    /// An empty cache at generation 0, named `name` (in its stats), holding at most
    /// `capacity` entries.
    pub fn new(name: &'static str, capacity: NonZeroUsize) -> Self {
        Self {
            entries: HotCache::new(name, capacity),
            generation: AtomicU64::new(0),
        }
    }

    /// The current generation: how many times [`GenerationalCache::bump`] was called.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Invalidates every entry (lazily: each is dropped when next looked up or evicted).
    /// Returns the new generation.
    pub fn bump(&self) -> u64 {
        self.generation.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// The value under `key` if it was inserted at the current generation; an older entry
    /// is removed and counts as a miss.
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let current = self.generation();
        self.entries
            .get_if(key, |(generation, _)| *generation == current)
            .map(|(_, value)| value)
    }

    /// Inserts `value` at the current generation. If a write may have happened while the
    /// value was computed, use [`GenerationalCache::insert_at`] instead.
    pub fn insert(&self, key: K, value: V) {
        self.insert_at(self.generation(), key, value);
    }

    /// Inserts `value` as computed at `generation` (read before computing it). If a write
    /// bumped the generation meanwhile, the value is stale and is not stored.
    pub fn insert_at(&self, generation: u64, key: K, value: V) {
        if generation == self.generation() {
            self.entries.insert(key, (generation, value));
        }
    }

    /// Removes `key` whatever its generation, returning its value if it was cached.
    pub fn remove<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.remove(key).map(|(_, value)| value)
    }

    /// Removes every entry; the counters and the generation are kept.
    pub fn clear(&self) {
        self.entries.clear();
    }

    /// Entries held, stale ones included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no entries, stale ones included.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A snapshot of its size (stale entries included) and counters.
    pub fn stats(&self) -> CacheStats {
        self.entries.stats()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn cap(n: usize) -> NonZeroUsize {
        NonZeroUsize::new(n).unwrap()
    }

    #[test]
    fn the_least_recently_used_entry_is_evicted_first() {
        let cache = HotCache::new("test", cap(2));
        cache.insert("a", 1);
        cache.insert("b", 2);
        // Reading "a" makes "b" the least recently used.
        assert_eq!(cache.get("a"), Some(1));
        cache.insert("c", 3);
        assert_eq!(cache.get("b"), None);
        assert_eq!(cache.get("a"), Some(1));
        assert_eq!(cache.get("c"), Some(3));
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.stats().evictions, 1);
    }

    #[test]
    fn replacing_or_removing_an_entry_is_not_an_eviction() {
        let cache = HotCache::new("test", cap(2));
        cache.insert("a", 1);
        cache.insert("b", 2);
        cache.insert("a", 10);
        assert_eq!(cache.get("a"), Some(10));
        assert_eq!(cache.remove("b"), Some(2));
        assert_eq!(cache.remove("b"), None);
        cache.insert("c", 3);
        let stats = cache.stats();
        assert_eq!((stats.inserts, stats.evictions, stats.len), (4, 0, 2));
        cache.clear();
        assert!(cache.is_empty());
        assert_eq!(cache.stats().inserts, 4, "clear keeps the counters");
    }

    #[test]
    fn hits_and_misses_are_counted_and_give_the_hit_rate() {
        let cache = HotCache::new("nodes", cap(4));
        assert_eq!(cache.stats().hit_rate(), 0.0);
        cache.insert(1u32, Arc::new("one".to_owned()));
        assert_eq!(cache.get(&1).as_deref().map(String::as_str), Some("one"));
        assert_eq!(cache.get(&1).as_deref().map(String::as_str), Some("one"));
        assert_eq!(cache.get(&1).as_deref().map(String::as_str), Some("one"));
        assert!(cache.get(&2).is_none());
        let stats = cache.stats();
        assert_eq!(
            stats,
            CacheStats {
                name: "nodes".into(),
                capacity: 4,
                len: 1,
                hits: 3,
                misses: 1,
                inserts: 1,
                evictions: 0,
            }
        );
        assert_eq!(stats.hit_rate(), 0.75);
    }

    #[test]
    fn a_bump_makes_older_entries_misses_and_removes_them() {
        let cache = GenerationalCache::new("queries", cap(8));
        cache.insert("q", vec![1, 2]);
        assert_eq!(cache.get("q"), Some(vec![1, 2]));
        assert_eq!(cache.bump(), 1);
        assert_eq!(cache.generation(), 1);
        assert_eq!(cache.get("q"), None);
        assert_eq!(cache.len(), 0, "a stale entry is removed when looked up");
        cache.insert("q", vec![3]);
        assert_eq!(cache.get("q"), Some(vec![3]));
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses), (2, 1));
    }

    #[test]
    fn a_result_computed_before_a_write_is_never_served_after_it() {
        let cache = GenerationalCache::new("queries", cap(8));
        let seen = cache.generation();
        cache.bump();
        cache.insert_at(seen, "q", 1);
        assert_eq!(cache.get("q"), None);
        cache.insert_at(cache.generation(), "q", 2);
        assert_eq!(cache.get("q"), Some(2));
    }

    #[test]
    fn caches_can_be_shared_between_threads() {
        const THREADS: u64 = 4;
        const ROUNDS: u64 = 2_000;
        let cache = Arc::new(HotCache::new("shared", cap(64)));
        let queries = Arc::new(GenerationalCache::new("queries", cap(64)));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let cache = Arc::clone(&cache);
                let queries = Arc::clone(&queries);
                std::thread::spawn(move || {
                    for i in 0..ROUNDS {
                        let key = (i * 7 + t) % 100;
                        if cache.get(&key).is_none() {
                            cache.insert(key, Arc::new(key * 2));
                        }
                        if let Some(v) = cache.get(&key) {
                            assert_eq!(*v, key * 2);
                        }
                        let generation = queries.generation();
                        if let Some(v) = queries.get(&key) {
                            assert_eq!(v, key + 1);
                        }
                        queries.insert_at(generation, key, key + 1);
                        if i % 100 == 0 {
                            queries.bump();
                        }
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let stats = cache.stats();
        assert_eq!(stats.hits + stats.misses, THREADS * ROUNDS * 2);
        assert!(stats.len <= 64);
        // Two threads missing the same key both insert it: the second is a replacement.
        assert!(stats.inserts - stats.evictions >= stats.len as u64);
        assert_eq!(queries.generation(), THREADS * ROUNDS / 100);
    }
}
