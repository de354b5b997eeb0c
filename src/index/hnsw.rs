//! Approximate nearest neighbours over many vectors: an HNSW graph (usearch) with cosine
//! distance, updated in place (add, replace, remove), saved to and loaded from one file.

use std::path::Path;

use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use super::vector::{VectorIndex, normalized};
use crate::{Error, Result};

/// Links per node: the HNSW `M`.
const CONNECTIVITY: usize = 16;
/// Candidates kept while inserting (`efConstruction`).
const EXPANSION_ADD: usize = 128;
/// Candidates kept while searching (`ef`): what a 10-session search collects (250
/// chunks). A search for more raises it for the searches after it.
const EXPANSION_SEARCH: usize = 256;
/// Searches that may run at once: usearch needs a context per concurrent search, and
/// fails one that finds none free; more wait for a free context.
const CONTEXTS: usize = 16;
/// Vectors at least for which [`HnswIndex::extend`] adds over several threads.
const PARALLEL_ADD: usize = 256;

fn vector_error(e: impl std::fmt::Display) -> Error {
    Error::VectorIndex(e.to_string())
}

/// An HNSW index of unit vectors keyed by `u64`.
pub struct HnswIndex {
    index: Index,
    dim: usize,
    /// Free search contexts.
    free: std::sync::Mutex<usize>,
    freed: std::sync::Condvar,
}

impl std::fmt::Debug for HnswIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HnswIndex")
            .field("dim", &self.dim)
            .field("len", &self.index.size())
            .finish()
    }
}

fn options(dim: usize) -> IndexOptions {
    IndexOptions {
        dimensions: dim,
        metric: MetricKind::Cos,
        quantization: ScalarKind::F32,
        connectivity: CONNECTIVITY,
        expansion_add: EXPANSION_ADD,
        expansion_search: EXPANSION_SEARCH,
        multi: false,
    }
}

impl HnswIndex {
    pub fn new(dim: usize) -> Result<HnswIndex> {
        assert!(dim > 0, "vectors have at least one dimension");
        let index = Index::new(&options(dim)).map_err(vector_error)?;
        Self::wrap(index, dim)
    }

    fn wrap(index: Index, dim: usize) -> Result<HnswIndex> {
        let capacity = index.capacity().max(1024);
        index
            .reserve_capacity_and_threads(capacity, CONTEXTS)
            .map_err(vector_error)?;
        Ok(HnswIndex {
            index,
            dim,
            free: std::sync::Mutex::new(CONTEXTS),
            freed: std::sync::Condvar::new(),
        })
    }

    /// Takes a search context, waiting for one when all are in use.
    fn take_context(&self) -> ContextGuard<'_> {
        let mut free = self
            .free
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *free == 0 {
            free = self
                .freed
                .wait(free)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *free -= 1;
        ContextGuard(self)
    }

    /// Candidates kept while searching; more finds more of the true neighbours, slower.
    pub fn set_expansion_search(&self, n: usize) {
        self.index.change_expansion_search(n);
    }

    /// Writes the index to `path` (a temporary file renamed into place).
    pub fn save(&self, path: &Path) -> Result<()> {
        let tmp = path.with_extension("tmp");
        let tmp_str = tmp
            .to_str()
            .ok_or_else(|| vector_error(format!("{} is not UTF-8", tmp.display())))?;
        self.index.save(tmp_str).map_err(vector_error)?;
        std::fs::File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(Error::io(&tmp))?;
        std::fs::rename(&tmp, path).map_err(Error::io(path))
    }

    /// Reads an index [`HnswIndex::save`] wrote, of `dim` dimensions; another file, or a
    /// damaged one, is an error (the index is rebuilt from the store).
    pub fn load(path: &Path, dim: usize) -> Result<HnswIndex> {
        let path_str = path
            .to_str()
            .ok_or_else(|| vector_error(format!("{} is not UTF-8", path.display())))?;
        let bad = |why: String| vector_error(format!("{}: {why}", path.display()));
        let meta = Index::metadata(path_str).map_err(|e| bad(e.to_string()))?;
        if meta.dimensions != dim as u64 || meta.metric != MetricKind::Cos || meta.multi {
            return Err(bad(format!(
                "an index of {} dimensions, not {dim} with cosine distance",
                meta.dimensions
            )));
        }
        let index = Index::new(&options(dim)).map_err(vector_error)?;
        index.load(path_str).map_err(|e| bad(e.to_string()))?;
        index.change_expansion_search(EXPANSION_SEARCH);
        Self::wrap(index, dim)
    }

    pub fn contains(&self, key: u64) -> bool {
        self.index.contains(key)
    }

    /// The stored vector of `key`.
    pub fn get(&self, key: u64) -> Option<Vec<f32>> {
        let mut v = vec![0f32; self.dim];
        match self.index.get(key, &mut v) {
            Ok(n) if n > 0 => Some(v),
            _ => None,
        }
    }

