//! The two modes, `Exact` and `Fast`, as types: the mode is fixed at compile time and no kernel
//! branches on it per element.

use super::Lanes;

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
