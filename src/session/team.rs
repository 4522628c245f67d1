//! How a parallel region runs: the one place that decides it. Every region of a session (the
//! element-wise chunks, the rows, the products' tiles, the attention items) is a
//! [`WorkQueue`] of items that the calling thread drains itself, beside `threads - 1` helpers
//! of the session's [`Team`] (or of the caller's rayon pool).
//!
//! Why the calling thread works instead of handing the region over: `ThreadPool::install`
//! puts the caller to sleep until a worker has woken up, done the region and woken the caller
//! again; on a virtual machine each of those wake-ups goes through the hypervisor. A decode
//! step is a handful of regions far shorter than that round trip is long compared with them.
//! Here the caller starts on the items at once, a helper joins when it is running, and at the
//! end the caller waits for the helpers' last items spinning a short while before it blocks,
//! so that a helper about to finish does not cost a sleep and a wake-up.
//!
//! Why on rayon (a scope of the team's pool, `in_place_scope`) and not threads of our own:
//! a scope lets borrowed work cross to other threads without `unsafe` here, propagates a
//! panic from any thread after all of them have stopped, and does not deadlock when a region
//! is started from inside another rayon pool or from a worker of this one (a worker waiting in
//! a scope runs other jobs). Rayon's `use_current_thread` would also let the caller work, but
//! binds the user's thread to the pool for good and leaks the pool; here the caller only
//! visits the pool for the length of a region, and the pool's threads belong to the session
//! (shared by its clones, joined when the last one is dropped).
//!
//! The bits never depend on any of this: items are cut by the region's caller, independently
//! of the thread count, and an item's work does not depend on the thread that does it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ndarray::{Dimension, NdProducer, Zip};

use super::{Session, Threads};
use crate::Mode;
use crate::error::Error;
use crate::work_queue::{Region, Spread, WorkQueue};

/// How long the calling thread spins for helpers still on their last item before it blocks:
/// about one wake-up of a sleeping thread on a virtual machine.
const FINISH_SPIN: Duration = Duration::from_micros(50);

/// The threads of a session beside the calling thread: a rayon pool of `threads - 1` workers
/// whose threads are joined when the team is dropped.
pub(crate) struct Team {
    /// `None` only while dropping.
    pool: Option<rayon::ThreadPool>,
    threads: usize,
    handles: Vec<JoinHandle<()>>,
}

impl Team {
    /// A team of `threads` (at least 2) counting the calling thread, its workers named `name`.
    pub(crate) fn new(threads: usize, name: &str) -> Result<Team, Error> {
        let mut handles = Vec::new();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads - 1)
            .spawn_handler(|worker| {
                // A worker is spawned only where the address-space limit leaves it room
                // (`thread_room`: std aborts a thread that cannot map its signal stack), and
                // has set itself up before the next is asked for, so that each check sees
                // the space every earlier thread took.
                super::thread_room::room_for_a_thread()?;
                let (started, wait) = std::sync::mpsc::channel();
                let handle =
                    std::thread::Builder::new()
                        .name(name.to_string())
                        .spawn(move || {
                            let _ = started.send(());
                            worker.run()
                        })?;
                let _ = wait.recv();
                handles.push(handle);
                Ok(())
            })
            .build()
            .map_err(|e| Error::ThreadPool(e.to_string()))?;
        Ok(Team {
            pool: Some(pool),
            threads,
            handles,
        })
    }

    /// The threads of a region, the calling thread included.
    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    /// `drain` on the calling thread and on every worker; see the module comment.
    fn run(&self, drain: &(dyn Fn() + Sync)) {
        let Some(pool) = &self.pool else {
            return drain();
        };
        // A region started from inside one of this team's items: the other threads are busy
        // with the outer region, so this one does the inner region alone.
        if pool.current_thread_index().is_some() {
            return drain();
        }
        let running = AtomicUsize::new(self.threads - 1);
        pool.in_place_scope(|s| share(s, &running, drain));
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        // Dropping the pool tells its workers to stop; they end once idle. A worker dropping
        // the last clone of its own session cannot join itself.
        drop(self.pool.take());
        let me = std::thread::current().id();
        for handle in self.handles.drain(..) {
            if handle.thread().id() != me {
                let _ = handle.join();
            }
        }
    }
}

/// Spawns a job per helper counted in `running`, each draining and counting itself off,
/// drains on the calling thread, then spins a short while for the helpers still on their last
/// item before the scope blocks for them.
fn share<'s>(s: &rayon::Scope<'s>, running: &'s AtomicUsize, drain: &'s (dyn Fn() + Sync)) {
    for _ in 0..running.load(Ordering::Relaxed) {
        s.spawn(move |_| {
            drain();
            running.fetch_sub(1, Ordering::Release);
        });
    }
    drain();
    let start = Instant::now();
    while running.load(Ordering::Acquire) > 0 && start.elapsed() < FINISH_SPIN {
        for _ in 0..64 {
            std::hint::spin_loop();
        }
    }
}

/// A [`Zip`] that can be cut in two, for spreading its lanes over a region.
pub(crate) trait Split: Sized {
    /// The number of items (lanes) it holds.
    fn items(&self) -> usize;
    /// Two halves, each with at least one item (when there are at least two).
    fn halves(self) -> (Self, Self);
}

macro_rules! split_zip {
    ($($p:ident),+) => {
        impl<D: Dimension, $($p: NdProducer<Dim = D>),+> Split for Zip<($($p,)+), D> {
            fn items(&self) -> usize {
                self.size()
            }
            fn halves(self) -> (Self, Self) {
                self.split()
            }
        }
    };
}
split_zip!(P1);
split_zip!(P1, P2);
split_zip!(P1, P2, P3);
split_zip!(P1, P2, P3, P4);

