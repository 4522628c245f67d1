//! `sigmoid(x) = 1 / (1 + e^-x)` (spec, "sigmoid(x)"): `s = exp(-|x|)`, then `1/(1+s)` or
//! `s/(1+s)` by the sign, so nothing overflows or cancels. Bound: 2.5 ulp. Fast mode:
//! `1 / (1 + e^-x)` itself on the fast exp ([`fast_over_one_plus_exp_neg`]), whose clamp keeps
//! `e^-x` finite.

use super::exp::{EXP_ONE_SCALE, FAST_EXP_LOW, exp_in, exp_in_range, fast_exp, fast_exp_in_range};
use super::map::{TwoStage, map_two_stage, map_wide};
use super::{Kernel, SrcDst, all_abs_below, nan_where_nan, sign_bit};
use crate::lanes::Lanes;
use crate::lanes::Mode;

/// `sigmoid(x)`; canonical NaN for NaN. Fast mode: `+0` below `-87.3` (the fast exp's clamp).
#[inline(always)]
pub fn sigmoid<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    if M::FAST {
        let (y, clean) = fast_over_one_plus_exp_neg(l, l.splat(1.0), x);
        return if clean { y } else { nan_where_nan(l, x, y) };
    }
    let (s, clean) = exact_head::<L, M>(l, x);
    exact_tail(l, x, s, clean)
}

/// Exact sigmoid's first stage, `s = exp(-|x|)`, and whether the register is clean: a register
/// of `|x| < 86` (no NaN, the exp on its one-scale form) has no special value to place, so one
/// test replaces the exp's own, and the NaN select of [`exact_tail`] is skipped.
#[inline(always)]
fn exact_head<L: Lanes, M: Mode>(l: L, x: L::F) -> (L::F, bool) {
    if all_abs_below(l, x, EXP_ONE_SCALE) {
        (exp_neg_abs::<L, M, true>(l, x), true)
    } else {
        (exp_neg_abs::<L, M, false>(l, x), false)
    }
}

/// The spec's `s = exp(-|x|)`, `-|x|` as `x` with its sign bit set (see
/// [`sigmoid_of_number`]); `IN_RANGE`: every `|x| < EXP_ONE_SCALE`, the exp's one-scale form.
#[inline(always)]
fn exp_neg_abs<L: Lanes, M: Mode, const IN_RANGE: bool>(l: L, x: L::F) -> L::F {
    let nax = l.or(x, l.splat(-0.0));
    if IN_RANGE {
        exp_in_range::<L, M>(l, nax)
    } else {
        exp_in::<L, M>(l, nax)
    }
}

/// Exact sigmoid's second stage from `s` ([`exact_head`]): [`sigmoid_of_number`]'s choice and
/// division, and the canonical NaN unless the register was clean.
#[inline(always)]
fn exact_tail<L: Lanes>(l: L, x: L::F, s: L::F, clean: bool) -> L::F {
    let y = over_one_plus(l, x, s);
    if clean { y } else { nan_where_nan(l, x, y) }
}

/// `num / (1 + s)`, `num` the spec's `x >= 0 ? 1 : s` by the sign bit of `x` (see
/// [`sigmoid_of_number`]).
#[inline(always)]
fn over_one_plus<L: Lanes>(l: L, x: L::F, s: L::F) -> L::F {
    let one = l.splat(1.0);
    let num = l.select_by_sign(x, s, one);
    l.div(num, l.add(one, s))
}

