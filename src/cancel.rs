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
/// cancelled, as a mutex's would not, and are served in the order they came: a client's
/// write waits behind the ones before it, never behind every later one.
#[derive(Debug, Default)]
pub struct WorkLock {
    state: Mutex<Turns>,
    turned: Condvar,
}

/// Whose turn it is: tickets are served in order, skipping those whose waiter gave up.
#[derive(Debug, Default)]
struct Turns {
    /// The next ticket to hand out.
    next: u64,
    /// The ticket served now (or next, when nobody holds the lock).
    serving: u64,
    held: bool,
    /// Tickets whose waiters gave up before their turn.
    abandoned: std::collections::BTreeSet<u64>,
}

impl Turns {
    /// Moves on to the next ticket whose waiter is still there.
    fn advance(&mut self) {
        self.serving += 1;
        while self.abandoned.remove(&self.serving) {
            self.serving += 1;
        }
    }
}

/// Holds a [`WorkLock`] until dropped.
#[derive(Debug)]
pub struct WorkGuard<'a>(&'a WorkLock);

impl WorkLock {
    /// Waits for the lock, after those who asked before; fails with [`Error::Cancelled`]
    /// once the waiting work is cancelled.
    pub fn lock(&self) -> Result<WorkGuard<'_>> {
        let mut turns = self.state();
        let ticket = turns.next;
        turns.next += 1;
        loop {
            if turns.serving == ticket && !turns.held {
                if cancelled() {
                    // Its turn came as the work was cancelled: it does not start now.
                    turns.advance();
                    drop(turns);
                    self.turned.notify_all();
                    return Err(Error::Cancelled);
                }
                turns.held = true;
                return Ok(WorkGuard(self));
            }
            if cancelled() {
                turns.abandoned.insert(ticket);
                return Err(Error::Cancelled);
            }
            turns = self
                .turned
                .wait_timeout(turns, WAIT_LOOK)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// The lock if nobody holds it or waits for it.
    pub fn try_lock(&self) -> Option<WorkGuard<'_>> {
        let mut turns = self.state();
        if turns.held || turns.serving != turns.next {
            return None;
        }
        turns.next += 1;
        turns.held = true;
        Some(WorkGuard(self))
    }

    fn state(&self) -> MutexGuard<'_, Turns> {
        // The turns are only changed whole under the mutex: a panic elsewhere cannot
        // leave them half-written.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for WorkGuard<'_> {
    fn drop(&mut self) {
        let mut turns = self.0.state();
        turns.held = false;
        turns.advance();
        drop(turns);
        self.0.turned.notify_all();
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
    fn waiters_are_served_in_the_order_they_came_and_one_that_gave_up_is_skipped() {
        let lock = Arc::new(WorkLock::default());
        let held = lock.lock().unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        let gives_up = Cancel::new();
        for n in 0..4 {
            let (shared, order, gives_up) = (lock.clone(), order.clone(), gives_up.clone());
            waiters.push(std::thread::spawn(move || {
                let token = if n == 1 { gives_up } else { Cancel::new() };
                token.within(|| {
                    let _turn = shared.lock()?;
                    order.lock().unwrap().push(n);
                    Ok::<_, Error>(())
                })
            }));
            // Each has its ticket before the next asks.
            while lock.state().next < n + 2 {
                std::thread::yield_now();
            }
        }
        gives_up.cancel();
        // The one that gave up is out of the queue before the lock is freed.
        while !lock.state().abandoned.contains(&2) {
            std::thread::yield_now();
        }
        drop(held);
        let results: Vec<_> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        assert!(matches!(results[1], Err(Error::Cancelled)));
        assert_eq!(*order.lock().unwrap(), [0, 2, 3]);
        assert!(lock.try_lock().is_some(), "free, nobody waiting");
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
