//! The microkernel: an `MR x NR` block of C (`NR = NV` registers of `L::WIDTH` lanes), updated
//! by `kc` rank-1 steps from packed panels of A and B. Written once, over the lane type and the
//! mode.
//!
//! Each element of C lives in one lane of one accumulator register for the whole call and gets
//! `acc = M::madd_splat(&a[i][k], b[k][j], acc)` for `k = 0, 1, ...` in order: in
//! [`crate::Exact`] the product rounded, then the sum rounded (`a*b + acc`, which is
//! `acc + a*b`: IEEE addition is commutative); in [`crate::Fast`] one fused multiply-add. Lanes
//! never mix, so neither the lane width nor the register blocking changes a bit. How `a[i][k]`
//! reaches every lane is the lane type's choice ([`crate::lanes::Lanes::mul_splat`]): a
//! broadcast register, or on AVX-512 in exact mode a broadcast inside each multiply.

use crate::lanes::Lanes;
use crate::lanes::Mode;
use crate::lanes::{Isa, IsaSet};

use ndarray::{ArrayView2, s};

use super::pack::pack_panels;
use crate::lanes::LaneOp;

/// A microkernel shape, chosen per instruction set at the type level: `MR` rows of C by `NV`
/// registers of columns. The driver is generic over it, so each shape is compiled once per
/// instruction set with its loops fully unrolled.
pub(crate) trait MicroKernel: Copy + Send + Sync + 'static {
    /// Rows of C per microkernel call.
    const MR: usize;
    /// Registers across the columns of C.
    const NV: usize;
    /// Whether the driver lets this kernel read A where it lies (rows with unit column
    /// stride) rather than pack it, and accumulate in C itself where C's rows are contiguous,
    /// rather than in a tile buffer copied to C at the end. Only the AVX-512 4 x 6 kernel does:
    /// there it paid in alternated runs (fast mode most), while AVX2's 6 x 2 kernel, which
    /// keeps six row pointers of A beside its loop, was no faster and at times slower
    /// (BENCHMARKS.md, "Choices in the code"); 14 x 2 would spill its 14 row pointers, and the
    /// NEON and scalar kernels are unmeasured. C in place with A still packed was no faster
    /// for 6 x 2 either: the buffer it saves copying is a small share of the time, and where
    /// C's rows are a multiple of 4 KiB apart (1024 or 3072 columns) the six rows of a
    /// microtile fall in one set of the L1 cache beside the B micro-panel, which the buffer's
    /// padded stride avoids. The bits are the same either way.
    const IN_PLACE: bool;
    /// Depth of one K block ([`crate::gemm::blocking::Blocking::kc`]): how many rank-1 steps one
    /// microkernel call takes between loading its accumulators from C and storing them back.
    /// 1024 for the AVX2/SSE2 6 x 2 kernel, though its B micro-panel (64 KB) then streams from
    /// L2: on Zen 3 the stores and reloads of the accumulators and the loop's start at each
    /// call cost more than the L1 saves (BENCHMARKS.md, "Choices in the code"). 256 for the
    /// others, unmeasured on their machines at any other depth.
    const KC: usize;
    /// Whether each microkernel call first asks for a share of the next B micro-panel to be
    /// brought into L2 ([`next_micro_panel`]), so that the panel a band of rows reads first
    /// from memory (weights not read since the last call of the model) is in L2 when its
    /// first A panel comes to it. Only 14 x 2, where it was measured (Intel, BENCHMARKS.md,
    /// "Choices in the code"): the hardware prefetchers stop at each 4 KiB page of its
    /// 32 KB B micro-panel.
    const PREFETCH_B: bool;
    /// The instruction sets that run this shape (`crate::gemm::Gemm` chooses it for them
    /// alone): the driver dispatches its tiles on these only, so that it is not compiled for
    /// lane types that never run it.
    type Isas: IsaSet;
    /// The K blocks of one output tile with this shape (see [`k_blocks`]).
    fn k_blocks<L: Lanes, M: Mode>(l: L, op: TileProduct<'_, '_, Self>);
}

