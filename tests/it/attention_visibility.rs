//! A key a row cannot see never reaches it: inf and NaN in the value rows of hidden keys leave
//! the row as it was, in both modes, under every masked-row policy, mask form and block size;
//! and the key-padding mask gives each batch row the bits of a run over its kept keys alone.

use crate::common::*;
use activation_kernels::{AttentionOptions, Error, Fast, Isa, Mask, MaskedRow, Mode, Session};
use ndarray::{Array2, Array4, ShapeBuilder, array, s};

/// Issue 32, finding 1: under `Uniform`, a row sums only over its own keys (causal, and key
/// lengths); only a fully masked row averages, and it averages its batch item's real keys:
/// every key without a key length, the keys before it with one, the kept keys of a key-padding
/// mask. Padding (here a NaN value row) never reaches it, so each form gives the bits of the
/// sequence run alone.
#[test]
fn uniform_policy_rows_sum_only_over_their_own_keys() {
    let (q, k) = (Array2::<f32>::ones((2, 4)), Array2::<f32>::ones((3, 4)));
    let v = array![[1., 2.], [3., 4.], [f32::NAN, 0.]];
    // Row 0 sees no key; row 1 every key but the padding.
    let keep = array![[false, false, false], [true, true, true]].into_dyn();
    let padding = array![[true, true, false]];
    let finite = array![[1., 2.], [3., 4.], [5., 0.]];
    let third = 1.0f32 / 3.0;
    let mean_of_three = [
        third * 1.0 + third * 3.0 + third * 5.0,
        third * 2.0 + third * 4.0,
    ];
    for isa in Isa::available() {
        for fast in [false, true] {
            let run = |k: &Array2<f32>, v: &Array2<f32>, o: &AttentionOptions<'_>| {
                if fast {
                    let s = Session::fast().with_isa(isa).unwrap();
                    s.with_masked_row(MaskedRow::Uniform)
                        .attention_owned(&q, k, v, o)
                } else {
                    let s = Session::exact().with_isa(isa).unwrap();
                    s.with_masked_row(MaskedRow::Uniform)
                        .attention_owned(&q, k, v, o)
                }
                .unwrap()
            };
            let causal = AttentionOptions::default().causal();
            assert_eq!(run(&k, &v, &causal).row(0).to_vec(), [2.0, 3.0], "{isa}");
            let lengths = AttentionOptions::default().with_key_lengths(&[2]);
            assert_eq!(run(&k, &v, &lengths).row(0).to_vec(), [2.0, 3.0], "{isa}");
            // Fully masked, nothing padded: the mean of every value row.
            let masked = AttentionOptions::default().with_mask(Mask::Keep(keep.view()));
            let out = run(&k, &finite, &masked);
            assert_eq!(out.row(0).to_vec(), mean_of_three, "{isa} fast {fast}");
            // Fully masked with the third key padding: the mean of the first two, as the
            // sequence of two keys alone gives it, by key length or by padding mask.
            let keep2 = keep.slice(s![.., ..2]).to_owned().into_dyn();
            let alone = AttentionOptions::default().with_mask(Mask::Keep(keep2.view()));
            let alone = run(
                &k.slice(s![..2, ..]).to_owned(),
                &v.slice(s![..2, ..]).to_owned(),
                &alone,
            );
            assert_eq!(alone.row(0).to_vec(), [2.0, 3.0], "{isa} fast {fast}");
            for padded in [
                masked.clone().with_key_lengths(&[2]),
                masked.clone().with_key_padding(padding.view()),
            ] {
                assert_eq!(
                    bits(&run(&k, &v, &padded)),
                    bits(&alone),
                    "{isa} fast {fast}"
                );
            }
            // No real key at all (key length 0): the mean of none, as a run with no keys.
            let none = AttentionOptions::default().with_key_lengths(&[0]);
            assert_eq!(run(&k, &v, &none).row(0).to_vec(), [0.0, 0.0], "{isa}");
        }
    }
}

