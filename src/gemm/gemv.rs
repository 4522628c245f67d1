//! The `m = 1` product (a decode step's GEMV): one row of A against B, streamed once, with the
//! columns of C in registers.
//!
//! B is read from its packed panels (a `PackedMatrix`: each panel `k`-major, `nr` columns
//! wide, four panels at a time), straight from a view whose rows are contiguous (eight
//! registers of columns at a time, row by row), or from a view whose columns are contiguous
//! (attention's `K^T` in a decode step), a square of a register's width at a time transposed
//! in registers (AVX2, AVX-512) or four panels at a time packed into a small buffer.
//! Every way, each element of C is one lane from `+0` through one [`Mode::madd`] per `k` in
//! increasing order: the bits of the GEMM (and of the plain loop), however the columns are cut.
//! They are cut into chunks of whole panel groups, as many as suit the region's threads
//! ([`chunk_widths`]), the unit of parallel work; the epilogue runs on each chunk as on a
//! `1 x w` tile, through the driver's [`finish_tile`].

use ndarray::{ArrayView2, ArrayViewMut2, Axis, s};

use super::blocking::{KB, narrow_panel_width};
use super::contiguous_rows;
use super::driver::{Item, finish_tile, tile_view};
use super::pack::pack_panels;
use super::packed::Operand;
use crate::epilogue::TileEpilogue;
use crate::error::Error;
use crate::lanes::{
    LaneOp, Lanes, MAX_WIDTH, Mode, Supported, prefetch_ahead, prefetch_ahead_l2, prefetch_l2,
};
use crate::work_queue::{Spread, WorkQueue};

/// Columns of C per work item, about: [`chunk_widths`] cuts whole groups of panels.
const CHUNK: usize = 512;

/// The panel width, in registers, of the vector lanes' microkernels (AVX-512's narrow one
/// included): three NEON registers, two x86 ones.
#[cfg(target_arch = "aarch64")]
const VECTOR_NV: usize = 3;
#[cfg(not(target_arch = "aarch64"))]
const VECTOR_NV: usize = 2;

/// Registers of columns per step of the row-by-row kernel.
const ROW_REGS: usize = 8;

/// The narrowest lanes [`column_gemv`] transposes in registers ([`ColumnGemv`]): AVX2's and
/// AVX-512's. On SSE2's four lanes each step of `k` costs a broadcast per register where a
/// packed panel shares one among eight, and the packing measured faster (BENCHMARKS.md,
/// "Choices in the code"); NEON and the scalar lanes keep it too.
const TRANSPOSED_WIDTH: usize = 8;

/// Values per packing of [`packed_column_gemv`] (`PANELS` panels, as deep as fits): 32 KiB, a
/// first-level data cache (128 deep for AVX2's 16-column panels).
const COLUMN_VALUES: usize = 8192;

/// Packed panels per step of the panel kernel.
const PANELS: usize = 4;

/// How many steps of `k` ahead exact mode's loop over 96-column panels (a `PackedMatrix` on a
/// core that halves 512-bit operations: Zen 4) prefetches each panel's row. A decode step
/// reads its weights once, from L3 or memory. Exact mode's separate multiply and add hold
/// twice fast mode's operations per load in the scheduler while the loads wait, so without
/// the hint its loads run fewer steps ahead and it falls behind fast mode once the weights
/// come from beyond L2. Only there: fast mode gained nothing, AVX2's 16-column panels ran
/// slower with it, and the 32-column panels of Intel's cores are unmeasured (BENCHMARKS.md,
/// "Choices in the code").
const EXACT_PREFETCH_STEPS: usize = 8;

/// How many steps of `k` ahead the same loop also asks for each panel's row in L2 (12 KiB of
/// each panel): 8 steps ahead, the L1 hint still waits on L3 or memory, and `prefetcht0` much
/// further ahead would push out of L1 what is read now. Even with both hints the loop stays
/// behind fast mode's (BENCHMARKS.md, "Known bounds"): they hide part of the wait, but the
/// scheduler still holds two operations per load where fast mode holds one.
const EXACT_PREFETCH_L2_STEPS: usize = 32;

