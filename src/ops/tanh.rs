//! `tanh` (spec, "tanh(x)"): an odd minimax polynomial below `|x| = 0.6`, `1 - 2/(e^2|x| + 1)`
//! above, the sign OR-ed in last. Bound: 1.5 ulp.
//!
//! Fast mode: a rational fitted to tanh ([`tanh_rational`]), one division and no exp. The
//! spec's algorithm is exact mode's only: fused and with the fast exp it was slower than the
//! rational (a register of many lanes nearly always needs both of its branches).

use super::exp::{EXP_ONE_SCALE, EXP_Q, exp_in, exp_in_range, reduce_arg, scale_exact};
use super::map::{map_lanes, map_lanes_in_place, map_register_arrays};
use super::{Kernel, SrcDst, abs, all_abs_below, horner, nan_where_nan, sign_bit};
use crate::lanes::{Exact, Lanes, Mode};

/// Below this `|x|` the polynomial branch runs.
pub const TANH_SMALL: f32 = 0.6;
/// The polynomial `P(z)`, highest first.
pub const TANH_P: [f32; 5] = [
    -0.005_895_158_3,
    0.020_795_971,
    -0.053_783_83,
    0.133_319_24,
    -0.333_333,
];

/// The polynomial branch: `ax + ax*(z*P(z))`, `z = ax*ax`.
#[inline(always)]
fn tanh_small<L: Lanes>(l: L, ax: L::F) -> L::F {
    let z = l.mul(ax, ax);
    let p = horner::<L, Exact, 5>(l, z, &TANH_P);
    Exact::madd(l, ax, l.mul(z, p), ax)
}

/// The exponential branch: `1 - 2/(exp(ax+ax) + 1)`. `IN_RANGE`: every `ax < TANH_IN_RANGE`,
/// so the exp takes its one-scale form without its own test.
#[inline(always)]
fn tanh_large<L: Lanes, const IN_RANGE: bool>(l: L, ax: L::F) -> L::F {
    let one = l.splat(1.0);
    let ax2 = l.add(ax, ax);
    let e = if IN_RANGE {
        exp_in_range::<L, Exact>(l, ax2)
    } else {
        exp_in::<L, Exact>(l, ax2)
    };
    l.sub(one, l.div(l.splat(2.0), l.add(e, one)))
}

/// Below this `|x|` (every lane of a register) [`tanh`] has no special value to place: no lane
/// is NaN, and `exp(2|x|)` takes the exp's one-scale form (`2|x| < EXP_ONE_SCALE`).
pub const TANH_IN_RANGE: f32 = EXP_ONE_SCALE / 2.0;

/// Exact mode's `tanh(x)`; `tanh(-0) = -0`, `+-1` for `+-inf`, canonical NaN for NaN.
///
/// On AVX-512 ([`Lanes::CHEAP_SELECT`], where [`tanh_both_in_one_pass`] runs), a register (a
/// group of registers, where the map runs one as a lane type) whose lanes all have
/// `|x| < TANH_IN_RANGE` (the usual case) skips the exp's range test and the NaN select: one
/// test instead of two, the same bits. Other lane types keep the exp's own test here (on AVX2
/// a group with the single test held the two-branch body twice, once per path, and was
/// slower); AVX2's slice loop is in assembly ([`Lanes::exact_tanh_in_range`]), and where
/// that stops [`tanh_by_stage`], which takes the single test per four registers.
#[inline(always)]
pub fn tanh<L: Lanes>(l: L, x: L::F) -> L::F {
    if L::CHEAP_SELECT && all_abs_below(l, x, TANH_IN_RANGE) {
        return l.or(tanh_of_abs::<L, true>(l, abs(l, x)), sign_bit(l, x));
    }
    let y = l.or(tanh_of_abs::<L, false>(l, abs(l, x)), sign_bit(l, x));
    nan_where_nan(l, x, y)
}

