//! The GEMM with tile epilogues behind `Session::matmul_into` and `Session::matmul_batched_into`.
//! Knows no session: [`Gemm`] takes the instruction set, the threads to split the work across
//! (a [`Spread`] of the session's), the products and the epilogue.
//!
//! A BLIS-style GEMM: A and B are packed into panels (read through their ndarray strides, so
//! transposed and strided views need no copy by the caller), C is computed tile by tile by a
//! microkernel written once over the lane type (`Lanes`), and a
//! [`TileEpilogue`] runs on each tile of C once it has received all of K, while it is still in
//! cache (see [`crate::epilogue`]).
//!
//! # Bits
//!
//! * **Exact** ([`crate::Exact`]): every element is `c = +0; for k in 0..K { c = c + a[i][k] *
//!   b[k][j] }`, the product rounded and then the sum rounded, `k` increasing. These are the bits
//!   of that plain loop, on every instruction set and for every number of threads. The epilogue
//!   then runs on the finished values.
//! * **Fast** ([`crate::Fast`]): the same order with one fused multiply-add per step,
//!   `c = fma(a[i][k], b[k][j], c)` from `+0`. Every fma is correctly rounded (the hardware's,
//!   or a software one on a CPU without FMA), so these bits too are the same on every
//!   instruction set and thread count; they differ from exact mode's. The error is bounded by
//!   `K * 2^-24 * sum_k |a[i][k] b[k][j]|` (to first order), as for any sequential fp32 sum.
//!
//! The lane width never changes a bit: the microkernel vectorises across the columns of C, one
//! element per lane, and lanes never mix. The blocking does not either: a K block continues
//! from the exact f32 partial sum the previous one stored.
//!
//! # Work split
//!
//! C is cut into tiles (8 microkernel rows by 1024 columns: 48 x 1024 for AVX2); a tile
//! belongs to one thread, which reads A's rows where they lie when their columns are contiguous
//! (else packs its own A block), accumulates the tile in C itself when C's rows are contiguous
//! (else in a buffer with contiguous rows, copied to C after the epilogue), and runs the
//! epilogue on the finished tile. The tiles depend on
//! the shapes and the instruction set only; the caller decides whether they are spread over
//! threads.
//!
//! # Prepacked B and one-row products
//!
//! A [`PackedMatrix`] holds B already in the B panel layout of one instruction set (its
//! microkernel's `NR`, K super-blocks of 4096): the driver reads its panels instead of packing,
//! so the bits are those of the same product with the view. A product with one row of A (a
//! decode step) goes to `gemv.rs` when B is packed or has contiguous rows: B streamed once,
//! the same sequential sums. [`Gemm`] is the one place that chooses between the two.
//!
//! # Ragged products
//!
//! [`RaggedProduct`] (`ragged.rs`) is the product whose rows each sum over their own number
//! of rows of B (attention's `P V` under a causal mask or key lengths), with the same
//! sequential sums: a different product, chosen by the caller that knows the row lengths.
//!
//! # Memory
//!
//! Packed B for up to 4096 rows of K and a bounded number of columns (at most 2^22 values,
//! 16 MB) per round; a thread keeps its packed A block and tile buffer (about 250 KB for AVX2)
//! and a packed B buffer of up to 4 MB between calls.

mod blocking;
mod driver;
pub(crate) mod gemv;
mod kernel;
pub(crate) mod pack;
mod packed;
pub(crate) mod ragged;

use crate::epilogue::TileEpilogue;
use crate::error::Error;
use crate::lanes::{Isa, Mode, Supported, compiled_once_per_mode};
use crate::work_queue::Spread;
use blocking::Blocking;
use driver::gemm_with;
use kernel::Mr4Nv4;
#[cfg(target_arch = "x86_64")]
use kernel::{Mr4Nv6, Mr6Nv2, Mr14Nv2};
#[cfg(target_arch = "aarch64")]
use kernel::{Mr6Nv3, Mr8Nv3};

pub(crate) use driver::Item;
pub(crate) use packed::{Operand, operand};
pub use packed::{PackedMatrix, Rhs};
pub(crate) use ragged::RaggedProduct;

/// The rows of `m` as slices, in order, or `None` where one is not contiguous. The list is
/// sized once: collected through an `Option` or a `Result`, which give no size hint, it grew by
/// doubling, a cost a decode step's few hundred value rows noticed.
pub(crate) fn contiguous_rows(m: ndarray::ArrayView2<'_, f32>) -> Option<Vec<&[f32]>> {
    let mut rows = Vec::with_capacity(m.nrows());
    for row in m.into_outer_iter() {
        rows.push(row.to_slice()?);
    }
    Some(rows)
}

