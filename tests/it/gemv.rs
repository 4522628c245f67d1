//! Tests of the one-row (GEMV) path of the GEMM through the public API (moved out of `src/gemm/`, which knows no session).

use ndarray::{Array2, ShapeBuilder, s};

use crate::common::{bits, hashed_mixed_matrix, pinned_session};
use activation_kernels::epilogue::{Bias, Identity};
use activation_kernels::{Exact, Fast, Func, Isa, Mode};

/// The plain loop, `k` increasing from `+0`.
fn reference<M: Mode>(a: &Array2<f32>, b: &Array2<f32>) -> Vec<u32> {
    (0..b.ncols())
        .map(|j| {
            let mut c = 0.0f32;
            for p in 0..a.ncols() {
                c = if M::FAST {
                    a[[0, p]].mul_add(b[[p, j]], c)
                } else {
                    c + a[[0, p]] * b[[p, j]]
                };
            }
            c.to_bits()
        })
        .collect()
}

fn one_row<M: Mode>(isa: Isa, threads: usize) {
    let s = pinned_session::<M>(isa, threads);
    for (k, n) in [
        (1, 1),
        (13, 7),
        (33, 129),
        (70, 1100),
        (0, 9),
        (4099, 37),
        (300, 65),
    ] {
        let a = hashed_mixed_matrix(1, k, 1);
        let b = hashed_mixed_matrix(k, n, 2);
        let want = reference::<M>(&a, &b);
        let packed = s.pack(&b).unwrap();
        let mut wide = Array2::from_elem((k, n + 3), f32::NAN);
        wide.slice_mut(s![.., ..n]).assign(&b);
        let mut f = Array2::zeros((k, n).f());
        f.assign(&b);
        let what = format!("{} {isa} {threads}t 1x{k}x{n}", M::NAME);
        assert_eq!(
            bits(&s.matmul_owned(&a, &packed, &Identity).unwrap()),
            want,
            "{what}"
        );
        assert_eq!(
            bits(&s.matmul_owned(&a, &b, &Identity).unwrap()),
            want,
            "{what}"
        );
        let view = wide.slice(s![.., ..n]);
        assert_eq!(
            bits(&s.matmul_owned(&a, &view, &Identity).unwrap()),
            want,
            "{what}"
        );
        assert_eq!(
            bits(&s.matmul_owned(&a, &f, &Identity).unwrap()),
            want,
            "{what}"
        );
        // Columns contiguous but not adjacent: the transpose of a wider C-order matrix, as
        // attention's K^T is a view of K (packed a few panels at a time).
        let mut kt = Array2::from_elem((n, k + 5), f32::NAN);
        kt.slice_mut(s![.., ..k]).assign(&b.t());
        let kt = kt.slice(s![.., ..k]);
        assert_eq!(
            bits(&s.matmul_owned(&a, &kt.t(), &Identity).unwrap()),
            want,
            "{what} (K^T view)"
        );
        // With an epilogue, and as row 0 of a larger product.
        let bias: Vec<f32> = (0..n).map(|j| j as f32 / 16.0).collect();
        let ep = s.bias_activation(Bias::per_column(&bias[..]), Func::GeluErf);
        let mut a3 = hashed_mixed_matrix(3, k, 5);
        a3.row_mut(0).assign(&a.row(0));
        let big = s.matmul_owned(&a3, &b, &ep).unwrap();
        let one = s.matmul_owned(&a, &packed, &ep).unwrap();
        assert_eq!(
            bits(&one),
            bits(&big.slice(s![..1, ..]).to_owned()),
            "{what}"
        );
    }
}

#[test]
fn one_row_products_have_the_bits_of_the_plain_loop() {
    for isa in Isa::available() {
        // Three threads cut the columns into a multiple of three chunks.
        for threads in [1, 2, 3] {
            one_row::<Exact>(isa, threads);
            one_row::<Fast>(isa, threads);
        }
    }
}
