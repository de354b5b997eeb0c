//! Giving up on long work. A request whose caller stopped waiting (its deadline passed,
//! it hung up) or whose server is stopping is cancelled; the work it started ends at its
//! next checkpoint with [`Error::Cancelled`], and what it had committed stays committed.
//!
//! The work runs [`Cancel::within`] a token, and checks [`checkpoint`] where stopping is
//! safe: between the files of an ingest, the batches of an embed, while it waits for the
//! ingest lock. Work run outside any token is never cancelled.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crate::{Error, Result};

/// A flag that work run [`within`](Cancel::within) it sees at its checkpoints.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

thread_local! {
    /// The tokens of the work this thread runs now, outermost first.
    static SCOPE: RefCell<Vec<Cancel>> = const { RefCell::new(Vec::new()) };
}

impl Cancel {
    /// A token not cancelled yet.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// A token over a stop flag the caller already shares (a thread's `stop`).
    pub fn of_flag(flag: Arc<AtomicBool>) -> Cancel {
        Cancel(flag)
    }

    /// Cancels the work run within this token, at its next checkpoint.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Runs `work` on this thread with this token in scope (beside the tokens already in
    /// scope: any of them cancels it).
    pub fn within<T>(&self, work: impl FnOnce() -> T) -> T {
        /// Takes the token out of scope however `work` ends.
        struct Leave;
        impl Drop for Leave {
            fn drop(&mut self) {
                SCOPE.with(|s| s.borrow_mut().pop());
            }
        }
        SCOPE.with(|s| s.borrow_mut().push(self.clone()));
        let _leave = Leave;
        work()
    }
}

/// Whether the work this thread runs was cancelled.
pub fn cancelled() -> bool {
    SCOPE.with(|s| s.borrow().iter().any(Cancel::is_cancelled))
}

/// `Err(Error::Cancelled)` once the work this thread runs was cancelled: where work
/// may stop.
pub fn checkpoint() -> Result<()> {
    if cancelled() {
        return Err(Error::Cancelled);
    }
    Ok(())
}

/// How often a wait looks whether its work was cancelled.
const WAIT_LOOK: Duration = Duration::from_millis(50);

/// A lock held across long work (an ingest) whose waiters give up when their own work is
/// cancelled; a mutex would keep them waiting until the holder is done.
#[derive(Debug, Default)]
pub struct WorkLock {
    held: Mutex<bool>,
    freed: Condvar,
}

/// Holds a [`WorkLock`] until dropped.
#[derive(Debug)]
pub struct WorkGuard<'a>(&'a WorkLock);

impl WorkLock {
    /// Waits for the lock; fails with [`Error::Cancelled`] once the waiting work is
    /// cancelled.
    pub fn lock(&self) -> Result<WorkGuard<'_>> {
        let mut held = self.state();
        while *held {
            checkpoint()?;
            held = self
                .freed
                .wait_timeout(held, WAIT_LOOK)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        // Freed as the work was cancelled: it does not start now.
        checkpoint()?;
        *held = true;
        Ok(WorkGuard(self))
    }

    /// The lock if nobody holds it.
    pub fn try_lock(&self) -> Option<WorkGuard<'_>> {
        let mut held = self.state();
        if *held {
            return None;
        }
        *held = true;
        Some(WorkGuard(self))
    }

    fn state(&self) -> MutexGuard<'_, bool> {
        // The flag is only ever set or cleared whole: a panic elsewhere cannot leave it
        // half-written.
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for WorkGuard<'_> {
    fn drop(&mut self) {
        *self.0.state() = false;
        self.0.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_sees_the_cancel_of_any_token_in_scope() {
        let (outer, inner) = (Cancel::new(), Cancel::new());
        assert!(checkpoint().is_ok(), "no token: never cancelled");
        outer.within(|| {
            inner.within(|| {
                assert!(checkpoint().is_ok());
                outer.cancel();
                assert!(matches!(checkpoint(), Err(Error::Cancelled)));
            });
        });
        assert!(checkpoint().is_ok(), "the scope ends with the work");
        assert!(outer.is_cancelled() && !inner.is_cancelled());
    }

    #[test]
    fn a_waiter_gives_up_when_its_work_is_cancelled_and_the_holder_keeps_the_lock() {
        let lock = Arc::new(WorkLock::default());
        let held = lock.lock().unwrap();
        let cancel = Cancel::new();
        let waiter = {
            let (lock, cancel) = (lock.clone(), cancel.clone());
            std::thread::spawn(move || cancel.within(|| lock.lock().map(drop)))
        };
        cancel.cancel();
        assert!(matches!(waiter.join().unwrap(), Err(Error::Cancelled)));
        assert!(lock.try_lock().is_none(), "still held by its holder");
        drop(held);
        assert!(lock.try_lock().is_some());
    }

    #[test]
    fn a_waiter_gets_the_lock_once_it_is_freed() {
        let lock = Arc::new(WorkLock::default());
        let held = lock.lock().unwrap();
        let (asked, waiting) = std::sync::mpsc::channel();
        let waiter = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                asked.send(()).unwrap();
                lock.lock().map(drop)
            })
        };
        waiting.recv().unwrap();
        drop(held);
        assert!(waiter.join().unwrap().is_ok());
    }
}
