//! Softmax, log-softmax and the masked softmax of attention scores over ndarray, any axis, any
//! strides, `f32`/`f16`/`bf16`, each in three forms (in place, `_into`, `_owned`). Rows are
//! never split across threads, and each row is summed in the canonical order, so exact results
//! depend on neither the instruction set nor the thread count nor the layout.

use ndarray::{Array, Array1, ArrayRef, ArrayViewD, Axis, Dimension, IxDyn};

use super::Session;
use super::traverse::{Grain, Operands, Piece, in_place, no_extra};
use crate::error::same_shape;
use crate::ops::softmax::scores::{MaskedSoftmaxRow, ScoreMask};
use crate::ops::softmax::{MaskedRow, SoftmaxRow, SoftmaxRows};
use crate::row_buffer::{with_bool_row, with_row};
use crate::{Element, Error, Mode};

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
    /// Added to the scaled score (one more rounding); `-inf` masks it out, as a `false` entry of
    /// [`Mask::Keep`] does, whatever the score (`+inf` or NaN included).
    Additive(ArrayViewD<'a, f32>),
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
    /// Session::exact().softmax(&mut x, Axis(1))?;
    /// assert_eq!(x[[1, 0]], 0.5);
    /// assert_eq!(x[[1, 2]], 0.0);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn softmax<T: Element, D: Dimension>(
        &self,
        x: &mut ArrayRef<T, D>,
        axis: Axis,
    ) -> Result<(), Error> {
        self.softmax_rows(Operands::in_place(x.view_mut().into_dyn()), axis, false)
    }

    /// `dst = softmax(src)` along `axis`; shapes must match.
    pub fn softmax_into<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        dst: &mut ArrayRef<T, D>,
        axis: Axis,
    ) -> Result<(), Error> {
        same_shape("source and destination", src.shape(), dst.shape())?;
        let target = Operands::into(src.view().into_dyn(), dst.view_mut().into_dyn());
        self.softmax_rows(target, axis, false)
    }

    /// `softmax(src)` along `axis` as a new array.
    pub fn softmax_owned<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        axis: Axis,
    ) -> Result<Array<T, D>, Error> {
        check_axis(axis, src.ndim())?;
        let mut out = super::owned::try_to_owned(src, "softmax output")?;
        self.softmax(&mut out, axis)?;
        Ok(out)
    }

    /// Log-softmax along `axis`, in place: `(x_i - m) - log(s)`.
    pub fn log_softmax<T: Element, D: Dimension>(
        &self,
        x: &mut ArrayRef<T, D>,
        axis: Axis,
    ) -> Result<(), Error> {
        self.softmax_rows(Operands::in_place(x.view_mut().into_dyn()), axis, true)
    }

    /// `dst = log_softmax(src)` along `axis`; shapes must match.
    pub fn log_softmax_into<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        dst: &mut ArrayRef<T, D>,
        axis: Axis,
    ) -> Result<(), Error> {
        same_shape("source and destination", src.shape(), dst.shape())?;
        let target = Operands::into(src.view().into_dyn(), dst.view_mut().into_dyn());
        self.softmax_rows(target, axis, true)
    }

    /// `log_softmax(src)` along `axis` as a new array.
    pub fn log_softmax_owned<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        axis: Axis,
    ) -> Result<Array<T, D>, Error> {
        check_axis(axis, src.ndim())?;
        let mut out = super::owned::try_to_owned(src, "log_softmax output")?;
        self.log_softmax(&mut out, axis)?;
        Ok(out)
    }

    /// The softmax of attention scores `[.., rows, cols]` over the last axis, in place: each
    /// score is multiplied by `scale` (one rounding), then masked, then the row's softmax is
    /// taken. Exact mode uses `exp_nonpositive`, fast mode the fast exp. A fully masked row
    /// follows the session's [`MaskedRow`] policy.
    ///
    /// Errors: fewer than two axes, or an array mask that does not broadcast to the scores.
    ///
    /// ```
    /// use activation_kernels::{Mask, Session};
    /// use ndarray::Array3;
    /// let mut scores = Array3::<f32>::ones((2, 3, 3));
    /// Session::exact().masked_softmax(&mut scores, 0.125, &Mask::Causal { offset: 0 })?;
    /// assert_eq!(scores[[0, 0, 0]], 1.0);
    /// assert_eq!(scores[[1, 1, 2]], 0.0);
    /// assert_eq!(scores[[1, 2, 1]], scores[[1, 2, 0]]);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn masked_softmax<T: Element, D: Dimension>(
        &self,
        scores: &mut ArrayRef<T, D>,
        scale: f32,
        mask: &Mask<'_>,
    ) -> Result<(), Error> {
        self.masked_rows(
            Operands::in_place(scores.view_mut().into_dyn()),
            scale,
            mask,
        )
    }

    /// `dst = masked_softmax(src)` (see [`Session::masked_softmax`]); shapes must match.
    pub fn masked_softmax_into<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        dst: &mut ArrayRef<T, D>,
        scale: f32,
        mask: &Mask<'_>,
    ) -> Result<(), Error> {
        same_shape("source and destination", src.shape(), dst.shape())?;
        let target = Operands::into(src.view().into_dyn(), dst.view_mut().into_dyn());
        self.masked_rows(target, scale, mask)
    }

    /// `masked_softmax(src)` as a new array (see [`Session::masked_softmax`]).
    pub fn masked_softmax_owned<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        scale: f32,
        mask: &Mask<'_>,
    ) -> Result<Array<T, D>, Error> {
        check_scores(src.shape(), mask)?;
        let mut out = super::owned::try_to_owned(src, "masked_softmax output")?;
        self.masked_softmax(&mut out, scale, mask)?;
        Ok(out)
    }

    fn softmax_rows<T: Element>(
        &self,
        target: Operands<'_, T>,
        axis: Axis,
        log_form: bool,
    ) -> Result<(), Error> {
        check_axis(axis, target.shape().len())?;
        let (isa, policy) = (self.isa, self.masked_row);
        self.traverse(target, Grain::Rows(axis), no_extra(), |p| {
            if log_form {
                p.for_each_row(|io, _| {
                    SoftmaxRow {
                        io,
                        policy,
                        log_form,
                    }
                    .dispatch::<M>(isa)
                })
            } else {
                // Many rows in one dispatch; the bits of `SoftmaxRow` row by row.
                let (io, cols) = (p.io, p.row_len);
                SoftmaxRows { io, cols, policy }.dispatch::<M>(isa)
            }
        });
        Ok(())
    }

    fn masked_rows<T: Element>(
        &self,
        target: Operands<'_, T>,
        scale: f32,
        mask: &Mask<'_>,
    ) -> Result<(), Error> {
        let shape = target.shape().to_vec();
        check_scores(&shape, mask)?;
        let nd = shape.len();
        let broadcast = |m_shape: &[usize]| Error::ShapeMismatch {
            what: "mask (does not broadcast to the scores)",
            expected: shape.clone(),
            found: m_shape.to_vec(),
        };
        let rows = Grain::Rows(Axis(nd - 1));
        let (isa, policy) = (self.isa, self.masked_row);
        let row = move |row: &mut [f32], mask: ScoreMask<'_>| {
            MaskedSoftmaxRow {
                row,
                scale,
                mask,
                policy,
            }
            .dispatch::<M>(isa)
        };
        match mask {
            Mask::None => self.traverse(target, rows, no_extra(), |p| {
                p.for_each_row(|io, _| {
                    let r = in_place(io);
                    row(r, ScoreMask::none(r.len()))
                })
            }),
            Mask::Causal { offset } => {
                // Every score of a row holds the row's index (broadcast: no memory per score).
                let index = Array1::from_iter(0..shape[nd - 2]).into_dyn();
                let index = index.insert_axis(Axis(1));
                let index = index
                    .broadcast(IxDyn(&shape))
                    .ok_or_else(|| broadcast(&shape))?;
                self.traverse(target, rows, Some(index), |p: Piece<'_, usize>| {
                    let index = p.extra.as_ref().and_then(|e| e.first());
                    let i = *index.expect("a causal row's index");
                    let end = i.saturating_add(*offset).saturating_add(1);
                    let r = in_place(p.io);
                    let mask = ScoreMask {
                        end,
                        ..ScoreMask::none(r.len())
                    };
                    row(r, mask)
                });
            }
            Mask::Keep(keep) => {
                let keep = keep
                    .broadcast(IxDyn(&shape))
                    .ok_or_else(|| broadcast(keep.shape()))?;
                self.traverse(target, rows, Some(keep), |p| {
                    let r = in_place(p.io);
                    let keep = p.extra.expect("a keep mask row");
                    with_bool_row(keep, |k| {
                        let mask = ScoreMask {
                            keep: Some(k),
                            ..ScoreMask::none(r.len())
                        };
                        row(r, mask)
                    })
                });
            }
            Mask::Additive(add) => {
                let add = add
                    .broadcast(IxDyn(&shape))
                    .ok_or_else(|| broadcast(add.shape()))?;
                self.traverse(target, rows, Some(add), |p| {
                    let r = in_place(p.io);
                    let add = p.extra.expect("an additive mask row");
                    with_row(add, |a| {
                        let mask = ScoreMask {
                            add: Some(a),
                            ..ScoreMask::none(r.len())
                        };
                        row(r, mask)
                    })
                });
            }
        }
        Ok(())
    }
}

/// Scores of at least two axes, and an array mask that broadcasts to them (a view: no
/// allocation, whatever the size).
fn check_scores(shape: &[usize], mask: &Mask<'_>) -> Result<(), Error> {
    let nd = shape.len();
    if nd < 2 {
        return Err(Error::InvalidArgument(format!(
            "masked_softmax needs scores of at least 2 axes [.., rows, cols], got {nd}"
        )));
    }
    let mask_shape = match mask {
        Mask::Keep(keep) if keep.broadcast(IxDyn(shape)).is_none() => keep.shape(),
        Mask::Additive(add) if add.broadcast(IxDyn(shape)).is_none() => add.shape(),
        _ => return Ok(()),
    };
    Err(Error::ShapeMismatch {
        what: "mask (does not broadcast to the scores)",
        expected: shape.to_vec(),
        found: mask_shape.to_vec(),
    })
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