/// `c = epilogue(a b)` for every item (all of one shape, `k` the inner dimension), with the
/// microkernel of the instruction set; the tiles are spread over the threads of `spread` when
/// it is given. `batched` calls the epilogue through [`TileEpilogue::apply_batched`] with the
/// item's index. The epilogue is called through its vtable, once per tile, so the GEMM is
/// compiled once per mode, not once per epilogue type.
pub(crate) struct Gemm<'a> {
    /// The threads to split the tiles across (`None`: the calling thread alone).
    pub spread: Option<Spread<'a>>,
    /// The products.
    pub items: Vec<Item<'a>>,
    /// The inner dimension.
    pub k: usize,
    /// What each finished tile goes through.
    pub epilogue: &'a dyn TileEpilogue,
    /// Call the epilogue with each item's index.
    pub batched: bool,
}

compiled_once_per_mode!(Gemm<'_> -> Result<(), Error>, by run);

impl Gemm<'_> {
    /// The product in mode `M` on `isa`: the one place that chooses between the GEMV (one row
    /// of A) and the GEMM with the microkernel of the instruction set.
    fn run<M: Mode>(self, isa: Supported) -> Result<(), Error> {
        let Gemm {
            spread,
            items,
            k,
            epilogue,
            batched,
        } = self;
        let width = isa.isa().width();
        for item in &items {
            if let Operand::Packed(p) = item.b {
                p.check_isa(isa.isa())?;
            }
        }
        if k > 0 && gemv::applies(&items) {
            return gemv::gemv::<M>(isa, spread, items, epilogue, batched);
        }
        // Each architecture compiles only its own kernels; another architecture's instruction
        // sets are never available, so no `Supported` holds one.
        match isa.isa() {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 if wide_panels_fit(&items) => {
                let blk = Blocking::of::<Mr4Nv6>(width);
                gemm_with::<M, Mr4Nv6>(isa, blk, spread, items, k, epilogue, batched)
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => {
                let blk = Blocking::of::<Mr14Nv2>(width);
                gemm_with::<M, Mr14Nv2>(isa, blk, spread, items, k, epilogue, batched)
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 | Isa::Sse2 => {
                let blk = Blocking::of::<Mr6Nv2>(width);
                gemm_with::<M, Mr6Nv2>(isa, blk, spread, items, k, epilogue, batched)
            }
            #[cfg(target_arch = "aarch64")]
            Isa::Neon if !M::FAST => {
                let blk = Blocking::of::<Mr6Nv3>(width);
                gemm_with::<M, Mr6Nv3>(isa, blk, spread, items, k, epilogue, batched)
            }
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => {
                let blk = Blocking::of::<Mr8Nv3>(width);
                gemm_with::<M, Mr8Nv3>(isa, blk, spread, items, k, epilogue, batched)
            }
            _ => {
                let blk = Blocking::of::<Mr4Nv4>(width);
                gemm_with::<M, Mr4Nv4>(isa, blk, spread, items, k, epilogue, batched)
            }
        }
    }
}

/// Whether an AVX-512 product takes the 96-column panels of [`Mr4Nv6`] rather than the
/// 32-column ones of [`Mr14Nv2`]: with a packed B, when it was packed in 96-column panels
/// ([`PackedMatrix::new`]; [`PackedMatrix::new_narrow`] packs 32), else when every view is
/// [`wide_view_fits`]. Either kernel gives the same bits.
#[cfg(target_arch = "x86_64")]
fn wide_panels_fit(items: &[Item<'_>]) -> bool {
    let wide = blocking::WIDE_PANEL_WIDTH;
    let packed = items.iter().find_map(|it| match it.b {
        Operand::Packed(p) => Some(p.panel_width()),
        Operand::View(_) => None,
    });
    match packed {
        Some(nr) => nr == wide,
        None => items.iter().all(|it| wide_view_fits(it.c.ncols())),
    }
}

/// Whether a view of B `n` columns wide takes AVX-512's 96-column panels: where the 4 x 6
/// kernel is preferred ([`blocking::wide_kernel_preferred`]), when at most a sixteenth of the
/// padded width is padding (a 64-wide product would compute 96 columns with them, a 768-wide
/// one exactly 768).
fn wide_view_fits(n: usize) -> bool {
    if !blocking::wide_kernel_preferred() {
        return false;
    }
    let wide = blocking::WIDE_PANEL_WIDTH;
    let padded = n.next_multiple_of(wide);
    16 * (padded - n) <= padded
}

/// The panel width the GEMM of `isa` packs a view of B `n` columns wide into: a
/// [`PackedMatrix::new_narrow`] of the same columns runs the same microkernel when its panels
/// have this width.
pub(crate) fn view_panel_width(isa: Isa, n: usize) -> usize {
    if isa == Isa::Avx512 && wide_view_fits(n) {
        blocking::panel_width(isa)
    } else {
        blocking::narrow_panel_width(isa)
    }
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests;
