//! `tanh` (spec, "tanh(x)"): an odd minimax polynomial below `|x| = 0.6`, `1 - 2/(e^2|x| + 1)`
//! above, the sign OR-ed in last. Bound: 1.5 ulp. Fast mode: the same polynomial with fused
//! steps below 0.6, where `1 - 2/(e^2|x| + 1)` would cancel, and the fast exp above
//! ([`exp_in`]).

use super::exp::exp_in;
use super::{abs, horner, kernel_type, nan_where_nan, sign_bit};
use crate::lanes::Lanes;
use crate::mode::Mode;

/// Below this `|x|` the polynomial branch runs.
pub const TANH_SMALL: f32 = 0.6;
/// The polynomial `P(z)`, highest first.
pub const TANH_P: [f32; 5] = [
    -0.005_895_158_3,
    0.020_795_971,
    -0.053_783_83,
    0.133_319_24,
    -0.333_333,
];

/// The polynomial branch: `ax + ax*(z*P(z))`, `z = ax*ax`.
#[inline(always)]
fn tanh_small<L: Lanes, M: Mode>(l: L, ax: L::F) -> L::F {
    let z = l.mul(ax, ax);
    let p = horner::<L, M, 5>(l, z, &TANH_P);
    M::madd(l, ax, l.mul(z, p), ax)
}

/// The exponential branch: `1 - 2/(exp(ax+ax) + 1)`.
#[inline(always)]
fn tanh_large<L: Lanes, M: Mode>(l: L, ax: L::F) -> L::F {
    let one = l.splat(1.0);
    let e = exp_in::<L, M>(l, l.add(ax, ax));
    l.sub(one, l.div(l.splat(2.0), l.add(e, one)))
}

/// `tanh(x)`; `tanh(-0) = -0`, `+-1` for `+-inf`, canonical NaN for NaN.
#[inline(always)]
pub fn tanh<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    let ax = abs(l, x);
    let small = l.lt(ax, l.splat(TANH_SMALL));
    // Whole-register shortcuts: a branch no lane takes is skipped (it changes no bit).
    let y = if l.all(small) {
        tanh_small::<L, M>(l, ax)
    } else if !l.any(small) {
        tanh_large::<L, M>(l, ax)
    } else {
        l.select(small, tanh_small::<L, M>(l, ax), tanh_large::<L, M>(l, ax))
    };
    let y = l.or(y, sign_bit(l, x));
    nan_where_nan(l, x, y)
}

kernel_type!(
    /// Kernel of [`tanh`].
    Tanh => tanh
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_have_their_bit_patterns() {
        assert_eq!(TANH_SMALL.to_bits(), 0x3F19_999A);
        let p: Vec<u32> = TANH_P.iter().map(|c| c.to_bits()).collect();
        assert_eq!(
            p,
            [
                0xBBC1_2C2C,
                0x3CAA_5C50,
                0xBD5C_4C6F,
                0x3E08_84D7,
                0xBEAA_AA9F
            ]
        );
    }
}
