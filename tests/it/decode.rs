//! Parallel regions where the calling thread takes part: a decode step has the same bits on
//! one, two and three threads, from inside another rayon pool too; a panic inside a region
//! reaches the caller and leaves the session usable; a region started from inside a region
//! finishes.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::transformer_block::block::{
    Config, Packed, Timings, Weights, decode_step, input, prefill,
};
use activation_kernels::epilogue::{Identity, TileEpilogue};
use activation_kernels::{Exact, Fast, Mode, Session};
use ndarray::{Array2, ArrayRef2};

const SMALL: Config = Config {
    d_model: 64,
    heads: 4,
    d_ff: 256,
    seq: 24,
    batch: 1,
};

/// Three decode steps after a prefill of all but the last three tokens, on `s`: every output
/// bit of every step.
fn decode_bits<M: Mode>(s: &Session<M>) -> Vec<u32> {
    let w = Weights::new(&SMALL, 5);
    let x = input(&SMALL, 5);
    let p = Packed::new(s, &w).unwrap();
    let n = SMALL.seq - 3;
    let mut cache = prefill(s, &SMALL, &w, &p, &x, n).unwrap();
    let mut bits = Vec::new();
    for t in n..SMALL.seq {
        let token = x.slice(ndarray::s![t..t + 1, ..]).to_owned();
        let y = decode_step(
            s,
            &SMALL,
            &w,
            &p,
            &token,
            &mut cache,
            &mut Timings::default(),
        );
        bits.extend(y.unwrap().iter().map(|v| v.to_bits()));
    }
    bits
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

fn same_bits_on_every_thread_count<M: Mode>() {
    // Threshold 0: every region of the step runs as a parallel region.
    let on = |threads: usize| {
        Session::<M>::new()
            .with_threads(threads)
            .unwrap()
            .with_parallel_threshold(0)
    };
    let want = decode_bits(&on(1));
    for threads in [2, 3] {
        assert!(decode_bits(&on(threads)) == want, "{threads} threads");
        // Called from inside another pool's worker.
        let s = on(threads);
        assert!(
            pool(2).install(|| decode_bits(&s)) == want,
            "{threads} threads, inside another pool"
        );
        // A session without threads of its own, in the caller's pool.
        let caller = Session::<M>::new().with_parallel_threshold(0);
        assert!(
            pool(threads).install(|| decode_bits(&caller)) == want,
            "the caller's pool of {threads}"
        );
    }
    assert!(decode_bits(&Session::<M>::new().with_parallel_threshold(0)) == want);
}

#[test]
fn decode_step_bits_do_not_depend_on_the_threads_exact() {
    same_bits_on_every_thread_count::<Exact>();
}

#[test]
fn decode_step_bits_do_not_depend_on_the_threads_fast() {
    same_bits_on_every_thread_count::<Fast>();
}

/// Panics on the tile that holds `C[row, 0]`.
struct PanicAtRow(usize);

impl TileEpilogue for PanicAtRow {
    fn apply(&self, tile: &mut ArrayRef2<f32>, row: usize, col: usize) {
        if col == 0 && (row..row + tile.nrows()).contains(&self.0) {
            panic!("the epilogue of row {}", self.0);
        }
    }
}

#[test]
fn decode_a_panic_in_a_region_reaches_the_caller_and_the_session_stays_usable() {
    let s = Session::exact()
        .with_threads(2)
        .unwrap()
        .with_parallel_threshold(0);
    let a = Array2::from_shape_fn((200, 96), |(i, j)| (i as f32 - j as f32) / 64.0);
    let b = Array2::from_shape_fn((96, 300), |(i, j)| (i as f32 * 0.5 - j as f32) / 128.0);
    let mut want = Array2::zeros((200, 300));
    let one = Session::exact().with_threads(1).unwrap();
    one.matmul_into(&a, &b, &mut want, &Identity).unwrap();
    // The first tile, a middle one and the last: the caller's share and a helper's.
    for row in [0, 100, 199] {
        let mut c = Array2::zeros((200, 300));
        let r = catch_unwind(AssertUnwindSafe(|| {
            s.matmul_into(&a, &b, &mut c, &PanicAtRow(row))
        }));
        let payload = r.expect_err("the panic reaches the caller");
        let text = payload.downcast_ref::<String>().unwrap();
        assert_eq!(text, &format!("the epilogue of row {row}"));
        let mut c = Array2::zeros((200, 300));
        s.matmul_into(&a, &b, &mut c, &Identity).unwrap();
        assert!(c.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()));
    }
}

/// Runs the session's GELU on a tensor of its own in each tile: a region inside a region.
struct GeluInside<'s>(&'s Session<Exact>);

impl TileEpilogue for GeluInside<'_> {
    fn apply(&self, tile: &mut ArrayRef2<f32>, _: usize, _: usize) {
        let mut x = Array2::from_elem((64, 64), 0.5f32);
        self.0.gelu(&mut x);
        assert_eq!(x[[3, 3]], activation_kernels::exact::gelu_erf(0.5));
        tile.fill(1.0);
    }
}

#[test]
fn decode_a_region_inside_a_region_finishes() {
    for threads in [2, 3] {
        let s = Session::exact()
            .with_threads(threads)
            .unwrap()
            .with_parallel_threshold(0);
        let a = Array2::from_elem((300, 32), 1.0f32);
        let b = Array2::from_elem((32, 300), 1.0f32);
        let mut c = Array2::zeros((300, 300));
        s.matmul_into(&a, &b, &mut c, &GeluInside(&s)).unwrap();
        assert!(c.iter().all(|&x| x == 1.0));
    }
}
