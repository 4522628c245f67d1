//! Property tests: generated shapes, layouts (transposed, negative and non-unit strides),
//! masks, key lengths, GQA ratios, block sizes, thread counts, instruction sets and special
//! values. Exact mode equals the reference loops of `common` bit for bit; fast mode stays
//! within its bounds.
//!
//! A few cases per property by default; `PROPTEST_CASES=n` or `AK_EXTENSIVE=1` for more.

use crate::common::*;
use activation_kernels::{AttentionOptions, Exact, Fast, Func, Isa};
use ndarray::{Array2, Array4, ArrayViewMut2, ShapeBuilder, s};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    let mut c = ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    if std::env::var("PROPTEST_CASES").is_err() {
        c.cases = if extensive() { 512 } else { 16 };
    }
    c
}

/// Mostly ordinary values, sometimes a special one (zeros, infinities, NaN payloads,
/// subnormals, thresholds).
fn value() -> impl Strategy<Value = f32> {
    prop_oneof![
        6 => -30.0f32..30.0,
        1 => prop::sample::select(special_values()),
    ]
}

fn matrix(rows: usize, cols: usize) -> impl Strategy<Value = Array2<f32>> {
    prop::collection::vec(value(), rows * cols)
        .prop_map(move |v| Array2::from_shape_vec((rows, cols), v).unwrap())
}

fn isa() -> impl Strategy<Value = Isa> {
    prop::sample::select(Isa::available())
}

/// `x` stored in one of four layouts: standard, column-major, both axes reversed, every
/// other column of a wider array. [`view`] gives `x` back as a view of the storage.
fn store(x: &Array2<f32>, layout: u8) -> Array2<f32> {
    let (r, c) = x.dim();
    match layout {
        0 => x.clone(),
        1 => {
            let mut f = Array2::zeros((r, c).f());
            f.assign(x);
            f
        }
        2 => Array2::from_shape_fn((r, c), |(i, j)| x[[r - 1 - i, c - 1 - j]]),
        _ => Array2::from_shape_fn(
            (r, 2 * c),
            |(i, j)| if j % 2 == 0 { x[[i, j / 2]] } else { -7.0 },
        ),
    }
}

fn view(storage: &mut Array2<f32>, layout: u8) -> ArrayViewMut2<'_, f32> {
    match layout {
        0 | 1 => storage.view_mut(),
        2 => storage.slice_mut(s![..;-1, ..;-1]),
        _ => storage.slice_mut(s![.., ..;2]),
    }
}