/// Columns per group of `PANELS` panels on `isa` with the right-hand side `b` (64 for AVX2's
/// 16-column panels, 384 for a `PackedMatrix` in AVX-512's 96-column panels).
fn group_width(isa: Supported, b: &Operand<'_>) -> usize {
    let nr = match b {
        Operand::Packed(p) => p.panel_width(),
        Operand::View(_) => narrow_panel_width(isa.isa()),
    };
    PANELS * nr
}

/// The widths of the chunks `n` columns are cut into, in order, for a region of `threads`
/// threads: whole groups of `group` columns (only the last chunk may end in a partial group),
/// about [`CHUNK`] columns or fewer each, as many chunks as a multiple of `threads` where the
/// groups allow, their sizes differing by at most one group. A fixed width left the threads
/// unequal work: a 768-column product (a decode step's output projection and MLP down) was
/// 512 + 256 columns, one thread idle a third of the time. No cut changes a bit: each column
/// of C is its own sum over `k`.
fn chunk_widths(group: usize, n: usize, threads: usize) -> impl Iterator<Item = usize> {
    let groups = n.div_ceil(group);
    let threads = threads.max(1);
    let per_item = (CHUNK / group).max(1);
    let items = (threads * groups.div_ceil(threads * per_item))
        .min(groups)
        .max(1);
    let (base, extra) = (groups / items, groups % items);
    let mut col0 = 0;
    (0..items).map_while(move |i| {
        let w = ((base + usize::from(i < extra)) * group).min(n - col0);
        col0 += w;
        (w > 0).then_some(w)
    })
}

