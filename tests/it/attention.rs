//! Attention against an f64 reference in both modes (every mask kind, GQA, padding, seq 1,
//! seq_q != seq_k); exact bits identical across ISAs, threads and block sizes, and equal to the
//! separate GEMM, masked softmax and GEMM; no NaN from fully masked rows or tiles.

use crate::common::*;
use activation_kernels::epilogue::Identity;
use activation_kernels::{AttentionOptions, Mask};
use activation_kernels::{Exact, Fast, Isa, MaskedRow, Mode, Session};
use ndarray::{Array1, Array2, Array4, ArrayD, Axis, IxDyn, s};

struct Case {
    batch: usize,
    heads: usize,
    kv_heads: usize,
    seq_q: usize,
    seq_k: usize,
    dim: usize,
}

fn tensors(c: &Case, seed: u64) -> (Array4<f32>, Array4<f32>, Array4<f32>) {
    let mut rng = Rng(seed);
    let q = Array4::from_shape_vec(
        (c.batch, c.heads, c.seq_q, c.dim),
        rng.vec(c.batch * c.heads * c.seq_q * c.dim, -1.5, 1.5),
    )
    .unwrap();
    let k = Array4::from_shape_vec(
        (c.batch, c.kv_heads, c.seq_k, c.dim),
        rng.vec(c.batch * c.kv_heads * c.seq_k * c.dim, -1.5, 1.5),
    )
    .unwrap();
    let v = Array4::from_shape_vec(
        (c.batch, c.kv_heads, c.seq_k, c.dim),
        rng.vec(c.batch * c.kv_heads * c.seq_k * c.dim, -2.0, 2.0),
    )
    .unwrap();
    (q, k, v)
}

/// The f64 reference, with every mask rule written out; also returns per output row the scale
/// `sum_j p_j |v_j|` and the error bound's inputs.
#[allow(clippy::type_complexity)]
fn reference(
    c: &Case,
    q: &Array4<f32>,
    k: &Array4<f32>,
    v: &Array4<f32>,
    scale: f64,
    visible: &dyn Fn(usize, usize, usize, usize) -> bool,
    additive: &dyn Fn(usize, usize, usize, usize) -> f64,
) -> (Array4<f64>, Array4<f64>, f64) {
    let group = c.heads / c.kv_heads;
    let mut out = Array4::<f64>::zeros((c.batch, c.heads, c.seq_q, c.dim));
    let mut mag = out.clone();
    let mut worst_dot = 0f64;
    for b in 0..c.batch {
        for h in 0..c.heads {
            for i in 0..c.seq_q {
                let mut sc = vec![f64::NEG_INFINITY; c.seq_k];
                for (j, s) in sc.iter_mut().enumerate() {
                    if visible(b, h, i, j) {
                        let (mut dot, mut abs) = (0f64, 0f64);
                        for d in 0..c.dim {
                            let p = f64::from(q[[b, h, i, d]]) * f64::from(k[[b, h / group, j, d]]);
                            dot += p;
                            abs += p.abs();
                        }
                        *s = dot * scale + additive(b, h, i, j);
                        worst_dot = worst_dot.max(abs * scale);
                    }
                }
                let m = sc.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                if m == f64::NEG_INFINITY {
                    continue; // fully masked: policy Zero
                }
                let e: Vec<f64> = sc.iter().map(|s| (s - m).exp()).collect();
                let sum: f64 = e.iter().sum();
                for (j, e) in e.iter().enumerate() {
                    for d in 0..c.dim {
                        let vv = f64::from(v[[b, h / group, j, d]]);
                        out[[b, h, i, d]] += e / sum * vv;
                        mag[[b, h, i, d]] += e / sum * vv.abs();
                    }
                }
            }
        }
    }
    (out, mag, worst_dot)
}

