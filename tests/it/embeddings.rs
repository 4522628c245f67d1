//! The library pieces of sentence embeddings: varlen attention (a row's bits are those of its
//! sequence alone), embedding gather, masked mean pooling (the canonical order written out, the
//! same bits padded or packed) and L2 normalisation, on every ISA and thread count.

use crate::common::*;
use activation_kernels::{AttentionOptions, Error, Exact, Fast, Isa, Mask, Mode, Session};
use ndarray::{Array2, Array3, Array4, ArrayView2, array, s};

/// The lengths of a mixed batch: empty, one token, around a register and a query block.
const LENGTHS: [usize; 7] = [5, 0, 1, 17, 70, 3, 33];

fn offsets_of(lengths: &[usize]) -> Vec<usize> {
    let mut o = vec![0];
    for &n in lengths {
        o.push(o.last().unwrap() + n);
    }
    o
}

/// Attention on one sequence alone, as a `[1, heads, n, dim]` batch through
/// `attention_into`, returned as packed rows `[n, heads * v_dim]`.
fn alone<M: Mode>(
    session: &Session<M>,
    (q, k, v): (ArrayView2<f32>, ArrayView2<f32>, ArrayView2<f32>),
    heads: usize,
    kv_heads: usize,
    opts: &AttentionOptions,
) -> Array2<f32> {
    let n = q.nrows();
    let (hd, vd) = (q.ncols() / heads, v.ncols() / kv_heads);
    let split = |x: ArrayView2<f32>, h: usize, d: usize| {
        Array4::from_shape_fn((1, h, n, d), |(_, h, i, j)| x[[i, h * d + j]])
    };
    let (q4, k4, v4) = (
        split(q, heads, hd),
        split(k, kv_heads, hd),
        split(v, kv_heads, vd),
    );
    let mut out = Array4::zeros((1, heads, n, vd));
    session
        .attention_into(&q4, &k4, &v4, &mut out, opts)
        .unwrap();
    Array2::from_shape_fn((n, heads * vd), |(i, c)| out[[0, c / vd, i, c % vd]])
}

