//! Sizes and options at their limits: huge or mismatched shapes, packed sizes past what memory
//! can hold, thread counts past any machine, options that contradict each other. Each gives a
//! clean `Error` (or the documented cap), never a panic or an abort.

use activation_kernels::epilogue::Identity;
use activation_kernels::{AttentionOptions, Error, Func, Session};
use ndarray::{Array1, Array2, Array3, Array4, ArrayView2, Axis};

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
