//! The ragged product: `out = P R` where row `r` of `P` sums over its own first `lens[r]` rows
//! of `R` (attention's `P V` under a causal mask or key lengths). Register-blocked: a few rows
//! of `out` at a time share each load of a row of `R`, `acc = madd(p[k], R[k], acc)` for `k`
//! increasing, vectorised across the row. Each element of `out` is one lane through the whole
//! sequence, so an exact sum here has the bits of the same sequential sum written as one loop
//! (the GEMM's and the GEMV's bits for rows of full length).

use crate::lanes::{LaneOp, Lanes, Mode, compiled_once_per_mode, prefetch};
use crate::ops::nan::canonical_nan_lanes;

/// How many rows ahead a row alone ([`madd_rows`]) prefetches the rows it sums. A decode
/// step's value rows come from L3 or memory and each takes a few cycles to sum, so a row must
/// be asked for a memory access ahead: at 16 rows most of the loop's samples sat on the
/// prefetch itself, waiting for the miss queue (BENCHMARKS.md, "Choices in the code").
const ALONE_PREFETCH_ROWS: usize = 32;

/// `acc[j] = M::madd(coeffs[k], rows[k][j], acc[j])` for `k = 0, 1, ...` in order (exact: the
/// product rounded, then the sum; fast: one fused multiply-add), over the keys that have both a
/// coefficient and a row. Every row holds at least `acc.len()` values. One row of
/// [`madd_row_group`].
#[inline(always)]
pub fn madd_rows<L: Lanes, M: Mode>(l: L, acc: &mut [f32], coeffs: &[f32], rows: &[&[f32]]) {
    let n = coeffs.len().min(rows.len());
    madd_row_group::<L, M, 1, 4>(l, acc, acc.len(), &coeffs[..n], 0, &rows[..n]);
}

/// `R` rows continued by the same sequence of rows, each with its own coefficients:
/// `acc_r[j] = M::madd(p_r[k], rows[k][j], acc_r[j])` for `k` increasing, with `acc_r` row `r`
/// of `acc` (`cols` values per row) and `p_r` the `rows.len()` values at `p[r * ldp..]`. Each
/// element is one lane through its whole sequence, so the bits are those of `R` calls of
/// [`madd_rows`]; the `R` rows share each load of `rows[k]` and their chains overlap.
#[inline(always)]
fn madd_row_group<L: Lanes, M: Mode, const R: usize, const NV: usize>(
    l: L,
    acc: &mut [f32],
    cols: usize,
    p: &[f32],
    ldp: usize,
    rows: &[&[f32]],
) {
    let w = L::WIDTH;
    let n = rows.len();
    let coeffs: [&[f32]; R] = core::array::from_fn(|r| &p[r * ldp..r * ldp + n]);
    let mut j0 = 0;
    // `NV` registers of each row at a time, then one (or part of one).
    while j0 + NV * w <= cols {
        let mut a = [[l.splat(0.0); NV]; R];
        for (r, a) in a.iter_mut().enumerate() {
            for (v, a) in a.iter_mut().enumerate() {
                *a = l.load(&acc[r * cols + j0 + v * w..]);
            }
        }
        for (k, row) in rows.iter().enumerate() {
            // A row alone over many keys is a decode step's `P V`: its value rows come from L3
            // or memory, not from the cache a block of query rows shares them in.
            if R == 1
                && let Some(next) = rows.get(k + ALONE_PREFETCH_ROWS)
            {
                prefetch(&next[j0..j0 + NV * w]);
            }
            let row = &row[j0..j0 + NV * w];
            let mut x = [l.splat(0.0); NV];
            for (v, x) in x.iter_mut().enumerate() {
                *x = l.load(&row[v * w..]);
            }
            for (a, c) in a.iter_mut().zip(&coeffs) {
                for (a, &x) in a.iter_mut().zip(&x) {
                    *a = M::madd_splat(l, &c[k], x, *a);
                }
            }
        }
        for (r, a) in a.iter().enumerate() {
            for (v, &a) in a.iter().enumerate() {
                l.store(a, &mut acc[r * cols + j0 + v * w..]);
            }
        }
        j0 += NV * w;
    }
    while j0 < cols {
        let j1 = (j0 + w).min(cols);
        let mut a = [l.splat(0.0); R];
        for (r, a) in a.iter_mut().enumerate() {
            *a = l.load_partial(&acc[r * cols + j0..r * cols + j1], 0.0);
        }
        for (k, row) in rows.iter().enumerate() {
            let x = l.load_partial(&row[j0..j1], 0.0);
            for (a, c) in a.iter_mut().zip(&coeffs) {
                *a = M::madd_splat(l, &c[k], x, *a);
            }
        }
        for (r, &a) in a.iter().enumerate() {
            l.store_partial(a, &mut acc[r * cols + j0..r * cols + j1]);
        }
        j0 = j1;
    }
}

