//! `silu(x) = x * sigmoid(x)`, defined by the crate: the spec's sigmoid, then one product
//! rounding. (The spec has no SiLU of its own.)

use super::exp::EXP_ONE_SCALE;
use super::kernel_type;
use super::sigmoid::{fast_over_one_plus_exp_neg, sigmoid_of_number};
use crate::lanes::Lanes;
use crate::lanes::Mode;

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
    // A register of `|x| < 86` (the usual case) has no special value to place, and its exp
    // takes the one-scale form: one test skips the exp's own and the selects, which would
    // change nothing (skipping them was measured to pay).
    if super::all_abs_below(l, x, EXP_ONE_SCALE) {
        return l.mul(x, sigmoid_of_number::<L, M, true>(l, x));
    }
    let y = l.mul(x, sigmoid_of_number::<L, M, false>(l, x));
    let y = l.select(l.eq(x, l.splat(f32::NEG_INFINITY)), l.splat(-0.0), y);
    super::nan_where_nan(l, x, y)
}

kernel_type!(
    /// Kernel of [`silu`].
    Silu => silu, wide
);

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use crate::lanes::Exact;
    use crate::ops::clean_form_test::assert_clean_form_is_general_form_near;

    /// Exact SiLU: a register of `|x| < EXP_ONE_SCALE` (one test, no select) gives the general
    /// form's bits, every float of `[85.5, 86.5]` and more (see the helper).
    pub fn the_exact_in_range_form_is_the_general_form() {
        assert_clean_form_is_general_form_near::<Silu<Exact>>(85.5, 86.5);
    }
}