fn check_against_reference<M: Mode>(
    c: &Case,
    opts: &AttentionOptions<'_>,
    visible: &dyn Fn(usize, usize, usize, usize) -> bool,
    additive: &dyn Fn(usize, usize, usize, usize) -> f64,
) {
    let (q, k, v) = tensors(c, 7 + c.seq_q as u64 * 31 + c.seq_k as u64);
    let scale = opts.scale.unwrap_or(1.0 / (c.dim as f32).sqrt());
    let (want, mag, worst_dot) = reference(c, &q, &k, &v, f64::from(scale), visible, additive);
    let mut out = Array4::<f32>::from_elem((c.batch, c.heads, c.seq_q, c.dim), f32::NAN);
    Session::<M>::new()
        .attention_into(&q, &k, &v, &mut out, opts)
        .unwrap();
    // Score error: dim roundings of terms up to worst_dot, which moves each probability by up
    // to twice that, relatively; softmax (|d| <= 2 worst_dot, exp, canonical sum: seq_k/16 + 4
    // roundings, normalisation) and P V (seq_k roundings) each add a few units of 2^-24.
    let u = 2f64.powi(-24);
    let rel = u
        * (4.0 * c.dim as f64 * worst_dot
            + 2.0 * worst_dot
            + c.seq_k as f64
            + c.seq_k as f64 / 16.0
            + 40.0);
    for ((g, w), m) in out.iter().zip(&want).zip(&mag) {
        assert!(g.is_finite(), "{}: non-finite output", M::NAME);
        let err = (f64::from(*g) - w).abs();
        assert!(
            err <= rel * m.max(f64::MIN_POSITIVE) + 1e-30,
            "{}: {g} vs {w}: err {err:e} > {:e}",
            M::NAME,
            rel * m
        );
    }
}

fn all_cases(f: impl Fn(&Case)) {
    for c in [
        Case {
            batch: 2,
            heads: 4,
            kv_heads: 2,
            seq_q: 37,
            seq_k: 37,
            dim: 16,
        },
        Case {
            batch: 1,
            heads: 3,
            kv_heads: 3,
            seq_q: 1,
            seq_k: 70,
            dim: 8,
        },
        Case {
            batch: 2,
            heads: 2,
            kv_heads: 1,
            seq_q: 20,
            seq_k: 300,
            dim: 32,
        },
        Case {
            batch: 1,
            heads: 1,
            kv_heads: 1,
            seq_q: 65,
            seq_k: 9,
            dim: 5,
        },
    ] {
        f(&c);
    }
}

#[test]
fn attention_matches_f64_with_every_mask_kind_in_both_modes() {
    all_cases(|c| {
        let none = |_, _, _, _| true;
        let zero = |_, _, _, _| 0.0;
        let off = c.seq_k.saturating_sub(c.seq_q);
        let causal = move |_: usize, _: usize, i: usize, j: usize| j <= i + off;
        let lens: Vec<usize> = (0..c.batch).map(|b| c.seq_k - (b * c.seq_k / 3)).collect();
        let keep = Array2::from_shape_fn((c.seq_q, c.seq_k), |(i, j)| (i * 7 + j * 3) % 5 != 0);
        let add = Array1::from_shape_fn(c.seq_k, |j| (j % 4) as f32 * -0.5);
        for mode in ["exact", "fast"] {
            // The default key tile (every case's keys in one: fast mode's two-pass form), and
            // tiles of 64 keys (fast mode's online softmax over several tiles).
            let run = |opts: &AttentionOptions<'_>,
                       vis: &dyn Fn(usize, usize, usize, usize) -> bool,
                       ad: &dyn Fn(usize, usize, usize, usize) -> f64| {
                for key_block in [0, 64] {
                    let opts = &AttentionOptions {
                        key_block,
                        ..opts.clone()
                    };
                    if mode == "exact" {
                        check_against_reference::<Exact>(c, opts, vis, ad)
                    } else {
                        check_against_reference::<Fast>(c, opts, vis, ad)
                    }
                }
            };
            run(&AttentionOptions::default(), &none, &zero);
            run(&AttentionOptions::default().causal(), &causal, &zero);
            run(
                &AttentionOptions::default().causal_with_offset(3),
                &|_, _, i, j| j <= i + 3,
                &zero,
            );
            run(
                &AttentionOptions::default()
                    .with_key_lengths(&lens)
                    .with_scale(0.3),
                &|b, _, _, j| j < lens[b],
                &zero,
            );
            run(
                &AttentionOptions::default().with_mask(Mask::Keep(keep.view().into_dyn())),
                &|_, _, i, j| keep[[i, j]],
                &zero,
            );
            run(
                &AttentionOptions::default()
                    .with_mask(Mask::Additive(add.view().into_dyn()))
                    .causal(),
                &causal,
                &|_, _, _, j| f64::from(add[j]),
            );
        }
    });
}

