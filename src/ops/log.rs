//! `log`, the natural logarithm (spec, "log(x)").
//!
//! Subnormals are scaled by `2^24` first; the exponent and a mantissa in `[sqrt(1/2), sqrt(2))`
//! come from integer arithmetic on the bits; `log(m)` is `2 atanh(f/(2+f))` by an odd series in
//! `s = f/(2+f)`; the exponent is added back with the split `ln 2`. Bound: 2.1 ulp.

use super::exp::{LN2_HI, LN2_LO};
use super::{ROUND_MAGIC, horner, kernel_type, nan_where_nan};
use crate::lanes::Lanes;
use crate::mode::Mode;

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
#[inline(always)]
pub fn log<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    let subnormal = l.lt(x, l.splat(LOG_SUBNORMAL));
    let xs = l.select(subnormal, l.mul(x, l.splat(LOG_SCALE)), x);
    let ix = l.sub_i(l.to_bits(xs), l.splat_i(SQRT_HALF_BITS));
    let e = l.sra_i::<23>(ix);
    let m = l.from_bits(l.add_i(
        l.and_i(ix, l.splat_i(0x007F_FFFF)),
        l.splat_i(SQRT_HALF_BITS),
    ));
    let magic = l.splat(ROUND_MAGIC);
    let fe = l.sub(l.from_bits(l.add_i(e, l.to_bits(magic))), magic);
    let ef = l.sub(fe, l.select(subnormal, l.splat(24.0), l.splat(0.0)));

    let one = l.splat(1.0);
    let f = l.sub(m, one);
    let s = l.div(f, l.add(l.splat(2.0), f));
    let z = l.mul(s, s);
    let w = horner::<L, M, 5>(l, z, &LOG_W);
    let s2 = l.add(s, s);
    let logm = M::madd(l, s2, l.mul(z, w), s2);
    // ef*ln2_hi + (logm + ef*ln2_lo)
    let y = M::madd(
        l,
        ef,
        l.splat(LN2_HI),
        M::madd(l, ef, l.splat(LN2_LO), logm),
    );

    let y = l.select(l.gt(x, l.splat(f32::MAX)), l.splat(f32::INFINITY), y);
    let y = l.select(l.lt(x, l.splat(0.0)), l.splat(super::CANONICAL_NAN), y);
    let y = l.select(l.eq(x, l.splat(0.0)), l.splat(f32::NEG_INFINITY), y);
    nan_where_nan(l, x, y)
}

kernel_type!(
    /// Kernel of [`log`].
    Log => log
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_have_their_bit_patterns() {
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