/// Whether [`gemv`] takes `items`: one row of A and a packed B, or a view of B whose rows or
/// whose columns are contiguous.
pub(crate) fn applies(items: &[Item<'_>]) -> bool {
    items.iter().all(|it| {
        it.a.nrows() == 1
            && match it.b {
                Operand::Packed(_) => true,
                Operand::View(b) => rows_contiguous(b) || columns_contiguous(b),
            }
    })
}

/// `c = epilogue(a b)` for items of one row (see [`applies`]), chunks of columns spread over
/// the threads of `spread` when it is given.
pub(crate) fn gemv<M: Mode>(
    isa: Supported,
    spread: Option<Spread<'_>>,
    items: Vec<Item<'_>>,
    epilogue: &dyn TileEpilogue,
    batched: bool,
) -> Result<(), Error> {
    // Each row of A once, contiguous.
    let rows: Vec<Vec<f32>> = items.iter().map(|it| it.a.row(0).to_vec()).collect();
    let mut tasks = Vec::new();
    for ((batch, item), a) in items.into_iter().enumerate().zip(&rows) {
        let mut c = item.c;
        let n = c.ncols();
        let threads = spread.map_or(1, |s| s.threads());
        let mut col0 = 0;
        for w in chunk_widths(group_width(isa, &item.b), n, threads) {
            let (here, rest) = c.split_at(Axis(1), w);
            tasks.push(Chunk {
                batch,
                col0,
                a,
                b: item.b,
                c: here,
            });
            c = rest;
            col0 += w;
        }
    }
    let run = |t: Chunk<'_, '_>| run_chunk::<M>(isa, epilogue, batched, t);
    WorkQueue::new(tasks.into_iter()).run(spread, run)
}

/// Columns `col0..col0 + c.ncols()` of one item.
struct Chunk<'r, 'a> {
    batch: usize,
    col0: usize,
    a: &'r [f32],
    b: Operand<'a>,
    c: ArrayViewMut2<'a, f32>,
}

fn run_chunk<M: Mode>(
    isa: Supported,
    epilogue: &dyn TileEpilogue,
    batched: bool,
    mut t: Chunk<'_, '_>,
) -> Result<(), Error> {
    let w = t.c.ncols();
    // Room for whole groups of panels: the packed B's own, or those a view is packed into.
    let mut buf = vec![0.0f32; w.next_multiple_of(group_width(isa, &t.b))];
    match t.b {
        Operand::Packed(p) => {
            let nr = p.panel_width();
            let k = t.a.len();
            for k0 in (0..k).step_by(KB) {
                let depth = KB.min(k - k0);
                isa.dispatch::<M, _>(PanelGemv {
                    a: &t.a[k0..k0 + depth],
                    panels: &p.panels(k0, t.col0)[..depth * w.next_multiple_of(nr)],
                    nr,
                    c: &mut buf[..w.next_multiple_of(nr)],
                    zero: k0 == 0,
                });
            }
        }
        Operand::View(b) if !rows_contiguous(b) => {
            // Columns contiguous (checked by `applies`): packed here, a few panels at a time.
            let b = b.slice(s![.., t.col0..t.col0 + w]);
            column_gemv::<M>(isa, t.a, b, &mut buf)?;
        }
        Operand::View(b) => {
            let b = b.slice(s![.., t.col0..t.col0 + w]);
            // Its rows are contiguous: checked by `applies`.
            let rows = contiguous_rows(b)
                .ok_or_else(|| Error::InvalidArgument("gemv: B rows not contiguous".into()))?;
            isa.dispatch::<M, _>(RowGemv {
                a: t.a,
                rows: &rows,
                c: &mut buf[..w],
            });
        }
    }
    let mut tile = tile_view(&mut buf, 1, w, w)?;
    finish_tile::<M>(
        isa,
        epilogue,
        batched,
        true,
        (t.batch, 0, t.col0),
        &mut tile,
        &mut t.c,
    );
    Ok(())
}

/// Whether each row of `b` is contiguous (`b` is C-order, or one column).
fn rows_contiguous(b: ArrayView2<'_, f32>) -> bool {
    b.strides()[1] == 1 || b.ncols() <= 1
}

/// Whether each column of `b` is contiguous (`b` is F-order, or the transpose of a C-order
/// matrix, such as attention's `K^T`).
fn columns_contiguous(b: ArrayView2<'_, f32>) -> bool {
    b.strides()[0] == 1 || b.nrows() <= 1
}

/// `c = a b` for a `b` whose columns are contiguous (attention's `K^T` in a decode step: each
/// column one key): [`ColumnGemv`] on lanes of at least [`TRANSPOSED_WIDTH`], else
/// [`packed_column_gemv`]. The same bits either way.
fn column_gemv<M: Mode>(
    isa: Supported,
    a: &[f32],
    b: ArrayView2<'_, f32>,
    c: &mut [f32],
) -> Result<(), Error> {
    if isa.isa().width() < TRANSPOSED_WIDTH {
        return packed_column_gemv::<M>(isa, a, b, c);
    }
    let columns = b.reversed_axes();
    if !rows_contiguous(columns) {
        return Err(Error::InvalidArgument(
            "gemv: B columns not contiguous".into(),
        ));
    }
    let c = c
        .get_mut(..columns.nrows())
        .ok_or_else(|| Error::InvalidArgument("gemv: output buffer too short".into()))?;
    isa.dispatch::<M, _>(ColumnGemv { a, columns, c });
    Ok(())
}

/// [`column_gemv`] on lanes narrower than [`TRANSPOSED_WIDTH`]: `PANELS` panels of columns at a
/// time are packed into a buffer that stays in the first-level cache ([`COLUMN_VALUES`] values at
/// a time), then multiplied as packed panels are. Each element of C is the same sequential
/// sum from `+0` as with a [`super::PackedMatrix`] (the packing moves values, never rounds
/// them).
fn packed_column_gemv<M: Mode>(
    isa: Supported,
    a: &[f32],
    b: ArrayView2<'_, f32>,
    c: &mut [f32],
) -> Result<(), Error> {
    let (k, w) = b.dim();
    let nr = narrow_panel_width(isa.isa());
    let group = PANELS * nr;
    let column_depth = (COLUMN_VALUES / group).max(1);
    let mut packed = vec![0.0f32; group * column_depth.min(k)];
    for j0 in (0..w).step_by(group) {
        let cols = group.min(w - j0);
        let c = c
            .get_mut(j0..j0 + cols.next_multiple_of(nr))
            .ok_or_else(|| Error::InvalidArgument("gemv: output buffer too short".into()))?;
        for k0 in (0..k).step_by(column_depth) {
            let depth = column_depth.min(k - k0);
            let src = b.slice(s![k0..k0 + depth, j0..j0 + cols]);
            let len = pack_panels(src.reversed_axes(), nr, &mut packed);
            isa.dispatch::<M, _>(PanelGemv {
                a: &a[k0..k0 + depth],
                panels: &packed[..len],
                nr,
                c,
                zero: k0 == 0,
            });
        }
    }
    Ok(())
}

/// `c = +0 (+ ...) a[k] * panel[k]` over packed panels of `nr` columns, `PANELS` at a time;
/// `zero`: start from `+0`, else continue from `c` (a later K super-block).
struct PanelGemv<'t> {
    a: &'t [f32],
    panels: &'t [f32],
    nr: usize,
    c: &'t mut [f32],
    zero: bool,
}

