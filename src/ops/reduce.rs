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
struct CanonicalSum<L: Lanes> {
    acc: [L::F; PARTIALS],
}

impl<L: Lanes> CanonicalSum<L> {
    /// Registers per group of 16 elements. A lane type must divide the 16 partials evenly (a
    /// wider one would leave partials out): checked when the type is compiled in.
    const REGS: usize = {
        assert!(L::WIDTH <= PARTIALS && PARTIALS.is_multiple_of(L::WIDTH));
        PARTIALS / L::WIDTH
    };

    /// All partials `+0`.
    #[inline(always)]
    fn new(l: L) -> Self {
        CanonicalSum {
            acc: [l.splat(0.0); PARTIALS],
        }
    }

    /// Adds register `r` of a group of 16 (elements `r*WIDTH..(r+1)*WIDTH` of the group).
    #[inline(always)]
    fn add_register(&mut self, l: L, r: usize, v: L::F) {
        self.acc[r] = l.add(self.acc[r], v);
    }

    /// The fixed tree over the 16 partials.
    #[inline(always)]
    fn finish(self, l: L) -> f32 {
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

/// The canonical sum of `n` values delivered a register at a time: `reg(start, len)` returns
/// the register of elements `start..start + len` (`len == WIDTH`, or fewer at the end of the
/// row, their other lanes anything). Lanes past the end of the row contribute `+0`, whatever
/// `reg` put there.
///
/// A closure does not get the `#[target_feature]` of the function it is written in: left out
/// of line, its lane operations become calls. Callers with a large body (an exp) mark their
/// closure `#[inline(always)]`.
#[inline(always)]
pub fn canonical_sum_with<L: Lanes>(
    l: L,
    n: usize,
    mut reg: impl FnMut(usize, usize) -> L::F,
) -> f32 {
    let w = L::WIDTH;
    let regs = CanonicalSum::<L>::REGS;
    let mut sum = CanonicalSum::new(l);
    let full = n - n % PARTIALS;
    for start in (0..full).step_by(PARTIALS) {
        for r in 0..regs {
            sum.add_register(l, r, reg(start + r * w, w));
        }
    }
    for r in 0..regs {
        let start = full + r * w;
        if start >= n {
            break;
        }
        let len = (n - start).min(w);
        let v = reg(start, len);
        let v = if len == w {
            v
        } else {
            // The lanes of the row are those where the padded ones load as 1.
            let zero = l.splat(0.0);
            let inside = l.gt(l.load_partial(&[1.0; MAX_WIDTH][..len], 0.0), zero);
            l.select(inside, v, zero)
        };
        sum.add_register(l, r, v);
    }
    sum.finish(l)
}

/// The canonical sum of `f(x_i)` over `row`.
#[inline(always)]
pub fn canonical_sum_of<L: Lanes>(l: L, row: &[f32], f: impl Fn(L::F) -> L::F) -> f32 {
    canonical_sum_with(
        l,
        row.len(),
        #[inline(always)]
        |start, len| f(l.load_partial(&row[start..start + len], 0.0)),
    )
}

/// `(max(row), any NaN)`: the maximum with `-0` normalised to `+0`, `-inf` for an empty or
/// all `-inf` row; NaNs are reported, not propagated.
#[inline(always)]
pub fn max_and_nan<L: Lanes>(l: L, row: &[f32]) -> (f32, bool) {
    // Four running maxima, so that consecutive registers do not wait for each other's compare
    // and select; a maximum is the same value in any order (the sign of a zero maximum is
    // normalised below).
    const ACC: usize = 4;
    let w = L::WIDTH;
    let mut m = [l.splat(f32::NEG_INFINITY); ACC];
    let mut nan = l.lt(m[0], m[0]); // all false
    let mut groups = row.chunks_exact(ACC * w);
    for g in &mut groups {
        for (i, m) in m.iter_mut().enumerate() {
            let x = l.load(&g[i * w..]);
            *m = l.select(l.gt(x, *m), x, *m);
            nan = l.mask_or(nan, l.is_nan(x));
        }
    }
    for c in groups.remainder().chunks(w) {
        let x = l.load_partial(c, f32::NEG_INFINITY);
        m[0] = l.select(l.gt(x, m[0]), x, m[0]);
        nan = l.mask_or(nan, l.is_nan(x));
    }
    let [m0, m1, m2, m3] = m;
    let (m01, m23) = (
        l.select(l.gt(m1, m0), m1, m0),
        l.select(l.gt(m3, m2), m3, m2),
    );
    let m = l.select(l.gt(m23, m01), m23, m01);
    let mut lanes = [f32::NEG_INFINITY; MAX_WIDTH];
    l.store(m, &mut lanes);
    let best = lanes[..L::WIDTH]
        .iter()
        .fold(f32::NEG_INFINITY, |b, &v| if v > b { v } else { b });
    // -0 and +0 compare equal, so which one won depends on the order: make it +0.
    (best + 0.0, l.any(nan))
}

#[cfg(test)]
mod tests {
    use super::max_and_nan;
    use crate::lanes::{Isa, Lanes, WithLanes};

    fn max_on(isa: Isa, row: &[f32]) -> (f32, bool) {
        struct Op<'a>(&'a [f32]);
        impl WithLanes for Op<'_> {
            type Output = (f32, bool);
            const USES_FMA: bool = false;
            fn run<L: Lanes>(self, l: L) -> (f32, bool) {
                max_and_nan(l, self.0)
            }
        }
        isa.supported().unwrap().dispatch(Op(row))
    }

    /// The maximum wherever it lies (each of the running maxima, the tail), `+0` for a zero
    /// maximum of either sign, `-inf` for an empty row, and a NaN anywhere reported.
    #[test]
    fn max_and_nan_finds_the_maximum_anywhere_on_every_isa() {
        for isa in Isa::available() {
            assert_eq!(max_on(isa, &[]), (f32::NEG_INFINITY, false), "{isa}");
            for n in 1..=70 {
                for at in 0..n {
                    let mut row: Vec<f32> = (0..n).map(|i| -1.0 - (i % 7) as f32).collect();
                    row[at] = 2.5;
                    assert_eq!(max_on(isa, &row), (2.5, false), "{isa} n {n} at {at}");
                    row.iter_mut().for_each(|x| *x = f32::NEG_INFINITY);
                    row[at] = -0.0;
                    let (m, nan) = max_on(isa, &row);
                    assert_eq!((m.to_bits(), nan), (0, false), "{isa} n {n} at {at}");
                    row[at] = f32::NAN;
                    assert!(max_on(isa, &row).1, "{isa} n {n} at {at}");
                }
            }
        }
    }
}
