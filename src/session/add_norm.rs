//! Residual add and layer normalisation in one pass over the rows (ONNX Runtime's
//! SkipLayerNormalization, for post-LN models whose residual add is not already a GEMM
//! epilogue): each row gets `x + residual`, then is normalised while it is in cache.

use ndarray::{Array, ArrayRef, ArrayRef1, Axis, Dimension};

use super::Session;
use super::norm::check_layer_norm;
use super::traverse::Operands;
use crate::error::same_shape;
use crate::{Element, Error, Mode};

impl<M: Mode> Session<M> {
    /// `x = layer_norm(x + residual)` over the last axis, in place, one row at a time: the
    /// same bits as adding then calling [`Session::layer_norm`] (the sum of each element is
    /// one IEEE addition, rounded to `T`), without a second pass over the tensor. `residual`
    /// has the shape of `x`.
    ///
    /// ```
    /// use activation_kernels::Session;
    /// use ndarray::{array, Array1};
    /// let s = Session::exact();
    /// let (g, b) = (Array1::ones(3), Array1::zeros(3));
    /// let mut x = array![[1.0f32, 2.0, 3.0]];
    /// let r = array![[0.5f32, -1.0, 4.0]];
    /// let mut want = &x + &r;
    /// s.layer_norm(&mut want, &g, &b, 1e-12)?;
    /// s.add_layer_norm(&mut x, &r, &g, &b, 1e-12)?;
    /// assert_eq!(x, want);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn add_layer_norm<T: Element, D: Dimension>(
        &self,
        x: &mut ArrayRef<T, D>,
        residual: &ArrayRef<T, D>,
        gamma: &ArrayRef1<f32>,
        beta: &ArrayRef1<f32>,
        eps: f32,
    ) -> Result<(), Error> {
        let axis = check_add_layer_norm(x.shape(), residual.shape(), gamma, beta, eps)?;
        let operands = Operands::in_place(x.view_mut().into_dyn());
        self.layer_norm_rows(
            operands.and(residual.view().into_dyn()),
            axis,
            gamma,
            beta,
            eps,
        );
        Ok(())
    }

    /// `dst = layer_norm(src + residual)` (see [`Session::add_layer_norm`]).
    pub fn add_layer_norm_into<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        residual: &ArrayRef<T, D>,
        dst: &mut ArrayRef<T, D>,
        gamma: &ArrayRef1<f32>,
        beta: &ArrayRef1<f32>,
        eps: f32,
    ) -> Result<(), Error> {
        same_shape("source and destination", src.shape(), dst.shape())?;
        let axis = check_add_layer_norm(src.shape(), residual.shape(), gamma, beta, eps)?;
        let operands = Operands::into(src.view().into_dyn(), dst.view_mut().into_dyn());
        self.layer_norm_rows(
            operands.and(residual.view().into_dyn()),
            axis,
            gamma,
            beta,
            eps,
        );
        Ok(())
    }

    /// `layer_norm(src + residual)` as a new array (see [`Session::add_layer_norm`]).
    pub fn add_layer_norm_owned<T: Element, D: Dimension>(
        &self,
        src: &ArrayRef<T, D>,
        residual: &ArrayRef<T, D>,
        gamma: &ArrayRef1<f32>,
        beta: &ArrayRef1<f32>,
        eps: f32,
    ) -> Result<Array<T, D>, Error> {
        check_add_layer_norm(src.shape(), residual.shape(), gamma, beta, eps)?;
        let mut out = super::owned::try_to_owned(src, "add_layer_norm output")?;
        self.add_layer_norm(&mut out, residual, gamma, beta, eps)?;
        Ok(out)
    }
}

/// The checks every form of [`Session::add_layer_norm`] makes before it touches a value: the
/// residual's shape is the input's, then [`check_layer_norm`]'s; the normalised axis.
fn check_add_layer_norm(
    shape: &[usize],
    residual: &[usize],
    gamma: &ArrayRef1<f32>,
    beta: &ArrayRef1<f32>,
    eps: f32,
) -> Result<Axis, Error> {
    same_shape("add_layer_norm residual", shape, residual)?;
    check_layer_norm(shape, gamma, beta, eps)
}