fn shape() -> impl Strategy<Value = (usize, usize)> {
    (1usize..6, 1usize..40)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn elementwise_exact_equals_the_scalar_function(
        x in shape().prop_flat_map(|(r, c)| matrix(r, c)),
        func in prop::sample::select(Func::ALL.to_vec()),
        layout in 0u8..4, isa in isa(), threads in 1usize..4,
    ) {
        let mut st = store(&x, layout);
        pinned_session::<Exact>(isa, threads).apply(func, &mut view(&mut st, layout));
        let f = scalar_fn(func);
        let want: Vec<u32> = x.iter().map(|&v| f(v).to_bits()).collect();
        prop_assert_eq!(bits(&view(&mut st, layout).to_owned()), want);
    }

    #[test]
    fn softmax_exact_equals_the_reference_and_fast_is_close(
        x in shape().prop_flat_map(|(r, c)| matrix(r, c)),
        layout in 0u8..4, isa in isa(), threads in 1usize..4,
    ) {
        let mut st = store(&x, layout);
        pinned_session::<Exact>(isa, threads)
            .softmax(&mut view(&mut st, layout), ndarray::Axis(1))
            .unwrap();
        let got = view(&mut st, layout).to_owned();
        for (r, row) in x.rows().into_iter().enumerate() {
            let want = softmax_reference(&row.to_vec());
            prop_assert_eq!(bits(&got.row(r).to_vec()), bits(&want), "row {}", r);
        }
        let mut fast = x.clone();
        pinned_session::<Fast>(isa, threads)
            .softmax(&mut fast, ndarray::Axis(1))
            .unwrap();
        for (r, row) in x.rows().into_iter().enumerate() {
            if row.iter().all(|v| v.is_finite()) {
                for (f, e) in fast.row(r).iter().zip(got.row(r)) {
                    prop_assert!((f - e).abs() <= 2e-6, "fast {} vs exact {}", f, e);
                }
            }
        }
    }

    #[test]
    fn gemm_exact_equals_the_reference_loop(
        (a, b) in (1usize..20, 0usize..24, 1usize..20)
            .prop_flat_map(|(m, k, n)| (matrix(m, k), matrix(k, n))),
        la in 0u8..4, lb in 0u8..4, isa in isa(), threads in 1usize..4,
    ) {
        let (mut sa, mut sb) = (store(&a, la), store(&b, lb));
        let c = pinned_session::<Exact>(isa, threads)
            .matmul_owned(&view(&mut sa, la), &view(&mut sb, lb), &activation_kernels::epilogue::Identity)
            .unwrap();
        prop_assert_eq!(bits(&c), bits(&gemm_reference(&a, &b)));
    }

    #[test]
    fn layer_norm_exact_equals_the_reference(
        x in (1usize..6, 1usize..70).prop_flat_map(|(r, c)| {
            prop::collection::vec(-3.0f32..5.0, r * c)
                .prop_map(move |v| Array2::from_shape_vec((r, c), v).unwrap())
        }),
        layout in 0u8..4, isa in isa(), threads in 1usize..4,
    ) {
        let n = x.ncols();
        let g = ndarray::Array1::from_shape_fn(n, |j| 0.5 + j as f32 / 64.0);
        let b = ndarray::Array1::from_shape_fn(n, |j| j as f32 / 32.0 - 0.5);
        let mut st = store(&x, layout);
        pinned_session::<Exact>(isa, threads)
            .layer_norm(&mut view(&mut st, layout), &g, &b, 1e-5)
            .unwrap();
        let got = view(&mut st, layout).to_owned();
        for (r, row) in x.rows().into_iter().enumerate() {
            let want = layer_norm_reference(&row.to_vec(), g.as_slice().unwrap(), b.as_slice().unwrap(), 1e-5);
            prop_assert_eq!(bits(&got.row(r).to_vec()), bits(&want), "row {}", r);
        }
    }

    #[test]
    fn swiglu_exact_equals_silu_times_up(
        (gate, up) in shape().prop_flat_map(|(r, c)| (matrix(r, c), matrix(r, c))),
        layout in 0u8..4, isa in isa(), threads in 1usize..4,
    ) {
        let mut st = store(&gate, layout);
        let mut su = store(&up, layout);
        let su = view(&mut su, layout);
        pinned_session::<Exact>(isa, threads)
            .swiglu(&mut view(&mut st, layout), &su)
            .unwrap();
        let want: Vec<u32> = gate
            .iter()
            .zip(&up)
            .map(|(&g, &u)| canon(activation_kernels::exact::silu(g) * u).to_bits())
            .collect();
        prop_assert_eq!(bits(&view(&mut st, layout).to_owned()), want);
    }

    #[test]
    fn attention_exact_equals_gemm_softmax_gemm_written_out(
        (batch, kv_heads, group, seq_q, seq_k, dim) in
            (1usize..3, 1usize..3, 1usize..3, 1usize..6, 1usize..8, 1usize..6),
        causal in any::<bool>(),
        lengths in prop::collection::vec(0usize..8, 2),
        use_lengths in any::<bool>(),
        blocks in (1usize..8, 1usize..8),
        isa in isa(), threads in 1usize..4, seed in any::<u64>(),
    ) {
        let heads = kv_heads * group;
        let mut rng = Rng(seed);
        let mut t = |h: usize, s: usize| {
            Array4::from_shape_vec((batch, h, s, dim), rng.vec(batch * h * s * dim, -2.0, 2.0)).unwrap()
        };
        let (q, k, v) = (t(heads, seq_q), t(kv_heads, seq_k), t(kv_heads, seq_k));
        let lengths: Vec<usize> = lengths[..batch].iter().map(|&l| l.min(seq_k)).collect();
        let mut opts = AttentionOptions { query_block: blocks.0, key_block: blocks.1, ..AttentionOptions::default() };
        if causal {
            opts = opts.causal();
        }
        if use_lengths {
            opts = opts.with_key_lengths(&lengths);
        }
        let out = pinned_session::<Exact>(isa, threads).attention_owned(&q, &k, &v, &opts).unwrap();
        let scale = 1.0 / (dim as f32).sqrt();
        for (bi, &len) in lengths.iter().enumerate() {
            for h in 0..heads {
                let (qh, kh, vh) = (
                    q.slice(s![bi, h, .., ..]),
                    k.slice(s![bi, h / group, .., ..]),
                    v.slice(s![bi, h / group, .., ..]),
                );
                let scores = gemm_reference(&qh, &kh.t());
                for i in 0..seq_q {
                    let mut limit = if use_lengths { len } else { seq_k };
                    if causal {
                        // The queries are the last `seq_q` positions.
                        limit = limit.min(i + seq_k.saturating_sub(seq_q) + 1);
                    }
                    let row: Vec<f32> = (0..seq_k)
                        .map(|j| if j < limit { scores[[i, j]] * scale } else { f32::NEG_INFINITY })
                        .collect();
                    let p = Array2::from_shape_vec((1, seq_k), softmax_reference(&row)).unwrap();
                    let want = gemm_reference(&p, &vh);
                    prop_assert_eq!(
                        bits(&out.slice(s![bi, h, i, ..]).to_vec()),
                        bits(&want),
                        "b {} h {} row {}", bi, h, i
                    );
                }
            }
        }
    }
}
