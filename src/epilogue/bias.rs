//! [`Bias`]: `C[i, j] + b[j]` (per column) or `C[i, j] + b[i]` (per row).

use std::borrow::Cow;

use ndarray::{ArrayRef2, ArrayView1};

use super::{TileEpilogue, for_each_row, length_error, matrix_dims};
use crate::error::Error;
use crate::lanes::ExactFpEnv;

/// Which index of C a bias vector follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Along {
    /// `b[j]`: one value per column (a dense layer's bias).
    Column,
    /// `b[i]`: one value per row.
    Row,
}

/// Adds a bias vector: `C[i, j] + b[j]` ([`Bias::per_column`], the bias of a dense layer
/// `x W + b`) or `C[i, j] + b[i]` ([`Bias::per_row`]). One IEEE addition per element, rounded to
/// nearest with subnormals kept whatever the thread's floating-point environment (MXCSR), so
/// the bits are those of the same addition after the product. In a batched product the same vector is
/// used for every batch item.
///
/// The vector is borrowed when it is contiguous, copied once otherwise. A GEMM checks its
/// length against C first ([`TileEpilogue::check_shape`]); called directly on a tile that
/// reaches past the end of the vector, `apply` panics.
///
/// ```
/// use activation_kernels::epilogue::{Bias, TileEpilogue};
/// let mut t = ndarray::array![[1.0f32, 2.0], [3.0, 4.0]];
/// // The tile at row 0, column 1 of a C whose bias is [10, 20, 30].
/// Bias::per_column(&[10.0f32, 20.0, 30.0][..]).apply(&mut t, 0, 1);
/// assert_eq!(t, ndarray::array![[21.0, 32.0], [23.0, 34.0]]);
/// ```
#[derive(Clone, Debug)]
pub struct Bias<'a> {
    values: Cow<'a, [f32]>,
    along: Along,
}

impl<'a> Bias<'a> {
    fn new(values: impl Into<ArrayView1<'a, f32>>, along: Along) -> Self {
        let v: ArrayView1<'a, f32> = values.into();
        let values = match v.to_slice() {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Owned(v.to_vec()),
        };
        Bias { values, along }
    }

    /// `C[i, j] + b[j]`: `b` has one value per column of C (`n` values).
    pub fn per_column(b: impl Into<ArrayView1<'a, f32>>) -> Self {
        Bias::new(b, Along::Column)
    }

    /// `C[i, j] + b[i]`: `b` has one value per row of C (`m` values).
    pub fn per_row(b: impl Into<ArrayView1<'a, f32>>) -> Self {
        Bias::new(b, Along::Row)
    }

    /// The bias values.
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    /// `row[j] + bias` for row `i` of a tile at offsets `(row0, col0)`, `row` contiguous.
    #[inline(always)]
    pub(super) fn add_row(&self, row: &mut [f32], i: usize, row0: usize, col0: usize) {
        match self.along {
            Along::Column => {
                let b = &self.values[col0..col0 + row.len()];
                for (x, b) in row.iter_mut().zip(b) {
                    *x += *b;
                }
            }
            Along::Row => {
                let b = self.values[row0 + i];
                for x in row.iter_mut() {
                    *x += b;
                }
            }
        }
    }
}

impl TileEpilogue for Bias<'_> {
    fn apply(&self, tile: &mut ArrayRef2<f32>, row: usize, col: usize) {
        let _env = ExactFpEnv::enter();
        for_each_row(tile, |i, r| self.add_row(r, i, row, col));
    }

    fn check_shape(&self, c_shape: &[usize]) -> Result<(), Error> {
        let Some((m, n)) = matrix_dims(c_shape) else {
            return Ok(());
        };
        let (what, needed) = match self.along {
            Along::Column => ("bias per column: one value per column of C", n),
            Along::Row => ("bias per row: one value per row of C", m),
        };
        if self.values.len() == needed {
            Ok(())
        } else {
            Err(length_error(what, needed, self.values.len()))
        }
    }
}
