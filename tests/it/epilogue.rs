//! The standard epilogues: fused into the GEMM, each equals the same operator applied to the
//! finished C afterwards, bit for bit, in both modes, on every instruction set; applied directly
//! they work on tiles of any layout, and a user's own GEMM can call them on its own tiles.

use crate::common::{bits, hashed_matrix, pinned_session};
use activation_kernels::epilogue::{
    Activation, Bias, BiasActivation, Chain, FromFn, Identity, Residual, Scale, TileEpilogue,
};
use activation_kernels::{Error, Exact, Fast, Func, Isa, Mode, Session};
use ndarray::{Array1, Array2, ArrayRef2, ShapeBuilder, s};

/// `c[i, j] + bias[j]` or `+ bias[i]`, one addition per element.
fn add_bias(c: &Array2<f32>, bias: &[f32], per_row: bool) -> Array2<f32> {
    Array2::from_shape_fn(c.dim(), |(i, j)| {
        c[[i, j]] + if per_row { bias[i] } else { bias[j] }
    })
}

fn fused_equals_afterwards<M: Mode>(isa: Isa) {
    // Several row bands and two column tiles of the driver, and a small product.
    for (m, n, k) in [(100, 1030, 20), (7, 9, 5)] {
        let s = pinned_session::<M>(isa, 2);
        let a = hashed_matrix(m, k, 1, 2.0);
        let b = hashed_matrix(k, n, 2, 2.0);
        let col_bias: Vec<f32> = hashed_matrix(1, n, 3, 4.0).into_raw_vec_and_offset().0;
        let row_bias: Vec<f32> = hashed_matrix(1, m, 4, 4.0).into_raw_vec_and_offset().0;
        let residual = hashed_matrix(m, n, 5, 1.0);
        let mut plain = Array2::zeros((m, n));
        s.matmul_into(&a, &b, &mut plain, &Identity).unwrap();

        let check = |what: &str, ep: &dyn TileEpilogue, want: &Array2<f32>| {
            let mut c = Array2::from_elem((m, n), f32::NAN);
            s.matmul_into(&a, &b, &mut c, ep).unwrap();
            assert_eq!(
                bits(&c),
                bits(want),
                "{} {isa} {m}x{n}x{k}: {what}",
                M::NAME
            );
        };

        for func in Func::ALL {
            let mut want = plain.clone();
            s.apply(func, &mut want);
            check(&format!("{func}"), &s.activation(func), &want);
            for per_row in [false, true] {
                let (bias, ep) = if per_row {
                    (&row_bias, Bias::per_row(&row_bias[..]))
                } else {
                    (&col_bias, Bias::per_column(&col_bias[..]))
                };
                let mut want = add_bias(&plain, bias, per_row);
                s.apply(func, &mut want);
                let fused = s.bias_activation(ep.clone(), func);
                check(
                    &format!("bias (per row: {per_row}) + {func}"),
                    &fused,
                    &want,
                );
                let chained = ep.then(s.activation(func));
                check(&format!("bias then {func}"), &chained, &want);
            }
        }

        check(
            "bias per column",
            &Bias::per_column(&col_bias[..]),
            &add_bias(&plain, &col_bias, false),
        );
        check(
            "bias per row",
            &Bias::per_row(&row_bias[..]),
            &add_bias(&plain, &row_bias, true),
        );
        check("scale", &Scale(-0.375), &plain.mapv(|x| x * -0.375));
        check(
            "residual",
            &Residual::new(residual.view()),
            &(&plain + &residual),
        );

        // A dense layer with a residual connection: ((C + b) -> GELU) + R, scaled.
        let mut want = add_bias(&plain, &col_bias, false);
        s.apply(Func::GeluTanh, &mut want);
        want += &residual;
        want.mapv_inplace(|x| x * 0.5);
        let layer = s
            .bias_activation(Bias::per_column(&col_bias[..]), Func::GeluTanh)
            .then(Residual::new(residual.view()))
            .then(Scale(0.5));
        check("bias + gelu_tanh, residual, scale", &layer, &want);
    }
}

