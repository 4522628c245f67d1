//! Sentence-embedding pooling: the masked mean of token rows (packed sequences with their
//! offsets, or a padded batch with its mask) and the L2 normalisation of rows.

use ndarray::{Array, Array2, ArrayRef, ArrayRef2, ArrayRef3, Axis, Dimension};

use super::Session;
use super::traverse::{Grain, Operands, in_place, no_extra};
use super::varlen::check_offsets;
use crate::error::same_shape;
use crate::ops::pooling::{l2_normalize_row_on, mean_of_rows_on};
use crate::row_buffer::with_row_mut;
use crate::{Element, Error, Mode};

impl<M: Mode> Session<M> {
    /// Mean pooling of packed sequences: `x` holds the token rows of every sequence one after
    /// the other (`[total_tokens, d]`), `offsets` is `[0, n0, n0 + n1, ..., total_tokens]`
    /// (one more than the sequences, non-decreasing); row `s` of the result is the mean of the
    /// rows of sequence `s` (`+0` for an empty one).
    ///
    /// Each column is summed in the canonical order of exact mode (the `i`-th token of the
    /// sequence to partial `i mod 16`, the fixed tree), so a sequence's mean has the same bits
    /// whatever the other sequences, the instruction set or the thread count, and the same as
    /// [`Session::mean_pool_padded`] gives it in a padded batch. Both modes give these bits.
    ///
    /// ```
    /// use activation_kernels::Session;
    /// use ndarray::array;
    /// let tokens = array![[1.0f32, 2.0], [3.0, 4.0], [10.0, 20.0]];
    /// let means = Session::exact().mean_pool_varlen(&tokens, &[0, 2, 3])?;
    /// assert_eq!(means, array![[2.0, 3.0], [10.0, 20.0]]);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn mean_pool_varlen(
        &self,
        x: &ArrayRef2<f32>,
        offsets: &[usize],
    ) -> Result<Array2<f32>, Error> {
        let shape = (offsets.len().saturating_sub(1), x.ncols());
        let mut out =
            super::owned::try_zeros(ndarray::Ix2(shape.0, shape.1), "mean_pool_varlen output")?;
        self.mean_pool_varlen_into(x, offsets, &mut out)?;
        Ok(out)
    }

    /// [`Session::mean_pool_varlen`] into `out` (`[sequences, d]`).
    pub fn mean_pool_varlen_into(
        &self,
        x: &ArrayRef2<f32>,
        offsets: &[usize],
        out: &mut ArrayRef2<f32>,
    ) -> Result<(), Error> {
        check_offsets(offsets, x.nrows(), "mean_pool_varlen x rows")?;
        let d = x.ncols();
        same_shape(
            "mean_pool_varlen out ([sequences, d])",
            &[offsets.len() - 1, d],
            out.shape(),
        )?;
        let x = x.as_standard_layout();
        let data = x.as_slice().expect("standard layout");
        for (s, out_row) in out.rows_mut().into_iter().enumerate() {
            let rows = data[offsets[s] * d..offsets[s + 1] * d].chunks_exact(d.max(1));
            with_row_mut(out_row, |dst| mean_of_rows_on(self.isa, rows, dst));
        }
        Ok(())
    }

    /// Mean pooling of a padded batch: `x` is `[batch, seq, d]`, `mask` `[batch, seq]` (`true`
    /// for a real token, at any position); row `b` of the result is the mean of the rows of
    /// item `b` its mask keeps (`+0` for none), as sentence-transformers' mean pooling.
    ///
    /// The kept rows are summed as [`Session::mean_pool_varlen`] sums a sequence (padding takes
    /// no place in the canonical order): a sentence gets the same bits padded or packed.
    ///
    /// ```
    /// use activation_kernels::Session;
    /// use ndarray::array;
    /// let x = array![[[1.0f32, 2.0], [3.0, 4.0]], [[10.0, 20.0], [9.0, 9.0]]];
    /// let mask = array![[true, true], [true, false]];
    /// let means = Session::exact().mean_pool_padded(&x, &mask)?;
    /// assert_eq!(means, array![[2.0, 3.0], [10.0, 20.0]]);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn mean_pool_padded(
        &self,
        x: &ArrayRef3<f32>,
        mask: &ArrayRef2<bool>,
    ) -> Result<Array2<f32>, Error> {
        let (batch, _, d) = x.dim();
        let mut out = super::owned::try_zeros(ndarray::Ix2(batch, d), "mean_pool_padded output")?;
        self.mean_pool_padded_into(x, mask, &mut out)?;
        Ok(out)
    }

    /// [`Session::mean_pool_padded`] into `out` (`[batch, d]`).
    pub fn mean_pool_padded_into(
        &self,
        x: &ArrayRef3<f32>,
        mask: &ArrayRef2<bool>,
        out: &mut ArrayRef2<f32>,
    ) -> Result<(), Error> {
        let (batch, seq, d) = x.dim();
        same_shape(
            "mean_pool_padded mask ([batch, seq])",
            &[batch, seq],
            mask.shape(),
        )?;
        same_shape(
            "mean_pool_padded out ([batch, d])",
            &[batch, d],
            out.shape(),
        )?;
        let x = x.as_standard_layout();
        let data = x.as_slice().expect("standard layout");
        for (b, out_row) in out.rows_mut().into_iter().enumerate() {
            let item = &data[b * seq * d..(b + 1) * seq * d];
            let keep = mask.row(b);
            let rows = item
                .chunks_exact(d.max(1))
                .zip(keep.iter())
                .filter_map(|(r, &k)| k.then_some(r));
            with_row_mut(out_row, |dst| mean_of_rows_on(self.isa, rows, dst));
        }
        Ok(())
    }

    /// L2 normalisation over the last axis, in place: each row becomes
    /// `x / max(||x||, 1e-12)` (sentence-transformers' `Normalize`), the squares summed in the
    /// canonical order: the same bits on every instruction set and thread count, in both
    /// modes. A finite row whose squares overflow is normalised all the same; a NaN makes its
    /// row NaN.
    ///
    /// ```
    /// use activation_kernels::Session;
    /// use ndarray::array;
    /// let mut x = array![[3.0f32, 4.0], [0.0, 0.0]];
    /// Session::exact().l2_normalize(&mut x)?;
    /// assert_eq!(x, array![[0.6, 0.8], [0.0, 0.0]]);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn l2_normalize<T: Element, D: Dimension>(
        &self,
        x: &mut ArrayRef<T, D>,
    ) -> Result<(), Error> {
        let axis = last_axis(x.shape())?;
        let operands = Operands::in_place(x.view_mut().into_dyn());
        self.l2_normalize_rows(operands, axis);
        Ok(())
    }

    /// `dst = l2_normalize(src)` (see [`Session::l2_normalize`]); shapes must match.
    pub fn l2_normalize_into<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        dst: &mut ArrayRef<T, D>,
    ) -> Result<(), Error> {
        same_shape("source and destination", src.shape(), dst.shape())?;
        let axis = last_axis(src.shape())?;
        let operands = Operands::into(src.view().into_dyn(), dst.view_mut().into_dyn());
        self.l2_normalize_rows(operands, axis);
        Ok(())
    }

    /// `l2_normalize(src)` as a new array (see [`Session::l2_normalize`]).
    pub fn l2_normalize_owned<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
    ) -> Result<Array<T, D>, Error> {
        last_axis(src.shape())?;
        let mut out = super::owned::try_to_owned(src, "l2_normalize output")?;
        self.l2_normalize(&mut out)?;
        Ok(out)
    }

    /// [`Session::l2_normalize`] of every row along `axis` of `operands`.
    fn l2_normalize_rows<T: Element>(&self, operands: Operands<'_, T>, axis: Axis) {
        let isa = self.isa;
        self.traverse(operands, Grain::Rows(axis), no_extra(), |p| {
            p.for_each_row(|io, _| l2_normalize_row_on(isa, in_place(io)))
        });
    }
}

/// The last axis of `shape`, or an error for a 0-D array.
fn last_axis(shape: &[usize]) -> Result<Axis, Error> {
    match shape.len() {
        0 => Err(Error::InvalidArgument(
            "l2_normalize needs at least one axis".into(),
        )),
        n => Ok(Axis(n - 1)),
    }
}
