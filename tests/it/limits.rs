//! Sizes and options at their limits: huge or mismatched shapes, packed sizes past what memory
//! can hold, thread counts past any machine, options that contradict each other. Each gives a
//! clean `Error` (or the documented cap), never a panic or an abort.

use crate::common::Rng;
use activation_kernels::epilogue::Identity;
use activation_kernels::{AttentionOptions, Error, Exact, Func, Mask, Mode, Session};
use half::bf16;
use ndarray::{Array1, Array2, Array3, Array4, ArrayView2, Axis};
use std::process::Command;

/// A huge `rows x cols` matrix that costs nothing: one zero, broadcast.
fn huge(zero: &Array2<f32>, rows: usize, cols: usize) -> ArrayView2<'_, f32> {
    zero.broadcast((rows, cols)).unwrap()
}

fn is_clean(e: &Error) -> bool {
    matches!(
        e,
        Error::ShapeMismatch { .. } | Error::InvalidArgument(_) | Error::LengthMismatch { .. }
    )
}

/// `pack` of a matrix whose packed size overflows `usize` in bytes (not in values), and of one
/// whose size is representable but cannot be allocated (2^62 bytes): both `InvalidArgument`.
#[test]
fn pack_of_an_impossible_size_is_an_error_not_a_panic_or_an_abort() {
    let z = Array2::<f32>::zeros((1, 1));
    for s in [Session::exact(), Session::exact().with_threads(2).unwrap()] {
        for (k, n) in [
            (1usize << 31, 1usize << 30),
            (1 << 31, 1 << 29),
            (4, (1 << 61) - 1),
        ] {
            let e = s.pack(&huge(&z, k, n)).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument(_)), "[{k}, {n}]: {e}");
        }
    }
    // A small one still packs.
    assert_eq!(Session::fast().pack(&huge(&z, 3, 5)).unwrap().dim(), (3, 5));
}

/// `matmul_owned` and `matmul_batched_owned` check the shapes before they allocate the output:
/// mismatched huge shapes are `ShapeMismatch`, matching shapes whose output cannot be allocated
/// are `InvalidArgument`.
#[test]
fn matmul_owned_forms_check_shapes_before_allocating() {
    let z = Array2::<f32>::zeros((1, 1));
    let s = Session::exact();
    let e = s
        .matmul_owned(&huge(&z, 1 << 40, 3), &huge(&z, 4, 1 << 40), &Identity)
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    // Shapes that agree, but an output of 2^62 values.
    let e = s
        .matmul_owned(&huge(&z, 1 << 31, 1), &huge(&z, 1, 1 << 31), &Identity)
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let z3 = Array3::<f32>::zeros((1, 1, 1));
    let e = s
        .matmul_batched_owned(
            &z3.broadcast((1 << 20, 1 << 20, 3)).unwrap(),
            &z3.broadcast((1 << 20, 4, 1 << 20)).unwrap(),
            &Identity,
        )
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    let e = s
        .matmul_batched_owned(
            &z3.broadcast((1 << 20, 1 << 20, 1)).unwrap(),
            &z3.broadcast((1 << 20, 1, 1 << 20)).unwrap(),
            &Identity,
        )
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
}

/// `attention_owned` with huge mismatched shapes is `ShapeMismatch`; with huge matching ones
/// whose output cannot be allocated, `InvalidArgument`.
#[test]
fn attention_owned_checks_shapes_before_allocating() {
    let z = Array2::<f32>::zeros((1, 1));
    let s = Session::fast();
    let opts = AttentionOptions::default();
    let e = s
        .attention_owned(
            &huge(&z, 1 << 40, 3),
            &huge(&z, 5, 4),
            &huge(&z, 5, 1 << 40),
            &opts,
        )
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    let e = s
        .attention_owned(
            &huge(&z, 1 << 40, 3),
            &huge(&z, 5, 3),
            &huge(&z, 5, 1 << 40),
            &opts,
        )
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let z4 = Array4::<f32>::zeros((1, 1, 1, 1));
    let e = s
        .attention_owned(
            &z4.broadcast((1 << 20, 2, 1 << 20, 8)).unwrap(),
            &z4.broadcast((1 << 20, 3, 1 << 20, 8)).unwrap(),
            &z4.broadcast((1 << 20, 3, 1 << 20, 8)).unwrap(),
            &opts,
        )
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
}

/// The fallible `_owned` forms that copy their input (softmax, gated, norm): a huge broadcast
/// input is an error, not an abort on the failed allocation.
#[test]
fn owned_copies_of_huge_inputs_are_errors() {
    let z = Array2::<f32>::zeros((1, 1));
    let big = huge(&z, 1 << 31, 1 << 30);
    let s = Session::exact();
    let one = Array1::<f32>::ones(1);
    let (ones, zeros) = (one.broadcast(1 << 30).unwrap(), Array1::zeros(1));
    let zeros = zeros.broadcast(1 << 30).unwrap();
    let errors = [
        s.softmax_owned(&big, Axis(1)).unwrap_err(),
        s.log_softmax_owned(&big, Axis(1)).unwrap_err(),
        s.masked_softmax_owned(&big, 1.0, &activation_kernels::Mask::None)
            .unwrap_err(),
        s.gated_owned(Func::Silu, &big, &big).unwrap_err(),
        s.layer_norm_owned(&big, &ones, &zeros, 1e-5).unwrap_err(),
    ];
    for e in errors {
        assert!(is_clean(&e), "{e}");
    }
}

