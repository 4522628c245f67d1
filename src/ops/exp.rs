//! `exp`, `exp_nonpositive` (softmax and attention) and the fast `FastMath::exp`.
//!
//! Exact algorithm (spec, "exp(x)"): `n = round(x * log2 e)` by the magic-number trick,
//! Cody-Waite reduction `r = (x - n*ln2_hi) - n*ln2_lo`, a degree-5 minimax `q`,
//! `p = 1 + (r + r*r*q)`, and `2^n` applied as two exact power-of-two factors so that a
//! subnormal result rounds once. Bound: 1.2 ulp.

pub mod taylor;

use super::{
    all_abs_below, fused_kernel_type, horner, kernel_type, nan_where_nan, pow2i, scale_normal,
};
use crate::lanes::{Lanes, Mode, ROUND_MAGIC};

/// `log2(e)` rounded to f32, `0x3FB8AA3B`.
pub const LOG2E: f32 = 1.442_695_02;
/// High part of `ln 2`, 15 significant bits (the spec's 14 after the leading one) so
/// `n * LN2_HI` is exact for `|n| < 256` (at most 23 bits), `0x3F317200`.
pub const LN2_HI: f32 = 0.693_145_751_953_125;
/// Low part of `ln 2`, `0x35BFBE8E`.
pub const LN2_LO: f32 = 1.428_606_8e-6;
/// The coefficients of `q`, highest first (spec step 3).
pub const EXP_Q: [f32; 5] = [
    0.001_381_461_3,
    0.008_368_71,
    0.041_668_39,
    0.166_665_21,
    0.499_999_94,
];
/// Above this `exp` overflows to `+inf`: `0x42B17217`.
pub const EXP_OVERFLOW: f32 = 88.722_831_726_074_22;
/// Below this `exp` underflows to `+0`: `0xC2CFF1B4`.
pub const EXP_UNDERFLOW: f32 = -103.972_076_416_015_62;
/// Below this `exp_nonpositive` flushes to `+0` (its result would be subnormal):
/// `0xC2AEAC4F`.
pub const EXP_NONPOSITIVE_FLUSH: f32 = -87.336_54;

/// The fast exp's clamp, low end (`0xC2AE999A`); below it the result is `+0`.
pub const FAST_EXP_LOW: f32 = -87.3;
/// The fast exp's clamp, high end (`0x42B0999A`); above it the result is `exp(88.3)`.
pub const FAST_EXP_HIGH: f32 = 88.3;
/// The degree-3 coefficients of the fast exp, highest first.
pub const FAST_EXP_Q: [f32; 4] = [0.008_312_525, 0.041_890_115, 0.166_671_14, 0.499_992_3];

/// Spec steps 1 to 3: `(p, n, n_int)` with `exp(x) ~ p * 2^n`, `n` an integral float and
/// `n_int` the same integer in `i32` lanes. In fast mode every multiply-add fuses.
///
/// Exact mode on a lane type that [`Lanes::ROUNDS`] rounds `x * log2 e` with
/// [`Lanes::round_even`] (one instruction) instead of the spec's `(x*c + M) - M`: the same
/// integer for `|x*c| < 2^22` (the spec's own condition), except that it may be `-0` where the
/// spec's is `+0`. That changes no later bit: `n = ±0` makes `r = x - 0*ln2_hi - 0*ln2_lo`,
/// which is `x` (or a zero of either sign when `x` is one: then `p = 1 + (±0 + ...) = 1`), and
/// scales by `2^0`. Fast mode keeps the fused `x*c + M`, whose single rounding can pick
/// another integer than a rounded product would, so that every lane type gives its bits.
/// `n_int` costs nothing where it goes unused (the compiler drops it).
#[inline(always)]
fn reduce<L: Lanes, M: Mode>(l: L, x: L::F) -> (L::F, L::F, L::I) {
    let (r, n, n_int) = reduce_arg::<L, M>(l, x);
    let q = horner::<L, M, 5>(l, r, &EXP_Q);
    let p = l.add(l.splat(1.0), M::madd(l, l.mul(r, r), q, r));
    (p, n, n_int)
}

