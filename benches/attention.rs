//! Attention with 12 heads, head_dim 64, seq 1,024, causal, single thread, in both modes,
//! beside the GEMM of each mode in the same run (a 1024-cube). Throughput is in FLOPs
//! (2 * seq^2 * head_dim per head for each of the two products, halved for causal), so
//! criterion's elements/s is FLOP/s.
//!
//! Then decode: one query per head against a KV cache of 4096 keys (`attention-decode`), and
//! against 256 keys with the caches flushed by a 32 MB stream before each call, as a decode
//! step's weights flush them (`attention-decode-after-weights`), and
//! the transformer block's attention (`attention-block/256`: seq 256, q, k and v strided views
//! of one `[256, 3 * 768]` qkv matrix, the output heads interleaved as the block has them)
//! beside the same attention on contiguous `[1, 12, 256, 64]` arrays.
//!
//! ```text
//! cargo bench --bench attention
//! ```

use activation_kernels::AttentionOptions;
use activation_kernels::Session;
use activation_kernels::epilogue::Identity;
use criterion::{BatchSize, Criterion, Throughput, black_box, criterion_group, criterion_main};
use ndarray::{Array2, Array4, s};

fn data(n: usize, k: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919 + k) % 2001) as f32 / 1000.0 - 1.0)
        .collect()
}

fn attention(c: &mut Criterion) {
    let (heads, seq, dim) = (12usize, 1024usize, 64usize);
    let n = heads * seq * dim;
    let q = Array4::from_shape_vec((1, heads, seq, dim), data(n, 1)).unwrap();
    let k = Array4::from_shape_vec((1, heads, seq, dim), data(n, 2)).unwrap();
    let v = Array4::from_shape_vec((1, heads, seq, dim), data(n, 3)).unwrap();
    let mut out = Array4::<f32>::zeros((1, heads, seq, dim));
    let flops = (heads * 2 * 2 * seq * seq * dim / 2) as u64;
    let mut g = c.benchmark_group("attention/12x1024x64-causal");
    g.throughput(Throughput::Elements(flops));
    g.sample_size(10);
    let opts = AttentionOptions::default().causal();
    let e = Session::exact().with_threads(1).unwrap();
    let f = Session::fast().with_threads(1).unwrap();
    g.bench_function("exact", |b| {
        b.iter(|| {
            e.attention_into(black_box(&q), &k, &v, &mut out, &opts)
                .unwrap()
        })
    });
    g.bench_function("fast", |b| {
        b.iter(|| {
            f.attention_into(black_box(&q), &k, &v, &mut out, &opts)
                .unwrap()
        })
    });
    g.finish();
    // The GEMM's FLOP rate of each mode in the same run, on a 1024-cube.
    let mut g = c.benchmark_group("attention-gemm-reference/1024");
    g.throughput(Throughput::Elements(2 * 1024 * 1024 * 1024));
    g.sample_size(10);
    let a = Array2::from_shape_vec((1024, 1024), data(1 << 20, 4)).unwrap();
    let bm = Array2::from_shape_vec((1024, 1024), data(1 << 20, 5)).unwrap();
    let mut cm = Array2::<f32>::zeros((1024, 1024));
    g.bench_function("fast-gemm", |b| {
        b.iter(|| {
            f.matmul_into(black_box(&a), &bm, &mut cm, &Identity)
                .unwrap()
        })
    });
    g.bench_function("exact-gemm", |b| {
        b.iter(|| {
            e.matmul_into(black_box(&a), &bm, &mut cm, &Identity)
                .unwrap()
        })
    });
    g.finish();
    // Decode: one query per head against a KV cache of 4096 keys (12 heads, head_dim 64).
    let cache = 4096;
    let (q1, kc, vc, mut o1) = decode_inputs(heads, cache, dim, 6);
    let mut g = c.benchmark_group(format!("attention-decode/12x{cache}x64"));
    g.throughput(Throughput::Elements((heads * 2 * 2 * cache * dim) as u64));
    g.sample_size(20);
    g.bench_function("exact", |b| {
        b.iter(|| {
            e.attention_into(black_box(&q1), &kc, &vc, &mut o1, &opts)
                .unwrap()
        })
    });
    g.bench_function("fast", |b| {
        b.iter(|| {
            f.attention_into(black_box(&q1), &kc, &vc, &mut o1, &opts)
                .unwrap()
        })
    });
    g.finish();
    decode_after_weights(c, &e, &f, &opts);
    attention_block(c, &e, &f, &opts);
}