fn varlen_matches_each_sequence_alone<M: Mode>() {
    let offsets = offsets_of(&LENGTHS);
    let total = *offsets.last().unwrap();
    for (heads, kv_heads, hd, vd) in [(4, 4, 8, 8), (4, 2, 5, 3)] {
        let qkv = hashed_matrix(total, (heads + kv_heads) * hd + kv_heads * vd, 7, 2.0);
        let (qc, kc) = (heads * hd, kv_heads * hd);
        let q = qkv.slice(s![.., ..qc]);
        let k = qkv.slice(s![.., qc..qc + kc]);
        let v = qkv.slice(s![.., qc + kc..]);
        for opts in [
            AttentionOptions::default(),
            AttentionOptions::default().causal().with_scale(0.3),
            AttentionOptions {
                query_block: 16,
                key_block: 8,
                ..Default::default()
            },
        ] {
            let reference = pinned_session::<M>(Isa::Scalar, 1);
            let want: Vec<Array2<f32>> = offsets
                .windows(2)
                .map(|w| {
                    let r = w[0]..w[1];
                    let parts = (
                        q.slice(s![r.clone(), ..]),
                        k.slice(s![r.clone(), ..]),
                        v.slice(s![r, ..]),
                    );
                    alone(&reference, parts, heads, kv_heads, &opts)
                })
                .collect();
            for isa in Isa::available() {
                for threads in [1, 2] {
                    let session = pinned_session::<M>(isa, threads);
                    let out = session
                        .varlen_attention(&q, &k, &v, &offsets, heads, &opts)
                        .unwrap();
                    for (w, want) in offsets.windows(2).zip(&want) {
                        let got = out.slice(s![w[0]..w[1], ..]);
                        if M::FAST && isa != Isa::Scalar {
                            // Fast mode promises its bits on one ISA only.
                            let want = alone(
                                &session,
                                (
                                    q.slice(s![w[0]..w[1], ..]),
                                    k.slice(s![w[0]..w[1], ..]),
                                    v.slice(s![w[0]..w[1], ..]),
                                ),
                                heads,
                                kv_heads,
                                &opts,
                            );
                            assert_eq!(bits(got), bits(&want), "{isa} {threads} {w:?}");
                        } else {
                            assert_eq!(bits(got), bits(want), "{isa} {threads} {w:?}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn exact_varlen_attention_gives_each_row_the_bits_of_its_sequence_alone() {
    varlen_matches_each_sequence_alone::<Exact>();
}

#[test]
fn fast_varlen_attention_gives_each_row_the_bits_of_its_sequence_alone() {
    varlen_matches_each_sequence_alone::<Fast>();
}

/// Against an f64 softmax attention per sequence and head: a row never sees another sequence.
#[test]
fn varlen_attention_is_accurate_and_stays_within_each_sequence() {
    let offsets = offsets_of(&[3, 9, 1]);
    let (heads, hd) = (2, 4);
    let total = 13;
    let q = hashed_matrix(total, heads * hd, 1, 1.5);
    let k = hashed_matrix(total, heads * hd, 2, 1.5);
    let v = hashed_matrix(total, heads * hd, 3, 1.5);
    let scale = 1.0 / (hd as f64).sqrt();
    for out in [
        Session::exact()
            .varlen_attention(&q, &k, &v, &offsets, heads, &AttentionOptions::default())
            .unwrap(),
        Session::fast()
            .varlen_attention(&q, &k, &v, &offsets, heads, &AttentionOptions::default())
            .unwrap(),
    ] {
        for w in offsets.windows(2) {
            for i in w[0]..w[1] {
                for h in 0..heads {
                    let c = h * hd..(h + 1) * hd;
                    let scores: Vec<f64> = (w[0]..w[1])
                        .map(|j| {
                            c.clone()
                                .map(|x| q[[i, x]] as f64 * k[[j, x]] as f64)
                                .sum::<f64>()
                                * scale
                        })
                        .collect();
                    let m = scores.iter().cloned().fold(f64::MIN, f64::max);
                    let e: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
                    let sum: f64 = e.iter().sum();
                    for x in c.clone() {
                        let want: f64 = (w[0]..w[1])
                            .zip(&e)
                            .map(|(j, e)| e / sum * v[[j, x]] as f64)
                            .sum();
                        let got = out[[i, x]] as f64;
                        assert!(
                            (got - want).abs() < 2e-6,
                            "row {i} col {x}: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn varlen_attention_rejects_bad_offsets_heads_and_masks() {
    let s = Session::exact();
    let x = Array2::<f32>::zeros((6, 8));
    let opts = AttentionOptions::default();
    let run = |offsets: &[usize], heads: usize, opts: &AttentionOptions| {
        s.varlen_attention(&x, &x, &x, offsets, heads, opts)
    };
    for bad in [&[][..], &[0], &[1, 6], &[0, 4, 3, 6], &[0, 5], &[0, 7]] {
        assert!(
            matches!(run(bad, 2, &opts), Err(Error::InvalidArgument(_))),
            "{bad:?}"
        );
    }
    assert!(run(&[0, 6], 3, &opts).is_err());
    assert!(run(&[0, 6], 0, &opts).is_err());
    let keep = Array2::from_elem((6, 6), true);
    let masked = AttentionOptions::default().with_mask(Mask::Keep(keep.view().into_dyn()));
    assert!(run(&[0, 6], 2, &masked).is_err());
    let lengths = [6];
    assert!(
        run(
            &[0, 6],
            2,
            &AttentionOptions::default().with_key_lengths(&lengths)
        )
        .is_err()
    );
    let mut small = Array2::zeros((6, 4));
    assert!(matches!(
        s.varlen_attention_into(&x, &x, &x, &mut small, &[0, 6], 2, &opts),
        Err(Error::ShapeMismatch { .. })
    ));
    assert!(run(&[0, 0, 6, 6], 2, &opts).is_ok());
    // A batch of no sequence: offsets `[0]` over no rows, an empty output.
    let empty = Array2::<f32>::zeros((0, 8));
    let out = s.varlen_attention(&empty, &empty, &empty, &[0], 2, &opts);
    assert_eq!(out.unwrap().dim(), (0, 8));
}

#[test]
fn embedding_sum_adds_the_rows_left_to_right_and_rejects_ids_out_of_range() {
    let mut rng = Rng(5);
    let word = Array2::from_shape_vec((10, 7), rng.vec(70, -1.0, 1.0)).unwrap();
    let types = Array2::from_shape_vec((2, 7), rng.vec(14, -1.0, 1.0)).unwrap();
    let pos = Array2::from_shape_vec((6, 7), rng.vec(42, -1.0, 1.0)).unwrap();
    let (ids, type_ids, positions) = ([9u32, 0, 3, 3], [0u32, 1, 0, 1], [0u32, 1, 2, 5]);
    let s = Session::exact();
    let got = s
        .embedding_sum(&[(&word, &ids), (&types, &type_ids), (&pos, &positions)])
        .unwrap();
    for i in 0..4 {
        for j in 0..7 {
            let want = word[[ids[i] as usize, j]]
                + types[[type_ids[i] as usize, j]]
                + pos[[positions[i] as usize, j]];
            assert_eq!(got[[i, j]].to_bits(), want.to_bits());
        }
    }
    // The in-place and gather forms compose to the same bits.
    let mut x = s.gather_rows(&word, &ids).unwrap();
    s.add_gathered_rows(&mut x, &types, &type_ids).unwrap();
    s.add_gathered_rows(&mut x, &pos, &positions).unwrap();
    assert_eq!(bits(&x), bits(&got));
    // Errors: an id past the table (x unchanged), ids of the wrong count, a table too narrow.
    let before = x.clone();
    let err = s
        .add_gathered_rows(&mut x, &pos, &[0, 1, 6, 2])
        .unwrap_err();
    assert!(err.to_string().contains("id 6 at position 2"), "{err}");
    assert_eq!(bits(&x), bits(&before));
    assert!(s.gather_rows(&word, &[10]).is_err());
    assert!(s.add_gathered_rows(&mut x, &pos, &[0, 1]).is_err());
    assert!(
        s.add_gathered_rows(&mut x, &word.slice(s![.., ..6]), &ids)
            .is_err()
    );
    assert!(s.embedding_sum(&[]).is_err());
    let mut out = Array2::zeros((4, 7));
    s.gather_rows_into(&word, &ids, &mut out).unwrap();
    assert_eq!(out.row(0), word.row(9));
}

/// The mean of each column in the canonical order, written out.
fn mean_reference(rows: &[Vec<f32>], d: usize) -> Vec<f32> {
    if rows.is_empty() {
        return vec![0.0; d];
    }
    (0..d)
        .map(|j| canonical_sum(rows.iter().map(|r| r[j])) / rows.len() as f32)
        .collect()
}

#[test]
fn mean_pooling_follows_the_canonical_order_and_gives_the_same_bits_padded_or_packed() {
    let mut rng = Rng(9);
    let d = 37;
    let offsets = offsets_of(&LENGTHS);
    let total = *offsets.last().unwrap();
    let x = Array2::from_shape_vec((total, d), rng.vec(total * d, -3.0, 5.0)).unwrap();
    let want: Vec<Vec<f32>> = offsets
        .windows(2)
        .map(|w| {
            let rows: Vec<Vec<f32>> = (w[0]..w[1]).map(|i| x.row(i).to_vec()).collect();
            mean_reference(&rows, d)
        })
        .collect();
    // The padded batch: each sequence's tokens scattered over `seq` positions (padding first,
    // between and after), the padding full of values that must not count.
    let seq = 80;
    let batch = LENGTHS.len();
    let mut padded = Array3::from_elem((batch, seq, d), 1e30f32);
    let mut mask = Array2::from_elem((batch, seq), false);
    for (b, w) in offsets.windows(2).enumerate() {
        for (t, i) in (w[0]..w[1]).enumerate() {
            let at = t * 77 / 70 + b % 3;
            assert!(!mask[[b, at]]);
            mask[[b, at]] = true;
            padded.slice_mut(s![b, at, ..]).assign(&x.row(i));
        }
    }
    for isa in Isa::available() {
        for threads in [1, 2] {
            for (name, packed, pad) in [
                (
                    "exact",
                    pinned_session::<Exact>(isa, threads).mean_pool_varlen(&x, &offsets),
                    pinned_session::<Exact>(isa, threads).mean_pool_padded(&padded, &mask),
                ),
                (
                    "fast",
                    pinned_session::<Fast>(isa, threads).mean_pool_varlen(&x, &offsets),
                    pinned_session::<Fast>(isa, threads).mean_pool_padded(&padded, &mask),
                ),
            ] {
                let (packed, pad) = (packed.unwrap(), pad.unwrap());
                for (s, want) in want.iter().enumerate() {
                    assert_eq!(bits(packed.row(s)), bits(want), "{name} {isa} seq {s}");
                    assert_eq!(bits(pad.row(s)), bits(want), "{name} {isa} seq {s}");
                }
            }
        }
    }
    // Column-major input (a transposed view) gives the same bits.
    let xt = x.t().to_owned();
    let packed = Session::exact()
        .mean_pool_varlen(&xt.t(), &offsets)
        .unwrap();
    assert_eq!(bits(packed.row(0)), bits(&want[0]));
}

#[test]
fn mean_pooling_rejects_bad_shapes_and_offsets() {
    let s = Session::exact();
    let x = Array2::<f32>::ones((5, 3));
    assert!(s.mean_pool_varlen(&x, &[0, 4]).is_err());
    assert!(s.mean_pool_varlen(&x, &[0, 3, 2, 5]).is_err());
    let mut out = Array2::zeros((2, 4));
    assert!(matches!(
        s.mean_pool_varlen_into(&x, &[0, 2, 5], &mut out),
        Err(Error::ShapeMismatch { .. })
    ));
    let x3 = Array3::<f32>::ones((2, 4, 3));
    assert!(
        s.mean_pool_padded(&x3, &Array2::from_elem((2, 3), true))
            .is_err()
    );
    let none = s
        .mean_pool_padded(&x3, &Array2::from_elem((2, 4), false))
        .unwrap();
    assert!(none.iter().all(|v| v.to_bits() == 0));
    // A batch of no sequence, packed (offsets `[0]`) as padded: an empty result, not an error.
    let empty = Array2::<f32>::zeros((0, 3));
    assert_eq!(s.mean_pool_varlen(&empty, &[0]).unwrap().dim(), (0, 3));
    let empty3 = Array3::<f32>::zeros((0, 4, 3));
    let padded = s.mean_pool_padded(&empty3, &Array2::from_elem((0, 4), true));
    assert_eq!(padded.unwrap().dim(), (0, 3));
    assert!(s.mean_pool_varlen(&empty, &[]).is_err());
}

#[test]
fn l2_normalisation_is_canonical_accurate_and_the_same_on_every_isa() {
    let mut rng = Rng(3);
    for d in [1usize, 15, 16, 17, 384, 769] {
        let x = Array2::from_shape_vec((4, d), rng.vec(4 * d, -2.0, 3.0)).unwrap();
        let want: Vec<u32> = x
            .rows()
            .into_iter()
            .flat_map(|r| {
                let norm = canonical_sum(r.iter().map(|v| v * v)).sqrt();
                r.iter()
                    .map(move |v| (v / norm.max(1e-12)).to_bits())
                    .collect::<Vec<_>>()
            })
            .collect();
        for isa in Isa::available() {
            for threads in [1, 2] {
                let mut y = x.clone();
                pinned_session::<Exact>(isa, threads)
                    .l2_normalize(&mut y)
                    .unwrap();
                assert_eq!(bits(&y), want, "{isa} {threads} d {d}");
                let mut z = Array2::zeros((4, d));
                pinned_session::<Fast>(isa, threads)
                    .l2_normalize_into(&x, &mut z)
                    .unwrap();
                assert_eq!(bits(&z), want, "fast {isa} {threads} d {d}");
            }
        }
        // Against f64: within 2 ulps of the unit vector.
        for (r, y) in x
            .rows()
            .into_iter()
            .zip(Session::exact().l2_normalize_owned(&x).unwrap().rows())
        {
            let norm = r.iter().map(|&v| v as f64 * v as f64).sum::<f64>().sqrt();
            for (&a, &b) in r.iter().zip(y.iter()) {
                let want = a as f64 / norm;
                assert!(
                    (b as f64 - want).abs() <= 2.5e-7 * want.abs().max(1e-30),
                    "{b} vs {want}"
                );
            }
        }
    }
    // The floor: a tiny row is divided by 1e-12, not by its norm; 16-bit rows round once.
    let tiny = Session::exact()
        .l2_normalize_owned(&array![[3e-14f32, 4e-14]])
        .unwrap();
    assert_eq!(tiny, array![[3e-14f32 / 1e-12, 4e-14 / 1e-12]]);
    let half = array![[half::f16::from_f32(3.0), half::f16::from_f32(4.0)]];
    let y = Session::exact().l2_normalize_owned(&half).unwrap();
    assert_eq!(y[[0, 1]], half::f16::from_f32(0.8));
    assert!(
        Session::exact()
            .l2_normalize(&mut ndarray::arr0(1f32))
            .is_err()
    );
}

/// Residual + LayerNorm in one pass gives the bits of the add, then `layer_norm`, on every ISA
/// and thread count, in f32 and bf16; shapes that differ are errors.
#[test]
fn add_layer_norm_gives_the_bits_of_add_then_layer_norm() {
    let mut rng = Rng(21);
    for d in [1usize, 17, 384] {
        let x = Array2::from_shape_vec((6, d), rng.vec(6 * d, -3.0, 3.0)).unwrap();
        let r = Array2::from_shape_vec((6, d), rng.vec(6 * d, -3.0, 3.0)).unwrap();
        let g = ndarray::Array1::from(rng.vec(d, 0.5, 1.5));
        let b = ndarray::Array1::from(rng.vec(d, -0.5, 0.5));
        for isa in Isa::available() {
            for threads in [1, 2] {
                let s = pinned_session::<Exact>(isa, threads);
                let mut want = &x + &r;
                s.layer_norm(&mut want, &g, &b, 1e-12).unwrap();
                let mut got = x.clone();
                s.add_layer_norm(&mut got, &r, &g, &b, 1e-12).unwrap();
                assert_eq!(bits(&got), bits(&want), "{isa} {threads} d {d}");
                let mut into = Array2::zeros((6, d));
                s.add_layer_norm_into(&x, &r, &mut into, &g, &b, 1e-12)
                    .unwrap();
                assert_eq!(bits(&into), bits(&want));
                let f = pinned_session::<Fast>(isa, threads);
                let mut want = &x + &r;
                f.layer_norm(&mut want, &g, &b, 1e-12).unwrap();
                let got = f.add_layer_norm_owned(&x, &r, &g, &b, 1e-12).unwrap();
                assert_eq!(bits(&got), bits(&want), "fast {isa} {threads} d {d}");
            }
        }
        let xb = x.mapv(half::bf16::from_f32);
        let rb = r.mapv(half::bf16::from_f32);
        let s = Session::exact();
        let mut want = &xb + &rb;
        s.layer_norm(&mut want, &g, &b, 1e-12).unwrap();
        let got = s.add_layer_norm_owned(&xb, &rb, &g, &b, 1e-12).unwrap();
        assert_eq!(want, got);
    }
    let s = Session::exact();
    let x = Array2::<f32>::zeros((2, 3));
    let g = ndarray::Array1::ones(3);
    let b = ndarray::Array1::zeros(3);
    let mut y = x.clone();
    assert!(
        s.add_layer_norm(&mut y, &Array2::zeros((2, 4)), &g, &b, 0.0)
            .is_err()
    );
    assert!(s.add_layer_norm(&mut y, &x, &g, &b, -1.0).is_err());
}
