//! The GEMM at 1024 x 1024 x 1024 (C-order operands), one thread unless the id ends in `-2t`,
//! beside matrixmultiply's sgemm in the same group. Throughput is `2 n^3` elements, so
//! criterion's "thrpt" in elements per second is FLOP/s.
//!
//! * `exact-<isa>`, `fast-<isa>`: the product alone, on every instruction set but scalar.
//! * `fast-bias-gelu`, `exact-bias-gelu`: with the fused `gelu(C + b)` epilogue (widest ISA).
//! * `fast-bias-gelu-unfused`: the product, then the bias and the GELU as separate passes.
//! * `matrixmultiply`: its `sgemm` (through `ndarray::linalg::general_mat_mul`, which calls
//!   `matrixmultiply::sgemm` for `f32`: the same code, behind a safe interface).
//! * `exact-<isa>-2t`, `fast-<isa>-2t`, `fast-bias-gelu-2t`: a session with two threads.
//!
//!
//! Then the transformer block's shapes (`gemm-block/<m>x<k>x<n>`, B packed once as the block's
//! weights are: `exact`, `fast`, `exact-2t`, `fast-2t`, beside `matrixmultiply`), and the
//! one-row products of a decode step (`gemv/1x<k>x<n>`: `exact`, `fast` with packed B,
//! `fast-rows` with B as a plain C-order array, beside `stream`, a sum of every weight: the time
//! to read them once), and a decode step's four products in turn (`gemv-step`: `exact`, `fast`,
//! `exact-2t`, `fast-2t`; 28.3 MB of packed weights, each read once per step, as a model
//! reads them).
//!
//! ```text
//! cargo bench --bench gemm -- --warm-up-time 1 --measurement-time 5
//! cargo bench --bench gemm -- gemm-block
//! ```

use activation_kernels::epilogue::{Bias, Identity, TileEpilogue};
use activation_kernels::{Exact, Fast, Func, Isa, Mode, Session};
use criterion::{Criterion, Throughput, black_box, criterion_group, criterion_main};
use ndarray::Array2;

const N: usize = 1024;

/// The block's products, `m x k x n`, and 1024^3.
const BLOCK_SHAPES: [(usize, usize, usize); 5] = [
    (256, 768, 2304),
    (256, 768, 768),
    (256, 768, 3072),
    (256, 3072, 768),
    (1024, 1024, 1024),
];

fn matrix(seed: u64) -> Array2<f32> {
    values(N, N, seed)
}

fn values(r: usize, c: usize, seed: u64) -> Array2<f32> {
    Array2::from_shape_fn((r, c), |(i, j)| {
        let h = (i as u64 * 1_000_003 + j as u64 * 7919 + seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    })
}

fn session<M: Mode>(isa: Isa, threads: usize) -> Session<M> {
    Session::<M>::new()
        .with_isa(isa)
        .and_then(|s| s.with_threads(threads))
        .expect("the instruction set was listed as available")
}

fn bench_gemm(c: &mut Criterion) {
    let a = matrix(1);
    let b = matrix(2);
    let bias: Vec<f32> = (0..N).map(|j| j as f32 / N as f32 - 0.5).collect();
    let mut out = Array2::<f32>::zeros((N, N));
    let best = Isa::detect();

    let mut g = c.benchmark_group(format!("gemm/{N}"));
    g.throughput(Throughput::Elements(2 * (N as u64).pow(3)));
    g.sample_size(10);

    let mut product =
        |g: &mut criterion::BenchmarkGroup<'_, _>, id: String, run: &dyn Fn(&mut Array2<f32>)| {
            g.bench_function(id, |bench| bench.iter(|| run(black_box(&mut out))));
        };

    for isa in Isa::available() {
        if isa == Isa::Scalar {
            continue;
        }
        let exact = session::<Exact>(isa, 1);
        let fast = session::<Fast>(isa, 1);
        product(&mut g, format!("exact-{isa}"), &|c| {
            exact.matmul_into(&a, &b, c, &Identity).unwrap()
        });
        product(&mut g, format!("fast-{isa}"), &|c| {
            fast.matmul_into(&a, &b, c, &Identity).unwrap()
        });
    }

    let fast = session::<Fast>(best, 1);
    let exact = session::<Exact>(best, 1);
    let fast_ep = fast.bias_activation(Bias::per_column(&bias[..]), Func::GeluErf);
    let exact_ep = exact.bias_activation(Bias::per_column(&bias[..]), Func::GeluErf);
    product(&mut g, "fast-bias-gelu".into(), &|c| {
        fast.matmul_into(&a, &b, c, &fast_ep).unwrap()
    });
    product(&mut g, "exact-bias-gelu".into(), &|c| {
        exact.matmul_into(&a, &b, c, &exact_ep).unwrap()
    });
    product(&mut g, "fast-bias-gelu-unfused".into(), &|c| {
        fast.matmul_into(&a, &b, c, &Identity).unwrap();
        Bias::per_column(&bias[..]).apply(c, 0, 0);
        fast.gelu(c);
    });
    product(&mut g, "matrixmultiply".into(), &|c| {
        ndarray::linalg::general_mat_mul(1.0, &a, &b, 0.0, c)
    });

    let fast2 = session::<Fast>(best, 2).with_parallel_threshold(0);
    let exact2 = session::<Exact>(best, 2).with_parallel_threshold(0);
    let fast2_ep = fast2.bias_activation(Bias::per_column(&bias[..]), Func::GeluErf);
    product(&mut g, format!("exact-{best}-2t"), &|c| {
        exact2.matmul_into(&a, &b, c, &Identity).unwrap()
    });
    product(&mut g, format!("fast-{best}-2t"), &|c| {
        fast2.matmul_into(&a, &b, c, &Identity).unwrap()
    });
    product(&mut g, "fast-bias-gelu-2t".into(), &|c| {
        fast2.matmul_into(&a, &b, c, &fast2_ep).unwrap()
    });
    g.finish();
}

