//! `Session::matmul` and `matmul_batched`: exact mode against the plain triple loop, bit for
//! bit, on every instruction set, thread count and layout; fast mode against an f64 reference
//! within the bound of a sequential fp32 sum; every element through the epilogue exactly once;
//! shape errors.

use crate::common::{bits, hashed_mixed_matrix, pinned_session};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use activation_kernels::epilogue::{Bias, Identity, Residual, Scale, TileEpilogue};
use activation_kernels::{Error, Exact, Fast, Isa, Session};
use ndarray::{Array2, Array3, ArrayRef2, ArrayView2, ArrayViewMut2, ShapeBuilder, s};

/// Deterministic values spread over several binades, so that any change in the order of a sum
/// changes its bits.
/// `c = +0; for k { c = c + a[i][k] * b[k][j] }`.
fn naive(a: &ArrayView2<'_, f32>, b: &ArrayView2<'_, f32>) -> Array2<f32> {
    let (m, k) = a.dim();
    Array2::from_shape_fn((m, b.ncols()), |(i, j)| {
        let mut c = 0.0f32;
        for p in 0..k {
            c += a[[i, p]] * b[[p, j]];
        }
        c
    })
}

/// A named layout: the array, and for the strided one the logical shape inside it.
type Layout = (&'static str, Array2<f32>, Option<(usize, usize)>);

/// The three input layouts: C order, F order, and every other row and column of a larger
/// array (rows reversed too), all holding the values of `x`.
fn layouts(x: &Array2<f32>) -> [Layout; 3] {
    let (r, c) = x.dim();
    let mut f = Array2::zeros((r, c).f());
    f.assign(x);
    let mut big = Array2::from_elem((2 * r + 1, 2 * c + 1), f32::NAN);
    big.slice_mut(s![1..2 * r + 1;-2, ..2 * c;2]).assign(x);
    [
        ("C order", x.clone(), None),
        ("F order", f, None),
        ("strided", big, Some((r, c))),
    ]
}

fn view<'a>(x: &'a Array2<f32>, strided: Option<(usize, usize)>) -> ArrayView2<'a, f32> {
    match strided {
        None => x.view(),
        Some((r, c)) => x.slice(s![1..2 * r + 1;-2, ..2 * c;2]),
    }
}

fn view_mut<'a>(x: &'a mut Array2<f32>, strided: Option<(usize, usize)>) -> ArrayViewMut2<'a, f32> {
    match strided {
        None => x.view_mut(),
        Some((r, c)) => x.slice_mut(s![1..2 * r + 1;-2, ..2 * c;2]),
    }
}

const SIZES: [usize; 8] = [0, 1, 7, 33, 64, 65, 127, 257];
const MIXED: [(usize, usize, usize); 8] = [
    (1, 257, 7),
    (65, 1, 33),
    (7, 127, 64),
    (257, 33, 1),
    (33, 65, 257),
    (3, 1100, 20),
    (100, 9, 300),
    (0, 5, 3),
];

fn shapes() -> Vec<(usize, usize, usize)> {
    SIZES.iter().map(|&n| (n, n, n)).chain(MIXED).collect()
}

#[test]
fn exact_equals_the_naive_loop_on_every_isa_thread_count_and_layout() {
    let sessions: Vec<(Isa, usize, Session<Exact>)> = Isa::available()
        .into_iter()
        .flat_map(|isa| [1, 2, 3].map(|t| (isa, t, pinned_session::<Exact>(isa, t))))
        .collect();
    for (m, n, k) in shapes() {
        let a = hashed_mixed_matrix(m, k, 1);
        let b = hashed_mixed_matrix(k, n, 2);
        let want = bits(&naive(&a.view(), &b.view()));
        let (al, bl) = (layouts(&a), layouts(&b));
        for (idx, (isa, threads, session)) in sessions.iter().enumerate() {
            // Every layout of A, B and C on every session, rotated so that each combination of
            // layouts meets every instruction set and thread count across the sizes.
            for l in 0..3 {
                let (an, ax, astr) = &al[l];
                let (bn, bx, bstr) = &bl[(l + idx) % 3];
                let (cn, mut cx, cstr) =
                    layouts(&Array2::from_elem((m, n), f32::NAN))[(l + 2 * idx) % 3].clone();
                let mut c = view_mut(&mut cx, cstr);
                session
                    .matmul_into(&view(ax, *astr), &view(bx, *bstr), &mut c, &Identity)
                    .unwrap();
                assert_eq!(
                    bits(&c),
                    want,
                    "{m}x{n}x{k} on {isa}, {threads} threads, a {an}, b {bn}, c {cn}"
                );
            }
        }
    }
}

