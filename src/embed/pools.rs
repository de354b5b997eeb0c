//! Where embeddings run: a thread pool for each kind of work, a thread per core, at that
//! work's scheduling priority (`crate::priority`).
//!
//! The model's kernels split each matrix product over a rayon pool. On the global pool a
//! search's query waited in line behind the background embedder's batches (a 14-token
//! query's p50 went from ~13 ms to ~52–65 ms, `benches/README.md`), and a `Remember`'s
//! text behind the queries of 64 clients' searches: whatever nice value the calling
//! thread had, the work ran at the pool's. So each kind has its own pool:
//! - [`writes_pool`]: a client write's own text, at the priority of the thread that makes
//!   the pool (the server's, at its start);
//! - [`reads_pool`]: a search's query, at the reads' priority;
//! - [`background_pool`]: the embedder's backlog, at the lowest priority, taking what the
//!   others leave.

use crate::{Error, Result};

/// A thread pool for a client write's embeddings, its threads at the caller's priority.
pub fn writes_pool() -> Result<rayon::ThreadPool> {
    pool("eywa-embed-write", None)
}

/// A thread pool for a search's query embedding, at the priority of a client's read.
pub fn reads_pool() -> Result<rayon::ThreadPool> {
    pool("eywa-embed-read", Some(crate::priority::READS))
}

/// A thread pool for background embedding, each thread at the lowest priority. Run work
/// on it with [`rayon::ThreadPool::install`].
pub fn background_pool() -> Result<rayon::ThreadPool> {
    pool("eywa-embed", Some(crate::priority::BACKGROUND))
}

/// A thread per core named `name-N`, lowered to `nice` if given.
fn pool(name: &'static str, nice: Option<i32>) -> Result<rayon::ThreadPool> {
    let builder = rayon::ThreadPoolBuilder::new()
        .num_threads(std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
        .thread_name(move |i| format!("{name}-{i}"));
    match nice {
        Some(nice) => builder.start_handler(move |_| crate::priority::lower_to(nice)),
        None => builder,
    }
    .build()
    .map_err(|e| Error::Embedding(format!("cannot start the embedding threads: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    fn nice() -> i32 {
        // SAFETY: getpriority takes plain integers.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
    }

    #[test]
    fn each_pool_runs_at_its_priority_and_leaves_the_caller_at_its_own() {
        let cores = std::thread::available_parallelism().unwrap().get();
        #[cfg(target_os = "linux")]
        let before = nice();
        for (pool, prefix, _expected) in [
            (
                background_pool().unwrap(),
                "eywa-embed-",
                crate::priority::BACKGROUND,
            ),
            (
                reads_pool().unwrap(),
                "eywa-embed-read-",
                crate::priority::READS,
            ),
            (writes_pool().unwrap(), "eywa-embed-write-", 0),
        ] {
            assert_eq!(pool.current_num_threads(), cores);
            let name = pool.install(|| std::thread::current().name().map(str::to_owned));
            assert!(name.is_some_and(|n| n.starts_with(prefix)), "{prefix}");
            #[cfg(target_os = "linux")]
            assert_eq!(pool.install(nice), before.max(_expected), "{prefix}");
        }
        // Only the pools' threads: the caller keeps its priority.
        #[cfg(target_os = "linux")]
        assert_eq!(nice(), before);
    }
}
