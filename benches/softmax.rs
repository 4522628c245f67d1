//! Softmax rows of 1,024 and 4,096 columns (1,048,576 elements in all) and 16,777,216 elements,
//! single thread, exact and fast, beside the streaming loop `y = a*x`, on fresh input every
//! iteration (`softmax_into`); causal masked softmax beside the unmasked one.
//!
//! ```text
//! cargo bench --bench softmax
//! ```

use activation_kernels::{Mask, Mode, Session};
use criterion::measurement::WallTime;
use criterion::{
    BatchSize, BenchmarkGroup, Criterion, Throughput, black_box, criterion_group, criterion_main,
};

use ndarray::{Array2, Array3, Axis};

fn data(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919) % 20_001) as f32 / 1000.0 - 10.0)
        .collect()
}

fn softmax(c: &mut Criterion) {
    let e = Session::exact().with_threads(1).unwrap();
    let f = Session::fast().with_threads(1).unwrap();
    for (total, cols) in [(1usize << 20, 1024usize), (1 << 20, 4096), (1 << 24, 4096)] {
        let mut g = c.benchmark_group(format!("softmax/{total}/cols-{cols}"));
        g.throughput(Throughput::Elements(total as u64));
        if total > 1 << 20 {
            g.sample_size(10);
        }
        // Fresh input every iteration (`softmax_into` reads `src`, writes `dst`): softmax of its
        // own output is not the workload (its rows are already normalised, its exps tiny).
        let src = Array2::from_shape_vec((total / cols, cols), data(total)).unwrap();
        let mut dst = src.clone();
        g.bench_function("exact", |b| {
            b.iter(|| e.softmax_into(black_box(&src), &mut dst, Axis(1)).unwrap())
        });
        g.bench_function("fast", |b| {
            b.iter(|| f.softmax_into(black_box(&src), &mut dst, Axis(1)).unwrap())
        });
        g.bench_function("stream", |b| {
            let a = black_box(1.000_001f32);
            b.iter(|| dst.zip_mut_with(black_box(&src), |y, x| *y = a * *x))
        });
        g.finish();
    }
    // Attention scores of one head, [1, 1024, 1024]: 1M elements.
    let mut g = c.benchmark_group("masked-softmax/1048576");
    g.throughput(Throughput::Elements(1 << 20));
    // In place on a fresh copy of the scores every iteration (the copy is not timed).
    let src = Array3::from_shape_vec((1, 1024, 1024), data(1 << 20)).unwrap();
    masked_cases(&mut g, &src, "exact", &e);
    masked_cases(&mut g, &src, "fast", &f);
    g.finish();
}

/// The unmasked and the causal masked softmax of `src` in `session`'s mode, in place on a fresh
/// copy of the scores every iteration (the copy is not timed).
fn masked_cases<M: Mode>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    src: &Array3<f32>,
    mode: &str,
    session: &Session<M>,
) {
    for (kind, mask) in [
        ("unmasked", Mask::None),
        ("causal", Mask::Causal { offset: 0 }),
    ] {
        g.bench_function(format!("{mode}-{kind}"), |b| {
            b.iter_batched_ref(
                || src.clone(),
                |x| session.masked_softmax(black_box(x), 0.125, &mask).unwrap(),
                BatchSize::LargeInput,
            )
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = softmax
}
criterion_main!(benches);
