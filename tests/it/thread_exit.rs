//! Calls at thread exit: a thread-local of the caller whose destructor calls the crate after
//! the crate's own thread-local buffers are gone (the row buffers, the regions' buffer of erf
//! and GELU erf, the GEMM's pack buffers) gets the same bits as any other call, not a panic
//! (which there would abort the process).

use crate::common::*;
use activation_kernels::epilogue::Identity;
use activation_kernels::{Exact, Func, Isa, exact};
use ndarray::{Array2, s};
use std::cell::RefCell;
use std::sync::mpsc::{Sender, channel};

/// What the destructor computes: erf of a slice (the regions' buffer), a layer norm of a
/// strided view (a row buffer), a product (the pack buffers).
fn work(isa: Isa) -> Vec<u32> {
    let x: Vec<f32> = (0..300).map(|i| i as f32 / 40.0 - 3.5).collect();
    let mut y = vec![0f32; x.len()];
    exact::map(Func::Erf, isa, &x, &mut y).unwrap();
    let session = pinned_session::<Exact>(isa, 1);
    let mut wide = Array2::from_shape_fn((4, 34), |(i, j)| (i * 34 + j) as f32 / 9.0);
    let (g, b) = (ndarray::Array1::ones(17), ndarray::Array1::zeros(17));
    session
        .layer_norm(&mut wide.slice_mut(s![.., ..;2]), &g, &b, 1e-5)
        .unwrap();
    let a = Array2::from_shape_fn((9, 40), |(i, j)| (i + j) as f32 / 7.0);
    let p = session.matmul_owned(&a, &a.t(), &Identity).unwrap();
    let mut out = bits(&y);
    out.extend(bits(&wide));
    out.extend(bits(&p));
    out
}

struct CallsOnDrop {
    isa: Isa,
    report: Option<Sender<Vec<u32>>>,
}

impl Drop for CallsOnDrop {
    fn drop(&mut self) {
        if let Some(tx) = self.report.take() {
            let _ = tx.send(work(self.isa));
        }
    }
}

thread_local! {
    static ON_EXIT: RefCell<Option<CallsOnDrop>> = const { RefCell::new(None) };
}

#[test]
fn calls_from_a_thread_local_destructor_give_the_usual_bits() {
    for isa in Isa::available() {
        let want = work(isa);
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            // Registered first, so destroyed last: after the crate's buffers, which the
            // calls below register.
            ON_EXIT.with(|c| {
                *c.borrow_mut() = Some(CallsOnDrop {
                    isa,
                    report: Some(tx),
                })
            });
            let _ = work(isa);
        })
        .join()
        .unwrap();
        assert_eq!(rx.recv().unwrap(), want, "{isa}");
    }
}
