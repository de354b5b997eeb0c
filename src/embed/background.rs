//! Where background embedding runs: a thread pool of its own, a thread per core, at the
//! lowest scheduling priority.
//!
//! A search embeds its query on the global thread pool. Were the background embedder's
//! batches there too, each of the query's small steps would wait in line behind a
//! batch's matrix products (`benches/README.md`: a 14-token query's p50 goes from ~13 ms
//! to ~52–65 ms). On a pool of its own at nice 19 the embedder takes what the searches
//! leave (p50 ~19–21 ms). Leaving a core out altogether helped the queries little more
//! and cost a quarter of the embedding speed.

use crate::{Error, Result};

/// A thread pool for background embedding: a thread per core, each at the lowest
/// priority. Run work on it with [`rayon::ThreadPool::install`].
pub fn background_pool() -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
        .thread_name(|i| format!("eywa-embed-{i}"))
        .start_handler(|_| crate::priority::lower_to(crate::priority::BACKGROUND))
        .build()
        .map_err(|e| Error::Embedding(format!("cannot start the embedding threads: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_runs_at_the_lowest_priority() {
        #[cfg(target_os = "linux")]
        // SAFETY: getpriority takes plain integers.
        let nice = || unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        #[cfg(target_os = "linux")]
        let before = nice();
        let pool = background_pool().unwrap();
        let cores = std::thread::available_parallelism().unwrap().get();
        assert_eq!(pool.current_num_threads(), cores);
        let name = pool.install(|| std::thread::current().name().map(str::to_owned));
        assert!(name.is_some_and(|n| n.starts_with("eywa-embed-")));
        #[cfg(target_os = "linux")]
        {
            assert_eq!(pool.install(nice), crate::priority::BACKGROUND);
            // Only the pool's threads: the caller keeps its priority.
            assert_eq!(nice(), before);
        }
    }
}
