//! The loop driver: K super-blocks, packed B slabs, output tiles, packed A blocks,
//! microkernels, and the epilogue on each finished tile.
//!
//! ```text
//! for each K super-block [k0, k0 + depth)             (kb = 4096 deep; one unless K is huge)
//!   for each round of B slabs (column groups of C, all batch items)
//!     pack B[k0.., slab]: panels of NR columns, k-major  (parallel over groups of panels)
//!     pack A[.., k0..] of a slab of several column tiles, band by band, K block by K block
//!                                                        (beside B's; see `slab_plan`)
//!     for each tile of C, MC x NT, in every slab of the round       (parallel: one task each)
//!       start: +0 (first super-block) or the partial sums stored in C
//!       for each K block [pc, pc + kc) within the super-block               (kc: 256-1024)
//!         pack A[tile rows, pc..] (unless packed above or read in place)  (thread's own)
//!         for each B panel jr (NR columns of the tile)          (B micro-panel in L1 or L2)
//!           for each A panel ir (MR rows of the tile)          (A block in L2)
//!             microkernel: C[ir, jr] (+)= A panel ir x B panel jr  (C or the buffer)
//!       last super-block: epilogue(tile, tile row, tile column)
//!       copy the tile buffer to C (only when C's rows are not contiguous)
//! ```
//!
//! Where C's rows are contiguous, a task accumulates its tile in C itself, and a microtile
//! past C's last row or column goes through one `MR x NR` buffer. Otherwise it accumulates
//! the tile in a row-major buffer of its own (contiguous rows, padded to
//! whole microtiles), which stays in L2 across the K blocks: the microkernel loads and stores it
//! with plain slices, the epilogue gets it while it is still in cache, and C itself is written
//! once, through its strides, at the end. Padded rows and columns hold lanes computed from the
//! zero padding of the packed panels; they are never copied to C.
//!
//! **Bits.** Every element of C is one accumulator lane from start to end: `+0`, then one
//! [`crate::Mode::madd`] per `k` in increasing order, through the K blocks (a block continues
//! from the value the previous one stored, which f32 storage keeps exactly). No choice made
//! here, neither the blocking nor the lane width nor the thread that runs a tile, changes
//! that sequence, so the result does not depend on any of them.
//!
//! **Threads.** A task is one output tile: one thread packs its A block, runs its microkernels
//! and its epilogue. Packed B is shared read-only. The tiles and the rounds depend only on the
//! shapes, the instruction set and whether the product runs on several threads (then its tiles
//! may be narrower, so there are enough of them: [`tile_width`]).

use std::cell::Cell;

use ndarray::{ArrayView2, ArrayViewMut2, Axis, ShapeBuilder, s};

use crate::work_queue::{Spread, WorkQueue};

use super::blocking::{Blocking, KB};
use super::kernel::{MicroKernel, TileC, TileProduct};
use super::pack::{LINE, line_aligned, pack_panels};
use super::packed::Operand;
use crate::epilogue::TileEpilogue;
use crate::error::Error;
use crate::lanes::Mode;
use crate::lanes::Supported;
use crate::row_buffer::{put_cell, take_cell};

/// Extra columns in a tile buffer's row stride, so that the rows of a microtile do not all map
/// to the same cache sets.
const LDC_PAD: usize = 16;

/// Packed B buffers up to this many values are kept for the next call on the same thread.
const RETAIN_PACK: usize = 1 << 20;

/// One product `C = A B` of a batch: `a` is `[m, k]`, `b` is `[k, n]`, `c` is `[m, n]`.
pub(crate) struct Item<'a> {
    pub a: ArrayView2<'a, f32>,
    pub b: Operand<'a>,
    pub c: ArrayViewMut2<'a, f32>,
}

/// A group of columns of one item's C, with the matching columns of B: the unit of B packing.
struct Slab<'a> {
    batch: usize,
    col0: usize,
    a: ArrayView2<'a, f32>,
    /// The slab's columns of B (a view), or the whole packed B (the slab starts at `col0`).
    b: Operand<'a>,
    c: ArrayViewMut2<'a, f32>,
}

