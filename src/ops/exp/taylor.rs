//! The textbook degree-7 Taylor exp of `taylor-expf.md`: Cody-Waite range reduction, a Taylor
//! polynomial evaluated by Horner's rule, and `2^k` applied in two halves.
//!
//! This is a **teaching reference and a differential oracle** for the crate's exact exp
//! ([`crate::exact::exp`]), which uses a different (minimax) polynomial. It is not what a
//! session or [`crate::exact::map`] dispatches: no [`crate::Func`] names it. Its bound is
//! 1.21 ulp wherever `e^x` is normal, and it is written as the module writes it, in plain
//! scalar Rust: IEEE `+ - * /` with one rounding each (no fused multiply-add, no library math).
//!
//! The algorithm, in the module's order:
//!
//! 1. Specials first: NaN gives NaN (the canonical `0x7FC00000`, like every NaN result of the
//!    crate), `x > 88.7228317` gives `+inf`, `x < -103.97208` (and `-inf`) gives `+0`.
//! 2. `k`, the integer nearest `x / ln 2` with ties to even, computed as the module's worked
//!    example does: `x * fl(1/ln 2)` (`1 x 1.442695`), then rounded to an integer by adding and
//!    subtracting `1.5 * 2^23` (ties to even in the default rounding mode).
//! 3. `r = (x - k*L_hi) - k*L_lo` with `L_hi = 355/512` (9 significant bits, so `k*L_hi` and
//!    `x - k*L_hi` are exact) and `L_lo = fl(ln 2 - 355/512)`, which is negative.
//! 4. `p = 1 + r(1 + r(1/2 + r(1/6 + ... + r/5040)))`: seven steps `p = p*r + c`, each a
//!    separate product and sum.
//! 5. `e^x = p * 2^k1 * 2^k2` with `k1 = k / 2` truncated toward zero and `k2 = k - k1`, both in
//!    `[-75, 64]`: the first product is exact, the second rounds once, even to a subnormal.
//!
//! ```
//! use activation_kernels::taylor;
//! assert_eq!(taylor::expf(1.0).to_bits(), 0x402D_F854); // 2.7182817
//! let mut v = [0.0f32, -1.0, 10.0];
//! taylor::exp_f32_in_place(&mut v);
//! assert_eq!(v, [1.0, 0.367_879_45, 22_026.465]);
//! ```
#![allow(clippy::excessive_precision)]

use crate::error::Error;
use crate::lanes::ROUND_MAGIC;

/// `fl(1/ln 2) = 1.442695`, `0x3FB8AA3B`: `k` is the integer nearest `x * LOG2E`.
pub(crate) const LOG2E: f32 = 1.442_695_040_888_963_4;
/// `L_hi = 355/512 = 0.693359375`, `0x3F318000`: 9 significant bits, so `k * L_HI` is exact for
/// `|k| <= 150`.
pub(crate) const L_HI: f32 = 0.693_359_375;
/// `L_lo = fl(ln 2 - 355/512) = -2.1219444e-4`, `0xB95E8083` (negative: `L_hi > ln 2`).
pub(crate) const L_LO: f32 = -2.121_944_400_547_137_7e-4;
/// The Taylor coefficients `1/j!`, highest degree first: `1/5040` (`0x39500D01`), `1/720`
/// (`0x3AB60B61`), `1/120` (`0x3C088889`), `1/24` (`0x3D2AAAAB`), `1/6` (`0x3E2AAAAB`), `1/2`
/// (`0x3F000000`), `1` and `1` (`0x3F800000`), each the float nearest the fraction.
pub(crate) const COEFFS: [f32; 8] = [
    1.0 / 5040.0,
    1.0 / 720.0,
    1.0 / 120.0,
    1.0 / 24.0,
    1.0 / 6.0,
    0.5,
    1.0,
    1.0,
];
/// The largest `x` with a finite result, `0x1.62e42ep+6 = 88.7228317`, `0x42B17217`; above it
/// the result is `+inf`.
pub(crate) const OVERFLOW: f32 = 88.722_831_7;
/// `fl(ln 2^-150) = -103.97208`, `0xC2CFF1B4`; below it the result is `+0`.
pub(crate) const UNDERFLOW: f32 = -103.972_08;
/// `2^k` from its exponent field, for `-126 <= k <= 127`.
#[inline(always)]
fn pow2i(k: i32) -> f32 {
    debug_assert!((-126..=127).contains(&k));
    f32::from_bits(((k + 127) as u32) << 23)
}

/// `e^x` by the module's degree-7 Taylor algorithm: within 1.21 ulp where `e^x` is normal,
/// `+inf` above `88.7228317`, `+0` below `-103.97208` and at `-inf`, canonical NaN for NaN.
#[inline]
pub fn expf(x: f32) -> f32 {
    if x.is_nan() {
        return crate::ops::CANONICAL_NAN;
    }
    if x > OVERFLOW {
        return f32::INFINITY;
    }
    if x < UNDERFLOW {
        return 0.0;
    }
    // k: here |x * LOG2E| <= 150, so the magic-number sum rounds it to an integer exactly once.
    let kf = (x * LOG2E + ROUND_MAGIC) - ROUND_MAGIC;
    let k = kf as i32;
    // Cody-Waite: kf * L_HI and x - kf * L_HI are exact.
    let r = (x - kf * L_HI) - kf * L_LO;
    let mut p = COEFFS[0];
    for &c in &COEFFS[1..] {
        p = p * r + c;
    }
    let k1 = k / 2;
    let k2 = k - k1;
    p * pow2i(k1) * pow2i(k2)
}

