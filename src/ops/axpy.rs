//! A row continued by a sequence of scaled rows: `acc = madd(c[k], rows[k], acc)` for `k`
//! increasing, vectorised across the row. Each element of `acc` is one lane through the whole
//! sequence, so an exact sum continued here has the bits of the same sequential sum written as
//! one loop (and of the GEMM, whose exact partial sums it continues).

use super::nan::canonical_nan_lanes;
use crate::lanes::{Lanes, Supported, WithLanes};
use crate::mode::{Mode, compiled_once_per_mode};

/// `acc[j] = M::madd(coeffs[k], rows[k][j], acc[j])` for `k = 0, 1, ...` in order (exact: the
/// product rounded, then the sum; fast: one fused multiply-add). Every row holds at least
/// `acc.len()` values.
#[inline(always)]
pub fn madd_rows<L: Lanes, M: Mode>(l: L, acc: &mut [f32], coeffs: &[f32], rows: &[&[f32]]) {
    let w = L::WIDTH;
    let mut j0 = 0;
    // Four registers of the row at a time, then one (or part of one).
    while j0 + 4 * w <= acc.len() {
        let mut a = [l.splat(0.0); 4];
        for (v, a) in a.iter_mut().enumerate() {
            *a = l.load(&acc[j0 + v * w..]);
        }
        for (&c, row) in coeffs.iter().zip(rows) {
            let c = l.splat(c);
            let row = &row[j0..j0 + 4 * w];
            for (v, a) in a.iter_mut().enumerate() {
                *a = M::madd(l, c, l.load(&row[v * w..]), *a);
            }
        }
        for (v, a) in a.iter().enumerate() {
            l.store(*a, &mut acc[j0 + v * w..]);
        }
        j0 += 4 * w;
    }
    while j0 < acc.len() {
        let j1 = (j0 + w).min(acc.len());
        let mut a = l.load_partial(&acc[j0..j1], 0.0);
        for (&c, row) in coeffs.iter().zip(rows) {
            a = M::madd(l, l.splat(c), l.load_partial(&row[j0..j1], 0.0), a);
        }
        l.store_partial(a, &mut acc[j0..j1]);
        j0 = j1;
    }
}

struct MaddRows<'a, M> {
    acc: &'a mut [f32],
    coeffs: &'a [f32],
    rows: &'a [&'a [f32]],
    mode: core::marker::PhantomData<M>,
}

impl<M: Mode> WithLanes for MaddRows<'_, M> {
    type Output = ();
    const USES_FMA: bool = M::FAST;
    #[inline(always)]
    fn run<L: Lanes>(self, l: L) {
        madd_rows::<L, M>(l, self.acc, self.coeffs, self.rows);
        if !M::FAST {
            // Where exact mode stores a continued row: every NaN the canonical one.
            canonical_nan_lanes(l, self.acc);
        }
    }
}

compiled_once_per_mode! {
    /// [`madd_rows`] on `isa`; in exact mode every NaN of the result is the canonical one.
    pub(crate) fn madd_rows_on(
        isa: Supported,
        acc: &mut [f32],
        coeffs: &[f32],
        rows: &[&[f32]],
    ) = madd_rows_in_mode;
}

fn madd_rows_in_mode<M: Mode>(isa: Supported, acc: &mut [f32], coeffs: &[f32], rows: &[&[f32]]) {
    isa.dispatch(MaddRows::<M> {
        acc,
        coeffs,
        rows,
        mode: core::marker::PhantomData,
    })
}

#[cfg(test)]
mod tests {
    use super::madd_rows_on;
    use crate::lanes::Isa;
    use crate::mode::Exact;

    #[test]
    fn continues_the_sequential_sum_on_every_isa() {
        for isa in Isa::available() {
            let isa = isa.supported().unwrap();
            for n in [1, 3, 8, 33, 64, 70] {
                let rows: Vec<Vec<f32>> = (0..9)
                    .map(|k| {
                        (0..n)
                            .map(|j| ((k * 31 + j * 7) % 17) as f32 / 3.0 - 2.5)
                            .collect()
                    })
                    .collect();
                let coeffs: Vec<f32> = (0..9).map(|k| 1.0 / (k as f32 + 1.5)).collect();
                let mut acc: Vec<f32> = (0..n).map(|j| j as f32 * 0.1).collect();
                let mut want = acc.clone();
                for (c, row) in coeffs.iter().zip(&rows) {
                    for (w, &x) in want.iter_mut().zip(row) {
                        *w += c * x;
                    }
                }
                let refs: Vec<&[f32]> = rows.iter().map(|r| &r[..]).collect();
                madd_rows_on::<Exact>(isa, &mut acc, &coeffs, &refs);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&acc), bits(&want), "{isa:?} n={n}");
            }
        }
    }
}
