//! Properties of the exact kernels the golden vectors do not spell out.

use crate::common::*;
use activation_kernels::{Func, Isa, exact};

#[test]
fn exp_nonpositive_equals_exp_down_to_the_flush_and_is_zero_below() {
    // A piece of the sweep at a time on every instruction set: the whole of it (70M floats)
    // and the two outputs would be 840 MB.
    let (mut a, mut b, mut n) = (Vec::new(), Vec::new(), 0);
    for x in float_range_pieces(-87.336_54, 0.0, 16, 1 << 16) {
        n += x.len();
        a.resize(x.len(), 0f32);
        b.resize(x.len(), 0f32);
        for isa in Isa::available() {
            exact::map(Func::Exp, isa, &x, &mut a).unwrap();
            exact::map(Func::ExpNonPositive, isa, &x, &mut b).unwrap();
            let d = first_difference(&x, &a, &b);
            assert!(d.is_none(), "{isa}: {}", d.unwrap());
        }
    }
    assert!(n > 10_000_000 / 16);
    for x in float_range(-200.0, -87.336_55, 4099)
        .into_iter()
        .chain([f32::NEG_INFINITY, -f32::MAX])
    {
        assert_eq!(exact::exp_nonpositive(x).to_bits(), 0, "{x}");
    }
}

#[test]
fn exp_nonpositive_above_zero_is_exp_within_bound_then_infinity() {
    // The crate's documented choice for x > 0.
    for x in float_range(1e-3, 88.37, 997) {
        let got = exact::exp_nonpositive(x);
        assert!(ulp_error(got, f64::from(x).exp()) <= 1.2, "{x}: {got}");
    }
    for x in [88.38f32, 88.5, 88.72, 100.0, 1e30, f32::MAX, f32::INFINITY] {
        assert_eq!(exact::exp_nonpositive(x), f32::INFINITY, "{x}");
    }
}

#[test]
fn silu_is_x_times_sigmoid_rounded_once() {
    for x in float_range(-120.0, 120.0, 4099)
        .into_iter()
        .chain(special_values())
    {
        let want = x * exact::sigmoid(x);
        let got = exact::silu(x);
        if x == f32::NEG_INFINITY {
            assert_eq!(got.to_bits(), (-0.0f32).to_bits());
        } else if x.is_nan() {
            assert_eq!(got.to_bits(), 0x7FC0_0000);
        } else {
            assert_eq!(got.to_bits(), want.to_bits(), "{x}");
        }
    }
}

#[test]
fn odd_functions_are_odd_and_signs_of_zero_are_kept() {
    for x in float_range(0.0, 20.0, 4099) {
        for (f, name) in [(exact::tanh as fn(f32) -> f32, "tanh"), (exact::erf, "erf")] {
            assert_eq!(f(-x).to_bits(), (-f(x)).to_bits(), "{name}({x})");
        }
    }
    assert_eq!(exact::tanh(-0.0).to_bits(), 0x8000_0000);
    assert_eq!(exact::erf(-0.0).to_bits(), 0x8000_0000);
    assert_eq!(exact::erf(f32::NEG_INFINITY), -1.0);
    assert_eq!(exact::gelu_erf(f32::NEG_INFINITY).to_bits(), 0x8000_0000);
    assert_eq!(exact::gelu_tanh(f32::NEG_INFINITY).to_bits(), 0x8000_0000);
    assert_eq!(exact::gelu_erf(f32::INFINITY), f32::INFINITY);
    assert_eq!(exact::log(0.0), f32::NEG_INFINITY);
    assert_eq!(exact::log(-0.0), f32::NEG_INFINITY);
    assert_eq!(exact::log(-1.0).to_bits(), 0x7FC0_0000);
    assert_eq!(exact::log(f32::INFINITY), f32::INFINITY);
}
