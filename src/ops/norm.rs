//! Layer normalisation of a row, with the canonical sums of exact mode.
//!
//! `mean = canonical sum of x / n`; `var = canonical sum of (x - mean)^2 / n`;
//! `sd = sqrt(var + eps)` (IEEE square root, correctly rounded);
//! `y_i = ((x_i - mean) / sd) * gamma_i + beta_i`. Every step is an IEEE operation in a fixed
//! order, so exact mode gives the same bits on every instruction set. Fast mode multiplies by
//! `1/sd` and fuses the last multiply-add.
//!
//! A row whose offset is large beside its spread (`1e6 + N(0, 1)`; on a long row, after
//! thousands of rounded additions, the f32 mean can be many standard deviations off) carries
//! its mean as two floats, `mean + shift`, found by the same pass as the variance: see
//! [`moments`]. Ordinary rows never take that path and keep the bits above.
//!
//! A row whose statistics leave the range of `f32` (a sum or a square that overflows, as for
//! rows of `1e18` or `3e38`, or squares that underflow when `eps` cannot hide them, as for a
//! row of subnormals with `eps = 0`) is normalised at a scale: every element is multiplied by
//! the power of two `s = 2^-k` that brings the row's largest magnitude near 1 (exact: no
//! rounding, except for elements so much smaller than the largest that they are below the
//! output's resolution), the same formula runs on `x s` with `eps s^2` (a row of equal huge
//! values is centred exactly by the two-float mean), and as the normalisation does not change
//! with the scale, `y` is the normalisation of `x`. Rows whose
//! statistics are in range (every ordinary row) never take that path and keep their bits. The
//! choice depends only on the row's values, so the bits still depend on no instruction set or
//! thread count. In exact mode every NaN stored is the canonical NaN.

use super::nan_where_nan;
use super::reduce::{canonical_sum_of, canonical_sums_of, max_abs};
use crate::lanes::{LaneOp, Lanes, Mode, compiled_once_per_mode};

/// Below this variance, squares of differences may have been rounded as subnormals.
const TINY_VAR: f32 = 7.888_609e-31; // 2^-100
/// From this `eps` on, `eps` hides any variance below [`TINY_VAR`].
const HIDING_EPS: f32 = 8.470_329e-22; // 2^-70

/// The row's statistics at the scale `scale` (a power of two, `1` for ordinary rows):
/// `mean + shift` and `sd` of `x * scale`, `sd = sqrt(var + eps * scale^2)`.
#[derive(Clone, Copy)]
struct Stats {
    scale: f32,
    mean: f32,
    /// Subtracted from every `x s - mean` (`+0` for most rows: see [`moments`]).
    shift: f32,
    sd: f32,
}

/// Below `MEAN_SHIFT_TRIGGER * (var + eps)`, the square of a row's mean shift (the mean of its
/// differences from the rounded mean) is left out: `2^-40`, a shift below `2^-20` of the
/// standard deviation. Ordinary rows sit far below it (their shift is the rounding of a sum of
/// differences around 0); a row whose offset is large beside its spread (`1e6 + N(0, 1)`, or
/// `1e4 + N(0, 1e-3)`) lies far above it.
const MEAN_SHIFT_TRIGGER: f32 = 9.094_947e-13; // 2^-40