/// Fast mode's fully masked row under `Uniform` is one mean, whatever the path and V's layout:
/// the online tiles (keys past one tile) give the bits of the two-pass form, for V in C and in
/// Fortran order.
#[test]
fn fast_uniform_rows_do_not_follow_the_tiles_or_the_layout_of_v() {
    let (seq_k, v_dim) = (40, 3);
    let q = Array2::<f32>::from_elem((1, 2), 0.5);
    let k = Array2::<f32>::from_elem((seq_k, 2), 0.25);
    let v = Array2::from_shape_fn((seq_k, v_dim), |(i, j)| {
        ((37 * i + 11 * j) % 17) as f32 * 0.1 - 0.77 + i as f32 * 1e-3
    });
    let mut v_f = Array2::<f32>::zeros((seq_k, v_dim).f());
    v_f.assign(&v);
    let none = Array2::from_elem((1, seq_k), false).into_dyn();
    for isa in Isa::available() {
        let fast = Session::fast()
            .with_isa(isa)
            .unwrap()
            .with_masked_row(MaskedRow::Uniform);
        let run = |v: &Array2<f32>, key_block| {
            let opts = AttentionOptions {
                key_block,
                ..AttentionOptions::default().with_mask(Mask::Keep(none.view()))
            };
            bits(&fast.attention_owned(&q, &k, v, &opts).unwrap())
        };
        let two_pass = run(&v, 0);
        for (v, key_block) in [(&v, 16), (&v_f, 16), (&v_f, 0)] {
            assert_eq!(run(v, key_block), two_pass, "{isa} key_block {key_block}");
        }
    }
}

/// An additive `-inf` masks its key whatever the score: a score of `+inf` or NaN there (a key
/// of inf or NaN, or a product that overflows) gives the row of a `false` keep entry, not the
/// NaN of `inf + -inf`, in attention and in `masked_softmax`, in both modes, on every ISA.
#[test]
fn an_additive_minus_infinity_masks_an_infinite_or_nan_score() {
    let v = array![[3.0f32], [4.0]];
    let additive = array![[0.0f32, f32::NEG_INFINITY]].into_dyn();
    let keep = array![[true, false]].into_dyn();
    let cases = [
        (array![[1.0f32]], array![[1.0f32], [f32::INFINITY]]),
        (array![[1.0f32]], array![[1.0f32], [f32::NAN]]),
        (array![[10.0f32]], array![[1.0f32], [1e38]]),
    ];
    for isa in Isa::available() {
        for (q, k) in &cases {
            let by_add = AttentionOptions::default().with_mask(Mask::Additive(additive.view()));
            let by_keep = AttentionOptions::default().with_mask(Mask::Keep(keep.view()));
            let exact = Session::exact().with_isa(isa).unwrap();
            let fast = Session::fast().with_isa(isa).unwrap();
            for out in [
                exact.attention_owned(q, k, &v, &by_add).unwrap(),
                exact.attention_owned(q, k, &v, &by_keep).unwrap(),
                fast.attention_owned(q, k, &v, &by_add).unwrap(),
            ] {
                assert_eq!(out[[0, 0]], 3.0, "{isa} k {k:?}");
            }
        }
        let mut scores = array![[1.0f32, f32::INFINITY], [1.0, f32::NAN]];
        let additive = array![[0.0f32, f32::NEG_INFINITY]].into_dyn();
        Session::exact()
            .with_isa(isa)
            .unwrap()
            .masked_softmax(&mut scores, 1.0, &Mask::Additive(additive.view()))
            .unwrap();
        assert_eq!(scores, array![[1.0f32, 0.0], [1.0, 0.0]], "{isa}");
    }
}

/// Issue 32, finding 2: fast mode's online softmax, one key per tile: an infinite value row at
/// key 2 does not reach row 0, which sees keys 0 and 1 only; nor, in a long causal prefill,
/// the rows before it.
#[test]
fn fast_online_tiles_keep_hidden_values_out_of_rows_that_cannot_see_them() {
    let (q, k) = (Array2::<f32>::ones((2, 4)), Array2::<f32>::ones((3, 4)));
    let v = array![[1., 2.], [3., 4.], [f32::INFINITY, 0.]];
    let mut o = AttentionOptions::default().causal();
    o.key_block = 1;
    for isa in Isa::available() {
        let fast = Session::fast().with_isa(isa).unwrap();
        let out = fast.attention_owned(&q, &k, &v, &o).unwrap();
        assert_eq!(out.row(0).to_vec(), [2.0, 3.0], "{isa}");
    }
    // 64 queries, 1,100 keys, `v[1050] = inf`: rows 0-13 cannot see it.
    let (seq_q, seq_k, dim) = (64, 1100, 8);
    let q = hashed_matrix(seq_q, dim, 5, 1.0);
    let k = hashed_matrix(seq_k, dim, 6, 1.0);
    let mut v = hashed_matrix(seq_k, dim, 7, 1.0);
    v.row_mut(1050).fill(f32::INFINITY);
    let out = Session::fast()
        .attention_owned(&q, &k, &v, &AttentionOptions::default().causal())
        .unwrap();
    for (i, row) in out.rows().into_iter().enumerate() {
        let sees = i + (seq_k - seq_q) >= 1050;
        assert_eq!(sees, !row.iter().all(|x| x.is_finite()), "row {i}");
    }
}