    /// The `k` vectors most similar to `query` among those `keep` accepts, exactly: every
    /// stored vector is compared (SIMD), so use it on small indexes.
    pub fn search_exact(
        &self,
        query: &[f32],
        k: usize,
        keep: &dyn Fn(u64) -> bool,
    ) -> Result<Vec<(u64, f32)>> {
        let q = normalized(query, self.dim)?;
        if k == 0 || self.index.size() == 0 {
            return Ok(Vec::new());
        }
        let matches = {
            let _context = self.take_context();
            self.index
                .exact_search(&q, self.index.size())
                .map_err(vector_error)?
        };
        Ok(best(scored(matches, keep), k))
    }

    /// The `k` of `keys` most similar to `query`, exactly (for filters that keep few
    /// vectors, where a graph search would wander).
    pub fn search_among(
        &self,
        query: &[f32],
        k: usize,
        keys: &mut dyn Iterator<Item = u64>,
    ) -> Result<Vec<(u64, f32)>> {
        let q = normalized(query, self.dim)?;
        let mut scored: Vec<(u64, f32)> = Vec::new();
        let mut v = vec![0f32; self.dim];
        for key in keys {
            if matches!(self.index.get(key, &mut v), Ok(n) if n > 0) {
                let dot: f32 = v.iter().zip(&q).map(|(a, b)| a * b).sum();
                scored.push((key, dot));
            }
        }
        Ok(best(scored, k))
    }

    /// Adds many vectors at once over every core (a key already present is replaced).
    /// Building a large index this way is about as many times faster than one
    /// [`VectorIndex::upsert`] after another as there are cores.
    pub fn extend<V: AsRef<[f32]>>(&mut self, items: &[(u64, V)]) -> Result<()> {
        // Every vector is checked before anything changes.
        let normal = items
            .iter()
            .map(|(key, v)| Ok((*key, normalized(v.as_ref(), self.dim)?)))
            .collect::<Result<Vec<_>>>()?;
        for (key, _) in &normal {
            self.remove_if_present(*key)?;
        }
        self.reserve_for(normal.len())?;
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZero::get)
            .min(CONTEXTS);
        // A few vectors are not worth starting threads for.
        if threads == 1 || normal.len() < PARALLEL_ADD {
            return normal
                .iter()
                .try_for_each(|(key, v)| self.index.add(*key, v).map_err(vector_error));
        }
        let index = &self.index;
        std::thread::scope(|scope| {
            let workers: Vec<_> = normal
                .chunks(normal.len().div_ceil(threads))
                .map(|part| {
                    scope.spawn(move || -> Result<()> {
                        for (key, v) in part {
                            index.add(*key, v).map_err(vector_error)?;
                        }
                        Ok(())
                    })
                })
                .collect();
            workers
                .into_iter()
                .try_for_each(|w| w.join().expect("an index worker panicked"))
        })
    }

    fn remove_if_present(&mut self, key: u64) -> Result<()> {
        if self.index.contains(key) {
            self.index.remove(key).map_err(vector_error)?;
        }
        Ok(())
    }

    /// Makes room for `more` vectors.
    fn reserve_for(&mut self, more: usize) -> Result<()> {
        let needed = self.index.size() + more;
        if needed > self.index.capacity() {
            self.index
                .reserve_capacity_and_threads(needed.next_power_of_two(), CONTEXTS)
                .map_err(vector_error)?;
        }
        Ok(())
    }

    /// Bytes the index holds in memory.
    pub fn memory_usage(&self) -> usize {
        self.index.memory_usage()
    }
}

/// Keys with their cosine similarity, from usearch's cosine distances, those `keep`
/// accepts.
fn scored(matches: usearch::ffi::Matches, keep: &dyn Fn(u64) -> bool) -> Vec<(u64, f32)> {
    matches
        .keys
        .into_iter()
        .zip(matches.distances)
        .filter(|(key, _)| keep(*key))
        .map(|(key, distance)| (key, 1.0 - distance))
        .collect()
}

/// The `k` most similar, best first (equal scores: lower key first).
fn best(mut scored: Vec<(u64, f32)>, k: usize) -> Vec<(u64, f32)> {
    let order = |a: &(u64, f32), b: &(u64, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if k < scored.len() {
        scored.select_nth_unstable_by(k, order);
        scored.truncate(k);
    }
    scored.sort_by(order);
    scored
}

/// A search context in use; given back when dropped.
struct ContextGuard<'a>(&'a HnswIndex);

impl Drop for ContextGuard<'_> {
    fn drop(&mut self) {
        *self
            .0
            .free
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
        self.0.freed.notify_one();
    }
}

impl VectorIndex for HnswIndex {
    fn dim(&self) -> usize {
        self.dim
    }