/// The mean, shift and variance of `row * scale` (`scale` `None`: of `row`) in the canonical
/// order: `mean = sum x / n`, and `c = sum (x - mean) / n` beside the variance
/// `sum (x - mean)^2 / n`. An f32 mean is `x`'s true mean rounded (to a quarter of an ulp of
/// the offset at best, and on a long row after thousands of rounded additions, far worse):
/// where that error is large beside the spread (`c^2 > 2^-40 (var + eps)`, see
/// [`MEAN_SHIFT_TRIGGER`]), the mean is carried as two floats: `mean + c` rounded, and
/// `shift = sum (x - (mean + c)) / n`, the rest; every difference is taken as
/// `(x - mean) - shift`, and the variance summed again from those. So a row of equal (or nearly
/// equal) values, at a scale or not, is centred exactly, and its variance is not the square of
/// the mean's rounding error. Elsewhere the shift is `+0` and the bits are those of the plain
/// two passes. `eps` is at the scale.
#[inline(always)]
fn moments<L: Lanes>(l: L, row: &[f32], scale: Option<f32>, eps: f32) -> Moments {
    let n = row.len() as f32;
    let sum = canonical_sum_of(
        l,
        row,
        #[inline(always)]
        |v| scaled(l, v, scale),
    );
    let mean = sum / n;
    let mv = l.splat(mean);
    let (squares, differences) = canonical_sums_of(
        l,
        row,
        #[inline(always)]
        |v| {
            let d = l.sub(scaled(l, v, scale), mv);
            (l.mul(d, d), d)
        },
    );
    let overflow = !(sum.abs() < f32::MAX && squares < f32::MAX);
    let (var, c) = (squares / n, differences / n);
    // NaN-safe: a NaN or infinite row keeps the plain moments.
    let far = c * c > MEAN_SHIFT_TRIGGER * (var + eps);
    if overflow || !far {
        return Moments {
            mean,
            shift: 0.0,
            var,
            overflow,
        };
    }
    // The mean corrected by `c` (rounded to an ulp of the offset: `c` itself carries the
    // rounding of a sum of differences as large as the old mean's error), then the rest of the
    // mean, now small, as the shift.
    let mean = mean + c;
    let mv = l.splat(mean);
    let shift = canonical_sum_of(
        l,
        row,
        #[inline(always)]
        |v| l.sub(scaled(l, v, scale), mv),
    ) / n;
    let cv = l.splat(shift);
    let var = canonical_sum_of(
        l,
        row,
        #[inline(always)]
        |v| {
            let d = l.sub(l.sub(scaled(l, v, scale), mv), cv);
            l.mul(d, d)
        },
    ) / n;
    Moments {
        mean,
        shift,
        var,
        overflow,
    }
}

/// A row's mean as `mean + shift` (`shift` `+0` unless [`moments`] needs it) and its variance.
#[derive(Clone, Copy)]
struct Moments {
    mean: f32,
    shift: f32,
    var: f32,
    /// The sum or the sum of squares left the range of `f32` (or holds a NaN). Tested on the
    /// sums, not on `mean` and `var`, and as `< f32::MAX`, not as finite: under a caller's
    /// rounding toward zero (fast mode runs in the caller's environment) an overflowing sum
    /// stops at `f32::MAX` rather than at infinity, and the division by `n` would hide it.
    overflow: bool,
}

/// `v * scale`, or `v` without a scale.
#[inline(always)]
fn scaled<L: Lanes>(l: L, v: L::F, scale: Option<f32>) -> L::F {
    match scale {
        Some(s) => l.mul(v, l.splat(s)),
        None => v,
    }
}

/// `2^k` for `-126 <= k <= 127`.
fn pow2(k: i32) -> f32 {
    f32::from_bits(((k + 127) as u32) << 23)
}

/// The unbiased exponent of a finite `x > 0` (`-127` for subnormals).
fn exponent(x: f32) -> i32 {
    ((x.to_bits() >> 23) & 0xFF) as i32 - 127
}