fn bench_block_shapes(c: &mut Criterion) {
    // `ACTIVATION_KERNELS_ISA` picks another instruction set, to compare them.
    let best = Isa::preferred_or_detect();
    let exact = session::<Exact>(best, 1);
    let fast = session::<Fast>(best, 1);
    let exact2 = session::<Exact>(best, 2).with_parallel_threshold(0);
    let fast2 = session::<Fast>(best, 2).with_parallel_threshold(0);
    for (m, k, n) in BLOCK_SHAPES {
        let a = values(m, k, 1);
        let b = values(k, n, 2);
        let packed = exact.pack(&b).unwrap();
        // The same weights stored `[n, k]` (PyTorch's layout), used as the view `W^T`.
        let w = b.t().as_standard_layout().into_owned();
        let mut out = Array2::<f32>::zeros((m, n));
        let mut g = c.benchmark_group(format!("gemm-block/{m}x{k}x{n}"));
        g.throughput(Throughput::Elements(2 * (m * k * n) as u64));
        g.sample_size(10);
        g.bench_function("exact", |bench| {
            bench.iter(|| exact.matmul_into(&a, &packed, black_box(&mut out), &Identity))
        });
        g.bench_function("fast", |bench| {
            bench.iter(|| fast.matmul_into(&a, &packed, black_box(&mut out), &Identity))
        });
        g.bench_function("exact-2t", |bench| {
            bench.iter(|| exact2.matmul_into(&a, &packed, black_box(&mut out), &Identity))
        });
        g.bench_function("fast-2t", |bench| {
            bench.iter(|| fast2.matmul_into(&a, &packed, black_box(&mut out), &Identity))
        });
        // Weights not packed beforehand: B is packed inside every call, from C-order `[k, n]`
        // or from the transposed view of a `[n, k]` matrix (through the transposes).
        g.bench_function("fast-unpacked", |bench| {
            bench.iter(|| fast.matmul_into(&a, &b, black_box(&mut out), &Identity))
        });
        g.bench_function("fast-unpacked-wt", |bench| {
            bench.iter(|| fast.matmul_into(&a, &w.t(), black_box(&mut out), &Identity))
        });
        g.bench_function("matrixmultiply", |bench| {
            bench.iter(|| ndarray::linalg::general_mat_mul(1.0, &a, &b, 0.0, black_box(&mut out)))
        });
        g.finish();
    }
}

fn bench_gemv(c: &mut Criterion) {
    let best = Isa::detect();
    let exact = session::<Exact>(best, 1);
    let fast = session::<Fast>(best, 1);
    for (k, n) in [(768, 2304), (768, 3072), (3072, 768)] {
        let a = values(1, k, 1);
        let b = values(k, n, 2);
        let packed = exact.pack(&b).unwrap();
        let mut out = Array2::<f32>::zeros((1, n));
        let mut g = c.benchmark_group(format!("gemv/1x{k}x{n}"));
        g.throughput(Throughput::Bytes(4 * (k * n) as u64));
        g.bench_function("exact", |bench| {
            bench.iter(|| exact.matmul_into(&a, &packed, black_box(&mut out), &Identity))
        });
        g.bench_function("fast", |bench| {
            bench.iter(|| fast.matmul_into(&a, &packed, black_box(&mut out), &Identity))
        });
        g.bench_function("fast-rows", |bench| {
            bench.iter(|| fast.matmul_into(&a, &b, black_box(&mut out), &Identity))
        });
        g.bench_function("stream", |bench| bench.iter(|| black_box(&b).sum()));
        g.finish();
    }
}

/// A decode step's four products in turn (GPT-2 small: qkv, output projection, MLP up and
/// down), each weight read once per step as a model reads them: 28.3 MB, about an L3.
fn bench_gemv_step(c: &mut Criterion) {
    let best = Isa::detect();
    let shapes = [(768, 2304), (768, 768), (768, 3072), (3072, 768)];
    let exact = session::<Exact>(best, 1);
    let fast = session::<Fast>(best, 1);
    let exact2 = session::<Exact>(best, 2);
    let fast2 = session::<Fast>(best, 2);
    let weights: Vec<_> = shapes
        .iter()
        .zip(3..)
        .map(|(&(k, n), seed)| exact.pack(&values(k, n, seed)).unwrap())
        .collect();
    let inputs: Vec<_> = shapes.iter().map(|&(k, _)| values(1, k, 1)).collect();
    let mut outs: Vec<_> = shapes
        .iter()
        .map(|&(_, n)| Array2::<f32>::zeros((1, n)))
        .collect();
    let bytes: usize = shapes.iter().map(|&(k, n)| 4 * k * n).sum();
    let mut g = c.benchmark_group("gemv-step");
    g.throughput(Throughput::Bytes(bytes as u64));
    macro_rules! step {
        ($name:literal, $s:expr) => {
            g.bench_function($name, |bench| {
                bench.iter(|| {
                    for ((a, b), out) in inputs.iter().zip(&weights).zip(outs.iter_mut()) {
                        $s.matmul_into(a, b, black_box(out), &Identity).unwrap();
                    }
                })
            });
        };
    }
    step!("exact", exact);
    step!("fast", fast);
    step!("exact-2t", exact2);
    step!("fast-2t", fast2);
    g.finish();
}

criterion_group!(
    benches,
    bench_gemm,
    bench_block_shapes,
    bench_gemv,
    bench_gemv_step
);
criterion_main!(benches);
