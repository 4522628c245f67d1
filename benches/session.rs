//! The session's overhead over the slice kernel, strided views, threads and 16-bit types.
//!
//! ```text
//! cargo bench --bench session
//! ```
//! Groups: `session-overhead/1048576` (session call vs `exact::map_in_place` on the same data,
//! contiguous vs a strided view of the same element count), `threads/16777216` (exact GELU on
//! 1 and 2 threads), `half/1048576` (GELU on f32 vs bf16 vs f16), `fp-env/4096` (the cost of
//! the exact floating-point environment guard: exact exp over 4096 elements and an empty call,
//! under the default MXCSR, where the guard only reads it, and under a caller's FTZ/DAZ, where
//! it writes and restores it; the scalar `exact::exp` over the same elements in both), and
//! `nan-pass/256x768x768` (the exact GEMM of that shape on one thread, whose tiles get the
//! canonical-NaN pass; compare with a build without the pass), and `walks/1048576` (one thread:
//! the gated SwiGLU in place and `_into`, f32 and bf16; layer norm, residual add + layer norm,
//! and log-softmax over rows of 1,024; softmax down the columns of a C-order matrix).

use activation_kernels::{Func, Isa, Session, exact, fast};
use criterion::{Criterion, Throughput, black_box, criterion_group, criterion_main};
use half::{bf16, f16};
use ndarray::{Array1, Array2, s};

fn data(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919) % 16_001) as f32 / 1000.0 - 8.0)
        .collect()
}

fn overhead(c: &mut Criterion) {
    let n = 1 << 20;
    let mut g = c.benchmark_group(format!("session-overhead/{n}"));
    g.throughput(Throughput::Elements(n as u64));
    let isa = Isa::detect();
    let mut v = data(n);
    g.bench_function("slice-kernel-exact", |b| {
        b.iter(|| exact::map_in_place(Func::GeluErf, isa, black_box(&mut v)).unwrap())
    });
    let s1 = Session::exact().with_threads(1).unwrap();
    let mut a = Array1::from(data(n));
    g.bench_function("session-exact", |b| b.iter(|| s1.gelu(black_box(&mut a))));
    g.bench_function("slice-kernel-fast", |b| {
        b.iter(|| fast::map_in_place(Func::GeluErf, isa, black_box(&mut v)).unwrap())
    });
    let f1 = Session::fast().with_threads(1).unwrap();
    g.bench_function("session-fast", |b| b.iter(|| f1.gelu(black_box(&mut a))));
    // The same number of elements as every other column of a [1024, 2048] matrix.
    let mut m = Array2::from_shape_vec((1024, 2048), data(2 * n)).unwrap();
    g.bench_function("session-exact-strided", |b| {
        b.iter(|| s1.gelu(&mut black_box(&mut m).slice_mut(s![.., ..;2])))
    });
    g.bench_function("session-exact-transposed-contiguous", |b| {
        b.iter(|| s1.gelu(&mut black_box(&mut m).slice_mut(s![.., ..1024]).reversed_axes()))
    });
    g.finish();
}

fn threads(c: &mut Criterion) {
    let n = 1 << 24;
    let mut g = c.benchmark_group(format!("threads/{n}"));
    g.throughput(Throughput::Elements(n as u64));
    g.sample_size(10);
    let mut a = Array1::from(data(n));
    for t in [1, 2] {
        let s = Session::exact().with_threads(t).unwrap();
        g.bench_function(format!("exact-gelu-{t}-threads"), |b| {
            b.iter(|| s.gelu(black_box(&mut a)))
        });
    }
    g.finish();
}

fn half_types(c: &mut Criterion) {
    let n = 1 << 20;
    let mut g = c.benchmark_group(format!("half/{n}"));
    g.throughput(Throughput::Elements(n as u64));
    let s = Session::exact().with_threads(1).unwrap();
    let mut a32 = Array1::from(data(n));
    let mut a16 = a32.mapv(f16::from_f32);
    let mut ab16 = a32.mapv(bf16::from_f32);
    g.bench_function("exact-gelu-f32", |b| b.iter(|| s.gelu(black_box(&mut a32))));
    g.bench_function("exact-gelu-bf16", |b| {
        b.iter(|| s.gelu(black_box(&mut ab16)))
    });
    g.bench_function("exact-gelu-f16", |b| b.iter(|| s.gelu(black_box(&mut a16))));
    g.finish();
}

