//! `erf` and `1 + erf` (spec, "erf(x), and 1 + erf(x) for the erf form of GELU").
//!
//! Below `|x| = 0.5` an odd minimax polynomial. Above, `erfc(|x|) = exp(-x^2) * t * G(t - 1)`
//! with `t = 1/|x|` and `G` of degree 16, where `x^2` is carried exactly as `z + zLo` (a
//! Dekker split) so `exp(-x^2)` loses nothing to the rounding of the square. `1 + erf(x)` for
//! negative `x` is `erfc(|x|)` itself, with no cancellation. Bound: 3.0 ulp.
//!
//! Fast mode: `erf` is a rational fitted to erf ([`erf_rational`]); `1 + erf` keeps the
//! algorithm above (it exists to avoid the cancellation a rational would bring back) with fused
//! steps and the fast exp.

use super::exp::exp_in;
use super::regions::{TwoRegions, formula_b_by_registers};
use super::{abs, all_abs_below, fused_kernel_type, horner, kernel_type, nan_where_nan, sign_bit};
use crate::lanes::Lanes;
use crate::lanes::Mode;

/// Below this `|x|` the polynomial branch runs.
pub const ERF_SMALL: f32 = 0.5;
/// The small-branch polynomial `P(z)`, highest first.
pub const ERF_P: [f32; 6] = [
    -0.000_769_285_3,
    0.005_200_308_3,
    -0.026_863_12,
    0.112_837_74,
    -0.376_126_38,
    1.128_379_2,
];
/// The large-branch polynomial `G(s)`, degree 16, highest first.
pub const ERF_G: [f32; 17] = [
    -0.000_577_634_67,
    0.001_789_338_3,
    -0.000_100_740_16,
    -0.004_373_198,
    0.003_463_954_7,
    0.001_502_372_4,
    -0.000_941_308_8,
    -0.001_889_181_3,
    -0.000_258_673_8,
    0.005_214_438_3,
    -0.010_342_848_5,
    0.015_788_378,
    -0.018_338_649,
    0.008_167_262,
    0.035_529_688,
    -0.154_371_6,
    0.427_583_58,
];
/// Dekker's split factor `2^12 + 1`.
pub const SPLIT: f32 = 4097.0;
/// From this `|x|` on, the low part of `x^2` is dropped (`exp(-x^2)` is 0 there anyway).
pub const ZLO_CUTOFF: f32 = 64.0;

/// The small branch: `|x| * P(x^2)`, the magnitude of `erf(x)` for `|x| < 0.5`.
#[inline(always)]
fn erf_small<L: Lanes, M: Mode>(l: L, ax: L::F) -> L::F {
    let z = l.mul(ax, ax);
    l.mul(ax, horner::<L, M, 6>(l, z, &ERF_P))
}

/// The large branch: `erfc(|x|)` for `|x| >= 0.5`.
#[inline(always)]
fn erfc_large<L: Lanes, M: Mode>(l: L, ax: L::F) -> L::F {
    let (t, s) = erfc_large_head(l, ax);
    erfc_large_tail::<L, M>(l, ax, t, horner::<L, M, 17>(l, s, &ERF_G))
}

/// The large branch up to its polynomial: `t = 1/|x|` and `s = t - 1`.
#[inline(always)]
fn erfc_large_head<L: Lanes>(l: L, ax: L::F) -> (L::F, L::F) {
    let one = l.splat(1.0);
    let t = l.div(one, ax);
    (t, l.sub(t, one))
}