impl LaneOp for PanelGemv<'_> {
    type Output = ();

    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        // The panel widths of the microkernels: four registers on the scalar lanes, six for a
        // `PackedMatrix` on AVX-512, `VECTOR_NV` on the other vector lanes (`const` conditions
        // prune the others at compile time).
        let nv = self.nr / L::WIDTH;
        debug_assert!(self.nr.is_multiple_of(L::WIDTH) && [VECTOR_NV, 4, 6].contains(&nv));
        if const { L::WIDTH == 1 } {
            panel_gemv::<L, M, 4>(l, self.a, self.panels, self.c, self.zero)
        } else if const { L::WIDTH == 16 } && nv == 6 {
            panel_gemv::<L, M, 6>(l, self.a, self.panels, self.c, self.zero)
        } else {
            panel_gemv::<L, M, VECTOR_NV>(l, self.a, self.panels, self.c, self.zero)
        }
    }
}

#[inline(always)]
fn panel_gemv<L: Lanes, M: Mode, const NV: usize>(
    l: L,
    a: &[f32],
    panels: &[f32],
    c: &mut [f32],
    zero: bool,
) {
    let w = L::WIDTH;
    let nr = NV * w;
    let depth = a.len();
    let plen = depth * nr;
    let mut groups = panels.chunks_exact(PANELS * plen);
    let mut cs = c.chunks_exact_mut(PANELS * nr);
    for (group, c) in (&mut groups).zip(&mut cs) {
        let mut acc = [[l.splat(0.0); NV]; PANELS];
        if !zero {
            for (p, acc) in acc.iter_mut().enumerate() {
                for (v, acc) in acc.iter_mut().enumerate() {
                    *acc = l.load(&c[p * nr + v * w..]);
                }
            }
        }
        let (p0, rest) = group.split_at(plen);
        let (p1, rest) = rest.split_at(plen);
        let (p2, p3) = rest.split_at(plen);
        let rows = p0
            .chunks_exact(nr)
            .zip(p1.chunks_exact(nr))
            .zip(p2.chunks_exact(nr).zip(p3.chunks_exact(nr)));
        for (k, (&ak, ((r0, r1), (r2, r3)))) in a.iter().zip(rows).enumerate() {
            if const { !M::FAST && NV == 6 } {
                if k + EXACT_PREFETCH_L2_STEPS < depth {
                    let ahead = (k + EXACT_PREFETCH_L2_STEPS) * nr;
                    for p in [p0, p1, p2, p3] {
                        prefetch_ahead_l2(p, ahead, nr);
                    }
                }
                if k + EXACT_PREFETCH_STEPS < depth {
                    let ahead = (k + EXACT_PREFETCH_STEPS) * nr;
                    for p in [p0, p1, p2, p3] {
                        prefetch_ahead(p, ahead, nr);
                    }
                }
            }
            let ak = l.splat(ak);
            for (acc, r) in acc.iter_mut().zip([r0, r1, r2, r3]) {
                for (v, acc) in acc.iter_mut().enumerate() {
                    *acc = M::madd(l, ak, l.load(&r[v * w..]), *acc);
                }
            }
        }
        for (p, acc) in acc.iter().enumerate() {
            for (v, acc) in acc.iter().enumerate() {
                l.store(*acc, &mut c[p * nr + v * w..]);
            }
        }
    }
    // The last panels, one at a time.
    for (panel, c) in groups
        .remainder()
        .chunks_exact(plen)
        .zip(cs.into_remainder().chunks_exact_mut(nr))
    {
        let mut acc = [l.splat(0.0); NV];
        if !zero {
            for (v, acc) in acc.iter_mut().enumerate() {
                *acc = l.load(&c[v * w..]);
            }
        }
        for (&ak, r) in a.iter().zip(panel.chunks_exact(nr)) {
            let ak = l.splat(ak);
            for (v, acc) in acc.iter_mut().enumerate() {
                *acc = M::madd(l, ak, l.load(&r[v * w..]), *acc);
            }
        }
        for (v, acc) in acc.iter().enumerate() {
            l.store(*acc, &mut c[v * w..]);
        }
    }
}