/// Spec steps 1 and 2 (see [`reduce`]): `(r, n, n_int)`, the reduced argument and the
/// exponent, for a caller that forms `p` from `r` itself (the exact tanh, which evaluates its
/// own polynomial and the exp's in one pass).
#[inline(always)]
pub(super) fn reduce_arg<L: Lanes, M: Mode>(l: L, x: L::F) -> (L::F, L::F, L::I) {
    let magic = l.splat(ROUND_MAGIC);
    let (n, n_int) = if L::ROUNDS && !M::FAST {
        let n = l.round_even(l.mul(x, l.splat(LOG2E)));
        (n, l.sub_i(l.to_bits(l.add(n, magic)), l.to_bits(magic)))
    } else {
        let t = M::madd(l, x, l.splat(LOG2E), magic);
        (l.sub(t, magic), l.sub_i(l.to_bits(t), l.to_bits(magic)))
    };
    // (x - n*ln2_hi) - n*ln2_lo: n*(-c) + x is x - n*c, bit for bit. The first product is
    // exact wherever a result is kept (`|n| < 256`: 15 significant bits times at most 8), so
    // in exact mode it may fuse (`madd_exact_product`: one FMA on AVX2) with the same bits;
    // the second is not exact and stays a product and a sum.
    let r = if M::FAST {
        l.fma(n, l.splat(-LN2_HI), x)
    } else {
        l.madd_exact_product(n, l.splat(-LN2_HI), x)
    };
    let r = M::madd(l, n, l.splat(-LN2_LO), r);
    (r, n, n_int)
}

/// `p * 2^n` where the product is normal (`p` positive and normal, `n == n_int`): one
/// `vscalefps` on a lane type that [`Lanes::SCALES`], [`scale_normal`]'s two integer operations
/// elsewhere. The same bits: the product is exact.
#[inline(always)]
pub(super) fn scale_exact<L: Lanes>(l: L, p: L::F, n: L::F, n_int: L::I) -> L::F {
    if L::SCALES {
        l.scale_pow2(p, n)
    } else {
        scale_normal(l, p, n_int)
    }
}

/// Below this `|x|` (every lane of a register) [`exp`] scales by one power of two and selects
/// no special value: `|n| <= 124` there (`86 * log2 e < 124.1`), so `p * 2^n` is normal.
pub const EXP_ONE_SCALE: f32 = 86.0;

/// `exp(x)`, the spec's algorithm (fused multiply-adds in fast mode). `+inf` above
/// [`EXP_OVERFLOW`], `+0` below [`EXP_UNDERFLOW`], canonical NaN for NaN.
///
/// A register whose lanes all have `|x| < 86` (no NaN, no overflow, no underflow, no subnormal
/// result) takes the short path `p * 2^n` with one power of two and no selects. It gives the
/// spec's bits: there `-124 <= n <= 124`, so `2^n`, `2^a` and `2^b` (`a = n >> 1`, `b = n - a`)
/// are normal powers of two, and `p` (`1 + (r + r*r*q)` with `|r| <= 0.35`) lies in
/// `[0.70, 1.42]`. Multiplying a float by a power of two is exact whenever the product is
/// normal (only the exponent changes), and every product here is: `p * 2^a` and
/// `p * 2^a * 2^b = p * 2^n` lie within `[0.70 * 2^-124, 1.42 * 2^124]`. So the spec's two
/// products round nothing, and neither does the single one: both are `p * 2^n` exactly. The
/// selects are no-ops there too (`x` is neither NaN nor beyond the thresholds). The test
/// `one_scale_path_equals_the_two_factor_form` checks it on a dense sweep.
#[inline(always)]
pub fn exp<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    if all_abs_below(l, x, EXP_ONE_SCALE) {
        exp_one_scale::<L, M>(l, x)
    } else {
        exp_two_factor::<L, M>(l, x)
    }
}