/// Rows of a product in which row `i` has its own length: `out_i = sum over k < lens[i] of
/// p_i[k] * rows[k]`, each sum in increasing `k` from `+0` (`M::madd`: in exact mode the product
/// rounded, then the sum), with `out_i` row `i` of `out` (`cols` values per row) and `p_i` the
/// values at `p[i * ldp..]`. The bits of one sequential sum per row, the same on every lane
/// width: a key past a row's length never enters its sum (whatever it holds, inf or NaN).
///
/// Rows go four at a time over the keys all four see, then each continues alone over the rest
/// of its own: with lengths that grow by one per row (a causal block of attention), that rest
/// is at most three keys.
///
/// `continued`: `out` already holds each row's sum over earlier keys (a GEMM's, which sums the
/// same way), and the rows continue from it; else they start from `+0`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn ragged_row_products<L: Lanes, M: Mode>(
    l: L,
    out: &mut [f32],
    cols: usize,
    p: &[f32],
    ldp: usize,
    lens: &[usize],
    rows: &[&[f32]],
    continued: bool,
) {
    const R: usize = 4;
    if !continued {
        out.fill(0.0);
    }
    if cols == 0 {
        return;
    }
    let mut i = 0;
    while i < lens.len() {
        let group = R.min(lens.len() - i);
        let common = if group == R {
            let common = lens[i..i + R].iter().copied().min().unwrap_or(0);
            let acc = &mut out[i * cols..(i + R) * cols];
            // Columns of AVX-512 and AVX2 registers (and SSE2's) that the accumulators of four
            // rows, the loaded row and a coefficient fit in the register file with.
            if L::WIDTH >= 16 {
                madd_row_group::<L, M, R, 4>(l, acc, cols, &p[i * ldp..], ldp, &rows[..common]);
            } else {
                madd_row_group::<L, M, R, 2>(l, acc, cols, &p[i * ldp..], ldp, &rows[..common]);
            }
            common
        } else {
            0
        };
        for r in i..i + group {
            if lens[r] > common {
                let coeffs = &p[r * ldp + common..r * ldp + lens[r]];
                madd_rows::<L, M>(
                    l,
                    &mut out[r * cols..(r + 1) * cols],
                    coeffs,
                    &rows[common..lens[r]],
                );
            }
        }
        i += group;
    }
}

/// [`ragged_row_products`]; in exact mode every NaN of the result is the canonical one.
pub(crate) struct RaggedProduct<'a> {
    /// The result: rows of `cols`.
    pub out: &'a mut [f32],
    /// Values per row of `out`.
    pub cols: usize,
    /// The coefficients: row `r` at `p[r * ldp..]`.
    pub p: &'a [f32],
    /// The distance between rows of `p`.
    pub ldp: usize,
    /// How many of `rows` row `r` of `out` sums.
    pub lens: &'a [usize],
    /// The rows summed.
    pub rows: &'a [&'a [f32]],
    /// `out` holds sums over earlier keys that the rows continue (else they start from `+0`).
    pub continued: bool,
}

impl LaneOp for RaggedProduct<'_> {
    type Output = ();
    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        ragged_row_products::<L, M>(
            l,
            self.out,
            self.cols,
            self.p,
            self.ldp,
            self.lens,
            self.rows,
            self.continued,
        );
        if !M::FAST {
            canonical_nan_lanes(l, self.out);
        }
    }
}

compiled_once_per_mode!(RaggedProduct<'_>);

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::RaggedProduct;
    use crate::lanes::Isa;
    use crate::lanes::{Exact, Fast, Mode};

    /// Every row the sequential sum over its own keys from `+0`, written as one loop (exact:
    /// the product rounded, then the sum; fast: one fused multiply-add), on every instruction
    /// set: rows in groups of four and alone, lengths equal, growing (causal), falling, zero;
    /// row widths of whole, several and partial registers. The keys past a row's length hold
    /// infinities and NaNs, which must not reach it.
    pub fn each_row_is_its_own_sequential_sum_on_every_isa() {
        fn check<M: Mode>(madd: fn(f32, f32, f32) -> f32) {
            let keys = 12;
            for isa in Isa::available() {
                let isa = isa.supported().unwrap();
                for cols in [1, 3, 8, 33, 64, 70] {
                    let mut rows: Vec<Vec<f32>> = (0..keys)
                        .map(|k| {
                            (0..cols)
                                .map(|j| ((k * 31 + j * 7) % 17) as f32 / 3.0 - 2.5)
                                .collect()
                        })
                        .collect();
                    for nrows in [1, 4, 6, 9] {
                        let shapes: [Vec<usize>; 4] = [
                            vec![keys - 3; nrows],
                            (0..nrows).map(|i| (i + 1).min(keys - 1)).collect(),
                            (0..nrows).map(|i| keys - 1 - i.min(keys - 1)).collect(),
                            (0..nrows)
                                .map(|i| if i % 3 == 1 { 0 } else { 5 + i % 4 })
                                .collect(),
                        ];
                        for lens in shapes {
                            // The last key, seen by no row, holds what must never show.
                            rows[keys - 1] = (0..cols)
                                .map(|j| if j % 2 == 0 { f32::INFINITY } else { f32::NAN })
                                .collect();
                            let ldp = keys + 2;
                            let p: Vec<f32> = (0..nrows * ldp)
                                .map(|i| 1.0 / (i % 23) as f32 - 0.3)
                                .collect();
                            let mut want = vec![0f32; nrows * cols];
                            for (i, &len) in lens.iter().enumerate() {
                                for (k, row) in rows[..len].iter().enumerate() {
                                    for (w, &x) in
                                        want[i * cols..(i + 1) * cols].iter_mut().zip(row)
                                    {
                                        *w = madd(p[i * ldp + k], x, *w);
                                    }
                                }
                            }
                            let refs: Vec<&[f32]> = rows.iter().map(|r| &r[..]).collect();
                            let mut got = vec![f32::NAN; nrows * cols];
                            let (out, lens, rows) = (&mut got[..], &lens[..], &refs[..]);
                            RaggedProduct {
                                out,
                                cols,
                                p: &p,
                                ldp,
                                lens,
                                rows,
                                continued: false,
                            }
                            .dispatch::<M>(isa);
                            let bits =
                                |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                            assert_eq!(
                                bits(&got),
                                bits(&want),
                                "{:?} cols {cols} lens {lens:?}",
                                isa.isa()
                            );
                        }
                    }
                }
            }
        }
        check::<Exact>(|a, b, c| a * b + c);
        check::<Fast>(f32::mul_add);
    }
}