#[test]
fn fused_epilogues_equal_the_operators_afterwards() {
    for isa in Isa::available() {
        fused_equals_afterwards::<Exact>(isa);
        fused_equals_afterwards::<Fast>(isa);
    }
}

/// A plain GEMM of one's own, with tiles of odd sizes, calling an epilogue on each.
fn my_gemm(a: &Array2<f32>, b: &Array2<f32>, ep: &dyn TileEpilogue) -> Array2<f32> {
    let (m, k) = a.dim();
    let n = b.ncols();
    let mut c = Array2::zeros((m, n));
    for r0 in (0..m).step_by(5) {
        for c0 in (0..n).step_by(7) {
            let mut tile = c.slice_mut(s![r0..(r0 + 5).min(m), c0..(c0 + 7).min(n)]);
            for ((i, j), x) in tile.indexed_iter_mut() {
                let mut acc = 0.0f32;
                for p in 0..k {
                    acc += a[[r0 + i, p]] * b[[p, c0 + j]];
                }
                *x = acc;
            }
            ep.apply(&mut tile, r0, c0);
        }
    }
    c
}

#[test]
fn a_users_gemm_calls_the_same_epilogues() {
    let s = Session::exact();
    let (m, n, k) = (23, 31, 17);
    let a = hashed_matrix(m, k, 6, 3.0);
    let b = hashed_matrix(k, n, 7, 3.0);
    let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.25 - 4.0).collect();
    let r = hashed_matrix(m, n, 8, 1.0);
    let row_bias = Array1::linspace(-1.0f32, 1.0, m);
    let epilogues: Vec<Box<dyn TileEpilogue + '_>> = vec![
        Box::new(Identity),
        Box::new(s.bias_activation(Bias::per_column(&bias[..]), Func::GeluErf)),
        Box::new(Residual::new(r.view()).then(s.activation(Func::Sigmoid))),
        Box::new(Bias::per_row(&row_bias).then(Scale(3.0))),
    ];
    for ep in &epilogues {
        let mine = my_gemm(&a, &b, ep.as_ref());
        let mut c = Array2::zeros((m, n));
        s.matmul_into(&a, &b, &mut c, ep).unwrap();
        assert_eq!(bits(&mine), bits(&c));
    }
}

#[test]
fn epilogues_work_on_tiles_of_any_layout() {
    let s = Session::fast();
    let x = hashed_matrix(13, 11, 9, 8.0);
    let bias: Vec<f32> = (0..20).map(|j| j as f32 - 10.0).collect();
    let r = hashed_matrix(20, 20, 10, 1.0);
    let epilogues: Vec<(&str, Box<dyn TileEpilogue + '_>)> = vec![
        ("activation", Box::new(s.activation(Func::Silu))),
        ("bias per column", Box::new(Bias::per_column(&bias[..]))),
        ("bias per row", Box::new(Bias::per_row(&bias[..]))),
        (
            "bias + activation",
            Box::new(s.bias_activation(Bias::per_row(&bias[..]), Func::Tanh)),
        ),
        ("residual", Box::new(Residual::new(r.view()))),
        ("scale", Box::new(Scale(1.5))),
    ];
    for (what, ep) in &epilogues {
        // The 13 x 11 tile at (4, 6) of a 20 x 20 C, in C order.
        let mut want = x.clone();
        ep.apply(&mut want, 4, 6);
        // F order.
        let mut f = Array2::zeros((13, 11).f());
        f.assign(&x);
        ep.apply(&mut f, 4, 6);
        assert_eq!(bits(&f), bits(&want), "{what}, F order");
        // Every other row and column of a larger array, columns reversed.
        let mut big = Array2::from_elem((26, 22), f32::NAN);
        big.slice_mut(s![..;2, ..;-2]).assign(&x);
        ep.apply(&mut big.slice_mut(s![..;2, ..;-2]), 4, 6);
        assert_eq!(
            bits(big.slice(s![..;2, ..;-2])),
            bits(&want),
            "{what}, strided"
        );
        assert!(
            big.slice(s![1..;2, ..]).iter().all(|v| v.is_nan()),
            "{what}"
        );
    }
}