/// The large branch after its polynomial: `exp(-x^2) * (t * G(s))` from `|x|`, `t` and `g =
/// G(s)`, the square carried exactly.
#[inline(always)]
fn erfc_large_tail<L: Lanes, M: Mode>(l: L, ax: L::F, t: L::F, g: L::F) -> L::F {
    let one = l.splat(1.0);
    let z = l.mul(ax, ax);
    let z_lo = if M::FAST {
        // With a fused multiply-add the rounding error of the square is one instruction.
        l.fma(ax, ax, l.sub(l.splat(0.0), z))
    } else {
        let split = l.mul(ax, l.splat(SPLIT));
        let hi = l.sub(split, l.sub(split, ax));
        let lo = l.sub(ax, hi);
        let hh = l.sub(l.mul(hi, hi), z);
        let cross = l.mul(l.splat(2.0), l.mul(hi, lo));
        l.add(l.add(hh, cross), l.mul(lo, lo))
    };
    let z_lo = l.select(l.ge(ax, l.splat(ZLO_CUTOFF)), l.splat(0.0), z_lo);
    let exp_neg_z = l.mul(exp_in::<L, M>(l, l.sub(l.splat(0.0), z)), l.sub(one, z_lo));
    l.mul(exp_neg_z, l.mul(t, g))
}

/// Elements of [`erfc_large_over`]'s scratch buffers: one block of AVX2's
/// [`Lanes::exact_horner_in_place`], a multiple of every group width. Small, because the
/// buffers are zeroed at each call, a cost in proportion to their size rather than to the
/// lanes the call has.
const STAGE: usize = 96;

/// [`erfc_large`] of every element of `buf` (whole registers of `l`), in place: the
/// [`TwoRegions::formula_b_over`] of the erf kernels (`R`, whose `formula_b` is
/// [`erfc_large`]). Exact mode on a lane type with [`Lanes::exact_horner_in_place`] runs it in
/// stages over pieces of [`STAGE`] elements: `t` and `s` into buffers, `G(s)` over the buffer
/// of `s` by that loop (padded to whole blocks; the padding's values are left over from an
/// earlier piece, or zeros, computed and never read), then [`erfc_large_tail`] from `|x|`, `t`
/// and `G`. Every lane takes the operations of [`erfc_large`], so the bits are the same.
/// Elsewhere (fast mode's fused steps, and lane types without the loop) a
/// [`Lanes::WideGroup`] of registers runs the whole formula per step.
///
/// Why stages: the polynomial's 16 dependent product-and-sum steps are most of each lane's
/// chain, and in one pass the registers that hold `s` and an accumulator per chain leave room
/// for four chains in flight on AVX2; the loop keeps twelve.
#[inline(always)]
pub(super) fn erfc_large_over<L: Lanes, M: Mode, R: TwoRegions>(l: L, buf: &mut [f32]) {
    let block = L::EXACT_HORNER_BLOCK;
    if M::FAST || block == 0 {
        return formula_b_by_registers::<L, R>(l, buf);
    }
    let (g, gw) = (l.wide_group(), <L::WideGroup as Lanes>::WIDTH);
    let w = L::WIDTH;
    let mut t_buf = [0f32; STAGE];
    let mut s_buf = [0f32; STAGE];
    for ax_buf in buf.chunks_mut(STAGE) {
        let n = ax_buf.len();
        debug_assert_eq!(n % w, 0);
        let wide_end = n - n % gw;
        // Stage 1: `t` and `s`.
        for i in (0..wide_end).step_by(gw) {
            let (t, s) = erfc_large_head(g, g.load(&ax_buf[i..]));
            g.store(t, &mut t_buf[i..]);
            g.store(s, &mut s_buf[i..]);
        }
        for i in (wide_end..n).step_by(w) {
            let (t, s) = erfc_large_head(l, l.load(&ax_buf[i..]));
            l.store(t, &mut t_buf[i..]);
            l.store(s, &mut s_buf[i..]);
        }
        // Stage 2: `G(s)` over `s` in place, the compiled rule for what the loop leaves.
        let padded = (n.div_ceil(block) * block).min(STAGE);
        let done = l.exact_horner_in_place(&ERF_G, &mut s_buf[..padded]);
        debug_assert_eq!(done % w, 0);
        for i in (done.min(n)..n).step_by(w) {
            let p = horner::<L, M, 17>(l, l.load(&s_buf[i..]), &ERF_G);
            l.store(p, &mut s_buf[i..]);
        }
        // Stage 3: the rest from `|x|`, `t` and `G`, over `|x|`.
        for i in (0..wide_end).step_by(gw) {
            let (t, p) = (g.load(&t_buf[i..]), g.load(&s_buf[i..]));
            let y = erfc_large_tail::<_, M>(g, g.load(&ax_buf[i..]), t, p);
            g.store(y, &mut ax_buf[i..]);
        }
        for i in (wide_end..n).step_by(w) {
            let (t, p) = (l.load(&t_buf[i..]), l.load(&s_buf[i..]));
            let y = erfc_large_tail::<_, M>(l, l.load(&ax_buf[i..]), t, p);
            l.store(y, &mut ax_buf[i..]);
        }
    }
}