/// `with_threads` caps the pool at `Session::MAX_THREADS`: `usize::MAX` threads is a pool of the
/// cap, not an attempt at 65,535 threads.
#[test]
fn thread_counts_past_the_cap_are_capped() {
    let s = Session::exact().with_threads(usize::MAX).unwrap();
    assert_eq!(
        s.threads(),
        Some(Session::<activation_kernels::Exact>::MAX_THREADS)
    );
    assert_eq!(Session::exact().with_threads(3).unwrap().threads(), Some(3));
    assert_eq!(Session::exact().with_threads(1).unwrap().threads(), Some(1));
    assert_eq!(Session::exact().threads(), None);
    assert!(matches!(
        Session::exact().with_threads(0),
        Err(Error::InvalidArgument(_))
    ));
}

/// `causal_offset` without `causal` is rejected rather than silently ignored.
#[test]
fn a_causal_offset_without_causal_is_an_error() {
    let q = Array2::<f32>::ones((2, 4));
    let opts = AttentionOptions {
        causal_offset: Some(1),
        ..AttentionOptions::default()
    };
    let e = Session::exact()
        .attention_owned(&q, &q, &q, &opts)
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    // With causal it is the offset.
    let out = Session::exact()
        .attention_owned(
            &q,
            &q,
            &q,
            &AttentionOptions::default().causal_with_offset(1),
        )
        .unwrap();
    assert_eq!(out.dim(), (2, 4));
}

/// Every `_owned` form on `[rows, cols]` inputs that cost nothing (broadcast views), named. With
/// `mismatch`, each form that takes a second shape (or an axis) gets one that does not fit: a
/// second operand, gamma, mask or axis one too long. Unary forms have no mismatch and are left
/// out then.
fn owned_forms<M: Mode>(
    s: &Session<M>,
    rows: usize,
    cols: usize,
    mismatch: bool,
) -> Vec<(&'static str, Result<(), Error>)> {
    let (z1, z2) = (Array1::<f32>::zeros(1), Array2::<f32>::zeros((1, 1)));
    let (b1, b2) = (
        Array2::<bool>::from_elem((1, 1), true),
        Array2::from_elem((1, 1), bf16::ZERO),
    );
    let x = z2.broadcast((rows, cols)).unwrap();
    let other = cols + usize::from(mismatch);
    let y = z2.broadcast((rows, other)).unwrap();
    let v = z1.broadcast(other).unwrap();
    let w = z2.broadcast((other, cols)).unwrap();
    let kv = z2.broadcast((5, other)).unwrap();
    let mut forms: Vec<(&'static str, Result<(), Error>)> = vec![
        ("swiglu", ok(s.swiglu_owned(&x, &y))),
        ("geglu", ok(s.geglu_owned(&x, &y))),
        ("geglu_tanh", ok(s.geglu_tanh_owned(&x, &y))),
        ("gated", ok(s.gated_owned(Func::Tanh, &x, &y))),
        ("layer_norm", ok(s.layer_norm_owned(&x, &v, &v, 1e-5))),
        (
            "add_layer_norm",
            ok(s.add_layer_norm_owned(&x, &y, &v, &v, 1e-5)),
        ),
        ("matmul", ok(s.matmul_owned(&x, &w, &Identity))),
        (
            "matmul_batched",
            ok(s.matmul_batched_owned(&x.insert_axis(Axis(0)), &w.insert_axis(Axis(0)), &Identity)),
        ),
        (
            "attention",
            ok(s.attention_owned(&x, &kv, &kv, &AttentionOptions::default())),
        ),
        (
            "attention causal",
            ok(s.attention_owned(&x, &kv, &kv, &AttentionOptions::default().causal())),
        ),
    ];
    let axis = Axis(1 + usize::from(mismatch));
    forms.push(("softmax", ok(s.softmax_owned(&x, axis))));
    forms.push(("log_softmax", ok(s.log_softmax_owned(&x, axis))));
    let keep = b1.broadcast((1 + 2 * usize::from(mismatch), cols)).unwrap();
    let keep = Mask::Keep(keep.into_dyn());
    forms.push((
        "masked_softmax keep",
        ok(s.masked_softmax_owned(&x, 0.5, &keep)),
    ));
    let add = z2.broadcast((rows, other)).unwrap().into_dyn();
    let add = Mask::Additive(add);
    forms.push((
        "masked_softmax additive",
        ok(s.masked_softmax_owned(&x, 0.5, &add)),
    ));
    if !mismatch {
        let h = b2.broadcast((rows, cols)).unwrap();
        forms.push((
            "masked_softmax none",
            ok(s.masked_softmax_owned(&x, 0.5, &Mask::None)),
        ));
        forms.push(("l2_normalize", ok(s.l2_normalize_owned(&x))));
        forms.push(("apply", ok(s.apply_owned(Func::Erf, &x))));
        forms.push(("apply bf16", ok(s.apply_owned(Func::Sigmoid, &h))));
        forms.push(("gelu", ok(s.gelu_owned(&x))));
        forms.push(("gelu_tanh", ok(s.gelu_tanh_owned(&x))));
        forms.push(("sigmoid", ok(s.sigmoid_owned(&x))));
        forms.push(("tanh", ok(s.tanh_owned(&x))));
        forms.push(("silu", ok(s.silu_owned(&x))));
        forms.push(("exp", ok(s.exp_owned(&x))));
        forms.push(("log", ok(s.log_owned(&x))));
        forms.push(("erf bf16", ok(s.erf_owned(&h))));
    }
    forms
}