/// `tanh(ax)` for `ax = |x|` by the spec's two branches (`IN_RANGE` as in [`tanh_large`]).
#[inline(always)]
fn tanh_of_abs<L: Lanes, const IN_RANGE: bool>(l: L, ax: L::F) -> L::F {
    let small = l.lt(ax, l.splat(TANH_SMALL));
    // Whole-register shortcuts: a branch no lane takes is skipped (it changes no bit).
    if l.all(small) {
        tanh_small::<L>(l, ax)
    } else if !l.any(small) {
        tanh_large::<L, IN_RANGE>(l, ax)
    } else if IN_RANGE && L::CHEAP_SELECT {
        tanh_both_in_one_pass(l, ax, small)
    } else {
        let (s, g) = (tanh_small::<L>(l, ax), tanh_large::<L, IN_RANGE>(l, ax));
        l.select(small, s, g)
    }
}

/// Exact mode's [`tanh_of_abs`] of a register that needs both branches, with `ax` below
/// [`TANH_IN_RANGE`]: the two branches' operations share one instruction stream, lane by lane.
///
/// The polynomial branch and the exp of the other have the same shape: a square (`z = ax*ax`;
/// `r*r`), a Horner polynomial of four steps (`P` in `z`; the exp's `q` in `r`), its product
/// with that square (`z*P`; `(r*r)*q`), and a sum (`ax + ax*(z*P)`; `r + (r*r)*q`). So each
/// lane takes its own operands and coefficients (selected by `small`) through one square, one
/// Horner chain, one product and one sum, where the spec's form computes both in every lane
/// and discards one. Every lane performs exactly its branch's operations on its branch's
/// values, each rounded once (the large branch's extra product by 1 is exact), so the bits are
/// the spec's.
#[inline(always)]
fn tanh_both_in_one_pass<L: Lanes>(l: L, ax: L::F, small: L::M) -> L::F {
    let one = l.splat(1.0);
    // The large branch's `exp(ax + ax)`, spec steps 1 and 2.
    let (r, n, n_int) = reduce_arg::<L, Exact>(l, l.add(ax, ax));
    let w = l.select(small, ax, r);
    let square = l.mul(w, w);
    let v = l.select(small, square, r);
    // Each lane's coefficients. Written out: a loop (or a closure) over them is left rolled
    // (or out of line) on eight-register groups, which costs more than the branch it saves.
    let (p, q) = (TANH_P, EXP_Q);
    let c0 = l.select(small, l.splat(p[0]), l.splat(q[0]));
    let c1 = l.select(small, l.splat(p[1]), l.splat(q[1]));
    let c2 = l.select(small, l.splat(p[2]), l.splat(q[2]));
    let c3 = l.select(small, l.splat(p[3]), l.splat(q[3]));
    let c4 = l.select(small, l.splat(p[4]), l.splat(q[4]));
    let acc = l.add(l.mul(c0, v), c1);
    let acc = l.add(l.mul(acc, v), c2);
    let acc = l.add(l.mul(acc, v), c3);
    let acc = l.add(l.mul(acc, v), c4);
    // `ax * (z*P)`, or `((r*r)*q) * 1`, which is `(r*r)*q` exactly.
    let product = l.mul(l.mul(square, acc), l.select(small, ax, one));
    // The small branch's result `ax + ax*(z*P)`, or the exp's `r + (r*r)*q`.
    let sum = l.add(w, product);
    // `p = 1 + (r + (r*r)*q)`, `exp(ax + ax) = p * 2^n` (normal: `ax + ax < EXP_ONE_SCALE`).
    let e = scale_exact(l, l.add(one, sum), n, n_int);
    let large = l.sub(one, l.div(l.splat(2.0), l.add(e, one)));
    l.select(small, sum, large)
}

/// Kernel of [`tanh`], exact mode's (fast mode's is [`TanhRational`]): four AVX-512 registers
/// per step, not eight. With both branches in one pass the loop is one long chain of
/// alternating multiplies and adds per register, and eight registers' worth (about 400
/// instructions) outgrows the window in which the core overlaps one step's end with the next
/// one's start. The one-pass form gains over the two-branch form with four registers only, not
/// with eight or two (BENCHMARKS.md).
#[derive(Clone, Copy, Debug, Default)]
pub struct Tanh;

