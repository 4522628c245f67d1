//! Softmax, log-softmax and masked softmax: the canonical order, identity across ISAs, threads
//! and layouts, accuracy against f64, masks, policies and special rows.

use crate::common::*;
use activation_kernels::Mask;
use activation_kernels::{Error, Exact, Fast, Isa, MaskedRow, Mode, Session, exact};
use half::{bf16, f16};
use ndarray::{Array1, Array2, Array3, ArrayD, Axis, IxDyn};

/// The canonical order written out with plain scalar loops: the oracle for exact mode.
fn reference_softmax(row: &[f32], log_form: bool) -> Vec<f32> {
    let mut m = f32::NEG_INFINITY;
    for &x in row {
        if x > m {
            m = x;
        }
    }
    let m = m + 0.0;
    let d: Vec<f32> = row
        .iter()
        .map(|&x| if x == m { 0.0 } else { x - m })
        .collect();
    let e: Vec<f32> = d.iter().map(|&d| exact::exp_nonpositive(d)).collect();
    let mut p = [0f32; 16];
    for (i, &e) in e.iter().enumerate() {
        p[i % 16] += e;
    }
    for half in [8, 4, 2, 1] {
        for j in 0..half {
            p[j] += p[j + half];
        }
    }
    let s = p[0];
    if log_form {
        let ls = exact::log(s);
        d.iter().map(|&d| d - ls).collect()
    } else {
        e.iter().map(|&e| e / s).collect()
    }
}

fn lengths() -> impl Iterator<Item = usize> {
    (0..=70).chain(1000..=1030)
}

#[test]
fn exact_softmax_follows_the_canonical_order_bit_for_bit() {
    let mut rng = Rng(1);
    for n in lengths() {
        let row = rng.vec(n, -30.0, 30.0);
        for log_form in [false, true] {
            let want = reference_softmax(&row, log_form);
            for isa in Isa::available() {
                let s = Session::exact().with_isa(isa).unwrap();
                let mut x = Array1::from(row.clone());
                if log_form {
                    s.log_softmax(&mut x, Axis(0)).unwrap();
                } else {
                    s.softmax(&mut x, Axis(0)).unwrap();
                }
                assert_eq!(bits(&x), bits(&want), "n {n} log {log_form} {isa}");
            }
        }
    }
}