#[test]
fn exact_sums_start_from_positive_zero() {
    // Every product is -0: +0 + (-0) = +0, while a sum that started from the first product
    // would give -0.
    let a = Array2::from_elem((3, 4), -1.0f32);
    let b = Array2::<f32>::zeros((4, 17));
    for isa in Isa::available() {
        let mut c = Array2::from_elem((3, 17), f32::NAN);
        pinned_session::<Exact>(isa, 1)
            .matmul_into(&a, &b, &mut c, &Identity)
            .unwrap();
        assert!(c.iter().all(|x| x.to_bits() == 0), "{isa}");
    }
}

#[test]
fn fast_is_within_the_bound_of_a_sequential_sum() {
    let u = f64::from(f32::EPSILON) / 2.0;
    for isa in Isa::available() {
        let s = pinned_session::<Fast>(isa, 2);
        for (m, n, k) in shapes() {
            let a = hashed_mixed_matrix(m, k, 3);
            let b = hashed_mixed_matrix(k, n, 4);
            let mut c = Array2::from_elem((m, n), f32::NAN);
            s.matmul_into(&a, &b, &mut c, &Identity).unwrap();
            let gamma = k as f64 * u / (1.0 - k as f64 * u);
            for ((i, j), &got) in c.indexed_iter() {
                let (mut exact, mut magnitude) = (0.0f64, 0.0f64);
                for p in 0..k {
                    let prod = f64::from(a[[i, p]]) * f64::from(b[[p, j]]);
                    exact += prod;
                    magnitude += prod.abs();
                }
                let err = (f64::from(got) - exact).abs();
                assert!(
                    err <= gamma * magnitude,
                    "{isa} {m}x{n}x{k} at {i},{j}: {got} vs {exact}, error {err:e} > {:e}",
                    gamma * magnitude
                );
            }
        }
    }
}

#[test]
fn fast_uses_fused_steps_and_depends_on_neither_threads_nor_isa() {
    let (m, n, k) = (65, 70, 129);
    let a = hashed_mixed_matrix(m, k, 5);
    let b = hashed_mixed_matrix(k, n, 6);
    let exact = bits(&naive(&a.view(), &b.view()));
    // `fma(a, b, c)` in increasing k from +0: one rounding per step, like every fma.
    let fused = Array2::from_shape_fn((m, n), |(i, j)| {
        (0..k)
            .fold(0.0f32, |c, p| a[[i, p]].mul_add(b[[p, j]], c))
            .to_bits()
    });
    let fused: Vec<u32> = fused.into_iter().collect();
    assert_ne!(fused, exact);
    for isa in Isa::available() {
        for threads in [1, 2, 3] {
            let mut c = Array2::zeros((m, n));
            pinned_session::<Fast>(isa, threads)
                .matmul_into(&a, &b, &mut c, &Identity)
                .unwrap();
            assert_eq!(bits(&c), fused, "{isa}, {threads} threads");
        }
    }
}

/// Records every element it is given, and checks that each tile holds the finished product.
struct Counting<'a> {
    finished: &'a Array2<f32>,
    counts: Vec<AtomicU32>,
    unfinished: AtomicU32,
    tiles: Mutex<Vec<(usize, usize, usize, usize)>>,
}

impl<'a> Counting<'a> {
    fn new(finished: &'a Array2<f32>) -> Self {
        Counting {
            finished,
            counts: (0..finished.len()).map(|_| AtomicU32::new(0)).collect(),
            unfinished: AtomicU32::new(0),
            tiles: Mutex::new(Vec::new()),
        }
    }
}

impl TileEpilogue for Counting<'_> {
    fn apply(&self, tile: &mut ArrayRef2<f32>, row: usize, col: usize) {
        let n = self.finished.ncols();
        for ((i, j), x) in tile.indexed_iter_mut() {
            self.counts[(row + i) * n + col + j].fetch_add(1, Ordering::Relaxed);
            if x.to_bits() != self.finished[[row + i, col + j]].to_bits() {
                self.unfinished.fetch_add(1, Ordering::Relaxed);
            }
            *x += 1.0;
        }
        let (h, w) = tile.dim();
        self.tiles.lock().unwrap().push((row, col, h, w));
    }
}