/// `c[j] = +0 (+ ...) a[k] * columns[j][k]`, `WIDTH` columns at a time: `WIDTH` values of
/// each column loaded as a register and the square transposed in registers
/// ([`Lanes::transpose_square`]), so that lane `i` of register `t` holds column `i` at
/// `k0 + t`; then one [`Mode::madd_splat`] per `k`, in increasing order, as a packed panel's
/// step. A decode step's keys are read once, straight into the registers: packing them through
/// a buffer first (as the GEMM packs a view) took longer than the product. Columns past the
/// last, and values past the end of a column, load as `+0` into lanes whose sums are not
/// stored or into registers never summed.
///
/// Each column is taken from the view as it is reached: a list of every column's slice made
/// first cost about as much as the transposes for a 64-value key.
struct ColumnGemv<'t> {
    a: &'t [f32],
    /// One column of B per row, each row contiguous (checked by [`column_gemv`]).
    columns: ArrayView2<'t, f32>,
    c: &'t mut [f32],
}

impl<'t> ColumnGemv<'t> {
    /// How many blocks of columns ahead the columns are prefetched: a decode step's keys come
    /// from L3 or memory (the step's weights streamed through the caches since the last
    /// step's attention), and the loads of one block alone kept too few lines in flight. Into
    /// L2, not L1: a long cache's keys stream from memory, and prefetches into L1 waited on
    /// its miss queue beside the loads (BENCHMARKS.md, "Choices in the code").
    const PREFETCH_BLOCKS: usize = 2;
    /// Values of each column prefetched, at most: all of a short column such as a key (64
    /// values, four lines); the hardware follows a long one.
    const PREFETCH_VALUES: usize = 64;

    /// Column `j` as a slice: a row of `columns`, contiguous.
    fn column(columns: ArrayView2<'t, f32>, j: usize) -> &'t [f32] {
        columns
            .index_axis_move(Axis(0), j)
            .to_slice()
            .expect("column_gemv checked that every column is contiguous")
    }
}

impl LaneOp for ColumnGemv<'_> {
    type Output = ();

    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        let w = L::WIDTH;
        let k = self.a.len();
        let n = self.columns.nrows();
        let mut regs = [l.splat(0.0); MAX_WIDTH];
        let regs = &mut regs[..w];
        for (j0, c) in (0..n).step_by(w).zip(self.c.chunks_mut(w)) {
            let ahead = j0 + Self::PREFETCH_BLOCKS * w;
            for j in ahead..(ahead + w).min(n) {
                let col = Self::column(self.columns, j);
                prefetch_l2(&col[..col.len().min(Self::PREFETCH_VALUES)]);
            }
            let mut columns: [&[f32]; MAX_WIDTH] = [&[]; MAX_WIDTH];
            for (j, col) in (j0..(j0 + w).min(n)).zip(columns.iter_mut()) {
                *col = Self::column(self.columns, j);
            }
            let mut acc = l.splat(0.0);
            for k0 in (0..k).step_by(w) {
                let depth = w.min(k - k0);
                for (r, col) in regs.iter_mut().zip(&columns) {
                    *r = if col.is_empty() {
                        l.splat(0.0)
                    } else if depth == w {
                        l.load(&col[k0..])
                    } else {
                        l.load_partial(&col[k0..k0 + depth], 0.0)
                    };
                }
                l.transpose_square(regs);
                for (ak, r) in self.a[k0..k0 + depth].iter().zip(regs.iter()) {
                    acc = M::madd_splat(l, ak, *r, acc);
                }
            }
            l.store_partial(acc, c);
        }
    }
}

