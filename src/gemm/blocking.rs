//! Block sizes: the microkernel of each instruction set, the cache blocking of the driver, and
//! the depth of a K super-block (which is also the layout of a `PackedMatrix`).

use super::kernel::{MicroKernel, Mr4Nv4, Mr4Nv6, Mr6Nv2, Mr8Nv3, Mr14Nv2};
use crate::lanes::Isa;

/// Block sizes for one microkernel shape and lane width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Blocking {
    /// Rows of the microkernel.
    pub mr: usize,
    /// Columns of the microkernel: `NV` registers of the lane width.
    pub nr: usize,
    /// Depth of one K block (packed A block and B micro-panels).
    pub kc: usize,
    /// Rows of an output tile (a multiple of `mr`).
    pub mc: usize,
    /// Columns of an output tile (a multiple of `nr`).
    pub nt: usize,
    /// Depth of a K super-block (rows of packed B held at once).
    pub kb: usize,
    /// Values of packed B held at once (per round), at most.
    pub budget: usize,
}

/// Depth of a K super-block in production (and in the layout of a `PackedMatrix`).
pub(crate) const KB: usize = 4096;

impl Blocking {
    /// The blocking for the microkernel `K` on lanes of `width` `f32`s.
    ///
    /// An output tile is 8 microkernel rows by 1024 columns, and a K block is the kernel's
    /// [`MicroKernel::KC`] deep. For AVX2 (6 x 16, 1024 deep) the tile's buffer (48 x 1040
    /// values, 200 KB) and the packed A block (48 x 1024, 192 KB) share a 512 KB L2 with the
    /// packed B micro-panel (1024 x 16, 64 KB) that the 8 A panels of the tile read in turn. A
    /// tile 1024 wide covers the columns of a 1024-wide product at once, so A is packed once
    /// per K block. For AVX-512's 4 x 96 (256 deep) the tile is 32 x 960 (the widest whole
    /// number of 96-column panels, 123 KB) and a B micro-panel (256 x 96, 96 KB) is read from
    /// L2 (1 MB or more on the CPUs that have AVX-512) by the 8 A panels of the tile; for its
    /// 14 x 32 the tile is 112 x 1024 and the B micro-panel (256 x 32, 32 KB) stays in L1.
    ///
    /// `nt` is the widest tile: the driver cuts a slab into equal tiles, narrower for a deep
    /// product (at most 2 MiB of packed B per tile, so that the tile's bands find B in L3) or
    /// for one spread over threads (enough tiles to share).
    pub(crate) fn of<K: MicroKernel>(width: usize) -> Blocking {
        Blocking {
            mr: K::MR,
            nr: K::NV * width,
            kc: K::KC,
            mc: 8 * K::MR,
            // Whole panels: 1024 for 16- and 32-column panels, 960 for 96.
            nt: 1024 / (K::NV * width) * (K::NV * width),
            kb: KB,
            budget: 1 << 22,
        }
    }
}

/// Columns of AVX-512's wide panels, those of [`Mr4Nv6`].
pub(crate) const WIDE_PANEL_WIDTH: usize = Mr4Nv6::NV * 16;

/// Columns of the narrower B panels of `isa`: those of [`panel_width`], but 32 on AVX-512 (its
/// second microkernel, [`Mr14Nv2`], for narrow products; also the panels the GEMV packs from a
/// view).
pub(crate) fn narrow_panel_width(isa: Isa) -> usize {
    match isa {
        Isa::Avx512 => Mr14Nv2::NV * isa.width(),
        _ => panel_width(isa),
    }
}

/// Columns of the B panels the GEMM of `isa` reads from a `PackedMatrix` (its microkernel's
/// `NV` registers; on AVX-512, those of the wide-product kernel [`Mr4Nv6`] where
/// [`wide_kernel_preferred`], else those of [`Mr14Nv2`]).
pub(crate) fn panel_width(isa: Isa) -> usize {
    let nv = match isa {
        Isa::Avx512 if wide_kernel_preferred() => Mr4Nv6::NV,
        Isa::Avx512 => Mr14Nv2::NV,
        Isa::Avx2 | Isa::Sse2 => Mr6Nv2::NV,
        Isa::Neon => Mr8Nv3::NV,
        Isa::Scalar => Mr4Nv4::NV,
    };
    nv * isa.width()
}

/// Whether wide AVX-512 products (and every `PackedMatrix::new`) take the 4 x 6 kernel
/// ([`Mr4Nv6`], 96-column panels) rather than 14 x 2 ([`Mr14Nv2`], 32 columns): on a core
/// that halves 512-bit operations (Zen 4). Its B micro-panel (256 x 96, 96 KB) streams from L2
/// at 384 bytes per 24 FMAs: 16 bytes a cycle at Zen 4's one 512-bit FMA per cycle, but 32 on
/// a core with two full-width FMA pipes (Intel's), where the loop stalls on B's loads. There the
/// 14 x 2 kernel's B micro-panel (256 x 32, 32 KB) stays in L1 while the tile's A panels stream
/// past it (4 bytes a cycle). Either kernel gives the same bits.
pub(crate) fn wide_kernel_preferred() -> bool {
    crate::lanes::core_kind::halves_512_bit_operations()
}