#[test]
fn the_epilogue_sees_each_finished_element_once() {
    // Several row bands and column tiles, edge tiles in both directions, and a K past one
    // super-block of the driver.
    for (m, n, k, threads) in [
        (1, 1, 1, 1),
        (50, 1030, 9, 2),
        (97, 33, 300, 3),
        (9, 1027, 4100, 2),
    ] {
        for isa in Isa::available() {
            if k > 1000 && isa != Isa::detect() {
                continue;
            }
            let a = hashed_mixed_matrix(m, k, 7);
            let b = hashed_mixed_matrix(k, n, 8);
            let s = pinned_session::<Exact>(isa, threads);
            let mut finished = Array2::zeros((m, n));
            s.matmul_into(&a, &b, &mut finished, &Identity).unwrap();
            let counting = Counting::new(&finished);
            let mut c = Array2::from_elem((m, n).f(), f32::NAN);
            s.matmul_into(&a, &b, &mut c, &counting).unwrap();
            let what = format!("{m}x{n}x{k} on {isa}");
            assert!(
                counting
                    .counts
                    .iter()
                    .all(|c| c.load(Ordering::Relaxed) == 1),
                "{what}"
            );
            assert_eq!(counting.unfinished.load(Ordering::Relaxed), 0, "{what}");
            assert_eq!(c, &finished + 1.0, "{what}");
            let tiles = counting.tiles.lock().unwrap();
            let area: usize = tiles.iter().map(|t| t.2 * t.3).sum();
            assert_eq!(area, m * n, "{what}");
        }
    }
}

#[test]
fn k_zero_gives_the_epilogue_of_zero() {
    let a = Array2::<f32>::zeros((5, 0));
    let b = Array2::<f32>::zeros((0, 7));
    let bias: Vec<f32> = (0..7).map(|j| j as f32 - 3.0).collect();
    for isa in Isa::available() {
        let exact = pinned_session::<Exact>(isa, 2);
        let mut c = Array2::from_elem((5, 7), f32::NAN);
        exact.matmul_into(&a, &b, &mut c, &Identity).unwrap();
        assert!(c.iter().all(|x| x.to_bits() == 0), "{isa}");

        let ep = exact.bias_activation(Bias::per_column(&bias[..]), activation_kernels::Func::Silu);
        exact.matmul_into(&a, &b, &mut c, &ep).unwrap();
        let mut want = Array2::from_shape_fn((5, 7), |(_, j)| bias[j]);
        exact.silu(&mut want);
        assert_eq!(bits(&c), bits(&want), "{isa}");

        let fast = pinned_session::<Fast>(isa, 1);
        let mut c = Array2::from_elem((5, 7), f32::NAN);
        fast.matmul_into(
            &a,
            &b,
            &mut c,
            &fast.activation(activation_kernels::Func::Sigmoid),
        )
        .unwrap();
        let mut want = Array2::zeros((5, 7));
        fast.sigmoid(&mut want);
        assert_eq!(bits(&c), bits(&want), "{isa}");
    }
}

struct Never;
impl TileEpilogue for Never {
    fn apply(&self, _: &mut ArrayRef2<f32>, _: usize, _: usize) {
        panic!("an empty output has no tiles");
    }
}

#[test]
fn empty_outputs_call_no_epilogue() {
    let never = Never;
    let s = Session::exact();
    for (m, n, k) in [(0, 3, 4), (3, 0, 4), (0, 0, 0)] {
        let mut c = Array2::zeros((m, n));
        s.matmul_into(
            &hashed_mixed_matrix(m, k, 1),
            &hashed_mixed_matrix(k, n, 2),
            &mut c,
            &never,
        )
        .unwrap();
    }
}

#[test]
fn batched_items_equal_single_products() {
    let (batch, m, n, k) = (4, 33, 70, 19);
    let stack = |r, c, seed: u64| {
        let items: Vec<Array2<f32>> = (0..batch as u64)
            .map(|q| hashed_mixed_matrix(r, c, seed + q))
            .collect();
        let views: Vec<_> = items.iter().map(|x| x.view()).collect();
        ndarray::stack(ndarray::Axis(0), &views).unwrap()
    };
    let a = stack(m, k, 0);
    let b = stack(k, n, 10);
    let r = Array3::from_shape_fn((batch, m, n), |(q, i, j)| (q * 1000 + i * 10 + j) as f32);
    for isa in Isa::available() {
        for threads in [1, 3] {
            let s = pinned_session::<Exact>(isa, threads);
            // Batch index and per-item offsets reach the epilogue.
            let ep = Residual::batched(r.view()).then(Scale(0.5));
            let mut c = Array3::from_elem((batch, m, n), f32::NAN);
            s.matmul_batched_into(&a, &b, &mut c, &ep).unwrap();
            // A shared B, broadcast along the batch.
            let shared = b.index_axis(ndarray::Axis(0), 1);
            let mut cb = Array3::zeros((batch, m, n));
            s.matmul_batched_into(
                &a,
                &shared.broadcast((batch, k, n)).unwrap(),
                &mut cb,
                &Identity,
            )
            .unwrap();
            for q in 0..batch {
                let (aq, bq) = (
                    a.index_axis(ndarray::Axis(0), q),
                    b.index_axis(ndarray::Axis(0), q),
                );
                let mut want = naive(&aq, &bq);
                want += &r.index_axis(ndarray::Axis(0), q);
                want *= 0.5;
                assert_eq!(
                    bits(c.index_axis(ndarray::Axis(0), q)),
                    bits(&want),
                    "{isa} item {q}"
                );
                let want = naive(&aq, &shared);
                assert_eq!(
                    bits(cb.index_axis(ndarray::Axis(0), q)),
                    bits(&want),
                    "{isa} item {q}"
                );
            }
        }
    }
}

