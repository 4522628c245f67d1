//! The transformer block of the example at a small size: the exact digest is the same on every
//! ISA and thread count; fast and exact agree, and both are close to the f64 block.

#[path = "../../examples/transformer_block/block.rs"]
#[allow(dead_code)]
pub(crate) mod block;

use activation_kernels::{Exact, Fast, Isa, Session};
use block::{Config, Timings, Weights, abs_diff, digest, forward, forward_f64, input};

const SMALL: Config = Config {
    d_model: 64,
    heads: 4,
    d_ff: 256,
    seq: 40,
    batch: 2,
};

#[test]
fn exact_digest_is_the_same_on_every_isa_and_thread_count() {
    let w = Weights::new(&SMALL, 7);
    let x = input(&SMALL, 7);
    let mut seen = None;
    for isa in Isa::available() {
        for threads in [1, 2, 3] {
            let s = Session::exact()
                .with_isa(isa)
                .unwrap()
                .with_threads(threads)
                .unwrap()
                .with_parallel_threshold(0);
            let y = forward(&s, &SMALL, &w, &x, &mut Timings::default()).unwrap();
            let d = digest(&y);
            match &seen {
                None => seen = Some(d),
                Some(first) => assert_eq!(&d, first, "{isa}, {threads} threads"),
            }
        }
    }
    // A different seed gives a different digest (the digest covers the output).
    let w2 = Weights::new(&SMALL, 8);
    let y2 = forward(
        &Session::exact(),
        &SMALL,
        &w2,
        &input(&SMALL, 8),
        &mut Timings::default(),
    )
    .unwrap();
    assert_ne!(Some(digest(&y2)), seen);
}

#[test]
fn fast_and_exact_agree_and_both_are_close_to_f64() {
    let w = Weights::new(&SMALL, 11);
    let x = input(&SMALL, 11);
    let e = forward(
        &Session::<Exact>::new(),
        &SMALL,
        &w,
        &x,
        &mut Timings::default(),
    )
    .unwrap();
    let f = forward(
        &Session::<Fast>::new(),
        &SMALL,
        &w,
        &x,
        &mut Timings::default(),
    )
    .unwrap();
    let r = forward_f64(&SMALL, &w, &x, &mut |_, _| {});
    // Outputs are O(1) (the residual stream); a block is a few hundred roundings deep in its
    // longest sums (d_ff = 256), each of relative size 2^-24, on values of a few units.
    let bound = 300.0 * 2f64.powi(-24) * 8.0;
    let (ef, _) = abs_diff(&f, &e.mapv(f64::from));
    let (er, _) = abs_diff(&e, &r);
    let (fr, _) = abs_diff(&f, &r);
    assert!(
        ef <= bound && er <= bound && fr <= bound,
        "exact-fast {ef:e}, exact-f64 {er:e}, fast-f64 {fr:e}, bound {bound:e}"
    );
    assert!(
        e.iter().zip(&f).any(|(a, b)| a != b),
        "fast mode should differ from exact somewhere"
    );
}

/// The digest the README publishes for the default run of the example (GPT-2 small, seed 2024):
/// the exact block at full size gives it on every instruction set (2 threads; the thread count
/// is covered above at a small size).
#[test]
fn the_readme_digest_of_the_default_block_holds_on_every_isa() {
    let readme = include_str!("../../README.md");
    let published = readme
        .lines()
        .find_map(|l| l.strip_prefix("SHA-256 of the exact output: "))
        .expect("the README publishes the digest")
        .trim();
    let c = Config::GPT2_SMALL;
    let (w, x) = (Weights::new(&c, 2024), input(&c, 2024));
    for isa in Isa::available() {
        let s = Session::exact()
            .with_isa(isa)
            .unwrap()
            .with_threads(2)
            .unwrap();
        let y = forward(&s, &c, &w, &x, &mut Timings::default()).unwrap();
        assert_eq!(digest(&y), published, "{isa}");
    }
}

/// The example's f64 reference takes its attention scores in chunks of rows, so a long
/// sequence never needs a `seq x seq` matrix: past one chunk (300 tokens) it still agrees with
/// the exact block, and the example's size estimates stay linear in `seq` (60,000 tokens: well
/// under the 28.8 GB the whole score matrix took) and say `None` where sizes overflow.
#[test]
fn the_reference_runs_in_chunks_and_the_size_estimates_are_checked() {
    let c = Config {
        d_model: 32,
        heads: 2,
        d_ff: 64,
        seq: block::REFERENCE_ROWS + 44,
        batch: 1,
    };
    let (w, x) = (Weights::new(&c, 5), input(&c, 5));
    let e = forward(
        &Session::<Exact>::new(),
        &c,
        &w,
        &x,
        &mut Timings::default(),
    )
    .unwrap();
    let mut calls = Vec::new();
    let r = forward_f64(&c, &w, &x, &mut |done, of| calls.push((done, of)));
    let (er, _) = abs_diff(&e, &r);
    assert!(er <= 300.0 * 2f64.powi(-24) * 8.0, "exact-f64 {er:e}");
    assert_eq!(calls, [(1, 2), (2, 2)]);
    let long = Config {
        seq: 60_000,
        batch: 1,
        ..Config::GPT2_SMALL
    };
    let bytes = long.reference_bytes().unwrap();
    assert!(bytes < 14_400_000_000, "{bytes}");
    let huge = Config {
        seq: usize::MAX / 2,
        ..Config::GPT2_SMALL
    };
    assert_eq!(huge.reference_bytes(), None);
    assert_eq!(huge.activation_bytes(), None);
}