#[test]
fn exact_bits_do_not_depend_on_isa_threads_or_layout() {
    let mut rng = Rng(2);
    for n in lengths().step_by(3) {
        let rows = 9;
        let m = Array2::from_shape_vec((rows, n), rng.vec(rows * n, -20.0, 20.0)).unwrap();
        let mut want = m.clone();
        Session::exact()
            .with_isa(Isa::Scalar)
            .unwrap()
            .with_threads(1)
            .unwrap()
            .softmax(&mut want, Axis(1))
            .unwrap();
        let mut want_log = m.clone();
        Session::exact()
            .with_isa(Isa::Scalar)
            .unwrap()
            .log_softmax(&mut want_log, Axis(1))
            .unwrap();
        let mut want_masked = m.clone();
        Session::exact()
            .masked_softmax(&mut want_masked, 0.3, &Mask::Causal { offset: 2 })
            .unwrap();
        for isa in Isa::available() {
            for threads in [1, 2, 8] {
                let s = pinned_session::<Exact>(isa, threads);
                let mut a = m.clone();
                s.softmax(&mut a, Axis(1)).unwrap();
                assert_eq!(bits(&a), bits(&want), "n {n} {isa} {threads}");
                // The transposed copy, softmax over axis 0 (the strided axis).
                let mut t = m.t().as_standard_layout().to_owned();
                s.softmax(&mut t, Axis(0)).unwrap();
                assert_eq!(bits(t.t()), bits(&want), "transposed n {n} {isa} {threads}");
                // The matrix stored column-major (strided rows; `to_owned` of the transposed
                // view would keep its layout, and the rows would be contiguous again).
                let mut f = m.t().as_standard_layout().to_owned();
                let mut strided = f.view_mut().reversed_axes();
                assert!(n < 2 || !strided.is_standard_layout());
                s.softmax(&mut strided, Axis(1)).unwrap();
                assert_eq!(bits(f.t()), bits(&want));
                // Out of place (read from `m`, no copy of it first): contiguous and strided
                // destinations, and in fast mode the bits of the in-place form.
                let mut d = Array2::zeros(m.dim());
                s.softmax_into(&m, &mut d, Axis(1)).unwrap();
                assert_eq!(bits(&d), bits(&want), "into n {n} {isa} {threads}");
                let mut d = Array2::zeros((n, rows));
                s.softmax_into(&m, &mut d.view_mut().reversed_axes(), Axis(1))
                    .unwrap();
                assert_eq!(bits(d.t()), bits(&want));
                let fast = pinned_session::<Fast>(isa, threads);
                let mut a = m.clone();
                fast.softmax(&mut a, Axis(1)).unwrap();
                assert_eq!(bits(&fast.softmax_owned(&m, Axis(1)).unwrap()), bits(&a));
                let mut d = Array2::zeros(m.dim());
                fast.softmax_into(&m, &mut d, Axis(1)).unwrap();
                assert_eq!(bits(&d), bits(&a), "fast into n {n} {isa} {threads}");
                let mut l = m.clone();
                s.log_softmax(&mut l, Axis(1)).unwrap();
                assert_eq!(bits(&l), bits(&want_log));
                let mut d = Array2::zeros((n, rows));
                s.log_softmax_into(&m, &mut d.view_mut().reversed_axes(), Axis(1))
                    .unwrap();
                assert_eq!(bits(d.t()), bits(&want_log));
                let mut k = m.clone();
                s.masked_softmax(&mut k, 0.3, &Mask::Causal { offset: 2 })
                    .unwrap();
                assert_eq!(bits(&k), bits(&want_masked));
            }
        }
    }
}

/// Contiguous rows along the last axis go through the many-row kernel (one dispatch per block
/// of rows, blocks spread over the threads); any other layout goes row by row. Both give the
/// same bits, in both modes, in place and into another array, with every policy for a fully
/// masked row, on a tensor with NaN rows, fully masked rows, rows holding `+inf`, and rows whose
/// shifted exps flush to zero.
#[test]
fn contiguous_rows_give_the_bits_of_row_by_row() {
    contiguous_rows_equal_row_by_row::<Exact>();
    contiguous_rows_equal_row_by_row::<Fast>();
}

fn contiguous_rows_equal_row_by_row<M: Mode>() {
    let mut rng = Rng(7);
    for n in [1, 5, 16, 33, 100] {
        let rows = 11;
        let mut m = Array2::from_shape_vec((rows, n), rng.vec(rows * n, -30.0, 30.0)).unwrap();
        m[[1, n / 2]] = f32::NAN;
        m.row_mut(3).fill(f32::NEG_INFINITY);
        m[[5, 0]] = f32::INFINITY;
        m[[7, n - 1]] = -200.0;
        for policy in [MaskedRow::Zero, MaskedRow::Uniform, MaskedRow::Nan] {
            for isa in Isa::available() {
                for threads in [1, 2] {
                    let s = pinned_session::<M>(isa, threads).with_masked_row(policy);
                    // Row by row: the same matrix stored column-major, so its rows are
                    // strided.
                    let mut by_row = m.t().as_standard_layout().to_owned();
                    let mut strided = by_row.view_mut().reversed_axes();
                    assert!(n == 1 || !strided.is_standard_layout());
                    s.softmax(&mut strided, Axis(1)).unwrap();
                    let want = bits(by_row.t());
                    let mut a = m.clone();
                    s.softmax(&mut a, Axis(1)).unwrap();
                    let what = format!("{} n {n} {isa} {threads} {policy:?}", M::NAME);
                    assert_eq!(bits(&a), want, "in place, {what}");
                    let mut d = Array2::zeros(m.dim());
                    s.softmax_into(&m, &mut d, Axis(1)).unwrap();
                    assert_eq!(bits(&d), want, "into, {what}");
                }
            }
        }
    }
}

