//! The exact kernels against the golden vectors and digests of an independent implementation
//! of the spec (`tests/data/`), on every available instruction set.

use crate::common::*;
use activation_kernels::{Func, Isa, exact};

#[test]
fn every_function_matches_every_golden_pair_on_every_isa() {
    for func in golden_funcs() {
        let pairs = vectors(func.name());
        assert!(pairs.len() > 10_000, "{func}: {} pairs", pairs.len());
        let x: Vec<f32> = pairs.iter().map(|p| f32::from_bits(p.0)).collect();
        for isa in Isa::available() {
            let mut y = vec![0f32; x.len()];
            exact::map(func, isa, &x, &mut y).unwrap();
            let bad: Vec<String> = pairs
                .iter()
                .zip(&y)
                .filter(|(p, y)| y.to_bits() != p.1)
                .take(5)
                .map(|(p, y)| format!("x={:08x} want {:08x} got {:08x}", p.0, p.1, y.to_bits()))
                .collect();
            assert!(bad.is_empty(), "{func} on {isa}: {bad:?}");
        }
    }
}

#[test]
fn every_function_reproduces_its_digest_on_every_isa() {
    let x = digest_inputs();
    assert_eq!(x.len(), 1_047_809);
    let mut y = vec![0f32; x.len()];
    let digests = digests();
    assert_eq!(digests.len(), 9);
    for (name, want) in digests {
        if name == "fast_exp" {
            continue; // fast mode: fast_kernels::fast_exp_matches_every_golden_pair_and_the_digest_on_every_isa
        }
        let func: Func = name.parse().unwrap();
        for isa in Isa::available() {
            exact::map(func, isa, &x, &mut y).unwrap();
            assert_eq!(sha256_hex(&y), want, "{func} on {isa}");
        }
    }
}

#[test]
fn scalar_functions_match_the_golden_pairs() {
    let fns: [(Func, ScalarFn); 9] = [
        (Func::Exp, exact::exp),
        (Func::ExpNonPositive, exact::exp_nonpositive),
        (Func::Log, exact::log),
        (Func::Sigmoid, exact::sigmoid),
        (Func::Tanh, exact::tanh),
        (Func::Erf, exact::erf),
        (Func::OnePlusErf, exact::one_plus_erf),
        (Func::GeluErf, exact::gelu_erf),
        (Func::GeluTanh, exact::gelu_tanh),
    ];
    for (func, f) in fns {
        for (a, b) in vectors(func.name()) {
            let got = f(f32::from_bits(a)).to_bits();
            assert_eq!(got, b, "{func}({a:08x})");
        }
    }
}
