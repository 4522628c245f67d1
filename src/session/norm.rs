//! Layer normalisation over the last axis, in three forms.

use ndarray::{Array, ArrayRef, ArrayRef1, Axis, Dimension};

use super::Session;
use super::traverse::{Grain, Operands, in_place, no_extra};
use crate::error::same_shape;
use crate::lanes::ExactFpEnv;
use crate::ops::SrcDst;
use crate::ops::norm::LayerNormRow;
use crate::row_buffer::with_row;
use crate::{Element, Error, Mode};

impl<M: Mode> Session<M> {
    /// Layer normalisation over the last axis, in place: each row becomes
    /// `((x - mean) / sqrt(var + eps)) * gamma + beta`, the mean and variance summed in the
    /// canonical order (so exact mode gives the same bits on every instruction set and thread
    /// count). A row whose offset is large beside its spread (`1e6 + N(0, 1)`) keeps an
    /// ordinary row's accuracy: its mean is carried as two floats. So is a row whose sums
    /// overflow or whose squares underflow: it is normalised at a power-of-two scale.
    /// `gamma` and `beta` have the last axis's length; `eps` is finite and `>= 0`.
    ///
    /// ```
    /// use activation_kernels::Session;
    /// use ndarray::{array, Array1};
    /// let mut x = array![[1.0f32, 2.0, 3.0, 4.0]];
    /// let (g, b) = (Array1::ones(4), Array1::zeros(4));
    /// Session::exact().layer_norm(&mut x, &g, &b, 0.0)?;
    /// assert!((x[[0, 0]] + 1.3416407).abs() < 1e-6);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn layer_norm<T: Element, D: Dimension>(
        &self,
        x: &mut ArrayRef<T, D>,
        gamma: &ArrayRef1<f32>,
        beta: &ArrayRef1<f32>,
        eps: f32,
    ) -> Result<(), Error> {
        let axis = check_layer_norm(x.shape(), gamma, beta, eps)?;
        let operands = Operands::in_place(x.view_mut().into_dyn());
        self.layer_norm_rows(operands, axis, gamma, beta, eps);
        Ok(())
    }

    /// `dst = layer_norm(src)` (see [`Session::layer_norm`]); shapes must match.
    pub fn layer_norm_into<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        dst: &mut ArrayRef<T, D>,
        gamma: &ArrayRef1<f32>,
        beta: &ArrayRef1<f32>,
        eps: f32,
    ) -> Result<(), Error> {
        same_shape("source and destination", src.shape(), dst.shape())?;
        let axis = check_layer_norm(src.shape(), gamma, beta, eps)?;
        let operands = Operands::into(src.view().into_dyn(), dst.view_mut().into_dyn());
        self.layer_norm_rows(operands, axis, gamma, beta, eps);
        Ok(())
    }

    /// `layer_norm(src)` as a new array (see [`Session::layer_norm`]).
    pub fn layer_norm_owned<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        gamma: &ArrayRef1<f32>,
        beta: &ArrayRef1<f32>,
        eps: f32,
    ) -> Result<Array<T, D>, Error> {
        check_layer_norm(src.shape(), gamma, beta, eps)?;
        let mut out = super::owned::try_to_owned(src, "layer_norm output")?;
        self.layer_norm(&mut out, gamma, beta, eps)?;
        Ok(out)
    }

    /// Layer normalisation of every row along `axis` of `operands` (checked by the caller);
    /// with a second operand, of `x + residual` ([`add_residual`]).
    pub(super) fn layer_norm_rows<T: Element>(
        &self,
        operands: Operands<'_, T>,
        axis: Axis,
        gamma: &ArrayRef1<f32>,
        beta: &ArrayRef1<f32>,
        eps: f32,
    ) {
        let isa = self.isa;
        with_row(gamma.view(), |gamma| {
            with_row(beta.view(), |beta| {
                self.traverse(operands, Grain::Rows(axis), no_extra(), |p| {
                    p.for_each_row(|io, residual| {
                        let row = match residual {
                            Some(residual) => add_residual::<T, M>(io, residual),
                            None => in_place(io),
                        };
                        LayerNormRow {
                            row,
                            gamma,
                            beta,
                            eps,
                        }
                        .dispatch::<M>(isa)
                    })
                })
            })
        });
    }
}

/// The last axis of `shape`, once `gamma`, `beta` and `eps` are checked against it.
pub(super) fn check_layer_norm(
    shape: &[usize],
    gamma: &ArrayRef1<f32>,
    beta: &ArrayRef1<f32>,
    eps: f32,
) -> Result<Axis, Error> {
    let Some(&n) = shape.last() else {
        return Err(Error::InvalidArgument(
            "layer_norm needs at least one axis".into(),
        ));
    };
    for (what, len) in [
        (
            "layer norm gamma (one value per element of the last axis)",
            gamma.len(),
        ),
        (
            "layer norm beta (one value per element of the last axis)",
            beta.len(),
        ),
    ] {
        if len != n {
            return Err(Error::ShapeMismatch {
                what,
                expected: vec![n],
                found: vec![len],
            });
        }
    }
    if !(eps >= 0.0 && eps.is_finite()) {
        return Err(Error::InvalidArgument(format!(
            "layer_norm eps must be finite and >= 0, got {eps}"
        )));
    }
    Ok(Axis(shape.len() - 1))
}

/// `x + residual` of one row in `f32`, each sum rounded to `T` first as the separate add would
/// store it: the row [`Session::layer_norm`]'s rows get when a residual is added first
/// ([`Session::add_layer_norm`]).
fn add_residual<'r, T: Element, M: Mode>(io: SrcDst<'r>, residual: &[f32]) -> &'r mut [f32] {
    let _env = ExactFpEnv::enter_if(!M::FAST);
    let sum = |x: f32, r: f32| T::from_f32(x + r).to_f32();
    match io.src {
        Some(src) => io
            .dst
            .iter_mut()
            .zip(src.iter().zip(residual))
            .for_each(|(y, (&x, &r))| *y = sum(x, r)),
        None => io
            .dst
            .iter_mut()
            .zip(residual)
            .for_each(|(y, &r)| *y = sum(*y, r)),
    }
    io.dst
}