/// The result without its array.
fn ok<A>(r: Result<A, Error>) -> Result<(), Error> {
    r.map(drop)
}

/// Random `[rows, cols]` shapes of 2^46 to 2^62 elements (256 TiB to past `usize` in bytes),
/// every one a broadcast view ndarray accepts; more of them under `AK_EXTENSIVE`.
fn huge_shapes() -> Vec<(usize, usize)> {
    let mut rng = Rng(0x32);
    let n = if crate::common::extensive() { 400 } else { 24 };
    (0..n)
        .map(|_| {
            let a = 15 + (rng.next_u64() % 17) as u32;
            let low = (46 - a).max(15);
            let b = low + (rng.next_u64() % u64::from(32 - low)) as u32;
            let jitter = |r: &mut Rng| (r.next_u64() % 7) as usize;
            (
                (1usize << a) + jitter(&mut rng),
                (1usize << b) + jitter(&mut rng),
            )
        })
        .collect()
}

fn huge_inputs_for<M: Mode>(s: &Session<M>, mode: &str) {
    for (rows, cols) in huge_shapes() {
        for (name, r) in owned_forms(s, rows, cols, false) {
            let e = r.expect_err(name);
            assert!(
                matches!(e, Error::InvalidArgument(_)),
                "{mode} {name} [{rows}, {cols}]: {e}"
            );
        }
        for (name, r) in owned_forms(s, rows, cols, true) {
            let e = r.expect_err(name);
            assert!(
                matches!(
                    e,
                    Error::ShapeMismatch { .. } | Error::AxisOutOfRange { .. }
                ),
                "{mode} {name} [{rows}, {cols}] mismatched: {e}"
            );
        }
    }
}

/// Every `_owned` form, over random huge shapes in both modes: a huge broadcast input whose
/// output cannot be allocated is `InvalidArgument`; with shapes that do not fit each other, the
/// mismatch is the error (checked before any allocation). Never a panic or an abort.
#[test]
fn every_owned_form_of_a_huge_or_mismatched_input_is_an_error() {
    huge_inputs_for(&Session::exact(), "exact");
    huge_inputs_for(&Session::fast().with_threads(2).unwrap(), "fast");
    // The forms still compute on small inputs.
    let s = Session::exact();
    for (name, r) in owned_forms(&s, 3, 4, false) {
        assert!(r.is_ok(), "{name}: {r:?}");
    }
}

/// Set in the child process of the thread-pool test: it builds the biggest pool under an
/// address-space limit.
const POOL_CHILD: &str = "AK_TEST_THREAD_POOL_CHILD";

/// A pool the system cannot start is `Error::ThreadPool`, returned, not an abort. The test runs
/// itself again as a child under a 1 GiB address-space limit (`ulimit -v`), in which
/// `Session::MAX_THREADS` threads of 2 MiB stacks cannot all be mapped; the child prints what
/// `with_threads` returned and exits normally.
#[cfg(target_os = "linux")]
#[test]
fn a_thread_pool_that_cannot_start_is_an_error_not_an_abort() {
    const NAME: &str = "limits::a_thread_pool_that_cannot_start_is_an_error_not_an_abort";
    if std::env::var_os(POOL_CHILD).is_some() {
        match Session::exact().with_threads(Session::<Exact>::MAX_THREADS) {
            Ok(s) => println!("child: a pool of {:?} threads", s.threads()),
            Err(e) => println!("child: {e:?}"),
        }
        return;
    }
    let out = Command::new("sh")
        .args(["-c", r#"ulimit -v 1048576 && exec "$0" "$@""#])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads", "1"])
        .env(POOL_CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "child: {:?}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("child: ThreadPool(") && stdout.contains("1 passed"),
        "{stdout}\n{stderr}"
    );
}
