//! Layer normalisation: the canonical order written out, identity across ISAs and threads,
//! accuracy against f64, errors.

use crate::common::*;
use activation_kernels::{Error, Exact, Isa, Session};
use ndarray::{Array1, Array2, Array3, s};

fn canonical(v: impl Iterator<Item = f32>) -> f32 {
    let mut p = [0f32; 16];
    for (i, x) in v.enumerate() {
        p[i % 16] += x;
    }
    for half in [8, 4, 2, 1] {
        for j in 0..half {
            p[j] += p[j + half];
        }
    }
    p[0]
}

fn reference_row(x: &[f32], g: &[f32], b: &[f32], eps: f32) -> Vec<f32> {
    let n = x.len() as f32;
    let mean = canonical(x.iter().copied()) / n;
    let var = canonical(x.iter().map(|&v| (v - mean) * (v - mean))) / n;
    let sd = (var + eps).sqrt();
    x.iter()
        .zip(g)
        .zip(b)
        .map(|((&x, &g), &b)| (x - mean) / sd * g + b)
        .collect()
}

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
                reference_row(
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