    fn upsert(&mut self, key: u64, vector: &[f32]) -> Result<()> {
        let v = normalized(vector, self.dim)?;
        self.remove_if_present(key)?;
        self.reserve_for(1)?;
        self.index.add(key, &v).map_err(vector_error)
    }

    fn remove(&mut self, key: u64) -> bool {
        self.index.remove(key).is_ok_and(|n| n > 0)
    }

    fn search(
        &self,
        query: &[f32],
        k: usize,
        keep: &dyn Fn(u64) -> bool,
    ) -> Result<Vec<(u64, f32)>> {
        let q = normalized(query, self.dim)?;
        if k == 0 || self.index.size() == 0 {
            return Ok(Vec::new());
        }
        let wanted = k.min(self.index.size());
        if self.index.expansion_search() < wanted {
            self.index.change_expansion_search(wanted);
        }
        let _context = self.take_context();
        let matches = self
            .index
            .filtered_search(&q, wanted, keep)
            .map_err(vector_error)?;
        Ok(best(scored(matches, &|_| true), wanted))
    }

    fn len(&self) -> usize {
        self.index.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::vector::tests::vectors;

    #[test]
    fn an_index_saves_and_loads_and_a_damaged_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vectors.usearch");
        let mut index = HnswIndex::new(16).unwrap();
        for (i, v) in vectors(300, 16, 3).iter().enumerate() {
            index.upsert(1000 + i as u64, v).unwrap();
        }
        assert!(index.remove(1003));
        index.save(&path).unwrap();
        let loaded = HnswIndex::load(&path, 16).unwrap();
        assert_eq!(loaded.len(), 299);
        assert!(!loaded.contains(1003) && loaded.contains(1004));
        let q = &vectors(1, 16, 5)[0];
        assert_eq!(
            loaded.search(q, 5, &|_| true).unwrap(),
            index.search(q, 5, &|_| true).unwrap()
        );
        let stored = loaded.get(1004).unwrap();
        let want = normalized(&vectors(300, 16, 3)[4], 16).unwrap();
        assert!(stored.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-6));
        // Exact search among a few keys.
        let among = loaded
            .search_among(q, 2, &mut [1010u64, 1020, 1003, 1030].into_iter())
            .unwrap();
        assert_eq!(among.len(), 2);
        assert!(among.iter().all(|(k, _)| [1010, 1020, 1030].contains(k)));
        assert!(HnswIndex::load(&path, 32).is_err(), "wrong dimensions");
        // Built in parallel: the same neighbours as one by one.
        let data: Vec<(u64, Vec<f32>)> = vectors(300, 16, 3)
            .into_iter()
            .enumerate()
            .map(|(i, v)| (1000 + i as u64, v))
            .collect();
        let mut parallel = HnswIndex::new(16).unwrap();
        // 280 is over `PARALLEL_ADD`: the threads run; 20 and 10 are added in turn.
        parallel.extend(&data[..280]).unwrap();
        parallel.extend(&data[280..]).unwrap();
        parallel.extend(&data[..10]).unwrap();
        assert_eq!(parallel.len(), 300);
        let mut flat = crate::index::FlatIndex::new(16);
        for (k, v) in &data {
            flat.upsert(*k, v).unwrap();
        }
        let keys = |hits: Vec<(u64, f32)>| hits.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        // A search as wide as the index finds the true neighbours, bar (rarely) one whose
        // links the concurrent build pruned: a broken build would find few of them.
        parallel.set_expansion_search(300);
        let found = keys(parallel.search(q, 10, &|_| true).unwrap());
        let truth = keys(flat.search(q, 10, &|_| true).unwrap());
        let shared = found.iter().filter(|k| truth.contains(k)).count();
        assert!(shared >= 9, "{found:?} against the true {truth:?}");
        // Exact search finds every vector when `k` covers them, filtered or not.
        let all = parallel.search_exact(q, 1_000, &|_| true).unwrap();
        assert_eq!(all.len(), 300);
        let exact = flat.search(q, 10, &|_| true).unwrap();
        for ((k1, s1), (k2, s2)) in all[..10].iter().zip(&exact) {
            assert_eq!(k1, k2);
            assert!((s1 - s2).abs() < 1e-5);
        }
        let even = parallel.search_exact(q, 1_000, &|k| k % 2 == 0).unwrap();
        assert_eq!(even.len(), 150);
        // More searches at once than there are contexts: they wait, none fails.
        let want = parallel.search(q, 10, &|_| true).unwrap();
        std::thread::scope(|scope| {
            for _ in 0..3 * CONTEXTS {
                scope.spawn(|| assert_eq!(parallel.search(q, 10, &|_| true).unwrap(), want));
            }
        });
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        assert!(matches!(
            HnswIndex::load(&path, 16),
            Err(Error::VectorIndex(_))
        ));
        std::fs::write(&path, b"not an index").unwrap();
        assert!(HnswIndex::load(&path, 16).is_err());
    }
}