/// `p * 2^n`, one power of two and no select: [`exp`] (and [`exp_nonpositive`]) of an `x`
/// with `|x| < EXP_ONE_SCALE` (or in `[EXP_NONPOSITIVE_FLUSH, EXP_ONE_SCALE]`), bit for bit
/// (see [`exp`]). Outside that range, anything.
#[inline(always)]
pub fn exp_one_scale<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    let (p, n, n_int) = reduce::<L, M>(l, x);
    // `p * 2^n` is normal here (see [`exp`]).
    scale_exact(l, p, n, n_int)
}

/// The spec's `exp` as it writes it: two power-of-two factors (a subnormal result rounds
/// once), then the special values selected.
#[inline(always)]
fn exp_two_factor<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    let (p, _, n) = reduce::<L, M>(l, x);
    let a = l.sra_i::<1>(n);
    let b = l.sub_i(n, a);
    let y = l.mul(l.mul(p, pow2i(l, a)), pow2i(l, b));
    let y = l.select(l.gt(x, l.splat(EXP_OVERFLOW)), l.splat(f32::INFINITY), y);
    let y = l.select(l.lt(x, l.splat(EXP_UNDERFLOW)), l.splat(0.0), y);
    nan_where_nan(l, x, y)
}

/// The exp every operator of mode `M` uses inside itself: the spec's [`exp`] in exact mode,
/// [`fast_exp`] in fast mode (DESIGN.md: "the degree-3 exp for every exp inside every
/// operator"). The fast exp clamps its argument to `[-87.3, 88.3]`: `+0` below, `exp(88.3)`
/// (finite) above, where the callers' formulas reach the same limits as with `0` and `+inf`.
#[inline(always)]
pub fn exp_in<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    if M::FAST {
        fast_exp(l, x)
    } else {
        exp::<L, M>(l, x)
    }
}

/// [`exp_in`] of an `x` whose lanes all have `|x| < EXP_ONE_SCALE`, without the range test and
/// the selects that change nothing there: the exact exp's one-scale form ([`exp_one_scale`]),
/// or the fast exp's select-free form (`|x| < 86` lies inside its clamp). Outside that range,
/// anything. For an operator that tests its own argument once and so knows the exp's.
#[inline(always)]
pub fn exp_in_range<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    if M::FAST {
        fast_exp_in_range(l, x)
    } else {
        exp_one_scale::<L, M>(l, x)
    }
}

/// `exp(x)` for `x <= 0`, as softmax and attention use it: one `2^n` scale, `+0` below
/// [`EXP_NONPOSITIVE_FLUSH`] (no subnormal results), canonical NaN for NaN. On
/// `[EXP_NONPOSITIVE_FLUSH, 0]` it equals [`exp`] bit for bit.
///
/// For `x > 0` (outside the spec) the crate's choice: the same single-scale formula, which is
/// [`exp`] to within its bound while `2^n` is finite, and `+inf` from the first `x` whose `n`
/// reaches 128 (about 88.38) on.
///
/// A register whose lanes all have `|x| < 86` (inside `[EXP_NONPOSITIVE_FLUSH, 86]`) skips the
/// selects, which change nothing there (no NaN, no flush, `n <= 124`).
#[inline(always)]
pub fn exp_nonpositive<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    let (p, n, n_int) = reduce::<L, M>(l, x);
    // `y` is `exp_one_scale(x)`, and `p * 2^n` wherever `n <= 127` and
    // `x >= EXP_NONPOSITIVE_FLUSH` (a normal result, `p` in `[0.70, 1.42]`); the selects below
    // replace every other lane. `n_int` is needed below.
    let y = scale_exact(l, p, n, n_int);
    // `|x| < 86` lies inside `[EXP_NONPOSITIVE_FLUSH, 86]`, where the selects change nothing.
    if all_abs_below(l, x, EXP_ONE_SCALE) {
        return y;
    }
    let y = l.select(l.gt_i(n_int, l.splat_i(127)), l.splat(f32::INFINITY), y);
    let y = l.select(l.lt(x, l.splat(EXP_NONPOSITIVE_FLUSH)), l.splat(0.0), y);
    nan_where_nan(l, x, y)
}

