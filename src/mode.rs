//! The two modes, `Exact` and `Fast`, as types: the mode is fixed at compile time and no kernel
//! branches on it per element.

use crate::lanes::Lanes;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Exact {}
    impl Sealed for super::Fast {}
}

/// A computation mode. Sealed: the only modes are [`Exact`] and [`Fast`].
pub trait Mode:
    sealed::Sealed + Copy + Clone + Default + Send + Sync + std::fmt::Debug + 'static
{
    /// `true` for [`Fast`].
    const FAST: bool;
    /// `"exact"` or `"fast"`.
    const NAME: &'static str;

    /// `a * b + c`. [`Exact`]: the product rounded, then the sum rounded, as the spec writes
    /// `c + a*b`. [`Fast`]: one fused multiply-add, rounded once. (The kernels' own step, over
    /// the crate's lane types.)
    #[doc(hidden)]
    fn madd<L: Lanes>(l: L, a: L::F, b: L::F, c: L::F) -> L::F;

    /// [`Mode::madd`] with `a` every lane's `*a`: the GEMM microkernel's step, which lets the
    /// lane type fetch `*a` in the way that suits the mode ([`Lanes::mul_splat`]).
    #[doc(hidden)]
    fn madd_splat<L: Lanes>(l: L, a: &f32, b: L::F, c: L::F) -> L::F;
}

/// Exact mode: every output bit fixed by the spec, on every instruction set and thread count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Exact;

/// Fast mode: fused multiply-adds, the degree-3 fast exp and the rational GELU. Deterministic
/// on one machine for any thread count and instruction set; not promised across CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Fast;

impl Mode for Exact {
    const FAST: bool = false;
    const NAME: &'static str = "exact";
    #[inline(always)]
    fn madd<L: Lanes>(l: L, a: L::F, b: L::F, c: L::F) -> L::F {
        l.add(l.mul(a, b), c)
    }
    #[inline(always)]
    fn madd_splat<L: Lanes>(l: L, a: &f32, b: L::F, c: L::F) -> L::F {
        l.add(l.mul_splat(a, b), c)
    }
}

impl Mode for Fast {
    const FAST: bool = true;
    const NAME: &'static str = "fast";
    #[inline(always)]
    fn madd<L: Lanes>(l: L, a: L::F, b: L::F, c: L::F) -> L::F {
        l.fma(a, b, c)
    }
    #[inline(always)]
    fn madd_splat<L: Lanes>(l: L, a: &f32, b: L::F, c: L::F) -> L::F {
        // One register broadcast serves every FMA of the row: the FMA kernel already runs at
        // the multiply pipes' rate, and the broadcast goes to another pipe.
        l.fma(l.splat(*a), b, c)
    }
}

/// Declares `fn $name<M: Mode>(args) -> R`, which calls `$generic::<Exact>` or
/// `$generic::<Fast>` through one of two non-generic functions.
///
/// Why: the public operators are generic over the mode, so without this every crate that calls
/// them (each test binary, each example, each user) would instantiate and optimise every kernel
/// again, for every instruction set, in its own build. Behind this boundary the kernels are
/// compiled once, in this crate, for both modes; a caller instantiates only the thin generic
/// plumbing above it. The two functions are never inlined into the forwarder, so they cannot be
/// pulled into the caller's crate either. The call costs nothing measurable: every function
/// declared this way does a whole row, slice or product.
macro_rules! compiled_once_per_mode {
    (
        $(#[$attr:meta])*
        $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? = $generic:ident;
    ) => {
        $(#[$attr])*
        $vis fn $name<M: $crate::mode::Mode>($($arg: $ty),*) $(-> $ret)? {
            #[inline(never)]
            fn exact($($arg: $ty),*) $(-> $ret)? {
                $generic::<$crate::mode::Exact>($($arg),*)
            }
            #[inline(never)]
            fn fast($($arg: $ty),*) $(-> $ret)? {
                $generic::<$crate::mode::Fast>($($arg),*)
            }
            if M::FAST { fast($($arg),*) } else { exact($($arg),*) }
        }
    };
}
pub(crate) use compiled_once_per_mode;