/// Checks every row of `y` against an f64 softmax of `x` with the derived bound, and returns
/// the largest error in units of the bound.
fn check_accuracy(x: &[f32], y: &[f32], exp_ulps: f64, division_roundings: f64) -> f64 {
    let u = 2f64.powi(-24);
    let m = x.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    let d: Vec<f64> = x.iter().map(|&v| f64::from(v) - f64::from(m)).collect();
    let e: Vec<f64> = d.iter().map(|d| d.exp()).collect();
    let s: f64 = e.iter().sum();
    let p: Vec<f64> = e.iter().map(|e| e / s).collect();
    // Relative error of y_i, from: x_i - m rounded once (|d_i| u), the exp (exp_ulps ulps, an
    // ulp being at most 2u relative), the sum (every e_j's error weighted by p_j, plus
    // ceil(n/16) + 4 additions of positive terms) and the normalisation.
    let n = x.len() as f64;
    let weighted: f64 = p
        .iter()
        .zip(&d)
        .map(|(p, d)| p * (d.abs() + 2.0 * exp_ulps))
        .sum();
    let sum_err = weighted + (n / 16.0).ceil() + 4.0;
    let mut worst = 0f64;
    let mut total = 0f64;
    for i in 0..x.len() {
        let bound = u * (d[i].abs() + 2.0 * exp_ulps + sum_err + division_roundings) * 1.0001;
        let rel = (f64::from(y[i]) - p[i]).abs() / p[i];
        if p[i] > 1e-30 {
            assert!(
                rel <= bound,
                "element {i} of {}: rel {rel:e} > bound {bound:e} (p {})",
                x.len(),
                p[i]
            );
            worst = worst.max(rel / bound);
        }
        total += f64::from(y[i]);
    }
    let max_bound = u
        * (d.iter().fold(0f64, |a, d| a.max(d.abs()))
            + 2.0 * exp_ulps
            + sum_err
            + division_roundings);
    assert!(
        (total - 1.0).abs() <= max_bound + n * 2f64.powi(-149),
        "sum {total} off by more than {max_bound:e}"
    );
    worst
}

fn accuracy_for<M: Mode>(exp_ulps: f64, division_roundings: f64) -> f64 {
    let mut rng = Rng(3);
    let mut worst = 0f64;
    for n in [1usize, 2, 3, 17, 64, 100, 1000, 4096] {
        for spread in [1.0f32, 8.0, 40.0] {
            let x = rng.vec(n, -spread, spread);
            let mut y = Array1::from(x.clone());
            Session::<M>::new().softmax(&mut y, Axis(0)).unwrap();
            worst = worst.max(check_accuracy(
                &x,
                y.as_slice().unwrap(),
                exp_ulps,
                division_roundings,
            ));
        }
    }
    worst
}

#[test]
fn exact_softmax_is_within_the_derived_bound_of_f64() {
    let worst = accuracy_for::<Exact>(1.2, 1.0);
    assert!(worst > 0.0);
}

#[test]
fn fast_softmax_is_within_the_derived_bound_of_f64() {
    // The fast exp is 2.3 ulp; the normalisation is a reciprocal and a product (2 roundings).
    let worst = accuracy_for::<Fast>(2.3, 2.0);
    assert!(worst > 0.0);
}

