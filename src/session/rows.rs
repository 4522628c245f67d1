//! Row operators (softmax, log-softmax, masked softmax, layer norm): every lane of an axis is
//! brought to an `f32` row kernel through [`crate::rows`]; rows are spread over the session's
//! threads when the tensor is large, and a row is never split.

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, Axis, IxDyn, NdProducer, Zip};

use super::Session;
use crate::rows::{with_row_into, with_row_mut};
use crate::{Element, Mode};

/// One `()` per row of a tensor of shape `shape` along `axis` (no memory: `()` has no size):
/// the `extra` of a row operator that needs nothing but the row.
pub(crate) fn no_extra(shape: &[usize], axis: Axis) -> ArrayD<()> {
    let mut rows = shape.to_vec();
    rows.remove(axis.index());
    ArrayD::from_elem(IxDyn(&rows), ())
}

impl<M: Mode> Session<M> {
    /// `op(row, item)` for every lane of `x` along `axis`, zipped with one item of `extra` per
    /// row (the shape of `x` without `axis`).
    pub(crate) fn for_each_row<T: Element, P>(
        &self,
        mut x: ArrayViewMutD<'_, T>,
        axis: Axis,
        extra: P,
        op: impl Fn(&mut [f32], P::Item) + Sync,
    ) where
        P: NdProducer<Dim = IxDyn> + Send,
        P::Item: Send,
    {
        let parallel = self.parallel(x.len());
        let rows = Zip::from(x.lanes_mut(axis)).and(extra);
        let f = |row, item| with_row_mut(row, |r| op(r, item));
        if parallel {
            self.install(|| rows.par_for_each(f));
        } else {
            rows.for_each(f);
        }
    }

    /// `op(row, item)` for every lane of `dst` along `axis` after the matching lane of `src` was
    /// copied into it: `dst = op(src)` row by row, each row while it is in cache.
    pub(crate) fn for_each_row_into<T: Element, P>(
        &self,
        src: ArrayViewD<'_, T>,
        mut dst: ArrayViewMutD<'_, T>,
        axis: Axis,
        extra: P,
        op: impl Fn(&mut [f32], P::Item) + Sync,
    ) where
        P: NdProducer<Dim = IxDyn> + Send,
        P::Item: Send,
    {
        let parallel = self.parallel(src.len());
        let rows = Zip::from(dst.lanes_mut(axis))
            .and(src.lanes(axis))
            .and(extra);
        let f = |d, s, item| with_row_into(s, d, |r| op(r, item));
        if parallel {
            self.install(|| rows.par_for_each(f));
        } else {
            rows.for_each(f);
        }
    }
}
