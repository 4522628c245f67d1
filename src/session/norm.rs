//! Layer normalisation over the last axis.

use ndarray::{ArrayRef, ArrayRef1, ArrayViewMut1, Axis, Dimension, Zip};

use super::{Element, Session};
use crate::ops::norm::layer_norm_row_on;
use crate::{Error, Mode};

impl<M: Mode> Session<M> {
    /// Layer normalisation over the last axis, in place: each row becomes
    /// `((x - mean) / sqrt(var + eps)) * gamma + beta`, the mean and variance summed in the
    /// canonical order (so exact mode gives the same bits on every instruction set and thread
    /// count). `gamma` and `beta` have the last axis's length.
    ///
    /// ```
    /// use activation_kernels::Session;
    /// use ndarray::{array, Array1};
    /// let mut x = array![[1.0f32, 2.0, 3.0, 4.0]];
    /// let (g, b) = (Array1::ones(4), Array1::zeros(4));
    /// Session::exact().layer_norm(&mut x, &g, &b, 0.0).unwrap();
    /// assert!((x[[0, 0]] + 1.3416407).abs() < 1e-6);
    /// ```
    pub fn layer_norm<T: Element, D: Dimension>(
        &self,
        x: &mut ArrayRef<T, D>,
        gamma: &ArrayRef1<f32>,
        beta: &ArrayRef1<f32>,
        eps: f32,
    ) -> Result<(), Error> {
        let nd = x.ndim();
        if nd == 0 {
            return Err(Error::InvalidArgument(
                "layer_norm needs at least one axis".into(),
            ));
        }
        let n = x.shape()[nd - 1];
        if gamma.len() != n || beta.len() != n {
            return Err(Error::ShapeMismatch {
                what: "layer norm gamma and beta (the last axis)",
                expected: vec![n],
                found: vec![gamma.len(), beta.len()],
            });
        }
        let (g, b) = (gamma.to_vec(), beta.to_vec());
        let isa = self.isa;
        let row = |mut lane: ArrayViewMut1<'_, T>| {
            if let Some(s) = lane.as_slice_mut()
                && let Some(f) = T::as_f32_slice_mut(s)
            {
                let done = layer_norm_row_on::<M>(isa, f, &g, &b, eps);
                debug_assert!(done.is_ok(), "{done:?}");
                return;
            }
            let mut buf: Vec<f32> = lane.iter().map(|v| v.to_f32()).collect();
            let done = layer_norm_row_on::<M>(isa, &mut buf, &g, &b, eps);
            debug_assert!(done.is_ok(), "{done:?}");
            for (v, y) in lane.iter_mut().zip(&buf) {
                *v = T::from_f32(*y);
            }
        };
        let parallel = self.parallel(x.len());
        let z = Zip::from(x.lanes_mut(Axis(nd - 1)));
        if parallel {
            self.install(|| z.par_for_each(row));
        } else {
            z.for_each(row);
        }
        Ok(())
    }
}