impl Kernel for Tanh {
    type Mode = Exact;
    #[inline(always)]
    fn apply<L: Lanes>(l: L, x: L::F) -> L::F {
        tanh(l, x)
    }
    /// On lane types whose select is not cheap and whose group is four registers, four
    /// registers at a time: on AVX2 (eight lanes) by the loop in assembly
    /// ([`Lanes::exact_tanh_in_range`]) and, where it stops, by [`tanh_by_stage`]; by
    /// [`tanh_by_register`] on NEON (four lanes), where the stage form has not been measured;
    /// elsewhere a group at a time.
    #[inline(always)]
    fn map<L: Lanes>(l: L, io: SrcDst<'_>) {
        if L::CHEAP_SELECT || <L::Group as Lanes>::WIDTH != 4 * L::WIDTH {
            return match io.src {
                Some(src) => map_lanes::<L, Self>(l, src, io.dst),
                None => map_lanes_in_place::<L, Self>(l, io.dst),
            };
        }
        if L::WIDTH == 8 {
            // The lane type's loop in assembly where it has one (AVX2), up to a block with a
            // lane it does not take (NaN, or `|x| >= TANH_IN_RANGE`); that block, or the tail,
            // by a set of four registers of the stage form, then the loop again after it.
            let SrcDst { src, dst } = io;
            let mut start = 0;
            while start < dst.len() {
                start += l.exact_tanh_in_range(src.map(|s| &s[start..]), &mut dst[start..]);
                let end = dst.len().min(start + 4 * L::WIDTH);
                let set = SrcDst {
                    src: src.map(|s| &s[start..end]),
                    dst: &mut dst[start..end],
                };
                map_register_arrays::<L, 4>(
                    l,
                    set,
                    #[inline(always)]
                    |x| tanh_by_stage(l, x),
                    #[inline(always)]
                    |x| tanh(l, x),
                );
                start = end;
            }
            return;
        }
        map_register_arrays::<L, 4>(
            l,
            io,
            #[inline(always)]
            |x| tanh_by_register(l, x),
            #[inline(always)]
            |x| tanh(l, x),
        );
    }
}

/// Exact [`tanh`] of `N` registers, bit for bit, without a branch between the registers.
///
/// One range test for all `N`, as in [`tanh_by_register`] (every `|x| < TANH_IN_RANGE`: no
/// NaN, the exp's one-scale form; any other set takes the general form register by register).
/// Then the exp branch on all `N` registers and, when a lane of any of them takes the
/// polynomial branch, the polynomial and its select on all `N`; every lane's arithmetic is its
/// branch's, as in the general form, and the select keeps the spec's branch. Each step of the
/// exp's and the polynomial's Horner chains runs on every register before the next.
///
/// The point is one straight block. [`tanh_by_register`]'s test per register (the polynomial
/// only on registers that have a lane of it) saves that branch's operations on the others, but
/// its branches split the set: the compiler emits each register's exp chain (about 30
/// dependent operations with the division), its test and its polynomial, then the next
/// register's. In one block it emits the four exp chains up to their divisions, the four
/// divisions side by side, then the polynomials, and the core keeps more of the chains in
/// flight at once: faster on AVX2 although it does more arithmetic.
#[inline(always)]
fn tanh_by_stage<L: Lanes, const N: usize>(l: L, x: [L::F; N]) -> [L::F; N] {
    let mut in_range = true;
    for &x in &x {
        in_range &= all_abs_below(l, x, TANH_IN_RANGE);
    }
    if !in_range {
        let mut y = x;
        for y in &mut y {
            *y = tanh(l, *y);
        }
        return y;
    }
    let one = l.splat(1.0);
    let mut ax = x;
    let mut small = [l.lt(x[0], x[0]); N];
    let (mut any_small, mut all_small) = (false, true);
    for i in 0..N {
        ax[i] = abs(l, x[i]);
        small[i] = l.lt(ax[i], l.splat(TANH_SMALL));
        any_small |= l.any(small[i]);
        all_small &= l.all(small[i]);
    }
    let mut y = ax;
    if all_small {
        for i in 0..N {
            y[i] = tanh_small::<L>(l, ax[i]);
        }
    } else {
        // `tanh_large::<L, true>`, step by step: `exp(ax + ax)` in its one-scale form
        // (`exp_one_scale`), then `1 - 2/(e + 1)`.
        let (mut r, mut n, mut n_int) = (ax, ax, [l.splat_i(0); N]);
        for i in 0..N {
            (r[i], n[i], n_int[i]) = reduce_arg::<L, Exact>(l, l.add(ax[i], ax[i]));
        }
        let q = horner_by_stage(l, &r, &EXP_Q);
        for i in 0..N {
            let p = l.add(one, Exact::madd(l, l.mul(r[i], r[i]), q[i], r[i]));
            let e = scale_exact(l, p, n[i], n_int[i]);
            y[i] = l.sub(one, l.div(l.splat(2.0), l.add(e, one)));
        }
        if any_small {
            // `tanh_small`, step by step: `ax + ax*(z*P(z))`, `z = ax*ax`.
            let mut z = ax;
            for i in 0..N {
                z[i] = l.mul(ax[i], ax[i]);
            }
            let p = horner_by_stage(l, &z, &TANH_P);
            for i in 0..N {
                let s = Exact::madd(l, ax[i], l.mul(z[i], p[i]), ax[i]);
                y[i] = l.select(small[i], s, y[i]);
            }
        }
    }
    for i in 0..N {
        y[i] = l.or(y[i], sign_bit(l, x[i]));
    }
    y
}

