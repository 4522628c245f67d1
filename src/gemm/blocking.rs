//! Block sizes: the microkernel of each instruction set, the cache blocking of the driver, and
//! the depth of a K super-block (which is also the layout of a `PackedMatrix`).

use super::kernel::{MicroKernel, Mr4Nv4, Mr6Nv2, Mr14Nv2};
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
    /// An output tile is 8 microkernel rows by 1024 columns. For AVX2 (6 x 16) its buffer
    /// (48 x 1040 values, 200 KB) and the packed A block (48 x 256, 48 KB) stay in a 512 KB L2
    /// while the packed B micro-panels (256 x 16, 16 KB) pass through L1, each used by the 8 A
    /// panels of the tile. A tile 1024 wide covers the columns of a 1024-wide product at once,
    /// so A is packed once per K block. For AVX-512 (14 x 32) the tile is 112 x 1024 (470 KB,
    /// for the 1 MB L2 of the CPUs that have it).
    ///
    /// `nt` is the widest tile: the driver cuts a slab into equal tiles, narrower for a deep
    /// product (at most 2 MiB of packed B per tile, so that the tile's bands find B in L3) or
    /// for one spread over threads (enough tiles to share).
    pub(crate) fn of<K: MicroKernel>(width: usize) -> Blocking {
        Blocking {
            mr: K::MR,
            nr: K::NV * width,
            kc: 256,
            mc: 8 * K::MR,
            nt: 1024,
            kb: KB,
            budget: 1 << 22,
        }
    }
}

/// Columns of the B panels the GEMM of `isa` reads (its microkernel's `NV` registers).
pub(crate) fn panel_width(isa: Isa) -> usize {
    let nv = match isa {
        Isa::Avx512 => Mr14Nv2::NV,
        Isa::Avx2 | Isa::Sse2 => Mr6Nv2::NV,
        Isa::Scalar => Mr4Nv4::NV,
    };
    nv * isa.width()
}