/// `zip` cut into pieces of at most `max` items, in order.
pub(crate) fn pieces<Z: Split>(zip: Z, max: usize) -> Vec<Z> {
    let mut done = Vec::new();
    let mut todo = vec![zip];
    while let Some(z) = todo.pop() {
        if z.items() > max.max(1) {
            let (a, b) = z.halves();
            todo.push(b);
            todo.push(a);
        } else {
            done.push(z);
        }
    }
    done
}

impl<M: Mode> Region for Session<M> {
    /// Runs `drain` on the calling thread and on the session's other threads (the team's, or
    /// the caller's rayon pool's), returning when all are done: the one place a region runs.
    fn region(&self, drain: &(dyn Fn() + Sync)) {
        match &self.pool {
            Threads::One => drain(),
            Threads::Pool(team) => team.run(drain),
            Threads::Caller => match rayon::current_num_threads() {
                0 | 1 => drain(),
                n => {
                    let running = AtomicUsize::new(n - 1);
                    rayon::in_place_scope(|s| share(s, &running, drain))
                }
            },
        }
    }

    fn threads(&self) -> usize {
        self.region_threads()
    }
}

impl<M: Mode> Session<M> {
    /// The threads a region of this session runs on, the calling thread included.
    pub(crate) fn region_threads(&self) -> usize {
        match &self.pool {
            Threads::One => 1,
            Threads::Pool(team) => team.threads(),
            Threads::Caller => rayon::current_num_threads().max(1),
        }
    }

    /// Items per piece when `items` items are spread over a region: a few pieces per thread,
    /// so that one slow piece does not idle the others.
    pub(crate) fn per_piece(&self, items: usize) -> usize {
        items.div_ceil(4 * self.region_threads()).max(1)
    }

    /// `work(piece)` for pieces of `zip` (of lanes, in order), spread over the session's
    /// threads when `parallel`; the whole of `zip` as one piece otherwise.
    pub(crate) fn for_each_lane_piece<Z: Split + Send>(
        &self,
        parallel: bool,
        zip: Z,
        work: impl Fn(Z) + Sync,
    ) {
        if parallel {
            let max = self.per_piece(zip.items());
            self.for_each_item(true, pieces(zip, max), work);
        } else {
            work(zip);
        }
    }

    /// `work(item)` for every item, spread over the session's threads when `parallel`, else in
    /// order on the calling thread.
    pub(crate) fn for_each_item<I>(&self, parallel: bool, items: I, work: impl Fn(I::Item) + Sync)
    where
        I: IntoIterator,
        I::IntoIter: Send,
        I::Item: Send,
    {
        let done: Result<(), std::convert::Infallible> =
            self.try_for_each_item(parallel, items, |item| {
                work(item);
                Ok(())
            });
        let Ok(()) = done;
    }

    /// `work(item)` for every item until one fails, spread over the session's threads when
    /// `parallel`; the first error.
    pub(crate) fn try_for_each_item<I, E: Send>(
        &self,
        parallel: bool,
        items: I,
        work: impl Fn(I::Item) -> Result<(), E> + Sync,
    ) -> Result<(), E>
    where
        I: IntoIterator,
        I::IntoIter: Send,
        I::Item: Send,
    {
        if !parallel || self.region_threads() == 1 {
            return items.into_iter().try_for_each(work);
        }
        WorkQueue::new(items.into_iter()).run(Some(self as Spread<'_>), work)
    }
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::Exact;

    /// The threads of this process named `name`.
    fn named(name: &str) -> usize {
        let tasks = std::fs::read_dir("/proc/self/task").unwrap();
        tasks
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.trim_end() == name)
            .count()
    }

    /// A team starts `threads - 1` threads, its session's clones share them, and dropping the
    /// last clone ends them (joined before the drop returns).
    pub fn dropping_the_last_session_ends_its_threads() {
        if !std::path::Path::new("/proc/self/task").exists() {
            return;
        }
        let name = "ak-team-drop";
        assert_eq!(named(name), 0);
        let session = Session::<Exact> {
            pool: Threads::Pool(Arc::new(Team::new(3, name).unwrap())),
            ..Session::new()
        };
        // A new thread names itself once it runs.
        let start = Instant::now();
        while named(name) < 2 && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(named(name), 2);
        let clone = session.clone();
        drop(session);
        let sum = std::sync::atomic::AtomicUsize::new(0);
        clone.for_each_item(true, 0..100, |i| {
            sum.fetch_add(i, Ordering::Relaxed);
        });
        assert_eq!(sum.into_inner(), 4950);
        assert_eq!(named(name), 2);
        drop(clone);
        assert_eq!(named(name), 0);
    }

    /// Pieces of a zip cover its lanes once, in order, none longer than asked.
    pub fn pieces_cover_every_lane_once_in_order() {
        let a = ndarray::Array2::from_shape_fn((37, 5), |(i, j)| i * 5 + j);
        for max in [1, 2, 3, 10, 37, 100] {
            let parts = pieces(Zip::from(a.rows()), max);
            assert!(parts.len() >= 37usize.div_ceil(max));
            let mut seen = Vec::new();
            for p in parts {
                assert!(p.items() <= max);
                p.for_each(|r| seen.push(r[0]));
            }
            assert_eq!(seen, (0..37).map(|i| i * 5).collect::<Vec<_>>());
        }
    }
}
