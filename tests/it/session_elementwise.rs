//! The session's element-wise operators over ndarray: every layout, every ISA, both modes,
//! 16-bit types over all their bit patterns, thread invariance and errors.

use crate::common::*;
use activation_kernels::{Error, Exact, Fast, Func, Isa, Mode, Session, exact, fast};
use half::{bf16, f16};
use ndarray::{Array, Array1, Array2, Array3, ArrayD, IxDyn, ShapeBuilder, s};

/// The operators a session exposes, with the function each applies.
const OPS: [Func; 8] = [
    Func::GeluErf,
    Func::GeluTanh,
    Func::Sigmoid,
    Func::Tanh,
    Func::Silu,
    Func::Exp,
    Func::Log,
    Func::Erf,
];

fn call<M: Mode, D: ndarray::Dimension>(
    s: &Session<M>,
    func: Func,
    a: &mut ndarray::ArrayRef<f32, D>,
) {
    match func {
        Func::GeluErf => s.gelu(a),
        Func::GeluTanh => s.gelu_tanh(a),
        Func::Sigmoid => s.sigmoid(a),
        Func::Tanh => s.tanh(a),
        Func::Silu => s.silu(a),
        Func::Exp => s.exp(a),
        Func::Log => s.log(a),
        Func::Erf => s.erf(a),
        _ => unreachable!(),
    }
}

fn kernel(map: MapFn, func: Func, x: f32) -> f32 {
    let mut y = [0f32];
    map(func, Isa::Scalar, &[x], &mut y).unwrap();
    y[0]
}

fn values(n: usize) -> Vec<f32> {
    let pool: Vec<f32> = special_values()
        .into_iter()
        .chain(float_range(-30.0, 30.0, 1 << 18))
        .collect();
    (0..n).map(|i| pool[(i * 131 + 7) % pool.len()]).collect()
}

fn assert_elementwise<D: ndarray::Dimension>(
    what: &str,
    before: &Array<f32, D>,
    after: &ndarray::ArrayRef<f32, D>,
    f: impl Fn(f32) -> f32,
) {
    assert_eq!(before.shape(), after.shape());
    for (x, y) in before.iter().zip(after.iter()) {
        assert_eq!(y.to_bits(), f(*x).to_bits(), "{what}: f({x})");
    }
}

fn layouts_for<M: Mode>(map: MapFn) {
    for isa in Isa::available() {
        let s = Session::<M>::new()
            .with_isa(isa)
            .unwrap()
            .with_parallel_threshold(64);
        for func in OPS {
            let f = |x| kernel(map, func, x);
            let tag = |l: &str| format!("{} {func} {isa} {l}", M::NAME);
            // C and F order.
            let c = Array2::from_shape_vec((7, 9), values(63)).unwrap();
            let mut a = c.clone();
            call(&s, func, &mut a);
            assert_elementwise(&tag("C"), &c, &a, f);
            let fo = Array2::from_shape_vec((7, 9).f(), values(63)).unwrap();
            let mut a = fo.clone();
            call(&s, func, &mut a);
            assert_elementwise(&tag("F"), &fo, &a, f);
            // A sliced view with steps, a reversed axis, a transposed view (all in place).
            let base = Array3::from_shape_vec((5, 6, 11), values(330)).unwrap();
            let mut a = base.clone();
            let before = a.slice(s![1..5;2, ..;3, 2..;3]).to_owned();
            call(&s, func, &mut a.slice_mut(s![1..5;2, ..;3, 2..;3]));
            assert_elementwise(
                &tag("stepped"),
                &before,
                &a.slice(s![1..5;2, ..;3, 2..;3]),
                f,
            );
            let mut a = base.clone();
            let before = a.slice(s![.., ..;-1, ..]).to_owned();
            call(&s, func, &mut a.slice_mut(s![.., ..;-1, ..]));
            assert_elementwise(&tag("reversed"), &before, &a.slice(s![.., ..;-1, ..]), f);
            let mut a = base.clone();
            let before = a.view().reversed_axes().to_owned();
            call(&s, func, &mut a.view_mut().reversed_axes());
            assert_elementwise(&tag("transposed"), &before, &a.view().reversed_axes(), f);
            // Untouched elements outside the stepped view stay as they were.
            let mut a = base.clone();
            call(&s, func, &mut a.slice_mut(s![.., 1, ..]));
            assert_eq!(
                bits(a.slice(s![.., 0, ..])),
                bits(base.slice(s![.., 0, ..]))
            );
            // 0-d, empty, and every length 1..=40 (in place, into, owned).
            let mut z = ndarray::arr0(0.75f32);
            call(&s, func, &mut z);
            assert_eq!(z[()].to_bits(), f(0.75).to_bits(), "{}", tag("0-d"));
            let mut e = Array2::<f32>::zeros((0, 5));
            call(&s, func, &mut e);
            assert_eq!(e.len(), 0);
            for n in 1..=40 {
                let x = Array1::from(values(n));
                let mut a = x.clone();
                call(&s, func, &mut a);
                assert_elementwise(&tag("len"), &x, &a, f);
                let mut d = Array1::zeros(n);
                s.apply_into(func, &x, &mut d).unwrap();
                assert_eq!(bits(&d), bits(&a));
                assert_eq!(bits(&s.apply_owned(func, &x).unwrap()), bits(&a));
                // Into a reversed destination from a stepped source.
                let wide = Array1::from(values(2 * n));
                let mut d = Array1::zeros(n);
                s.apply_into(func, &wide.slice(s![..;2]), &mut d.slice_mut(s![..;-1]))
                    .unwrap();
                let want: Vec<f32> = wide.iter().step_by(2).rev().map(|&x| f(x)).collect();
                assert_eq!(bits(&d), bits(&want));
            }
        }
    }
}

