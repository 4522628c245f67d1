//! [`Session`]: the mode, the instruction set, the threads and the policies; every public
//! operator is a method of it, defined in this folder, composing the layers below (the slice
//! and row kernels of `ops`, the GEMM and its epilogues) with the ndarray plumbing of
//! `traverse.rs` (one traversal for element-wise and row operators alike).

mod add_norm;
pub(crate) mod attention;
mod attention_plan;
mod elementwise;
mod embedding;
mod gated;
pub(crate) mod matmul;
mod norm;
pub(crate) mod owned;
mod pooling;
mod softmax;
pub(crate) mod team;
pub(crate) mod thread_room;
pub(crate) mod traverse;
mod varlen;

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

pub use attention::AttentionOptions;
pub use embedding::Lookup;
pub use softmax::Mask;

use crate::lanes::Supported;
use crate::ops::softmax::MaskedRow;
use crate::{Error, Exact, Fast, Func, Isa, Mode, ops};

/// Elements per parallel work item: fixed, never a function of the thread count.
pub(crate) const PAR_CHUNK: usize = 1 << 16;
/// Elements per conversion chunk for 16-bit types and strided views (fits in L1 as `f32`).
pub(crate) const CONVERT_CHUNK: usize = 4096;

/// The entry point: a mode ([`Exact`] or [`Fast`], fixed at compile time), an instruction set,
/// a thread policy. Cheap to clone and share (`Send + Sync`); its operators take any `ndarray`
/// array or view.
///
/// ```
/// use activation_kernels::Session;
/// use ndarray::Array2;
///
/// let session = Session::exact();
/// let mut hidden = Array2::from_shape_fn((4, 8), |(i, j)| i as f32 - j as f32 / 4.0);
/// session.gelu(&mut hidden);
/// assert_eq!(hidden[[0, 0]], 0.0);
/// ```
pub struct Session<M: Mode> {
    isa: Supported,
    pool: Threads,
    parallel_threshold: usize,
    masked_row: MaskedRow,
    mode: PhantomData<M>,
}

/// Where a session's work runs.
#[derive(Clone)]
pub(crate) enum Threads {
    /// The caller's current rayon pool (the default).
    Caller,
    /// The calling thread alone (`with_threads(1)`): no pool, so no work is handed to another
    /// thread and back on every call.
    One,
    /// Threads of the session's own beside the calling thread, shared by its clones.
    Pool(Arc<team::Team>),
}

impl<M: Mode> Clone for Session<M> {
    fn clone(&self) -> Self {
        Session {
            isa: self.isa,
            pool: self.pool.clone(),
            parallel_threshold: self.parallel_threshold,
            masked_row: self.masked_row,
            mode: PhantomData,
        }
    }
}

impl<M: Mode> fmt::Debug for Session<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("mode", &M::NAME)
            .field("isa", &self.isa)
            .field("threads", &self.threads())
            .field("parallel_threshold", &self.parallel_threshold)
            .field("masked_row", &self.masked_row)
            .finish()
    }
}

impl<M: Mode> Default for Session<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl Session<Exact> {
    /// An exact-mode session with the default options (see [`Session::new`]).
    pub fn exact() -> Self {
        Session::new()
    }
}

impl Session<Fast> {
    /// A fast-mode session with the default options (see [`Session::new`]).
    pub fn fast() -> Self {
        Session::new()
    }
}

impl<M: Mode> Session<M> {
    /// The default number of elements below which work stays on the calling thread.
    pub const DEFAULT_PARALLEL_THRESHOLD: usize = 1 << 17;
    /// The most threads a session's pool gets: [`Session::with_threads`] caps its argument
    /// here. The largest machines run a few hundred hardware threads; results never depend on
    /// the thread count, and a request for more (say `usize::MAX`) must not try to start tens
    /// of thousands of threads, whose stacks alone can exhaust the address space.
    pub const MAX_THREADS: usize = 1024;

    /// A session on the instruction set `ACTIVATION_KERNELS_ISA` forces, or else the widest
    /// this CPU runs; running in the caller's rayon pool.
    ///
    /// If the environment variable names an unknown or unavailable instruction set, this falls
    /// back to [`Isa::detect`] and says so once on stderr ([`Isa::preferred_or_detect`]);
    /// [`Session::try_new`] reports it as an error instead.
    pub fn new() -> Self {
        Self::on(Supported::preferred_or_detect())
    }

    /// Like [`Session::new`], but an unknown or unavailable `ACTIVATION_KERNELS_ISA` is an error.
    pub fn try_new() -> Result<Self, Error> {
        Ok(Self::on(Supported::preferred()?))
    }

