//! The gated forms of a transformer MLP: `act(gate) * up`, the activation and the product in
//! `f32`, rounded once to the element type at the end. Each in three forms: in place (into
//! `gate`), `_into` a destination, `_owned`.

use ndarray::{Array, ArrayRef, ArrayView1, ArrayViewMut1, Dimension, Zip};

use super::walk::smallest_stride_axis;
use super::{CONVERT_CHUNK, PAR_CHUNK, Session};
use crate::error::same_shape;
use crate::ops::nan::MulRow;
use crate::row_buffer::{with_row, with_row_mut};
use crate::{Element, Error, Func, Mode};

macro_rules! gated_forms {
    ($($name:ident, $into:ident, $owned:ident, $func:expr, $what:literal;)*) => {
        impl<M: Mode> Session<M> {$(
            #[doc = concat!("`gate = ", $what, "(gate) * up` in place; shapes must match.")]
            pub fn $name<T: Element, D: Dimension>(
                &self,
                gate: &mut ArrayRef<T, D>,
                up: &ArrayRef<T, D>,
            ) -> Result<(), Error> {
                self.gated($func, gate, up)
            }
            #[doc = concat!("`out = ", $what, "(gate) * up`; shapes must match.")]
            pub fn $into<T: Element, D: Dimension>(
                &self,
                gate: &ArrayRef<T, D>,
                up: &ArrayRef<T, D>,
                out: &mut ArrayRef<T, D>,
            ) -> Result<(), Error> {
                self.gated_into($func, gate, up, out)
            }
            #[doc = concat!("`", $what, "(gate) * up` as a new array; shapes must match.")]
            pub fn $owned<T: Element, D: Dimension>(
                &self,
                gate: &ArrayRef<T, D>,
                up: &ArrayRef<T, D>,
            ) -> Result<Array<T, D>, Error> {
                self.gated_owned($func, gate, up)
            }
        )*}
    };
}

gated_forms! {
    swiglu, swiglu_into, swiglu_owned, Func::Silu, "silu";
    geglu, geglu_into, geglu_owned, Func::GeluErf, "gelu";
    geglu_tanh, geglu_tanh_into, geglu_tanh_owned, Func::GeluTanh, "gelu_tanh";
}