/// From this `|x|` on, `erf(x)` is `+-1`: the computed `erfc(|x|)` is below `2^-25` there
/// (`erfc(4) = 1.5e-8`), so `1 - erfc` rounds to 1, and from `|x| = 10.2` on `exp(-x^2)` is 0.
/// Those lanes need neither branch. The test `the_regions_form_is_the_spec_form` checks every
/// float from 4 to 11.
pub const ERF_ONE: f32 = 4.0;

/// `erf` as two regions ([`Erf`]'s sorted form over a slice): the small branch `|x| P(x^2)`,
/// the large `erfc(|x|)`, and `+-1` without either from [`ERF_ONE`] on.
impl<M: Mode> TwoRegions for Erf<M> {
    #[inline(always)]
    fn arg<L: Lanes>(l: L, x: L::F) -> L::F {
        abs(l, x)
    }
    #[inline(always)]
    fn regions<L: Lanes>(l: L, _x: L::F, ax: L::F) -> (L::M, L::M) {
        // NaN lanes are in neither.
        let small = l.lt(ax, l.splat(ERF_SMALL));
        let large = l.mask_and(l.ge(ax, l.splat(ERF_SMALL)), l.lt(ax, l.splat(ERF_ONE)));
        (small, large)
    }
    #[inline(always)]
    fn formula_a<L: Lanes>(l: L, ax: L::F) -> L::F {
        erf_small::<L, M>(l, ax)
    }
    #[inline(always)]
    fn formula_b<L: Lanes>(l: L, ax: L::F) -> L::F {
        erfc_large::<L, M>(l, ax)
    }
    #[inline(always)]
    fn formula_b_over<L: Lanes>(l: L, buf: &mut [f32]) {
        erfc_large_over::<L, M, Self>(l, buf)
    }
    #[inline(always)]
    fn finish<L: Lanes>(l: L, x: L::F, small: L::M, large: L::M, e: L::F, erfc: L::F) -> L::F {
        let one = l.splat(1.0);
        let y = l.select(small, e, l.select(large, l.sub(one, erfc), one));
        let y = l.or(y, sign_bit(l, x));
        nan_where_nan(l, x, y)
    }
}

/// `erf(x)`; `erf(+-0) = +-0`, `erf(+-inf) = +-1`, canonical NaN for NaN. A register at a
/// time, as the spec writes it: both branches where some lane needs each (the large branch
/// also for the saturated lanes, where its `1 - erfc` rounds to the `+-1` that
/// [`Erf`]'s `by_regions` gives them without it; one test of a register is cheaper than
/// two). Over a slice on AVX-512 and AVX2, [`Erf`] sorts by regions instead.
#[inline(always)]
pub fn erf<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    let ax = abs(l, x);
    let (small, e_small, erfc) = branches::<L, M>(l, ax);
    let one = l.splat(1.0);
    let y = l.select(small, e_small, l.sub(one, erfc));
    let y = l.select(l.eq(ax, l.splat(f32::INFINITY)), one, y);
    let y = l.or(y, sign_bit(l, x));
    nan_where_nan(l, x, y)
}

/// Both branches where some lane needs each, `(small mask, |erf| small, erfc large)`; a branch
/// no lane takes is skipped and its value is a placeholder the final select never picks.
#[inline(always)]
fn branches<L: Lanes, M: Mode>(l: L, ax: L::F) -> (L::M, L::F, L::F) {
    let small = l.lt(ax, l.splat(ERF_SMALL));
    if l.all(small) {
        (small, erf_small::<L, M>(l, ax), ax)
    } else if !l.any(small) {
        (small, ax, erfc_large::<L, M>(l, ax))
    } else {
        (small, erf_small::<L, M>(l, ax), erfc_large::<L, M>(l, ax))
    }
}