/// One output tile: the unit of parallel work.
struct Task<'r> {
    batch: usize,
    row0: usize,
    col0: usize,
    /// The tile's rows of A, the current K super-block only.
    a: ArrayView2<'r, f32>,
    /// The packed B panels of the tile's columns, the current K super-block.
    bpack: &'r [f32],
    /// The tile's rows of A already packed for the whole super-block (K block after K block,
    /// as the tile would pack them), when its slab packed A once for all its column tiles.
    apacked: Option<&'r [f32]>,
    c: ArrayViewMut2<'r, f32>,
}

/// What every task of one K super-block shares.
struct Pass<'e> {
    isa: Supported,
    blk: Blocking,
    /// Depth of the super-block.
    depth: usize,
    /// The first super-block: start from `+0`.
    first: bool,
    /// The last super-block: run the epilogue.
    last: bool,
    batched: bool,
    epilogue: &'e dyn TileEpilogue,
}

/// `c = epilogue(a b)` for every item (all of one shape; `k` is the inner dimension), with the
/// microkernel `K` and the blocking `blk` on `isa`, tiles spread over the threads of `spread`
/// when it is given.
pub(crate) fn gemm_with<M: Mode, K: MicroKernel>(
    isa: Supported,
    blk: Blocking,
    spread: Option<Spread<'_>>,
    items: Vec<Item<'_>>,
    k: usize,
    epilogue: &dyn TileEpilogue,
    batched: bool,
) -> Result<(), Error> {
    let Some((m, n)) = items.first().map(|it| it.c.dim()) else {
        return Ok(());
    };
    if m == 0 || n == 0 {
        return Ok(());
    }
    for item in &items {
        if let Operand::Packed(p) = item.b
            && (blk.kb != KB || p.panel_width() != blk.nr)
        {
            return Err(Error::InvalidArgument(format!(
                "PackedMatrix panels of {} columns, {KB} deep; this GEMM reads {} x {}",
                p.panel_width(),
                blk.nr,
                blk.kb
            )));
        }
    }
    let kb = blk.kb.max(1);
    // Columns per slab: as many whole tiles as the budget allows for one super-block.
    let deepest = k.min(kb).max(1);
    let slab_cols = (blk.budget / deepest / blk.nt * blk.nt).max(blk.nt);

    let mut slabs = Vec::new();
    for (batch, item) in items.into_iter().enumerate() {
        let mut c = item.c;
        let mut col0 = 0;
        while col0 < n {
            let w = slab_cols.min(n - col0);
            let (here, rest) = c.split_at(Axis(1), w);
            slabs.push(Slab {
                batch,
                col0,
                a: item.a,
                b: match item.b {
                    Operand::View(b) => Operand::View(b.slice_move(s![.., col0..col0 + w])),
                    packed => packed,
                },
                c: here,
            });
            c = rest;
            col0 += w;
        }
    }

    let supers: Vec<(usize, usize)> = if k == 0 {
        vec![(0, 0)]
    } else {
        (0..k).step_by(kb).map(|k0| (k0, kb.min(k - k0))).collect()
    };
    let mut pack = take_cell(&PACK);
    for (s, &(k0, depth)) in supers.iter().enumerate() {
        let pass = Pass {
            isa,
            blk,
            depth,
            first: s == 0,
            last: s + 1 == supers.len(),
            batched,
            epilogue,
        };
        let size = |slab: &Slab<'_>| match slab.b {
            Operand::View(_) => depth * slab.c.ncols().next_multiple_of(blk.nr),
            Operand::Packed(_) => 0,
        };
        let mut start = 0;
        while start < slabs.len() {
            let mut end = start;
            let mut total = 0;
            while end < slabs.len() && (end == start || total + size(&slabs[end]) <= blk.budget) {
                total += size(&slabs[end]);
                end += 1;
            }
            let plans: Vec<SlabPlan> = slabs[start..end]
                .iter()
                .map(|slab| slab_plan::<K>(&blk, slab, depth, spread.is_some()))
                .collect();
            let a_total: usize = plans.iter().map(|plan| plan.a_len).sum();
            let buf = line_aligned(&mut pack, total + a_total);
            round::<M, K>(&pass, spread, &mut slabs[start..end], &plans, k0, buf)?;
            start = end;
        }
    }
    if pack.len() <= RETAIN_PACK {
        put_cell(&PACK, pack);
    }
    Ok(())
}