/// The statistics of a row: at scale 1 when they are in range, else at the scale that brings
/// the row's largest magnitude near 1 (see the module's documentation).
#[inline(always)]
fn stats<L: Lanes>(l: L, row: &[f32], eps: f32) -> Stats {
    let m = moments(l, row, None, eps);
    let underflow = m.var < TINY_VAR && eps < HIDING_EPS;
    let unscaled = Stats {
        scale: 1.0,
        mean: m.mean,
        shift: m.shift,
        sd: (m.var + eps).sqrt(),
    };
    if !(m.overflow || underflow) {
        return unscaled;
    }
    let big = max_abs(l, row);
    if !big.is_finite() || big == 0.0 {
        // An inf or NaN in the row (its results are inf or NaN), or a row of zeros.
        return unscaled;
    }
    // The largest magnitude scaled into [2, 4) (down) or up to at most 1 with `eps s^2`
    // finite (up); `k` is the exponent of the scale.
    let e = exponent(big);
    let k = if m.overflow {
        (1 - e).clamp(-126, 127)
    } else {
        let room = if eps > 0.0 {
            (126 - exponent(eps)) / 2
        } else {
            127
        };
        (-e).clamp(0, 127).min(room)
    };
    if k == 0 {
        return unscaled;
    }
    let scale = pow2(k);
    let eps_s = eps * scale * scale;
    let m = moments(l, row, Some(scale), eps_s);
    let mut sd = (m.var + eps_s).sqrt();
    if sd == 0.0 && eps > 0.0 {
        // `eps s^2` underflowed and every `x s - mean` is 0: the outputs are 0 at any sd.
        sd = 1.0;
    }
    Stats {
        scale,
        mean: m.mean,
        shift: m.shift,
        sd,
    }
}

/// Normalises `row` in place with the affine `gamma`, `beta` (each the row's length).
#[inline(always)]
fn layer_norm_row<L: Lanes, M: Mode>(l: L, row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    if row.is_empty() {
        return;
    }
    let st = stats(l, row, eps);
    match (st.scale == 1.0, st.shift == 0.0) {
        (true, true) => normalise::<L, M, false, false>(l, row, gamma, beta, st),
        (true, false) => normalise::<L, M, false, true>(l, row, gamma, beta, st),
        (false, true) => normalise::<L, M, true, false>(l, row, gamma, beta, st),
        (false, false) => normalise::<L, M, true, true>(l, row, gamma, beta, st),
    }
}

/// `y = (((x s - mean) - shift) / sd) * gamma + beta` (`SCALED` false: `s = 1`, not
/// multiplied; `SHIFTED` false: `shift = +0`, not subtracted).
#[inline(always)]
fn normalise<L: Lanes, M: Mode, const SCALED: bool, const SHIFTED: bool>(
    l: L,
    row: &mut [f32],
    gamma: &[f32],
    beta: &[f32],
    st: Stats,
) {
    let mv = l.splat(st.mean);
    let cv = l.splat(st.shift);
    let sdv = l.splat(st.sd);
    let inv = l.splat(1.0 / st.sd);
    let sv = l.splat(st.scale);
    let w = L::WIDTH;
    for ((x, g), b) in row.chunks_mut(w).zip(gamma.chunks(w)).zip(beta.chunks(w)) {
        let v = l.load_partial(x, 0.0);
        let v = if SCALED { l.mul(v, sv) } else { v };
        let d = l.sub(v, mv);
        let d = if SHIFTED { l.sub(d, cv) } else { d };
        let z = if M::FAST {
            l.mul(d, inv)
        } else {
            l.div(d, sdv)
        };
        let y = M::madd(l, z, l.load_partial(g, 0.0), l.load_partial(b, 0.0));
        let y = if M::FAST { y } else { nan_where_nan(l, y, y) };
        l.store_partial(y, x);
    }
}

/// Layer normalisation of `row` in place. `gamma` and `beta` have the row's length (the
/// caller checks it).
pub struct LayerNormRow<'a> {
    /// The row, in place.
    pub row: &'a mut [f32],
    /// The scale of each entry.
    pub gamma: &'a [f32],
    /// The shift of each entry.
    pub beta: &'a [f32],
    /// Added to the variance.
    pub eps: f32,
}

impl LaneOp for LayerNormRow<'_> {
    type Output = ();
    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        debug_assert!(self.gamma.len() == self.row.len() && self.beta.len() == self.row.len());
        layer_norm_row::<L, M>(l, self.row, self.gamma, self.beta, self.eps)
    }
}

compiled_once_per_mode!(LayerNormRow<'_>);
