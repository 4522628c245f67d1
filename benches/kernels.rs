//! Per function, instruction set and mode: out of place, one thread, at 4,096, 1,048,576 and
//! 16,777,216 elements, beside a loop over std's `f32` function (where std has one) and the
//! streaming loop `y[i] = a * x[i]` in the same group. Throughput is in elements, so criterion's
//! "thrpt" is elements per second; ns per element is its inverse.
//!
//! ```text
//! cargo bench --bench kernels                    # everything (long)
//! cargo bench --bench kernels -- 'gelu_erf/1048576'
//! ```

use activation_kernels::{Func, Isa, exact, fast};
use criterion::{BenchmarkId, Criterion, Throughput, black_box, criterion_group, criterion_main};

const SIZES: [usize; 3] = [4_096, 1 << 20, 1 << 24];

fn inputs(func: Func, n: usize) -> Vec<f32> {
    // A deterministic spread over the range that matters for each function.
    let (lo, hi) = match func {
        Func::Log => (1e-3, 16.0),
        Func::ExpNonPositive => (-16.0, 0.0),
        _ => (-8.0, 8.0),
    };
    (0..n)
        .map(|i| lo + (hi - lo) * ((i as u64 * 2_654_435_761 % n as u64) as f32 / n as f32))
        .collect()
}

fn std_fn(func: Func) -> Option<fn(f32) -> f32> {
    match func {
        Func::Exp | Func::ExpNonPositive => Some(f32::exp),
        Func::Log => Some(f32::ln),
        Func::Tanh => Some(f32::tanh),
        Func::Sigmoid => Some(|x| 1.0 / (1.0 + (-x).exp())),
        _ => None,
    }
}

fn bench_kernels(c: &mut Criterion) {
    let isas = Isa::available();
    let best = Isa::detect();
    for func in Func::ALL {
        for n in SIZES {
            let x = inputs(func, n);
            let mut y = vec![0f32; n];
            let mut g = c.benchmark_group(format!("{}/{n}", func.name()));
            g.throughput(Throughput::Elements(n as u64));
            if n >= 1 << 24 {
                g.sample_size(10);
            }
            for &isa in &isas {
                // The full ISA matrix at 1M; the other sizes on the best ISA only.
                if n != 1 << 20 && isa != best {
                    continue;
                }
                g.bench_function(BenchmarkId::new("exact", isa), |b| {
                    b.iter(|| exact::map(func, isa, black_box(&x), &mut y).unwrap())
                });
                g.bench_function(BenchmarkId::new("fast", isa), |b| {
                    b.iter(|| fast::map(func, isa, black_box(&x), &mut y).unwrap())
                });
            }
            if let Some(f) = std_fn(func) {
                g.bench_function("std-loop", |b| {
                    b.iter(|| {
                        for (y, x) in y.iter_mut().zip(black_box(&x)) {
                            *y = f(*x);
                        }
                    })
                });
            }
            g.bench_function("stream", |b| {
                let a = black_box(1.000_001f32);
                b.iter(|| {
                    for (y, x) in y.iter_mut().zip(black_box(&x)) {
                        *y = a * *x;
                    }
                })
            });
            g.finish();
        }
    }
}

/// `n` values of a normal distribution of spread `sd` about 0 (Box-Muller on a fixed sequence):
/// the pre-activations a model's GELU sees are concentrated near 0, unlike the uniform spread
/// of [`inputs`].
fn normal(n: usize, sd: f32) -> Vec<f32> {
    let uniform = |i: usize| ((i as u64 * 2_654_435_761 + 12_345) % 1_000_003) as f64 / 1_000_003.0;
    (0..n)
        .map(|i| {
            let (u, v) = (uniform(2 * i).max(1e-12), uniform(2 * i + 1));
            let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
            (z * sd as f64) as f32
        })
        .collect()
}

/// The erf GELU and `1 + erf` on normal inputs of spread 0.5 (that of the example block's MLP,
/// where five in six lanes take erf's small branch) and 1.5 (half of them), and tanh on a
/// spread of 1 (nearly half its lanes below 0.6, its polynomial branch), best instruction set.
fn bench_gelu_on_model_spreads(c: &mut Criterion) {
    let n = 1 << 20;
    let isa = Isa::detect();
    let spreads = [
        (Func::GeluErf, 0.5f32),
        (Func::GeluErf, 1.5),
        (Func::OnePlusErf, 0.5),
        (Func::OnePlusErf, 1.5),
        (Func::Tanh, 1.0),
    ];
    for (func, sd) in spreads {
        let x = normal(n, sd);
        let mut y = vec![0f32; n];
        let mut g = c.benchmark_group(format!("{}/{n}/normal-{sd}", func.name()));
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(BenchmarkId::new("exact", isa), |b| {
            b.iter(|| exact::map(func, isa, black_box(&x), &mut y).unwrap())
        });
        g.bench_function(BenchmarkId::new("fast", isa), |b| {
            b.iter(|| fast::map(func, isa, black_box(&x), &mut y).unwrap())
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(1));
    targets = bench_kernels, bench_gelu_on_model_spreads
}
criterion_main!(benches);
