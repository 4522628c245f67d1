//! Transposing strips of rows, for the GEMM's packing: the one data movement of the crate that
//! is not along a row. A pure copy (no arithmetic), so its instruction set never changes a
//! bit; it uses the 128-bit SSE registers every x86-64 CPU has, and plain loops elsewhere.

/// Writes `rows[i][k]` to `dst[k * stride + i]` for the `R` rows `i` and every `k < kc`: `R`
/// rows of a matrix become `kc` groups of `R` consecutive values, `stride` apart. Four rows go
/// through 4 x 4 register transposes, two through pairs of 64-bit stores; any other count one
/// value at a time.
///
/// Panics if a row is shorter than `kc`, if `stride < R`, or if `dst` is too short (shorter
/// than `(kc - 1) * stride + R`): the callers size both, so any of these is a bug of the crate.
pub(crate) fn transpose_strip<const R: usize>(
    rows: [&[f32]; R],
    kc: usize,
    dst: &mut [f32],
    stride: usize,
) {
    if kc == 0 {
        return;
    }
    assert!(stride >= R, "transpose_strip: stride {stride} < {R} rows");
    assert!(
        rows.iter().all(|r| r.len() >= kc),
        "transpose_strip: a row is shorter than {kc}"
    );
    assert!(
        dst.len() >= (kc - 1) * stride + R,
        "transpose_strip: destination too short"
    );
    // The columns in whole groups of four go through registers; the rest one value at a time.
    #[cfg(target_arch = "x86_64")]
    let done = match R {
        4 => sse::transpose4_blocks(&rows, kc - kc % 4, dst, stride),
        2 => sse::transpose2_blocks(&rows, kc - kc % 4, dst, stride),
        _ => 0,
    };
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    for k in done..kc {
        for (i, row) in rows.iter().enumerate() {
            dst[k * stride + i] = row[k];
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod sse {
    use core::arch::x86_64::{
        _mm_castps_pd, _mm_loadu_ps, _mm_movehl_ps, _mm_movelh_ps, _mm_storeh_pd, _mm_storel_pd,
        _mm_storeu_ps, _mm_unpackhi_ps, _mm_unpacklo_ps,
    };

    /// The columns `0..whole` (`whole` a multiple of 4) of [`super::transpose_strip`] for two
    /// rows: four columns per step, stored as four pairs. The caller checked every length.
    /// Returns `whole`, the columns done.
    #[inline]
    pub(super) fn transpose2_blocks(
        rows: &[&[f32]],
        whole: usize,
        dst: &mut [f32],
        stride: usize,
    ) -> usize {
        debug_assert!(whole.is_multiple_of(4) && rows.len() == 2);
        let (r0, r1) = (rows[0], rows[1]);
        let out = dst.as_mut_ptr();
        for k in (0..whole).step_by(4) {
            // SAFETY: SSE is part of the x86-64 baseline. Both rows hold at least `whole`
            // values (checked by the caller), so the loads at `k <= whole - 4` are in bounds;
            // each store writes the two values at `dst[(k + t) * stride ..]` for `t < 4`, inside
            // `dst` because `dst.len() >= (kc - 1) * stride + 2` and `k + t <= kc - 1`.
            unsafe {
                let a = _mm_loadu_ps(r0.as_ptr().add(k));
                let b = _mm_loadu_ps(r1.as_ptr().add(k));
                // Each pair moves as one 64-bit lane (`movlpd`/`movhpd`: no alignment needed).
                let lo = _mm_castps_pd(_mm_unpacklo_ps(a, b)); // (a0 b0) (a1 b1)
                let hi = _mm_castps_pd(_mm_unpackhi_ps(a, b)); // (a2 b2) (a3 b3)
                _mm_storel_pd(out.add(k * stride).cast::<f64>(), lo);
                _mm_storeh_pd(out.add((k + 1) * stride).cast::<f64>(), lo);
                _mm_storel_pd(out.add((k + 2) * stride).cast::<f64>(), hi);
                _mm_storeh_pd(out.add((k + 3) * stride).cast::<f64>(), hi);
            }
        }
        whole
    }

    /// The columns `0..whole` (`whole` a multiple of 4) of [`super::transpose_strip`] for four
    /// rows, as 4 x 4 blocks in SSE registers. The caller checked every length. Returns
    /// `whole`, the columns done.
    #[inline]
    pub(super) fn transpose4_blocks(
        rows: &[&[f32]],
        whole: usize,
        dst: &mut [f32],
        stride: usize,
    ) -> usize {
        debug_assert!(whole.is_multiple_of(4) && rows.len() == 4);
        let (r0, r1, r2, r3) = (rows[0], rows[1], rows[2], rows[3]);
        let out = dst.as_mut_ptr();
        for k in (0..whole).step_by(4) {
            // SAFETY: SSE is part of the x86-64 baseline. Every row holds at least `whole`
            // values (checked by the caller), so the four loads at `k <= whole - 4` are in
            // bounds; the stores go to `dst[(k + t) * stride .. + 4]` for `t < 4`, inside `dst`
            // because `dst.len() >= (kc - 1) * stride + 4` and `k + t <= kc - 1`.
            unsafe {
                let a = _mm_loadu_ps(r0.as_ptr().add(k));
                let b = _mm_loadu_ps(r1.as_ptr().add(k));
                let c = _mm_loadu_ps(r2.as_ptr().add(k));
                let d = _mm_loadu_ps(r3.as_ptr().add(k));
                let ab_lo = _mm_unpacklo_ps(a, b); // a0 b0 a1 b1
                let cd_lo = _mm_unpacklo_ps(c, d); // c0 d0 c1 d1
                let ab_hi = _mm_unpackhi_ps(a, b); // a2 b2 a3 b3
                let cd_hi = _mm_unpackhi_ps(c, d); // c2 d2 c3 d3
                _mm_storeu_ps(out.add(k * stride), _mm_movelh_ps(ab_lo, cd_lo));
                _mm_storeu_ps(out.add((k + 1) * stride), _mm_movehl_ps(cd_lo, ab_lo));
                _mm_storeu_ps(out.add((k + 2) * stride), _mm_movelh_ps(ab_hi, cd_hi));
                _mm_storeu_ps(out.add((k + 3) * stride), _mm_movehl_ps(cd_hi, ab_hi));
            }
        }
        whole
    }
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::transpose_strip;

    /// `R` rows of `kc + 2` values into a destination `stride` apart, every other value
    /// untouched.
    fn check<const R: usize>() {
        for kc in 0..=13 {
            for stride in [R, R + 2, 16] {
                let rows: Vec<Vec<f32>> = (0..R)
                    .map(|i| (0..kc + 2).map(|k| (i * 100 + k) as f32).collect())
                    .collect();
                let rows: [&[f32]; R] = core::array::from_fn(|i| &rows[i][..]);
                let len = if kc == 0 { 0 } else { (kc - 1) * stride + R };
                let mut dst = vec![-1.0f32; len + 5];
                transpose_strip(rows, kc, &mut dst, stride);
                for (at, &x) in dst.iter().enumerate() {
                    let (k, i) = (at / stride, at % stride);
                    let want = if k < kc && i < R {
                        (i * 100 + k) as f32
                    } else {
                        -1.0
                    };
                    assert_eq!(x, want, "rows={R} kc={kc} stride={stride} at={at}");
                }
            }
        }
    }

    pub fn every_row_count_length_and_stride_transposes() {
        check::<1>();
        check::<2>();
        check::<3>();
        check::<4>();
    }
}