/// The spec's `FastMath::exp`: `x` clamped to `[-87.3, 88.3]`, fused reduction, the degree-3
/// `q`, one `2^n` scale; `+0` below `-87.3`, `exp(88.3)` (finite) above `88.3`, canonical NaN
/// for NaN. About 2.3 ulp. Always fused, whatever the mode.
#[inline(always)]
pub fn fast_exp<L: Lanes>(l: L, x: L::F) -> L::F {
    // One test per register (one mask, one branch): when every `|x| <= 87.3` (inside
    // [lo, hi]; a NaN is not), the clamp and the selects below change nothing, so they are
    // skipped; the bits are the same.
    if all_abs_below(l, x, (-FAST_EXP_LOW).next_up()) {
        return fast_exp_in_range(l, x);
    }
    let (lo, hi) = (l.splat(FAST_EXP_LOW), l.splat(FAST_EXP_HIGH));
    let below = l.lt(x, lo);
    let xc = l.select(below, lo, l.select(l.gt(x, hi), hi, x));
    let y = fast_exp_in_range(l, xc);
    let y = l.select(below, l.splat(0.0), y);
    nan_where_nan(l, x, y)
}

/// [`fast_exp`] of `x` inside `[FAST_EXP_LOW, FAST_EXP_HIGH]` (the clamp already applied):
/// the fused reduction, the degree-3 `q` and one `2^n` scale, no selects. Outside that range,
/// anything.
#[inline(always)]
pub fn fast_exp_in_range<L: Lanes>(l: L, x: L::F) -> L::F {
    let magic = l.splat(ROUND_MAGIC);
    let t = l.fma(x, l.splat(LOG2E), magic);
    let n = l.sub(t, magic);
    let n_int = l.sub_i(l.to_bits(t), l.to_bits(magic));
    let r = l.fma(n, l.splat(-LN2_HI), x);
    let r = l.fma(n, l.splat(-LN2_LO), r);
    let q = horner::<L, crate::lanes::Fast, 4>(l, r, &FAST_EXP_Q);
    let p = l.add(l.splat(1.0), l.fma(l.mul(r, r), q, r));
    // Normal in the whole clamp range: `exp(-87.3) > 2^-126`, `exp(88.3) < 2^128`.
    scale_exact(l, p, n, n_int)
}