/// Fast mode's `x * sigmoid(z)` as `x / (1 + e^-z)` on the fast exp (the sigmoid itself with
/// `x = 1`; SiLU with `z = x`; the tanh form of GELU with `z = 2u`), and whether the register
/// was *clean*: every `-z` within `[-87.3, 87.3]`, so no NaN and no special value anywhere.
///
/// A clean register (the usual case) takes the fast exp's select-free form and nothing else:
/// one range test, the exp, an add and a division, where the spec's form `s = e^-|z|`,
/// `1/(1+s)` or `s/(1+s)` by the sign, times `x`, adds an absolute value, a compare, a select
/// and a multiply (and every caller its own test for special values). Beyond the range: the
/// fast exp clamps `-z` at 88.3 (`e^-z` stays finite, so nothing overflows), and below
/// `z = -87.3`, where the fast exp of `z` would flush to `+0`, the result is `x * (+0)`, a zero
/// with the sign of `x` (also for `x = -inf`). NaN lanes give a NaN (the caller places the
/// canonical one; a clean register has none).
#[inline(always)]
pub fn fast_over_one_plus_exp_neg<L: Lanes>(l: L, x: L::F, z: L::F) -> (L::F, bool) {
    let (d, clean) = fast_one_plus_exp_neg(l, z);
    (fast_over(l, x, z, d, clean), clean)
}

/// The first stage of [`fast_over_one_plus_exp_neg`]: `d = 1 + e^-z` on the fast exp, and
/// whether the register is clean (its clean form where it is).
#[inline(always)]
fn fast_one_plus_exp_neg<L: Lanes>(l: L, z: L::F) -> (L::F, bool) {
    let nz = l.sub(l.splat(0.0), z);
    let one = l.splat(1.0);
    if all_abs_below(l, nz, (-FAST_EXP_LOW).next_up()) {
        (l.add(one, fast_exp_in_range(l, nz)), true)
    } else {
        (l.add(one, fast_exp(l, nz)), false)
    }
}

/// The second stage of [`fast_over_one_plus_exp_neg`]: `x / d`, and past the clamp the zero
/// with the sign of `x` (the first stage's `clean` says there is none).
#[inline(always)]
fn fast_over<L: Lanes>(l: L, x: L::F, z: L::F, d: L::F, clean: bool) -> L::F {
    let y = l.div(x, d);
    if clean {
        return y;
    }
    let nz = l.sub(l.splat(0.0), z);
    l.select(l.gt(nz, l.splat(-FAST_EXP_LOW)), sign_bit(l, x), y)
}

/// [`sigmoid`] where `x` is not NaN (a NaN lane gets an unspecified value). `IN_RANGE`: the
/// caller knows every `|x| < EXP_ONE_SCALE`, so the exp takes its one-scale form untested.
///
/// The spec's `0 - |x|` is `x` with its sign bit set (one `or` instead of an `and` and a
/// subtraction), and its `x >= 0 ? 1 : s` is a choice by the sign bit of `x`
/// ([`Lanes::select_by_sign`]: one `vblendvps` on AVX2, no comparison). The bits are the
/// spec's: the two forms of `-|x|` differ only at `x = +-0` (`-0` against `+0`), where the exp
/// gives 1 either way, and the two choices only at `x = -0` (the sign bit says negative,
/// `-0 >= 0` says not), where `s = exp(-0) = 1` is the 1 the spec takes, and at NaN, whose lane
/// the callers replace. The test `the_sign_bit_form_is_the_spec_form` checks it on every lane
/// type.
#[inline(always)]
pub fn sigmoid_of_number<L: Lanes, M: Mode, const IN_RANGE: bool>(l: L, x: L::F) -> L::F {
    over_one_plus(l, x, exp_neg_abs::<L, M, IN_RANGE>(l, x))
}

/// Kernel of [`sigmoid`]. The slice loop runs a group's exp one loop step before its division
/// ([`map_two_stage`]): the division's latency no longer ends each step's chain. Fast mode on
/// AVX-512 ([`Lanes::CHEAP_SELECT`]) keeps [`map_wide`]'s loop, the form timed there; the
/// two stages were timed on AVX2 only.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sigmoid<M>(core::marker::PhantomData<M>);

impl<M: Mode> Kernel for Sigmoid<M> {
    type Mode = M;
    #[inline(always)]
    fn apply<L: Lanes>(l: L, x: L::F) -> L::F {
        sigmoid::<L, M>(l, x)
    }
    #[inline(always)]
    fn map<L: Lanes>(l: L, io: SrcDst<'_>) {
        if M::FAST && L::CHEAP_SELECT {
            map_wide::<L, Self>(l, io)
        } else {
            map_two_stage::<L, Self>(l, io)
        }
    }
}

