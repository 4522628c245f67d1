//! Tile epilogues: what a GEMM does to each finished tile of its output while the tile is still
//! in cache.
//!
//! A dense layer is `act(x W + b)`. Run as separate passes, the bias and the activation read and
//! write the whole output again after the GEMM; run as an epilogue, they touch each tile of C
//! right after it has received all of K, while it is still in L1 or L2. The GEMM of this crate
//! ([`Session::matmul_into`](crate::Session::matmul_into)) calls a [`TileEpilogue`] exactly once
//! per finished tile, and a user's own GEMM can call the same epilogues on its own tiles.
//!
//! The standard epilogues are [`Identity`], [`Bias`] (per column or per row), [`Activation`]
//! (any element-wise [`Func`](crate::Func) of a session, in the session's mode), the fused
//! [`BiasActivation`], [`Scale`], [`Residual`] (`+ R[i, j]`), and [`Chain`] (one after the
//! other, also written `first.then(second)`); [`FromFn`] turns a closure into an epilogue.
//!
//! Every epilogue is element-wise given its position, so applying it tile by tile gives the same
//! bits as applying it once to the whole finished C, whatever the tiling: a fused epilogue
//! equals the separate operator afterwards, bit for bit, in both modes.

mod activation;
mod bias;
mod residual;

use ndarray::ArrayRef2;

pub use activation::{Activation, BiasActivation};
pub use bias::Bias;
pub use residual::{Residual, Scale};

use crate::error::Error;
use crate::lanes::{LaneOp, Lanes, Mode, Supported};
use crate::ops::CANONICAL_NAN;
use crate::ops::nan::canonical_nan_lanes;
use crate::row_buffer::with_row_mut;

/// An operation on finished output tiles of a matrix product.
///
/// A GEMM computing `C = A B` calls [`apply`](TileEpilogue::apply) once for every tile of C
/// after the tile has received all of K, with a mutable view of the tile and the tile's row and
/// column offsets in C. The tiles partition C: every element is passed exactly once. Tiles may
/// have any size and any strides, and may be visited in any order and from several threads at
/// once (hence `Sync`), so an epilogue must depend only on the element values and their
/// positions.
///
/// A batched GEMM calls [`apply_batched`](TileEpilogue::apply_batched) with the batch index and
/// offsets within that batch item; by default it forwards to `apply`, so a 2-D epilogue is
/// broadcast over the batch.
///
/// Before the product is computed, the GEMM calls [`check_shape`](TileEpilogue::check_shape)
/// with the shape of C, so an epilogue whose operands do not fit (a bias of the wrong length)
/// is reported as an [`Error`] instead of a panic in the middle of the product.
///
/// ```
/// use activation_kernels::Session;
/// use activation_kernels::epilogue::{Bias, TileEpilogue};
/// use ndarray::{ArrayRef2, array};
///
/// /// Clamps every element to `[lo, hi]`.
/// struct Clamp(f32, f32);
/// impl TileEpilogue for Clamp {
///     fn apply(&self, tile: &mut ArrayRef2<f32>, _row: usize, _col: usize) {
///         tile.mapv_inplace(|x| x.clamp(self.0, self.1));
///     }
/// }
///
/// let a = array![[1.0f32, 2.0], [3.0, 4.0]];
/// let b = array![[1.0f32, 0.0], [0.0, 1.0]];
/// let mut c = ndarray::Array2::zeros((2, 2));
/// let bias = [0.5f32, -10.0];
/// let epilogue = Bias::per_column(&bias[..]).then(Clamp(0.0, 3.0));
/// Session::exact().matmul_into(&a, &b, &mut c, &epilogue)?;
/// assert_eq!(c, array![[1.5, 0.0], [3.0, 0.0]]);
///
/// // A user's own GEMM calls the same epilogue on its own tiles: here, the whole matrix.
/// let mut mine = a.dot(&b);
/// epilogue.apply(&mut mine, 0, 0);
/// assert_eq!(mine, c);
/// # Ok::<(), activation_kernels::Error>(())
/// ```
pub trait TileEpilogue: Sync {
    /// Transforms one finished tile of C in place. `tile[[i, j]]` is `C[[row + i, col + j]]`.
    fn apply(&self, tile: &mut ArrayRef2<f32>, row: usize, col: usize);

    /// Transforms one finished tile of batch item `batch` of a batched product; `row` and `col`
    /// are offsets within that item. The default ignores `batch` and calls
    /// [`apply`](TileEpilogue::apply).
    fn apply_batched(&self, batch: usize, tile: &mut ArrayRef2<f32>, row: usize, col: usize) {
        let _ = batch;
        self.apply(tile, row, col);
    }

    /// Checks that the epilogue fits an output of shape `c_shape` (`[m, n]`, or
    /// `[batch, m, n]` for a batched product). The default accepts every shape.
    fn check_shape(&self, c_shape: &[usize]) -> Result<(), Error> {
        let _ = c_shape;
        Ok(())
    }

    /// This epilogue, then `next`.
    fn then<E: TileEpilogue>(self, next: E) -> Chain<Self, E>
    where
        Self: Sized,
    {
        Chain(self, next)
    }
}

impl<E: TileEpilogue + ?Sized> TileEpilogue for &E {
    fn apply(&self, tile: &mut ArrayRef2<f32>, row: usize, col: usize) {
        (**self).apply(tile, row, col)
    }
    fn apply_batched(&self, batch: usize, tile: &mut ArrayRef2<f32>, row: usize, col: usize) {
        (**self).apply_batched(batch, tile, row, col)
    }
    fn check_shape(&self, c_shape: &[usize]) -> Result<(), Error> {
        (**self).check_shape(c_shape)
    }
}

