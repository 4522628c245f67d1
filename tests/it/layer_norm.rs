//! Layer normalisation: the canonical order written out, identity across ISAs and threads,
//! accuracy against f64, errors.

use crate::common::*;
use activation_kernels::{Error, Exact, Isa, Session};
use ndarray::{Array1, Array2, Array3, s};

#[test]
fn exact_layer_norm_follows_the_canonical_order_on_every_isa_and_thread_count() {
    let mut rng = Rng(11);
    for n in [1usize, 2, 15, 16, 17, 31, 64, 100, 768, 1001] {
        let rows = 5;
        let x = Array2::from_shape_vec((rows, n), rng.vec(rows * n, -3.0, 5.0)).unwrap();
        let g = Array1::from(rng.vec(n, 0.5, 1.5));
        let b = Array1::from(rng.vec(n, -0.5, 0.5));
        let want: Vec<u32> = x
            .rows()
            .into_iter()
            .flat_map(|r| {
                layer_norm_reference(
                    r.as_slice().unwrap(),
                    g.as_slice().unwrap(),
                    b.as_slice().unwrap(),
                    1e-5,
                )
            })
            .map(f32::to_bits)
            .collect();
        for isa in Isa::available() {
            for threads in [1, 2, 3] {
                let s = pinned_session::<Exact>(isa, threads);
                let mut y = x.clone();
                s.layer_norm(&mut y, &g, &b, 1e-5).unwrap();
                assert_eq!(
                    y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    want,
                    "n {n} {isa} {threads}"
                );
                // The same rows as a strided view (every other row of a taller array).
                let mut tall = Array3::zeros((rows, 2, n));
                tall.slice_mut(s![.., 0, ..]).assign(&x);
                s.layer_norm(&mut tall.slice_mut(s![.., 0, ..]), &g, &b, 1e-5)
                    .unwrap();
                assert_eq!(
                    tall.slice(s![.., 0, ..])
                        .iter()
                        .map(|v| v.to_bits())
                        .collect::<Vec<_>>(),
                    want
                );
            }
        }
    }
}

#[test]
fn layer_norm_is_accurate_in_both_modes() {
    let mut rng = Rng(12);
    let n = 768;
    let x = Array2::from_shape_vec((8, n), rng.vec(8 * n, -4.0, 6.0)).unwrap();
    let g = Array1::from(rng.vec(n, 0.5, 1.5));
    let b = Array1::from(rng.vec(n, -0.5, 0.5));
    let mut ye = x.clone();
    Session::exact().layer_norm(&mut ye, &g, &b, 1e-5).unwrap();
    let mut yf = x.clone();
    Session::fast().layer_norm(&mut yf, &g, &b, 1e-5).unwrap();
    for (r, row) in x.rows().into_iter().enumerate() {
        let mean: f64 = row.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64;
        let var: f64 = row
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / n as f64;
        let sd = (var + 1e-5).sqrt();
        for j in 0..n {
            let want = (f64::from(row[j]) - mean) / sd * f64::from(g[j]) + f64::from(b[j]);
            // The output magnitude is a few units; the mean and variance carry n/16 + 4 roundings.
            assert!((f64::from(ye[[r, j]]) - want).abs() < 2e-6, "exact {r},{j}");
            assert!((f64::from(yf[[r, j]]) - want).abs() < 2e-6, "fast {r},{j}");
        }
    }
    let bad = Array1::<f32>::zeros(n + 1);
    let mut y = x.clone();
    assert!(matches!(
        Session::exact().layer_norm(&mut y, &bad, &b, 1e-5),
        Err(Error::ShapeMismatch { .. })
    ));
}

/// `((x - mean) / sqrt(var + eps)) * g + b` in f64. The mean is corrected once by the mean of
/// the differences: a plain f64 sum of 100,000 values near `1e6` is itself `1e-5` off.
fn reference_f64(x: &[f32], g: &[f32], b: &[f32], eps: f32) -> Vec<f64> {
    let n = x.len() as f64;
    let mean = x.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
    let mean = mean + x.iter().map(|&v| f64::from(v) - mean).sum::<f64>() / n;
    let var = x
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / n;
    let sd = (var + f64::from(eps)).sqrt();
    x.iter()
        .zip(g)
        .zip(b)
        .map(|((&x, &g), &b)| (f64::from(x) - mean) / sd * f64::from(g) + f64::from(b))
        .collect()
}

