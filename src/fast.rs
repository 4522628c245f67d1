//! Fast mode on single values and on slices: fused multiply-adds, the degree-3 exp for every
//! exp inside every operator, a rational erf, a rational tanh and the rational GELU.
//!
//! Every instruction set gives the same fast bits: one lane code, fused the same way
//! everywhere. On a CPU without FMA the fused multiply-add is computed in software, correctly
//! rounded, so the bits are still the same (only slower).
//!
//! ```
//! use activation_kernels::{fast, Func, Isa};
//! let x = [0.25f32; 20];
//! let mut y = [0.0f32; 20];
//! fast::map(Func::Exp, Isa::detect(), &x, &mut y).unwrap();
//! assert_eq!(y[19].to_bits(), fast::exp(0.25).to_bits());
//! ```

use crate::exact::scalar_fns;
use crate::lanes::Scalar;
use crate::ops;
use crate::{Error, Fast, Func, Isa};

/// The spec's `FastMath::exp` on one value: `x` clamped to `[-87.3, 88.3]`, fused reduction,
/// a degree-3 polynomial, one `2^n` scale; about 2.3 ulp. `+0` below `-87.3`; above `88.3`
/// (and at `+inf`) it is `exp(88.3)`, about `2.2e38`, not `+inf`: the spec's clamp. Canonical
/// NaN for NaN.
///
/// ```
/// use activation_kernels::fast;
/// assert!(fast::exp(f32::INFINITY).is_finite());
/// assert_eq!(fast::exp(-100.0), 0.0);
/// ```
#[inline]
pub fn exp(x: f32) -> f32 {
    ops::exp::fast_exp(Scalar::new(), x)
}

scalar_fns! { Fast;
    /// Natural logarithm, the exact algorithm with fused multiply-adds.
    log => ops::log::log;
    /// Sigmoid: `1 / (1 + fast_exp(-x))`; `+0` below `-87.3`.
    sigmoid => ops::sigmoid::sigmoid;
    /// GELU, tanh form: `x * sigmoid(2u)` as `x / (1 + fast_exp(-2u))`.
    gelu_tanh => ops::gelu::gelu_tanh;
    /// SiLU, `x * sigmoid(x)` as `x / (1 + fast_exp(-x))`; `-0` below `-87.3`.
    silu => ops::silu::silu;
    /// `1 + erf(x)`, the exact algorithm (no cancellation for negative `x`) with fused
    /// multiply-adds and the fast exp.
    one_plus_erf => ops::erf::one_plus_erf;
}

/// Hyperbolic tangent: a rational fitted to tanh in relative error,
/// `copysign(min(c P(c^2)/Q(c^2), 1), x)` with `c = min(|x|, 9.02)` and fused Horner steps;
/// `+-1` from `|x| = 9.02` on. Its measured error is in ACCURACY.md.
///
/// ```
/// use activation_kernels::fast;
/// assert_eq!(fast::tanh(f32::INFINITY), 1.0);
/// assert!((fast::tanh(0.5) - 0.5f64.tanh() as f32).abs() < 1e-6);
/// ```
#[inline]
pub fn tanh(x: f32) -> f32 {
    ops::tanh::tanh_rational(Scalar::new(), x)
}

/// Error function: a rational fitted to erf in relative error,
/// `copysign(min(c P(c^2)/Q(c^2), 1), x)` with `c = min(|x|, 3.92)` and fused Horner steps;
/// `+-1` from `|x| = 3.92` on. Its measured error is in ACCURACY.md.
#[inline]
pub fn erf(x: f32) -> f32 {
    ops::erf::erf_rational(Scalar::new(), x)
}

/// GELU, erf form: the rational approximation of the spec, `c = min(|x|, 5.6)`,
/// `erf = copysign(c P(c^2) / Q(c^2), x)` with fused Horner steps, `(0.5 x)(1 + erf)`; `-0`
/// below `-5.6`. Against the exact kernel: absolute error at most `2^-20`, and `2.4e-7`
/// relative to `max(1, |x|)`.
#[inline]
pub fn gelu_erf(x: f32) -> f32 {
    ops::gelu::gelu_erf_rational(Scalar::new(), x)
}

/// `dst[i] = func(src[i])` in fast mode on `isa`; the same bits on every instruction set.
///
/// Errors: [`Error::LengthMismatch`] if the lengths differ, [`Error::IsaUnavailable`] if this
/// CPU lacks `isa`.
pub fn map(func: Func, isa: Isa, src: &[f32], dst: &mut [f32]) -> Result<(), Error> {
    crate::error::same_length(src.len(), dst.len())?;
    ops::func::map_slice::<Fast>(func, isa.supported()?, src, dst);
    Ok(())
}

/// `data[i] = func(data[i])` in fast mode on `isa`.
///
/// Errors: [`Error::IsaUnavailable`] if this CPU lacks `isa`.
pub fn map_in_place(func: Func, isa: Isa, data: &mut [f32]) -> Result<(), Error> {
    ops::func::map_slice_in_place::<Fast>(func, isa.supported()?, data);
    Ok(())
}
