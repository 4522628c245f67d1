//! GELU, `x * Phi(x)`, in its erf form and its tanh form (spec, "GELU"), plus the rational
//! erf form fast mode uses (spec, "Fast-mode erf GELU").

use super::erf::{OnePlusErf, erfc_large_over, one_plus_erf_of_number};
use super::regions::TwoRegions;
use super::sigmoid::{fast_over_one_plus_exp_neg, sigmoid_of_number};
use super::{abs, fused_kernel_type, horner, kernel_type, nan_where_nan};
use crate::lanes::Lanes;
use crate::lanes::{Fast, Mode};

/// `1/sqrt(2)` in fp32.
pub const FRAC_1_SQRT_2: f32 = 0.707_106_77;
/// `sqrt(2/pi)` in fp32.
pub const SQRT_2_OVER_PI: f32 = 0.797_884_56;
/// The cubic coefficient of the tanh form.
pub const GELU_TANH_CUBIC: f32 = 0.044_715;

/// The special values both forms share: `-0` at `-inf`, `+inf` at `+inf`, canonical NaN.
#[inline(always)]
fn gelu_specials<L: Lanes>(l: L, x: L::F, y: L::F) -> L::F {
    // A register of finite values (the usual case) has none to place: the selects would change
    // nothing, so one test skips them.
    if super::all_abs_below(l, x, f32::INFINITY) {
        return y;
    }
    let y = l.select(l.eq(x, l.splat(f32::NEG_INFINITY)), l.splat(-0.0), y);
    let y = l.select(l.eq(x, l.splat(f32::INFINITY)), l.splat(f32::INFINITY), y);
    nan_where_nan(l, x, y)
}

/// The accurate erf form: `(0.5*x) * (1 + erf(x/sqrt 2))`, with `1 + erf` from
/// [`one_plus_erf`](super::erf::one_plus_erf) (no cancellation for negative `x`). Exact in
/// exact mode; in fast mode the same algorithm with fused multiply-adds (the fast *operator* is
/// [`gelu_erf_rational`]).
#[inline(always)]
pub fn gelu_erf<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    let y = l.mul(x, l.splat(FRAC_1_SQRT_2));
    // A NaN `x` makes `g` a NaN whatever `1 + erf` gives, and `gelu_specials` places the
    // canonical one: `1 + erf` needs no NaN select of its own.
    let g = l.mul(l.mul(l.splat(0.5), x), one_plus_erf_of_number::<L, M>(l, y));
    gelu_specials(l, x, g)
}

/// The tanh form: `u = sqrt(2/pi) * (x + 0.044715*x^3)`, `x * sigmoid(2u)`, which is
/// `0.5x(1 + tanh u)` through `1 + tanh u = 2 sigmoid(2u)`.
#[inline(always)]
pub fn gelu_tanh<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    let cube = l.mul(l.mul(x, x), x);
    let inner = M::madd(l, l.splat(GELU_TANH_CUBIC), cube, x);
    let u = l.mul(l.splat(SQRT_2_OVER_PI), inner);
    if M::FAST {
        // `x / (1 + e^-2u)`; a clean register has only finite `x` (an infinite or NaN `x`
        // makes `2u` infinite or NaN), so no special value to place.
        let (g, clean) = fast_over_one_plus_exp_neg(l, x, l.add(u, u));
        return if clean { g } else { gelu_specials(l, x, g) };
    }
    // A register of `|x| < GELU_TANH_IN_RANGE` has no special value, and `|2u| < 67` there,
    // so the exp takes its one-scale form: one test skips the exp's own and the selects.
    if super::all_abs_below(l, x, GELU_TANH_IN_RANGE) {
        return l.mul(x, sigmoid_of_number::<L, M, true>(l, l.add(u, u)));
    }
    // `2u` is NaN only where `x` is, and `gelu_specials` places the NaN there.
    let g = l.mul(x, sigmoid_of_number::<L, M, false>(l, l.add(u, u)));
    gelu_specials(l, x, g)
}

/// Below this `|x|` (every lane of a register) the exact tanh-form GELU has no special value
/// to place, and its sigmoid's argument `2u` stays below 67 in magnitude, inside the exp's
/// one-scale range (`EXP_ONE_SCALE`, 86).
pub const GELU_TANH_IN_RANGE: f32 = 9.0;

/// The rational GELU clamps `|x|` here; below `-GELU_CLAMP` the result is `-0`.
pub const GELU_CLAMP: f32 = 5.6;
/// `P(z)` of the rational erf, highest first. From `tools/gelu_rational/fit.py` (rational
/// Remez, minimax absolute error of `c P(c^2)/Q(c^2)` against `erf(c/sqrt 2)` on `[0, 5.6]`):
/// 1.85e-8 as fitted, 5.1e-8 with the coefficients rounded to f32, 3.2e-7 evaluated in f32 with
/// fused Horner steps. Bits: `333E3A0E 37554A48 39B64BDC 3C1A3F62 3D8CCE04 3F4C4228`.
pub const GELU_P: [f32; 6] = [
    4.429_062_3e-8,
    1.271_308_4e-5,
    0.000_347_702_65,
    0.009_414_526,
    0.068_752_32,
    0.797_884_46,
];
/// `Q(z)` of the rational erf, highest first, `Q(0) = 1`, positive on `[0, 31.36]`. Same fit.
/// Bits: `359E67CD 389D8029 3AFABD02 3CED13D4 3E817374 3F800000`.
pub const GELU_Q: [f32; 6] = [
    1.180_212_7e-6,
    7.510_215e-5,
    0.001_912_981_5,
    0.028_940_119,
    0.252_833_96,
    1.0,
];