impl<M: Mode> TwoStage for Sigmoid<M> {
    type Head<F: Copy> = (F, bool);
    #[inline(always)]
    fn head<L: Lanes>(l: L, x: L::F) -> (L::F, bool) {
        if M::FAST {
            fast_one_plus_exp_neg(l, x)
        } else {
            exact_head::<L, M>(l, x)
        }
    }
    #[inline(always)]
    fn tail<L: Lanes>(l: L, x: L::F, (s, clean): (L::F, bool)) -> L::F {
        if M::FAST {
            let y = fast_over(l, l.splat(1.0), x, s, clean);
            if clean { y } else { nan_where_nan(l, x, y) }
        } else {
            exact_tail(l, x, s, clean)
        }
    }
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use crate::lanes::{Fast, Isa, LaneOp};
    use crate::ops::clean_form_test::lane_bits;

    /// `x / (1 + e^-z)` of every `(x, z)` twice: on a register of that pair alone (the clean
    /// form where `-z` is in range) and on a register whose first lane is NaN (always the
    /// clamped form with its select), as bit pairs.
    struct BothPaths<'a>(&'a [(f32, f32)]);

    impl LaneOp for BothPaths<'_> {
        type Output = Vec<(u32, u32, bool)>;
        // Inlined into the trampoline, with plain loops (see `LaneOp`).
        #[inline(always)]
        fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output {
            let lane = |v: L::F, i: usize| lane_bits(l, v, i);
            let mut out = Vec::with_capacity(self.0.len());
            for &(x, z) in self.0 {
                let (alone, clean) = fast_over_one_plus_exp_neg(l, l.splat(x), l.splat(z));
                let mut zs = [z; 16];
                zs[0] = f32::NAN;
                let (beside_nan, dirty) = fast_over_one_plus_exp_neg(l, l.splat(x), l.load(&zs));
                if L::WIDTH == 1 {
                    // One lane: no register beside a NaN; compare the form with itself.
                    out.push((lane(alone, 0), lane(alone, 0), clean));
                    continue;
                }
                assert!(!dirty, "a NaN lane takes the clamped form");
                out.push((lane(alone, 0), lane(beside_nan, 1), clean));
            }
            out
        }
    }

    /// The clean form is the clamped form wherever it runs (every float of `[87.2, 88.4]`, both
    /// signs, and a sparse sweep of all floats; on every lane type wider than one), and the clamped form flushes to a zero with
    /// the sign of `x` exactly below `z = -87.3`, as the fast exp of `z` does; `x` in
    /// `{1, z, -3.5}` (the sigmoid, SiLU, a GELU-like factor).
    pub fn the_clean_form_is_the_clamped_form_and_the_flush_is_at_the_exp_limit() {
        let (lo, hi) = (87.2f32.to_bits(), 88.4f32.to_bits());
        let zs = crate::ops::clean_form_test::both_signs_and_a_sweep(lo..=hi);
        let pairs: Vec<(f32, f32)> = zs
            .iter()
            .flat_map(|&z| [(1.0, z), (z, z), (-3.5, z)])
            .collect();
        for isa in Isa::available() {
            let out = isa
                .supported()
                .unwrap()
                .dispatch::<Fast, _>(BothPaths(&pairs));
            for (&(x, z), (alone, beside_nan, clean)) in pairs.iter().zip(out) {
                assert_eq!(alone, beside_nan, "{isa}: x {x:e}, z {z:e}");
                assert_eq!(clean, (-z).abs() <= 87.3, "{isa}: z {z:e}");
                if z < FAST_EXP_LOW {
                    assert_eq!(
                        alone,
                        (x.to_bits() & 0x8000_0000),
                        "{isa}: x {x:e}, z {z:e}"
                    );
                } else if x.abs() >= 1e-30 {
                    assert_ne!(alone & 0x7FFF_FFFF, 0, "{isa}: x {x:e}, z {z:e}");
                }
            }
        }
    }

    /// [`sigmoid_of_number`] as the spec writes it: `s = exp(0 - |x|)`, `x >= 0 ? 1 : s`.
    #[inline(always)]
    fn sigmoid_of_number_as_spec<L: Lanes, M: Mode, const IN_RANGE: bool>(l: L, x: L::F) -> L::F {
        let one = l.splat(1.0);
        let nax = l.sub(l.splat(0.0), crate::ops::abs(l, x));
        let s = if IN_RANGE {
            exp_in_range::<L, M>(l, nax)
        } else {
            exp_in::<L, M>(l, nax)
        };
        let num = l.select(l.ge(x, l.splat(0.0)), one, s);
        l.div(num, l.add(one, s))
    }

    /// Bits of [`sigmoid_of_number`] and of [`sigmoid_of_number_as_spec`] of every `x`, a
    /// register at a time (`IN_RANGE` forms only where every `|x|` of the register is below
    /// `EXP_ONE_SCALE`).
    struct SignBitAndSpec<'a>(&'a [f32]);

    impl LaneOp for SignBitAndSpec<'_> {
        type Output = Vec<(f32, u32, u32)>;
        // Inlined into the trampoline, with plain loops (see `LaneOp`).
        #[inline(always)]
        fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output {
            let mut out = Vec::new();
            for c in self.0.chunks(L::WIDTH) {
                let x = l.load_partial(c, 0.0);
                let mut forms = vec![(
                    sigmoid_of_number::<L, M, false>(l, x),
                    sigmoid_of_number_as_spec::<L, M, false>(l, x),
                )];
                if c.iter().all(|v| v.abs() < EXP_ONE_SCALE) {
                    forms.push((
                        sigmoid_of_number::<L, M, true>(l, x),
                        sigmoid_of_number_as_spec::<L, M, true>(l, x),
                    ));
                }
                for (new, spec) in forms {
                    for (i, &v) in c.iter().enumerate() {
                        out.push((v, lane_bits(l, new, i), lane_bits(l, spec, i)));
                    }
                }
            }
            out
        }
    }

    /// Exact mode's sigmoid core, `x | sign` as `-|x|` and the choice by the sign bit, gives
    /// the spec's form's bits on every lane type: at both zeros (where the two `-|x|` differ
    /// and `-0` is chosen by its sign bit), the 4,097 smallest floats of both signs
    /// (subnormals), every float of `[85.5, 86.5]` (the one-scale bound), the infinities and
    /// the largest floats, both signs, and a sparse sweep of all, beside each other in
    /// registers, and the zeros, subnormals and ends also each alone in a register.
    pub fn the_sign_bit_form_is_the_spec_form() {
        use crate::lanes::Exact;
        use crate::ops::clean_form_test::both_signs_and_a_sweep;
        let ends = [0.0f32, f32::INFINITY, f32::MAX, 1.0, f32::MIN_POSITIVE].map(f32::to_bits);
        let small_and_ends = ends.into_iter().chain(0..=4_096);
        let alone: Vec<f32> = small_and_ends
            .clone()
            .flat_map(|b| [b, b | 0x8000_0000])
            .flat_map(|b| [f32::from_bits(b); crate::lanes::MAX_WIDTH])
            .collect();
        let near_bound = 85.5f32.to_bits()..=86.5f32.to_bits();
        let xs = both_signs_and_a_sweep(small_and_ends.chain(near_bound));
        for isa in Isa::available() {
            let s = isa.supported().unwrap();
            for input in [&xs, &alone] {
                let out = s.dispatch::<Exact, _>(SignBitAndSpec(input));
                assert!(out.len() >= input.len());
                for (x, new, spec) in out {
                    assert_eq!(new, spec, "{isa}: x {x:e}");
                }
            }
        }
    }

    /// Exact sigmoid: a register of `|x| < EXP_ONE_SCALE` (one test, no select) gives the
    /// general form's bits, every float of `[85.5, 86.5]` and more (see the helper).
    pub fn the_exact_in_range_form_is_the_general_form() {
        use crate::lanes::Exact;
        use crate::ops::clean_form_test::assert_clean_form_is_general_form_near;
        assert_clean_form_is_general_form_near::<Sigmoid<Exact>>(85.5, 86.5);
    }
}
