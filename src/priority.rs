//! Who goes first when the cores are busy: a client's write at the normal priority, a
//! client's read a step below it, background work (embedding) at the lowest.
//!
//! On Linux a nice value belongs to a thread, and a thread may lower its own priority but
//! not raise it back without privileges. So a thread that was lowered stays lowered:
//! reads lower the pool threads they run on, and writes run on threads of their own that
//! nothing lowers (see `api::services`).

use std::cell::Cell;

/// The nice value of a client's read: under a write's (0), above the embedder's.
///
/// The scheduler shares a core by weight, not by rank: at nice 10 (a tenth of a write's
/// weight) a dozen runnable reads outweighed the write beside them, and a `Remember`
/// holding the ingest lock kept the writes behind it waiting. At 15 (a thirtieth) the
/// same load gave `Remember` p99 25 ms against 37 ms, reads' p99 within noise of before
/// (`benches/README.md`, `load_mixed`).
pub(crate) const READS: i32 = 15;

/// The nice value of background work: the lowest priority there is.
pub(crate) const BACKGROUND: i32 = 19;

thread_local! {
    /// The nice value this thread was lowered to, if it was.
    static LOWERED: Cell<Option<i32>> = const { Cell::new(None) };
}

/// Lowers the calling thread's priority to `nice`, unless it is that low already. What
/// the thread spawns from now on inherits it. Where the platform cannot, nothing changes.
pub(crate) fn lower_to(nice: i32) {
    if LOWERED.with(Cell::get).is_some_and(|at| at >= nice) {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: setpriority takes plain integers. On Linux the nice value belongs to a
        // thread, and `who` 0 names the calling one.
        let result = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
        if result != 0 {
            tracing::debug!(
                error = %std::io::Error::last_os_error(),
                nice,
                "cannot lower a thread's priority"
            );
        }
    }
    LOWERED.with(|l| l.set(Some(nice)));
}

/// The calling thread's nice value (0 where the platform has none).
#[cfg(test)]
pub(crate) fn current() -> i32 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getpriority takes plain integers; -1 is also a valid nice value, so
        // errno is not consulted (the calling thread always exists).
        unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_lowers_itself_once_and_only_itself() {
        let before = current();
        let (lowered, again) = std::thread::spawn(|| {
            lower_to(READS);
            let lowered = current();
            // Asked for less than it has: it stays where it is.
            lower_to(READS - 5);
            (lowered, current())
        })
        .join()
        .unwrap();
        if cfg!(target_os = "linux") {
            assert_eq!(lowered, READS.max(before));
            assert_eq!(again, lowered);
        }
        assert_eq!(current(), before, "the spawning thread keeps its priority");
    }
}
