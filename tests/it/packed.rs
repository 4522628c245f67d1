//! Tests of PackedMatrix through the public API (moved out of `src/gemm/`, which knows no session).

use ndarray::{Array2, ShapeBuilder, s};

use crate::common::{bits, pinned_session};
use activation_kernels::PackedMatrix;
use activation_kernels::epilogue::{Bias, Identity};
use activation_kernels::{Error, Exact, Fast, Func, Isa, Mode, Session};

/// Values over several binades, so that any change in the order of a sum changes its bits;
/// a few infinities and NaNs with payloads when `special`.
fn values(r: usize, c: usize, seed: u64, special: bool) -> Array2<f32> {
    Array2::from_shape_fn((r, c), |(i, j)| {
        let h = (i as u64 * 1_000_003 + j as u64 * 7919 + seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        if special && (h >> 8).is_multiple_of(97) {
            return [f32::INFINITY, f32::from_bits(0x7FC0_1234)][(h >> 16) as usize % 2];
        }
        let mantissa = (h >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
        mantissa * 2f32.powi(((h >> 20) % 13) as i32 - 6)
    })
}

fn packed_equals_unpacked<M: Mode>(isa: Isa, threads: usize) {
    let s = pinned_session::<M>(isa, threads);
    for (m, k, n, special) in [
        (1, 1, 1, false),
        (7, 13, 37, true),
        (1, 33, 19, false),
        (50, 70, 1030, false),
        (13, 0, 5, false),
        (3, 4100, 21, true),
    ] {
        let a = values(m, k, 1, special);
        let b = values(k, n, 2, false);
        let bias: Vec<f32> = (0..n).map(|j| j as f32 / 8.0).collect();
        let ep = s.bias_activation(Bias::per_column(&bias[..]), Func::GeluErf);
        let mut f = Array2::zeros((k, n).f());
        f.assign(&b);
        let mut big = Array2::from_elem((k, 2 * n), f32::NAN);
        big.slice_mut(s![.., ..;2]).assign(&b);
        for (name, view) in [
            ("C order", b.view()),
            ("F order", f.view()),
            ("strided", big.slice(s![.., ..;2])),
        ] {
            let packed = s.pack(&view).unwrap();
            assert_eq!(packed.dim(), (k, n));
            let want = s.matmul_owned(&a, &view, &Identity).unwrap();
            let got = s.matmul_owned(&a, &packed, &Identity).unwrap();
            let what = format!("{} {isa} {threads}t {m}x{k}x{n} {name}", M::NAME);
            assert_eq!(bits(&got), bits(&want), "{what}");
            let want = s.matmul_owned(&a, &view, &ep).unwrap();
            let got = s.matmul_owned(&a, &packed, &ep).unwrap();
            assert_eq!(bits(&got), bits(&want), "{what} with an epilogue");
        }
    }
}

#[test]
fn packed_products_have_the_bits_of_unpacked_ones() {
    for isa in Isa::available() {
        for threads in [1, 2] {
            packed_equals_unpacked::<Exact>(isa, threads);
            packed_equals_unpacked::<Fast>(isa, threads);
        }
    }
}

#[test]
fn another_instruction_set_is_an_error() {
    let b = values(4, 3, 2, false);
    let a = values(2, 4, 1, false);
    let mut c = Array2::zeros((2, 3));
    for isa in Isa::available() {
        let s = Session::exact().with_isa(isa).unwrap();
        for other in Isa::ALL {
            let packed = PackedMatrix::new(other, &b).unwrap();
            assert_eq!(packed.isa(), other);
            let r = s.matmul_into(&a, &packed, &mut c, &Identity);
            if other == isa {
                r.unwrap();
            } else {
                assert!(matches!(r, Err(Error::InvalidArgument(_))), "{isa} {other}");
            }
        }
    }
}

#[test]
fn shape_mismatch_with_a_packed_matrix_is_an_error() {
    let s = Session::fast();
    let packed = s.pack(&values(4, 3, 2, false)).unwrap();
    let mut c = Array2::zeros((2, 3));
    let r = s.matmul_into(&values(2, 5, 1, false), &packed, &mut c, &Identity);
    assert!(matches!(r, Err(Error::ShapeMismatch { .. })));
}

/// `Debug` says what a packed matrix is (shape, instruction set, panel width, packed size) and
/// stays one short line however large the matrix: no values, no alignment padding.
#[test]
fn debug_shows_the_shape_not_the_values() {
    let packed = PackedMatrix::new(Isa::Scalar, &values(300, 70, 3, false)).unwrap();
    let text = format!("{packed:?}");
    assert!(
        text.starts_with("PackedMatrix { k: 300, n: 70, isa: Scalar, nr: "),
        "{text}"
    );
    assert!(text.contains("packed_values: "), "{text}");
    assert!(text.len() < 120, "{text}");
}