/// `1 + erf(x)`, without cancellation for negative `x`: `erfc(|x|)` there, `2 - erfc(|x|)` for
/// positive `x`, `1 + erf(x)` in the small branch. `0` at `-inf`, `2` at `+inf`, canonical NaN
/// for NaN.
///
/// Over a slice on AVX-512 and AVX2, [`OnePlusErf`] sorts by regions as [`Erf`] does. Its
/// large branch covers every `x <= -0.5` as well (the result is `erfc` there), so on a spread
/// of inputs such as `[-8, 8]` it runs on most lanes and the slice goes through the register
/// form; inputs concentrated near 0, as a model's GELU sees them, are where sorting pays.
#[inline(always)]
pub fn one_plus_erf<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    nan_where_nan(l, x, one_plus_erf_of_number::<L, M>(l, x))
}

/// [`one_plus_erf`] without its NaN select, for a caller that places the canonical NaN itself
/// (the erf GELU, whose product with `0.5 * x` is a NaN in a NaN lane anyway): a NaN lane gets
/// an unspecified value.
#[inline(always)]
pub(super) fn one_plus_erf_of_number<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    let (small, e_small, erfc) = branches::<L, M>(l, abs(l, x));
    one_plus_erf_of(l, x, small, e_small, erfc)
}

/// `1 + erf(x)` from its branches' values: `1 + erf` by the small branch where `small`
/// (`e_small`, the magnitude of erf there), `erfc(|x|)` for negative `x` elsewhere and
/// `2 - erfc(|x|)` for positive. No NaN select: a NaN lane gets an unspecified value.
#[inline(always)]
fn one_plus_erf_of<L: Lanes>(l: L, x: L::F, small: L::M, e_small: L::F, erfc: L::F) -> L::F {
    let y_small = l.add(l.splat(1.0), l.or(e_small, sign_bit(l, x)));
    let y_large = l.select(l.lt(x, l.splat(0.0)), erfc, l.sub(l.splat(2.0), erfc));
    l.select(small, y_small, y_large)
}

/// The fast erf clamps `|x|` here, where `erf` rounds to 1 in f32 (`erf(3.9192) = 1 - 2^-25`);
/// from it on the result is `+-1`.
pub const ERF_FAST_CLAMP: f32 = 3.92;
/// `P(z)` of the fast erf, highest first: `tools/erf_rational/fit.py` (rational Remez, minimax
/// *relative* error of `c P(c^2)/Q(c^2)` against `erf(c)` on `[0, 3.92]`, degrees 5 and 5):
/// 1.86e-8 as fitted, 5.4e-8 with the coefficients rounded to f32, about 5 ulp evaluated in f32
/// with fused Horner steps (the fit's figures). Bits: `36099430 39955C77 3B76C931 3D580F2A
/// 3E42FA21 3F906EBA`.
pub const ERF_FAST_P: [f32; 6] = [
    2.050_084_7e-6,
    0.000_284_883_86,
    0.003_765_654,
    0.052_748_837,
    0.190_407_29,
    1.128_379_1,
];
/// `Q(z)` of the fast erf, highest first, `Q(0) = 1`, positive (increasing) on `[0, 3.92^2]`.
/// Same fit. Bits: `381FC4B4 3A98608A 3C7541C1 3DE9B238 3F00881B 3F800000`.
pub const ERF_FAST_Q: [f32; 6] = [
    3.809_174_8e-5,
    0.001_162_545,
    0.014_969_29,
    0.114_109_46,
    0.502_076_8,
    1.0,
];