#[test]
fn bias_and_residual_use_the_tile_offsets() {
    let bias = [1.0f32, 2.0, 3.0, 4.0];
    let mut t = Array2::<f32>::zeros((2, 2));
    Bias::per_column(&bias[..]).apply(&mut t, 1, 2);
    assert_eq!(t, ndarray::array![[3.0, 4.0], [3.0, 4.0]]);
    let mut t = Array2::<f32>::zeros((2, 2));
    Bias::per_row(&bias[..]).apply(&mut t, 1, 2);
    assert_eq!(t, ndarray::array![[2.0, 2.0], [3.0, 3.0]]);
    let r = Array2::from_shape_fn((4, 4), |(i, j)| (10 * i + j) as f32);
    let mut t = Array2::<f32>::zeros((2, 2));
    Residual::new(r.view()).apply(&mut t, 2, 1);
    assert_eq!(t, ndarray::array![[21.0, 22.0], [31.0, 32.0]]);
    // A residual whose rows are strided (a transposed view), and a tile whose rows are.
    let rt = r.t().to_owned();
    let mut t = Array2::<f32>::zeros((2, 2));
    Residual::new(rt.t()).apply(&mut t, 2, 1);
    assert_eq!(t, ndarray::array![[21.0, 22.0], [31.0, 32.0]]);
    let mut wide = Array2::<f32>::ones((2, 4));
    Residual::new(rt.t()).apply(&mut wide.slice_mut(s![.., ..;2]), 2, 1);
    assert_eq!(
        wide,
        ndarray::array![[22.0, 1.0, 23.0, 1.0], [32.0, 1.0, 33.0, 1.0]]
    );
    // Batched: the item's own matrix.
    let r3 = ndarray::Array3::from_shape_fn((3, 2, 2), |(q, i, j)| (100 * q + 10 * i + j) as f32);
    let mut t = Array2::<f32>::zeros((1, 2));
    Residual::batched(r3.view()).apply_batched(2, &mut t, 1, 0);
    assert_eq!(t, ndarray::array![[210.0, 211.0]]);
    // A non-contiguous bias is copied once and behaves the same.
    let strided = Array1::from_iter((0..8).map(|i| i as f32));
    let b = Bias::per_column(strided.slice(s![..;2]));
    assert_eq!(b.values(), &[0.0, 2.0, 4.0, 6.0]);
}

#[test]
fn chains_run_in_order() {
    let bias = [1.0f32];
    let mut x = ndarray::array![[2.0f32]];
    Chain(Scale(3.0), Bias::per_column(&bias[..])).apply(&mut x, 0, 0);
    assert_eq!(x[[0, 0]], 7.0);
    let mut y = ndarray::array![[2.0f32]];
    Bias::per_column(&bias[..])
        .then(Scale(3.0))
        .apply(&mut y, 0, 0);
    assert_eq!(y[[0, 0]], 9.0);
    let seen = std::sync::Mutex::new(Vec::new());
    let log = |tag: u8| {
        let seen = &seen;
        FromFn(move |_: &mut ArrayRef2<f32>, _: usize, _: usize| seen.lock().unwrap().push(tag))
    };
    log(1).then(log(2)).then(log(3)).apply(&mut y, 0, 0);
    assert_eq!(*seen.lock().unwrap(), vec![1, 2, 3]);
}

#[test]
fn activations_need_an_available_isa() {
    for isa in Isa::ALL {
        let built = Activation::<Exact>::new(Func::Tanh, isa);
        if isa.is_available() {
            let act = built.unwrap();
            assert_eq!((act.func(), act.isa()), (Func::Tanh, isa));
        } else {
            assert_eq!(built.unwrap_err(), Error::IsaUnavailable { isa });
        }
    }
    let s = Session::fast();
    let ep: BiasActivation<'_, Fast> =
        s.bias_activation(Bias::per_column(&[0.0f32][..]), Func::Exp);
    let mut t = Array2::<f32>::zeros((1, 1));
    ep.apply(&mut t, 0, 0);
    let mut want = Array2::<f32>::zeros((1, 1));
    s.exp(&mut want);
    assert_eq!(bits(&t), bits(&want));
}