/// A decode step's query (one per head), a KV cache of `cache` keys and values, and the
/// output, `[1, heads, _, dim]` each; the data from `seed` on.
fn decode_inputs(
    heads: usize,
    cache: usize,
    dim: usize,
    seed: usize,
) -> (Array4<f32>, Array4<f32>, Array4<f32>, Array4<f32>) {
    let kv = |k| Array4::from_shape_vec((1, heads, cache, dim), data(heads * cache * dim, k));
    let q = Array4::from_shape_vec((1, heads, 1, dim), data(heads * dim, seed + 2)).unwrap();
    let (k, v) = (kv(seed).unwrap(), kv(seed + 1).unwrap());
    (q, k, v, Array4::zeros((1, heads, 1, dim)))
}

/// A decode step's attention as the step meets it: 12 heads against 256 cached keys, with
/// 32 MB (a decode step's weights and more) streamed through the caches before each call
/// (untimed), so that the keys and values come from L3 or memory, not from the last call.
fn decode_after_weights(
    c: &mut Criterion,
    e: &Session<activation_kernels::Exact>,
    f: &Session<activation_kernels::Fast>,
    opts: &AttentionOptions<'_>,
) {
    let (heads, cache, dim) = (12usize, 256usize, 64usize);
    let (q1, kc, vc, mut o1) = decode_inputs(heads, cache, dim, 9);
    let mut weights = vec![1.0f32; 8 << 20];
    let mut stream = || {
        // One write per cache line.
        for x in weights.iter_mut().step_by(16) {
            *x += 1.0;
        }
        black_box(weights[0]);
    };
    let mut g = c.benchmark_group(format!("attention-decode-after-weights/12x{cache}x64"));
    g.throughput(Throughput::Elements((heads * 2 * 2 * cache * dim) as u64));
    g.bench_function("exact", |b| {
        b.iter_batched(
            &mut stream,
            |()| {
                e.attention_into(black_box(&q1), &kc, &vc, &mut o1, opts)
                    .unwrap()
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("fast", |b| {
        b.iter_batched(
            &mut stream,
            |()| {
                f.attention_into(black_box(&q1), &kc, &vc, &mut o1, opts)
                    .unwrap()
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// The transformer block's attention: GPT-2 small at seq 256, in the block's layout and in
/// contiguous arrays.
fn attention_block(
    c: &mut Criterion,
    e: &Session<activation_kernels::Exact>,
    f: &Session<activation_kernels::Fast>,
    opts: &AttentionOptions<'_>,
) {
    let (heads, seq, dim) = (12usize, 256usize, 64usize);
    let d = heads * dim;
    let qkv = Array2::from_shape_vec((seq, 3 * d), data(seq * 3 * d, 9)).unwrap();
    let qkv5 = qkv
        .view()
        .into_shape_with_order((1, seq, 3, heads, dim))
        .unwrap();
    let part = |i: usize| {
        qkv5.slice_move(s![.., .., i, .., ..])
            .permuted_axes([0, 2, 1, 3])
    };
    let (q, k, v) = (part(0), part(1), part(2));
    let (qc, kc, vc) = (q.to_owned(), k.to_owned(), v.to_owned());
    let mut out = Array4::<f32>::zeros((1, seq, heads, dim));
    let mut outc = Array4::<f32>::zeros((1, heads, seq, dim));
    let flops = (heads * 2 * 2 * seq * seq * dim / 2) as u64;
    let mut g = c.benchmark_group(format!("attention-block/{seq}"));
    g.throughput(Throughput::Elements(flops));
    g.sample_size(20);
    g.bench_function("exact", |b| {
        b.iter(|| {
            let mut o = out.view_mut().permuted_axes([0, 2, 1, 3]);
            e.attention_into(black_box(&q), &k, &v, &mut o, opts)
                .unwrap()
        })
    });
    g.bench_function("fast", |b| {
        b.iter(|| {
            let mut o = out.view_mut().permuted_axes([0, 2, 1, 3]);
            f.attention_into(black_box(&q), &k, &v, &mut o, opts)
                .unwrap()
        })
    });
    g.bench_function("exact-contiguous", |b| {
        b.iter(|| {
            e.attention_into(black_box(&qc), &kc, &vc, &mut outc, opts)
                .unwrap()
        })
    });
    g.bench_function("fast-contiguous", |b| {
        b.iter(|| {
            f.attention_into(black_box(&qc), &kc, &vc, &mut outc, opts)
                .unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, attention);
criterion_main!(benches);
