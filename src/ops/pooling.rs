//! The reductions of sentence embeddings: the mean of a set of rows (masked mean pooling) and
//! the L2 normalisation of a row, with exact mode's canonical sums.
//!
//! The mean of rows sums each column in the canonical order of DESIGN.md ("Reductions in exact
//! mode"), the rows taking the place of a row's elements: the `i`-th row given goes to partial
//! `i mod 16`, in increasing `i`, and the 16 partials are combined by the fixed tree
//! (`p[j] + p[j+8]` for `j < 8`, then 4, 2, 1). Rows that are not given (padding) take no
//! partial, so a sequence gives the same bits padded or packed. Each column's additions are
//! element-wise across the lanes, so the lane width changes no bit.
//!
//! L2 normalisation is sentence-transformers' `x / max(||x||, 1e-12)`, `||x||` the IEEE square
//! root of the canonical sum of squares. A finite row whose squares overflow is normalised at
//! a power-of-two scale (exact, as in `norm.rs`): its norm is then far above the `1e-12` floor,
//! and the result does not change with the scale.

use super::nan_where_nan;
use super::reduce::{PARTIALS, canonical_sum_of, max_abs};
use crate::lanes::{Exact, LaneOp, Lanes, Mode, Supported};

/// The floor of the norm a row is divided by (sentence-transformers' `F.normalize` eps).
pub const L2_EPS: f32 = 1e-12;

/// `dst[j] = (sum over the rows of row[j]) / count`, the sums in the canonical order; `dst`
/// all `+0` when there is no row. Every row has `dst`'s length (the caller checks it).
struct MeanOfRows<'a, I> {
    rows: I,
    dst: &'a mut [f32],
}

impl<'r, I: Iterator<Item = &'r [f32]>> LaneOp for MeanOfRows<'_, I> {
    type Output = ();
    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        let d = self.dst.len();
        let w = L::WIDTH;
        // Partial `r` of column `j` at `partials[r * d + j]`.
        let mut partials = vec![0f32; PARTIALS * d];
        let mut count = 0usize;
        for row in self.rows {
            let p = &mut partials[(count % PARTIALS) * d..][..d];
            for (p, x) in p.chunks_mut(w).zip(row.chunks(w)) {
                let s = l.add(l.load_partial(p, 0.0), l.load_partial(x, 0.0));
                l.store_partial(s, p);
            }
            count += 1;
        }
        if count == 0 {
            self.dst.fill(0.0);
            return;
        }
        // The fixed tree, every column at once: partial `j` += partial `j + half`.
        let mut half = PARTIALS / 2;
        while half > 0 {
            for j in 0..half {
                let (lo, hi) = partials.split_at_mut((j + half) * d);
                let (lo, hi) = (&mut lo[j * d..][..d], &hi[..d]);
                for (a, b) in lo.chunks_mut(w).zip(hi.chunks(w)) {
                    let s = l.add(l.load_partial(a, 0.0), l.load_partial(b, 0.0));
                    l.store_partial(s, a);
                }
            }
            half /= 2;
        }
        // Counts up to 2^24 are exact in `f32`.
        let n = l.splat(count as f32);
        for (y, s) in self.dst.chunks_mut(w).zip(partials[..d].chunks(w)) {
            let m = l.div(l.load_partial(s, 0.0), n);
            l.store_partial(nan_where_nan(l, m, m), y);
        }
    }
}

/// The mean of `rows` (each of `dst`'s length) into `dst`, in the canonical order, on `isa`;
/// all `+0` for no rows. The same bits in both modes: it runs as exact mode's (separate
/// operations, the exact floating-point environment).
pub fn mean_of_rows_on<'r>(isa: Supported, rows: impl Iterator<Item = &'r [f32]>, dst: &mut [f32]) {
    isa.dispatch::<Exact, _>(MeanOfRows { rows, dst })
}

/// `row / max(||row||, 1e-12)` in place.
struct L2NormalizeRow<'a> {
    row: &'a mut [f32],
}

impl LaneOp for L2NormalizeRow<'_> {
    type Output = ();
    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        let row = self.row;
        let squares = canonical_sum_of(l, row, |v| l.mul(v, v));
        let mut scale = None;
        let mut norm = squares.sqrt();
        if norm == f32::INFINITY {
            let big = max_abs(l, row);
            if big.is_finite() {
                // Squares that overflow: the largest magnitude brought into [1, 2) (into [2, 4)
                // from the top binade, whose `2^-127` would be subnormal).
                let s = f32::from_bits(((127 - exponent(big)).max(1) as u32) << 23);
                norm = canonical_sum_of(l, row, |v| {
                    let v = l.mul(v, l.splat(s));
                    l.mul(v, v)
                })
                .sqrt();
                scale = Some(s);
            }
        }
        // `norm < eps` is false for a NaN norm: it stays NaN and so does every output.
        let div = l.splat(if norm < L2_EPS { L2_EPS } else { norm });
        for x in row.chunks_mut(L::WIDTH) {
            let mut v = l.load_partial(x, 0.0);
            if let Some(s) = scale {
                v = l.mul(v, l.splat(s));
            }
            let y = l.div(v, div);
            l.store_partial(nan_where_nan(l, y, y), x);
        }
    }
}

/// The unbiased exponent of a finite `x > 0` in the normal range.
fn exponent(x: f32) -> i32 {
    ((x.to_bits() >> 23) & 0xFF) as i32 - 127
}

/// `row / max(||row||, 1e-12)` in place on `isa`, the squares summed in the canonical order;
/// the same bits in both modes (it runs as exact mode's).
pub fn l2_normalize_row_on(isa: Supported, row: &mut [f32]) {
    isa.dispatch::<Exact, _>(L2NormalizeRow { row })
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use crate::lanes::Isa;

    /// Rows of 3e38 (squares overflow) normalise as rows of 1 would.
    pub fn huge_rows_normalise_as_small_ones_on_every_isa() {
        for isa in Isa::available() {
            let isa = isa.supported().unwrap();
            let mut huge = vec![3e38f32; 9];
            let mut ones = vec![1f32; 9];
            l2_normalize_row_on(isa, &mut huge);
            l2_normalize_row_on(isa, &mut ones);
            assert_eq!(huge, ones);
            assert_eq!(ones[0], 1.0 / 3.0);
        }
    }

    /// A row of zeros stays zeros (the 1e-12 floor), a NaN makes every output canonical NaN.
    pub fn zero_rows_stay_zero_and_nan_rows_are_canonical_nan() {
        for isa in Isa::available() {
            let isa = isa.supported().unwrap();
            let mut z = vec![0f32; 5];
            l2_normalize_row_on(isa, &mut z);
            assert!(z.iter().all(|v| v.to_bits() == 0));
            let mut n = vec![1f32, f32::from_bits(0xFFC0_0001), 2.0];
            l2_normalize_row_on(isa, &mut n);
            assert!(
                n.iter().all(|v| v.to_bits() == 0x7FC0_0000),
                "{isa:?} {n:?}"
            );
        }
    }
}
