//! Packing: copying blocks of A and B, read through their ndarray strides, into the panel layout
//! the microkernel streams through.
//!
//! A panel of `p` rows and `kc` columns is stored k-major: `panel[k * p + i] = src[i, k]`. A
//! block of A (`mc x kc`) becomes `ceil(mc / MR)` panels of `MR` rows; a block of B (`kc x nc`)
//! is packed as its transpose, `ceil(nc / NR)` panels of `NR` columns. Rows of the last panel
//! past the end of the block are zeros: they feed lanes whose results are never written to C
//! (lanes are independent, so they cannot change the bits of real elements).
//!
//! Three cases, by layout: the `p` values of one `k` contiguous (C-order B, F-order A: one copy
//! per `k`), the `kc` values of one row contiguous (C-order A, F-order B, a transposed view
//! such as attention's `K^T`: strips of four rows through 4 x 4 register transposes, then a
//! pair, then a single row), and any other strides (element by element).

use ndarray::ArrayView2;

use std::collections::TryReserveError;

use crate::lanes::pages::{HUGE_PAGE_BYTES, advise_huge_pages};
use crate::lanes::{prefetch, transpose_strip};

/// Values at the start of each row of the next panel that packing prefetches.
const PREFETCH_ROW: usize = 64;

/// `f32` values in one 64-byte cache line.
pub(crate) const LINE: usize = 16;

/// Values before the first element of `v` that starts a 64-byte cache line (`0..LINE`).
pub(crate) fn line_offset(v: &[f32]) -> usize {
    v.as_ptr().addr().wrapping_neg() % 64 / size_of::<f32>()
}

/// `len` values of `v` from its first 64-byte line boundary, `v` grown with zeros to hold them.
///
/// Packed panels and tile buffers start on a cache line, so that a B step of 16 values (the
/// AVX2 panel) is one line and no 256-bit load of a panel straddles two. The allocator's
/// large blocks start 16 bytes into a page, where every other such load crossed a line, and
/// exact mode's microkernel (which keeps more instructions in flight per load than fast
/// mode's) lost to it on Zen 3 (BENCHMARKS.md, "Choices in the code").
///
/// A buffer that must grow is allocated anew by [`reserve_advised`] (its old values copied):
/// at 2 MiB or more (the GEMM's packed B and A of a round, kept by the thread for its next
/// call) on transparent huge pages.
pub(crate) fn line_aligned(v: &mut Vec<f32>, len: usize) -> &mut [f32] {
    let need = len + LINE - 1;
    if v.capacity() < need && reserve_advised(v, need).is_err() {
        // Aborts, as any `Vec` that cannot grow (the callers' buffers are infallible).
        v.reserve_exact(need - v.len());
    }
    if v.len() < need {
        v.resize(need, 0.0);
    }
    let at = line_offset(v);
    &mut v[at..at + len]
}

/// `v` moved to an allocation of `need` values, its whole 2 MiB pages advised as transparent
/// huge pages ([`advise_huge_pages`]) before anything is written there (a buffer under 2 MiB
/// holds none), then its values copied. Packed weights and the GEMM's retained buffers are
/// read from the L3 cache and memory panel after panel, call after call: with 4 KiB pages
/// every 64 lines of B cost a TLB entry and restart the prefetchers. The parts before the
/// first and after the last huge page boundary stay on small pages, so nothing is allocated
/// past `need`.
fn reserve_advised(v: &mut Vec<f32>, need: usize) -> Result<(), TryReserveError> {
    let mut grown = Vec::new();
    grown.try_reserve_exact(need)?;
    if need * size_of::<f32>() >= HUGE_PAGE_BYTES {
        advise_huge_pages(grown.spare_capacity_mut());
    }
    grown.extend_from_slice(v);
    *v = grown;
    Ok(())
}

/// A buffer of `len` zeros for packed panels that stay (a [`super::PackedMatrix`]), and the
/// index of its first value, on a cache line ([`line_aligned`]; on huge pages from 2 MiB).
///
/// An allocation that fails is an error, not a panic.
pub(crate) fn panel_buffer(len: usize) -> Result<(Vec<f32>, usize), TryReserveError> {
    let mut data = Vec::new();
    reserve_advised(&mut data, len + LINE - 1)?;
    line_aligned(&mut data, len);
    let at = line_offset(&data);
    Ok((data, at))
}

/// Packs `src` (`r x kc`) into `ceil(r / p)` consecutive panels of `p` rows at the start of
/// `dst`, zero-padding the last panel. Returns the number of values written.
///
/// `p` is a panel height of one of the microkernels (`MR`, or `NR` for B); each gets its own
/// copy of the loops with `p` a constant.
pub(crate) fn pack_panels(src: ArrayView2<'_, f32>, p: usize, dst: &mut [f32]) -> usize {
    match p {
        // MR of the microkernels (4, 6, 8, 14), then NR (scalar 4, SSE2 8, NEON 12, AVX2 16,
        // AVX-512 32 and 96).
        4 => pack::<4>(src, dst),
        6 => pack::<6>(src, dst),
        8 => pack::<8>(src, dst),
        12 => pack::<12>(src, dst),
        14 => pack::<14>(src, dst),
        16 => pack::<16>(src, dst),
        32 => pack::<32>(src, dst),
        96 => pack::<96>(src, dst),
        _ => pack_any(src, p, dst),
    }
}