#[test]
fn special_rows_nan_minus_inf_plus_inf_and_fully_masked() {
    let nan = 0x7FC0_0000u32;
    for isa in Isa::available() {
        let s = Session::exact().with_isa(isa).unwrap();
        // A NaN anywhere: the whole row canonical NaN.
        let mut x = Array1::from(vec![1.0, f32::NAN, 2.0, 3.0]);
        s.softmax(&mut x, Axis(0)).unwrap();
        assert!(x.iter().all(|v| v.to_bits() == nan));
        let mut x = Array1::from(vec![1.0, 2.0, f32::from_bits(0xFFC0_0001)]);
        s.log_softmax(&mut x, Axis(0)).unwrap();
        assert!(x.iter().all(|v| v.to_bits() == nan));
        // -inf entries get +0 (log: -inf); the rest as if they were absent.
        let mut x = Array1::from(vec![0.5, f32::NEG_INFINITY, 0.5, f32::NEG_INFINITY]);
        s.softmax(&mut x, Axis(0)).unwrap();
        assert_eq!(bits(&x), bits(&[0.5f32, 0.0, 0.5, 0.0]));
        let mut x = Array1::from(vec![0.5, f32::NEG_INFINITY]);
        s.log_softmax(&mut x, Axis(0)).unwrap();
        assert_eq!(bits(&x), bits(&[0.0f32, f32::NEG_INFINITY]));
        // +inf entries share the mass; finite ones get +0.
        let mut x = Array1::from(vec![f32::INFINITY, 3.0, f32::INFINITY, f32::NEG_INFINITY]);
        s.softmax(&mut x, Axis(0)).unwrap();
        assert_eq!(bits(&x), bits(&[0.5f32, 0.0, 0.5, 0.0]));
        let mut x = Array1::from(vec![f32::INFINITY, 3.0]);
        s.log_softmax(&mut x, Axis(0)).unwrap();
        assert_eq!(bits(&x), bits(&[0.0f32, f32::NEG_INFINITY]));
        // softmax_into (which reads its source instead of a copy) gives the in-place bits on
        // every special row, in both modes, also past the first register.
        let mut long_inf = vec![0.25f32; 20];
        long_inf[13] = f32::INFINITY;
        let mut long_nan = vec![-1.0f32; 20];
        long_nan[17] = f32::NAN;
        let rows = [
            vec![1.0, f32::NAN, 2.0, 3.0],
            vec![0.5, f32::NEG_INFINITY, 0.5, f32::NEG_INFINITY],
            vec![f32::INFINITY, 3.0, f32::INFINITY, f32::NEG_INFINITY],
            vec![f32::NEG_INFINITY; 4],
            long_inf,
            long_nan,
        ];
        for row in rows {
            let src = Array1::from(row);
            for (mode, want, got) in [
                ("exact", s.softmax_owned(&src, Axis(0)), {
                    let mut d = Array1::zeros(src.len());
                    s.softmax_into(&src, &mut d, Axis(0)).map(|()| d)
                }),
                (
                    "fast",
                    Session::fast()
                        .with_isa(isa)
                        .unwrap()
                        .softmax_owned(&src, Axis(0)),
                    {
                        let mut d = Array1::zeros(src.len());
                        let f = Session::fast().with_isa(isa).unwrap();
                        f.softmax_into(&src, &mut d, Axis(0)).map(|()| d)
                    },
                ),
            ] {
                assert_eq!(
                    bits(&got.unwrap()),
                    bits(&want.unwrap()),
                    "{mode} {isa} {src}"
                );
            }
        }
        // Fully masked rows, each policy, both forms.
        for (policy, soft, log) in [
            (MaskedRow::Zero, 0.0f32, f32::NEG_INFINITY),
            (MaskedRow::Uniform, 0.25, -exact::log(4.0)),
            (MaskedRow::Nan, f32::NAN, f32::NAN),
        ] {
            let s = s.clone().with_masked_row(policy);
            let mut x = Array1::from(vec![f32::NEG_INFINITY; 4]);
            s.softmax(&mut x, Axis(0)).unwrap();
            let want = if soft.is_nan() { nan } else { soft.to_bits() };
            assert!(x.iter().all(|v| v.to_bits() == want), "{policy:?}: {x}");
            let mut x = Array1::from(vec![f32::NEG_INFINITY; 4]);
            s.log_softmax(&mut x, Axis(0)).unwrap();
            let want = if log.is_nan() { nan } else { log.to_bits() };
            assert!(x.iter().all(|v| v.to_bits() == want), "{policy:?} log: {x}");
            // Through a mask: a keep-mask that keeps nothing in row 1.
            let mut sc = Array2::<f32>::ones((2, 4));
            let keep = Array2::from_shape_fn((2, 4), |(i, _)| i == 0).into_dyn();
            s.masked_softmax(&mut sc, 1.0, &Mask::Keep(keep.view()))
                .unwrap();
            assert!(sc.row(0).iter().all(|&v| v == 0.25));
            assert!(
                sc.row(1)
                    .iter()
                    .all(|v| v.to_bits() == if soft.is_nan() { nan } else { soft.to_bits() })
            );
        }
    }
    // Fast mode: the same special rows.
    let f = Session::fast();
    let mut x = Array1::from(vec![f32::INFINITY, 3.0, f32::INFINITY]);
    f.softmax(&mut x, Axis(0)).unwrap();
    assert_eq!(bits(&x), bits(&[0.5f32, 0.0, 0.5]));
    let mut x = Array1::from(vec![f32::NEG_INFINITY; 5]);
    f.softmax(&mut x, Axis(0)).unwrap();
    assert!(x.iter().all(|&v| v.to_bits() == 0));
}