/// `y[i] = expf(x[i])`.
///
/// Errors: [`Error::LengthMismatch`] (and nothing written) if the lengths differ.
pub fn exp_f32(x: &[f32], y: &mut [f32]) -> Result<(), Error> {
    if x.len() != y.len() {
        return Err(Error::LengthMismatch {
            src: x.len(),
            dst: y.len(),
        });
    }
    for (d, &s) in y.iter_mut().zip(x) {
        *d = expf(s);
    }
    Ok(())
}

/// `x[i] = expf(x[i])`, in place (the module's `tl_exp_f32` with `y == x`).
pub fn exp_f32_in_place(x: &mut [f32]) {
    for v in x {
        *v = expf(*v);
    }
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;

    pub fn constants_have_their_bit_patterns() {
        assert_eq!(LOG2E.to_bits(), 0x3FB8_AA3B);
        assert_eq!(L_HI.to_bits(), 0x3F31_8000);
        assert_eq!(L_HI, 355.0 / 512.0);
        assert_eq!(L_LO.to_bits(), 0xB95E_8083);
        assert_eq!(
            L_LO,
            (std::f64::consts::LN_2 - 355.0 / 512.0) as f32,
            "L_lo is ln 2 - L_hi rounded"
        );
        assert_eq!(OVERFLOW.to_bits(), 0x42B1_7217);
        assert_eq!(UNDERFLOW.to_bits(), 0xC2CF_F1B4);
        assert_eq!(ROUND_MAGIC.to_bits(), 0x4B40_0000);
        let c: Vec<u32> = COEFFS.iter().map(|c| c.to_bits()).collect();
        assert_eq!(
            c,
            [
                0x3950_0D01,
                0x3AB6_0B61,
                0x3C08_8889,
                0x3D2A_AAAB,
                0x3E2A_AAAB,
                0x3F00_0000,
                0x3F80_0000,
                0x3F80_0000
            ]
        );
        for (c, d) in COEFFS
            .iter()
            .zip([5040.0, 720.0, 120.0, 24.0, 6.0, 2.0, 1.0, 1.0])
        {
            assert_eq!(*c, (1.0f64 / d) as f32, "1/{d}");
        }
    }

    pub fn overflow_and_underflow_thresholds_are_the_logs_of_the_float_range() {
        // The largest float whose log is below ln(FLT_MAX), and the float nearest ln(2^-150).
        let ln_max = f64::from(f32::MAX).ln();
        assert!(f64::from(OVERFLOW) < ln_max);
        assert!(f64::from(f32::from_bits(OVERFLOW.to_bits() + 1)) > ln_max);
        assert_eq!(UNDERFLOW, (-150.0 * std::f64::consts::LN_2) as f32);
    }

    pub fn worked_example_steps() {
        // Section 3, x = 1: k = 1, x - k L_hi = 0.306640625 exactly, r = 0.30685282.
        let kf = (1.0f32 * LOG2E + ROUND_MAGIC) - ROUND_MAGIC;
        assert_eq!(kf, 1.0);
        assert_eq!(1.0 - kf * L_HI, 0.306_640_625);
        assert_eq!((1.0 - kf * L_HI) - kf * L_LO, 0.306_852_82);
        assert_eq!(expf(1.0), 2.718_281_7);
    }

    pub fn k_rounds_ties_to_even() {
        // t + M - M on exact halves: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> -0, -1.5 -> -2.
        for (t, k) in [
            (0.5f32, 0.0f32),
            (1.5, 2.0),
            (2.5, 2.0),
            (-0.5, 0.0),
            (-1.5, -2.0),
        ] {
            assert_eq!((t + ROUND_MAGIC) - ROUND_MAGIC, k, "{t}");
        }
    }

    pub fn specials() {
        assert!(expf(f32::NAN).is_nan());
        assert_eq!(expf(f32::NAN).to_bits(), 0x7FC0_0000);
        assert_eq!(expf(f32::INFINITY), f32::INFINITY);
        assert_eq!(expf(f32::NEG_INFINITY).to_bits(), 0);
        assert_eq!(expf(0.0), 1.0);
        assert_eq!(expf(-0.0), 1.0);
        assert!(expf(OVERFLOW).is_finite());
        assert_eq!(expf(f32::from_bits(OVERFLOW.to_bits() + 1)), f32::INFINITY);
        assert_eq!(expf(f32::from_bits(UNDERFLOW.to_bits() + 1)).to_bits(), 0);
        assert!(
            expf(UNDERFLOW) > 0.0,
            "e^UNDERFLOW rounds up to the smallest subnormal"
        );
    }

    pub fn array_forms() {
        let x = [0.0f32, 1.0, -1.0, f32::NAN];
        let mut y = [9.0f32; 4];
        exp_f32(&x, &mut y).unwrap();
        assert_eq!(y[..3], [1.0, 2.718_281_7, 0.367_879_45]);
        assert!(y[3].is_nan());
        let mut short = [9.0f32; 3];
        assert_eq!(
            exp_f32(&x, &mut short),
            Err(Error::LengthMismatch { src: 4, dst: 3 })
        );
        assert_eq!(short, [9.0; 3], "nothing written on a length mismatch");
        let mut v = x;
        exp_f32_in_place(&mut v);
        assert_eq!(v.map(f32::to_bits), y.map(f32::to_bits));
    }
}