    /// A session on `isa`, whatever `ACTIVATION_KERNELS_ISA` says (it is not read): for a
    /// program with a choice of its own, such as a command-line flag. An instruction set this
    /// CPU does not run is [`Error::IsaUnavailable`].
    ///
    /// ```
    /// use activation_kernels::{Exact, Isa, Session};
    /// let s = Session::<Exact>::on_isa(Isa::Scalar)?;
    /// assert_eq!(s.isa(), Isa::Scalar);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn on_isa(isa: Isa) -> Result<Self, Error> {
        Ok(Self::on(isa.supported()?))
    }

    fn on(isa: Supported) -> Self {
        Session {
            isa,
            pool: Threads::Caller,
            parallel_threshold: Self::DEFAULT_PARALLEL_THRESHOLD,
            masked_row: MaskedRow::Zero,
            mode: PhantomData,
        }
    }

    /// The same session on `isa`; [`Error::IsaUnavailable`] if this CPU lacks it.
    pub fn with_isa(self, isa: Isa) -> Result<Self, Error> {
        Ok(Session {
            isa: isa.supported()?,
            ..self
        })
    }

    /// The same session with threads of its own: the calling thread works on each parallel
    /// region beside `threads - 1` threads that the session starts (by default a session runs
    /// in the caller's current rayon pool); with one thread, everything runs on the calling
    /// thread and no thread is started. The threads are shared by the session's clones and
    /// end when the last of them is dropped. Results never depend on the number of threads.
    ///
    /// `threads` is capped at [`Session::MAX_THREADS`]. `0` is [`Error::InvalidArgument`]; a
    /// pool the system cannot start (threads or memory refused) is [`Error::ThreadPool`].
    ///
    /// ```
    /// use activation_kernels::Session;
    /// assert_eq!(Session::exact().with_threads(2)?.threads(), Some(2));
    /// assert_eq!(Session::exact().threads(), None); // the caller's pool
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn with_threads(self, threads: usize) -> Result<Self, Error> {
        let threads = threads.min(Self::MAX_THREADS);
        if threads == 0 {
            return Err(Error::InvalidArgument(
                "a session needs at least one thread".into(),
            ));
        }
        if threads == 1 {
            // A pool of one would add a hand-over to its thread and back to every call (a
            // sleep and a wake-up), a measurable cost even on a softmax of 1M elements.
            return Ok(Session {
                pool: Threads::One,
                ..self
            });
        }
        let team = team::Team::new(threads, "activation-kernels")?;
        Ok(Session {
            pool: Threads::Pool(Arc::new(team)),
            ..self
        })
    }

    /// The same session with another parallel threshold: tensors with fewer elements run on
    /// the calling thread.
    pub fn with_parallel_threshold(self, elements: usize) -> Self {
        Session {
            parallel_threshold: elements,
            ..self
        }
    }

    /// The instruction set the session runs on.
    pub fn isa(&self) -> Isa {
        self.isa.isa()
    }

    /// The threads of the session's own pool (`Some(1)`: the calling thread alone), or `None`
    /// when it runs in the caller's current rayon pool.
    pub fn threads(&self) -> Option<usize> {
        match &self.pool {
            Threads::Caller => None,
            Threads::One => Some(1),
            Threads::Pool(team) => Some(team.threads()),
        }
    }

    /// The parallel threshold, in elements.
    pub fn parallel_threshold(&self) -> usize {
        self.parallel_threshold
    }

    /// The mode's name, `"exact"` or `"fast"`.
    pub fn mode_name(&self) -> &'static str {
        M::NAME
    }

    /// Whether work on `elements` elements should be split across threads: never on a
    /// one-thread session.
    pub(crate) fn parallel(&self, elements: usize) -> bool {
        !matches!(self.pool, Threads::One) && elements >= self.parallel_threshold
    }

    /// The slice kernel of `func` in place on `f32` data, on the session's instruction set.
    pub(crate) fn kernel_in_place(&self, func: Func, data: &mut [f32]) {
        ops::func::map_slice_in_place::<M>(func, self.isa, data)
    }

    /// The slice kernel of `func` from `src` into `dst` (equal lengths).
    pub(crate) fn kernel_into(&self, func: Func, src: &[f32], dst: &mut [f32]) {
        ops::func::map_slice::<M>(func, self.isa, src, dst)
    }
}

fn _assert_send_sync() {
    fn is<T: Send + Sync + Clone>() {}
    is::<Session<Exact>>();
    is::<Session<Fast>>();
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;

    /// A one-thread session runs its work on the calling thread (never a pool thread of its
    /// own) and never takes the parallel path, inside a rayon pool too; a session of two
    /// threads takes it.
    pub fn a_one_thread_session_stays_on_the_calling_thread() {
        let one = Session::exact().with_threads(1).unwrap();
        assert!(!one.parallel(usize::MAX));
        let on_caller = |s: &Session<Exact>| {
            let me = std::thread::current().id();
            let seen = std::sync::Mutex::new(Vec::new());
            s.for_each_item(true, 0..64, |_| {
                seen.lock().unwrap().push(std::thread::current().id())
            });
            seen.into_inner().unwrap().iter().all(|&t| t == me)
        };
        assert!(on_caller(&one));
        let outer = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        assert!(outer.install(|| on_caller(&one)));
        let two = Session::exact().with_threads(2).unwrap();
        assert!(two.parallel(two.parallel_threshold()));
        assert_eq!(two.region_threads(), 2);
        assert!(format!("{one:?}").contains("threads: Some(1)"));
    }
}