/// The fast erf GELU (spec, "Fast-mode erf GELU"): `c = min(|x|, 5.6)`, `z = c*c`,
/// `erf = copysign(c * P(z) / Q(z), x)` with fused Horner steps, `(0.5*x) * (1 + erf)`;
/// `-0` below `-5.6` and at `-inf`, `+inf` at `+inf`, canonical NaN for NaN. Against the
/// accurate kernel: absolute error <= 9.5e-7, and <= 2.4e-7 relative to `max(1, |x|)`.
#[inline(always)]
pub fn gelu_erf_rational<L: Lanes>(l: L, x: L::F) -> L::F {
    let ax = super::abs(l, x);
    let clamp = l.splat(GELU_CLAMP);
    // A register with every `|x| <= 5.6` (no NaN, no infinity) needs neither the clamp nor a
    // select: one test, the same bits.
    if super::all_abs_below(l, x, GELU_CLAMP.next_up()) {
        return gelu_rational_core(l, x, ax);
    }
    let c = l.select(l.gt(ax, clamp), clamp, ax);
    let g = gelu_rational_core(l, x, c);
    let g = l.select(l.lt(x, l.splat(-GELU_CLAMP)), l.splat(-0.0), g);
    gelu_specials(l, x, g)
}

/// `(0.5*x) * (1 + copysign(c P(c^2) / Q(c^2), x))`, `c` the clamped `|x|`.
#[inline(always)]
fn gelu_rational_core<L: Lanes>(l: L, x: L::F, c: L::F) -> L::F {
    let z = l.mul(c, c);
    let p = horner::<L, Fast, 6>(l, z, &GELU_P);
    let q = horner::<L, Fast, 6>(l, z, &GELU_Q);
    let erf = l.or(l.div(l.mul(c, p), q), super::sign_bit(l, x));
    l.mul(l.mul(l.splat(0.5), x), l.add(l.splat(1.0), erf))
}

fused_kernel_type!(
    /// Kernel of [`gelu_erf_rational`] (always fused).
    GeluRational => gelu_erf_rational
);

kernel_type!(
    /// Kernel of [`gelu_erf`]: a register at a time (eight on AVX-512), or over a slice sorted
    /// by the regions of its `1 + erf` where lanes compress cheaply
    /// ([`super::regions::map_by_regions`]); the same bits.
    GeluErf => gelu_erf, regions
);

/// The erf GELU as the regions of its `1 + erf(y)`, `y = x / sqrt 2` ([`OnePlusErf`]'s);
/// [`gelu_specials`] places the special values.
///
/// The GELU's inputs in a model are mostly small: in the example block's MLP (pre-activations
/// of spread about 0.5) five in six lanes take the small branch, yet nearly every register of
/// sixteen holds one that needs the large one, so the register form runs both on all of them.
impl<M: Mode> TwoRegions for GeluErf<M> {
    const WIDE: bool = true;
    #[inline(always)]
    fn arg<L: Lanes>(l: L, x: L::F) -> L::F {
        abs(l, l.mul(x, l.splat(FRAC_1_SQRT_2)))
    }
    #[inline(always)]
    fn regions<L: Lanes>(l: L, x: L::F, ay: L::F) -> (L::M, L::M) {
        // `y` has the sign of `x`; `y < 0` and `x < 0` differ only where `y` rounds to `-0`,
        // a small-branch lane.
        OnePlusErf::<M>::regions(l, x, ay)
    }
    #[inline(always)]
    fn formula_a<L: Lanes>(l: L, ay: L::F) -> L::F {
        OnePlusErf::<M>::formula_a(l, ay)
    }
    #[inline(always)]
    fn formula_b<L: Lanes>(l: L, ay: L::F) -> L::F {
        OnePlusErf::<M>::formula_b(l, ay)
    }
    #[inline(always)]
    fn formula_b_over<L: Lanes>(l: L, buf: &mut [f32]) {
        erfc_large_over::<L, M, Self>(l, buf)
    }
    #[inline(always)]
    fn finish<L: Lanes>(l: L, x: L::F, small: L::M, large: L::M, e: L::F, erfc: L::F) -> L::F {
        // No NaN select in `1 + erf`, as in [`gelu_erf`]: `gelu_specials` places it.
        let one_plus = OnePlusErf::<M>::finish_of_number(l, x, small, large, e, erfc);
        let g = l.mul(l.mul(l.splat(0.5), x), one_plus);
        gelu_specials(l, x, g)
    }
}

