//! `log`, the natural logarithm (spec, "log(x)").
//!
//! Subnormals are scaled by `2^24` first; the exponent and a mantissa in `[sqrt(1/2), sqrt(2))`
//! come from integer arithmetic on the bits; `log(m)` is `2 atanh(f/(2+f))` by an odd series in
//! `s = f/(2+f)`; the exponent is added back with the split `ln 2`. Bound: 2.1 ulp.

use super::exp::{LN2_HI, LN2_LO};
use super::{horner, kernel_type, nan_where_nan};
use crate::lanes::Lanes;
use crate::lanes::Mode;
use crate::lanes::ROUND_MAGIC;

/// `FLT_MIN`, the smallest normal float: below it the input is scaled by `2^24`.
pub const LOG_SUBNORMAL: f32 = 1.175_494_35e-38;
/// `2^24`, the subnormal scale.
pub const LOG_SCALE: f32 = 16_777_216.0;
/// The bit pattern of `sqrt(1/2)`, where the mantissa range starts.
pub const SQRT_HALF_BITS: i32 = 0x3F35_04F3;
/// The coefficients of `w` (`1/11, 1/9, 1/7, 1/5, 1/3` in fp32), highest first.
pub const LOG_W: [f32; 5] = [
    0.090_909_093_6,
    0.111_111_112,
    0.142_857_149,
    0.200_000_003,
    0.333_333_343,
];

/// `log(x)`: `+inf` for `+inf`, `-inf` for `+-0`, canonical NaN for `x < 0` and NaN.
///
/// A register whose lanes are all positive normal finite floats (the usual case) skips the
/// subnormal scaling and the selects of the special values, which change nothing there: one
/// integer test instead of five compares and six selects; the same bits. Not on the one-lane
/// type: there the test is a branch per element, which keeps the compiler from vectorising the
/// branch-free loop (measured slower there).
#[inline(always)]
pub fn log<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    if L::WIDTH > 1 && all_positive_normal(l, x) {
        return log_of_normal::<L, M>(l, x, l.splat(0.0));
    }
    let subnormal = l.lt(x, l.splat(LOG_SUBNORMAL));
    let xs = l.select(subnormal, l.mul(x, l.splat(LOG_SCALE)), x);
    let y = log_of_normal::<L, M>(l, xs, l.select(subnormal, l.splat(24.0), l.splat(0.0)));
    let y = l.select(l.gt(x, l.splat(f32::MAX)), l.splat(f32::INFINITY), y);
    let y = l.select(l.lt(x, l.splat(0.0)), l.splat(super::CANONICAL_NAN), y);
    let y = l.select(l.eq(x, l.splat(0.0)), l.splat(f32::NEG_INFINITY), y);
    nan_where_nan(l, x, y)
}

/// Whether every lane of `x` is a positive normal finite float: its bit pattern plus
/// `0x0080_0000` (one more in the exponent field) is above `0x00FF_FFFF` as a signed integer.
/// That sum carries into the sign bit for an exponent field of 255 (infinity, NaN), stays below
/// `0x0100_0000` for one of 0 (zero, subnormal), and is negative, or wraps to below
/// `0x0080_0000`, for a negative `x`.
#[inline(always)]
fn all_positive_normal<L: Lanes>(l: L, x: L::F) -> bool {
    let shifted = l.add_i(l.to_bits(x), l.splat_i(0x0080_0000));
    l.all(l.gt_i(shifted, l.splat_i(0x00FF_FFFF)))
}

/// The spec's steps for a positive normal `xs` (the input, or a subnormal input scaled by
/// `2^24`), `scaled` the 24 (or 0) to take off its exponent: `log(xs) - scaled * ln 2`.
#[inline(always)]
fn log_of_normal<L: Lanes, M: Mode>(l: L, xs: L::F, scaled: L::F) -> L::F {
    let ix = l.sub_i(l.to_bits(xs), l.splat_i(SQRT_HALF_BITS));
    let e = l.sra_i::<23>(ix);
    let m = l.from_bits(l.add_i(
        l.and_i(ix, l.splat_i(0x007F_FFFF)),
        l.splat_i(SQRT_HALF_BITS),
    ));
    let magic = l.splat(ROUND_MAGIC);
    let fe = l.sub(l.from_bits(l.add_i(e, l.to_bits(magic))), magic);
    // `fe - 0` is `fe`, bit for bit (an integral float; a zero keeps its sign).
    let ef = l.sub(fe, scaled);

    let one = l.splat(1.0);
    let f = l.sub(m, one);
    let s = l.div(f, l.add(l.splat(2.0), f));
    let z = l.mul(s, s);
    let w = horner::<L, M, 5>(l, z, &LOG_W);
    let s2 = l.add(s, s);
    let logm = M::madd(l, s2, l.mul(z, w), s2);
    // ef*ln2_hi + (logm + ef*ln2_lo)
    M::madd(
        l,
        ef,
        l.splat(LN2_HI),
        M::madd(l, ef, l.splat(LN2_LO), logm),
    )
}

kernel_type!(
    /// Kernel of [`log`].
    Log => log
);

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use crate::lanes::{Exact, Fast};
    use crate::ops::clean_form_test::{
        assert_clean_form_is_general_form_and_scalar, both_signs_and_a_sweep,
    };

    /// The clean form (every lane a positive normal finite float) gives the general form's bits
    /// in both modes: every float around the smallest normal and around `f32::MAX` and
    /// infinity, both signs, and every 65,521st float, on every lane type wider than one; and
    /// alone in a register, every lane type gives the bits of the one-lane type, which always
    /// takes the general form (so a clean test that let in a NaN or an infinity fails too).
    pub fn the_clean_form_is_the_general_form() {
        let xs = both_signs_and_a_sweep(
            (0x007F_F000..=0x0080_1000)
                .chain(0x7F7F_F000..=0x7F80_0010)
                .chain(0..=16),
        );
        assert_clean_form_is_general_form_and_scalar::<Log<Exact>>(&xs);
        assert_clean_form_is_general_form_and_scalar::<Log<Fast>>(&xs);
    }

    pub fn constants_have_their_bit_patterns() {
        assert_eq!(LOG_SUBNORMAL.to_bits(), 0x0080_0000);
        assert_eq!(LOG_SCALE.to_bits(), 0x4B80_0000);
        assert_eq!(
            f32::from_bits(SQRT_HALF_BITS as u32),
            core::f32::consts::FRAC_1_SQRT_2
        );
        let w: Vec<u32> = LOG_W.iter().map(|c| c.to_bits()).collect();
        assert_eq!(
            w,
            [
                0x3DBA_2E8C,
                0x3DE3_8E39,
                0x3E12_4925,
                0x3E4C_CCCD,
                0x3EAA_AAAB
            ]
        );
    }
}