/// Exact mode's [`horner`] of `N` registers, each step on every register before the next.
#[inline(always)]
fn horner_by_stage<L: Lanes, const N: usize, const K: usize>(
    l: L,
    x: &[L::F; N],
    coeffs: &[f32; K],
) -> [L::F; N] {
    let mut acc = [l.splat(coeffs[0]); N];
    for &c in &coeffs[1..] {
        for i in 0..N {
            acc[i] = Exact::madd(l, acc[i], x[i], l.splat(c));
        }
    }
    acc
}

/// Exact [`tanh`] of `N` registers, bit for bit, for lane types without a cheap select.
///
/// Inputs spread over a few units put a lane of the polynomial branch in most groups of four
/// registers but in only some single registers: so the exp branch runs on all `N` registers
/// (interleaved), and the polynomial branch and its select only on the registers that have a
/// lane of it. One range test for all `N` (every `|x| < TANH_IN_RANGE`: no NaN, the exp's
/// one-scale form) skips the exp's own test and the NaN select, which change nothing there;
/// any other register set takes the general form register by register.
#[inline(always)]
fn tanh_by_register<L: Lanes, const N: usize>(l: L, x: [L::F; N]) -> [L::F; N] {
    let mut in_range = true;
    for &x in &x {
        in_range &= all_abs_below(l, x, TANH_IN_RANGE);
    }
    if !in_range {
        let mut y = x;
        for y in &mut y {
            *y = tanh(l, *y);
        }
        return y;
    }
    let mut ax = x;
    let mut small = [l.lt(x[0], x[0]); N];
    let mut all_small = true;
    for i in 0..N {
        ax[i] = abs(l, x[i]);
        small[i] = l.lt(ax[i], l.splat(TANH_SMALL));
        all_small &= l.all(small[i]);
    }
    let mut y = ax;
    if all_small {
        for i in 0..N {
            y[i] = tanh_small::<L>(l, ax[i]);
        }
    } else {
        for i in 0..N {
            y[i] = tanh_large::<L, true>(l, ax[i]);
        }
        for i in 0..N {
            if l.any(small[i]) {
                y[i] = l.select(small[i], tanh_small::<L>(l, ax[i]), y[i]);
            }
        }
    }
    for i in 0..N {
        y[i] = l.or(y[i], sign_bit(l, x[i]));
    }
    y
}

