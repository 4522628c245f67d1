//! The gated forms of a transformer MLP: `act(gate) * up`, the activation and the product in
//! `f32`, rounded once to the element type at the end.

use ndarray::{ArrayRef, Dimension};
use rayon::prelude::*;

use super::elementwise::same_shape;
use super::{CONVERT_CHUNK, Element, PAR_CHUNK, Session};
use crate::{Error, Func, Mode};

impl<M: Mode> Session<M> {
    /// `out = silu(gate) * up` (SwiGLU), the product rounded once after the activation.
    /// All three shapes must be equal.
    ///
    /// ```
    /// use activation_kernels::{Session, exact};
    /// use ndarray::array;
    /// let (gate, up) = (array![1.0f32, -2.0], array![3.0f32, 0.5]);
    /// let mut out = array![0.0f32, 0.0];
    /// Session::exact().swiglu(&gate, &up, &mut out).unwrap();
    /// assert_eq!(out[0], exact::silu(1.0) * 3.0);
    /// ```
    pub fn swiglu<T: Element, D: Dimension>(
        &self,
        gate: &ArrayRef<T, D>,
        up: &ArrayRef<T, D>,
        out: &mut ArrayRef<T, D>,
    ) -> Result<(), Error> {
        self.gated(Func::Silu, gate, up, out)
    }

    /// `out = gelu(gate) * up` (GEGLU, erf form; the rational form in fast mode).
    pub fn geglu<T: Element, D: Dimension>(
        &self,
        gate: &ArrayRef<T, D>,
        up: &ArrayRef<T, D>,
        out: &mut ArrayRef<T, D>,
    ) -> Result<(), Error> {
        self.gated(Func::GeluErf, gate, up, out)
    }

    /// `out = gelu_tanh(gate) * up` (GEGLU, tanh form).
    pub fn geglu_tanh<T: Element, D: Dimension>(
        &self,
        gate: &ArrayRef<T, D>,
        up: &ArrayRef<T, D>,
        out: &mut ArrayRef<T, D>,
    ) -> Result<(), Error> {
        self.gated(Func::GeluTanh, gate, up, out)
    }

    /// `out = func(gate) * up` for any gate function.
    pub fn gated<T: Element, D: Dimension>(
        &self,
        func: Func,
        gate: &ArrayRef<T, D>,
        up: &ArrayRef<T, D>,
        out: &mut ArrayRef<T, D>,
    ) -> Result<(), Error> {
        same_shape("gate and up", gate.shape(), up.shape())?;
        same_shape("gate and out", gate.shape(), out.shape())?;
        let strides_agree = gate.strides() == up.strides() && gate.strides() == out.strides();
        if strides_agree
            && let (Some(g), Some(u), Some(o)) = (
                gate.as_slice_memory_order(),
                up.as_slice_memory_order(),
                out.as_slice_memory_order_mut(),
            )
        {
            self.gated_slices(func, g, u, o);
            return Ok(());
        }
        // Any other layout: standard-layout copies of the inputs, then the slice path.
        let g = gate.as_standard_layout();
        let u = up.as_standard_layout();
        let mut o = ndarray::Array::from_elem(gate.raw_dim(), T::from_f32(0.0));
        let (g, u) = (g.as_slice().unwrap_or(&[]), u.as_slice().unwrap_or(&[]));
        if let Some(os) = o.as_slice_mut() {
            self.gated_slices(func, g, u, os);
        }
        out.assign(&o);
        Ok(())
    }

    fn gated_slices<T: Element>(&self, func: Func, gate: &[T], up: &[T], out: &mut [T]) {
        let chunk = |(g, (u, o)): (&[T], (&[T], &mut [T]))| {
            let mut a = [0f32; CONVERT_CHUNK];
            let mut b = [0f32; CONVERT_CHUNK];
            for ((g, u), o) in g
                .chunks(CONVERT_CHUNK)
                .zip(u.chunks(CONVERT_CHUNK))
                .zip(o.chunks_mut(CONVERT_CHUNK))
            {
                let (a, b) = (&mut a[..g.len()], &mut b[..g.len()]);
                T::widen(g, a);
                self.kernel_in_place(func, a);
                T::widen(u, b);
                for (a, b) in a.iter_mut().zip(b.iter()) {
                    *a *= *b;
                }
                T::narrow(a, o);
            }
        };
        if self.parallel(gate.len()) {
            self.install(|| {
                gate.par_chunks(PAR_CHUNK)
                    .zip(up.par_chunks(PAR_CHUNK).zip(out.par_chunks_mut(PAR_CHUNK)))
                    .for_each(chunk)
            });
        } else {
            chunk((gate, (up, out)));
        }
    }
}
