//! The one traversal of a session's operators over ndarray: an output tensor and up to two
//! read-only inputs of its shape ([`Operands`]), walked in pieces that a [`Grain`] bounds:
//! element-wise operators may be cut anywhere, row operators only between whole rows of their
//! axis.
//!
//! * Contiguous operands of equal strides are walked as slices in memory order: `f32` where it
//!   lies, no copy; 16-bit types through `f32` chunks ([`widened_chunks`], the one widening
//!   loop); whole rows of a standard-layout `f32` tensor in blocks, one call per block.
//! * Any other layout goes lane by lane along an axis (the row axis, or else the one of
//!   smallest stride), each lane through [`crate::row_buffer`] where it is not a contiguous
//!   `f32` lane.
//! * Large tensors are split into pieces fixed by the shape alone, never by the thread count,
//!   and spread over the session's threads.
//!
//! The destination is widened only when it is also an input (in place); a separate source is
//! read and the destination written.

use ndarray::{ArrayView1, ArrayViewD, ArrayViewMut1, ArrayViewMutD, Axis, Zip};

use super::{CONVERT_CHUNK, PAR_CHUNK, Session};
use crate::ops::SrcDst;
use crate::row_buffer::{with_row, with_row_mut, with_row_out};
use crate::{Element, Mode};

/// What an operator writes and reads: an output and up to two read-only inputs of its shape
/// (checked by the caller).
pub(crate) struct Operands<'a, T> {
    /// Written; in place, also the first input.
    dst: ArrayViewMutD<'a, T>,
    /// The first input when it is not `dst`.
    src: Option<ArrayViewD<'a, T>>,
    /// A second input (the `up` of a gated form, the residual of an add + norm).
    also: Option<ArrayViewD<'a, T>>,
}

impl<'a, T: Element> Operands<'a, T> {
    /// `x = op(x)`.
    pub(crate) fn in_place(x: ArrayViewMutD<'a, T>) -> Self {
        Operands {
            dst: x,
            src: None,
            also: None,
        }
    }

    /// `dst = op(src)`.
    pub(crate) fn into(src: ArrayViewD<'a, T>, dst: ArrayViewMutD<'a, T>) -> Self {
        Operands {
            dst,
            src: Some(src),
            also: None,
        }
    }

    /// The same with a second input, `dst = op(src, also)`.
    pub(crate) fn and(self, also: ArrayViewD<'a, T>) -> Self {
        Operands {
            also: Some(also),
            ..self
        }
    }

    /// The shape of every operand.
    pub(crate) fn shape(&self) -> &[usize] {
        self.dst.shape()
    }

    /// `true` when every operand has the destination's strides.
    fn equal_strides(&self) -> bool {
        let s = self.dst.strides();
        self.src.as_ref().is_none_or(|x| x.strides() == s)
            && self.also.as_ref().is_none_or(|x| x.strides() == s)
    }
}

/// Where an operator's work may be cut into pieces.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Grain {
    /// Anywhere: every element is independent of the others.
    Elements,
    /// Only between whole lanes of this axis (the rows of a row operator), never inside one.
    Rows(Axis),
}

/// One piece of the traversal as the operator sees it, in `f32`.
pub(crate) struct Piece<'p, E> {
    /// The destination, with the first input (`src`, or `dst` itself in place).
    pub(crate) io: SrcDst<'p>,
    /// The second input, where the operands have one.
    pub(crate) also: Option<&'p [f32]>,
    /// The length of a row: `io.dst` holds whole rows (all of it for [`Grain::Elements`]).
    pub(crate) row_len: usize,
    /// This row's lane of the per-row input (see [`Session::traverse`]); `None` without one.
    pub(crate) extra: Option<ArrayView1<'p, E>>,
}

impl<E> Piece<'_, E> {
    /// `f(io, also)` for each row of the piece, in order.
    pub(crate) fn for_each_row(self, mut f: impl FnMut(SrcDst<'_>, Option<&[f32]>)) {
        let n = self.row_len.max(1);
        let mut src = self.io.src.map(|s| s.chunks(n));
        let mut also = self.also.map(|a| a.chunks(n));
        for dst in self.io.dst.chunks_mut(n) {
            let src = src.as_mut().and_then(Iterator::next);
            let also = also.as_mut().and_then(Iterator::next);
            f(SrcDst { src, dst }, also);
        }
    }
}

