//! Bringing any ndarray layout to the `f32` slice kernels: the contiguous fast path (either
//! memory order), the strided fallback along the axis of smallest stride, 16-bit types through
//! `f32` chunks, and the split into fixed-size parallel chunks.

use ndarray::{ArrayRef, Axis, Dimension, Zip};
use rayon::prelude::*;

use super::{CONVERT_CHUNK, Element, PAR_CHUNK, Session};
use crate::Mode;

/// Runs `op` on `data` as `f32`, one chunk of at most `CONVERT_CHUNK` at a time: directly for
/// `f32`, through a widened buffer rounded back once for 16-bit types.
fn chunk_in_place<T: Element>(data: &mut [T], op: &(impl Fn(&mut [f32]) + Sync)) {
    if let Some(f) = T::as_f32_slice_mut(data) {
        return op(f);
    }
    let mut buf = [0f32; CONVERT_CHUNK];
    for chunk in data.chunks_mut(CONVERT_CHUNK) {
        let buf = &mut buf[..chunk.len()];
        T::widen(chunk, buf);
        op(buf);
        T::narrow(buf, chunk);
    }
}

/// `dst = op(src)` chunk by chunk (equal lengths).
fn chunk_into<T: Element>(src: &[T], dst: &mut [T], op: &(impl Fn(&mut [f32]) + Sync)) {
    let mut buf = [0f32; CONVERT_CHUNK];
    for (s, d) in src.chunks(CONVERT_CHUNK).zip(dst.chunks_mut(CONVERT_CHUNK)) {
        match (T::as_f32_slice(s), T::as_f32_slice_mut(d)) {
            (Some(s), Some(d)) => {
                d.copy_from_slice(s);
                op(d);
            }
            _ => {
                let buf = &mut buf[..s.len()];
                T::widen(s, buf);
                op(buf);
                T::narrow(buf, d);
            }
        }
    }
}

impl<M: Mode> Session<M> {
    /// `op` over a contiguous slice, split into fixed parallel chunks when it is large.
    pub(crate) fn slice_in_place<T: Element>(
        &self,
        data: &mut [T],
        op: &(impl Fn(&mut [f32]) + Sync),
    ) {
        if self.parallel(data.len()) {
            self.install(|| {
                data.par_chunks_mut(PAR_CHUNK)
                    .for_each(|c| chunk_in_place(c, op))
            });
        } else {
            chunk_in_place(data, op);
        }
    }

    /// `dst = op(src)` over contiguous slices of equal length.
    pub(crate) fn slice_into<T: Element>(
        &self,
        src: &[T],
        dst: &mut [T],
        op: &(impl Fn(&mut [f32]) + Sync),
    ) {
        if self.parallel(src.len()) {
            self.install(|| {
                src.par_chunks(PAR_CHUNK)
                    .zip(dst.par_chunks_mut(PAR_CHUNK))
                    .for_each(|(s, d)| chunk_into(s, d, op))
            });
        } else {
            chunk_into(src, dst, op);
        }
    }

    /// `op` in place over an array of any layout.
    pub(crate) fn array_in_place<T: Element, D: Dimension>(
        &self,
        a: &mut ArrayRef<T, D>,
        op: &(impl Fn(&mut [f32]) + Sync),
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
            None => strided_lane_in_place(lane, op),
        };
        if self.parallel(a.len()) {
            self.install(|| Zip::from(a.lanes_mut(axis)).par_for_each(lane));
        } else {
            Zip::from(a.lanes_mut(axis)).for_each(lane);
        }
    }

    /// `dst = op(src)` for arrays of the same shape and any layouts.
    pub(crate) fn array_into<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        dst: &mut ArrayRef<T, D>,
        op: &(impl Fn(&mut [f32]) + Sync),
    ) {
        if src.strides() == dst.strides()
            && let (Some(s), Some(d)) =
                (src.as_slice_memory_order(), dst.as_slice_memory_order_mut())
        {
            return self.slice_into(s, d, op);
        }
        dst.assign(src);
        self.array_in_place(dst, op);
    }
}

/// A lane that is not contiguous: gathered into `f32` chunks, computed, scattered back.
fn strided_lane_in_place<T: Element>(
    mut lane: ndarray::ArrayViewMut1<'_, T>,
    op: &(impl Fn(&mut [f32]) + Sync),
) {
    let mut buf = [0f32; CONVERT_CHUNK];
    let n = lane.len();
    let mut start = 0;
    while start < n {
        let end = (start + CONVERT_CHUNK).min(n);
        let mut part = lane.slice_mut(ndarray::s![start..end]);
        let buf = &mut buf[..end - start];
        for (b, v) in buf.iter_mut().zip(part.iter()) {
            *b = v.to_f32();
        }
        op(buf);
        for (v, b) in part.iter_mut().zip(buf.iter()) {
            *v = T::from_f32(*b);
        }
        start = end;
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