impl<E: TileEpilogue + ?Sized> TileEpilogue for Box<E> {
    fn apply(&self, tile: &mut ArrayRef2<f32>, row: usize, col: usize) {
        (**self).apply(tile, row, col)
    }
    fn apply_batched(&self, batch: usize, tile: &mut ArrayRef2<f32>, row: usize, col: usize) {
        (**self).apply_batched(batch, tile, row, col)
    }
    fn check_shape(&self, c_shape: &[usize]) -> Result<(), Error> {
        (**self).check_shape(c_shape)
    }
}

/// Leaves C as the product: `C = A B`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Identity;

impl TileEpilogue for Identity {
    #[inline]
    fn apply(&self, _tile: &mut ArrayRef2<f32>, _row: usize, _col: usize) {}
}

/// Two epilogues, the first then the second, on each tile while it is in cache.
///
/// ```
/// use activation_kernels::epilogue::{Chain, Scale, TileEpilogue};
/// let mut t = ndarray::array![[1.0f32, 2.0]];
/// Chain(Scale(2.0), Scale(3.0)).apply(&mut t, 0, 0);
/// assert_eq!(t, ndarray::array![[6.0, 12.0]]);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Chain<A, B>(pub A, pub B);

impl<A: TileEpilogue, B: TileEpilogue> TileEpilogue for Chain<A, B> {
    fn apply(&self, tile: &mut ArrayRef2<f32>, row: usize, col: usize) {
        self.0.apply(tile, row, col);
        self.1.apply(tile, row, col);
    }
    fn apply_batched(&self, batch: usize, tile: &mut ArrayRef2<f32>, row: usize, col: usize) {
        self.0.apply_batched(batch, tile, row, col);
        self.1.apply_batched(batch, tile, row, col);
    }
    fn check_shape(&self, c_shape: &[usize]) -> Result<(), Error> {
        self.0.check_shape(c_shape)?;
        self.1.check_shape(c_shape)
    }
}

/// A closure `f(tile, row, col)` as an epilogue (it must be `Fn + Sync`: tiles may be visited
/// from several threads).
///
/// ```
/// use activation_kernels::Session;
/// use activation_kernels::epilogue::FromFn;
/// use ndarray::{array, Array2, ArrayRef2};
/// let a = array![[1.0f32, -2.0]];
/// let b = array![[1.0f32], [1.0]];
/// let mut c = Array2::zeros((1, 1));
/// let relu = FromFn(|t: &mut ArrayRef2<f32>, _: usize, _: usize| t.mapv_inplace(|x| x.max(0.0)));
/// Session::exact().matmul_into(&a, &b, &mut c, &relu)?;
/// assert_eq!(c[[0, 0]], 0.0);
/// # Ok::<(), activation_kernels::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct FromFn<F>(pub F);

impl<F: Fn(&mut ArrayRef2<f32>, usize, usize) + Sync> TileEpilogue for FromFn<F> {
    fn apply(&self, tile: &mut ArrayRef2<f32>, row: usize, col: usize) {
        (self.0)(tile, row, col)
    }
}

/// `Err(ShapeMismatch)` for an operand of `found` elements where `expected` were needed.
fn length_error(what: &'static str, expected: usize, found: usize) -> Error {
    Error::ShapeMismatch {
        what,
        expected: vec![expected],
        found: vec![found],
    }
}

/// The last two entries of a shape (`[m, n]`); `None` for fewer than two dimensions.
fn matrix_dims(c_shape: &[usize]) -> Option<(usize, usize)> {
    match c_shape {
        [.., m, n] => Some((*m, *n)),
        _ => None,
    }
}

/// Calls `f(i, row)` for every row of `tile` as a contiguous slice (see [`crate::row_buffer`]).
fn for_each_row(tile: &mut ArrayRef2<f32>, mut f: impl FnMut(usize, &mut [f32])) {
    for (i, row) in tile.rows_mut().into_iter().enumerate() {
        with_row_mut(row, |r| f(i, r));
    }
}

/// In exact mode, replaces every NaN of a finished tile (after its epilogue, before the GEMM
/// stores it) with the canonical NaN, in one dispatch; in fast mode, nothing. The one call the
/// GEMM driver makes for the canonical NaN of every matrix product, epilogues included.
pub(crate) fn canonical_nan_tile<M: Mode>(isa: Supported, tile: &mut ArrayRef2<f32>) {
    if !M::FAST {
        isa.dispatch::<M, _>(CanonicalNanTile { tile });
    }
}

/// [`canonical_nan_tile`] inside the dispatch.
struct CanonicalNanTile<'t> {
    tile: &'t mut ArrayRef2<f32>,
}

impl LaneOp for CanonicalNanTile<'_> {
    type Output = ();
    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        if let Some(all) = self.tile.as_slice_memory_order_mut() {
            return canonical_nan_lanes(l, all);
        }
        // Row by row (see `LaneOp` on closures). A strided row (no slice) takes the same
        // replacement one value at a time.
        for mut row in self.tile.rows_mut() {
            match row.as_slice_mut() {
                Some(r) => canonical_nan_lanes(l, r),
                None => row
                    .iter_mut()
                    .filter(|x| x.is_nan())
                    .for_each(|x| *x = CANONICAL_NAN),
            }
        }
    }
}