kernel_type!(
    /// Kernel of [`gelu_tanh`].
    GeluTanh => gelu_tanh, wide
);

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use crate::lanes::{Exact, Isa, LaneOp};
    use crate::ops::clean_form_test::lane_bits;

    /// The exact tanh-form GELU of a register of `|x| < GELU_TANH_IN_RANGE` (one test, no
    /// select, the exp untested) gives the general form's bits: every float of `[8.5, 9.5]` and
    /// more (see the helper); and `|2u|` at the limit is inside the exp's one-scale range.
    pub fn the_exact_tanh_form_in_range_is_the_general_form() {
        use crate::ops::clean_form_test::assert_clean_form_is_general_form_near;
        assert_clean_form_is_general_form_near::<GeluTanh<Exact>>(8.5, 9.5);
        let x = GELU_TANH_IN_RANGE;
        let u = SQRT_2_OVER_PI * (x + GELU_TANH_CUBIC * ((x * x) * x));
        assert!(
            u + u < 0.8 * crate::ops::exp::EXP_ONE_SCALE,
            "2u = {}",
            u + u
        );
    }

    /// [`GeluErf`]'s `by_regions` gives a positive `x` whose `|x| / sqrt 2` is at least
    /// 4 (`ERF_ONE`) the value `(0.5 x) * 2` without computing `erfc`. [`gelu_erf`], the spec's
    /// form, rounds to exactly that at every float of `[5.6, 16]` (beyond, `exp(-x^2 / 2)` is 0)
    /// and at a sample of larger ones, in both modes; elsewhere the two agree bit for bit on
    /// every 9973rd float.
    pub fn the_regions_form_is_the_spec_form() {
        let scalar = Isa::Scalar.supported().unwrap();
        scalar.dispatch::<Exact, _>(RegionsAndSpec);
        scalar.dispatch::<Fast, _>(RegionsAndSpec);
    }

    /// The checks of [`the_regions_form_is_the_spec_form`] in the mode of the dispatch, on the
    /// scalar lane type. Dispatched, not called, so that fast mode's fused multiply-add is the
    /// instruction where the CPU has FMA (as in the crate's own scalar path), not a call to a
    /// software fma per step.
    struct RegionsAndSpec;

    impl LaneOp for RegionsAndSpec {
        type Output = ();
        #[inline(always)]
        fn run<L: Lanes, M: Mode>(self, l: L) {
            assert_eq!(L::WIDTH, 1, "the spec's form on the scalar lane type");
            let name = if M::FAST { "fused gelu" } else { "gelu" };
            let (lo, hi) = (5.6f32.to_bits(), 16f32.to_bits());
            for b in (lo..=hi).chain((hi..0x7F80_0000).step_by(4099)) {
                let x = f32::from_bits(b);
                let want = (0.5 * x) * 2.0;
                assert_eq!(gelu_erf_at::<L, M>(l, x), want, "{name}({x:e})");
                assert_eq!(
                    by_regions_at::<L, M>(l, x),
                    want,
                    "{name}({x:e}) by regions"
                );
            }
            for b in (0..=u32::MAX).step_by(9973) {
                let x = f32::from_bits(b);
                let (got, want) = (by_regions_at::<L, M>(l, x), gelu_erf_at::<L, M>(l, x));
                assert_eq!(got.to_bits(), want.to_bits(), "{name}({x:e})");
            }
        }
    }

    // The functions of one `x` on the scalar lane type, as functions (inlined into the
    // trampoline) rather than closures, which the compiler leaves out of line when they are
    // called more than once, compiled without FMA.

    #[inline(always)]
    fn gelu_erf_at<L: Lanes, M: Mode>(l: L, x: f32) -> f32 {
        f32::from_bits(lane_bits(l, gelu_erf::<L, M>(l, l.splat(x)), 0))
    }

    #[inline(always)]
    fn by_regions_at<L: Lanes, M: Mode>(l: L, x: f32) -> f32 {
        f32::from_bits(lane_bits(l, GeluErf::<M>::by_regions(l, l.splat(x)), 0))
    }

    pub fn constants_have_their_bit_patterns() {
        assert_eq!(FRAC_1_SQRT_2.to_bits(), 0x3F35_04F3);
        assert_eq!(SQRT_2_OVER_PI.to_bits(), 0x3F4C_422A);
        assert_eq!(GELU_TANH_CUBIC.to_bits(), 0x3D37_2713);
        assert_eq!(GELU_CLAMP.to_bits(), 0x40B3_3333);
        let p: Vec<u32> = GELU_P.iter().map(|c| c.to_bits()).collect();
        assert_eq!(
            p,
            [
                0x333E_3A0E,
                0x3755_4A48,
                0x39B6_4BDC,
                0x3C1A_3F62,
                0x3D8C_CE04,
                0x3F4C_4228
            ]
        );
        let q: Vec<u32> = GELU_Q.iter().map(|c| c.to_bits()).collect();
        assert_eq!(
            q,
            [
                0x359E_67CD,
                0x389D_8029,
                0x3AFA_BD02,
                0x3CED_13D4,
                0x3E81_7374,
                0x3F80_0000
            ]
        );
    }
}