/// Fast mode's `erf`: `c = min(|x|, 3.92)`, `z = c*c`, `erf = copysign(min(c P(z) / Q(z), 1), x)`
/// with fused Horner steps, `+-1` from `|x| = 3.92` on; `erf(+-0) = +-0`, canonical NaN for NaN.
/// A rational fitted to `erf` itself in relative error, rather than the GELU's rational with
/// its argument scaled by `sqrt 2`: that one is fitted in absolute error on `erf(c/sqrt 2)`,
/// so its relative error grows towards 0 (its `P(0)/Q(0)` is 1.3e-7 off `sqrt(2/pi)`), and the
/// scaling adds a rounding. Bound and measurement: ACCURACY.md.
#[inline(always)]
pub fn erf_rational<L: Lanes>(l: L, x: L::F) -> L::F {
    // One test per register (per group, where the map runs a group as one lane type): where
    // no lane is NaN (or infinite), the NaN select changes nothing.
    if all_abs_below(l, x, f32::INFINITY) {
        return erf_rational_of_number(l, x);
    }
    nan_where_nan(l, x, erf_rational_of_number(l, x))
}

/// [`erf_rational`] without its NaN select: a NaN lane gets 1 with the sign of the NaN.
#[inline(always)]
fn erf_rational_of_number<L: Lanes>(l: L, x: L::F) -> L::F {
    // `min(NaN, clamp)` is the clamp: a NaN lane computes 1.
    let c = l.min(abs(l, x), l.splat(ERF_FAST_CLAMP));
    let z = l.mul(c, c);
    let p = horner::<L, crate::lanes::Fast, 6>(l, z, &ERF_FAST_P);
    let q = horner::<L, crate::lanes::Fast, 6>(l, z, &ERF_FAST_Q);
    // At the clamp the rational rounds to exactly 1 (the test `clamp_by_min_is_the_select_form`
    // checks it on every lane type), so `min(y, 1)` gives the `+-1` from `|x| = 3.92` on
    // without a select of its own: the bits of selecting 1 where `|x| >= 3.92` or `y > 1`.
    let y = l.min(l.div(l.mul(c, p), q), l.splat(1.0));
    l.or(y, sign_bit(l, x))
}

kernel_type!(
    /// Kernel of [`erf`]: a register at a time in the spec's form, or over a slice sorted by
    /// regions where lanes compress cheaply ([`super::regions::map_by_regions`]); the same
    /// bits.
    Erf => erf, regions
);

kernel_type!(
    /// Kernel of [`one_plus_erf`]: a register at a time (eight on AVX-512), or over a slice
    /// sorted by its regions where lanes compress cheaply
    /// ([`super::regions::map_by_regions`]); the same bits.
    OnePlusErf => one_plus_erf, regions
);

/// `1 + erf(x)` in the regions of `|x|`: the small branch below [`ERF_SMALL`], the `erfc`
/// branch above, and neither for a positive `x` from [`ERF_ONE`] on, where `2 - erfc` rounds
/// to 2 (the computed `erfc` is below `2^-25` there, which already makes `1 - erfc` round to
/// 1: the test `the_regions_form_is_the_spec_form` checks every float of `[4, 11]`), nor for
/// an infinite or NaN `x`. A lane of neither region takes `erfc = 0`: 2 for a positive `x`, 0
/// at `-inf`, the bits the spec's form gives there.
///
/// `x` only needs the sign of the argument of erf (the erf GELU passes its own input).
impl<M: Mode> TwoRegions for OnePlusErf<M> {
    const WIDE: bool = true;
    #[inline(always)]
    fn arg<L: Lanes>(l: L, x: L::F) -> L::F {
        abs(l, x)
    }
    #[inline(always)]
    fn regions<L: Lanes>(l: L, x: L::F, ax: L::F) -> (L::M, L::M) {
        // NaN lanes are in neither.
        let small = l.lt(ax, l.splat(ERF_SMALL));
        let below_one = l.lt(ax, l.splat(ERF_ONE));
        let negative_finite = l.mask_and(l.lt(x, l.splat(0.0)), l.lt(ax, l.splat(f32::INFINITY)));
        let large = l.mask_and(
            l.ge(ax, l.splat(ERF_SMALL)),
            l.mask_or(below_one, negative_finite),
        );
        (small, large)
    }
    #[inline(always)]
    fn formula_a<L: Lanes>(l: L, ax: L::F) -> L::F {
        Erf::<M>::formula_a(l, ax)
    }
    #[inline(always)]
    fn formula_b<L: Lanes>(l: L, ax: L::F) -> L::F {
        Erf::<M>::formula_b(l, ax)
    }
    #[inline(always)]
    fn formula_b_over<L: Lanes>(l: L, buf: &mut [f32]) {
        erfc_large_over::<L, M, Self>(l, buf)
    }
    #[inline(always)]
    fn finish<L: Lanes>(l: L, x: L::F, small: L::M, large: L::M, e: L::F, erfc: L::F) -> L::F {
        nan_where_nan(l, x, Self::finish_of_number(l, x, small, large, e, erfc))
    }
}

