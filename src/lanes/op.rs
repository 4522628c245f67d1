//! [`LaneOp`], the one shape of a kernel entry point, and [`compiled_once_per_mode!`], which gives
//! an entry point its two per-mode functions.

use super::{Lanes, Mode};

/// A kernel entry point: a struct that carries the arguments, and its body, written once over
/// the lane type and the mode.
///
/// `isa.dispatch::<M, _>(op)` ([`super::Supported::dispatch`]) runs the body on one instruction
/// set, compiled inside that instruction set's `#[target_feature]` trampoline. What the op may
/// do follows from its mode alone: an [`super::Exact`] op runs inside an
/// [`super::ExactFpEnv`], so its bits do not depend on the caller's (or a rayon worker's)
/// MXCSR, and never fuses ([`Mode::madd`] is a separate multiply and add); a [`super::Fast`] op
/// runs with the caller's MXCSR and fuses, with the hardware FMA where the CPU has one and a
/// correctly rounded software fma on the 128-bit path where it has not.
///
/// # Target features
///
/// `run` is `#[inline(always)]`, and so is everything it calls with lane values. A function left
/// out of line is compiled without the trampoline's instruction set, and every intrinsic in it
/// becomes a call; a closure handed to a helper that is not inlined is such a function. So the
/// kernels reach the drivers as types ([`crate::ops::Kernel`]), and the loops that call them are
/// written out inside `run` or in `#[inline(always)]` drivers, never behind a closure.
///
/// # Compiled once per mode
///
/// An op that code generic over the mode calls (the session's operators, which every crate that
/// calls them instantiates: each test binary, example, user) is declared an entry point with
/// [`compiled_once_per_mode!`]: its `op.dispatch::<M>(isa)` calls one of two non-generic
/// functions, one per mode, so its kernels are compiled once, in this crate, for every
/// instruction set. An op run from inside another op's dispatch, or only in this crate's
/// tests, is dispatched directly: `isa.dispatch::<M, _>(op)`.
///
/// ```text
/// /// `data[i] *= s`.
/// struct Scale<'a> {
///     data: &'a mut [f32],
///     s: f32,
/// }
///
/// impl LaneOp for Scale<'_> {
///     type Output = ();
///     #[inline(always)]
///     fn run<L: Lanes, M: Mode>(self, l: L) {
///         crate::ops::map::map_registers_in_place(l, self.data, |x| l.mul(x, l.splat(self.s)))
///     }
/// }
///
/// compiled_once_per_mode!(Scale<'_>);
///
/// Scale { data: &mut row, s: 2.0 }.dispatch::<M>(isa);
/// ```
pub trait LaneOp: Sized {
    /// What the op returns.
    type Output;
    /// The body, with the lane token `l`, in mode `M`.
    fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output;
}

/// Declares `$op` a kernel entry point: gives it
/// `pub(crate) fn dispatch<M: Mode>(self, isa: Supported) -> Output`, which runs it in mode `M`
/// on `isa` through one of two non-generic functions, one per mode.
///
/// * `compiled_once_per_mode!(Op<'_>)`: `Op` is a [`LaneOp`]; its functions dispatch it
///   (`isa.dispatch::<M, _>(op)`).
/// * `compiled_once_per_mode!(Op<'_> -> Output, by method)`: `Op` is a driver that dispatches
///   lane ops of its own (the GEMM: packing, threads, tiles); its functions call
///   `op.method::<M>(isa)`.
///
/// Why: the operators are generic over the mode, so without this every crate that calls them
/// would instantiate and optimise every kernel again, for every instruction set, in its own
/// build. Behind this boundary the kernels are compiled once, in this crate, for both modes; a
/// caller instantiates only the thin generic `dispatch`. The two functions are never inlined
/// into it, so they cannot be pulled into the caller's crate either. The call costs nothing
/// measurable: every entry point does a whole row, slice or product.
macro_rules! compiled_once_per_mode {
    ($op:ident<'_>) => {
        $crate::lanes::compiled_once_per_mode!(@entry $op,
            <$op<'a> as $crate::lanes::LaneOp>::Output,
            |op, isa, M| isa.dispatch::<M, _>(op));
    };
    ($op:ident<'_> -> $out:ty, by $method:ident) => {
        $crate::lanes::compiled_once_per_mode!(@entry $op, $out,
            |op, isa, M| op.$method::<M>(isa));
    };
    (@entry $op:ident, $out:ty, |$o:ident, $isa:ident, $mode:ident| $call:expr) => {
        impl<'a> $op<'a> {
            /// Runs it in mode `M` on `isa`, through the function of that mode compiled once
            /// in this crate.
            #[inline]
            pub(crate) fn dispatch<M: $crate::lanes::Mode>(
                self,
                isa: $crate::lanes::Supported,
            ) -> $out {
                #[inline(never)]
                fn exact<'a>($o: $op<'a>, $isa: $crate::lanes::Supported) -> $out {
                    type $mode = $crate::lanes::Exact;
                    $call
                }
                #[inline(never)]
                fn fast<'a>($o: $op<'a>, $isa: $crate::lanes::Supported) -> $out {
                    type $mode = $crate::lanes::Fast;
                    $call
                }
                if M::FAST { fast(self, isa) } else { exact(self, isa) }
            }
        }
    };
}
pub(crate) use compiled_once_per_mode;