/// From this `|x|` on, fast mode's tanh is `+-1` (`tanh` rounds to 1 in f32 from 9.011 on).
pub const TANH_FAST_CLAMP: f32 = 9.02;
/// Below this `|x|` the fast tanh's rational `c P(c^2) / Q(c^2)` (fused Horner steps) is at
/// most 1, so its minimum with 1 changes nothing: a scan of every float of `[0, 9.02]` found
/// it above 1 first at `c = 8.168975` (`0x4102B41F`), and the test
/// `the_fast_tanh_clean_form_is_the_clamped_form` checks every float of `[7.5, 8.25]`.
pub const TANH_FAST_UNCLAMPED: f32 = 8.0;
/// `P(z)` of the fast tanh, highest first, `P(0) = 1`: `tools/erf_rational/fit.py tanh 4 4`
/// (rational Remez, minimax *relative* error of `c P(c^2)/Q(c^2)` against `tanh(c)` on
/// `[0, 9.02]`): 2.1e-8 as fitted, 4.9e-8 with the coefficients rounded to f32, 4.7 ulp
/// evaluated in f32 with fused Horner steps (the fit's figures). Bits: `3264D1E4 37ACAAAF
/// 3B64FC2B 3E090221 3F800000`.
pub const TANH_FAST_P: [f32; 5] = [
    1.331_907e-8,
    2.058_347_9e-5,
    0.003_494_034_3,
    0.133_797_18,
    1.0,
];
/// `Q(z)` of the fast tanh, highest first, `Q(0) = 1`, at least 1 on `[0, 9.02^2]`. Same fit.
/// Bits: `35505C2F 39AC20EC 3CD3EF92 3EEF2BB5 3F800000`.
pub const TANH_FAST_Q: [f32; 5] = [
    7.762_018_3e-7,
    0.000_328_309_25,
    0.025_871_072,
    0.467_130_33,
    1.0,
];

/// Fast mode's `tanh`: `c = min(|x|, 9.02)`, `z = c*c`, `copysign(min(c P(z) / Q(z), 1), x)`
/// with fused Horner steps, and `+-1` from `|x| = 9.02` on; `tanh(+-0) = +-0`, canonical NaN
/// for NaN. One rational over the whole range: no branch, no exp, and no cancellation near 0
/// (`c P/Q` is `c` times a number near 1 there). Bound and measurement: ACCURACY.md.
///
/// A register (or group) whose lanes all have `|x| < 8` ([`TANH_FAST_UNCLAMPED`]: no NaN, no
/// clamp, and a rational of at most 1) takes the clean form: `x P(z) / Q(z)` of `x` itself,
/// with no clamp, no select, no minimum and no sign handling, which change nothing there. The
/// selects were a measurable share of the time: their compares take slots on the pipes of the
/// fused steps. The rational of `x` is that of `|x|` with the sign of `x`: `z = x*x` is
/// `|x|*|x|`, and the product `x * P` and the quotient round symmetrically, so their sign is
/// that of `x` (`-0` for `x = -0`, as `+0` with the sign OR-ed in).
#[inline(always)]
pub fn tanh_rational<L: Lanes>(l: L, x: L::F) -> L::F {
    // One test per register (per group, where the map runs a group as one lane type): when
    // every `|x| < 8` (a NaN is not), the clamp, both selects, the minimum with 1, the absolute
    // value and the sign below change nothing.
    if all_abs_below(l, x, TANH_FAST_UNCLAMPED) {
        return rational_tanh(l, x);
    }
    let ax = abs(l, x);
    // `min(NaN, clamp)` is the clamp: a NaN lane computes a number until the last select.
    let c = l.min(ax, l.splat(TANH_FAST_CLAMP));
    let y = rational_tanh_of_abs(l, c);
    let one = l.splat(1.0);
    // The rational at the clamp is within a few ulps of 1, not exactly 1: select it.
    let y = l.select(l.ge(ax, l.splat(TANH_FAST_CLAMP)), one, y);
    let y = l.or(y, sign_bit(l, x));
    nan_where_nan(l, x, y)
}

/// `min(c P(z) / Q(z), 1)`: [`tanh_rational`] of a `c` in `[0, TANH_FAST_CLAMP]`.
#[inline(always)]
fn rational_tanh_of_abs<L: Lanes>(l: L, c: L::F) -> L::F {
    l.min(rational_tanh(l, c), l.splat(1.0))
}

