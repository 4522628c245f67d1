//! The operators: one file each, its exact algorithm as the spec writes it, its fast form, both
//! written once over the lane type. Plus the slice driver ([`map`]), the canonical reductions
//! ([`reduce`]) and the shared helpers here. No tensors, no GEMM, no session: rows and slices
//! of `f32`.
//!
//! Every kernel here is `#[inline(always)]` and generic over `L: Lanes` and `M: Mode`. The mode
//! decides what [`Mode::madd`] does (a separate multiply and add, or one fused multiply-add),
//! and where fast mode has an algorithm of its own, which one runs: the fast exp for `exp` and
//! inside softmax, the rational GELU, the fused square of erf's large branch, and the
//! multiplication by `1/s` (`1/sd`) instead of a division in softmax (layer norm). In exact
//! mode each expression is evaluated as the spec writes it, one rounding per operator, special
//! values selected at the end.
//!
//! Constants are written as the spec writes them (more digits than an f32 holds, values near
//! named constants); a test in each file pins their bit patterns.
#![allow(clippy::excessive_precision, clippy::approx_constant)]

#[cfg(feature = "unit-tests")]
mod clean_form_test;
pub mod erf;
pub mod exp;
pub mod func;
pub mod gelu;
pub mod log;
pub mod map;
pub mod nan;
pub mod norm;
pub mod pooling;
pub mod reduce;
pub mod regions;
pub mod sigmoid;
pub mod silu;
pub mod softmax;
pub mod tanh;

use crate::lanes::Lanes;
use crate::lanes::Mode;

/// The slices of a slice kernel: `dst = f(src)` (equal lengths), or `dst = f(dst)` in place
/// when `src` is `None`.
#[derive(Debug)]
pub struct SrcDst<'a> {
    /// The input, or `None` in place.
    pub src: Option<&'a [f32]>,
    /// The output (in place: the input too).
    pub dst: &'a mut [f32],
}

impl<'a> SrcDst<'a> {
    /// `dst = f(src)`; the lengths are equal (the callers check it).
    pub fn new(src: &'a [f32], dst: &'a mut [f32]) -> Self {
        debug_assert_eq!(src.len(), dst.len());
        SrcDst {
            src: Some(src),
            dst,
        }
    }

    /// `data = f(data)`.
    pub fn in_place(data: &'a mut [f32]) -> Self {
        SrcDst {
            src: None,
            dst: data,
        }
    }
}

/// An element-wise function over one register of lanes, passed to the drivers as a type so
/// that it inlines into the instruction set's trampoline.
pub trait Kernel: Sized + Send + Sync + 'static {
    /// The mode whose algorithm it is: the one it must be dispatched in (a fast-only kernel
    /// fuses).
    type Mode: Mode;
    /// The function, lane by lane.
    fn apply<L: Lanes>(l: L, x: L::F) -> L::F;
    /// `f` over a slice, into another or in place: [`map::map_lanes`] (a register group at a
    /// time) unless the kernel has a faster way to the same bits.
    #[inline(always)]
    fn map<L: Lanes>(l: L, io: SrcDst<'_>) {
        match io.src {
            Some(src) => map::map_lanes::<L, Self>(l, src, io.dst),
            None => map::map_lanes_in_place::<L, Self>(l, io.dst),
        }
    }
}