/// The key-padding mask, in exact mode: each batch row has the bits of the same row run alone
/// on its kept keys, with padding at the start, in the middle, at the end, everywhere and
/// nowhere; under each masked-row policy and block size, with grouped heads.
#[test]
fn key_padding_gives_the_bits_of_each_batch_row_alone_on_its_kept_keys() {
    let (batch, heads, kv_heads, seq_q, seq_k, dim, v_dim) = (5, 4, 2, 3, 9, 4, 3);
    let mut rng = Rng(11);
    let mut t = |h: usize, s: usize, d: usize| {
        Array4::from_shape_vec((batch, h, s, d), rng.vec(batch * h * s * d, -2.0, 2.0)).unwrap()
    };
    let (q, k, mut v) = (
        t(heads, seq_q, dim),
        t(kv_heads, seq_k, dim),
        t(kv_heads, seq_k, v_dim),
    );
    let keep = Array2::from_shape_fn((batch, seq_k), |(b, j)| match b {
        0 => j >= 3,
        1 => j % 3 != 1,
        2 => j < 5,
        3 => false,
        _ => true,
    });
    // Padding keys hold inf and NaN: they must not matter.
    for ((b, _, j, _), x) in v.indexed_iter_mut() {
        if !keep[[b, j]] {
            *x = if j % 2 == 0 { f32::NAN } else { f32::INFINITY };
        }
    }
    for policy in [MaskedRow::Zero, MaskedRow::Uniform, MaskedRow::Nan] {
        for isa in Isa::available() {
            let session = Session::exact()
                .with_isa(isa)
                .unwrap()
                .with_masked_row(policy);
            for (query_block, threads) in [(1, 1), (2, 2), (64, 1)] {
                let opts = AttentionOptions {
                    query_block,
                    ..AttentionOptions::default().with_key_padding(keep.view())
                };
                let session = session.clone().with_threads(threads).unwrap();
                let out = session.attention_owned(&q, &k, &v, &opts).unwrap();
                for b in 0..batch {
                    let kept: Vec<usize> = (0..seq_k).filter(|&j| keep[[b, j]]).collect();
                    let one = |a: &Array4<f32>| {
                        a.slice(s![b..b + 1, .., .., ..])
                            .select(ndarray::Axis(2), &kept)
                    };
                    let alone = session
                        .attention_owned(
                            &q.slice(s![b..b + 1, .., .., ..]),
                            &one(&k),
                            &one(&v),
                            &AttentionOptions::default(),
                        )
                        .unwrap();
                    assert_eq!(
                        bits(out.slice(s![b..b + 1, .., .., ..])),
                        bits(&alone),
                        "{isa} {policy:?} item {b} query block {query_block}"
                    );
                }
            }
        }
    }
    // The row of all padding under `Zero` is zeros.
    let out = Session::exact()
        .attention_owned(
            &q,
            &k,
            &v,
            &AttentionOptions::default().with_key_padding(keep.view()),
        )
        .unwrap();
    assert!(out.slice(s![3, .., .., ..]).iter().all(|&x| x == 0.0));
}

