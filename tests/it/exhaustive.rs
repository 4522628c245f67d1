//! All 2^32 inputs, every function, both modes, every available instruction set against the
//! scalar path. Long: run by hand with `cargo test --release -- --ignored exhaustive` and record
//! the time in BENCHMARKS.md. `AK_EXHAUSTIVE_FUNCS=exp,tanh` and `AK_EXHAUSTIVE_MODES=exact`
//! (comma-separated names) restrict the run; the test prints what it covered.

use crate::common::*;
use activation_kernels::{Func, Isa};
use rayon::prelude::*;

#[test]
#[ignore = "all 2^32 inputs: minutes; run by hand"]
fn exhaustive_every_isa_equals_scalar_on_all_inputs() {
    const BLOCK: u64 = 1 << 20;
    let start = std::time::Instant::now();
    let only = |var: &str, name: &str| {
        std::env::var(var).map_or(true, |v| v.split(',').any(|s| s.trim() == name))
    };
    for (mode, map, _) in modes() {
        if !only("AK_EXHAUSTIVE_MODES", mode) {
            continue;
        }
        for func in Func::ALL {
            if !only("AK_EXHAUSTIVE_FUNCS", func.name()) {
                continue;
            }
            let bad = (0..(1u64 << 32) / BLOCK).into_par_iter().find_map_any(|b| {
                let x: Vec<f32> = (b * BLOCK..(b + 1) * BLOCK)
                    .map(|i| f32::from_bits(i as u32))
                    .collect();
                let mut want = vec![0f32; x.len()];
                let mut got = vec![0f32; x.len()];
                map(func, Isa::Scalar, &x, &mut want).unwrap();
                Isa::available().into_iter().skip(1).find_map(|isa| {
                    map(func, isa, &x, &mut got).unwrap();
                    first_difference(&x, &want, &got).map(|d| format!("{isa}: {d}"))
                })
            });
            assert!(bad.is_none(), "{mode} {func}: {}", bad.unwrap());
            eprintln!(
                "{mode} {func}: all 2^32 inputs agree ({:.0?} so far)",
                start.elapsed()
            );
        }
    }
}
