//! `sigmoid(x) = 1 / (1 + e^-x)` (spec, "sigmoid(x)"): `s = exp(-|x|)`, then `1/(1+s)` or
//! `s/(1+s)` by the sign, so nothing overflows or cancels. Bound: 2.5 ulp. Fast mode: the same
//! formula on the fast exp ([`exp_in`]).

use super::exp::exp_in;
use super::{abs, kernel_type, nan_where_nan};
use crate::lanes::Lanes;
use crate::mode::Mode;

/// `sigmoid(x)`; canonical NaN for NaN. Fast mode: `+0` below `-87.3` (the fast exp's clamp).
#[inline(always)]
pub fn sigmoid<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    nan_where_nan(l, x, sigmoid_of_number::<L, M>(l, x))
}

/// [`sigmoid`] where `x` is not NaN (a NaN lane gets an unspecified value).
#[inline(always)]
pub fn sigmoid_of_number<L: Lanes, M: Mode>(l: L, x: L::F) -> L::F {
    let one = l.splat(1.0);
    let s = exp_in::<L, M>(l, l.sub(l.splat(0.0), abs(l, x)));
    let num = l.select(l.ge(x, l.splat(0.0)), one, s);
    l.div(num, l.add(one, s))
}

kernel_type!(
    /// Kernel of [`sigmoid`].
    Sigmoid => sigmoid
);