#[test]
fn every_operator_layout_and_isa_equals_the_kernel_exact() {
    layouts_for::<Exact>(exact::map);
}

#[test]
fn every_operator_layout_and_isa_equals_the_kernel_fast() {
    layouts_for::<Fast>(fast::map);
}

fn all_16bit<T: activation_kernels::Element + PartialEq>(
    from_bits: fn(u16) -> T,
    to_bits: fn(T) -> u16,
    widen: fn(T) -> f32,
    narrow: fn(f32) -> T,
) {
    let x: Array1<T> = (0..=u16::MAX).map(from_bits).collect();
    for (mode, map, _) in modes() {
        for func in OPS {
            let got = if mode == "exact" {
                Session::exact()
                    .with_parallel_threshold(4096)
                    .apply_owned(func, &x)
                    .unwrap()
            } else {
                Session::fast()
                    .with_parallel_threshold(4096)
                    .apply_owned(func, &x)
                    .unwrap()
            };
            let xf: Vec<f32> = x.iter().map(|&v| widen(v)).collect();
            let mut yf = vec![0f32; xf.len()];
            map(func, Isa::Scalar, &xf, &mut yf).unwrap();
            for (i, (g, y)) in got.iter().zip(&yf).enumerate() {
                assert_eq!(
                    to_bits(*g),
                    to_bits(narrow(*y)),
                    "{mode} {func} bits {i:04x}"
                );
            }
        }
    }
}

#[test]
fn f16_all_bit_patterns_equal_the_rounded_f32_kernel() {
    all_16bit(f16::from_bits, f16::to_bits, f16::to_f32, f16::from_f32);
}

#[test]
fn bf16_all_bit_patterns_equal_the_rounded_f32_kernel() {
    all_16bit(bf16::from_bits, bf16::to_bits, bf16::to_f32, bf16::from_f32);
}