macro_rules! micro_kernels {
    ($($(#[$doc:meta])* $name:ident = ($mr:literal, $nv:literal, $in_place:literal, $pairs:literal, $kc:literal, $prefetch:literal) on
        [$($isa:ident),*];)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name;
        impl MicroKernel for $name {
            const MR: usize = $mr;
            const NV: usize = $nv;
            const IN_PLACE: bool = $in_place;
            const KC: usize = $kc;
            const PREFETCH_B: bool = $prefetch;
            type Isas = Self;
            #[inline(always)]
            fn k_blocks<L: Lanes, M: Mode>(l: L, op: TileProduct<'_, '_, Self>) {
                k_blocks::<L, M, Self, $mr, $nv, $in_place, $pairs, { Self::PREFETCH_B }>(l, op)
            }
        }
        impl IsaSet for $name {
            const SCALAR: bool = runs_on(&[$(Isa::$isa),*], Isa::Scalar);
            const SSE2: bool = runs_on(&[$(Isa::$isa),*], Isa::Sse2);
            const AVX2: bool = runs_on(&[$(Isa::$isa),*], Isa::Avx2);
            const AVX512: bool = runs_on(&[$(Isa::$isa),*], Isa::Avx512);
            const NEON: bool = runs_on(&[$(Isa::$isa),*], Isa::Neon);
        }
    )*};
}

/// Whether `isa` is in `isas` (for the constants of a kernel's [`IsaSet`]).
const fn runs_on(isas: &[Isa], isa: Isa) -> bool {
    let mut i = 0;
    while i < isas.len() {
        if isas[i] as u8 == isa as u8 {
            return true;
        }
        i += 1;
    }
    false
}

micro_kernels! {
    /// 4 x 6 registers: 24 accumulators, 6 B registers and a broadcast of the 32 AVX-512
    /// registers, for wide products and every `PackedMatrix` on a core that halves 512-bit
    /// operations (Zen 4, [`super::blocking::wide_kernel_preferred`]). One broadcast feeds six
    /// products: exact mode's separate multiplies and adds compete with the broadcasts for
    /// the FP pipes, so the 14 x 2 kernel (one broadcast per two products) left exact mode far
    /// behind fast mode's rate, and 4 x 6 closes most of that gap with fast mode no slower on
    /// the block's shapes (BENCHMARKS.md).
    Mr4Nv6 = (4, 6, true, false, 256, false) on [Avx512];
    /// 14 x 2 registers: 28 accumulators of the 32 AVX-512 registers, for products whose
    /// width would leave much of a 96-column panel empty (attention's 64-wide head, a 256-key
    /// tile of scores): 32-column panels waste less there. On cores with two full-width FMA
    /// pipes (Intel's) it takes every product: its B micro-panel stays in L1, where 4 x 6's
    /// streams from L2 at more bytes per cycle than L2 gives.
    Mr14Nv2 = (14, 2, false, false, 256, true) on [Avx512];
    /// 6 x 2 registers: 12 accumulators, 2 B registers and a broadcast of the 16 AVX2/SSE2
    /// registers. Its loop takes the depth in pairs (see [`microkernel`]).
    Mr6Nv2 = (6, 2, false, true, 1024, false) on [Sse2, Avx2];
    /// 4 x 4 one-lane accumulators for scalar code.
    Mr4Nv4 = (4, 4, false, false, 256, false) on [Scalar];
    /// 8 x 3 registers: 24 accumulators, 3 B registers and the values of A (multiplied by
    /// element, `fmla v, v, v.s[i]`) of NEON's 32 registers, for fast mode: each B load feeds
    /// eight fused multiply-adds and each A value three. The 4-lane registers make a 12-column
    /// panel.
    Mr8Nv3 = (8, 3, false, false, 256, false) on [Neon];
    /// 6 x 3 registers for NEON's exact mode: the 12-column panels of [`Mr8Nv3`], but each
    /// step's products need registers of their own beside the accumulators (the multiply and
    /// the add are separate), and with 24 accumulators the compiler spilled them to the stack
    /// inside the loop; 18 leave room.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    Mr6Nv3 = (6, 3, false, false, 256, false) on [Neon];
}

/// The `MR` rows of A one microkernel call reads, `kc` deep: a packed panel, or the rows of A
/// where they lie.
pub(crate) trait APanel<const MR: usize> {
    /// The values of `k` every row has: the microkernel's loop bound, from which the compiler
    /// sees that [`APanel::at`] needs no bounds check.
    fn depth(&self) -> usize;
    /// `&A[i, k]`.
    fn at(&self, k: usize, i: usize) -> &f32;
    /// The panel's depths in pairs when it is packed (a trailing odd depth left out).
    #[inline(always)]
    fn pairs(&self) -> Option<&[[[f32; MR]; 2]]> {
        None
    }
}

