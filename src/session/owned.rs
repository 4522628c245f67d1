//! The new arrays of the `_owned` forms, allocated fallibly: a shape whose element count or byte
//! count overflows, or whose memory cannot be had, is [`Error::InvalidArgument`] rather than a
//! panic ("Shape too large", "capacity overflow") or an abort on the failed allocation. A huge
//! input costs nothing as a broadcast view; its copy must not take the process down.

use ndarray::{Array, ArrayRef, Dimension, ShapeBuilder};

use crate::Error;

/// An empty vector with room for `len` values, or the error that says why there is none.
pub(crate) fn try_vec<T>(len: usize, what: &str) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|e| {
        Error::InvalidArgument(format!(
            "{what}: {len} values of {} bytes cannot be allocated ({e})",
            size_of::<T>()
        ))
    })?;
    Ok(v)
}

/// The element count of `dim`, if it fits a `usize`.
fn element_count<D: Dimension>(dim: &D, what: &str) -> Result<usize, Error> {
    dim.size_checked().ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{what}: shape {:?} has more elements than memory can address",
            dim.slice()
        ))
    })
}

/// A C-order array of zeros of shape `dim`.
pub(crate) fn try_zeros<D: Dimension>(dim: D, what: &str) -> Result<Array<f32, D>, Error> {
    let len = element_count(&dim, what)?;
    let mut v = try_vec(len, what)?;
    v.resize(len, 0.0);
    Array::from_shape_vec(dim, v).map_err(|e| Error::InvalidArgument(format!("{what}: {e}")))
}

/// A copy of `src`: Fortran order if `src` is in Fortran order, else C order (the values and
/// shape of `to_owned`; a contiguous layout with its axes otherwise permuted comes back in C
/// order).
pub(crate) fn try_to_owned<T: Copy, D: Dimension>(
    src: &ArrayRef<T, D>,
    what: &str,
) -> Result<Array<T, D>, Error> {
    let dim = src.raw_dim();
    let len = element_count(&dim, what)?;
    let mut v = try_vec(len, what)?;
    let fortran = src.ndim() > 1 && !src.is_standard_layout() && src.t().is_standard_layout();
    let made = if fortran {
        v.extend(src.t().iter().copied());
        Array::from_shape_vec(dim.f(), v)
    } else {
        v.extend(src.iter().copied());
        Array::from_shape_vec(dim, v)
    };
    made.map_err(|e| Error::InvalidArgument(format!("{what}: {e}")))
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use ndarray::{Array2, s};

    /// The copy has the values of `to_owned` in C and F order and through strided views; the
    /// impossible sizes are errors.
    pub fn copies_equal_to_owned_and_impossible_sizes_are_errors() {
        let a = Array2::from_shape_fn((3, 5), |(i, j)| (i * 7 + j) as f32);
        let f = a.t().as_standard_layout().reversed_axes().to_owned();
        for v in [
            a.view(),
            f.view(),
            a.slice(s![..;2, 1..;2]),
            a.slice(s![..;-1, ..]),
        ] {
            let c = try_to_owned(&v, "test").unwrap();
            assert_eq!(c, v.to_owned());
        }
        assert!(!try_to_owned(&f, "test").unwrap().is_standard_layout());
        assert!(try_vec::<f32>(usize::MAX / 2, "test").is_err());
        assert!(try_vec::<f32>(1 << 60, "test").is_err());
        assert!(try_zeros(ndarray::Ix2(usize::MAX, 2), "test").is_err());
        assert_eq!(
            try_zeros(ndarray::Ix2(2, 3), "test").unwrap(),
            Array2::zeros((2, 3))
        );
    }
}
