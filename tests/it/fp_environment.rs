//! Exact mode whatever the floating-point environment: with flush-to-zero (x86-64's FTZ and
//! DAZ, aarch64's FZ), or round-toward-zero, set on the calling thread and on every worker of
//! the pool, the exact results are the golden ones and the caller's control register (MXCSR,
//! FPCR) comes back intact.

use crate::common::*;
use activation_kernels::epilogue::{Bias, Residual, Scale, TileEpilogue};
use activation_kernels::{AttentionOptions, Exact, Isa, Session, exact};
use ndarray::{Array1, Array2, Array4, Axis};

/// The inputs of [`outputs`], made once under the default environment.
struct Inputs {
    wide: Array2<f32>,
    tiny_a: Array2<f32>,
    tiny_b: Array2<f32>,
    a: Array2<f32>,
    b: Array2<f32>,
    bias: Array1<f32>,
    residual: Array2<f32>,
    q: Array4<f32>,
    k: Array4<f32>,
    v: Array4<f32>,
    norm: Array2<f32>,
    gamma: Array1<f32>,
    beta: Array1<f32>,
    up: Array2<f32>,
}

fn inputs() -> Inputs {
    let mut rng = Rng(2026);
    let mut m = |r: usize, c: usize, lo: f32, hi: f32| {
        Array2::from_shape_vec((r, c), rng.vec(r * c, lo, hi)).unwrap()
    };
    // Softmax rows spanning 120: probabilities down to the subnormals.
    let wide = m(6, 77, -120.0, 0.0);
    // Products of 1e-20 and 1e-21: subnormal sums.
    let tiny_a = m(9, 33, -1e-20, 1e-20);
    let tiny_b = m(33, 21, -1e-21, 1e-21);
    let a = m(37, 70, -2.0, 2.0);
    let b = m(70, 45, -2.0, 2.0);
    let bias = Array1::from(Rng(5).vec(45, -1e-38, 1e-38));
    let residual = m(37, 45, -1.0, 1.0);
    let mut rng = Rng(2027);
    let mut qkv = |scale: f32| {
        Array4::from_shape_vec((1, 2, 19, 16), rng.vec(2 * 19 * 16, -scale, scale)).unwrap()
    };
    // Large scores: attention weights down to the subnormals.
    let (q, k, v) = (qkv(6.0), qkv(6.0), qkv(1.0));
    let mut norm = m(5, 40, -3.0, 3.0);
    norm.row_mut(4).mapv_inplace(|x| x * 1e-39);
    let gamma = Array1::from(Rng(6).vec(40, 0.5, 1.5));
    let beta = Array1::from(Rng(7).vec(40, -0.5, 0.5));
    let up = m(6, 77, -2.0, 2.0);
    Inputs {
        wide,
        tiny_a,
        tiny_b,
        a,
        b,
        bias,
        residual,
        q,
        k,
        v,
        norm,
        gamma,
        beta,
        up,
    }
}

/// The exact softmax, log-softmax, GEMM (with bias, residual and scale epilogues), attention,
/// layer norm and SwiGLU of `x`, as bit patterns.
fn outputs(s: &Session<Exact>, x: &Inputs) -> Vec<(&'static str, Vec<u32>)> {
    let softmax = s.softmax_owned(&x.wide, Axis(1)).unwrap();
    let log_softmax = s.log_softmax_owned(&x.wide, Axis(1)).unwrap();
    let tiny = s.matmul_owned(&x.tiny_a, &x.tiny_b, &Scale(0.75)).unwrap();
    let epilogue = Bias::per_column(&x.bias).then(Residual::new(x.residual.view()));
    let gemm = s.matmul_owned(&x.a, &x.b, &epilogue).unwrap();
    let opts = AttentionOptions::default().causal();
    let attention = s.attention_owned(&x.q, &x.k, &x.v, &opts).unwrap();
    let mut norm = x.norm.clone();
    s.layer_norm(&mut norm, &x.gamma, &x.beta, 0.0).unwrap();
    let swiglu = s.swiglu_owned(&x.wide.mapv(|v| v / 8.0), &x.up).unwrap();
    vec![
        ("softmax", bits(&softmax)),
        ("log_softmax", bits(&log_softmax)),
        ("gemm of subnormals", bits(&tiny)),
        ("gemm with bias and residual", bits(&gemm)),
        ("attention", bits(&attention)),
        ("layer_norm", bits(&norm)),
        ("swiglu", bits(&swiglu)),
    ]
}