/// A packed A micro-panel: `kc` rows of `MR` values (`a[k][i] = A[i, k]`).
pub(crate) struct PackedA<'a, const MR: usize>(pub &'a [[f32; MR]]);

impl<const MR: usize> APanel<MR> for PackedA<'_, MR> {
    #[inline(always)]
    fn depth(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn at(&self, k: usize, i: usize) -> &f32 {
        &self.0[k][i]
    }
    #[inline(always)]
    fn pairs(&self) -> Option<&[[[f32; MR]; 2]]> {
        Some(self.0.as_chunks::<2>().0)
    }
}

/// The first `R` rows of a packed panel of `MR` rows: the last panel of a tile whose rows end
/// within it, so that the rows past the end (zeros in the panel) are not multiplied.
pub(crate) struct ShortA<'a, const MR: usize>(pub &'a [[f32; MR]]);

impl<const MR: usize, const R: usize> APanel<R> for ShortA<'_, MR> {
    #[inline(always)]
    fn depth(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn at(&self, k: usize, i: usize) -> &f32 {
        &self.0[k][i]
    }
}

/// `MR` rows of A in place, each `kc` long (a row past the end of A is a row of zeros).
pub(crate) struct RowsA<'a, const MR: usize>(pub [&'a [f32]; MR]);

impl<const MR: usize> APanel<MR> for RowsA<'_, MR> {
    #[inline(always)]
    fn depth(&self) -> usize {
        let mut d = usize::MAX;
        for row in &self.0 {
            d = d.min(row.len());
        }
        d
    }
    #[inline(always)]
    fn at(&self, k: usize, i: usize) -> &f32 {
        &self.0[i][k]
    }
}

/// The `MR` rows of C one microkernel call accumulates into.
pub(crate) trait CRows {
    /// Row `i`, from the microtile's first column (at least `NR` values).
    fn row(&mut self, i: usize) -> &mut [f32];
}

/// Rows `ld` apart in one buffer (the tile buffer, or an edge microtile).
pub(crate) struct StridedC<'c> {
    pub buf: &'c mut [f32],
    pub ld: usize,
}

impl CRows for StridedC<'_> {
    #[inline(always)]
    fn row(&mut self, i: usize) -> &mut [f32] {
        &mut self.buf[i * self.ld..]
    }
}

/// Rows of C itself, from column `col`.
pub(crate) struct SlicesC<'r, 'c> {
    pub rows: &'r mut [&'c mut [f32]],
    pub col: usize,
}

impl CRows for SlicesC<'_, '_> {
    #[inline(always)]
    fn row(&mut self, i: usize) -> &mut [f32] {
        &mut self.rows[i][self.col..]
    }
}

/// `C[..MR, ..NV*W] = start + sum over k of A[i, k] * b[k][j]`, in increasing `k`.
///
/// * `a`: the `MR` rows of A, `kc` deep.
/// * `b`: the packed B micro-panel, `kc` rows of `NV * L::WIDTH` values (`b[k*NR + j]`).
/// * `c`: the C block.
/// * `zero`: start from `+0` (the first K block); else continue from the partial sums in `c`.
///
/// `PAIRS`: a packed A panel's depth runs two steps per loop iteration (an odd last step
/// alone), so that the loop's own instructions (counter, pointers, branch) come once per two
/// steps. Each accumulator still takes its products in increasing `k`: the bits are the same.
/// With exact mode's separate multiply and add, a step of the AVX2 6 x 2 kernel is 32 vector
/// instructions, about what the front end issues in the six cycles its multiplies and adds take
/// on the FP pipes, so the loop's overhead showed in exact mode's rate (BENCHMARKS.md, "Choices
/// in the code"); fast mode was unchanged.
#[inline(always)]
pub(crate) fn microkernel<
    L: Lanes,
    M: Mode,
    const MR: usize,
    const NV: usize,
    const PAIRS: bool,
