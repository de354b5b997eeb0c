//! One text-index commit for every writer waiting on one: a commit costs tens of
//! milliseconds (its files are synced), and each client write must see its own commit
//! before it answers. Writers that ask while a commit runs are covered by the next one,
//! which one of them runs for all.

use std::sync::{Condvar, Mutex};

use crate::Result;

/// Commits asked for and landed; see the module.
#[derive(Debug, Default)]
pub(crate) struct GroupCommit {
    state: Mutex<State>,
    landed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Tickets handed out: one a caller.
    asked: u64,
    /// Every ticket up to this one is covered by a commit that landed.
    landed: u64,
    /// A commit runs now.
    running: bool,
}

impl GroupCommit {
    /// Returns once a commit that started after this call has landed: `commit` runs here
    /// unless another caller's run covers this one. A failed run is the error of its
    /// runner; the callers it would have covered run it again.
    pub(crate) fn join(&self, commit: impl FnOnce() -> Result<()>) -> Result<()> {
        let mut state = self.lock();
        state.asked += 1;
        let mine = state.asked;
        loop {
            if state.landed >= mine {
                return Ok(());
            }
            if !state.running {
                state.running = true;
                let covers = state.asked;
                drop(state);
                // However `commit` ends (a panic too), the next caller may run.
                let mut ran = Ran {
                    group: self,
                    covers: None,
                };
                let result = commit();
                if result.is_ok() {
                    ran.covers = Some(covers);
                }
                drop(ran);
                return result;
            }
            state = self
                .landed
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Ends a run: records what it covered, if it landed, and wakes the waiters.
struct Ran<'a> {
    group: &'a GroupCommit,
    covers: Option<u64>,
}

impl Drop for Ran<'_> {
    fn drop(&mut self) {
        let mut state = self.group.lock();
        state.running = false;
        if let Some(covers) = self.covers {
            state.landed = state.landed.max(covers);
        }
        drop(state);
        self.group.landed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn callers_during_a_commit_share_the_next_one() {
        let group = Arc::new(GroupCommit::default());
        let runs = Arc::new(AtomicUsize::new(0));
        // The first run holds until the others have asked.
        let (entered, inside) = std::sync::mpsc::channel();
        let (go, gate) = std::sync::mpsc::channel::<()>();
        let first = {
            let (group, runs) = (group.clone(), runs.clone());
            std::thread::spawn(move || {
                group.join(|| {
                    runs.fetch_add(1, Ordering::SeqCst);
                    entered.send(()).unwrap();
                    gate.recv().unwrap();
                    Ok(())
                })
            })
        };
        inside.recv().unwrap();
        let waiting = Arc::new(AtomicUsize::new(0));
        let others: Vec<_> = (0..8)
            .map(|_| {
                let (group, runs, waiting) = (group.clone(), runs.clone(), waiting.clone());
                std::thread::spawn(move || {
                    waiting.fetch_add(1, Ordering::SeqCst);
                    group.join(|| {
                        runs.fetch_add(1, Ordering::SeqCst);
                        Ok(())
                    })
                })
            })
            .collect();
        // Every other caller has its ticket before the first run lands.
        while group.lock().asked < 9 {
            std::thread::yield_now();
        }
        go.send(()).unwrap();
        first.join().unwrap().unwrap();
        for other in others {
            other.join().unwrap().unwrap();
        }
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "one run for the eight who waited"
        );
    }

    #[test]
    fn a_failed_run_is_its_runners_error_and_the_next_caller_runs_again() {
        let group = GroupCommit::default();
        let failed = group.join(|| Err(crate::Error::Index("disk".into())));
        assert!(failed.is_err());
        let mut ran = false;
        group
            .join(|| {
                ran = true;
                Ok(())
            })
            .unwrap();
        assert!(ran);
    }
}