/// `c = +0 (+ ...) a[k] * rows[k]`, `ROW_REGS` registers of columns at a time, then the
/// remaining columns one register (or part of one) at a time.
struct RowGemv<'t> {
    a: &'t [f32],
    rows: &'t [&'t [f32]],
    c: &'t mut [f32],
}

impl LaneOp for RowGemv<'_> {
    type Output = ();

    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        let w = L::WIDTH;
        let block = ROW_REGS * w;
        let n = self.c.len();
        let mut j0 = 0;
        while j0 + block <= n {
            let mut acc = [l.splat(0.0); ROW_REGS];
            for (&ak, row) in self.a.iter().zip(self.rows) {
                let ak = l.splat(ak);
                let row = &row[j0..j0 + block];
                for (v, acc) in acc.iter_mut().enumerate() {
                    *acc = M::madd(l, ak, l.load(&row[v * w..]), *acc);
                }
            }
            for (v, acc) in acc.iter().enumerate() {
                l.store(*acc, &mut self.c[j0 + v * w..]);
            }
            j0 += block;
        }
        while j0 < n {
            let j1 = (j0 + w).min(n);
            let mut acc = l.splat(0.0);
            for (&ak, row) in self.a.iter().zip(self.rows) {
                acc = M::madd(l, l.splat(ak), l.load_partial(&row[j0..j1], 0.0), acc);
            }
            l.store_partial(acc, &mut self.c[j0..j1]);
            j0 = j1;
        }
    }
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::{CHUNK, chunk_widths};

    /// Every cut covers the columns in order with whole groups (a partial one only at the
    /// end), at most `CHUNK` columns per chunk (or one group), chunk sizes at most a group
    /// apart, and threads taking the chunks in turn each get at most their share of the groups
    /// rounded up; a decode step's products split evenly over two threads.
    pub fn chunks_cover_the_columns_and_balance_the_threads() {
        for group in [16, 32, 64, 96, 384] {
            for n in (0..40 * group).step_by(7).chain([1, group, 12 * group]) {
                for threads in 1..=4 {
                    let w: Vec<usize> = chunk_widths(group, n, threads).collect();
                    let what = format!("group {group}, n {n}, {threads} threads: {w:?}");
                    assert_eq!(w.iter().sum::<usize>(), n, "{what}");
                    let (last, whole) = w.split_last().map_or((0, &[][..]), |(l, r)| (*l, r));
                    assert!(whole.iter().all(|&x| x > 0 && x % group == 0), "{what}");
                    assert!(last > 0 || n == 0, "{what}");
                    assert!(w.iter().all(|&x| x <= CHUNK.max(group)), "{what}");
                    let g: Vec<usize> = w.iter().map(|x| x.div_ceil(group)).collect();
                    let (lo, hi) = (g.iter().min(), g.iter().max());
                    assert!(hi.zip(lo).is_none_or(|(h, l)| h - l <= 1), "{what}");
                    let mut load = vec![0; threads];
                    for (i, x) in g.iter().enumerate() {
                        load[i % threads] += x;
                    }
                    let share = n.div_ceil(group).div_ceil(threads);
                    assert!(load.iter().all(|&l| l <= share), "{what}");
                }
            }
        }
        // The decode step's products on AVX2's 64-column groups: 768, 2304 and 3072 columns
        // (GPT-2 small), 384, 1152 and 1536 (MiniLM), each thread the same columns.
        for n in [768, 2304, 3072, 384, 1152, 1536] {
            let w: Vec<usize> = chunk_widths(64, n, 2).collect();
            let (even, odd): (Vec<_>, Vec<_>) = w.iter().enumerate().partition(|(i, _)| i % 2 == 0);
            let sum = |v: Vec<(usize, &usize)>| v.iter().map(|(_, x)| **x).sum::<usize>();
            assert_eq!(sum(even), sum(odd), "{n}: {w:?}");
        }
    }
}