#[test]
fn exact_attention_bits_do_not_depend_on_isa_threads_or_blocks() {
    let c = Case {
        batch: 2,
        heads: 4,
        kv_heads: 2,
        seq_q: 45,
        seq_k: 83,
        dim: 24,
    };
    let (q, k, v) = tensors(&c, 99);
    let lens = [83usize, 50];
    let base = AttentionOptions::default().causal().with_key_lengths(&lens);
    let mut want = Array4::<f32>::zeros((2, 4, 45, 24));
    Session::exact()
        .with_isa(Isa::Scalar)
        .unwrap()
        .with_threads(1)
        .unwrap()
        .attention_into(&q, &k, &v, &mut want, &base)
        .unwrap();
    for isa in Isa::available() {
        for threads in [1, 2, 3] {
            for qb in [1, 7, 64] {
                let s = pinned_session::<Exact>(isa, threads);
                let mut out = Array4::<f32>::zeros(want.raw_dim());
                s.attention_into(
                    &q,
                    &k,
                    &v,
                    &mut out,
                    &AttentionOptions {
                        query_block: qb,
                        ..base.clone()
                    },
                )
                .unwrap();
                assert!(
                    out.iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{isa} {threads} threads, block {qb}"
                );
            }
        }
    }
}

/// A query block has the same bits whether its head's keys were packed once for every block
/// that reads them (a call of several blocks) or by the block itself (a call of that block
/// alone), in both modes, with key tiles that start on a panel of the packed keys and tiles
/// that do not (`key_block` 20), at one and two threads.
fn blocks_alone_and_together_agree<M: Mode>(isa: Isa) {
    let c = Case {
        batch: 2,
        heads: 1,
        kv_heads: 1,
        seq_q: 45,
        seq_k: 83,
        dim: 24,
    };
    let (q, k, v) = tensors(&c, 41);
    let lens = [83usize, 61];
    let qb = 7;
    for threads in [1, 2] {
        let s = pinned_session::<M>(isa, threads);
        for key_block in [0, 20, 32] {
            let base = AttentionOptions {
                query_block: qb,
                key_block,
                ..AttentionOptions::default().with_key_lengths(&lens)
            };
            let mut together = Array4::<f32>::zeros((2, 1, 45, 24));
            let opts = base.clone().causal_with_offset(c.seq_k - c.seq_q);
            s.attention_into(&q, &k, &v, &mut together, &opts).unwrap();
            for q0 in (0..c.seq_q).step_by(qb) {
                let q1 = (q0 + qb).min(c.seq_q);
                let rows = q.slice(s![.., .., q0..q1, ..]);
                let opts = base.clone().causal_with_offset(c.seq_k - c.seq_q + q0);
                let alone = s.attention_owned(&rows, &k, &v, &opts).unwrap();
                let want = together.slice(s![.., .., q0..q1, ..]);
                assert!(
                    alone
                        .iter()
                        .zip(want)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{} {isa} {threads} threads, key block {key_block}, rows {q0}..{q1}",
                    M::NAME
                );
            }
        }
    }
}

#[test]
fn a_block_has_the_same_bits_with_keys_packed_for_the_head_or_for_itself() {
    for isa in Isa::available() {
        blocks_alone_and_together_agree::<Exact>(isa);
        blocks_alone_and_together_agree::<Fast>(isa);
    }
}

#[test]
fn exact_attention_equals_gemm_masked_softmax_gemm() {
    let c = Case {
        batch: 1,
        heads: 2,
        kv_heads: 1,
        seq_q: 30,
        seq_k: 40,
        dim: 16,
    };
    let (q, k, v) = tensors(&c, 5);
    let s = Session::exact();
    let mut out = Array4::<f32>::zeros((1, 2, 30, 16));
    s.attention_into(&q, &k, &v, &mut out, &AttentionOptions::default().causal())
        .unwrap();
    for h in 0..2 {
        let qh = q.slice(s![0, h, .., ..]);
        let kh = k.slice(s![0, 0, .., ..]);
        let mut scores = s.matmul_owned(&qh, &kh.t(), &Identity).unwrap();
        s.masked_softmax(&mut scores, 0.25, &Mask::Causal { offset: 10 })
            .unwrap();
        let o = s
            .matmul_owned(&scores, &v.slice(s![0, 0, .., ..]), &Identity)
            .unwrap();
        assert!(
            o.iter()
                .zip(out.slice(s![0, h, .., ..]))
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "head {h}"
        );
    }
}