/// `c P(z) / Q(z)`, `z = c*c`, fused Horner steps, of any `c` of `|c| <= TANH_FAST_CLAMP`: an
/// odd function of `c`, bit for bit (see [`tanh_rational`]).
#[inline(always)]
fn rational_tanh<L: Lanes>(l: L, c: L::F) -> L::F {
    let z = l.mul(c, c);
    let p = horner::<L, crate::lanes::Fast, 5>(l, z, &TANH_FAST_P);
    let q = horner::<L, crate::lanes::Fast, 5>(l, z, &TANH_FAST_Q);
    l.div(l.mul(c, p), q)
}

/// Kernel of [`tanh_rational`] (always fused).
#[derive(Clone, Copy, Debug, Default)]
pub struct TanhRational;

impl Kernel for TanhRational {
    type Mode = crate::lanes::Fast;
    #[inline(always)]
    fn apply<L: Lanes>(l: L, x: L::F) -> L::F {
        tanh_rational(l, x)
    }
    /// On AVX2 two registers at a time by [`tanh_rational_of_set`], elsewhere a group at a time.
    #[inline(always)]
    fn map<L: Lanes>(l: L, io: SrcDst<'_>) {
        if L::WIDTH == 8 && !L::CHEAP_SELECT {
            return map_register_arrays::<L, 2>(
                l,
                io,
                #[inline(always)]
                |x| tanh_rational_of_set(l, x),
                #[inline(always)]
                |x| tanh_rational(l, x),
            );
        }
        match io.src {
            Some(src) => map_lanes::<L, Self>(l, src, io.dst),
            None => map_lanes_in_place::<L, Self>(l, io.dst),
        }
    }
}