>(
    l: L,
    a: &impl APanel<MR>,
    b: &[f32],
    c: &mut impl CRows,
    zero: bool,
) {
    let w = L::WIDTH;
    let nr = NV * w;
    let mut acc = [[l.splat(0.0); NV]; MR];
    if !zero {
        for (i, acc) in acc.iter_mut().enumerate() {
            let row = &c.row(i)[..nr];
            for (v, acc) in acc.iter_mut().enumerate() {
                *acc = l.load(&row[v * w..]);
            }
        }
    }
    let depth = a.depth();
    let mut done = 0;
    if PAIRS && let Some(pairs) = a.pairs() {
        let in_asm = !M::FAST
            && MR == 6
            && NV == 2
            && l.exact_pairs_6x2(
                pairs.as_flattened().as_flattened(),
                &b[..2 * pairs.len() * nr],
                acc.as_flattened_mut(),
            );
        if !in_asm {
            for (a2, bk) in pairs.iter().zip(b.chunks_exact(2 * nr)) {
                k_step_packed::<L, M, MR, NV>(l, &a2[0], &bk[..nr], &mut acc);
                k_step_packed::<L, M, MR, NV>(l, &a2[1], &bk[nr..], &mut acc);
            }
        }
        done = 2 * pairs.len();
    }
    for (k, bk) in (done..depth).zip(b[done * nr..].chunks_exact(nr)) {
        k_step::<L, M, MR, NV>(l, a, k, bk, &mut acc);
    }
    for (i, acc) in acc.iter().enumerate() {
        let row = &mut c.row(i)[..nr];
        for (v, acc) in acc.iter().enumerate() {
            l.store(*acc, &mut row[v * w..]);
        }
    }
}

/// [`k_step`] with A's values at this depth packed together.
#[inline(always)]
fn k_step_packed<L: Lanes, M: Mode, const MR: usize, const NV: usize>(
    l: L,
    ak: &[f32; MR],
    bk: &[f32],
    acc: &mut [[L::F; NV]; MR],
) {
    let w = L::WIDTH;
    let mut bv = [l.splat(0.0); NV];
    for (v, bv) in bv.iter_mut().enumerate() {
        *bv = l.load(&bk[v * w..]);
    }
    for (acc, ai) in acc.iter_mut().zip(ak) {
        for (acc, &bv) in acc.iter_mut().zip(&bv) {
            *acc = M::madd_splat(l, ai, bv, *acc);
        }
    }
}

/// One step of k of [`microkernel`]: `acc[i][v] += A[i, k] * bk[v]`.
#[inline(always)]
fn k_step<L: Lanes, M: Mode, const MR: usize, const NV: usize>(
    l: L,
    a: &impl APanel<MR>,
    k: usize,
    bk: &[f32],
    acc: &mut [[L::F; NV]; MR],
) {
    let w = L::WIDTH;
    // No closures here (`array::from_fn`): all of this must inline into the trampoline.
    let mut bv = [l.splat(0.0); NV];
    for (v, bv) in bv.iter_mut().enumerate() {
        *bv = l.load(&bk[v * w..]);
    }
    for (i, acc) in acc.iter_mut().enumerate() {
        let ai = a.at(k, i);
        for (acc, &bv) in acc.iter_mut().zip(&bv) {
            *acc = M::madd_splat(l, ai, bv, *acc);
        }
    }
}

/// Where a tile of C accumulates.
pub(crate) enum TileC<'r, 'c> {
    /// A buffer of `mc_pad` rows `ldc` apart, padded to whole microtiles.
    Buffer { buf: &'c mut [f32], ldc: usize },
    /// The tile's rows of C itself (all of one length); microtiles past its last row or column
    /// go through the edge buffer.
    InPlace(&'r mut [&'c mut [f32]]),
}

/// The product part of one tile (all its K blocks of the super-block), run inside the
/// instruction set's trampoline by the microkernel `K`.
pub(crate) struct TileProduct<'t, 'r, K> {
    /// Depth of one K block.
    pub kc: usize,
    /// The tile's rows of A, the super-block's columns.
    pub a: ArrayView2<'t, f32>,
    /// The same rows of A as slices, when A is read in place (else it is packed).
    pub a_rows: Option<&'r [&'t [f32]]>,
    /// `kc` zeros: the rows of an A panel past the tile's last row, when A is read in place.
    pub zeros: &'t [f32],
    pub bpack: &'t [f32],
    /// The tile's A packed for the whole super-block by its slab ([`TileProduct::apack`]'s
    /// layout, K block after K block), or `None`: the tile packs each K block into `apack`.
    pub apacked: Option<&'t [f32]>,
    pub apack: &'t mut [f32],
    pub c: TileC<'r, 't>,
    /// One microtile (`MR x NR`), for C's edge microtiles.
    pub edge: &'t mut [f32],
    pub mc_pad: usize,
    pub nt_pad: usize,
    pub zero: bool,
    pub kernel: core::marker::PhantomData<K>,
}