/// The layer norm of the one-row `x` in exact and in fast mode, on `isa` with `threads`.
fn both_modes(
    x: &Array2<f32>,
    g: &Array1<f32>,
    b: &Array1<f32>,
    eps: f32,
    isa: Isa,
    threads: usize,
) -> (Array2<f32>, Array2<f32>) {
    let exact = pinned_session::<Exact>(isa, threads)
        .layer_norm_owned(x, g, b, eps)
        .unwrap();
    let fast = pinned_session::<activation_kernels::Fast>(isa, threads)
        .layer_norm_owned(x, g, b, eps)
        .unwrap();
    (exact, fast)
}

#[test]
fn rows_whose_sums_overflow_or_squares_underflow_are_normalised_right() {
    let mut rng = Rng(13);
    let mut rows: Vec<(&str, Vec<f32>, f32)> = Vec::new();
    for n in [2usize, 17, 64, 1000] {
        let sign = |i: usize| if i.is_multiple_of(2) { 1.0 } else { -1.0 };
        let big: Vec<f32> = (0..n)
            .map(|i| sign(i) * rng.uniform(0.5, 1.0) * 1e18)
            .collect();
        rows.push(("+-1e18", big, 1e-5));
        let huge: Vec<f32> = (0..n)
            .map(|i| sign(i / 3) * rng.uniform(0.2, 1.0) * 3.4e38)
            .collect();
        rows.push(("+-3e38", huge, 1e-5));
        let mut one_huge: Vec<f32> = rng.vec(n, -2.0, 2.0);
        one_huge[n / 2] = 3e38;
        rows.push(("one 3e38 among small", one_huge, 1e-5));
        let tiny: Vec<f32> = (0..n)
            .map(|_| {
                let r = rng.next_u64();
                let v = f32::from_bits((r % 0x0010_0000) as u32);
                if r >> 63 == 0 { v } else { -v }
            })
            .collect();
        rows.push(("subnormals, eps 0", tiny.clone(), 0.0));
        rows.push(("subnormals, eps 1e-30", tiny, 1e-30));
        let small: Vec<f32> = rng.vec(n, -1.0, 1.0).iter().map(|v| v * 1e-25).collect();
        rows.push(("1e-25, eps 0", small, 0.0));
        rows.push(("constant 1e30", vec![1e30; n], 1e-5));
        // An unscaled row of equal values: its mean's rounding (up to about 2e-5 of sqrt(eps)
        // at n = 1000) is taken out by the two-float mean, as at a scale.
        rows.push(("constant 0.1", vec![0.1; n], 1e-5));
    }
    let tol = 1e-5;
    for (what, x, eps) in rows {
        let n = x.len();
        let g = Array1::from(rng.vec(n, 0.5, 1.5));
        let b = Array1::from(rng.vec(n, -0.5, 0.5));
        let want = reference_f64(&x, g.as_slice().unwrap(), b.as_slice().unwrap(), eps);
        let xa = Array2::from_shape_vec((1, n), x.clone()).unwrap();
        let mut first: Option<Vec<u32>> = None;
        for isa in Isa::available() {
            for threads in [1, 2] {
                let (y, yf) = both_modes(&xa, &g, &b, eps, isa, threads);
                for (j, (&y, &w)) in y.iter().zip(&want).enumerate() {
                    assert!(
                        (f64::from(y) - w).abs() <= tol * w.abs().max(1.0),
                        "{what} n {n} {isa}: y[{j}] = {y} want {w}"
                    );
                }
                let bits = bits(&y);
                match &first {
                    None => first = Some(bits),
                    Some(f) => assert_eq!(f, &bits, "{what} n {n} {isa} {threads}"),
                }
                for (j, (&y, &w)) in yf.iter().zip(&want).enumerate() {
                    assert!(
                        (f64::from(y) - w).abs() <= tol * w.abs().max(1.0),
                        "fast {what} n {n} {isa}: y[{j}] = {y} want {w}"
                    );
                }
            }
        }
    }
}