fn is_shape_error<T: std::fmt::Debug>(r: Result<T, Error>) -> bool {
    matches!(r, Err(Error::ShapeMismatch { .. }))
}

#[test]
fn shape_errors_are_errors_and_leave_c_alone() {
    let s = Session::exact();
    let a = hashed_mixed_matrix(3, 4, 1);
    let b = hashed_mixed_matrix(4, 5, 2);
    let mut c = Array2::from_elem((3, 5), 7.0f32);
    assert!(is_shape_error(s.matmul_into(&a, &a, &mut c, &Identity)));
    assert!(is_shape_error(s.matmul_into(&a, &b.t(), &mut c, &Identity)));
    let mut wrong = Array2::zeros((5, 3));
    assert!(is_shape_error(s.matmul_into(&a, &b, &mut wrong, &Identity)));
    let short = [1.0f32; 4];
    assert!(is_shape_error(s.matmul_into(
        &a,
        &b,
        &mut c,
        &Bias::per_column(&short[..])
    )));
    assert!(is_shape_error(s.matmul_into(
        &a,
        &b,
        &mut c,
        &Bias::per_row(&short[..])
    )));
    let ep = s.bias_activation(Bias::per_column(&short[..]), activation_kernels::Func::Tanh);
    assert!(is_shape_error(s.matmul_into(&a, &b, &mut c, &ep)));
    let r = Array2::<f32>::zeros((3, 4));
    assert!(is_shape_error(s.matmul_into(
        &a,
        &b,
        &mut c,
        &Residual::new(r.view())
    )));
    let r3 = Array3::<f32>::zeros((1, 3, 5));
    assert!(is_shape_error(s.matmul_into(
        &a,
        &b,
        &mut c,
        &Residual::batched(r3.view())
    )));
    assert!(is_shape_error(s.matmul_into(
        &a,
        &b,
        &mut c,
        &Identity.then(Bias::per_column(&short[..]))
    )));
    assert!(c.iter().all(|&x| x == 7.0));

    let a3 = Array3::<f32>::zeros((2, 3, 4));
    let mut c3 = Array3::<f32>::zeros((2, 3, 5));
    let b_batch = Array3::<f32>::zeros((3, 4, 5));
    assert!(is_shape_error(
        s.matmul_batched_into(&a3, &b_batch, &mut c3, &Identity)
    ));
    let b_inner = Array3::<f32>::zeros((2, 3, 5));
    assert!(is_shape_error(
        s.matmul_batched_into(&a3, &b_inner, &mut c3, &Identity)
    ));
    let b3 = Array3::<f32>::zeros((2, 4, 5));
    let mut c_wrong = Array3::<f32>::zeros((2, 3, 6));
    assert!(is_shape_error(s.matmul_batched_into(
        &a3,
        &b3,
        &mut c_wrong,
        &Identity
    )));
    let r_wrong = Array3::<f32>::zeros((3, 3, 5));
    assert!(is_shape_error(s.matmul_batched_into(
        &a3,
        &b3,
        &mut c3,
        &Residual::batched(r_wrong.view())
    )));
    assert!(
        s.matmul_batched_into(
            &a3,
            &b3,
            &mut c3,
            &Residual::batched(Array3::zeros((2, 3, 5)).view())
        )
        .is_ok()
    );
}

#[test]
fn special_values_propagate_like_the_naive_loop() {
    let mut a = hashed_mixed_matrix(9, 20, 1);
    let mut b = hashed_mixed_matrix(20, 18, 2);
    a[[0, 3]] = f32::INFINITY;
    a[[2, 5]] = f32::NAN;
    b[[7, 4]] = f32::NEG_INFINITY;
    b[[1, 0]] = 0.0;
    a[[4, 1]] = 3e38;
    b[[1, 9]] = 3e38;
    let want = naive(&a.view(), &b.view());
    for isa in Isa::available() {
        let mut c = Array2::zeros((9, 18));
        pinned_session::<Exact>(isa, 1)
            .matmul_into(&a, &b, &mut c, &Identity)
            .unwrap();
        for (x, y) in c.iter().zip(&want) {
            // NaN payloads are the hardware's; everything else is bit for bit.
            assert!(
                x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
                "{isa}: {x} vs {y}"
            );
        }
    }
}