impl<K: MicroKernel> LaneOp for TileProduct<'_, '_, K> {
    type Output = ();

    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        K::k_blocks::<L, M>(l, self)
    }
}

/// For each K block: pack the tile's A block (unless A is read in place), then every (B panel,
/// A panel) microkernel call.
#[inline(always)]
///
/// `IN_PLACE` is [`MicroKernel::IN_PLACE`]: A read in place and C accumulated in place are
/// compiled only for a kernel that does so. `PREFETCH` is [`MicroKernel::PREFETCH_B`].
pub(crate) fn k_blocks<
    L: Lanes,
    M: Mode,
    K,
    const MR: usize,
    const NV: usize,
    const IN_PLACE: bool,
    const PAIRS: bool,
    const PREFETCH: bool,
>(
    l: L,
    op: TileProduct<'_, '_, K>,
) {
    let nr = NV * L::WIDTH;
    let depth = op.a.ncols();
    let kc = op.kc;
    let mut c = op.c;
    for (p, pc) in (0..depth).step_by(kc).enumerate() {
        let kcur = kc.min(depth - pc);
        let apanels = match (op.a_rows, op.apacked) {
            (Some(_), _) => &[][..],
            (None, Some(all)) => {
                all[op.mc_pad * pc..][..op.mc_pad * kcur]
                    .as_chunks::<MR>()
                    .0
            }
            (None, None) => {
                let len = pack_panels(op.a.slice(s![.., pc..pc + kcur]), MR, op.apack);
                op.apack[..len].as_chunks::<MR>().0
            }
        };
        let zero = op.zero && p == 0;
        let (panels, calls) = (op.nt_pad / nr, op.mc_pad / MR);
        for jr in 0..panels {
            let bpanel = &op.bpack[jr * depth * nr + pc * nr..][..kcur * nr];
            let next = if PREFETCH {
                &op.bpack[next_micro_panel(jr, panels, pc, kc, depth, nr)]
            } else {
                &[][..]
            };
            // A share of whole lines per call, so that the shares cover it.
            let share = next.len().div_ceil(calls).next_multiple_of(16).max(16);
            for ir in 0..calls {
                if PREFETCH && let Some(part) = next.chunks(share).nth(ir) {
                    crate::lanes::prefetch_l2(part);
                }
                match op.a_rows {
                    Some(rows) if IN_PLACE => {
                        let mut these = [&op.zeros[..kcur]; MR];
                        for (t, row) in these.iter_mut().zip(&rows[ir * MR..]) {
                            *t = &row[pc..pc + kcur];
                        }
                        c_block::<L, M, MR, NV, IN_PLACE, PAIRS>(
                            l,
                            &RowsA(these),
                            bpanel,
                            &mut c,
                            op.edge,
                            ir,
                            jr,
                            zero,
                        );
                    }
                    Some(_) => unreachable!("A in place for a kernel that packs it"),
                    None => {
                        let panel = &apanels[ir * kcur..(ir + 1) * kcur];
                        let rows = op.a.nrows().saturating_sub(ir * MR);
                        if !short_block::<L, M, MR, NV>(
                            l, panel, rows, bpanel, &mut c, ir, jr, zero,
                        ) {
                            c_block::<L, M, MR, NV, IN_PLACE, PAIRS>(
                                l,
                                &PackedA(panel),
                                bpanel,
                                &mut c,
                                op.edge,
                                ir,
                                jr,
                                zero,
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Where in a tile's packed B (`depth` deep, panels of `nr` columns) lies the micro-panel the
/// tile reads after that of panel `jr` (of `panels`) in the K block at `pc` (`kc` deep): panel
/// `jr + 1` of the same K block, else the first panel of the next K block, else none (empty).
pub(crate) fn next_micro_panel(
    jr: usize,
    panels: usize,
    pc: usize,
    kc: usize,
    depth: usize,
    nr: usize,
) -> core::ops::Range<usize> {
    let (next_jr, next_pc) = if jr + 1 < panels {
        (jr + 1, pc)
    } else if pc + kc < depth {
        (0, pc + kc)
    } else {
        return 0..0;
    };
    let start = next_jr * depth * nr + next_pc * nr;
    start..start + kc.min(depth - next_pc) * nr
}

/// The microkernel on the first rows of microtile `(ir, jr)` of the tile buffer when the tile's
/// `rows` end within its panel: 2, 4 or (14-row kernels) 8 rows, the fewest that hold the real
/// ones (a 256-row product ends in a panel of 4 rows of the 6 x 2 kernel and of the 14 x 2
/// one, a 64-row query block in 4 and 8), so that the zero rows of the panel are not
/// multiplied. The rows it leaves are padding, never copied to C; each real element takes the
/// same steps, so the bits do not change. Only for the 6- and 14-row kernels, which
/// accumulate in a buffer; `false` where it does not apply.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn short_block<L: Lanes, M: Mode, const MR: usize, const NV: usize>(
    l: L,
    panel: &[[f32; MR]],
    rows: usize,
    b: &[f32],
    c: &mut TileC<'_, '_>,
    ir: usize,
    jr: usize,
    zero: bool,
) -> bool {
    let TileC::Buffer { buf, ldc } = c else {
        return false;
    };
    let most = match MR {
        6 => 4,
        14 => 8,
        _ => 0,
    };
    if rows > most {
        return false;
    }
    let nr = NV * L::WIDTH;
    let mut dst = StridedC {
        buf: &mut buf[ir * MR * *ldc + jr * nr..],
        ld: *ldc,
    };
    let a = ShortA(panel);
    if rows <= 2 {
        microkernel::<L, M, 2, NV, false>(l, &a, b, &mut dst, zero);
    } else if rows <= 4 {
        microkernel::<L, M, 4, NV, false>(l, &a, b, &mut dst, zero);
    } else if MR >= 8 {
        microkernel::<L, M, 8, NV, false>(l, &a, b, &mut dst, zero);
    }
    true
}

/// One microkernel call on microtile `(ir, jr)` of the tile: on the tile buffer, on C in place,
/// or (an edge of C in place) through `edge` and back to C's rows and columns that exist.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn c_block<
    L: Lanes,
    M: Mode,
    const MR: usize,
    const NV: usize,
    const IN_PLACE: bool,
    const PAIRS: bool,
>(
    l: L,
    a: &impl APanel<MR>,
    b: &[f32],
    c: &mut TileC<'_, '_>,
    edge: &mut [f32],
    ir: usize,
    jr: usize,
    zero: bool,
) {
    let nr = NV * L::WIDTH;
    let (r0, c0) = (ir * MR, jr * nr);
    match c {
        TileC::Buffer { buf, ldc } => {
            let mut rows = StridedC {
                buf: &mut buf[r0 * *ldc + c0..],
                ld: *ldc,
            };
            microkernel::<L, M, MR, NV, PAIRS>(l, a, b, &mut rows, zero);
        }
        TileC::InPlace(rows) if IN_PLACE => {
            let w = rows.first().map_or(0, |r| r.len());
            let h = rows.len();
            if r0 + MR <= h && c0 + nr <= w {
                let mut rows = SlicesC {
                    rows: &mut rows[r0..r0 + MR],
                    col: c0,
                };
                microkernel::<L, M, MR, NV, PAIRS>(l, a, b, &mut rows, zero);
            } else {
                let (hh, ww) = (h - r0, (w - c0).min(nr));
                let edge = &mut edge[..MR * nr];
                if !zero {
                    for (dst, src) in edge.chunks_exact_mut(nr).zip(&rows[r0..]) {
                        dst[..ww].copy_from_slice(&src[c0..c0 + ww]);
                    }
                }
                let mut tmp = StridedC { buf: edge, ld: nr };
                microkernel::<L, M, MR, NV, PAIRS>(l, a, b, &mut tmp, zero);
                for (src, dst) in tmp.buf.chunks_exact(nr).zip(&mut rows[r0..r0 + hh.min(MR)]) {
                    dst[c0..c0 + ww].copy_from_slice(&src[..ww]);
                }
            }
        }
        TileC::InPlace(_) => unreachable!("C in place for a kernel that uses a buffer"),
    }
}
