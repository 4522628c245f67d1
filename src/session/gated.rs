//! The gated forms of a transformer MLP: `act(gate) * up`, the activation and the product in
//! `f32`, rounded once to the element type at the end. Each in three forms: in place (into
//! `gate`), `_into` a destination, `_owned`.

use ndarray::{Array, ArrayRef, Dimension};

use super::traverse::{Grain, Operands, Piece, no_extra};
use super::{CONVERT_CHUNK, Session};
use crate::error::same_shape;
use crate::ops::nan::MulRow;
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
        let operands = Operands::in_place(gate.view_mut().into_dyn()).and(up.view().into_dyn());
        self.traverse(operands, Grain::Elements, no_extra(), |p| {
            self.gated_piece(func, p)
        });
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
        let operands = Operands::into(gate.view().into_dyn(), out.view_mut().into_dyn());
        let operands = operands.and(up.view().into_dyn());
        self.traverse(operands, Grain::Elements, no_extra(), |p| {
            self.gated_piece(func, p)
        });
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

    /// One piece of a gated traversal in `f32`: `dst = func(gate) * up`, the gate in `src` (or
    /// in `dst`, in place), `up` the second input. A chunk at a time, so that the product
    /// reads the activation's output while it is still in L1.
    fn gated_piece(&self, func: Func, p: Piece<'_, ()>) {
        let up = p
            .also
            .expect("a gated traversal has up as its second input");
        let (src, dst) = (p.io.src, p.io.dst);
        for (i, (out, up)) in dst
            .chunks_mut(CONVERT_CHUNK)
            .zip(up.chunks(CONVERT_CHUNK))
            .enumerate()
        {
            match src {
                Some(g) => self.kernel_into(func, &g[i * CONVERT_CHUNK..][..out.len()], out),
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
    }
}