impl<M: Mode> Session<M> {
    /// `gate = func(gate) * up` in place, for any gate function.
    ///
    /// ```
    /// use activation_kernels::{Func, Session, exact};
    /// use ndarray::array;
    /// let (mut gate, up) = (array![1.0f32, -2.0], array![3.0f32, 0.5]);
    /// Session::exact().gated(Func::Silu, &mut gate, &up)?;
    /// assert_eq!(gate[0], exact::silu(1.0) * 3.0);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn gated<T: Element, D: Dimension>(
        &self,
        func: Func,
        gate: &mut ArrayRef<T, D>,
        up: &ArrayRef<T, D>,
    ) -> Result<(), Error> {
        same_shape("gate and up", gate.shape(), up.shape())?;
        if gate.is_empty() {
            return Ok(());
        }
        if gate.strides() == up.strides()
            && let (Some(u), Some(g)) =
                (up.as_slice_memory_order(), gate.as_slice_memory_order_mut())
        {
            self.gated_slices(func, None, u, g);
            return Ok(());
        }
        let axis = smallest_stride_axis(gate);
        let lane = |g: ArrayViewMut1<'_, T>, u: ArrayView1<'_, T>| {
            with_row_mut(g, |g| with_row(u, |u| self.gated_row(func, None, u, g)))
        };
        let lanes = Zip::from(gate.lanes_mut(axis)).and(up.lanes(axis));
        self.for_each_lane_piece(self.parallel(up.len()), lanes, |z| z.for_each(&lane));
        Ok(())
    }

    /// `out = func(gate) * up` for any gate function; all three shapes must be equal.
    ///
    /// ```
    /// use activation_kernels::{Func, Session, exact};
    /// use ndarray::array;
    /// let (gate, up) = (array![1.0f32, -2.0], array![3.0f32, 0.5]);
    /// let mut out = array![0.0f32, 0.0];
    /// Session::exact().gated_into(Func::Silu, &gate, &up, &mut out)?;
    /// assert_eq!(out[0], exact::silu(1.0) * 3.0);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn gated_into<T: Element, D: Dimension>(
        &self,
        func: Func,
        gate: &ArrayRef<T, D>,
        up: &ArrayRef<T, D>,
        out: &mut ArrayRef<T, D>,
    ) -> Result<(), Error> {
        same_shape("gate and up", gate.shape(), up.shape())?;
        same_shape("gate and out", gate.shape(), out.shape())?;
        if gate.is_empty() {
            return Ok(());
        }
        if gate.strides() == up.strides()
            && gate.strides() == out.strides()
            && let (Some(g), Some(u), Some(o)) = (
                gate.as_slice_memory_order(),
                up.as_slice_memory_order(),
                out.as_slice_memory_order_mut(),
            )
        {
            self.gated_slices(func, Some(g), u, o);
            return Ok(());
        }
        let axis = smallest_stride_axis(out);
        let lane = |o: ArrayViewMut1<'_, T>, g: ArrayView1<'_, T>, u: ArrayView1<'_, T>| {
            with_row_mut(o, |o| {
                with_row(g, |g| with_row(u, |u| self.gated_row(func, Some(g), u, o)))
            })
        };
        let lanes = Zip::from(out.lanes_mut(axis))
            .and(gate.lanes(axis))
            .and(up.lanes(axis));
        self.for_each_lane_piece(self.parallel(up.len()), lanes, |z| z.for_each(&lane));
        Ok(())
    }

    /// `func(gate) * up` as a new array (standard layout).
    pub fn gated_owned<T: Element, D: Dimension>(
        &self,
        func: Func,
        gate: &ArrayRef<T, D>,
        up: &ArrayRef<T, D>,
    ) -> Result<Array<T, D>, Error> {
        same_shape("gate and up", gate.shape(), up.shape())?;
        let mut out = super::owned::try_to_owned(gate, "gated output")?;
        self.gated(func, &mut out, up)?;
        Ok(out)
    }

    /// One row in `f32`: `out = func(gate) * up`, with `gate` `None` when `out` holds it.
    fn gated_row(&self, func: Func, gate: Option<&[f32]>, up: &[f32], out: &mut [f32]) {
        match gate {
            Some(g) => self.kernel_into(func, g, out),
            None => self.kernel_in_place(func, out),
        }
        // Exact mode: in the exact floating-point environment, a NaN product canonical.
        if M::FAST {
            for (o, u) in out.iter_mut().zip(up) {
                *o *= *u;
            }
        } else {
            MulRow { out, up }.dispatch::<M>(self.isa);
        }
    }

    /// Contiguous slices of equal length and layout, in fixed parallel chunks when large;
    /// 16-bit values through `f32` chunks, rounded once.
    fn gated_slices<T: Element>(&self, func: Func, gate: Option<&[T]>, up: &[T], out: &mut [T]) {
        let chunk = |g: Option<&[T]>, (u, o): (&[T], &mut [T])| {
            let mut a = [0f32; CONVERT_CHUNK];
            let mut b = [0f32; CONVERT_CHUNK];
            for (i, (u, o)) in u
                .chunks(CONVERT_CHUNK)
                .zip(o.chunks_mut(CONVERT_CHUNK))
                .enumerate()
            {
                let g = g.map(|g| &g[i * CONVERT_CHUNK..i * CONVERT_CHUNK + u.len()]);
                let (a, b) = (&mut a[..u.len()], &mut b[..u.len()]);
                T::widen(g.unwrap_or(&*o), a);
                T::widen(u, b);
                self.gated_row(func, None, b, a);
                T::narrow(a, o);
            }
        };
        if self.parallel(up.len()) {
            let rest = up.chunks(PAR_CHUNK).zip(out.chunks_mut(PAR_CHUNK));
            match gate {
                Some(g) => {
                    let items = g.chunks(PAR_CHUNK).zip(rest);
                    self.for_each_item(true, items, |(g, r)| chunk(Some(g), r))
                }
                None => self.for_each_item(true, rest, |r| chunk(None, r)),
            }
        } else {
            chunk(gate, (up, out));
        }
    }
}