#[test]
fn fully_masked_rows_and_tiles_give_no_nan_and_fast_is_thread_invariant() {
    let c = Case {
        batch: 2,
        heads: 2,
        kv_heads: 2,
        seq_q: 10,
        seq_k: 600,
        dim: 8,
    };
    let (q, k, v) = tensors(&c, 3);
    // Batch item 1 has no valid key at all; rows 0..3 of every head see no key either.
    let lens = [600usize, 0];
    let keep = ArrayD::from_shape_fn(IxDyn(&[10, 600]), |ix| {
        ix[0] >= 3 && (ix[1] < 100 || ix[1] > 400)
    });
    let opts = AttentionOptions {
        key_block: 64,
        ..AttentionOptions::default()
            .with_key_lengths(&lens)
            .with_mask(Mask::Keep(keep.view()))
    };
    for policy in [MaskedRow::Zero, MaskedRow::Uniform, MaskedRow::Nan] {
        let mut fe = Array4::<f32>::zeros((2, 2, 10, 8));
        let mut ff = fe.clone();
        Session::exact()
            .with_masked_row(policy)
            .attention_into(&q, &k, &v, &mut fe, &opts)
            .unwrap();
        let fast = |threads| {
            let mut o = Array4::<f32>::zeros((2, 2, 10, 8));
            Session::fast()
                .with_masked_row(policy)
                .with_threads(threads)
                .unwrap()
                .with_parallel_threshold(0)
                .attention_into(&q, &k, &v, &mut o, &opts)
                .unwrap();
            o
        };
        ff.assign(&fast(1));
        for t in [2, 3] {
            assert!(
                fast(t)
                    .iter()
                    .zip(&ff)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "fast, {t} threads"
            );
        }
        for out in [&fe, &ff] {
            let masked = out.slice(s![1, .., .., ..]);
            let rows = out.slice(s![0, .., ..3, ..]);
            match policy {
                MaskedRow::Zero => assert!(masked.iter().chain(rows.iter()).all(|&x| x == 0.0)),
                MaskedRow::Nan => assert!(masked.iter().chain(rows.iter()).all(|x| x.is_nan())),
                MaskedRow::Uniform => {
                    // Uniform over every key: the mean of V's rows.
                    let mean = v.slice(s![0, 0, .., ..]).mean_axis(Axis(0)).unwrap();
                    for (a, b) in out.slice(s![0, 0, 0, ..]).iter().zip(&mean) {
                        assert!((a - b).abs() < 1e-5, "{a} vs {b}");
                    }
                }
            }
            // Every row that sees a key is finite, whatever the policy.
            assert!(out.slice(s![0, .., 3.., ..]).iter().all(|x| x.is_finite()));
        }
    }
}

#[test]
fn attention_shape_errors() {
    let s = Session::exact();
    let q = Array4::<f32>::zeros((1, 3, 4, 8));
    let k = Array4::<f32>::zeros((1, 2, 5, 8));
    let mut out = Array4::<f32>::zeros((1, 3, 4, 8));
    assert!(
        s.attention_into(&q, &k, &k, &mut out, &AttentionOptions::default())
            .is_err(),
        "3 heads over 2 kv heads"
    );
    let k = Array4::<f32>::zeros((1, 1, 5, 7));
    assert!(
        s.attention_into(&q, &k, &k, &mut out, &AttentionOptions::default())
            .is_err(),
        "head_dim"
    );
    let k = Array4::<f32>::zeros((1, 1, 5, 8));
    let mut bad = Array4::<f32>::zeros((1, 3, 4, 9));
    assert!(
        s.attention_into(&q, &k, &k, &mut bad, &AttentionOptions::default())
            .is_err(),
        "out shape"
    );
    let lens = [6usize];
    assert!(
        s.attention_into(
            &q,
            &k,
            &k,
            &mut out,
            &AttentionOptions::default().with_key_lengths(&lens)
        )
        .is_err()
    );
    let m = Array2::from_elem((4, 6), true);
    assert!(
        s.attention_into(
            &q,
            &k,
            &k,
            &mut out,
            &AttentionOptions::default().with_mask(Mask::Keep(m.view().into_dyn()))
        )
        .is_err()
    );
}