/// The masked softmax of `scores` equals a plain softmax of the scaled scores with masked
/// entries set to -inf by hand.
fn check_mask(
    s: &Session<Exact>,
    scores: &Array3<f32>,
    scale: f32,
    mask: &Mask<'_>,
    masked: impl Fn(usize, usize, usize) -> Option<f32>,
) {
    let mut got = scores.clone();
    s.masked_softmax(&mut got, scale, mask).unwrap();
    let mut want = scores.mapv(|v| v * scale);
    for ((b, i, j), v) in want.indexed_iter_mut() {
        if let Some(r) = masked(b, i, j) {
            *v = if r == f32::NEG_INFINITY { r } else { *v + r };
        }
    }
    s.softmax(&mut want, Axis(2)).unwrap();
    assert_eq!(bits(&got), bits(&want));
}

#[test]
fn masks_causal_boolean_additive_and_broadcasting() {
    let mut rng = Rng(4);
    let s = Session::exact();
    let (b, q, k) = (3, 5, 9);
    let scores = Array3::from_shape_vec((b, q, k), rng.vec(b * q * k, -4.0, 4.0)).unwrap();
    for offset in [0usize, 1, 4, 20] {
        check_mask(&s, &scores, 0.7, &Mask::Causal { offset }, |_, i, j| {
            (j > i + offset).then_some(f32::NEG_INFINITY)
        });
    }
    // A boolean [q, k] mask broadcast over the batch, and a full [b, q, k] one.
    let keep2 = Array2::from_shape_fn((q, k), |(i, j)| (i + j) % 3 != 0);
    check_mask(
        &s,
        &scores,
        0.5,
        &Mask::Keep(keep2.view().into_dyn()),
        |_, i, j| (!keep2[[i, j]]).then_some(f32::NEG_INFINITY),
    );
    let keep3 = Array3::from_shape_fn((b, q, k), |(bb, i, j)| (bb + i * j) % 4 != 1);
    check_mask(
        &s,
        &scores,
        0.5,
        &Mask::Keep(keep3.view().into_dyn()),
        |bb, i, j| (!keep3[[bb, i, j]]).then_some(f32::NEG_INFINITY),
    );
    // A key-padding mask [b, 1, k] broadcast over the query rows.
    let pad = Array3::from_shape_fn((b, 1, k), |(bb, _, j)| j < k - bb * 2);
    check_mask(
        &s,
        &scores,
        1.0,
        &Mask::Keep(pad.view().into_dyn()),
        |bb, _, j| (!pad[[bb, 0, j]]).then_some(f32::NEG_INFINITY),
    );
    // Additive: one [k] row broadcast everywhere, with -inf entries.
    let add = Array1::from_shape_fn(k, |j| {
        if j == 3 {
            f32::NEG_INFINITY
        } else {
            j as f32 * 0.25 - 1.0
        }
    });
    check_mask(
        &s,
        &scores,
        0.9,
        &Mask::Additive(add.view().into_dyn()),
        |_, _, j| Some(add[j]),
    );
    // 4-D scores [batch, heads, q, k] with a causal mask.
    let mut s4 =
        ArrayD::from_shape_vec(IxDyn(&[2, 3, q, k]), rng.vec(2 * 3 * q * k, -3.0, 3.0)).unwrap();
    let mut want = s4.clone();
    s.masked_softmax(&mut s4, 1.0, &Mask::Causal { offset: 4 })
        .unwrap();
    for mut m in want
        .lanes_mut(Axis(3))
        .into_iter()
        .enumerate()
        .map(|(r, l)| (r % q, l))
        .map(|(i, mut l)| {
            l.iter_mut()
                .skip(i + 5)
                .for_each(|v| *v = f32::NEG_INFINITY);
            l
        })
    {
        s.softmax(&mut m, Axis(0)).unwrap();
    }
    assert_eq!(bits(&s4), bits(&want));
    // Shape errors.
    let bad = Array2::from_elem((q + 1, k), true);
    let mut sc = scores.clone();
    let e = s
        .masked_softmax(&mut sc, 1.0, &Mask::Keep(bad.view().into_dyn()))
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    let add_bad = Array1::<f32>::zeros(k + 2);
    assert!(
        s.masked_softmax(&mut sc, 1.0, &Mask::Additive(add_bad.view().into_dyn()))
            .is_err()
    );
    let mut v = Array1::<f32>::zeros(4);
    assert!(matches!(
        s.masked_softmax(&mut v, 1.0, &Mask::None),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        s.softmax(&mut v, Axis(1)),
        Err(Error::AxisOutOfRange { axis: 1, ndim: 1 })
    ));
    let mut d = Array1::<f32>::zeros(5);
    assert!(matches!(
        s.softmax_into(&v, &mut d, Axis(0)),
        Err(Error::ShapeMismatch { .. })
    ));
}