/// Declares a zero-sized kernel type for an `fn<L, M>(l, x)` operator.
///
/// `$name => $func, wide` declares a kernel whose slice loop takes a [`Lanes::WideGroup`] at
/// once ([`map::map_wide`]): one of long dependent chains (an exp inside) that was measured to
/// gain from more registers in flight. `$name => $func, regions` declares one that maps a slice
/// sorted by the regions of its algorithm ([`regions::map_by_regions`]; the type implements
/// [`regions::TwoRegions`]).
macro_rules! kernel_type {
    ($(#[$doc:meta])* $name:ident => $func:ident $(, $wide:ident)?) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name<M>(core::marker::PhantomData<M>);
        impl<M: $crate::lanes::Mode> $crate::ops::Kernel for $name<M> {
            type Mode = M;
            #[inline(always)]
            fn apply<L: $crate::lanes::Lanes>(l: L, x: L::F) -> L::F {
                $func::<L, M>(l, x)
            }
            $($crate::ops::wide_map!($wide);)?
        }
    };
}
pub(crate) use kernel_type;

/// Declares the kernel type `$name` of `$func`, a fast-mode-only function (no mode parameter,
/// always fused): the fast exp and the fitted rationals.
macro_rules! fused_kernel_type {
    ($(#[$doc:meta])* $name:ident => $func:ident $(, $wide:ident)?) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name;
        impl $crate::ops::Kernel for $name {
            type Mode = $crate::lanes::Fast;
            #[inline(always)]
            fn apply<L: $crate::lanes::Lanes>(l: L, x: L::F) -> L::F {
                $func(l, x)
            }
            $($crate::ops::wide_map!($wide);)?
        }
    };
}
pub(crate) use fused_kernel_type;

/// The [`Kernel::map`] of a kernel declared `wide` or `regions` by [`kernel_type`] or
/// [`fused_kernel_type`].
macro_rules! wide_map {
    (wide) => {
        #[inline(always)]
        fn map<L: $crate::lanes::Lanes>(l: L, io: $crate::ops::SrcDst<'_>) {
            $crate::ops::map::map_wide::<L, Self>(l, io)
        }
    };
    (regions) => {
        #[inline(always)]
        fn map<L: $crate::lanes::Lanes>(l: L, io: $crate::ops::SrcDst<'_>) {
            $crate::ops::regions::map_by_regions::<L, Self>(l, io.src, io.dst)
        }
    };
}
pub(crate) use wide_map;

/// The canonical quiet NaN, `0x7FC00000`: every NaN result of the crate.
pub const CANONICAL_NAN: f32 = f32::from_bits(0x7FC0_0000);

/// `|x|`: clears the sign bit.
#[inline(always)]
pub fn abs<L: Lanes>(l: L, x: L::F) -> L::F {
    l.and(x, l.splat(f32::from_bits(0x7FFF_FFFF)))
}

/// The sign bit of `x` alone (`+0` or `-0`).
#[inline(always)]
pub fn sign_bit<L: Lanes>(l: L, x: L::F) -> L::F {
    l.and(x, l.splat(-0.0))
}

/// `r`, with the canonical NaN in every lane where `x` is NaN.
#[inline(always)]
pub fn nan_where_nan<L: Lanes>(l: L, x: L::F, r: L::F) -> L::F {
    l.select(l.is_nan(x), l.splat(CANONICAL_NAN), r)
}

/// Whether every lane has `|x| < limit` (`limit` positive: a finite value or `+inf`; a NaN
/// lane has not), compared as integers: the bit pattern of `|x|` against that of `limit`.
/// Non-negative floats are ordered as their bit patterns, and NaN's patterns lie above
/// infinity's, so it is the float comparison.
///
/// Why integers: on the AMD cores measured a float compare takes a slot on the two pipes
/// that run the multiplies and fused multiply-adds, which an exp keeps busy; the integer `and`
/// and compare run elsewhere. The fast exp gained from it on AVX-512 and on AVX2.
#[inline(always)]
pub fn all_abs_below<L: Lanes>(l: L, x: L::F, limit: f32) -> bool {
    debug_assert!(limit > 0.0);
    let abs_bits = l.and_i(l.to_bits(x), l.splat_i(0x7FFF_FFFF));
    l.all(l.gt_i(l.splat_i(limit.to_bits() as i32), abs_bits))
}

/// Horner's rule from the highest coefficient down: `acc = c[0]`, then `acc = acc*x + c[k]`
/// (the spec's `c + acc*x`), each step through [`Mode::madd`].
#[inline(always)]
pub fn horner<L: Lanes, M: Mode, const N: usize>(l: L, x: L::F, coeffs: &[f32; N]) -> L::F {
    let mut acc = l.splat(coeffs[0]);
    for &c in &coeffs[1..] {
        acc = M::madd(l, acc, x, l.splat(c));
    }
    acc
}

/// `float(bits((k + 127) << 23))`: the power of two `2^k` for `-126 <= k <= 127`.
#[inline(always)]
pub fn pow2i<L: Lanes>(l: L, k: L::I) -> L::F {
    l.from_bits(l.shl_i::<23>(l.add_i(k, l.splat_i(127))))
}

/// `p * 2^k` by adding `k` to the exponent field of `p`: `float(bits(p) + (k << 23))`, two
/// integer operations instead of [`pow2i`]'s two and a multiply. It is the IEEE product
/// `p * pow2i(k)`, bit for bit, wherever `p` is positive and normal and `p * 2^k` is normal: a
/// product with a power of two is exact there, and only the exponent changes. Elsewhere
/// (a subnormal or overflowing result), anything.
#[inline(always)]
pub fn scale_normal<L: Lanes>(l: L, p: L::F, k: L::I) -> L::F {
    l.from_bits(l.add_i(l.to_bits(p), l.shl_i::<23>(k)))
}
