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
    /// The K blocks of one output tile with this shape (see [`k_blocks`]).
    fn k_blocks<L: Lanes, M: Mode>(l: L, op: TileProduct<'_, Self>);
}

macro_rules! micro_kernels {
    ($($(#[$doc:meta])* $name:ident = ($mr:literal, $nv:literal);)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name;
        impl MicroKernel for $name {
            const MR: usize = $mr;
            const NV: usize = $nv;
            #[inline(always)]
            fn k_blocks<L: Lanes, M: Mode>(l: L, op: TileProduct<'_, Self>) {
                k_blocks::<L, M, Self, $mr, $nv>(l, op)
            }
        }
    )*};
}

micro_kernels! {
    /// 4 x 6 registers: 24 accumulators, 6 B registers and a broadcast of the 32 AVX-512
    /// registers, for wide products and every `PackedMatrix`. One broadcast feeds six
    /// products: exact mode's separate multiplies and adds compete with the broadcasts for
    /// the FP pipes, so the 14 x 2 kernel (one broadcast per two products) left exact mode far
    /// behind fast mode's rate, and 4 x 6 closes most of that gap with fast mode no slower on
    /// the block's shapes (BENCHMARKS.md).
    Mr4Nv6 = (4, 6);
    /// 14 x 2 registers: 28 accumulators of the 32 AVX-512 registers, for products whose
    /// width would leave much of a 96-column panel empty (attention's 64-wide head, a 256-key
    /// tile of scores): 32-column panels waste less there.
    Mr14Nv2 = (14, 2);
    /// 6 x 2 registers: 12 accumulators, 2 B registers and a broadcast of the 16 AVX2/SSE2
    /// registers.
    Mr6Nv2 = (6, 2);
    /// 4 x 4 one-lane accumulators for scalar code.
    Mr4Nv4 = (4, 4);
    /// 8 x 3 registers: 24 accumulators, 3 B registers and the values of A (multiplied by
    /// element, `fmla v, v, v.s[i]`) of NEON's 32 registers, for fast mode: each B load feeds
    /// eight fused multiply-adds and each A value three. The 4-lane registers make a 12-column
    /// panel.
    Mr8Nv3 = (8, 3);
    /// 6 x 3 registers for NEON's exact mode: the 12-column panels of [`Mr8Nv3`], but each
    /// step's products need registers of their own beside the accumulators (the multiply and
    /// the add are separate), and with 24 accumulators the compiler spilled them to the stack
    /// inside the loop; 18 leave room.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    Mr6Nv3 = (6, 3);
}

/// `C[..MR, ..NV*W] = start + sum over k of a[k][i] * b[k][j]`, in increasing `k`.
///
/// * `a`: the packed A micro-panel, `kc` rows of `MR` values (`a[k][i] = A[i, k]`).
/// * `b`: the packed B micro-panel, `kc` rows of `NV * L::WIDTH` values (`b[k*NR + j]`).
/// * `c`: the C block, row `i` at `c[i*ldc..]`, `NV * L::WIDTH` values per row.
/// * `zero`: start from `+0` (the first K block); else continue from the partial sums in `c`.
#[inline(always)]
pub(crate) fn microkernel<L: Lanes, M: Mode, const MR: usize, const NV: usize>(
    l: L,
    a: &[[f32; MR]],
    b: &[f32],
    c: &mut [f32],
    ldc: usize,
    zero: bool,
) {
    let w = L::WIDTH;
    let nr = NV * w;
    let mut acc = [[l.splat(0.0); NV]; MR];
    if !zero {
        for (i, acc) in acc.iter_mut().enumerate() {
            let row = &c[i * ldc..i * ldc + nr];
            for (v, acc) in acc.iter_mut().enumerate() {
                *acc = l.load(&row[v * w..]);
            }
        }
    }
    for (ak, bk) in a.iter().zip(b.chunks_exact(nr)) {
        // No closures here (`array::from_fn`): all of this must inline into the trampoline.
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
    for (i, acc) in acc.iter().enumerate() {
        let row = &mut c[i * ldc..i * ldc + nr];
        for (v, acc) in acc.iter().enumerate() {
            l.store(*acc, &mut row[v * w..]);
        }
    }
}

/// The product part of one tile (all its K blocks of the super-block), run inside the
/// instruction set's trampoline by the microkernel `K`.
pub(crate) struct TileProduct<'t, K> {
    /// Depth of one K block.
    pub kc: usize,
    pub a: ArrayView2<'t, f32>,
    pub bpack: &'t [f32],
    pub apack: &'t mut [f32],
    pub cbuf: &'t mut [f32],
    pub ldc: usize,
    pub mc_pad: usize,
    pub nt_pad: usize,
    pub zero: bool,
    pub kernel: core::marker::PhantomData<K>,
}

impl<K: MicroKernel> LaneOp for TileProduct<'_, K> {
    type Output = ();

    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        K::k_blocks::<L, M>(l, self)
    }
}

/// For each K block: pack the tile's A block, then every (B panel, A panel) microkernel call.
#[inline(always)]
pub(crate) fn k_blocks<L: Lanes, M: Mode, K, const MR: usize, const NV: usize>(
    l: L,
    op: TileProduct<'_, K>,
) {
    let nr = NV * L::WIDTH;
    let depth = op.a.ncols();
    let kc = op.kc;
    for (p, pc) in (0..depth).step_by(kc).enumerate() {
        let kcur = kc.min(depth - pc);
        let len = pack_panels(op.a.slice(s![.., pc..pc + kcur]), MR, op.apack);
        let (apanels, _) = op.apack[..len].as_chunks::<MR>();
        for jr in 0..op.nt_pad / nr {
            let bpanel = &op.bpack[jr * depth * nr + pc * nr..][..kcur * nr];
            for ir in 0..op.mc_pad / MR {
                microkernel::<L, M, MR, NV>(
                    l,
                    &apanels[ir * kcur..(ir + 1) * kcur],
                    bpanel,
                    &mut op.cbuf[ir * MR * op.ldc + jr * nr..],
                    op.ldc,
                    op.zero && p == 0,
                );
            }
        }
    }
}
