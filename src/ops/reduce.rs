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

    /// Adds elements `start..n` (`start` a multiple of 16), `reg(ctx, start, len)` giving the
    /// register of elements `start..start + len` (fewer than `WIDTH` only at the end of the
    /// row, its other lanes anything: they add `+0`).
    #[inline(always)]
    fn add_from<C: ?Sized>(
        &mut self,
        l: L,
        start: usize,
        n: usize,
        ctx: &mut C,
        mut reg: impl FnMut(&mut C, usize, usize) -> L::F,
    ) {
        debug_assert!(start.is_multiple_of(PARTIALS));
        let w = L::WIDTH;
        let full = n - n % PARTIALS;
        for start in (start..full).step_by(PARTIALS) {
            for r in 0..Self::REGS {
                self.add_register(l, r, reg(ctx, start + r * w, w));
            }
        }
        for r in 0..Self::REGS {
            let start = full + r * w;
            if start >= n {
                break;
            }
            let len = (n - start).min(w);
            let v = reg(ctx, start, len);
            self.add_register(l, r, first_lanes(l, v, len));
        }
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

/// `v` in its first `len` lanes, `+0` in the others (`len == WIDTH`: `v` itself).
#[inline(always)]
fn first_lanes<L: Lanes>(l: L, v: L::F, len: usize) -> L::F {
    if len == L::WIDTH {
        return v;
    }
    // The lanes of the row are those where the padded ones load as 1.
    let zero = l.splat(0.0);
    let inside = l.gt(l.load_partial(&[1.0; MAX_WIDTH][..len], 0.0), zero);
    l.select(inside, v, zero)
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
    let mut sum = CanonicalSum::new(l);
    sum.add_from(
        l,
        0,
        n,
        &mut (),
        #[inline(always)]
        |_, start, len| reg(start, len),
    );
    sum.finish(l)
}

/// [`canonical_sum_with`] with the values delivered a group of registers at a time where a
/// whole group fits: `group(ctx, start)` returns elements `start..start + G::WIDTH` as one
/// register of `G` (registers of `L` taken together, [`Lanes::WideGroup`]), `reg(ctx, start,
/// len)` a register of `L` for the rest of the row. Both get `ctx` (the caller's mutable
/// state, such as the row its values are stored to) so that neither closure holds it.
///
/// The registers of a group are added in their order, to the partials their elements go to:
/// the same additions in the same order as one register at a time, so the same bits. What
/// the group changes is the code: a group's values are formed by one straight block of
/// independent chains side by side (an exp of four registers), where registers formed one
/// after another leave each exp's chain alone in the instruction window.
#[inline(always)]
pub fn canonical_sum_grouped<L: Lanes, G: Lanes, C: ?Sized>(
    l: L,
    g: G,
    n: usize,
    ctx: &mut C,
    mut group: impl FnMut(&mut C, usize) -> G::F,
    reg: impl FnMut(&mut C, usize, usize) -> L::F,
) -> f32 {
    let w = L::WIDTH;
    let regs = CanonicalSum::<L>::REGS;
    let mut sum = CanonicalSum::new(l);
    let mut start = 0;
    // A group that is whole groups of 16 elements (and fits the buffer) starts every group at
    // partial 0; any other (a single register) goes the register way.
    if G::WIDTH > w && G::WIDTH.is_multiple_of(PARTIALS) && G::WIDTH <= GROUP_MAX {
        let mut buf = [0f32; GROUP_MAX];
        while start + G::WIDTH <= n {
            // Through a buffer the compiler keeps in registers: the group's registers in turn.
            g.store(group(ctx, start), &mut buf);
            for k in 0..G::WIDTH / w {
                sum.add_register(l, k % regs, l.load(&buf[k * w..]));
            }
            start += G::WIDTH;
        }
    }
    sum.add_from(l, start, n, ctx, reg);
    sum.finish(l)
}

/// The widest group [`canonical_sum_grouped`] takes, in elements: eight AVX-512 registers.
const GROUP_MAX: usize = 8 * MAX_WIDTH;

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

/// The canonical sums of `f(x_i).0` and of `f(x_i).1` over `row`, in one pass: each the bits
/// of [`canonical_sum_of`] with that half of `f`.
#[inline(always)]
pub fn canonical_sums_of<L: Lanes>(
    l: L,
    row: &[f32],
    f: impl Fn(L::F) -> (L::F, L::F),
) -> (f32, f32) {
    let (mut a, mut b) = (CanonicalSum::new(l), CanonicalSum::new(l));
    let (w, n) = (L::WIDTH, row.len());
    let full = n - n % PARTIALS;
    for start in (0..full).step_by(PARTIALS) {
        for r in 0..CanonicalSum::<L>::REGS {
            let (fa, fb) = f(l.load(&row[start + r * w..]));
            a.add_register(l, r, fa);
            b.add_register(l, r, fb);
        }
    }
    for r in 0..CanonicalSum::<L>::REGS {
        let start = full + r * w;
        if start >= n {
            break;
        }
        let len = (n - start).min(w);
        let (fa, fb) = f(l.load_partial(&row[start..start + len], 0.0));
        a.add_register(l, r, first_lanes(l, fa, len));
        b.add_register(l, r, first_lanes(l, fb, len));
    }
    (a.finish(l), b.finish(l))
}

/// What one pass over a row finds: its maximum and minimum, and whether it holds a NaN.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowExtremes {
    /// The maximum, `-0` normalised to `+0`; `-inf` for an empty or all `-inf` row.
    pub max: f32,
    /// The minimum (either zero where it is a zero); `+inf` for an empty row.
    pub min: f32,
    /// Some entry is NaN (NaNs are reported, not propagated into `max` and `min`).
    pub nan: bool,
}

