//! The work of a parallel region as a queue of items, handed out in order to whichever thread
//! asks next: the calling thread and the helpers of the region all drain the same queue. An
//! item is done by exactly one thread and its work never depends on which one, so the bits of a
//! region depend only on how its work was cut into items, which its caller fixes (never by the
//! thread count, unless no cut changes a bit: then the thread count may set it). The GEMM and
//! the session's regions share it; how the threads of a region are found and waited for is the
//! session's business ([`Spread`]).

use std::sync::{Mutex, MutexGuard, PoisonError};

/// The threads of a parallel region.
pub(crate) trait Region: Sync {
    /// Runs `drain` on the calling thread and on every other thread of the region, and
    /// returns when all of them have returned (a panic in any of them propagates).
    fn region(&self, drain: &(dyn Fn() + Sync));

    /// The threads that run `drain` in a region, the calling thread included: a caller whose
    /// bits do not depend on how its work is cut may cut it to the thread count, so that the
    /// threads finish together.
    fn threads(&self) -> usize;
}

/// The threads a region spreads over.
pub(crate) type Spread<'s> = &'s dyn Region;

/// Items to be done, in order, by any number of threads, and the first error one of them gave.
pub(crate) struct WorkQueue<I, E> {
    /// The items not yet handed out; `None` once an item failed or panicked (the rest are
    /// dropped undone).
    items: Mutex<Option<I>>,
    error: Mutex<Option<E>>,
}

/// A lock whose holder cannot have panicked with the data half-changed (the lock is held only
/// to take the next item or store an error), so a poisoned lock is still sound to use.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Stops the queue if the item its thread is working on panics, so that the other threads do
/// not carry on with the rest.
struct StopOnUnwind<'q, I, E>(&'q WorkQueue<I, E>);

impl<I, E> Drop for StopOnUnwind<'_, I, E> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            *lock(&self.0.items) = None;
        }
    }
}

impl<I: Iterator + Send, E: Send> WorkQueue<I, E> {
    /// A queue of `items`.
    pub(crate) fn new(items: I) -> Self {
        WorkQueue {
            items: Mutex::new(Some(items)),
            error: Mutex::new(None),
        }
    }

    /// Does items until none is left: the loop every thread of a region runs.
    pub(crate) fn drain(&self, work: &(impl Fn(I::Item) -> Result<(), E> + Sync)) {
        let guard = StopOnUnwind(self);
        loop {
            let next = lock(&self.items).as_mut().and_then(Iterator::next);
            let Some(item) = next else { break };
            if let Err(e) = work(item) {
                *lock(&self.items) = None;
                lock(&self.error).get_or_insert(e);
                break;
            }
        }
        drop(guard);
    }

    /// Every item through `work`, on the threads `spread` runs (or on the calling thread
    /// alone when it is `None`); the first error, if any.
    pub(crate) fn run(
        self,
        spread: Option<Spread<'_>>,
        work: impl Fn(I::Item) -> Result<(), E> + Sync,
    ) -> Result<(), E> {
        match spread {
            Some(spread) => spread.region(&|| self.drain(&work)),
            None => self.drain(&work),
        }
        match self
            .error
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
        {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