fn walks(c: &mut Criterion) {
    let n = 1 << 20;
    let mut g = c.benchmark_group(format!("walks/{n}"));
    g.throughput(Throughput::Elements(n as u64));
    let s = Session::exact().with_threads(1).unwrap();
    let (mut gate, up) = (Array1::from(data(n)), Array1::from(data(n)));
    let mut out = gate.clone();
    g.bench_function("swiglu-f32", |b| {
        b.iter(|| s.swiglu(black_box(&mut gate), &up).unwrap())
    });
    g.bench_function("swiglu-into-f32", |b| {
        b.iter(|| s.swiglu_into(black_box(&gate), &up, &mut out).unwrap())
    });
    let (mut gate16, up16) = (gate.mapv(bf16::from_f32), up.mapv(bf16::from_f32));
    g.bench_function("swiglu-bf16", |b| {
        b.iter(|| s.swiglu(black_box(&mut gate16), &up16).unwrap())
    });
    let mut m = Array2::from_shape_vec((1024, 1024), data(n)).unwrap();
    let r = m.clone();
    let (gamma, beta) = (Array1::from(data(1024)), Array1::from(data(1024)));
    g.bench_function("layer-norm-rows", |b| {
        b.iter(|| {
            s.layer_norm(black_box(&mut m), &gamma, &beta, 1e-5)
                .unwrap()
        })
    });
    g.bench_function("add-layer-norm-rows", |b| {
        b.iter(|| {
            s.add_layer_norm(black_box(&mut m), &r, &gamma, &beta, 1e-5)
                .unwrap()
        })
    });
    let mut o = m.clone();
    g.bench_function("log-softmax-into-rows", |b| {
        b.iter(|| {
            s.log_softmax_into(black_box(&r), &mut o, ndarray::Axis(1))
                .unwrap()
        })
    });
    g.bench_function("softmax-columns", |b| {
        b.iter(|| s.softmax(black_box(&mut m), ndarray::Axis(0)).unwrap())
    });
    g.finish();
}

/// The thread's MXCSR register.
fn mxcsr() -> u32 {
    let mut v = 0u32;
    // SAFETY: `stmxcsr` writes 4 bytes to the address of the local `v`.
    unsafe { std::arch::asm!("stmxcsr [{p}]", p = in(reg) &mut v as *mut u32, options(nostack)) };
    v
}

/// Sets the thread's MXCSR register.
fn set_mxcsr(v: u32) {
    // SAFETY: `ldmxcsr` reads 4 bytes from the local `v`; callers pass a valid MXCSR value.
    unsafe { std::arch::asm!("ldmxcsr [{p}]", p = in(reg) &v as *const u32, options(nostack)) };
}

fn fp_env(c: &mut Criterion) {
    let n = 4096;
    let mut g = c.benchmark_group(format!("fp-env/{n}"));
    let isa = Isa::detect();
    let mut v = data(n);
    let x = v.clone();
    let caller = mxcsr();
    for (env, bits) in [("default", caller), ("ftz-daz", caller | 0x8040)] {
        set_mxcsr(bits);
        g.bench_function(format!("exact-exp-{env}"), |b| {
            b.iter(|| {
                v.copy_from_slice(&x);
                exact::map_in_place(Func::Exp, isa, black_box(&mut v)).unwrap()
            })
        });
        g.bench_function(format!("empty-call-{env}"), |b| {
            b.iter(|| exact::map_in_place(Func::Exp, isa, black_box(&mut [])).unwrap())
        });
        g.bench_function(format!("scalar-exact-exp-{env}"), |b| {
            b.iter(|| {
                for (y, &x) in v.iter_mut().zip(&x) {
                    *y = exact::exp(black_box(x));
                }
            })
        });
        set_mxcsr(caller);
    }
    g.finish();
}

fn nan_pass(c: &mut Criterion) {
    let (m, k, n) = (256, 768, 768);
    let mut g = c.benchmark_group(format!("nan-pass/{m}x{k}x{n}"));
    g.sample_size(20);
    let a = Array2::from_shape_vec((m, k), data(m * k)).unwrap();
    let b = Array2::from_shape_vec((k, n), data(k * n)).unwrap();
    let mut out = Array2::zeros((m, n));
    let s = Session::exact().with_threads(1).unwrap();
    g.bench_function("exact-gemm", |bch| {
        bch.iter(|| {
            s.matmul_into(
                &a,
                &b,
                black_box(&mut out),
                &activation_kernels::epilogue::Identity,
            )
            .unwrap()
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = overhead, threads, half_types, fp_env, nan_pass, walks
}
criterion_main!(benches);