/// The largest `|x|` of a row, exact in any order (NaN is never the largest; the callers, the
/// overflow-safe norms, know the row is finite).
#[inline(always)]
pub(crate) fn max_abs<L: Lanes>(l: L, row: &[f32]) -> f32 {
    let mut m = l.splat(0.0);
    for c in row.chunks(L::WIDTH) {
        let a = super::abs(l, l.load_partial(c, 0.0));
        m = l.select(l.gt(a, m), a, m);
    }
    let mut lanes = [0f32; MAX_WIDTH];
    l.store(m, &mut lanes);
    lanes[..L::WIDTH]
        .iter()
        .fold(0.0, |b, &v| if v > b { v } else { b })
}

/// The [`RowExtremes`] of `row`.
#[inline(always)]
pub fn row_extremes<L: Lanes>(l: L, row: &[f32]) -> RowExtremes {
    row_extremes_beside(
        l,
        row,
        #[inline(always)]
        |_, _| {},
    )
}

/// [`row_extremes`], calling `beside(start, len)` for each register of the row it reads
/// (elements `start..start + len`, every element once): other work on another row of the same
/// length, interleaved with this cheap pass a register at a time.
#[inline(always)]
pub fn row_extremes_beside<L: Lanes>(
    l: L,
    row: &[f32],
    mut beside: impl FnMut(usize, usize),
) -> RowExtremes {
    // Four running maxima, so that consecutive registers do not wait for each other's compare
    // and select; a maximum is the same value in any order (the sign of a zero maximum is
    // normalised below). The minima likewise.
    const ACC: usize = 4;
    let w = L::WIDTH;
    let mut hi = [l.splat(f32::NEG_INFINITY); ACC];
    let mut lo = [l.splat(f32::INFINITY); ACC];
    let mut nan = l.lt(hi[0], hi[0]); // all false
    let mut groups = row.chunks_exact(ACC * w);
    for (k, g) in (&mut groups).enumerate() {
        for i in 0..ACC {
            let x = l.load(&g[i * w..]);
            hi[i] = l.select(l.gt(x, hi[i]), x, hi[i]);
            lo[i] = l.min(x, lo[i]);
            nan = l.mask_or(nan, l.is_nan(x));
            beside((k * ACC + i) * w, w);
        }
    }
    let rest = row.len() - groups.remainder().len();
    for (k, c) in groups.remainder().chunks(w).enumerate() {
        // Padded with an entry of the row: neutral for both the maximum and the minimum.
        let x = l.load_partial(c, row[0]);
        hi[0] = l.select(l.gt(x, hi[0]), x, hi[0]);
        lo[0] = l.min(x, lo[0]);
        nan = l.mask_or(nan, l.is_nan(x));
        beside(rest + k * w, c.len());
    }
    let (mut top, mut bottom) = (hi[0], lo[0]);
    for i in 1..ACC {
        top = l.select(l.gt(hi[i], top), hi[i], top);
        bottom = l.min(lo[i], bottom);
    }
    let mut lanes = [[0f32; MAX_WIDTH]; 2];
    l.store(top, &mut lanes[0]);
    l.store(bottom, &mut lanes[1]);
    let max = lanes[0][..L::WIDTH]
        .iter()
        .fold(f32::NEG_INFINITY, |b, &v| if v > b { v } else { b });
    let min = lanes[1][..L::WIDTH]
        .iter()
        .fold(f32::INFINITY, |b, &v| if v < b { v } else { b });
    RowExtremes {
        // -0 and +0 compare equal, so which one won depends on the order: make it +0.
        max: max + 0.0,
        min,
        nan: l.any(nan),
    }
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::{RowExtremes, canonical_sum_of, canonical_sums_of, row_extremes};
    use crate::lanes::{Exact, Isa, LaneOp, Lanes, Mode};

    fn extremes_on(isa: Isa, row: &[f32]) -> RowExtremes {
        struct Op<'a>(&'a [f32]);
        impl LaneOp for Op<'_> {
            type Output = RowExtremes;
            fn run<L: Lanes, M: Mode>(self, l: L) -> RowExtremes {
                row_extremes(l, self.0)
            }
        }
        isa.supported().unwrap().dispatch::<Exact, _>(Op(row))
    }

    /// The maximum and the minimum wherever they lie (each of the running extremes, the
    /// tail), `+0` for a zero maximum of either sign, `-inf` / `+inf` for an empty row, and a
    /// NaN anywhere reported.
    pub fn row_extremes_finds_both_anywhere_on_every_isa() {
        for isa in Isa::available() {
            let empty = extremes_on(isa, &[]);
            assert_eq!(
                (empty.max, empty.min, empty.nan),
                (f32::NEG_INFINITY, f32::INFINITY, false)
            );
            for n in 1..=70 {
                for at in 0..n {
                    let mut row: Vec<f32> = (0..n).map(|i| -1.0 - (i % 7) as f32).collect();
                    row[at] = 2.5;
                    let e = extremes_on(isa, &row);
                    assert_eq!((e.max, e.nan), (2.5, false), "{isa} n {n} at {at}");
                    row[at] = -9.5;
                    let e = extremes_on(isa, &row);
                    assert_eq!(e.min, -9.5, "{isa} n {n} at {at}");
                    row.iter_mut().for_each(|x| *x = f32::NEG_INFINITY);
                    row[at] = -0.0;
                    let e = extremes_on(isa, &row);
                    assert_eq!((e.max.to_bits(), e.nan), (0, false), "{isa} n {n} at {at}");
                    row[at] = f32::NAN;
                    assert!(extremes_on(isa, &row).nan, "{isa} n {n} at {at}");
                }
            }
        }
    }

    /// [`canonical_sums_of`]'s two sums are, bit for bit, [`canonical_sum_of`] of each half, on
    /// every instruction set and row length (whole groups of 16, a tail of each length), with
    /// the tail's lanes past the row kept out of both.
    pub fn canonical_sums_of_gives_each_sum_alone_on_every_isa() {
        struct Op<'a>(&'a [f32]);
        impl LaneOp for Op<'_> {
            type Output = [f32; 4];
            fn run<L: Lanes, M: Mode>(self, l: L) -> [f32; 4] {
                let (one, half) = (l.splat(1.0), l.splat(0.5));
                // `x + 1` is not 0 in a padded lane, `x * x + 0.5` neither.
                let (a, b) =
                    canonical_sums_of(l, self.0, |v| (l.add(v, one), l.add(l.mul(v, v), half)));
                let a1 = canonical_sum_of(l, self.0, |v| l.add(v, one));
                let b1 = canonical_sum_of(l, self.0, |v| l.add(l.mul(v, v), half));
                [a, b, a1, b1]
            }
        }
        for n in 0..=70 {
            let row: Vec<f32> = (0..n).map(|i| 1.0 / (i as f32 + 3.0) - 0.2).collect();
            let scalar = Isa::Scalar
                .supported()
                .unwrap()
                .dispatch::<Exact, _>(Op(&row));
            for isa in Isa::available() {
                let [a, b, a1, b1] = isa.supported().unwrap().dispatch::<Exact, _>(Op(&row));
                assert_eq!(
                    [a.to_bits(), b.to_bits()],
                    [a1.to_bits(), b1.to_bits()],
                    "{isa} n {n}"
                );
                assert_eq!(a.to_bits(), scalar[0].to_bits(), "{isa} n {n}");
                assert_eq!(b.to_bits(), scalar[1].to_bits(), "{isa} n {n}");
            }
            let want_a: f32 = row.iter().map(|x| x + 1.0).sum::<f32>();
            assert!(
                (scalar[0] - want_a).abs() <= 1e-4 * want_a.abs().max(1.0),
                "n {n}"
            );
        }
    }
}