// Block sizes against inf and NaN (one head, 2-D tensors).
fn run_2d<M: Mode>(
    isa: Isa,
    (q, k, v): (&Array2<f32>, &Array2<f32>, &Array2<f32>),
    opts: &AttentionOptions<'_>,
) -> Array2<f32> {
    let s = Session::<M>::new().with_isa(isa).unwrap();
    s.attention_owned(q, k, v, opts).unwrap()
}

/// Exact attention with inf and NaN in V rows that some queries cannot see (causal, and
/// key lengths): the same bits for every query and key block, and rows that cannot see the
/// bad values stay finite.
#[test]
fn exact_bits_do_not_depend_on_the_blocks_even_with_inf_and_nan_in_hidden_v_rows() {
    let (seq, dim) = (9, 5);
    let q = hashed_matrix(seq, dim, 1, 2.0);
    let k = hashed_matrix(seq, dim, 2, 2.0);
    for (bad_row, bad) in [(1, f32::INFINITY), (4, f32::NAN), (8, f32::NEG_INFINITY)] {
        let mut v = hashed_matrix(seq, 3, 3, 2.0);
        v.row_mut(bad_row).fill(bad);
        for isa in Isa::available() {
            for causal in [true, false] {
                let base = if causal {
                    AttentionOptions::default().causal()
                } else {
                    AttentionOptions::default().with_key_lengths(&[7])
                };
                let want = run_2d::<Exact>(isa, (&q, &k, &v), &base);
                // Rows that cannot see the bad key are finite.
                for (i, row) in want.rows().into_iter().enumerate() {
                    let sees = if causal { i >= bad_row } else { bad_row < 7 };
                    assert_eq!(!sees, row.iter().all(|x| x.is_finite()), "{isa} row {i}");
                }
                if causal {
                    assert_eq!(bits(want.slice(s![..1, ..])), bits(v.slice(s![..1, ..])));
                }
                for query_block in 1..=seq {
                    for key_block in [1, 2, 5, seq] {
                        let opts = AttentionOptions {
                            query_block,
                            key_block,
                            ..base.clone()
                        };
                        let got = run_2d::<Exact>(isa, (&q, &k, &v), &opts);
                        assert_eq!(
                            bits(&got),
                            bits(&want),
                            "{isa} causal {causal} bad row {bad_row} qb {query_block} kb {key_block}"
                        );
                    }
                }
            }
        }
    }
}

fn nan_scores_make_their_rows_nan<M: Mode>(isa: Isa) {
    let (seq, dim) = (6, 4);
    let v = hashed_matrix(seq, 3, 3, 2.0);
    // A NaN in query 1: row 1 NaN, the others finite. A NaN in key 0: every row NaN.
    for (in_q, rows_nan) in [(true, vec![1]), (false, (0..seq).collect::<Vec<_>>())] {
        let (mut q, mut k) = (
            hashed_matrix(seq, dim, 1, 2.0),
            hashed_matrix(seq, dim, 2, 2.0),
        );
        if in_q {
            q[[1, 0]] = f32::NAN;
        } else {
            k[[0, 0]] = f32::NAN;
        }
        for causal in [true, false] {
            for query_block in [1, 2, seq] {
                for key_block in 1..=seq {
                    let mut opts = AttentionOptions {
                        query_block,
                        key_block,
                        ..AttentionOptions::default()
                    };
                    opts.causal = causal;
                    let out = run_2d::<M>(isa, (&q, &k, &v), &opts);
                    for (i, row) in out.rows().into_iter().enumerate() {
                        let what = format!(
                            "{} {isa} nan in {} causal {causal} qb {query_block} kb {key_block} row {i}",
                            M::NAME,
                            if in_q { "q" } else { "k" }
                        );
                        if rows_nan.contains(&i) {
                            assert!(row.iter().all(|x| x.is_nan()), "{what}: {row}");
                        } else {
                            assert!(row.iter().all(|x| x.is_finite()), "{what}: {row}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn a_nan_score_makes_its_row_nan_in_both_modes_for_every_block() {
    for isa in Isa::available() {
        nan_scores_make_their_rows_nan::<Exact>(isa);
        nan_scores_make_their_rows_nan::<Fast>(isa);
    }
}
