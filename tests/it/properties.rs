//! Property tests: generated shapes, layouts (transposed, negative and non-unit strides),
//! masks, key lengths, GQA ratios, block sizes, thread counts, instruction sets and special
//! values. Exact mode equals the reference loops of `common` bit for bit; fast mode stays
//! within its bounds.
//!
//! A few cases per property by default; `PROPTEST_CASES=n` or `AK_EXTENSIVE=1` for more.

use crate::common::*;
use activation_kernels::epilogue::Identity;
use activation_kernels::{
    AttentionOptions, Error, Exact, Fast, Func, Isa, Mask, MaskedRow, Session,
};
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
        offset in prop::sample::select(vec![0.0f32, 0.0, 1e3, 1e6]),
    ) {
        // An offset large beside the spread takes the two-float mean.
        let x = x.mapv(|v| v + offset);
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

/// Which keys query row `(b, h, i)` sees in [`a_row_depends_only_on_the_keys_it_sees`]'s cases.
struct Visibility<'a> {
    seq_q: usize,
    seq_k: usize,
    causal: bool,
    lengths: Option<&'a [usize]>,
    keep: Option<&'a Array4<bool>>,
    additive: Option<&'a Array4<f32>>,
    padding: Option<&'a Array2<bool>>,
}

impl Visibility<'_> {
    fn sees(&self, (b, h, i): (usize, usize, usize), j: usize) -> bool {
        self.lengths.is_none_or(|l| j < l[b])
            && (!self.causal || j <= i + self.seq_k.saturating_sub(self.seq_q))
            && self.keep.is_none_or(|m| m[[b, h, i, j]])
            && self
                .additive
                .is_none_or(|a| a[[b, h, i, j]] != f32::NEG_INFINITY)
            && self.is_real(b, j)
    }

    /// Key `j` of batch item `b` is real, not padding: within the key length and kept by the
    /// padding mask. A row that sees no key averages these under `Uniform`.
    fn is_real(&self, b: usize, j: usize) -> bool {
        self.lengths.is_none_or(|l| j < l[b]) && self.padding.is_none_or(|p| p[[b, j]])
    }
}

proptest! {
    #![proptest_config(config())]

    /// A row's output depends only on the keys it sees: inf and NaN written into the value rows
    /// of keys hidden from some rows leave those rows' bits as they were, for every mask form
    /// (causal, key lengths, keep, additive `-inf`, key padding, and mixes), masked-row policy,
    /// block size, thread count and instruction set, in both modes. A row that sees no key
    /// under `Uniform` averages every real key of its batch item (not its padding): bad values
    /// in padding leave it as it was.
    #[test]
    fn a_row_depends_only_on_the_keys_it_sees(
        (batch, kv_heads, group, seq_q, seq_k, dim) in
            (1usize..3, 1usize..3, 1usize..3, 1usize..7, 1usize..10, 1usize..5),
        forms in (any::<bool>(), any::<bool>(), 0u8..3, any::<bool>()),
        lengths in prop::collection::vec(0usize..10, 2),
        policy in prop::sample::select(vec![MaskedRow::Zero, MaskedRow::Uniform, MaskedRow::Nan]),
        blocks in (1usize..8, 0usize..6),
        fast in any::<bool>(),
        isa in isa(), threads in 1usize..3, seed in any::<u64>(),
    ) {
        let (causal, use_lengths, mask_form, use_padding) = forms;
        let heads = kv_heads * group;
        let mut rng = Rng(seed);
        let mut t = |h: usize, s: usize| {
            Array4::from_shape_vec((batch, h, s, dim), rng.vec(batch * h * s * dim, -2.0, 2.0)).unwrap()
        };
        let (q, k, v) = (t(heads, seq_q), t(kv_heads, seq_k), t(kv_heads, seq_k));
        let full = (batch, heads, seq_q, seq_k);
        let mut bits_of = |n: usize| (0..n).map(|_| !rng.next_u64().is_multiple_of(4)).collect::<Vec<bool>>();
        let keep = Array4::from_shape_vec(full, bits_of(batch * heads * seq_q * seq_k)).unwrap();
        let additive = keep.mapv(|k| if k { 0.25 } else { f32::NEG_INFINITY });
        let padding = Array2::from_shape_vec((batch, seq_k), bits_of(batch * seq_k)).unwrap();
        let hidden_v = bits_of(batch * kv_heads * seq_k);
        let lengths: Vec<usize> = lengths[..batch].iter().map(|&l| l.min(seq_k)).collect();
        let (keep_d, add_d) = (keep.clone().into_dyn(), additive.clone().into_dyn());
        let mut opts = AttentionOptions {
            query_block: blocks.0,
            key_block: blocks.1,
            ..AttentionOptions::default()
        };
        if causal {
            opts = opts.causal();
        }
        if use_lengths {
            opts = opts.with_key_lengths(&lengths);
        }
        match mask_form {
            1 => opts = opts.with_mask(Mask::Keep(keep_d.view())),
            2 => opts = opts.with_mask(Mask::Additive(add_d.view())),
            _ => {}
        }
        if use_padding {
            opts = opts.with_key_padding(padding.view());
        }
        let seen = Visibility {
            seq_q,
            seq_k,
            causal,
            lengths: use_lengths.then_some(&lengths[..]),
            keep: (mask_form == 1).then_some(&keep),
            additive: (mask_form == 2).then_some(&additive),
            padding: use_padding.then_some(&padding),
        };
        // Bad values in some value rows (the rows `hidden_v` leaves out).
        let mut bad = v.clone();
        for ((b, kh, j, d), x) in bad.indexed_iter_mut() {
            if !hidden_v[(b * kv_heads + kh) * seq_k + j] {
                *x = [f32::INFINITY, f32::NAN, f32::NEG_INFINITY][(j + d) % 3];
            }
        }
        let run = |v: &Array4<f32>| {
            if fast {
                pinned_session::<Fast>(isa, threads).with_masked_row(policy).attention_owned(&q, &k, v, &opts).unwrap()
            } else {
                pinned_session::<Exact>(isa, threads).with_masked_row(policy).attention_owned(&q, &k, v, &opts).unwrap()
            }
        };
        let (clean, dirty) = (run(&v), run(&bad));
        for b in 0..batch {
            for h in 0..heads {
                for i in 0..seq_q {
                    let sees_any = (0..seq_k).any(|j| seen.sees((b, h, i), j));
                    let averages_real = !sees_any && policy == MaskedRow::Uniform;
                    let kh = h / group;
                    let reaches = |j| if averages_real { seen.is_real(b, j) } else { seen.sees((b, h, i), j) };
                    let blind = (0..seq_k).all(|j| hidden_v[(b * kv_heads + kh) * seq_k + j] || !reaches(j));
                    if blind {
                        prop_assert_eq!(
                            bits(clean.slice(s![b, h, i, ..])),
                            bits(dirty.slice(s![b, h, i, ..])),
                            "b {} h {} row {}", b, h, i
                        );
                    }
                }
            }
        }
    }
}

