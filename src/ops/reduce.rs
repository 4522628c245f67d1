//! The canonical reductions of exact mode (DESIGN.md, "Reductions in exact mode").
//!
//! A sum over a row uses 16 interleaved partial sums (element `i` goes to partial `i mod 16`,
//! in increasing `i`; a short row is padded with `+0`), combined by a fixed tree: `p[j] + p[j+8]`
//! for `j < 8`, then the same with 4, 2 and 1. AVX-512 keeps the 16 partials in one register,
//! AVX2 in two, SSE2 in four, scalar code in sixteen: the same additions in the same order, so
//! the same bits. The row maximum is exact in any order except for the sign of zero, which is
//! normalised to `+0`.

use crate::lanes::{Lanes, MAX_WIDTH};

/// Number of interleaved partial sums.
pub const PARTIALS: usize = 16;

/// Accumulates a row into the 16 canonical partial sums.
#[derive(Clone, Copy)]
pub struct CanonicalSum<L: Lanes> {
    acc: [L::F; PARTIALS],
}

impl<L: Lanes> CanonicalSum<L> {
    /// Registers per group of 16 elements.
    const REGS: usize = PARTIALS / L::WIDTH;

    /// All partials `+0`.
    #[inline(always)]
    pub fn new(l: L) -> Self {
        CanonicalSum {
            acc: [l.splat(0.0); PARTIALS],
        }
    }

    /// Adds the 16 elements `block[0..16]`, element `i` to partial `i`.
    #[inline(always)]
    pub fn add_block(&mut self, l: L, block: &[f32]) {
        for r in 0..Self::REGS {
            self.acc[r] = l.add(self.acc[r], l.load(&block[r * L::WIDTH..]));
        }
    }

    /// Adds register `r` of a group of 16 (elements `r*WIDTH..(r+1)*WIDTH` of the group).
    #[inline(always)]
    pub fn add_register(&mut self, l: L, r: usize, v: L::F) {
        self.acc[r] = l.add(self.acc[r], v);
    }

    /// The fixed tree over the 16 partials.
    #[inline(always)]
    pub fn finish(self, l: L) -> f32 {
        let mut p = [0f32; PARTIALS];
        for r in 0..Self::REGS {
            l.store(self.acc[r], &mut p[r * L::WIDTH..]);
        }
        tree(p)
    }
}

/// `p[j] + p[j+8]`, then 4, 2, 1.
#[inline(always)]
pub fn tree(mut p: [f32; PARTIALS]) -> f32 {
    let mut half = PARTIALS / 2;
    while half > 0 {
        for j in 0..half {
            p[j] += p[j + half];
        }
        half /= 2;
    }
    p[0]
}

/// The canonical sum of `row`.
#[inline(always)]
pub fn canonical_sum<L: Lanes>(l: L, row: &[f32]) -> f32 {
    canonical_sum_of(l, row, |v| v)
}

/// The canonical sum of `f(x_i)`; the padding of a short last block contributes `+0` whatever
/// `f(0)` is.
#[inline(always)]
pub fn canonical_sum_of<L: Lanes>(l: L, row: &[f32], f: impl Fn(L::F) -> L::F) -> f32 {
    let regs = PARTIALS / L::WIDTH;
    let mut sum = CanonicalSum::new(l);
    let mut blocks = row.chunks_exact(PARTIALS);
    for b in &mut blocks {
        for r in 0..regs {
            sum.add_register(l, r, f(l.load(&b[r * L::WIDTH..])));
        }
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        let mut pad = [0f32; PARTIALS];
        pad[..rest.len()].copy_from_slice(rest);
        let mut vals = [0f32; PARTIALS];
        for r in 0..regs {
            l.store(f(l.load(&pad[r * L::WIDTH..])), &mut vals[r * L::WIDTH..]);
        }
        vals[rest.len()..].fill(0.0);
        sum.add_block(l, &vals);
    }
    sum.finish(l)
}

/// `(max(row), any NaN)`: the maximum with `-0` normalised to `+0`, `-inf` for an empty or
/// all `-inf` row; NaNs are reported, not propagated.
#[inline(always)]
pub fn max_and_nan<L: Lanes>(l: L, row: &[f32]) -> (f32, bool) {
    let mut m = l.splat(f32::NEG_INFINITY);
    let mut nan = l.lt(m, m); // all false
    let mut chunks = row.chunks_exact(L::WIDTH);
    for c in &mut chunks {
        let x = l.load(c);
        m = l.select(l.gt(x, m), x, m);
        nan = l.mask_or(nan, l.is_nan(x));
    }
    let mut lanes = [f32::NEG_INFINITY; MAX_WIDTH];
    l.store(m, &mut lanes);
    let mut best = f32::NEG_INFINITY;
    let mut any_nan = l.any(nan);
    for &v in lanes[..L::WIDTH].iter().chain(chunks.remainder()) {
        any_nan |= v.is_nan();
        if v > best {
            best = v;
        }
    }
    // -0 and +0 compare equal, so which one won depends on the order: make it +0.
    (best + 0.0, any_nan)
}