#[test]
fn half_precision_rows_of_4096_sum_to_one_within_their_rounding() {
    let mut rng = Rng(5);
    let x = rng.vec(4096, -6.0, 6.0);
    for (name, unit, tiny) in [
        ("f16", 2f64.powi(-11), 2f64.powi(-25)),
        ("bf16", 2f64.powi(-8), 0.0),
    ] {
        for mode in ["exact", "fast"] {
            let total: f64 = if name == "f16" {
                let mut a = Array1::from_iter(x.iter().map(|&v| f16::from_f32(v)));
                if mode == "exact" {
                    Session::exact().softmax(&mut a, Axis(0))
                } else {
                    Session::fast().softmax(&mut a, Axis(0))
                }
                .unwrap();
                a.iter().map(|v| f64::from(v.to_f32())).sum()
            } else {
                let mut a = Array1::from_iter(x.iter().map(|&v| bf16::from_f32(v)));
                if mode == "exact" {
                    Session::exact().softmax(&mut a, Axis(0))
                } else {
                    Session::fast().softmax(&mut a, Axis(0))
                }
                .unwrap();
                a.iter().map(|v| f64::from(v.to_f32())).sum()
            };
            // Each output rounded once (relative `unit`, or half the subnormal step below the
            // normal range of f16), plus the f32 softmax's own error (far smaller).
            let bound = unit + 4096.0 * tiny + 1e-5;
            assert!((total - 1.0).abs() <= bound, "{name} {mode}: sum {total}");
        }
    }
}