#[inline(always)]
fn pack<const P: usize>(src: ArrayView2<'_, f32>, dst: &mut [f32]) -> usize {
    let (r, kc) = src.dim();
    let panel_len = kc * P;
    let len = r.div_ceil(P) * panel_len;
    let dst = &mut dst[..len];
    if len == 0 {
        return 0;
    }
    if r % P != 0 {
        dst[len - panel_len..].fill(0.0);
    }
    if src.strides()[0] == 1 && r > 1 {
        // The `r` values of each `k` are contiguous: one copy per panel and `k`.
        for (k, col) in src.columns().into_iter().enumerate() {
            let Some(col) = col.to_slice() else {
                return pack_any(src, P, dst);
            };
            let (whole, part) = col.as_chunks::<P>();
            for (q, v) in whole.iter().enumerate() {
                let at = q * panel_len + k * P;
                dst[at..at + P].copy_from_slice(v);
            }
            if !part.is_empty() {
                let at = whole.len() * panel_len + k * P;
                dst[at..at + part.len()].copy_from_slice(part);
            }
        }
        len
    } else if src.strides()[1] == 1 || kc == 1 {
        // Rows of `kc` contiguous values: `P` rows at a time, written `k` by `k`.
        let mut rows = src.rows().into_iter();
        let mut ahead = src.rows().into_iter().skip(P);
        for panel in dst.chunks_exact_mut(panel_len) {
            // The start of the next panel's rows (up to four cache lines each: all of a short
            // row such as attention's keys; the hardware follows a long one), fetched while
            // this one is transposed.
            for row in (&mut ahead).take(P) {
                if let Some(row) = row.to_slice() {
                    prefetch(&row[..row.len().min(PREFETCH_ROW)]);
                }
            }
            let mut these: [&[f32]; P] = [&[]; P];
            let mut h = 0;
            for (slot, row) in these.iter_mut().zip(&mut rows) {
                let Some(row) = row.to_slice() else {
                    return pack_any(src, P, dst);
                };
                *slot = row;
                h += 1;
            }
            // Strips of four rows (4 x 4 register transposes), then a pair (the last two rows
            // of a 6-row A panel), then a single row. The rows of a last, partial panel past
            // `h` keep the zeros written above.
            let mut i = 0;
            while i < h {
                let (rows, out) = (&these[i..], &mut panel[i..]);
                i += match h - i {
                    4.. => {
                        transpose_strip([rows[0], rows[1], rows[2], rows[3]], kc, out, P);
                        4
                    }
                    2 | 3 => {
                        transpose_strip([rows[0], rows[1]], kc, out, P);
                        2
                    }
                    _ => {
                        transpose_strip([rows[0]], kc, out, P);
                        1
                    }
                };
            }
        }
        len
    } else {
        pack_any(src, P, dst)
    }
}

/// Any `p` and any strides, element by element.
fn pack_any(src: ArrayView2<'_, f32>, p: usize, dst: &mut [f32]) -> usize {
    let (r, kc) = src.dim();
    let panel_len = kc * p;
    let len = r.div_ceil(p) * panel_len;
    let dst = &mut dst[..len];
    if r % p != 0 {
        dst[len - panel_len..].fill(0.0);
    }
    for ((i, k), &x) in src.indexed_iter() {
        dst[(i / p) * panel_len + k * p + i % p] = x;
    }
    len
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::pack_panels;
    use ndarray::{Array2, ShapeBuilder, s};

    /// The layout, written out: `panel q, k, i` holds `src[q*p + i, k]` or zero.
    fn expected(src: &Array2<f32>, p: usize) -> Vec<f32> {
        let (r, kc) = src.dim();
        let mut out = Vec::new();
        for q in 0..r.div_ceil(p) {
            for k in 0..kc {
                for i in 0..p {
                    out.push(src.get((q * p + i, k)).copied().unwrap_or(0.0));
                }
            }
        }
        out
    }

    pub fn every_layout_packs_the_same() {
        for (r, kc) in [
            (1, 1),
            (5, 3),
            (6, 7),
            (13, 1),
            (1, 9),
            (16, 16),
            (200, 5),
            (0, 4),
            (3, 0),
        ] {
            let c: Array2<f32> = Array2::from_shape_fn((r, kc), |(i, k)| (i * 100 + k + 1) as f32);
            let f = {
                let mut f = Array2::zeros((r, kc).f());
                f.assign(&c);
                f
            };
            let big = Array2::from_shape_fn((2 * r + 1, 3 * kc + 1), |(i, k)| {
                if i % 2 == 0 && k % 3 == 0 {
                    ((i / 2) * 100 + k / 3 + 1) as f32
                } else {
                    f32::NAN
                }
            });
            let strided = big.slice(s![..2 * r;2, ..3 * kc;3]);
            let reversed = c.slice(s![..;-1, ..]).to_owned();
            for p in [1, 2, 3, 4, 6, 8, 14, 16, 32, 96] {
                let want = expected(&c, p);
                for v in [c.view(), f.view(), strided, c.t().t()] {
                    let mut dst = vec![f32::NAN; want.len() + 3];
                    assert_eq!(pack_panels(v, p, &mut dst), want.len());
                    assert_eq!(
                        dst[..want.len()]
                            .iter()
                            .map(|x| x.to_bits())
                            .collect::<Vec<_>>(),
                        want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                        "r={r} kc={kc} p={p} strides={:?}",
                        v.strides()
                    );
                }
                let rev = reversed.slice(s![..;-1, ..]);
                let mut dst = vec![f32::NAN; want.len()];
                pack_panels(rev, p, &mut dst);
                assert_eq!(dst, want);
            }
        }
    }
}