impl<M: Mode> Session<M> {
    /// `op` over `operands` in pieces bounded by `grain`. `extra`, for [`Grain::Rows`] only, is
    /// a per-row input broadcast to the operands' shape (a mask, say): each row's piece gets its
    /// lane along the row axis.
    pub(crate) fn traverse<T: Element, E: Sync>(
        &self,
        mut operands: Operands<'_, T>,
        grain: Grain,
        extra: Option<ArrayViewD<'_, E>>,
        op: impl Fn(Piece<'_, E>) + Sync,
    ) {
        let total = operands.shape().iter().product::<usize>();
        if total == 0 {
            return;
        }
        let parallel = self.parallel(total);
        let axis = match grain {
            Grain::Elements => {
                if self.contiguous_elements(&mut operands, parallel, &op) {
                    return;
                }
                smallest_stride_axis(operands.shape(), operands.dst.strides())
            }
            Grain::Rows(axis) => {
                if extra.is_none() && self.row_blocks(&mut operands, axis, parallel, &op) {
                    return;
                }
                axis
            }
        };
        self.lanes(operands, grain, axis, extra, parallel, &op);
    }

    /// [`Grain::Elements`] over operands that are contiguous slices of equal strides, in
    /// `PAR_CHUNK` pieces when `parallel`; `false`, having done nothing, for any other layout.
    fn contiguous_elements<T: Element, E>(
        &self,
        operands: &mut Operands<'_, T>,
        parallel: bool,
        op: &(impl Fn(Piece<'_, E>) + Sync),
    ) -> bool {
        if !operands.equal_strides() {
            return false;
        }
        let Operands { dst, src, also } = operands;
        let (Some(src), Some(also)) = (
            slice_of(src, |s| s.to_slice_memory_order()),
            slice_of(also, |a| a.to_slice_memory_order()),
        ) else {
            return false;
        };
        let Some(dst) = dst.as_slice_memory_order_mut() else {
            return false;
        };
        self.in_pieces(parallel, PAR_CHUNK, dst, src, also, |d, s, a| {
            widened_chunks(d, s, a, op)
        });
        true
    }

    /// [`Grain::Rows`] along the last axis of standard-layout `f32` operands: blocks of whole
    /// consecutive rows, a few per thread when `parallel`, one call of `op` per block; `false`,
    /// having done nothing, for any other layout or element type.
    fn row_blocks<T: Element, E>(
        &self,
        operands: &mut Operands<'_, T>,
        axis: Axis,
        parallel: bool,
        op: &(impl Fn(Piece<'_, E>) + Sync),
    ) -> bool {
        let shape = operands.shape();
        if axis.index() + 1 != shape.len() {
            return false;
        }
        let (cols, total) = (shape[axis.index()], shape.iter().product::<usize>());
        let Operands { dst, src, also } = operands;
        let (Some(src), Some(also)) = (
            slice_of(src, |s| s.to_slice().and_then(T::as_f32_slice)),
            slice_of(also, |a| a.to_slice().and_then(T::as_f32_slice)),
        ) else {
            return false;
        };
        let Some(dst) = dst.as_slice_mut().and_then(T::as_f32_slice_mut) else {
            return false;
        };
        let block = self.per_piece(total / cols) * cols;
        self.in_pieces(parallel, block, dst, src, also, |dst, src, also| {
            let io = SrcDst { src, dst };
            op(Piece {
                io,
                also,
                row_len: cols,
                extra: None,
            })
        });
        true
    }

    /// `work(dst, src, also)` on the whole slices, or when `parallel` on consecutive pieces of
    /// `piece` elements of each (the last one shorter) spread over the session's threads.
    fn in_pieces<X: Send + Sync>(
        &self,
        parallel: bool,
        piece: usize,
        dst: &mut [X],
        src: Option<&[X]>,
        also: Option<&[X]>,
        work: impl Fn(&mut [X], Option<&[X]>, Option<&[X]>) + Sync,
    ) {
        if !parallel {
            return work(dst, src, also);
        }
        let items = dst.chunks_mut(piece).enumerate();
        self.for_each_item(true, items, |(i, d)| {
            let range = i * piece..i * piece + d.len();
            work(d, part(src, range.clone()), part(also, range))
        });
    }

    /// `op` lane by lane along `axis`, in pieces of whole lanes spread over the session's
    /// threads when `parallel`: each lane as a slice where it is contiguous (in memory order
    /// for [`Grain::Elements`], through [`widened_chunks`]), else through row buffers.
    fn lanes<T: Element, E: Sync>(
        &self,
        operands: Operands<'_, T>,
        grain: Grain,
        axis: Axis,
        extra: Option<ArrayViewD<'_, E>>,
        parallel: bool,
        op: &(impl Fn(Piece<'_, E>) + Sync),
    ) {
        let row_len = operands.shape()[axis.index()];
        let elements = matches!(grain, Grain::Elements);
        let lane = |mut d: ArrayViewMut1<'_, T>,
                    s: Option<ArrayView1<'_, T>>,
                    a: Option<ArrayView1<'_, T>>,
                    extra: Option<ArrayView1<'_, E>>| {
            let stride = d.strides()[0];
            if elements && let Some(dst) = d.as_slice_memory_order_mut() {
                let (s, a) = (flat_like(&s, stride), flat_like(&a, stride));
                if let (Some(s), Some(a)) = (s, a) {
                    return widened_chunks(dst, s, a, op);
                }
            }
            let with_also = |io: SrcDst<'_>| match &a {
                Some(a) => with_row(a.view(), |a| {
                    op(Piece {
                        io,
                        also: Some(a),
                        row_len,
                        extra,
                    })
                }),
                None => op(Piece {
                    io,
                    also: None,
                    row_len,
                    extra,
                }),
            };
            match s {
                Some(s) => with_row_out(d, |d| with_row(s, |s| with_also(SrcDst::new(s, d)))),
                None => with_row_mut(d, |d| with_also(SrcDst::in_place(d))),
            }
        };
        let Operands { mut dst, src, also } = operands;
        let dst = dst.lanes_mut(axis);
        // The arity glue, here only: a Zip's type changes with every producer it takes, and
        // one that takes only the operands present keeps ndarray's contiguous inner loop.
        macro_rules! zip_lanes {
            ($($p:expr),*; |$($x:ident),*| $s:expr, $a:expr, $e:expr) => {{
                let zip = Zip::from(dst)$(.and($p.lanes(axis)))*;
                self.for_each_lane_piece(parallel, zip, |z| {
                    z.for_each(|d, $($x),*| lane(d, $s, $a, $e))
                })
            }};
        }
        match (src, also, extra) {
            (None, None, None) => zip_lanes!(; | | None, None, None),
            (Some(s), None, None) => zip_lanes!(s; |s| Some(s), None, None),
            (None, Some(a), None) => zip_lanes!(a; |a| None, Some(a), None),
            (Some(s), Some(a), None) => zip_lanes!(s, a; |s, a| Some(s), Some(a), None),
            (None, None, Some(e)) => zip_lanes!(e; |e| None, None, Some(e)),
            (Some(s), None, Some(e)) => zip_lanes!(s, e; |s, e| Some(s), None, Some(e)),
            (None, Some(a), Some(e)) => zip_lanes!(a, e; |a, e| None, Some(a), Some(e)),
            (Some(s), Some(a), Some(e)) => {
                zip_lanes!(s, a, e; |s, a, e| Some(s), Some(a), Some(e))
            }
        }
    }
}

/// `Some(None)` without the operand, `Some(Some(slice))` where `slice` finds one, `None` where
/// it does not.
fn slice_of<'a, T, X: 'a>(
    operand: &Option<ArrayViewD<'a, T>>,
    slice: impl FnOnce(&ArrayViewD<'a, T>) -> Option<&'a [X]>,
) -> Option<Option<&'a [X]>> {
    match operand {
        None => Some(None),
        Some(x) => slice(x).map(Some),
    }
}

/// `Some(None)` without the lane, `Some(Some(slice))` where it is contiguous with the stride
/// of the destination lane (so that the slices match element by element), `None` otherwise.
fn flat_like<'a, T>(lane: &Option<ArrayView1<'a, T>>, stride: isize) -> Option<Option<&'a [T]>> {
    match lane {
        None => Some(None),
        Some(x) if x.len() <= 1 || x.strides()[0] == stride => x.to_slice_memory_order().map(Some),
        Some(_) => None,
    }
}

/// The `range` of `x`, if there is an `x`.
fn part<X>(x: Option<&[X]>, range: std::ops::Range<usize>) -> Option<&[X]> {
    x.map(|x| &x[range])
}

/// No per-row input: the `extra` of a [`Session::traverse`] that needs none.
pub(crate) fn no_extra<'a>() -> Option<ArrayViewD<'a, ()>> {
    None
}

/// The destination of `io` holding its input: the source copied in first, if there is one
/// (for a row kernel that works in place).
pub(crate) fn in_place(io: SrcDst<'_>) -> &mut [f32] {
    if let Some(src) = io.src {
        io.dst.copy_from_slice(src);
    }
    io.dst
}

/// `op` on contiguous slices of equal length: directly for `f32`; for 16-bit types through
/// `f32` chunks of at most `CONVERT_CHUNK` values, rounded back once (the only widening loop
/// of contiguous data). The destination is widened only in place; `src` and `also` into
/// buffers of their own.
pub(crate) fn widened_chunks<T: Element, E>(
    dst: &mut [T],
    src: Option<&[T]>,
    also: Option<&[T]>,
    op: &impl Fn(Piece<'_, E>),
) {
    if let Some(d) = T::as_f32_slice_mut(dst) {
        let piece = Piece {
            row_len: d.len(),
            io: SrcDst {
                src: src.and_then(T::as_f32_slice),
                dst: d,
            },
            also: also.and_then(T::as_f32_slice),
            extra: None,
        };
        return op(piece);
    }
    let mut a = [0f32; CONVERT_CHUNK];
    let mut b = [0f32; CONVERT_CHUNK];
    for (i, d) in dst.chunks_mut(CONVERT_CHUNK).enumerate() {
        let range = i * CONVERT_CHUNK..i * CONVERT_CHUNK + d.len();
        let (a, b) = (&mut a[..d.len()], &mut b[..d.len()]);
        // The first input, widened where the result is computed.
        T::widen(src.map_or(&*d, |s| &s[range.clone()]), a);
        let also = also.map(|x| {
            T::widen(&x[range.clone()], b);
            &*b
        });
        op(Piece {
            row_len: a.len(),
            io: SrcDst::in_place(a),
            also,
            extra: None,
        });
        T::narrow(a, d);
    }
}

/// The axis along which elements are closest in memory (among axes longer than 1).
pub(crate) fn smallest_stride_axis(shape: &[usize], strides: &[isize]) -> Axis {
    (0..shape.len())
        .filter(|&i| shape[i] > 1)
        .min_by_key(|&i| strides[i].unsigned_abs())
        .map(Axis)
        .unwrap_or(Axis(shape.len().saturating_sub(1)))
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use half::bf16;
    use ndarray::{Array2, ArrayD, s};

    use crate::{Exact, Session};

    /// Sessions that take every path: one thread, and two threads with every tensor split.
    fn sessions() -> [Session<Exact>; 2] {
        let split = Session::exact().with_threads(2).unwrap();
        [Session::exact(), split.with_parallel_threshold(1)]
    }

    fn values(rows: usize, cols: usize, seed: f32) -> Array2<f32> {
        Array2::from_shape_fn((rows, cols), |(i, j)| seed + (i * cols + j) as f32 / 8.0)
    }

    /// `dst = src * 2 + also` and `dst = dst * 2 + also`, cut anywhere.
    fn twice_plus(p: Piece<'_, ()>) {
        let also = p.also.unwrap();
        match p.io.src {
            Some(src) => p.io.dst.iter_mut().zip(src).for_each(|(d, s)| *d = s * 2.0),
            None => p.io.dst.iter_mut().for_each(|d| *d *= 2.0),
        }
        p.io.dst.iter_mut().zip(also).for_each(|(d, a)| *d += a);
    }

    /// Every row becomes its running sum plus its extra (or 0): wrong if a row were cut,
    /// reordered or mixed with another.
    fn running_sum(p: Piece<'_, f32>) {
        let extra = p.extra.map_or(0.0, |e| e[0]);
        p.for_each_row(|io, _| {
            let row = in_place(io);
            let mut sum = extra;
            for v in row {
                sum += *v;
                *v = sum;
            }
        });
    }

    pub fn every_layout_and_split_gives_the_elements_of_the_contiguous_walk() {
        let (x, a) = (values(40, 70, 1.0), values(40, 70, -3.0));
        let want = &x * 2.0 + &a;
        for session in sessions() {
            // C order, F order, reversed, every other column (16-bit too): in place and into.
            let f = x.t().as_standard_layout().reversed_axes().into_owned();
            let layouts: Vec<ArrayD<f32>> = vec![x.clone().into_dyn(), f.into_dyn()];
            for mut y in layouts {
                let operands = Operands::in_place(y.view_mut()).and(a.view().into_dyn());
                session.traverse(operands, Grain::Elements, no_extra(), twice_plus);
                assert_eq!(y, want.clone().into_dyn());
            }
            let mut wide = Array2::zeros((40, 140));
            wide.slice_mut(s![.., ..;2]).assign(&x);
            let mut out = Array2::zeros((70, 40));
            let mut out = out.view_mut().reversed_axes();
            out.invert_axis(ndarray::Axis(0));
            let src = wide.slice(s![.., ..;2]).into_dyn();
            let operands = Operands::into(src, out.view_mut().into_dyn());
            session.traverse(
                operands.and(a.view().into_dyn()),
                Grain::Elements,
                no_extra(),
                twice_plus,
            );
            assert_eq!(out, want);
            let mut h = x.mapv(bf16::from_f32);
            let h_also = a.mapv(bf16::from_f32);
            let operands =
                Operands::in_place(h.view_mut().into_dyn()).and(h_also.view().into_dyn());
            session.traverse(operands, Grain::Elements, no_extra(), twice_plus);
            let want16 = (x.mapv(|v| bf16::from_f32(v).to_f32() * 2.0)
                + a.mapv(|v| bf16::from_f32(v).to_f32()))
            .mapv(bf16::from_f32);
            assert_eq!(h, want16);
        }
    }

    pub fn rows_are_never_cut_in_any_layout_or_split() {
        let x = values(33, 50, 0.5);
        let mut want = x.clone();
        for mut row in want.rows_mut() {
            row.accumulate_axis_inplace(ndarray::Axis(0), |&p, v| *v += p);
        }
        for session in sessions() {
            // Rows of a standard-layout tensor (the block walk), rows of an F-order one (lanes
            // through buffers), and the transposed columns; in place and into.
            let mut y = x.clone().into_dyn();
            session.traverse(
                Operands::in_place(y.view_mut()),
                Grain::Rows(ndarray::Axis(1)),
                None,
                running_sum,
            );
            assert_eq!(y, want.clone().into_dyn());
            let mut f = x.t().as_standard_layout().reversed_axes().into_owned();
            session.traverse(
                Operands::in_place(f.view_mut().into_dyn()),
                Grain::Rows(ndarray::Axis(1)),
                None,
                running_sum,
            );
            assert_eq!(f, want);
            let mut t = Array2::zeros((50, 33));
            let operands = Operands::into(x.t().into_dyn(), t.view_mut().into_dyn());
            session.traverse(operands, Grain::Rows(ndarray::Axis(0)), None, running_sum);
            assert_eq!(t, want.t());
            // A per-row extra broadcast over the row.
            let extra = ndarray::Array1::from_shape_fn(33, |i| i as f32 * 100.0);
            let extra = extra.insert_axis(ndarray::Axis(1));
            let extra = extra.broadcast((33, 50)).unwrap().into_dyn();
            let mut y = x.clone().into_dyn();
            session.traverse(
                Operands::in_place(y.view_mut()),
                Grain::Rows(ndarray::Axis(1)),
                Some(extra),
                running_sum,
            );
            let with_extra = &want
                + &ndarray::Array1::from_shape_fn(33, |i| i as f32 * 100.0)
                    .insert_axis(ndarray::Axis(1));
            assert_eq!(y, with_extra.into_dyn());
        }
    }
}