/// [`tanh_rational`] of `N` registers, bit for bit: one range test for all `N` (every
/// `|x| < TANH_FAST_UNCLAMPED`: the clean form), any other set register by register.
///
/// Why not AVX2's group of four: there the clean form's values (`x`, `z = x*x` and both Horner
/// accumulators, four registers each) and the constants outgrow the 16 ymm registers, and the
/// compiler spills the `x`s (kept for the numerator and for the general form's branch); a
/// spilled register costs a store, on this loop's busiest pipes. Two at a time fit.
#[inline(always)]
fn tanh_rational_of_set<L: Lanes, const N: usize>(l: L, x: [L::F; N]) -> [L::F; N] {
    let mut in_range = true;
    for &x in &x {
        in_range &= all_abs_below(l, x, TANH_FAST_UNCLAMPED);
    }
    let mut y = x;
    for y in &mut y {
        *y = if in_range {
            rational_tanh(l, *y)
        } else {
            tanh_rational(l, *y)
        };
    }
    y
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use crate::lanes::{Isa, LaneOp};
    use crate::ops::clean_form_test::{
        CHUNK, assert_clean_form_is_general_form, both_signs_and_a_sweep,
    };

    /// The exact tanh of `|x|` by both branches in one pass and by the spec's two branches and
    /// a select, register by register, as bit pairs (lanes past the end of `xs` left out).
    struct OnePassAndTwoBranches<'a>(&'a [f32]);

    impl LaneOp for OnePassAndTwoBranches<'_> {
        type Output = Vec<(u32, u32)>;
        // Inlined into the trampoline, with plain loops (see `LaneOp`).
        #[inline(always)]
        fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output {
            let mut out = Vec::new();
            for chunk in self.0.chunks(L::WIDTH) {
                let ax = abs(l, l.load_partial(chunk, 0.0));
                let small = l.lt(ax, l.splat(TANH_SMALL));
                let one_pass = tanh_both_in_one_pass(l, ax, small);
                let two = l.select(small, tanh_small::<L>(l, ax), tanh_large::<L, true>(l, ax));
                let (mut a, mut b) = (
                    [0f32; crate::lanes::MAX_WIDTH],
                    [0f32; crate::lanes::MAX_WIDTH],
                );
                l.store(one_pass, &mut a);
                l.store(two, &mut b);
                for i in 0..chunk.len() {
                    out.push((a[i].to_bits(), b[i].to_bits()));
                }
            }
            out
        }
    }

    /// Both branches in one pass (which only AVX-512 takes in the kernel) give the two-branch
    /// form's bits on every lane type: every float of `[0.55, 0.65]` (where the branches meet),
    /// the 4,097 smallest and every 4,099th float below `TANH_IN_RANGE`, both signs, in
    /// registers that mix the branches' lanes.
    pub fn both_branches_in_one_pass_are_the_two_branch_form() {
        let xs: Vec<f32> = (0.55f32.to_bits()..=0.65f32.to_bits())
            .chain(0..=4_096)
            .chain((0..TANH_IN_RANGE.to_bits()).step_by(4_099))
            .flat_map(|b| [b, b | 0x8000_0000])
            .map(f32::from_bits)
            .collect();
        let mixed = xs.iter().filter(|x| x.abs() < TANH_SMALL).count();
        assert!(mixed > 1_000 && mixed < xs.len() - 1_000, "{mixed}");
        for isa in Isa::available() {
            // A chunk at a time (whole registers: the registers of the whole input).
            for xs in xs.chunks(CHUNK) {
                let pairs = isa
                    .supported()
                    .unwrap()
                    .dispatch::<Exact, _>(OnePassAndTwoBranches(xs));
                assert_eq!(pairs.len(), xs.len());
                for (&x, (one_pass, two)) in xs.iter().zip(pairs) {
                    assert_eq!(one_pass, two, "{isa}: x {x:e}");
                }
            }
        }
    }

    /// The exact tanh of sets of four registers by `tanh_by_stage` and register by register by
    /// the general form, as bit pairs (the sets that fit in `xs`).
    struct ByStageAndGeneral<'a>(&'a [f32]);

    impl LaneOp for ByStageAndGeneral<'_> {
        type Output = Vec<(f32, u32, u32)>;
        // Inlined into the trampoline, with plain loops (see `LaneOp`).
        #[inline(always)]
        fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output {
            let w = L::WIDTH;
            let mut out = Vec::new();
            for set in self.0.chunks_exact(4 * w) {
                let mut x = [l.splat(0.0); 4];
                for (i, x) in x.iter_mut().enumerate() {
                    *x = l.load(&set[i * w..]);
                }
                let by_stage = tanh_by_stage(l, x);
                for (i, &x) in x.iter().enumerate() {
                    let (mut a, mut b) = (
                        [0f32; crate::lanes::MAX_WIDTH],
                        [0f32; crate::lanes::MAX_WIDTH],
                    );
                    l.store(by_stage[i], &mut a);
                    l.store(tanh(l, x), &mut b);
                    for k in 0..w {
                        out.push((set[i * w + k], a[k].to_bits(), b[k].to_bits()));
                    }
                }
            }
            out
        }
    }

    /// `tanh_by_stage` (AVX2's slice loop where the assembly loop stops) gives the general
    /// form's bits on every lane type, in sets of four registers: every float of `[0.55, 0.65]` (where the branches meet, so
    /// registers and sets mix them), every 4,099th float below `TANH_IN_RANGE`, sets all of the
    /// polynomial branch (the 4,097 smallest floats), all of the exp branch (from 1 on), and
    /// sets with a NaN, an infinity or a value past `TANH_IN_RANGE` among them; both signs,
    /// and each list shuffled too.
    pub fn the_stage_form_is_the_general_form() {
        let lists: Vec<Vec<u32>> = vec![
            (0.55f32.to_bits()..=0.65f32.to_bits()).collect(),
            (0..TANH_IN_RANGE.to_bits()).step_by(4_099).collect(),
            (0..=4_096).collect(),
            (1f32.to_bits()..TANH_IN_RANGE.to_bits())
                .step_by(1_031)
                .collect(),
        ];
        let mut xs: Vec<f32> = Vec::new();
        for list in &lists {
            let signed: Vec<f32> = list
                .iter()
                .flat_map(|&b| [b, b | 0x8000_0000])
                .map(f32::from_bits)
                .collect();
            xs.extend(&signed);
            // The same values in another order (a fixed stride through the list).
            let n = signed.len();
            xs.extend((0..n).map(|i| signed[i * 7_919 % n]));
        }
        let mut with_specials = xs[..4_096].to_vec();
        for (k, special) in [f32::NAN, f32::INFINITY, -50.0, 43.0, f32::NEG_INFINITY]
            .into_iter()
            .enumerate()
        {
            with_specials[97 + 401 * k] = special;
        }
        xs.extend(with_specials);
        let small = xs.iter().filter(|x| x.abs() < TANH_SMALL).count();
        assert!(small > 10_000 && small < xs.len() - 10_000, "{small}");
        for isa in Isa::available() {
            // A chunk at a time (whole sets of four registers: the sets of the whole input).
            let mut compared = 0;
            for xs in xs.chunks(CHUNK) {
                let triples = isa
                    .supported()
                    .unwrap()
                    .dispatch::<Exact, _>(ByStageAndGeneral(xs));
                compared += triples.len();
                for (x, by_stage, general) in triples {
                    assert_eq!(by_stage, general, "{isa}: x {x:e}");
                }
            }
            assert!(compared > xs.len() - 4 * crate::lanes::MAX_WIDTH);
        }
    }

    /// The fast tanh's clean form (the rational of `x` itself, no minimum with 1) gives the
    /// clamped form's bits wherever it runs: every float of `[7.5, 8.25]` (below
    /// `TANH_FAST_UNCLAMPED`, where the rational nears 1, and past it), of `[8.9, 9.1]` and the
    /// 4,097 smallest, both signs, and a sparse sweep of all floats, on every lane type wider
    /// than one; and `+-1` from the clamp on.
    pub fn the_fast_tanh_clean_form_is_the_clamped_form() {
        let near_one = 7.5f32.to_bits()..=8.25f32.to_bits();
        let around_clamp = 8.9f32.to_bits()..=9.1f32.to_bits();
        let xs = both_signs_and_a_sweep(near_one.chain(around_clamp).chain(0..=4_096));
        assert_clean_form_is_general_form::<TanhRational>(&xs, |isa, xs, ys| {
            for (&x, &y) in xs.iter().zip(ys) {
                if x.abs() >= TANH_FAST_CLAMP {
                    assert_eq!(f32::from_bits(y), 1f32.copysign(x), "{isa}: x {x:e}");
                }
            }
        });
    }

    /// Exact tanh: a register of `|x| < TANH_IN_RANGE` (one test, no NaN select, the exp
    /// untested; AVX-512 only, elsewhere both sides take the general form) gives the general
    /// form's bits, and every lane type the scalar one's: every float of `[42.5, 43.5]` and of
    /// `[0.59, 0.61]` (where the branches meet), both signs, and more (see the helper). The
    /// registers hold one value each, so they never mix the branches: the one-pass form has
    /// its own test above.
    pub fn the_exact_in_range_form_is_the_general_form() {
        use crate::ops::clean_form_test::assert_clean_form_is_general_form_near;
        assert_clean_form_is_general_form_near::<Tanh>(42.5, 43.5);
        assert_clean_form_is_general_form_near::<Tanh>(0.59, 0.61);
    }

    pub fn constants_have_their_bit_patterns() {
        let bits = |c: &[f32]| c.iter().map(|c| c.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&TANH_FAST_P),
            [
                0x3264_D1E4,
                0x37AC_AAAF,
                0x3B64_FC2B,
                0x3E09_0221,
                0x3F80_0000
            ]
        );
        assert_eq!(
            bits(&TANH_FAST_Q),
            [
                0x3550_5C2F,
                0x39AC_20EC,
                0x3CD3_EF92,
                0x3EEF_2BB5,
                0x3F80_0000
            ]
        );
        assert_eq!(TANH_FAST_CLAMP.to_bits(), 0x4110_51EC);
        assert_eq!(TANH_FAST_UNCLAMPED.to_bits(), 0x4100_0000);
        assert_eq!(TANH_SMALL.to_bits(), 0x3F19_999A);
        let p: Vec<u32> = TANH_P.iter().map(|c| c.to_bits()).collect();
        assert_eq!(
            p,
            [
                0xBBC1_2C2C,
                0x3CAA_5C50,
                0xBD5C_4C6F,
                0x3E08_84D7,
                0xBEAA_AA9F
            ]
        );
    }
}