#[test]
fn exact_exp_keeps_its_subnormals_under_flush_to_zero() {
    let x = std::hint::black_box(-100.0f32);
    let y = with_fp_control(FP_FLUSH_TO_ZERO, || exact::exp(x));
    assert_eq!(y.to_bits(), 0x0000_001B);
    let y = with_fp_control(FP_FLUSH_TO_ZERO, || exact::log(std::hint::black_box(1e-40)));
    assert_eq!(y.to_bits(), exact::log(1e-40).to_bits());
    assert!(y.is_finite());
}

#[test]
fn golden_vectors_hold_under_ftz_daz_and_round_toward_zero_on_every_isa() {
    for env in [FP_FLUSH_TO_ZERO, FP_TOWARD_ZERO] {
        for func in golden_funcs() {
            let pairs = vectors(func.name());
            let x: Vec<f32> = pairs.iter().map(|p| f32::from_bits(p.0)).collect();
            let want: Vec<u32> = pairs.iter().map(|p| p.1).collect();
            for isa in Isa::available() {
                let mut y = vec![0f32; x.len()];
                with_fp_control(env, || exact::map(func, isa, &x, &mut y).unwrap());
                let bad = (0..x.len()).find(|&i| y[i].to_bits() != want[i]);
                assert_eq!(bad, None, "{func} on {isa}, control register {env:#010x}");
                assert_eq!(control_bits(fp_control()), FP_DEFAULT);
            }
            let f = scalar_fn(func);
            let scalar: Vec<u32> =
                with_fp_control(env, || x.iter().map(|&v| f(v).to_bits()).collect());
            let bad = (0..x.len()).find(|&i| scalar[i] != want[i]);
            assert_eq!(bad, None, "scalar {func}, control register {env:#010x}");
        }
    }
}

#[test]
fn operator_outputs_do_not_depend_on_the_callers_or_the_workers_fp_control_register() {
    let x = inputs();
    for isa in Isa::available() {
        let want = outputs(&pinned_session::<Exact>(isa, 1), &x);
        for env in [FP_FLUSH_TO_ZERO, FP_TOWARD_ZERO] {
            // The calling thread, and a session pool whose workers inherit it.
            let (got, after) = with_fp_control(env, || {
                let s = pinned_session::<Exact>(isa, 2);
                (outputs(&s, &x), fp_control())
            });
            assert_eq!(
                control_bits(after),
                env,
                "the caller's control register is restored"
            );
            // A caller's pool whose workers set it themselves, run from a default thread.
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .start_handler(move |_| set_fp_control(env))
                .build()
                .unwrap();
            let s = Session::exact()
                .with_isa(isa)
                .unwrap()
                .with_parallel_threshold(0);
            let (in_pool, workers) = pool.install(|| {
                let out = outputs(&s, &x);
                let workers = pool.broadcast(|_| control_bits(fp_control()));
                (out, workers)
            });
            assert!(workers.iter().all(|&w| w == env), "{workers:x?}");
            for ((name, w), (g, p)) in want.iter().zip(got.iter().zip(&in_pool)) {
                let diff = |o: &[u32]| (0..w.len()).find(|&i| o[i] != w[i]);
                assert_eq!(
                    diff(&g.1),
                    None,
                    "{name} on {isa}, caller control register {env:#010x}"
                );
                assert_eq!(
                    diff(&p.1),
                    None,
                    "{name} on {isa}, workers' control register {env:#010x}"
                );
            }
        }
    }
}

#[test]
fn epilogues_called_by_a_users_gemm_round_to_nearest_and_keep_subnormals() {
    let tile = ndarray::array![[1e-38f32, 3.0, -1e-39]];
    let bias = [-9e-39f32, 1.0 / 3.0, 5e-40];
    let mut want = tile.clone();
    Bias::per_column(&bias[..])
        .then(Scale(0.3))
        .apply(&mut want, 0, 0);
    let mut got = tile.clone();
    with_fp_control(FP_FLUSH_TO_ZERO | FP_TOWARD_ZERO, || {
        Bias::per_column(&bias[..])
            .then(Scale(0.3))
            .apply(&mut got, 0, 0)
    });
    assert_eq!(bits(&got), bits(&want));
    assert_ne!(want[[0, 0]], 0.0);
}