/// Key padding with key lengths: the exact bits of each item alone on its kept keys before its
/// length; in fast mode (one key per tile, the online path) finite and close to exact.
#[test]
fn key_padding_with_key_lengths_and_fast_mode() {
    let (batch, seq_q, seq_k, dim) = (3, 4, 12, 8);
    let mut rng = Rng(12);
    let mut t = |s: usize| {
        Array4::from_shape_vec((batch, 1, s, dim), rng.vec(batch * s * dim, -1.0, 1.0)).unwrap()
    };
    let (q, k, mut v) = (t(seq_q), t(seq_k), t(seq_k));
    let keep = Array2::from_shape_fn((batch, seq_k), |(b, j)| (j + b) % 4 != 0);
    let lengths = [12, 7, 1];
    for ((b, _, j, _), x) in v.indexed_iter_mut() {
        if !keep[[b, j]] || j >= lengths[b] {
            *x = f32::NAN;
        }
    }
    let opts = AttentionOptions::default()
        .with_key_padding(keep.view())
        .with_key_lengths(&lengths);
    let exact = Session::exact().attention_owned(&q, &k, &v, &opts).unwrap();
    for b in 0..batch {
        let kept: Vec<usize> = (0..lengths[b]).filter(|&j| keep[[b, j]]).collect();
        let one = |a: &Array4<f32>| {
            a.slice(s![b..b + 1, .., .., ..])
                .select(ndarray::Axis(2), &kept)
        };
        let alone = Session::exact()
            .attention_owned(
                &q.slice(s![b..b + 1, .., .., ..]),
                &one(&k),
                &one(&v),
                &AttentionOptions::default(),
            )
            .unwrap();
        assert_eq!(
            bits(exact.slice(s![b..b + 1, .., .., ..])),
            bits(&alone),
            "item {b}"
        );
    }
    // Every item keeps a key before its length (item 2: key 0), so every row is finite, in
    // fast mode too.
    let mut tiled = opts.clone();
    tiled.key_block = 1;
    let fast = Session::<Fast>::new()
        .attention_owned(&q, &k, &v, &tiled)
        .unwrap();
    for (x, e) in fast.iter().zip(&exact) {
        assert!(x.is_finite() && (x - e).abs() <= 1e-4, "{x} vs {e}");
    }
}

/// A key-padding mask of the wrong shape is `ShapeMismatch`; 2-D attention takes `[1, seq_k]`.
#[test]
fn key_padding_shapes() {
    let q = Array2::<f32>::ones((2, 4));
    let bad = Array2::from_elem((2, 2), true);
    let e = Session::exact()
        .attention_owned(
            &q,
            &q,
            &q,
            &AttentionOptions::default().with_key_padding(bad.view()),
        )
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    let keep = array![[false, true]];
    let v = array![[f32::NAN, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]];
    let out = Session::exact()
        .attention_owned(
            &q,
            &q,
            &v,
            &AttentionOptions::default().with_key_padding(keep.view()),
        )
        .unwrap();
    assert_eq!(out.row(0).to_vec(), [4.0, 5.0, 6.0, 7.0]);
}

/// Keep and additive masks hide keys inside a row's limits too: a hidden key's inf value does
/// not make the row NaN, in both modes, two-pass and online.
#[test]
fn keep_and_additive_masks_keep_hidden_values_out() {
    fn check<M: Mode>(isa: Isa) {
        let (q, k) = (Array2::<f32>::ones((2, 4)), Array2::<f32>::ones((3, 4)));
        let v = array![[1., 2.], [f32::INFINITY, f32::NAN], [3., 4.]];
        let keep = array![[true, false, true], [true, true, true]];
        let add = array![[0.0, f32::NEG_INFINITY, 0.0], [0.0, 0.0, 0.0]];
        let (keep, add) = (keep.into_dyn(), add.into_dyn());
        for mask in [Mask::Keep(keep.view()), Mask::Additive(add.view())] {
            for key_block in [0, 1, 2] {
                let mut o = AttentionOptions::default().with_mask(mask.clone());
                o.key_block = key_block;
                let s = Session::<M>::new().with_isa(isa).unwrap();
                let out = s.attention_owned(&q, &k, &v, &o).unwrap();
                assert_eq!(
                    out.row(0).to_vec(),
                    [2.0, 3.0],
                    "{isa} {mask:?} {key_block}"
                );
                assert!(out.row(1).iter().all(|x| !x.is_finite()));
            }
        }
    }
    for isa in Isa::available() {
        check::<activation_kernels::Exact>(isa);
        check::<Fast>(isa);
    }
}
