//! Softmax, log-softmax and the masked softmax of attention scores over ndarray, any axis, any
//! strides, `f32`/`f16`/`bf16`. Rows are never split across threads, and each row is summed in
//! the canonical order, so exact results depend on neither the instruction set nor the thread
//! count nor the layout.

use ndarray::{ArrayRef, ArrayViewD, ArrayViewMut1, Axis, Dimension, IxDyn, Zip};

use super::elementwise::same_shape;
use super::{Element, Session};
use crate::ops::softmax::{MaskedRow, softmax_row_on};
use crate::{Error, Mode};

/// The mask of [`Session::masked_softmax`], over the last two axes `[.., rows, cols]` of the
/// scores; array masks broadcast over the leading axes (ndarray's broadcasting rules).
#[derive(Clone, Debug, Default)]
pub enum Mask<'a> {
    /// Nothing masked.
    #[default]
    None,
    /// Query row `i` sees key column `j` only if `j <= i + offset` (`offset` = the number of
    /// cached keys before the first query).
    Causal {
        /// Keys before the first query row.
        offset: usize,
    },
    /// `false` masks the score out.
    Keep(ArrayViewD<'a, bool>),
    /// Added to the scaled score (one more rounding); `-inf` masks it out.
    Additive(ArrayViewD<'a, f32>),
}

/// Runs `f` on every row of the zip `z`: spread over the session's threads when `parallel`
/// (a row is never split), else on the calling thread.
macro_rules! for_each_row {
    ($session:expr, $parallel:expr, $z:expr, $f:expr) => {{
        let (z, f) = ($z, $f);
        if $parallel {
            $session.install(|| z.par_for_each(f));
        } else {
            z.for_each(f);
        }
    }};
}

impl<M: Mode> Session<M> {
    /// The same session with another policy for fully masked softmax rows (default
    /// [`MaskedRow::Zero`]).
    pub fn with_masked_row(self, policy: MaskedRow) -> Self {
        Session {
            masked_row: policy,
            ..self
        }
    }

    /// The policy for fully masked softmax rows.
    pub fn masked_row(&self) -> MaskedRow {
        self.masked_row
    }

    /// Softmax along `axis`, in place.
    ///
    /// ```
    /// use activation_kernels::Session;
    /// use ndarray::{array, Axis};
    /// let mut x = array![[1.0f32, 2.0, 3.0], [0.0, 0.0, f32::NEG_INFINITY]];
    /// Session::exact().softmax(&mut x, Axis(1)).unwrap();
    /// assert_eq!(x[[1, 0]], 0.5);
    /// assert_eq!(x[[1, 2]], 0.0);
    /// ```
    pub fn softmax<T: Element, D: Dimension>(
        &self,
        x: &mut ArrayRef<T, D>,
        axis: Axis,
    ) -> Result<(), Error> {
        self.rows(x, axis, false)
    }

    /// Log-softmax along `axis`, in place: `(x_i - m) - log(s)`.
    pub fn log_softmax<T: Element, D: Dimension>(
        &self,
        x: &mut ArrayRef<T, D>,
        axis: Axis,
    ) -> Result<(), Error> {
        self.rows(x, axis, true)
    }

    /// `dst = softmax(src)` along `axis`; shapes must match.
    pub fn softmax_into<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        dst: &mut ArrayRef<T, D>,
        axis: Axis,
    ) -> Result<(), Error> {
        self.rows_into(src, dst, axis, false)
    }

    /// `dst = log_softmax(src)` along `axis`; shapes must match.
    pub fn log_softmax_into<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        dst: &mut ArrayRef<T, D>,
        axis: Axis,
    ) -> Result<(), Error> {
        self.rows_into(src, dst, axis, true)
    }

    /// The softmax of attention scores `[.., rows, cols]` over the last axis, in place: each
    /// score is multiplied by `scale` (one rounding), then masked, then the row's softmax is
    /// taken. Exact mode uses `exp_nonpositive`, fast mode the fast exp. A fully masked row
    /// follows the session's [`MaskedRow`] policy.
    ///
    /// Errors: fewer than two axes, or an array mask that does not broadcast to the scores.
    ///
    /// ```
    /// use activation_kernels::{Session, session::Mask};
    /// use ndarray::Array3;
    /// let mut scores = Array3::<f32>::ones((2, 3, 3));
    /// Session::exact().masked_softmax(&mut scores, 0.125, &Mask::Causal { offset: 0 }).unwrap();
    /// assert_eq!(scores[[0, 0, 0]], 1.0);
    /// assert_eq!(scores[[1, 1, 2]], 0.0);
    /// assert_eq!(scores[[1, 2, 1]], scores[[1, 2, 0]]);
    /// ```
    pub fn masked_softmax<T: Element, D: Dimension>(
        &self,
        scores: &mut ArrayRef<T, D>,
        scale: f32,
        mask: &Mask<'_>,
    ) -> Result<(), Error> {
        let nd = scores.ndim();
        if nd < 2 {
            return Err(Error::InvalidArgument(format!(
                "masked_softmax needs scores of at least 2 axes [.., rows, cols], got {nd}"
            )));
        }
        let shape = scores.shape().to_vec();
        let broadcast = |m_shape: &[usize]| Error::ShapeMismatch {
            what: "mask (does not broadcast to the scores)",
            expected: shape.clone(),
            found: m_shape.to_vec(),
        };
        let mut scores = scores.view_mut().into_dyn();
        let last = Axis(nd - 1);
        let policy = self.masked_row;
        let prepare_and_softmax = |mut row: ArrayViewMut1<'_, T>, fill: &dyn Fn(&mut [f32])| {
            // A contiguous f32 row is scaled, masked and normalised where it lies.
            if let Some(s) = row.as_slice_mut()
                && let Some(f) = T::as_f32_slice_mut(s)
            {
                f.iter_mut().for_each(|v| *v *= scale);
                fill(f);
                return self.row_kernel(f, policy, false);
            }
            let mut buf: Vec<f32> = row.iter().map(|v| v.to_f32() * scale).collect();
            fill(&mut buf);
            self.row_kernel(&mut buf, policy, false);
            write_back(row, &buf);
        };
        let parallel = self.parallel(scores.len());
        match mask {
            Mask::None => {
                let z = Zip::from(scores.lanes_mut(last));
                for_each_row!(self, parallel, z, |row| prepare_and_softmax(row, &|_| {}));
            }
            Mask::Causal { offset } => {
                // The row index of every row, broadcast over the leading axes.
                let rows = ndarray::Array1::from_iter(0..shape[nd - 2]);
                let rows = rows
                    .broadcast(IxDyn(&shape[..nd - 1]))
                    .ok_or_else(|| broadcast(&shape))?;
                let z = Zip::from(scores.lanes_mut(last)).and(&rows);
                let run = |row: ArrayViewMut1<'_, T>, &i: &usize| {
                    let limit = i.saturating_add(*offset);
                    prepare_and_softmax(row, &|buf: &mut [f32]| {
                        buf.iter_mut()
                            .skip(limit.saturating_add(1))
                            .for_each(|v| *v = f32::NEG_INFINITY)
                    })
                };
                for_each_row!(self, parallel, z, run);
            }
            Mask::Keep(keep) => {
                let keep = keep
                    .broadcast(IxDyn(&shape))
                    .ok_or_else(|| broadcast(keep.shape()))?;
                let z = Zip::from(scores.lanes_mut(last)).and(keep.lanes(last));
                let run = |row: ArrayViewMut1<'_, T>, keep: ndarray::ArrayView1<'_, bool>| {
                    prepare_and_softmax(row, &|buf: &mut [f32]| {
                        for (v, k) in buf.iter_mut().zip(keep.iter()) {
                            if !*k {
                                *v = f32::NEG_INFINITY;
                            }
                        }
                    })
                };
                for_each_row!(self, parallel, z, run);
            }
            Mask::Additive(add) => {
                let add = add
                    .broadcast(IxDyn(&shape))
                    .ok_or_else(|| broadcast(add.shape()))?;
                let z = Zip::from(scores.lanes_mut(last)).and(add.lanes(last));
                let run = |row: ArrayViewMut1<'_, T>, add: ndarray::ArrayView1<'_, f32>| {
                    prepare_and_softmax(row, &|buf: &mut [f32]| {
                        for (v, a) in buf.iter_mut().zip(add.iter()) {
                            *v += *a;
                        }
                    })
                };
                for_each_row!(self, parallel, z, run);
            }
        }
        Ok(())
    }

    /// Softmax of one `f32` row in place with the session's mode and instruction set.
    pub(crate) fn row_kernel(&self, row: &mut [f32], policy: MaskedRow, log_form: bool) {
        let done = softmax_row_on::<M>(self.isa, row, policy, log_form);
        debug_assert!(done.is_ok(), "{done:?}");
    }

    fn rows_into<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        dst: &mut ArrayRef<T, D>,
        axis: Axis,
        log_form: bool,
    ) -> Result<(), Error> {
        same_shape("source and destination", src.shape(), dst.shape())?;
        check_axis(axis, src.ndim())?;
        dst.assign(src);
        self.rows(dst, axis, log_form)
    }

    fn rows<T: Element, D: Dimension>(
        &self,
        x: &mut ArrayRef<T, D>,
        axis: Axis,
        log_form: bool,
    ) -> Result<(), Error> {
        check_axis(axis, x.ndim())?;
        if x.is_empty() {
            return Ok(());
        }
        let policy = self.masked_row;
        let row = |mut lane: ArrayViewMut1<'_, T>| {
            // A row in logical order: only a unit-stride lane is used where it lies.
            if let Some(s) = lane.as_slice_mut()
                && let Some(f) = T::as_f32_slice_mut(s)
            {
                return self.row_kernel(f, policy, log_form);
            }
            let mut buf: Vec<f32> = lane.iter().map(|v| v.to_f32()).collect();
            self.row_kernel(&mut buf, policy, log_form);
            write_back(lane, &buf);
        };
        let parallel = self.parallel(x.len());
        let z = Zip::from(x.lanes_mut(axis));
        for_each_row!(self, parallel, z, row);
        Ok(())
    }
}

fn write_back<T: Element>(mut row: ArrayViewMut1<'_, T>, buf: &[f32]) {
    for (v, b) in row.iter_mut().zip(buf) {
        *v = T::from_f32(*b);
    }
}

fn check_axis(axis: Axis, ndim: usize) -> Result<(), Error> {
    if axis.index() < ndim {
        Ok(())
    } else {
        Err(Error::AxisOutOfRange {
            axis: axis.index(),
            ndim,
        })
    }
}
