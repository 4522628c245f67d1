//! Every NaN exact mode stores is the canonical `0x7FC00000`: NaN payloads and `inf * 0`
//! through the GEMM and each of its epilogues, the gated forms, layer norm and attention, on
//! every instruction set and thread count.

use crate::common::*;
use activation_kernels::epilogue::{Activation, Bias, BiasActivation, Residual, Scale};
use activation_kernels::{AttentionOptions, Exact, Func, Isa, Session};
use ndarray::{Array1, Array2, Array4, array};

const CANON: u32 = 0x7FC0_0000;
const PAYLOAD: u32 = 0x7FC0_1234;
const NEG_PAYLOAD: u32 = 0xFFC0_0077;

fn nan(bits: u32) -> f32 {
    f32::from_bits(bits)
}

/// Every NaN of `out` is canonical, and `expect_nan` holds where a NaN must be.
fn check(what: &str, out: impl IntoIterator<Item = f32>, expect_nan: &[usize]) {
    let b: Vec<u32> = out.into_iter().map(f32::to_bits).collect();
    for &i in expect_nan {
        assert_eq!(b[i], CANON, "{what}: element {i} of {b:08x?}");
    }
    for (i, v) in b.iter().enumerate() {
        assert!(
            !f32::from_bits(*v).is_nan() || *v == CANON,
            "{what}: {i} is {v:08x}"
        );
    }
}

fn sessions() -> Vec<(String, Session<Exact>)> {
    let mut v = Vec::new();
    for isa in Isa::available() {
        for threads in [1, 2] {
            v.push((
                format!("{isa}/{threads}"),
                pinned_session::<Exact>(isa, threads),
            ));
        }
    }
    v
}

#[test]
fn gemm_and_its_epilogues_store_the_canonical_nan() {
    let inf = f32::INFINITY;
    // Row 0: inf * 0; row 1: a NaN payload; row 2: -payload; row 3: finite.
    let a = array![
        [inf, 0.0, 0.0],
        [nan(PAYLOAD), 1.0, 2.0],
        [1.0, nan(NEG_PAYLOAD), 0.0],
        [1.0, 2.0, 3.0]
    ];
    let b = Array2::from_shape_fn((3, 20), |(i, j)| if i == 0 { 0.0 } else { j as f32 });
    let rows_nan: Vec<usize> = (0..60).collect();
    for (name, s) in sessions() {
        let c = s
            .matmul_owned(&a, &b, &activation_kernels::epilogue::Identity)
            .unwrap();
        check(&format!("matmul {name}"), c.iter().copied(), &rows_nan);
        // Epilogues that bring their own NaNs, on the finite row.
        let bias = Array1::from_shape_fn(20, |j| if j == 3 { nan(PAYLOAD) } else { 1.0 });
        let c = s.matmul_owned(&a, &b, &Bias::per_column(&bias)).unwrap();
        check(&format!("bias {name}"), c.iter().copied(), &[63]);
        let r = Array2::from_shape_fn((4, 20), |(i, j)| if (i, j) == (3, 5) { -inf } else { 0.5 });
        let plus_inf = Array2::from_shape_fn((3, 20), |(i, _)| if i == 0 { inf } else { 0.0 });
        let c = s
            .matmul_owned(&a, &plus_inf, &Residual::new(r.view()))
            .unwrap();
        // Row 3: inf + (-inf) at column 5.
        check(&format!("residual {name}"), c.iter().copied(), &[65]);
        let c = s.matmul_owned(&a, &b, &Scale(nan(PAYLOAD))).unwrap();
        check(&format!("scale {name}"), c.iter().copied(), &[70, 79]);
        let act = Activation::<Exact>::new(Func::GeluErf, s.isa()).unwrap();
        let c = s
            .matmul_owned(&a, &b, &BiasActivation::new(Bias::per_column(&bias), act))
            .unwrap();
        check(
            &format!("bias+gelu {name}"),
            c.iter().copied(),
            &[0, 20, 63],
        );
    }
}

#[test]
fn gated_forms_store_the_canonical_nan() {
    let inf = f32::INFINITY;
    let gate = Array1::from(vec![
        inf,
        nan(PAYLOAD),
        1.0,
        -inf,
        2.0,
        nan(NEG_PAYLOAD),
        0.5,
    ]);
    let up = Array1::from(vec![0.0, 1.0, nan(PAYLOAD), 1.0, inf, 2.0, 0.0]);
    for (name, s) in sessions() {
        for (what, out) in [
            ("swiglu", s.swiglu_owned(&gate, &up).unwrap()),
            ("geglu", s.geglu_owned(&gate, &up).unwrap()),
            ("geglu_tanh", s.geglu_tanh_owned(&gate, &up).unwrap()),
        ] {
            check(
                &format!("{what} {name}"),
                out.iter().copied(),
                &[0, 1, 2, 5],
            );
        }
        let mut out = Array1::zeros(7);
        s.gated_into(Func::Silu, &gate, &up, &mut out).unwrap();
        check(
            &format!("gated_into {name}"),
            out.iter().copied(),
            &[0, 1, 2, 5],
        );
    }
}

#[test]
fn layer_norm_stores_the_canonical_nan() {
    for (name, s) in sessions() {
        // A constant row with eps 0: 0 / 0.
        let mut x = array![[7.0f32, 7.0]];
        s.layer_norm(&mut x, &Array1::ones(2), &Array1::zeros(2), 0.0)
            .unwrap();
        check(&format!("constant {name}"), x.iter().copied(), &[0, 1]);
        // A NaN payload in the row; an infinite gamma times a zero.
        let mut x = array![[1.0f32, nan(PAYLOAD), 3.0], [1.0, 2.0, 3.0]];
        let g = array![1.0f32, f32::INFINITY, 1.0];
        s.layer_norm(&mut x, &g, &array![0.0f32, 0.0, nan(NEG_PAYLOAD)], 1e-5)
            .unwrap();
        check(
            &format!("payload {name}"),
            x.iter().copied(),
            &[0, 1, 2, 4, 5],
        );
    }
}

#[test]
fn attention_stores_the_canonical_nan() {
    let q = Array4::from_shape_fn((1, 1, 3, 4), |(_, _, i, j)| (i + j) as f32 * 0.1);
    let k = q.clone();
    let mut v = Array4::from_shape_fn((1, 1, 3, 4), |(_, _, i, j)| (i * 4 + j) as f32);
    v[[0, 0, 0, 1]] = nan(PAYLOAD);
    v[[0, 0, 1, 2]] = f32::INFINITY;
    v[[0, 0, 2, 2]] = f32::NEG_INFINITY;
    for (name, s) in sessions() {
        let o = s
            .attention_owned(&q, &k, &v, &AttentionOptions::default().causal())
            .unwrap();
        // Column 1 sees the payload from row 0 on; column 2 sees inf - inf in row 2.
        check(
            &format!("attention {name}"),
            o.iter().copied(),
            &[1, 5, 9, 10],
        );
    }
}