impl<M: Mode> OnePlusErf<M> {
    /// [`TwoRegions::finish`] without its NaN select (as [`one_plus_erf_of_number`] is
    /// [`one_plus_erf`] without it): a NaN lane gets an unspecified value.
    #[inline(always)]
    pub(super) fn finish_of_number<L: Lanes>(
        l: L,
        x: L::F,
        small: L::M,
        large: L::M,
        e: L::F,
        erfc: L::F,
    ) -> L::F {
        let erfc = l.select(large, erfc, l.splat(0.0));
        one_plus_erf_of(l, x, small, e, erfc)
    }
}

fused_kernel_type!(
    /// Kernel of [`erf_rational`] (always fused).
    ErfRational => erf_rational
);

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use crate::lanes::{Exact, Fast, Isa, LaneOp, MAX_WIDTH};
    use crate::ops::clean_form_test::{CHUNK, lane_bits};

    /// [`Erf`]'s `by_regions` gives `+-1` from [`ERF_ONE`] on without computing the large
    /// branch. [`erf`], the spec's form, rounds to exactly that at every float of `[4, 11]`
    /// (both signs; beyond, `exp(-x^2)` is 0) and at a sample of larger ones, in both modes;
    /// elsewhere the two agree bit for bit on every 9973rd float. The same for [`OnePlusErf`],
    /// whose regions form gives 2 for a positive `x` from [`ERF_ONE`] on.
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
            let mode = M::NAME;
            let (lo, hi) = (ERF_ONE.to_bits(), 11.0f32.to_bits());
            let saturated = (lo..=hi).chain((hi..0x7F80_0000).step_by(4099));
            for b in saturated {
                for x in [f32::from_bits(b), -f32::from_bits(b)] {
                    assert_eq!(erf_at::<L, M>(l, x), 1f32.copysign(x), "{mode} erf({x:e})");
                    let by_regions = erf_by_regions_at::<L, M>(l, x);
                    assert_eq!(by_regions, 1f32.copysign(x), "{mode} erf({x:e}) by regions");
                }
            }
            // `1 + erf` by regions gives 2 there without `erfc`, for a positive `x` only.
            for b in (lo..=hi).chain((hi..=0x7F80_0000).step_by(4099)) {
                let x = f32::from_bits(b);
                assert_eq!(one_plus_erf_at::<L, M>(l, x), 2.0, "{mode} 1 + erf({x:e})");
                assert_eq!(
                    one_plus_erf_by_regions_at::<L, M>(l, x),
                    2.0,
                    "{mode} 1 + erf({x:e})"
                );
            }
            for b in (0..=u32::MAX)
                .step_by(9973)
                .chain([f32::NEG_INFINITY.to_bits()])
            {
                let x = f32::from_bits(b);
                let (got, want) = (
                    one_plus_erf_by_regions_at::<L, M>(l, x),
                    one_plus_erf_at::<L, M>(l, x),
                );
                assert_eq!(got.to_bits(), want.to_bits(), "{mode} 1 + erf({x:e})");
            }
            for b in (0..=u32::MAX).step_by(9973) {
                let x = f32::from_bits(b);
                let (got, want) = (erf_by_regions_at::<L, M>(l, x), erf_at::<L, M>(l, x));
                assert_eq!(got.to_bits(), want.to_bits(), "{mode} erf({x:e})");
            }
        }
    }

    // The functions of one `x` on the scalar lane type, as functions (inlined into the
    // trampoline) rather than closures, which the compiler leaves out of line when they are
    // called more than once, compiled without FMA.

    #[inline(always)]
    fn lane0<L: Lanes>(l: L, v: L::F) -> f32 {
        f32::from_bits(lane_bits(l, v, 0))
    }

    #[inline(always)]
    fn erf_at<L: Lanes, M: Mode>(l: L, x: f32) -> f32 {
        lane0(l, erf::<L, M>(l, l.splat(x)))
    }

    #[inline(always)]
    fn erf_by_regions_at<L: Lanes, M: Mode>(l: L, x: f32) -> f32 {
        lane0(l, Erf::<M>::by_regions(l, l.splat(x)))
    }

    #[inline(always)]
    fn one_plus_erf_at<L: Lanes, M: Mode>(l: L, x: f32) -> f32 {
        lane0(l, one_plus_erf::<L, M>(l, l.splat(x)))
    }

    #[inline(always)]
    fn one_plus_erf_by_regions_at<L: Lanes, M: Mode>(l: L, x: f32) -> f32 {
        lane0(l, OnePlusErf::<M>::by_regions(l, l.splat(x)))
    }

    /// The fast erf as written before it clamped with `min`: a select of the clamp, and of 1
    /// where `|x| >= 3.92` or the rational exceeds 1.
    #[inline(always)]
    fn erf_rational_by_selects<L: Lanes>(l: L, x: L::F) -> L::F {
        let ax = abs(l, x);
        let clamp = l.splat(ERF_FAST_CLAMP);
        let at_one = l.ge(ax, clamp);
        let c = l.select(at_one, clamp, ax);
        let z = l.mul(c, c);
        let p = horner::<L, crate::lanes::Fast, 6>(l, z, &ERF_FAST_P);
        let q = horner::<L, crate::lanes::Fast, 6>(l, z, &ERF_FAST_Q);
        let y = l.div(l.mul(c, p), q);
        let one = l.splat(1.0);
        let y = l.select(l.mask_or(at_one, l.gt(y, one)), one, y);
        let y = l.or(y, sign_bit(l, x));
        nan_where_nan(l, x, y)
    }

    /// `erf_rational` equals the select form bit for bit on every lane type: every float of
    /// `[3, 4.5]` (both signs: the clamp and where the rational reaches 1), every 1021st float
    /// elsewhere, and the special values.
    pub fn clamp_by_min_is_the_select_form() {
        /// `erf_rational` and the select form of every `x` of `xs`, a register at a time, as
        /// bits.
        struct Both<'a> {
            xs: &'a [f32],
            by_min: &'a mut [u32],
            by_selects: &'a mut [u32],
        }
        impl LaneOp for Both<'_> {
            type Output = ();
            // Inlined into the trampoline, with plain loops (see `LaneOp`).
            #[inline(always)]
            fn run<L: Lanes, M: Mode>(self, l: L) {
                let outs = self.by_min.chunks_mut(L::WIDTH);
                let outs = outs.zip(self.by_selects.chunks_mut(L::WIDTH));
                for (c, (by_min, by_selects)) in self.xs.chunks(L::WIDTH).zip(outs) {
                    let x = l.load_partial(c, 0.0);
                    let (mut a, mut b) = ([0f32; MAX_WIDTH], [0f32; MAX_WIDTH]);
                    l.store(erf_rational(l, x), &mut a);
                    l.store(erf_rational_by_selects(l, x), &mut b);
                    for i in 0..c.len() {
                        (by_min[i], by_selects[i]) = (a[i].to_bits(), b[i].to_bits());
                    }
                }
            }
        }
        let (lo, hi) = (3.0f32.to_bits(), 4.5f32.to_bits());
        let dense = (lo..=hi).flat_map(|b| [b, b | 0x8000_0000]);
        let sparse = (0..=u32::MAX).step_by(1021);
        let specials = [
            0.0f32,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            3.92,
            -3.92,
        ]
        .map(f32::to_bits);
        let xs: Vec<f32> = dense
            .chain(sparse)
            .chain(specials)
            .map(f32::from_bits)
            .collect();
        // A chunk at a time (whole registers: the registers of the whole input).
        let (mut by_min, mut by_selects) = (vec![0u32; CHUNK], vec![0u32; CHUNK]);
        for isa in Isa::available() {
            let s = isa.supported().unwrap();
            for xs in xs.chunks(CHUNK) {
                let (by_min, by_selects) = (&mut by_min[..xs.len()], &mut by_selects[..xs.len()]);
                s.dispatch::<Fast, _>(Both {
                    xs,
                    by_min,
                    by_selects,
                });
                for ((x, got), want) in xs.iter().zip(&*by_min).zip(&*by_selects) {
                    assert_eq!(got, want, "{isa} erf_rational({x:e})");
                }
            }
        }
    }

    /// The fast erf's form without a NaN select (every lane a number) gives the bits of the
    /// form with it: every float of `[3, 4.5]` and the infinities, both signs, and every
    /// 65,521st float, on every lane type wider than one.
    pub fn the_fast_erf_clean_form_is_the_general_form() {
        use crate::ops::clean_form_test::{
            assert_clean_form_is_general_form, both_signs_and_a_sweep,
        };
        let xs = both_signs_and_a_sweep(
            (3.0f32.to_bits()..=4.5f32.to_bits()).chain([f32::INFINITY.to_bits()]),
        );
        assert_clean_form_is_general_form::<ErfRational>(&xs, |_, _, _| {});
    }

    pub fn constants_have_their_bit_patterns() {
        assert_eq!(ERF_SMALL.to_bits(), 0x3F00_0000);
        assert_eq!(SPLIT.to_bits(), 0x4580_0800);
        assert_eq!(ZLO_CUTOFF.to_bits(), 0x4280_0000);
        assert_eq!(ERF_FAST_CLAMP.to_bits(), 0x407A_E148);
        let fp: Vec<u32> = ERF_FAST_P.iter().map(|c| c.to_bits()).collect();
        let fq: Vec<u32> = ERF_FAST_Q.iter().map(|c| c.to_bits()).collect();
        assert_eq!(
            fp,
            [
                0x3609_9430,
                0x3995_5C77,
                0x3B76_C931,
                0x3D58_0F2A,
                0x3E42_FA21,
                0x3F90_6EBA
            ]
        );
        assert_eq!(
            fq,
            [
                0x381F_C4B4,
                0x3A98_608A,
                0x3C75_41C1,
                0x3DE9_B238,
                0x3F00_881B,
                0x3F80_0000
            ]
        );
        let p: Vec<u32> = ERF_P.iter().map(|c| c.to_bits()).collect();
        assert_eq!(
            p,
            [
                0xBA49_A9DD,
                0x3BAA_6759,
                0xBCDC_100C,
                0x3DE7_1779,
                0xBEC0_93A3,
                0x3F90_6EBB
            ]
        );
        let g: Vec<u32> = ERF_G.iter().map(|c| c.to_bits()).collect();
        let want: [u32; 17] = [
            0xBA17_6C68,
            0x3AEA_883B,
            0xB8D3_4476,
            0xBB8F_4D0B,
            0x3B63_0384,
            0x3AC4_EB41,
            0xBA76_C22A,
            0xBAF7_9E68,
            0xB987_9E9C,
            0x3BAA_DDE1,
            0xBC29_750D,
            0x3C81_56A1,
            0xBC96_3AEF,
            0x3C05_CFFB,
            0x3D11_8794,
            0xBE1E_1397,
            0x3EDA_EC3C,
        ];
        assert_eq!(g, want);
    }

    /// Erf sorted by regions gives the bits of its register form (the spec's form) in both
    /// modes, on every lane type, in place and into another slice, on every input of the
    /// regions tests' [`inputs`](crate::ops::regions::tests::inputs).
    pub fn sorting_by_regions_changes_no_bit() {
        use crate::ops::regions::tests::{inputs, sorted_equals_by_register};
        for src in inputs() {
            sorted_equals_by_register::<Erf<Exact>>("exact erf", &src);
            sorted_equals_by_register::<Erf<Fast>>("fast erf", &src);
        }
    }
}
