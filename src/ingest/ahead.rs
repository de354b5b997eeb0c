//! Files read ahead of their writes on several threads, handed to the one writer in their
//! order. Each thread takes the next file as soon as it is free, so one large file holds
//! up only the thread reading it; none runs more than a window ahead of the writer, so
//! what waits to be written stays bounded.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// The reads between the writer and its readers.
pub(super) struct ReadAhead<T> {
    state: Mutex<State<T>>,
    /// Signalled when a read lands, when the writer takes one, and on stop.
    changed: Condvar,
    len: usize,
    window: usize,
}

struct State<T> {
    /// The next file a reader takes.
    next: usize,
    /// The next file the writer takes: readers stay below `wanted + window`.
    wanted: usize,
    /// Reads that landed and wait for the writer, by file.
    ready: BTreeMap<usize, T>,
    stopped: bool,
}

impl<T> ReadAhead<T> {
    /// Reads of `len` files, at most `window` of them read and not yet written.
    pub(super) fn new(len: usize, window: usize) -> ReadAhead<T> {
        ReadAhead {
            state: Mutex::new(State {
                next: 0,
                wanted: 0,
                ready: BTreeMap::new(),
                stopped: false,
            }),
            changed: Condvar::new(),
            len,
            window: window.max(1),
        }
    }

    fn state(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A reader's loop: reads the next file with `read` until every file is taken or the
    /// writer stops.
    pub(super) fn read_with(&self, read: impl Fn(usize) -> T) {
        loop {
            let i = {
                let mut s = self.state();
                loop {
                    if s.stopped || s.next >= self.len {
                        return;
                    }
                    if s.next < s.wanted + self.window {
                        break;
                    }
                    s = self.changed.wait(s).unwrap_or_else(PoisonError::into_inner);
                }
                s.next += 1;
                s.next - 1
            };
            // A reader that panics stops the reads, so the writer does not wait for a file
            // that never lands (the scope the readers run in then carries the panic on).
            let stop_on_panic = StopOnPanic(self);
            let done = read(i);
            std::mem::forget(stop_on_panic);
            let mut s = self.state();
            if s.stopped {
                return;
            }
            s.ready.insert(i, done);
            drop(s);
            self.changed.notify_all();
        }
    }

    /// The writer's next read, if it has landed; `None` once every file is taken, or the
    /// reads stopped.
    pub(super) fn try_next(&self) -> Option<Result<(usize, T), Pending>> {
        let mut s = self.state();
        if s.stopped || s.wanted >= self.len {
            return None;
        }
        Some(self.take(&mut s).ok_or(Pending))
    }

    /// The writer's next read, waiting for it to land; `None` once every file is taken, or
    /// the reads stopped.
    pub(super) fn next(&self) -> Option<(usize, T)> {
        let mut s = self.state();
        loop {
            if s.stopped || s.wanted >= self.len {
                return None;
            }
            if let Some(next) = self.take(&mut s) {
                return Some(next);
            }
            s = self.changed.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn take(&self, s: &mut State<T>) -> Option<(usize, T)> {
        let i = s.wanted;
        let read = s.ready.remove(&i)?;
        s.wanted += 1;
        // A reader waiting for the window to move may go on.
        self.changed.notify_all();
        Some((i, read))
    }

    /// Ends the readers' loops after the read each is doing: the writer is done (it wrote
    /// every file, or failed), or a reader panicked.
    pub(super) fn stop(&self) {
        let mut s = self.state();
        s.stopped = true;
        s.ready.clear();
        drop(s);
        self.changed.notify_all();
    }
}

/// Stops the reads when dropped: held across a read, and forgotten once it returns.
struct StopOnPanic<'a, T>(&'a ReadAhead<T>);

impl<T> Drop for StopOnPanic<'_, T> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// The writer's next read has not landed yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pending;

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn reads_reach_the_writer_in_order_whatever_order_they_land_in() {
        let ahead = ReadAhead::new(200, 8);
        let in_flight = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let written = std::thread::scope(|scope| {
            for t in 0..3 {
                let (ahead, in_flight, most) = (&ahead, &in_flight, &most);
                scope.spawn(move || {
                    ahead.read_with(|i| {
                        let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        // Threads land out of order: every third file takes longer.
                        if (i + t) % 3 == 0 {
                            std::thread::yield_now();
                        }
                        in_flight.fetch_sub(1, Ordering::SeqCst);
                        i * 10
                    });
                });
            }
            let mut written = Vec::new();
            while let Some((i, read)) = ahead.next() {
                assert_eq!(read, i * 10);
                written.push(i);
            }
            ahead.stop();
            written
        });
        assert_eq!(written, (0..200).collect::<Vec<_>>());
        assert!(most.load(Ordering::SeqCst) <= 3);
    }

    #[test]
    fn readers_stay_within_the_window_of_the_writer() {
        let ahead = ReadAhead::new(100, 4);
        let taken = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                ahead.read_with(|i| {
                    taken.fetch_max(i + 1, Ordering::SeqCst);
                    i
                });
            });
            // The writer takes nothing until the reader has filled the window and waits.
            loop {
                let s = ahead.state();
                if s.ready.len() == 4 {
                    break;
                }
                drop(s);
                std::thread::yield_now();
            }
            assert_eq!(taken.load(Ordering::SeqCst), 4, "no read past the window");
            assert_eq!(ahead.try_next(), Some(Ok((0, 0))));
            assert_eq!(ahead.next(), Some((1, 1)));
            ahead.stop();
        });
        assert!(taken.load(Ordering::SeqCst) <= 6);
    }

    #[test]
    fn a_stopped_writer_releases_readers_waiting_on_the_window() {
        let ahead: ReadAhead<usize> = ReadAhead::new(1_000, 2);
        std::thread::scope(|scope| {
            let reader = scope.spawn(|| ahead.read_with(|i| i));
            while ahead.state().ready.len() < 2 {
                std::thread::yield_now();
            }
            ahead.stop();
            reader.join().expect("the reader ends");
        });
        assert_eq!(ahead.try_next(), None, "stopped: nothing more to take");
    }

    #[test]
    fn a_reader_that_panics_stops_the_writer_waiting_for_its_file() {
        let ahead: ReadAhead<usize> = ReadAhead::new(100, 8);
        let written = std::sync::Mutex::new(Vec::new());
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    ahead.read_with(|i| {
                        assert_ne!(i, 3, "a transcript the reader cannot handle");
                        i
                    });
                });
                while let Some((i, _)) = ahead.next() {
                    written.lock().unwrap().push(i);
                }
            });
        }));
        assert!(outcome.is_err(), "the reader's panic reaches the caller");
        // What the writer took before the reads stopped, in order, and none past file 3.
        let written = written.into_inner().unwrap();
        assert!(written.len() <= 3, "{written:?}");
        assert!(written.iter().copied().eq(0..written.len()), "{written:?}");
    }
}