kernel_type!(
    /// Kernel of [`exp`].
    Exp => exp, wide
);
kernel_type!(
    /// Kernel of [`exp_nonpositive`].
    ExpNonPositive => exp_nonpositive, wide
);
fused_kernel_type!(
    /// Kernel of [`fast_exp`] (always fused).
    FastExp => fast_exp, wide
);

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;

    pub fn constants_have_their_bit_patterns() {
        assert_eq!(LOG2E.to_bits(), 0x3FB8_AA3B);
        assert_eq!(LN2_HI.to_bits(), 0x3F31_7200);
        assert_eq!(LN2_LO.to_bits(), 0x35BF_BE8E);
        assert_eq!(ROUND_MAGIC.to_bits(), 0x4B40_0000);
        assert_eq!(EXP_OVERFLOW.to_bits(), 0x42B1_7217);
        assert_eq!(EXP_UNDERFLOW.to_bits(), 0xC2CF_F1B4);
        assert_eq!(EXP_NONPOSITIVE_FLUSH.to_bits(), 0xC2AE_AC4F);
        assert_eq!(FAST_EXP_LOW.to_bits(), 0xC2AE_999A);
        assert_eq!(FAST_EXP_HIGH.to_bits(), 0x42B0_999A);
        assert_eq!(EXP_ONE_SCALE.to_bits(), 0x42AC_0000);
        let q: Vec<u32> = EXP_Q.iter().map(|c| c.to_bits()).collect();
        assert_eq!(
            q,
            [
                0x3AB5_1226,
                0x3C09_1CEA,
                0x3D2A_AC79,
                0x3E2A_AA49,
                0x3EFF_FFFE
            ]
        );
        let f: Vec<u32> = FAST_EXP_Q.iter().map(|c| c.to_bits()).collect();
        assert_eq!(f, [0x3C08_3142, 0x3D2B_94F8, 0x3E2A_ABD7, 0x3EFF_FEFE]);
    }

    /// The one-scale path of `exp` (and the select-free path of `exp_nonpositive`) give the
    /// bits of the spec's two-factor form with its selects, on every 31st float of
    /// `[-87, 87]` (about 72 million values) and at the edges of the path.
    pub fn the_exponent_field_scale_is_the_product_wherever_the_callers_use_it() {
        use crate::lanes::Exact;
        use crate::lanes::Scalar;
        let l = Scalar::new();
        // Every power of two the exps use, every `p` of [0.5, 2) (a superset of the
        // [0.70, 1.42] they produce) at a stride: where `p * 2^n` is normal the integer add is
        // the IEEE product.
        let mut checked = 0;
        for n in -126..=127 {
            for bits in (0.5f32.to_bits()..2.0f32.to_bits()).step_by(997) {
                let p = f32::from_bits(bits);
                let want = p * pow2i(l, n);
                if want.is_normal() {
                    assert_eq!(
                        scale_normal(l, p, n).to_bits(),
                        want.to_bits(),
                        "{p} * 2^{n}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 250 * 16_000, "{checked}");
        // Where the exps reach the bottom of that domain: `exp_nonpositive` from its flush
        // point to -87 (every float), against the spec's two-factor form...
        for bits in (-87.0f32).to_bits()..=EXP_NONPOSITIVE_FLUSH.to_bits() {
            let x = f32::from_bits(bits);
            assert_eq!(
                exp_nonpositive::<Scalar, Exact>(l, x).to_bits(),
                exp_two_factor::<Scalar, Exact>(l, x).to_bits(),
                "exp_nonpositive({x:e})"
            );
        }
        // ... and the fast exp at the ends of its clamp, where `p * 2^n` must stay normal.
        for x in [
            FAST_EXP_LOW,
            FAST_EXP_LOW.next_up(),
            FAST_EXP_HIGH,
            FAST_EXP_HIGH.next_down(),
        ] {
            let y = fast_exp_in_range(l, x);
            assert!(y.is_normal(), "fast_exp_in_range({x}) = {y:e}");
        }
    }

    pub fn one_scale_path_equals_the_two_factor_form() {
        use crate::lanes::Exact;
        use crate::lanes::Scalar;
        let l = Scalar::new();
        let edge = [
            86.0f32,
            86.0f32.next_down(),
            -86.0,
            (-86.0f32).next_up(),
            0.0,
            -0.0,
        ];
        let lo = (-87.0f32).to_bits();
        let hi = 87.0f32.to_bits();
        // Negative floats: bits from 0x8000_0000 up to lo; positive: 0 up to hi.
        let neg = (0x8000_0000..=lo).step_by(31).map(f32::from_bits);
        let pos = (0..=hi).step_by(31).map(f32::from_bits);
        for x in edge.into_iter().chain(neg).chain(pos) {
            let want = exp_two_factor::<Scalar, Exact>(l, x);
            assert_eq!(
                exp::<Scalar, Exact>(l, x).to_bits(),
                want.to_bits(),
                "exp({x:e})"
            );
            if (EXP_NONPOSITIVE_FLUSH..=0.0).contains(&x) {
                assert_eq!(
                    exp_nonpositive::<Scalar, Exact>(l, x).to_bits(),
                    want.to_bits(),
                    "exp_nonpositive({x:e})"
                );
            }
        }
    }
}
