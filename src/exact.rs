//! Exact mode on single values and on slices: the spec's bits, whatever the instruction set
//! and whatever the calling thread's floating-point environment (MXCSR: FTZ, DAZ, rounding
//! mode), which each call sets to the exact one for its duration and then restores.
//!
//! ```
//! use activation_kernels::{exact, Func, Isa};
//! assert_eq!(exact::exp(1.0).to_bits(), 0x402D_F854);
//! let mut v = vec![0.5f32; 37];
//! exact::map_in_place(Func::Tanh, Isa::Scalar, &mut v).unwrap();
//! assert_eq!(v[36].to_bits(), exact::tanh(0.5).to_bits());
//! ```

use crate::lanes::Scalar;
use crate::ops;
use crate::{Error, Exact, Func, Isa};

macro_rules! scalar_fns {
    ($mode:ty; $($(#[$doc:meta])* $name:ident => $($seg:ident)::+;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub fn $name(x: f32) -> f32 {
            let f = |x| $($seg)::+::<Scalar, $mode>(Scalar::new(), x);
            if <$mode as $crate::Mode>::FAST {
                f(x)
            } else {
                $crate::lanes::exact_scalar(x, f)
            }
        }
    )*};
}
pub(crate) use scalar_fns;

scalar_fns! { Exact;
    /// `e^x`: `+inf` above 88.72283, `+0` below -103.97208, canonical NaN for NaN. 1.2 ulp.
    exp => ops::exp::exp;
    /// `e^x` for `x <= 0`, flushing results below the normal range (`x < -87.33654`) to `+0`.
    /// Equals [`exp`] bit for bit on `[-87.33654, 0]`. For `x > 0` (outside the spec) the
    /// crate's choice: the same single-scale formula, [`exp`] to within its bound while `2^n`
    /// is finite, and `+inf` from the first `x` whose `n` reaches 128 (about 88.38) on.
    exp_nonpositive => ops::exp::exp_nonpositive;
    /// Natural logarithm: `-inf` at `+-0`, `+inf` at `+inf`, canonical NaN below 0. 2.1 ulp.
    log => ops::log::log;
    /// `1/(1 + e^-x)`. 2.5 ulp.
    sigmoid => ops::sigmoid::sigmoid;
    /// Error function, `erf(+-inf) = +-1`. 3.0 ulp.
    erf => ops::erf::erf;
    /// `1 + erf(x)`, with no cancellation for negative `x`.
    one_plus_erf => ops::erf::one_plus_erf;
    /// GELU, erf form: `(0.5 x)(1 + erf(x/sqrt 2))`. `-0` at `-inf`. 13 ulp (negative tail).
    gelu_erf => ops::gelu::gelu_erf;
    /// GELU, tanh form: `x sigmoid(2u)`, `u = sqrt(2/pi)(x + 0.044715 x^3)`. 18 ulp.
    gelu_tanh => ops::gelu::gelu_tanh;
    /// SiLU, defined by the crate as `x * sigmoid(x)`: the spec's sigmoid, then one product
    /// rounding. `silu(-inf) = -0`.
    silu => ops::silu::silu;
}

/// Hyperbolic tangent, `tanh(-0) = -0`. 1.5 ulp.
#[inline]
pub fn tanh(x: f32) -> f32 {
    crate::lanes::exact_scalar(x, |x| ops::tanh::tanh(Scalar::new(), x))
}

/// `dst[i] = func(src[i])` in exact mode on `isa`, bit for bit the scalar function.
///
/// Errors: [`Error::LengthMismatch`] if the lengths differ, [`Error::IsaUnavailable`] if this
/// CPU lacks `isa`.
pub fn map(func: Func, isa: Isa, src: &[f32], dst: &mut [f32]) -> Result<(), Error> {
    crate::error::same_length(src.len(), dst.len())?;
    ops::func::map_slice::<Exact>(func, isa.supported()?, src, dst);
    Ok(())
}

/// `data[i] = func(data[i])` in exact mode on `isa`.
///
/// Errors: [`Error::IsaUnavailable`] if this CPU lacks `isa`.
pub fn map_in_place(func: Func, isa: Isa, data: &mut [f32]) -> Result<(), Error> {
    ops::func::map_slice_in_place::<Exact>(func, isa.supported()?, data);
    Ok(())
}
