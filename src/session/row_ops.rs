//! Row operators (softmax, log-softmax, masked softmax, layer norm): every lane of an axis is
//! brought to an `f32` row kernel through [`crate::row_buffer`]; rows are spread over the session's
//! threads when the tensor is large, and a row is never split.

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, Axis, IxDyn, NdProducer, Zip};

use super::Session;
use crate::row_buffer::{with_row, with_row_into, with_row_mut};
use crate::{Element, Mode};

/// One `()` per row of a tensor of shape `shape` along `axis` (no memory: `()` has no size):
/// the `extra` of a row operator that needs nothing but the row.
pub(crate) fn no_extra(shape: &[usize], axis: Axis) -> ArrayD<()> {
    let mut rows = shape.to_vec();
    rows.remove(axis.index());
    ArrayD::from_elem(IxDyn(&rows), ())
}

/// Where a row operator writes: over its input, or from a source into a destination of the
/// same shape (each source row is copied into the destination row, then worked on there while
/// it is in cache).
pub(crate) enum Rows<'s, 'd, T> {
    /// The rows of one tensor, in place.
    InPlace(ArrayViewMutD<'d, T>),
    /// `dst = op(src)`, row by row.
    Into(ArrayViewD<'s, T>, ArrayViewMutD<'d, T>),
}

/// `rows.for_each(f)`, in pieces over the session's threads when `parallel`.
macro_rules! maybe_parallel {
    ($session:expr, $parallel:expr, $rows:expr, $f:expr) => {
        $session.for_each_lane_piece($parallel, $rows, |z| z.for_each(&$f))
    };
}

impl<T: Element> Rows<'_, '_, T> {
    /// The shape of the tensor the rows come from.
    pub(crate) fn shape(&self) -> &[usize] {
        match self {
            Rows::InPlace(x) => x.shape(),
            Rows::Into(s, _) => s.shape(),
        }
    }

    /// `op(row, item)` for every lane along `axis`, zipped with one item of `extra` per row
    /// (the shape without `axis`), spread over `session`'s threads when the tensor is large.
    pub(crate) fn for_each<M: Mode, P>(
        self,
        session: &Session<M>,
        axis: Axis,
        extra: P,
        op: impl Fn(&mut [f32], P::Item) + Sync,
    ) where
        P: NdProducer<Dim = IxDyn> + Send,
        P::Item: Send,
    {
        let parallel = session.parallel(self.shape().iter().product());
        match self {
            Rows::InPlace(mut x) => {
                let rows = Zip::from(x.lanes_mut(axis)).and(extra);
                let f = |row, item| with_row_mut(row, |r| op(r, item));
                maybe_parallel!(session, parallel, rows, f);
            }
            Rows::Into(src, mut dst) => {
                let rows = Zip::from(dst.lanes_mut(axis))
                    .and(src.lanes(axis))
                    .and(extra);
                let f = |d, s, item| with_row_into(s, d, |r| op(r, item));
                maybe_parallel!(session, parallel, rows, f);
            }
        }
    }

    /// `op(src, dst, cols)` on blocks of whole consecutive rows when the rows along `axis` are
    /// the consecutive `cols`-long pieces of one contiguous `f32` buffer (`axis` the last one,
    /// a standard-layout tensor): `dst` a block of them, `src` the same block of the source of
    /// an `Into` (`None` in place). The blocks are spread over `session`'s threads when the
    /// tensor is large. Returns `false`, having done nothing, for any other layout or element
    /// type.
    pub(crate) fn for_each_row_block<M: Mode>(
        &mut self,
        session: &Session<M>,
        axis: Axis,
        op: impl Fn(Option<&[f32]>, &mut [f32], usize) + Sync,
    ) -> bool {
        let shape = self.shape();
        let (nd, total) = (shape.len(), shape.iter().product::<usize>());
        if nd == 0 || axis.index() != nd - 1 || total == 0 {
            return false;
        }
        let cols = shape[nd - 1];
        let parallel = session.parallel(total);
        let blocks = |src: Option<&[f32]>, dst: &mut [f32]| {
            if !parallel {
                return op(src, dst, cols);
            }
            let block = session.per_piece(total / cols) * cols;
            match src {
                Some(src) => {
                    let blocks = src.chunks(block).zip(dst.chunks_mut(block));
                    session.for_each_item(true, blocks, |(s, d)| op(Some(s), d, cols))
                }
                None => {
                    let blocks = dst.chunks_mut(block);
                    session.for_each_item(true, blocks, |d| op(None, d, cols))
                }
            }
        };
        let (src, dst) = match self {
            Rows::InPlace(x) => (None, x.as_slice_mut()),
            Rows::Into(s, d) => match s.as_slice().and_then(|s| T::as_f32_slice(s)) {
                Some(s) => (Some(s), d.as_slice_mut()),
                None => return false,
            },
        };
        match dst.and_then(|d| T::as_f32_slice_mut(d)) {
            Some(d) => {
                blocks(src, d);
                true
            }
            None => false,
        }
    }

    /// `in_place(row)` for every lane along `axis` of an `InPlace` tensor, `into(src, dst)` for
    /// every pair of lanes of an `Into` one: for an operator that reads its input once, which
    /// then needs no copy of it in the destination first. Spread over `session`'s threads when
    /// the tensor is large.
    pub(crate) fn for_each_src_dst<M: Mode>(
        self,
        session: &Session<M>,
        axis: Axis,
        in_place: impl Fn(&mut [f32]) + Sync,
        into: impl Fn(&[f32], &mut [f32]) + Sync,
    ) {
        let parallel = session.parallel(self.shape().iter().product());
        match self {
            Rows::InPlace(mut x) => {
                let rows = Zip::from(x.lanes_mut(axis));
                let f = |row| with_row_mut(row, |r| in_place(r));
                maybe_parallel!(session, parallel, rows, f);
            }
            Rows::Into(src, mut dst) => {
                let rows = Zip::from(dst.lanes_mut(axis)).and(src.lanes(axis));
                let f = |d, s| with_row_mut(d, |d| with_row(s, |s| into(s, d)));
                maybe_parallel!(session, parallel, rows, f);
            }
        }
    }
}