/// Packs B for `slabs` (super-block `k0..k0 + pass.depth`), and A where their `plans` say,
/// then runs every tile of them.
fn round<M: Mode, K: MicroKernel>(
    pass: &Pass<'_>,
    spread: Option<Spread<'_>>,
    slabs: &mut [Slab<'_>],
    plans: &[SlabPlan],
    k0: usize,
    pack: &mut [f32],
) -> Result<(), Error> {
    let (nr, depth) = (pass.blk.nr, pass.depth);
    let b_len: usize = slabs
        .iter()
        .filter(|slab| matches!(slab.b, Operand::View(_)))
        .map(|slab| depth * slab.c.ncols().next_multiple_of(nr))
        .sum();
    let (pack, apack) = pack.split_at_mut(b_len);
    // Pack jobs: B in about 128 columns each (as `nr` rows of the transposed view); A, where a
    // slab packs it once, one K block of one band of rows each (as `mr` rows).
    let group = (128 / nr).max(1) * nr;
    let mut jobs = Vec::new();
    let mut rest = &mut *pack;
    for slab in slabs.iter() {
        let Operand::View(b) = &slab.b else {
            continue;
        };
        let w = slab.c.ncols();
        for c0 in (0..w).step_by(group) {
            let c1 = (c0 + group).min(w);
            let len = depth * (c1 - c0).next_multiple_of(nr);
            let (dst, tail) = rest.split_at_mut(len);
            rest = tail;
            jobs.push((b.slice(s![k0..k0 + depth, c0..c1]).reversed_axes(), nr, dst));
        }
    }
    let (mr, kc) = (pass.blk.mr, pass.blk.kc.max(1));
    let mut arest = &mut *apack;
    for (slab, plan) in slabs.iter().zip(plans) {
        if plan.a_len == 0 {
            continue;
        }
        for (row0, h, len) in bands(&pass.blk, slab.c.nrows(), depth) {
            let (band, tail) = arest.split_at_mut(len);
            arest = tail;
            let mut brest = band;
            for pc in (0..depth).step_by(kc) {
                let kcur = kc.min(depth - pc);
                let (dst, tail) = brest.split_at_mut(h.next_multiple_of(mr) * kcur);
                brest = tail;
                let (a0, a1) = (k0 + pc, k0 + pc + kcur);
                jobs.push((slab.a.slice_move(s![row0..row0 + h, a0..a1]), mr, dst));
            }
        }
    }
    let pack_job = |(src, p, dst): (ArrayView2<'_, f32>, usize, &mut [f32])| {
        pack_panels(src, p, dst);
    };
    let packed: Result<(), std::convert::Infallible> =
        WorkQueue::new(jobs.into_iter()).run(spread, |job| {
            pack_job(job);
            Ok(())
        });
    let Ok(()) = packed;

    let mut tasks = Vec::new();
    let mut packed = &*pack;
    let mut apacked = &*apack;
    for (slab, plan) in slabs.iter_mut().zip(plans) {
        let (mtot, w) = slab.c.dim();
        // The bands' pre-packed A, in the order they were packed.
        let mut a_bands = Vec::new();
        if plan.a_len > 0 {
            for (_, _, len) in bands(&pass.blk, mtot, depth) {
                let (band, tail) = apacked.split_at(len);
                apacked = tail;
                a_bands.push(band);
            }
        }
        let bpack = match slab.b {
            Operand::View(_) => {
                let (bpack, tail) = packed.split_at(depth * w.next_multiple_of(nr));
                packed = tail;
                bpack
            }
            Operand::Packed(p) => p.panels(k0, slab.col0),
        };
        let nt = plan.nt;
        // Column tiles outermost: the bands of one column tile run one after the other (or
        // side by side on two threads) while that tile's B panels are still in the L3 cache.
        let mut cols = slab.c.view_mut();
        let mut c0 = 0;
        while c0 < w {
            let tw = nt.min(w - c0);
            let (column, right) = cols.split_at(Axis(1), tw);
            cols = right;
            let mut rows = column;
            let mut row0 = 0;
            while row0 < mtot {
                let h = pass.blk.mc.min(mtot - row0);
                let (tile, below) = rows.split_at(Axis(0), h);
                rows = below;
                tasks.push(Task {
                    batch: slab.batch,
                    row0,
                    col0: slab.col0 + c0,
                    a: slab.a.slice_move(s![row0..row0 + h, k0..k0 + depth]),
                    bpack: &bpack[(c0 / nr) * depth * nr..],
                    apacked: a_bands.get(row0 / pass.blk.mc).copied(),
                    c: tile,
                });
                row0 += h;
            }
            c0 += tw;
        }
    }
    // Handed out in order (each thread takes the next task when it is free), so the threads
    // work on the bands of the same column tile and share its B in L3. (A split of the list
    // in halves would put the threads on tiles far apart.)
    WorkQueue::new(tasks.into_iter()).run(spread, |t| run_task::<M, K>(pass, t))
}

/// Values of A one slab may pack ahead of its tiles (4 MiB: the block's deepest product, 256 x
/// 3072, fits, and the buffer stays within what a thread keeps for its next call,
/// [`RETAIN_PACK`]). A larger A is packed by each tile as it runs, as a slab of one column
/// tile always is.
const SLAB_A_BUDGET: usize = 1 << 20;

/// How a slab is cut and whether it packs A once.
struct SlabPlan {
    /// Columns per tile ([`tile_width`]).
    nt: usize,
    /// Values of the slab's A packed ahead of its tiles, band after band (0: none).
    a_len: usize,
}

/// The tile width of `slab` for a super-block `depth` deep, and its pre-packed A. A slab of
/// several column tiles packs each band's A once for all of them, where each tile would pack
/// the same values again: most of all in a deep product, whose tiles are narrow
/// ([`TILE_B_BUDGET`]) and whose A rows, far apart in memory, miss the cache each time. Not for
/// a kernel that reads A in place, and not past [`SLAB_A_BUDGET`].
fn slab_plan<K: MicroKernel>(
    blk: &Blocking,
    slab: &Slab<'_>,
    depth: usize,
    parallel: bool,
) -> SlabPlan {
    let (m, w) = slab.c.dim();
    let nt = tile_width(blk, w, depth, m.div_ceil(blk.mc), parallel);
    let a_len = if K::IN_PLACE || depth == 0 || w <= nt {
        0
    } else {
        bands(blk, m, depth).map(|(_, _, len)| len).sum()
    };
    SlabPlan {
        nt,
        a_len: if a_len <= SLAB_A_BUDGET { a_len } else { 0 },
    }
}

/// The bands of `m` rows (`mc` each, the last one shorter) as `(first row, rows, values)`, the
/// values those of the band's A packed for a super-block `depth` deep (its panels of `mr` rows,
/// zero-padded; whole cache lines, so that the next band starts on one).
fn bands(blk: &Blocking, m: usize, depth: usize) -> impl Iterator<Item = (usize, usize, usize)> {
    let (mr, mc) = (blk.mr, blk.mc);
    (0..m).step_by(mc).map(move |row0| {
        let h = mc.min(m - row0);
        (
            row0,
            h,
            (h.next_multiple_of(mr) * depth).next_multiple_of(LINE),
        )
    })
}

/// Tiles a product spread over threads is cut into at least (when its columns allow).
const MIN_PARALLEL_TILES: usize = 12;

/// Packed B values one column tile may span (2 MiB, a quarter of this machine kind's L3): the
/// bands of the tile re-read its B panels from the L3 cache rather than from memory, beside
/// the A rows streaming through. (4 MiB measured slower on the block's shapes, 1 MiB no
/// better than 2.)
const TILE_B_BUDGET: usize = 1 << 19;

/// Columns per tile of a slab `w` columns wide, `depth` deep, with `bands` bands of rows: `w`
/// cut into equal tiles of whole panels, at most `blk.nt` wide and at most
/// [`TILE_B_BUDGET`] values of packed B (down to four panels). A product spread over threads
/// takes narrower tiles (down to four panels) until it has [`MIN_PARALLEL_TILES`], so that the
/// threads finish together: a 256 x 768 product has 6 bands of rows, 6 tasks of unequal height
/// for 2 threads with one column tile, 12 with two. No tiling changes a bit (see the module's
/// "Bits").
fn tile_width(blk: &Blocking, w: usize, depth: usize, bands: usize, parallel: bool) -> usize {
    let floor = (4 * blk.nr).min(blk.nt);
    let widest = (TILE_B_BUDGET / depth.max(1) / blk.nr * blk.nr).clamp(floor, blk.nt);
    let mut tiles = w.div_ceil(widest).max(1);
    while parallel && bands * tiles < MIN_PARALLEL_TILES && w.div_ceil(tiles + 1) >= floor {
        tiles += 1;
    }
    w.div_ceil(tiles).next_multiple_of(blk.nr).min(blk.nt)
}

thread_local! {
    /// The packed B buffer of the last call on this thread (when small enough to keep).
    static PACK: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
    /// The packed A block and tile buffer of the tasks run by this thread.
    static SCRATCH: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
}

/// One tile: start, K blocks, epilogue, and the copy to C when the tile went through the
/// buffer.
fn run_task<M: Mode, K: MicroKernel>(pass: &Pass<'_>, mut t: Task<'_>) -> Result<(), Error> {
    let blk = pass.blk;
    let (h, w) = t.c.dim();
    let mc_pad = h.next_multiple_of(blk.mr);
    let nt_pad = w.next_multiple_of(blk.nr);
    let ldc = nt_pad + LDC_PAD;
    let kc = blk.kc.min(pass.depth);
    // A read where it lies needs no packing (its rows have unit column stride); C accumulates
    // in place when its rows do too. Either way each element gets the same sequence of steps.
    let a_rows: Option<Vec<&[f32]>> = if K::IN_PLACE && pass.depth > 0 {
        super::contiguous_rows(t.a)
    } else {
        None
    };
    let c_in_place = K::IN_PLACE && w > 0 && (w == 1 || t.c.strides()[1] == 1);
    // Each part starts on a cache line (as the buffer does: `line_aligned`).
    let a_len = if a_rows.is_some() || t.apacked.is_some() {
        0
    } else {
        (mc_pad * kc).next_multiple_of(LINE)
    };
    let c_len = if c_in_place {
        0
    } else {
        (mc_pad * ldc).next_multiple_of(LINE)
    };
    let edge_len = (blk.mr * blk.nr).next_multiple_of(LINE);
    // Taken, not borrowed: an epilogue that runs a GEMM of its own on this thread (or a task
    // stolen while it waits) simply gets a fresh buffer.
    let mut scratch = take_cell(&SCRATCH);
    let lines = line_aligned(&mut scratch, a_len + c_len + edge_len + kc);
    let (apack, rest) = lines.split_at_mut(a_len);
    let (cbuf, rest) = rest.split_at_mut(c_len);
    let (edge, rest) = rest.split_at_mut(edge_len);
    let zeros = &mut rest[..kc];
    zeros.fill(0.0);
    let zeros = &*zeros;
    if !c_in_place && (pass.depth == 0 || !pass.first) {
        cbuf.fill(0.0);
        if !pass.first {
            // Continue from the partial sums of the previous super-block (padding: zeros).
            tile_view(&mut *cbuf, h, w, ldc)?.assign(&t.c);
        }
    }
    // C's own rows when the tile accumulates in place (each is contiguous: `c_in_place`);
    // after the first super-block they hold the partial sums to continue from.
    let mut c_rows: Vec<&mut [f32]> = if c_in_place {
        t.c.rows_mut()
            .into_iter()
            .map(|r| {
                r.into_slice()
                    .expect("c_in_place: every row of C is contiguous")
            })
            .collect()
    } else {
        Vec::new()
    };
    if pass.depth == 0 {
        c_rows.iter_mut().for_each(|r| r.fill(0.0));
    } else {
        // One dispatch for both places the tile may accumulate in.
        let c = if c_in_place {
            TileC::InPlace(&mut c_rows)
        } else {
            TileC::Buffer {
                buf: &mut *cbuf,
                ldc,
            }
        };
        pass.isa.dispatch_within::<M, _, K::Isas>(TileProduct::<K> {
            kc: blk.kc,
            a: t.a,
            a_rows: a_rows.as_deref(),
            apacked: t.apacked,
            zeros,
            bpack: t.bpack,
            apack,
            c,
            edge,
            mc_pad,
            nt_pad,
            zero: pass.first,
            kernel: core::marker::PhantomData,
        });
    }
    drop(c_rows);
    let at = (t.batch, t.row0, t.col0);
    if c_in_place {
        complete_tile::<M>(
            pass.isa,
            pass.epilogue,
            pass.batched,
            pass.last,
            at,
            &mut t.c,
        );
    } else {
        let mut tile = tile_view(cbuf, h, w, ldc)?;
        finish_tile::<M>(
            pass.isa,
            pass.epilogue,
            pass.batched,
            pass.last,
            at,
            &mut tile,
            &mut t.c,
        );
    }
    put_cell(&SCRATCH, scratch);
    Ok(())
}

/// The end of every tile of C (the GEMM's and the GEMV's): the epilogue when the tile has all
/// of K (`last`), then the copy to C. `at` is `(batch, row0, col0)`. Generic over the mode for
/// what exact mode does to a finished tile before it is stored.
pub(crate) fn finish_tile<M: Mode>(
    isa: Supported,
    epilogue: &dyn TileEpilogue,
    batched: bool,
    last: bool,
    (batch, row0, col0): (usize, usize, usize),
    tile: &mut ArrayViewMut2<'_, f32>,
    c: &mut ArrayViewMut2<'_, f32>,
) {
    complete_tile::<M>(isa, epilogue, batched, last, (batch, row0, col0), tile);
    store_tile(tile, c);
}

/// The end of a tile that holds its sums (in C itself, or in a buffer then copied to C): the
/// epilogue when the tile has all of K (`last`), then, in exact mode, every NaN it holds made
/// the canonical one (the one place every finished tile goes through).
fn complete_tile<M: Mode>(
    isa: Supported,
    epilogue: &dyn TileEpilogue,
    batched: bool,
    last: bool,
    (batch, row0, col0): (usize, usize, usize),
    tile: &mut ArrayViewMut2<'_, f32>,
) {
    if last {
        if batched {
            epilogue.apply_batched(batch, tile, row0, col0);
        } else {
            epilogue.apply(tile, row0, col0);
        }
    }
    crate::epilogue::canonical_nan_tile::<M>(isa, tile);
}

/// `c = tile`: row by row where the rows of C are contiguous, else through ndarray.
fn store_tile(tile: &ArrayViewMut2<'_, f32>, c: &mut ArrayViewMut2<'_, f32>) {
    if c.strides()[1] == 1 || c.ncols() == 1 {
        for (mut dst, src) in c.rows_mut().into_iter().zip(tile.rows()) {
            if let (Some(d), Some(s)) = (dst.as_slice_mut(), src.to_slice()) {
                d.copy_from_slice(s);
            } else {
                dst.assign(&src);
            }
        }
    } else {
        c.assign(tile);
    }
}

/// The `h x w` tile at the start of `buf`, rows `ldc` apart.
pub(crate) fn tile_view(
    buf: &mut [f32],
    h: usize,
    w: usize,
    ldc: usize,
) -> Result<ArrayViewMut2<'_, f32>, Error> {
    // `ldc >= w` and `buf` holds `h` rows: this cannot fail.
    ArrayViewMut2::from_shape((h, w).strides((ldc, 1)), buf)
        .map_err(|e| Error::InvalidArgument(e.to_string()))
}