#[test]
fn results_do_not_depend_on_threads_or_threshold() {
    let n = 3_000_017;
    let x = Array1::from(values(n));
    let reference = bits(
        &Session::exact()
            .with_threads(1)
            .unwrap()
            .gelu_owned(&x)
            .unwrap(),
    );
    let reference_fast = bits(
        &Session::fast()
            .with_threads(1)
            .unwrap()
            .gelu_owned(&x)
            .unwrap(),
    );
    // A strided view too: its input, and its one-thread bits (the same in every round).
    let strided = Array2::from_shape_vec((1000, 3000), values(3_000_000)).unwrap();
    let mut r = strided.clone();
    Session::exact()
        .with_threads(1)
        .unwrap()
        .sigmoid(&mut r.slice_mut(s![.., ..;-2]));
    let reference_strided = bits(&r);
    for threads in [1, 2, 3, 8] {
        for threshold in [0, 1000, 1 << 17, usize::MAX] {
            let s = Session::exact()
                .with_threads(threads)
                .unwrap()
                .with_parallel_threshold(threshold);
            assert_eq!(
                bits(&s.gelu_owned(&x).unwrap()),
                reference,
                "exact {threads} threads, threshold {threshold}"
            );
            let f = Session::fast()
                .with_threads(threads)
                .unwrap()
                .with_parallel_threshold(threshold);
            assert_eq!(
                bits(&f.gelu_owned(&x).unwrap()),
                reference_fast,
                "fast {threads} threads, threshold {threshold}"
            );
            let mut m = strided.clone();
            s.sigmoid(&mut m.slice_mut(s![.., ..;-2]));
            assert_eq!(bits(&m), reference_strided);
        }
    }
}

#[test]
fn gated_forms_round_the_product_once_after_the_activation() {
    let g = Array2::from_shape_vec((13, 17), values(221)).unwrap();
    let u = Array2::from_shape_vec((13, 17), values(300)[79..].to_vec()).unwrap();
    let s = Session::exact();
    let mut out = Array2::zeros((13, 17));
    s.swiglu_into(&g, &u, &mut out).unwrap();
    for ((g, u), o) in g.iter().zip(&u).zip(&out) {
        assert_eq!(o.to_bits(), (exact::silu(*g) * u).to_bits());
    }
    s.geglu_into(&g, &u, &mut out).unwrap();
    for ((g, u), o) in g.iter().zip(&u).zip(&out) {
        assert_eq!(o.to_bits(), (exact::gelu_erf(*g) * u).to_bits());
    }
    // Strided inputs and output give the same values.
    let mut out_t = Array2::zeros((17, 13));
    s.geglu_tanh_into(&g.t(), &u.t(), &mut out_t).unwrap();
    for ((g, u), o) in g.t().iter().zip(u.t()).zip(&out_t) {
        assert_eq!(o.to_bits(), (exact::gelu_tanh(*g) * u).to_bits());
    }
    let f = Session::fast();
    f.geglu_into(&g, &u, &mut out).unwrap();
    for ((g, u), o) in g.iter().zip(&u).zip(&out) {
        assert_eq!(o.to_bits(), (fast::gelu_erf(*g) * u).to_bits());
    }
    // bf16: the product of the f32 activation and the widened up, rounded once.
    let gb = g.mapv(bf16::from_f32);
    let ub = u.mapv(bf16::from_f32);
    let mut ob = Array2::from_elem((13, 17), bf16::ZERO);
    s.swiglu_into(&gb, &ub, &mut ob).unwrap();
    for ((g, u), o) in gb.iter().zip(&ub).zip(&ob) {
        let want = bf16::from_f32(exact::silu(g.to_f32()) * u.to_f32());
        assert_eq!(o.to_bits(), want.to_bits());
    }
}

#[test]
fn shape_mismatches_are_errors_naming_both_shapes() {
    let s = Session::exact();
    let x = Array2::<f32>::zeros((3, 4));
    let mut y = Array2::<f32>::zeros((4, 3));
    let e = s.gelu_into(&x, &mut y).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }));
    let msg = e.to_string();
    assert!(msg.contains("[3, 4]") && msg.contains("[4, 3]"), "{msg}");
    let mut out = Array2::<f32>::zeros((3, 4));
    let up = Array2::<f32>::zeros((3, 5));
    assert!(matches!(
        s.swiglu_into(&x, &up, &mut out),
        Err(Error::ShapeMismatch { .. })
    ));
    let mut d = ArrayD::<f32>::zeros(IxDyn(&[3, 4, 1]));
    let xd = ArrayD::<f32>::zeros(IxDyn(&[3, 4]));
    assert!(s.tanh_into(&xd, &mut d).is_err());
    assert!(matches!(
        Session::exact().with_threads(0),
        Err(Error::InvalidArgument(_))
    ));
    for isa in Isa::ALL.into_iter().filter(|i| !i.is_available()) {
        assert_eq!(
            Session::fast().with_isa(isa).unwrap_err(),
            Error::IsaUnavailable { isa }
        );
    }
}
