//! The f64 references and the ulp error of the spec's "Measured error" method.

use std::f64::consts::SQRT_2;

use activation_kernels::Func;

/// `sqrt(2/pi)` in f64 (the true constant; the kernels use its fp32 rounding).
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient of the tanh form of GELU, as a real number.
const GELU_TANH_CUBIC: f64 = 0.044_715;

/// A function computed in f64, to measure an fp32 kernel against.
///
/// Every reference is accurate to a few f64 ulps (about 1e-15 relative) over the ranges of the
/// row table, far below the fp32 spacing (6e-8 relative), so its own error does not show in the
/// measured maxima. `exp`, `ln`, `tanh` are std's; `erf` and `erfc` are the `libm` crate's
/// (below 1 f64 ulp). Where the textbook formula cancels in f64, the reference uses an identity
/// that does not (see [`Reference::GeluTanh`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reference {
    /// `e^x` (std's `f64::exp`).
    Exp,
    /// `ln x` (std's `f64::ln`).
    Log,
    /// `tanh x` (std's `f64::tanh`).
    Tanh,
    /// `erf x` (`libm::erf`).
    Erf,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// `0.5 x erfc(-x / sqrt 2)`: the erf form of GELU, with `1 + erf(y)` taken as `erfc(-y)` so
    /// that the negative tail does not cancel.
    GeluErf,
    /// `0.5 x (1 + tanh u)` with `u = sqrt(2/pi) (x + 0.044715 x^3)`, computed as
    /// `x / (1 + e^(-2u))`, the same number through `1 + tanh u = 2 / (1 + e^(-2u))`.
    ///
    /// The literal `0.5 x (1 + tanh u)` loses `1 + tanh u` to cancellation in f64 for negative
    /// `u`: 3 fp32 ulps of error in the reference at `x = -6`, 75,000 at `x = -7`, and from
    /// `x = -7.2` on `tanh u` rounds to exactly `-1`, a reference of 0 where the fp32 result is
    /// a normal number near `-2e-16`. The identity is exact and keeps the full f64 accuracy in
    /// the whole negative tail.
    GeluTanh,
    /// `x / (1 + e^-x)`: SiLU.
    Silu,
}

impl Reference {
    /// The reference of a function of the crate, if it has one (`exp_nonpositive` and
    /// `one_plus_erf` are parts of other functions and have no row of their own).
    pub fn of(func: Func) -> Option<Reference> {
        Some(match func {
            Func::Exp => Reference::Exp,
            Func::Log => Reference::Log,
            Func::Tanh => Reference::Tanh,
            Func::Erf => Reference::Erf,
            Func::Sigmoid => Reference::Sigmoid,
            Func::GeluErf => Reference::GeluErf,
            Func::GeluTanh => Reference::GeluTanh,
            Func::Silu => Reference::Silu,
            Func::ExpNonPositive | Func::OnePlusErf => return None,
        })
    }

    /// The reference value at `x`.
    pub fn eval(self, x: f64) -> f64 {
        match self {
            Reference::Exp => x.exp(),
            Reference::Log => x.ln(),
            Reference::Tanh => x.tanh(),
            Reference::Erf => libm::erf(x),
            Reference::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Reference::GeluErf => 0.5 * x * libm::erfc(-x / SQRT_2),
            Reference::GeluTanh => {
                let u = SQRT_2_OVER_PI * (x + GELU_TANH_CUBIC * (x * x * x));
                x / (1.0 + (-2.0 * u).exp())
            }
            Reference::Silu => x / (1.0 + (-x).exp()),
        }
    }

    /// The textbook formula the reference stands for, as the tables print it.
    pub fn formula(self) -> &'static str {
        match self {
            Reference::Exp => "exp(x)",
            Reference::Log => "ln(x)",
            Reference::Tanh => "tanh(x)",
            Reference::Erf => "erf(x)",
            Reference::Sigmoid => "1/(1+exp(-x))",
            Reference::GeluErf => "0.5 x erfc(-x/sqrt 2)",
            Reference::GeluTanh => "x/(1+exp(-2u))",
            Reference::Silu => "x/(1+exp(-x))",
        }
    }
}

/// The fp32 spacing (one ulp) at `y`: the gap from `|r|` to the next float up, where `r` is
/// `y` rounded to fp32; the gap below `FLT_MAX` where there is no next float, the smallest
/// subnormal `2^-149` at 0. A value that rounds to infinity gets the spacing at `FLT_MAX`.
///
/// ```
/// use ak_accuracy::spacing;
/// assert_eq!(spacing(1.0), f64::powi(2.0, -23));
/// assert_eq!(spacing(-3.0), f64::powi(2.0, -22));
/// assert_eq!(spacing(0.0), f64::powi(2.0, -149));
/// ```
pub fn spacing(y: f64) -> f64 {
    let r = (y as f32).abs();
    if !r.is_finite() {
        return f64::from(f32::MAX) - f64::from(f32::from_bits(0x7F7F_FFFE));
    }
    let next = f32::from_bits(r.to_bits() + 1);
    if next.is_finite() {
        f64::from(next) - f64::from(r)
    } else {
        f64::from(r) - f64::from(f32::from_bits(r.to_bits() - 1))
    }
}

/// The error of `got` in fp32 ulps: `|got - reference| / spacing(reference)`, and exactly 0
/// where `got` equals the correctly rounded reference (either zero matching either zero).
///
/// NaN against NaN is 0; a NaN on one side only, or an infinity that is not the rounded
/// reference, is `+inf`.
///
/// ```
/// use ak_accuracy::ulp_error;
/// let one_up = f32::from_bits(1.0f32.to_bits() + 1);
/// assert_eq!(ulp_error(1.0, 1.0 + 1e-12), 0.0);
/// assert!((ulp_error(one_up, 1.0) - 1.0).abs() < 1e-12);
/// assert_eq!(ulp_error(f32::NAN, 1.0), f64::INFINITY);
/// ```
pub fn ulp_error(got: f32, reference: f64) -> f64 {
    if got.is_nan() || reference.is_nan() {
        return if got.is_nan() && reference.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if got == reference as f32 {
        return 0.0;
    }
    if got.is_infinite() || reference.is_infinite() {
        return f64::INFINITY;
    }
    (f64::from(got) - reference).abs() / spacing(reference)
}

/// `|got - want|` between two fp32 results, in f64: 0 where they are equal (or both NaN),
/// `+inf` where only one is NaN or they are different infinities.
pub fn abs_diff(got: f32, want: f32) -> f64 {
    if got == want || (got.is_nan() && want.is_nan()) {
        return 0.0;
    }
    let d = (f64::from(got) - f64::from(want)).abs();
    if d.is_nan() { f64::INFINITY } else { d }
}
