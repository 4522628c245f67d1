//! [`Scale`] (`s * C[i, j]`) and [`Residual`] (`C[i, j] + R[i, j]`).

use ndarray::{ArrayRef2, ArrayView2, ArrayView3, Axis, Zip, s};

use super::TileEpilogue;
use crate::error::Error;
use crate::lanes::ExactFpEnv;

/// Multiplies every element by a constant: `C[i, j] * s`, one IEEE multiplication, rounded to
/// nearest with subnormals kept whatever the thread's floating-point environment (MXCSR).
///
/// ```
/// use activation_kernels::epilogue::{Scale, TileEpilogue};
/// let mut t = ndarray::array![[1.0f32, -2.0]];
/// Scale(0.5).apply(&mut t, 0, 0);
/// assert_eq!(t, ndarray::array![[0.5, -1.0]]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale(pub f32);

impl TileEpilogue for Scale {
    fn apply(&self, tile: &mut ArrayRef2<f32>, _row: usize, _col: usize) {
        let s = self.0;
        let _env = ExactFpEnv::enter();
        tile.mapv_inplace(|x| x * s);
    }
}

#[derive(Clone, Debug)]
enum Source<'a> {
    /// One `[m, n]` matrix (broadcast over the batch of a batched product).
    Matrix(ArrayView2<'a, f32>),
    /// One `[m, n]` matrix per batch item.
    Batched(ArrayView3<'a, f32>),
}

/// Adds another array element by element: `C[i, j] + R[i, j]` (a residual connection), one
/// IEEE addition per element, rounded to nearest with subnormals kept whatever the thread's
/// floating-point environment (MXCSR). `R` may have any strides.
///
/// [`Residual::new`] takes an `[m, n]` matrix, used for every item of a batched product;
/// [`Residual::batched`] takes `[batch, m, n]`, one matrix per item (through
/// [`TileEpilogue::apply`], item 0). A GEMM checks the shape against C first
/// ([`TileEpilogue::check_shape`]); called directly on a tile outside `R`, `apply` panics.
///
/// ```
/// use activation_kernels::epilogue::{Residual, TileEpilogue};
/// let r = ndarray::array![[1.0f32, 2.0], [3.0, 4.0]];
/// let mut t = ndarray::array![[10.0f32]];
/// // The 1 x 1 tile at row 1, column 0.
/// Residual::new(r.view()).apply(&mut t, 1, 0);
/// assert_eq!(t[[0, 0]], 13.0);
/// ```
#[derive(Clone, Debug)]
pub struct Residual<'a> {
    source: Source<'a>,
}

impl<'a> Residual<'a> {
    /// `C[i, j] + r[i, j]`, `r` of the shape of C (`[m, n]`).
    pub fn new(r: ArrayView2<'a, f32>) -> Self {
        Residual {
            source: Source::Matrix(r),
        }
    }

    /// `C[b, i, j] + r[b, i, j]` for a batched product, `r` of the shape of C
    /// (`[batch, m, n]`).
    pub fn batched(r: ArrayView3<'a, f32>) -> Self {
        Residual {
            source: Source::Batched(r),
        }
    }

    fn add(tile: &mut ArrayRef2<f32>, r: ArrayView2<'_, f32>, row: usize, col: usize) {
        let (h, w) = tile.dim();
        let r = r.slice(s![row..row + h, col..col + w]);
        let _env = ExactFpEnv::enter();
        Zip::from(tile).and(&r).for_each(|x, &y| *x += y);
    }
}

impl TileEpilogue for Residual<'_> {
    fn apply(&self, tile: &mut ArrayRef2<f32>, row: usize, col: usize) {
        self.apply_batched(0, tile, row, col)
    }

    fn apply_batched(&self, batch: usize, tile: &mut ArrayRef2<f32>, row: usize, col: usize) {
        match &self.source {
            Source::Matrix(r) => Residual::add(tile, r.view(), row, col),
            Source::Batched(r) => {
                Residual::add(tile, r.index_axis(Axis(0), batch), row, col);
            }
        }
    }

    fn check_shape(&self, c_shape: &[usize]) -> Result<(), Error> {
        let (what, expected, found) = match &self.source {
            Source::Matrix(r) => (
                "residual: an [m, n] matrix for C of shape [.., m, n]",
                c_shape[c_shape.len().saturating_sub(2)..].to_vec(),
                r.shape().to_vec(),
            ),
            Source::Batched(r) => (
                "residual: a [batch, m, n] array of the shape of C",
                c_shape.to_vec(),
                r.shape().to_vec(),
            ),
        };
        if expected == found {
            Ok(())
        } else {
            Err(Error::ShapeMismatch {
                what,
                expected,
                found,
            })
        }
    }
}
