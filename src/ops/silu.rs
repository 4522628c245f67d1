//! `silu(x) = x * sigmoid(x)`, defined by the crate: the spec's sigmoid, then one product
//! rounding. (The spec has no SiLU of its own.)

use super::kernel_type;
use super::sigmoid::{fast_over_one_plus_exp_neg, sigmoid_of_number};
use crate::lanes::Lanes;
use crate::mode::Mode;

/// `x * sigmoid(x)`, the product rounded once. `silu(+inf) = +inf`; `silu(-inf) = -0`, the
/// limit (the bare product `-inf * +0` would be NaN); canonical NaN for NaN.
#[inline(always)]
pub fn silu<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    if M::FAST {
        // `x / (1 + e^-x)`: `-0` below -87.3 and at `-inf`, `+inf` at `+inf`.
        let (y, clean) = fast_over_one_plus_exp_neg(l, x, x);
        return if clean {
            y
        } else {
            super::nan_where_nan(l, x, y)
        };
    }
    let y = l.mul(x, sigmoid_of_number::<L, M>(l, x));
    // A register of finite values (the usual case) has no special value to place, so one test
    // skips the selects, which would change nothing (-11% at 1M on Zen 1).
    if super::all_abs_below(l, x, f32::INFINITY) {
        return y;
    }
    let y = l.select(l.eq(x, l.splat(f32::NEG_INFINITY)), l.splat(-0.0), y);
    super::nan_where_nan(l, x, y)
}

kernel_type!(
    /// Kernel of [`silu`].
    Silu => silu, wide
);