/// A row whose offset is large beside its spread: an f32 mean is the true mean rounded (and on
/// a long row, after thousands of rounded additions, far from it: on `1e6 + u` at n = 100,000
/// the canonical sum puts it tens of units off, which left every output near 1 where the
/// truth is spread over [-1.7, 1.7]). The mean is carried as two floats there, so the outputs
/// keep the accuracy of an ordinary row, in both modes, with the bits of the reference written
/// out, the same on every instruction set and thread count.
#[test]
fn a_large_offset_beside_a_small_spread_does_not_swamp_the_row() {
    let mut rng = Rng(14);
    let mut rows: Vec<(&str, Vec<f32>)> = Vec::new();
    for n in [768usize, 16_384, 100_000] {
        let x = rng.vec(n, -1.7, 1.7).iter().map(|u| 1e6 + u).collect();
        rows.push(("1e6 + u", x));
    }
    for n in [2usize, 64, 768] {
        let x = rng.vec(n, -1e-3, 1e-3).iter().map(|u| 1e4 + u).collect();
        rows.push(("1e4 + 1e-3 u", x));
    }
    let x = rng.vec(768, -1.0, 1.0).iter().map(|u| 1e3 + u).collect();
    rows.push(("1e3 + u", x));
    for (what, x) in rows {
        let n = x.len();
        let g = Array1::from(rng.vec(n, 0.5, 1.5));
        let b = Array1::from(rng.vec(n, -0.5, 0.5));
        let (gs, bs) = (g.as_slice().unwrap(), b.as_slice().unwrap());
        // eps 0: the spread of `1e4 + 1e-3 u` is below 1e-5's square root.
        let eps = 0.0;
        let want = reference_f64(&x, gs, bs, eps);
        let exact_bits = bits(&layer_norm_reference(&x, gs, bs, eps));
        let xa = Array2::from_shape_vec((1, n), x).unwrap();
        let mut worst = [0f64; 2];
        for isa in Isa::available() {
            for threads in [1, 2] {
                let (y, yf) = both_modes(&xa, &g, &b, eps, isa, threads);
                assert_eq!(bits(&y), exact_bits, "{what} n {n} {isa} {threads}");
                for (m, y) in [&y, &yf].into_iter().enumerate() {
                    for (&y, &w) in y.iter().zip(&want) {
                        worst[m] = worst[m].max((f64::from(y) - w).abs());
                    }
                }
            }
        }
        // Outputs within a few units, so an ordinary row's error: 2e-6 (the test above) up to
        // 16,384 elements; past that the canonical sum of the squares itself grows (a partial
        // of 6,250 terms near 6,000 rounds at 2^-11, and the 55 values of `1e6 + u` in f32 round
        // alike): 5.5e-6 measured at 100,000. Before the two-float mean: 0.01 at 768, 5 at
        // 100,000.
        let tol = 2e-6 * (n as f64 / 16_384.0).max(1.0);
        assert!(worst[0] < tol, "{what} n {n}: exact error {}", worst[0]);
        assert!(worst[1] < tol, "{what} n {n}: fast error {}", worst[1]);
    }
}

/// Fast mode runs in the caller's floating-point environment. Under round toward zero a sum
/// that overflows stops at `f32::MAX` instead of infinity: the row must still take the scaled
/// path, not be normalised by a variance that saturated (which gave outputs near 1e19).
#[test]
fn fast_layer_norm_finds_an_overflowing_row_under_round_toward_zero() {
    let x = ndarray::array![[3e38f32, 1.0, 2.0, 3.0]];
    let (g, b) = (Array1::<f32>::ones(4), Array1::<f32>::zeros(4));
    let want = reference_f64(
        x.as_slice().unwrap(),
        g.as_slice().unwrap(),
        b.as_slice().unwrap(),
        0.0,
    );
    for isa in Isa::available() {
        let s = pinned_session::<activation_kernels::Fast>(isa, 1);
        let y = with_fp_control(FP_TOWARD_ZERO, || {
            s.layer_norm_owned(&x, &g, &b, 0.0).unwrap()
        });
        for (&y, &w) in y.iter().zip(&want) {
            assert!((f64::from(y) - w).abs() < 1e-5, "{isa}: {y} against {w}");
        }
    }
}