/// Sizes from one to far past memory, for the shape properties below.
fn size() -> impl Strategy<Value = usize> {
    prop::sample::select(vec![1usize, 3, 4, 1 << 31, 1 << 32, 1 << 40])
}

/// A huge matrix that costs nothing (one zero, broadcast), if ndarray can describe it.
fn broadcast_zeros(
    z: &Array2<f32>,
    rows: usize,
    cols: usize,
) -> Option<ndarray::ArrayView2<'_, f32>> {
    z.broadcast((rows, cols))
}

proptest! {
    #![proptest_config(config())]

    /// `matmul_owned`, `attention_owned` and `pack` with huge and mismatched shapes: an error
    /// (`ShapeMismatch` for shapes that do not fit together), never a panic or an abort. Shapes
    /// that fit with an output small enough to compute are left out (they would run).
    #[test]
    fn owned_forms_and_pack_with_huge_or_mismatched_shapes_are_errors(
        (m, k, bk, n) in (size(), size(), size(), size()),
        fast in any::<bool>(),
    ) {
        let z = Array2::<f32>::zeros((1, 1));
        let (Some(a), Some(b)) = (broadcast_zeros(&z, m, k), broadcast_zeros(&z, bk, n)) else {
            return Ok(());
        };
        let fits = k == bk;
        // Fitting shapes run only where the output is past anything allocatable (2^61 values).
        let computable = m.checked_mul(n).is_some_and(|c| c < 1 << 61);
        let matmul = match (fits && computable, fast) {
            (true, _) => Ok(()),
            (false, true) => Session::fast().matmul_owned(&a, &b, &Identity).map(|_| ()),
            (false, false) => Session::exact().matmul_owned(&a, &b, &Identity).map(|_| ()),
        };
        if !fits {
            prop_assert!(matches!(matmul, Err(Error::ShapeMismatch { .. })), "{:?}", matmul);
        } else if !computable {
            prop_assert!(matches!(matmul, Err(Error::InvalidArgument(_))), "{:?}", matmul);
        }
        // Attention: q = a ([seq_q, d]), k = b^T-shaped ([bk, n] as [seq_k, d]), v = a.
        if !(n == k && bk == m) || m.checked_mul(k).is_none_or(|c| c >= 1 << 61) {
            let out = Session::exact().attention_owned(&a, &b, &a, &AttentionOptions::default());
            prop_assert!(
                matches!(out, Err(Error::ShapeMismatch { .. } | Error::InvalidArgument(_))),
                "{:?}", out.map(|o| o.dim())
            );
        }
        // Pack `a` (`[m, k]`): small sizes pack; 2^62 bytes or more is an error.
        let values = m.checked_mul(k);
        if values.is_none_or(|v| v >= 1 << 60) {
            prop_assert!(matches!(Session::exact().pack(&a), Err(Error::InvalidArgument(_))));
        } else if values.is_some_and(|v| v <= 16) {
            prop_assert_eq!(Session::exact().pack(&a).unwrap().dim(), (m, k));
        }
    }
}
