//! Bringing any ndarray layout to the `f32` slice kernels of element-wise operators: the
//! contiguous fast path (either memory order), 16-bit types through `f32` chunks, other layouts
//! lane by lane along the axis of smallest stride (through [`crate::row_buffer`]), and the split into
//! fixed-size parallel chunks.

use ndarray::{ArrayRef, Axis, Dimension, Zip};

use super::{CONVERT_CHUNK, PAR_CHUNK, Session};
use crate::row_buffer::{with_row, with_row_mut};
use crate::{Element, Mode};

/// An element-wise computation on `f32` slices, in place or from a source into a destination
/// of the same length.
pub(crate) trait SliceOp: Sync {
    /// `data = op(data)`.
    fn in_place(&self, data: &mut [f32]);
    /// `dst = op(src)`.
    fn into(&self, src: &[f32], dst: &mut [f32]);
}

/// Runs `op` on `data` as `f32`: directly for `f32`, through a widened buffer of at most
/// `CONVERT_CHUNK` values rounded back once for 16-bit types.
fn chunk_in_place<T: Element>(data: &mut [T], op: &impl SliceOp) {
    if let Some(f) = T::as_f32_slice_mut(data) {
        return op.in_place(f);
    }
    let mut buf = [0f32; CONVERT_CHUNK];
    for chunk in data.chunks_mut(CONVERT_CHUNK) {
        let buf = &mut buf[..chunk.len()];
        T::widen(chunk, buf);
        op.in_place(buf);
        T::narrow(buf, chunk);
    }
}

/// `dst = op(src)` (equal lengths), directly for `f32`.
fn chunk_into<T: Element>(src: &[T], dst: &mut [T], op: &impl SliceOp) {
    if let (Some(s), Some(d)) = (T::as_f32_slice(src), T::as_f32_slice_mut(dst)) {
        return op.into(s, d);
    }
    let mut buf = [0f32; CONVERT_CHUNK];
    for (s, d) in src.chunks(CONVERT_CHUNK).zip(dst.chunks_mut(CONVERT_CHUNK)) {
        let buf = &mut buf[..s.len()];
        T::widen(s, buf);
        op.in_place(buf);
        T::narrow(buf, d);
    }
}

impl<M: Mode> Session<M> {
    /// `op` over a contiguous slice, split into fixed parallel chunks when it is large.
    pub(crate) fn slice_in_place<T: Element>(&self, data: &mut [T], op: &impl SliceOp) {
        if self.parallel(data.len()) {
            let chunks = data.chunks_mut(PAR_CHUNK);
            self.for_each_item(true, chunks, |c| chunk_in_place(c, op));
        } else {
            chunk_in_place(data, op);
        }
    }

    /// `dst = op(src)` over contiguous slices of equal length.
    pub(crate) fn slice_into<T: Element>(&self, src: &[T], dst: &mut [T], op: &impl SliceOp) {
        if self.parallel(src.len()) {
            let chunks = src.chunks(PAR_CHUNK).zip(dst.chunks_mut(PAR_CHUNK));
            self.for_each_item(true, chunks, |(s, d)| chunk_into(s, d, op));
        } else {
            chunk_into(src, dst, op);
        }
    }

    /// `op` in place over an array of any layout.
    pub(crate) fn array_in_place<T: Element, D: Dimension>(
        &self,
        a: &mut ArrayRef<T, D>,
        op: &impl SliceOp,
    ) {
        if a.is_empty() {
            return;
        }
        if let Some(s) = a.as_slice_memory_order_mut() {
            return self.slice_in_place(s, op);
        }
        let axis = smallest_stride_axis(a);
        let lane = |mut lane: ndarray::ArrayViewMut1<'_, T>| match lane.as_slice_memory_order_mut()
        {
            Some(s) => chunk_in_place(s, op),
            None => with_row_mut(lane, |buf| op.in_place(buf)),
        };
        let parallel = self.parallel(a.len());
        self.for_each_lane_piece(parallel, Zip::from(a.lanes_mut(axis)), |z| {
            z.for_each(&lane)
        });
    }

    /// `dst = op(src)` for arrays of the same shape (checked by the caller) and any layouts.
    pub(crate) fn array_into<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        dst: &mut ArrayRef<T, D>,
        op: &impl SliceOp,
    ) {
        if src.is_empty() {
            return;
        }
        if src.strides() == dst.strides()
            && let (Some(s), Some(d)) =
                (src.as_slice_memory_order(), dst.as_slice_memory_order_mut())
        {
            return self.slice_into(s, d, op);
        }
        let axis = smallest_stride_axis(dst);
        let lane = |d: ndarray::ArrayViewMut1<'_, T>, s: ndarray::ArrayView1<'_, T>| {
            with_row_mut(d, |d| with_row(s, |s| op.into(s, d)))
        };
        let parallel = self.parallel(src.len());
        let lanes = Zip::from(dst.lanes_mut(axis)).and(src.lanes(axis));
        self.for_each_lane_piece(parallel, lanes, |z| z.for_each(&lane));
    }
}

/// The axis along which elements are closest in memory (among axes longer than 1).
pub(crate) fn smallest_stride_axis<T, D: Dimension>(a: &ArrayRef<T, D>) -> Axis {
    (0..a.ndim())
        .filter(|&i| a.shape()[i] > 1)
        .min_by_key(|&i| a.strides()[i].unsigned_abs())
        .map(Axis)
        .unwrap_or(Axis(a.ndim().saturating_sub(1)))
}
