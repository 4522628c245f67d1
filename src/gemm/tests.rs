//! The driver with every microkernel on every lane type and small block sizes, so that a few
//! small matrices cross every loop boundary (K blocks, K super-blocks, tiles, slabs, rounds,
//! edge microtiles). The 14-row kernel of AVX-512 runs here on the narrower lanes too.

use std::sync::atomic::{AtomicU32, Ordering};

use ndarray::{Array2, ArrayRef2, ArrayView2, ArrayViewMut2, ShapeBuilder, s};

use super::blocking::Blocking;
use super::driver::{self, Item};
use super::kernel::{MicroKernel, Mr4Nv4, Mr4Nv6, Mr6Nv2, Mr6Nv3, Mr8Nv3, Mr14Nv2};
use crate::epilogue::TileEpilogue;
use crate::lanes::{Exact, Fast, Mode};
use crate::lanes::{Isa, IsaSet};

/// Deterministic values of mixed signs and magnitudes.
fn values(r: usize, c: usize, seed: u64) -> Array2<f32> {
    Array2::from_shape_fn((r, c), |(i, j)| {
        let h = (i as u64 * 1_000_003 + j as u64 * 7919 + seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((h >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 3.0
    })
}

/// `c = +0; c = c + a*b` (exact) or `c = fma(a, b, c)` (fast), `k` increasing.
fn reference<M: Mode>(a: &Array2<f32>, b: &Array2<f32>) -> Array2<f32> {
    let (m, k) = a.dim();
    Array2::from_shape_fn((m, b.ncols()), |(i, j)| {
        let mut c = 0.0f32;
        for p in 0..k {
            c = if M::FAST {
                a[[i, p]].mul_add(b[[p, j]], c)
            } else {
                c + a[[i, p]] * b[[p, j]]
            };
        }
        c
    })
}

/// Counts the visits of every element and checks each tile against the finished product.
struct Audit<'a> {
    done: &'a Array2<f32>,
    visits: Vec<AtomicU32>,
    wrong: AtomicU32,
}

impl TileEpilogue for Audit<'_> {
    fn apply(&self, tile: &mut ArrayRef2<f32>, row: usize, col: usize) {
        let n = self.done.ncols();
        for ((i, j), x) in tile.indexed_iter_mut() {
            self.visits[(row + i) * n + col + j].fetch_add(1, Ordering::Relaxed);
            if x.to_bits() != self.done[[row + i, col + j]].to_bits() {
                self.wrong.fetch_add(1, Ordering::Relaxed);
            }
            *x = -*x;
        }
    }
}

fn check<M: Mode, K: MicroKernel>(
    isa: Isa,
    blk: Blocking,
    parallel: bool,
    m: usize,
    n: usize,
    k: usize,
) {
    let a = values(m, k, 1);
    let b = values(k, n, 2);
    let want = reference::<M>(&a, &b);
    // A transposed in memory and C in F order: A packed, C through the tile buffer.
    // `to_owned` of the transposed view would keep its (column-major) layout: A would lie
    // row-major again.
    let at = a.t().as_standard_layout().to_owned();
    assert!(m < 2 || k < 2 || !at.t().is_standard_layout());
    let mut c = Array2::from_elem((m, n).f(), f32::NAN);
    run_checked::<M, K>(isa, blk, parallel, at.t(), &b, c.view_mut(), &want);
    for ((i, j), x) in c.indexed_iter() {
        assert_eq!(x.to_bits(), (-want[[i, j]]).to_bits(), "at {i},{j}");
    }
    // A and C with contiguous rows inside wider arrays: A read in place, C accumulated in
    // place (its edge microtiles through the edge buffer); C's other columns untouched.
    let mut wide_a = Array2::from_elem((m, k + 3), f32::NAN);
    wide_a.slice_mut(s![.., 1..k + 1]).assign(&a);
    let mut wide_c = Array2::from_elem((m, n + 5), f32::NAN);
    let c = wide_c.slice_mut(s![.., 2..n + 2]);
    run_checked::<M, K>(
        isa,
        blk,
        parallel,
        wide_a.slice(s![.., 1..k + 1]),
        &b,
        c,
        &want,
    );
    for ((i, j), x) in wide_c.indexed_iter() {
        let expect = match j.checked_sub(2) {
            Some(j) if j < n => (-want[[i, j]]).to_bits(),
            _ => f32::NAN.to_bits(),
        };
        assert_eq!(x.to_bits(), expect, "in place, at {i},{j}");
    }
}

/// `c = audit(a b)` with B strided, checking that the epilogue saw each finished element once.
fn run_checked<M: Mode, K: MicroKernel>(
    isa: Isa,
    blk: Blocking,
    parallel: bool,
    a: ArrayView2<'_, f32>,
    b: &Array2<f32>,
    c: ArrayViewMut2<'_, f32>,
    want: &Array2<f32>,
) {
    let (m, k) = a.dim();
    let n = b.ncols();
    let audit = Audit {
        done: want,
        visits: (0..m * n).map(|_| AtomicU32::new(0)).collect(),
        wrong: AtomicU32::new(0),
    };
    let mut b2 = Array2::from_elem((k, 2 * n), f32::NAN);
    b2.slice_mut(s![.., ..;2]).assign(b);
    let items = vec![Item {
        a,
        b: super::Operand::View(b2.slice(s![.., ..;2])),
        c,
    }];
    let isa_ok = isa.supported().unwrap();
    if parallel {
        // Three threads drain the tiles: the bits must not depend on which one runs a tile.
        let three = ThreeThreads;
        driver::gemm_with::<M, K>(isa_ok, blk, Some(&three), items, k, &audit, false).unwrap();
    } else {
        driver::gemm_with::<M, K>(isa_ok, blk, None, items, k, &audit, false).unwrap();
    }
    let what = format!("{} {isa} {blk:?} {m}x{n}x{k}", M::NAME);
    assert_eq!(audit.wrong.load(Ordering::Relaxed), 0, "{what}");
    assert!(
        audit.visits.iter().all(|v| v.load(Ordering::Relaxed) == 1),
        "{what}"
    );
}

/// Every loop boundary of the driver with the microkernel `K` on `isa`.
fn every_loop_boundary<K: MicroKernel>(isa: Isa) {
    let (mr, nr) = (K::MR, K::NV * isa.width());
    let blk = Blocking {
        mr,
        nr,
        kc: 5,
        mc: 2 * mr,
        nt: 2 * nr,
        kb: 12,
        // One slab of 2 tiles per round at full depth: several slabs and rounds.
        budget: 12 * 4 * nr,
    };
    for (m, n, k) in [
        (1, 1, 1),
        (mr, nr, 5),
        (2 * mr + 1, 2 * nr + 3, 13),
        (3 * mr - 1, 5 * nr - 1, 30),
        // Tiles whose rows end within a panel at every remainder a 6-row kernel has: its last
        // panel runs 4 or 2 rows (`short_block`); a 14-row kernel's runs 8 rows too.
        (mr + 4, nr + 1, 9),
        (2 * mr + 3, 2 * nr, 12),
        (mr + 2, 3, 11),
        (mr + 7, nr + 5, 10),
        (mr + 5, 2, 7),
        (7, 9, 0),
        (0, 4, 3),
        (4, 0, 3),
    ] {
        check::<Exact, K>(isa, blk, false, m, n, k);
        check::<Fast, K>(isa, blk, false, m, n, k);
        check::<Exact, K>(isa, blk, true, m, n, k);
        check::<Fast, K>(isa, blk, true, m, n, k);
    }
}

/// Whether `K` is compiled for `isa` (a kernel is compiled for its own instruction sets alone:
/// `MicroKernel::Isas`).
fn runs_on<K: MicroKernel>(isa: Isa) -> bool {
    match isa {
        Isa::Scalar => K::Isas::SCALAR,
        Isa::Sse2 => K::Isas::SSE2,
        Isa::Avx2 => K::Isas::AVX2,
        Isa::Avx512 => K::Isas::AVX512,
        Isa::Neon => K::Isas::NEON,
    }
}

/// Runs `f::<K>(isa)` for each kernel on each instruction set of this CPU that runs it.
macro_rules! each_kernel_on_its_isas {
    ($f:ident) => {
        for isa in Isa::available() {
            each_kernel_on_its_isas!(@ $f, isa, Mr4Nv6, Mr14Nv2, Mr6Nv2, Mr4Nv4, Mr8Nv3, Mr6Nv3);
        }
    };
    (@ $f:ident, $isa:ident, $($k:ident),*) => {
        $(if runs_on::<$k>($isa) {
            $f::<$k>($isa);
        })*
    };
}

/// Each kernel on each instruction set of this CPU that runs it.
pub fn every_kernel_every_loop_boundary() {
    each_kernel_on_its_isas!(every_loop_boundary);
}

/// The production blocking of `K` on `isa`: whole microtiles per tile, and the accumulators,
/// B registers and one broadcast fit the register file.
fn production_blocking_fits<K: MicroKernel>(isa: Isa) {
    let blk = Blocking::of::<K>(isa.width());
    assert_eq!(blk.nr, K::NV * isa.width());
    assert_eq!(blk.mc % blk.mr, 0);
    assert_eq!(blk.nt % blk.nr, 0);
    assert_eq!(blk.kb % blk.kc, 0);
    let regs = if matches!(isa, Isa::Avx512 | Isa::Neon) {
        32
    } else {
        16
    };
    if isa != Isa::Scalar {
        assert!(K::MR * K::NV + K::NV + 1 < regs, "{isa}");
    }
}

pub fn production_blocking_fits_the_register_file() {
    production_blocking_fits::<Mr4Nv6>(Isa::Avx512);
    production_blocking_fits::<Mr14Nv2>(Isa::Avx512);
    production_blocking_fits::<Mr6Nv2>(Isa::Avx2);
    production_blocking_fits::<Mr6Nv2>(Isa::Sse2);
    production_blocking_fits::<Mr4Nv4>(Isa::Scalar);
    production_blocking_fits::<Mr8Nv3>(Isa::Neon);
    production_blocking_fits::<Mr6Nv3>(Isa::Neon);
}

pub fn large_k_crosses_super_blocks_with_production_blocking() {
    fn crosses<K: MicroKernel>(isa: Isa) {
        let blk = Blocking::of::<K>(isa.width());
        check::<Exact, K>(isa, blk, true, 3, 5, 2 * blk.kb + 7);
        check::<Fast, K>(isa, blk, false, 3, 5, blk.kb + 1);
    }
    // Each kernel on each instruction set that runs it: a kernel named here for the detected
    // instruction set alone would not exist on another architecture.
    each_kernel_on_its_isas!(crosses);
}

/// The micro-panel a 14 x 2 tile prefetches during each panel's calls is the one it reads next
/// (`k_blocks`' order: panels within a K block, then the next K block), the last one none;
/// at depths that end in a short K block and in whole ones.
pub fn the_prefetched_micro_panel_is_the_one_read_next() {
    const { assert!(Mr14Nv2::PREFETCH_B) };
    let nr = 32;
    for (depth, kc, panels) in [
        (768, 256, 18),
        (700, 256, 3),
        (5, 2, 4),
        (3, 256, 1),
        (9, 3, 1),
    ] {
        // The ranges `k_blocks` reads, in its order.
        let mut read = Vec::new();
        for pc in (0..depth).step_by(kc) {
            let kcur = kc.min(depth - pc);
            for jr in 0..panels {
                let start = jr * depth * nr + pc * nr;
                read.push((jr, pc, start..start + kcur * nr));
            }
        }
        for (i, (jr, pc, _)) in read.iter().enumerate() {
            let next = super::kernel::next_micro_panel(*jr, panels, *pc, kc, depth, nr);
            match read.get(i + 1) {
                Some((_, _, want)) => assert_eq!(&next, want, "{depth} {kc} {panels} {jr} {pc}"),
                None => assert!(next.is_empty(), "{depth} {kc} {panels}: {next:?}"),
            }
            assert!(next.end <= panels * depth * nr);
        }
    }
}

/// Three threads drain every region: the bits must not depend on which one runs a tile.
struct ThreeThreads;

impl crate::work_queue::Region for ThreeThreads {
    fn region(&self, drain: &(dyn Fn() + Sync)) {
        rayon::scope(|s| {
            s.spawn(|_| drain());
            s.spawn(|_| drain());
            drain();
        })
    }

    fn threads(&self) -> usize {
        3
    }
}

/// A window of columns of a packed matrix ([`super::PackedMatrix::columns`], in the panels of
/// `new` and of `new_narrow`, and on AVX-512 in those of both its kernels) multiplies as the
/// view of those columns does, bit for bit, in both modes and on every instruction set: through
/// the GEMM and the GEMV (one row of A), over K across two super-blocks, from the first panel
/// and from a later one.
pub fn a_packed_column_window_has_the_bits_of_the_view_of_its_columns() {
    fn check_mode<M: Mode>(isa: Isa) {
        use crate::Session;
        use crate::epilogue::Identity;
        use crate::gemm::{Operand, PackedMatrix};
        let s = Session::<M>::new().with_isa(isa).unwrap();
        for k in [40, super::blocking::KB + 3] {
            let b = Array2::from_shape_fn((k, 150), |(i, j)| ((i * 7 + j * 3) % 23) as f32 - 11.5);
            // On AVX-512 also both kernels' panels, whichever this CPU packs by default.
            let widths = if isa == Isa::Avx512 {
                vec![
                    super::blocking::WIDE_PANEL_WIDTH,
                    super::blocking::narrow_panel_width(isa),
                ]
            } else {
                vec![]
            };
            let packings = [
                PackedMatrix::new(isa, &b).unwrap(),
                PackedMatrix::new_narrow(isa, &b).unwrap(),
            ]
            .into_iter()
            .chain(
                widths
                    .into_iter()
                    .map(|nr| PackedMatrix::with_panels(isa, &b, nr).unwrap()),
            );
            for packed in packings {
                let nr = packed.panel_width();
                // An empty window at a panel's start, within the 150 columns for 96-column panels.
                let empty = nr.min(150);
                for cols in [0..150, 0..nr + 5, nr..(3 * nr + 1).min(150), empty..empty] {
                    for m in [1, 13] {
                        let a = Array2::from_shape_fn((m, k), |(i, j)| {
                            ((i * 5 + j) % 17) as f32 * 0.125 - 1.0
                        });
                        let view = b.slice(s![.., cols.clone()]);
                        let want = s.matmul_owned(&a, &view, &Identity).unwrap();
                        let mut got = Array2::from_elem(want.raw_dim(), f32::NAN);
                        let window = Operand::Packed(packed.columns(cols.clone()));
                        s.matmul_operand_into(&a, window, &mut got, &Identity)
                            .unwrap();
                        assert!(
                            got.iter()
                                .zip(&want)
                                .all(|(x, y)| x.to_bits() == y.to_bits()),
                            "{} {isa} nr {nr} k {k} m {m} columns {cols:?}",
                            M::NAME
                        );
                    }
                }
            }
        }
    }
    for isa in Isa::available() {
        check_mode::<Exact>(isa);
        check_mode::<Fast>(isa);
    }
    // A narrow window takes the narrow panels on AVX-512 (so the narrow packing runs the kernel
    // a view of it would), a wide one the panels of `PackedMatrix::new`: 96 columns where the
    // 4 x 6 kernel is preferred, else 32; one width elsewhere.
    use super::blocking::{
        WIDE_PANEL_WIDTH, narrow_panel_width, panel_width, wide_kernel_preferred,
    };
    let narrow = narrow_panel_width(Isa::Avx512);
    assert_eq!(narrow, 32);
    let wide = if wide_kernel_preferred() {
        WIDE_PANEL_WIDTH
    } else {
        narrow
    };
    assert_eq!(panel_width(Isa::Avx512), wide);
    assert_eq!(super::view_panel_width(Isa::Avx512, 64), narrow);
    assert_eq!(super::view_panel_width(Isa::Avx512, 768), wide);
    let weights = Array2::<f32>::zeros((8, 768));
    let packed = super::PackedMatrix::new(Isa::Avx512, &weights).unwrap();
    assert_eq!(packed.panel_width(), wide);
    for isa in [Isa::Avx2, Isa::Sse2, Isa::Scalar, Isa::Neon] {
        assert_eq!(super::view_panel_width(isa, 768), panel_width(isa));
        assert_eq!(narrow_panel_width(isa), panel_width(isa));
    }
}

/// A packed buffer of 2 MiB or more lies in memory advised for transparent huge pages: the
/// kernel marks such a mapping `hg` in `/proc/self/smaps`. Skipped where the kernel has no
/// transparent huge pages, and checked on x86-64 only: the aarch64 build runs here under
/// qemu-user, which takes `madvise` as a no-op.
pub fn a_large_panel_buffer_is_advised_for_huge_pages() {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        use super::pack::{LINE, panel_buffer};
        use crate::lanes::pages::HUGE_PAGE_BYTES;
        if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
            eprintln!("no transparent huge pages in this kernel: skipped");
            return;
        }
        let len = 3 * HUGE_PAGE_BYTES / size_of::<f32>();
        let (data, at) = panel_buffer(len).unwrap();
        assert!(at < LINE && data[at..at + len].iter().all(|&v| v == 0.0));
        assert_eq!(data[at..].as_ptr().addr() % 64, 0);
        // An address on a huge page boundary inside the buffer, and the mapping that holds it.
        let inside = data.as_ptr().addr().next_multiple_of(HUGE_PAGE_BYTES);
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut flags = None;
        let mut holds = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((lo, hi)) = range.split_once('-')
                && let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                holds = lo <= inside && inside < hi;
            } else if holds && let Some(f) = line.strip_prefix("VmFlags:") {
                flags = Some(f.split_whitespace().map(str::to_owned).collect::<Vec<_>>());
            }
        }
        let flags = flags.expect("the buffer's mapping in /proc/self/smaps");
        assert!(flags.iter().any(|f| f == "hg"), "VmFlags {flags:?}");
        // A small one starts on a cache line too.
        let (small, at) = panel_buffer(1000).unwrap();
        assert_eq!(small[at..].as_ptr().addr() % 64, 0);
    }
}
