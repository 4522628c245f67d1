//! Transposing strips of four (or two) rows, for the GEMM's packing: the one data movement of the crate
//! that is not along a row. A pure copy (no arithmetic), so its instruction set never changes a
//! bit; it uses the 128-bit SSE registers every x86-64 CPU has, and plain loops elsewhere.

/// Writes `rows[i][k]` to `dst[k * stride + i]` for the four rows `i` and every `k < kc`: four
/// rows of a matrix become `kc` groups of four consecutive values, `stride` apart.
///
/// Panics if a row is shorter than `kc`, if `stride < 4`, or if `dst` is too short (shorter
/// than `(kc - 1) * stride + 4`): the callers size both, so any of these is a bug of the crate.
pub(crate) fn transpose4_strip(rows: [&[f32]; 4], kc: usize, dst: &mut [f32], stride: usize) {
    if kc == 0 {
        return;
    }
    assert!(stride >= 4, "transpose4_strip: stride {stride} < 4");
    assert!(
        rows.iter().all(|r| r.len() >= kc),
        "transpose4_strip: a row is shorter than {kc}"
    );
    assert!(
        dst.len() >= (kc - 1) * stride + 4,
        "transpose4_strip: destination too short"
    );
    let whole = kc - kc % 4;
    #[cfg(target_arch = "x86_64")]
    sse::transpose4_blocks(rows, whole, dst, stride);
    #[cfg(not(target_arch = "x86_64"))]
    scalar_columns(rows, 0..whole, dst, stride);
    scalar_columns(rows, whole..kc, dst, stride);
}

/// [`transpose4_strip`] for two rows: `rows[i][k]` to `dst[k * stride + i]`, `i < 2`.
///
/// Panics if a row is shorter than `kc`, if `stride < 2`, or if `dst` is shorter than
/// `(kc - 1) * stride + 2`.
pub(crate) fn transpose2_strip(rows: [&[f32]; 2], kc: usize, dst: &mut [f32], stride: usize) {
    if kc == 0 {
        return;
    }
    assert!(stride >= 2, "transpose2_strip: stride {stride} < 2");
    assert!(
        rows.iter().all(|r| r.len() >= kc),
        "transpose2_strip: a row is shorter than {kc}"
    );
    assert!(
        dst.len() >= (kc - 1) * stride + 2,
        "transpose2_strip: destination too short"
    );
    let whole = kc - kc % 4;
    #[cfg(target_arch = "x86_64")]
    sse::transpose2_blocks(rows, whole, dst, stride);
    #[cfg(not(target_arch = "x86_64"))]
    pairs(rows, 0..whole, dst, stride);
    pairs(rows, whole..kc, dst, stride);
}

/// The columns `ks` of [`transpose2_strip`], one pair at a time.
fn pairs(rows: [&[f32]; 2], ks: core::ops::Range<usize>, dst: &mut [f32], stride: usize) {
    for k in ks {
        dst[k * stride] = rows[0][k];
        dst[k * stride + 1] = rows[1][k];
    }
}

/// Asks the CPU to bring `data` into the cache ahead of its use (a hint: no effect on any
/// value, and none at all off x86-64).
pub(crate) fn prefetch(data: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    for line in data.chunks(16) {
        // SAFETY: SSE is part of the x86-64 baseline; a prefetch reads nothing and never
        // faults, and the address is inside `data`.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                line.as_ptr().cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}

/// The columns `ks` of [`transpose4_strip`], one value at a time.
fn scalar_columns(rows: [&[f32]; 4], ks: core::ops::Range<usize>, dst: &mut [f32], stride: usize) {
    for k in ks {
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

    /// The columns `0..whole` (`whole` a multiple of 4) of [`super::transpose2_strip`]: four
    /// columns of the two rows per step, stored as four pairs. The caller checked every length.
    #[inline]
    pub(super) fn transpose2_blocks(
        rows: [&[f32]; 2],
        whole: usize,
        dst: &mut [f32],
        stride: usize,
    ) {
        debug_assert!(whole.is_multiple_of(4));
        let [r0, r1] = rows;
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
    }

    /// The columns `0..whole` (`whole` a multiple of 4) of [`super::transpose4_strip`], as
    /// 4 x 4 blocks in SSE registers. The caller checked every length.
    #[inline]
    pub(super) fn transpose4_blocks(
        rows: [&[f32]; 4],
        whole: usize,
        dst: &mut [f32],
        stride: usize,
    ) {
        debug_assert!(whole.is_multiple_of(4));
        let [r0, r1, r2, r3] = rows;
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
    }
}

#[cfg(test)]
mod tests {
    use super::{transpose2_strip, transpose4_strip};

    #[test]
    fn two_rows_transpose_at_every_length_and_stride() {
        for kc in 0..=13 {
            for stride in [2, 6, 14] {
                let rows: Vec<Vec<f32>> = (0..2)
                    .map(|i| (0..kc + 2).map(|k| (i * 100 + k) as f32).collect())
                    .collect();
                let len = if kc == 0 { 0 } else { (kc - 1) * stride + 2 };
                let mut dst = vec![-1.0f32; len + 5];
                transpose2_strip([&rows[0], &rows[1]], kc, &mut dst, stride);
                for (at, &x) in dst.iter().enumerate() {
                    let (k, i) = (at / stride, at % stride);
                    let want = if k < kc && i < 2 {
                        (i * 100 + k) as f32
                    } else {
                        -1.0
                    };
                    assert_eq!(x, want, "kc={kc} stride={stride} at={at}");
                }
            }
        }
    }

    #[test]
    fn every_length_and_stride_transposes() {
        for kc in 0..=13 {
            for stride in [4, 6, 16] {
                let rows: Vec<Vec<f32>> = (0..4)
                    .map(|i| (0..kc + 2).map(|k| (i * 100 + k) as f32).collect())
                    .collect();
                let len = if kc == 0 { 0 } else { (kc - 1) * stride + 4 };
                let mut dst = vec![-1.0f32; len + 5];
                transpose4_strip(
                    [&rows[0], &rows[1], &rows[2], &rows[3]],
                    kc,
                    &mut dst,
                    stride,
                );
                for (at, &x) in dst.iter().enumerate() {
                    let (k, i) = (at / stride, at % stride);
                    let want = if k < kc && i < 4 {
                        (i * 100 + k) as f32
                    } else {
                        -1.0
                    };
                    assert_eq!(x, want, "kc={kc} stride={stride} at={at}");
                }
            }
        }
    }
}
