//! Kernels whose algorithm has two regions (erf's small and large `|x|`; also `1 + erf` and
//! the erf GELU), over a slice with the costly region's lanes gathered into dense registers
//! first.
//!
//! A register group of 64 lanes nearly always holds lanes of both regions, so the per-register
//! kernel computes both formulas for every lane and selects. On lane types that compress lanes
//! cheaply ([`Lanes::COMPRESSES`]: AVX-512, AVX2), [`map_by_regions`] instead sorts each
//! chunk of the slice: the arguments of region B's lanes (the costly formula's) packed into a
//! buffer, that formula run over the buffer only, the results expanded back to their lanes and
//! finished, region A's short formula on the registers that have a lane of it. A lane of
//! neither region (a saturated or special value) runs neither formula. Every lane still goes
//! through the same operations on the same values, so the bits are those of the test-only
//! `TwoRegions::by_regions` lane by lane, which the function's register form
//! ([`super::Kernel::apply`]) must equal.

use super::map::{map_lanes, map_lanes_in_place, map_wide};
use super::{Kernel, SrcDst};
use crate::lanes::{Lanes, MAX_WIDTH, prefetch_part};
use crate::row_buffer::{give_back, take_buffer};

/// A function computed by one of two formulas per lane, then finished lane by lane. Its
/// register form is its [`Kernel::apply`], which must give the bits of the test-only
/// `TwoRegions::by_regions`.
pub trait TwoRegions: Kernel {
    /// Whether the register form runs a [`Lanes::WideGroup`] per step ([`map_wide`]) rather
    /// than a group ([`map_lanes`]): for the chunks left in the register form.
    const WIDE: bool = false;
    /// The argument both formulas take, from the input `x`.
    fn arg<L: Lanes>(l: L, x: L::F) -> L::F;
    /// The lanes of region A and those of region B (never both; a lane in neither needs no
    /// formula: [`TwoRegions::finish`] gives it its value without one).
    fn regions<L: Lanes>(l: L, x: L::F, arg: L::F) -> (L::M, L::M);
    /// Region A's formula of the argument.
    fn formula_a<L: Lanes>(l: L, arg: L::F) -> L::F;
    /// Region B's formula of the argument.
    fn formula_b<L: Lanes>(l: L, arg: L::F) -> L::F;
    /// The result from `x`, its regions, and the formulas' values (`a` is meaningful only in
    /// region A's lanes, `b` only in region B's).
    fn finish<L: Lanes>(l: L, x: L::F, in_a: L::M, in_b: L::M, a: L::F, b: L::F) -> L::F;
    /// Region B's formula over `buf` in place (whole registers of `l`: the sorted form's buffer
    /// of region B's arguments): [`formula_b_by_registers`] unless the kernel has another way
    /// to the same bits (erf's passes in stages).
    #[inline(always)]
    fn formula_b_over<L: Lanes>(l: L, buf: &mut [f32]) {
        formula_b_by_registers::<L, Self>(l, buf)
    }

    /// The function of one register by its regions: each formula only where some lane needs
    /// it (a formula no lane needs is skipped, its value a placeholder `finish` never picks).
    /// What the sorted form computes per lane; the tests hold the register form to it.
    #[cfg(feature = "unit-tests")]
    #[inline(always)]
    fn by_regions<L: Lanes>(l: L, x: L::F) -> L::F {
        let arg = Self::arg(l, x);
        let (in_a, in_b) = Self::regions(l, x, arg);
        let a = Self::formula_a_where_needed(l, in_a, arg);
        let b = if l.any(in_b) {
            Self::formula_b(l, arg)
        } else {
            arg
        };
        Self::finish(l, x, in_a, in_b, a, b)
    }

    /// Region A's formula of `arg` if some lane of `in_a` needs it, else a placeholder.
    #[inline(always)]
    fn formula_a_where_needed<L: Lanes>(l: L, in_a: L::M, arg: L::F) -> L::F {
        if l.any(in_a) {
            Self::formula_a(l, arg)
        } else {
            arg
        }
    }
}

/// Elements per chunk of [`map_by_regions`]: small enough that the chunk and its buffer stay
/// in L1, large enough that region B's buffer holds several registers to run side by side
/// (chunks of 256 measured slower for the exact erf and GELU on AVX-512) and that its partial
/// last register is a small cost.
const CHUNK: usize = 1024;

/// Region B's formula alone, over its buffer, inside the dispatch of the kernel it belongs to.
struct FormulaB<R>(core::marker::PhantomData<R>);

impl<R: TwoRegions> Kernel for FormulaB<R> {
    type Mode = R::Mode;
    #[inline(always)]
    fn apply<L: Lanes>(l: L, x: L::F) -> L::F {
        R::formula_b(l, x)
    }
}

/// [`TwoRegions::formula_b`] over `buf` in place, a [`Lanes::WideGroup`] per step (`buf` is
/// whole registers of `l`): the default [`TwoRegions::formula_b_over`].
#[inline(always)]
pub fn formula_b_by_registers<L: Lanes, R: TwoRegions>(l: L, buf: &mut [f32]) {
    map_wide::<L, FormulaB<R>>(l, SrcDst::in_place(buf))
}

/// `dst = R(src)` (`src` and `dst` of equal lengths), or `dst = R(dst)` in place when `src` is
/// `None`: region by region on a lane type that compresses ([`Lanes::COMPRESSES`]), register by
/// register ([`map_lanes`]) on any other. The same bits either way.
#[inline(always)]
pub fn map_by_regions<L: Lanes, R: TwoRegions>(l: L, src: Option<&[f32]>, dst: &mut [f32]) {
    if !L::COMPRESSES {
        return match src {
            Some(src) => map_lanes::<L, R>(l, src, dst),
            None => map_lanes_in_place::<L, R>(l, dst),
        };
    }
    map_sorted::<L, R>(l, src, dst)
}

/// [`map_by_regions`]'s sorted form (chunks where it pays), on any lane type (those that do not compress run
/// [`Lanes::compress`] and [`Lanes::expand`] lane by lane: slow, but the same bits, which the
/// tests check on every instruction set).
#[inline(always)]
fn map_sorted<L: Lanes, R: TwoRegions>(l: L, src: Option<&[f32]>, dst: &mut [f32]) {
    // Sorting pays when region B's formula is needed by a minority of lanes: on inputs spread
    // over [-8, 8] it gained for the erf (a minority of lanes in region B) and lost for the
    // GELU (a majority) when every chunk was sorted. A chunk where more than half
    // the lanes were region B's sends the next few through the register form, then one is
    // sorted again to look; with this the GELU on that spread is within the noise of the
    // register form.
    const LOOK_AGAIN_AFTER: usize = 7;
    let mut register_form = 0;
    // Region B's buffer, for every chunk: up to a chunk, plus a register of room for a
    // compress or an expand at its end. One of the thread's reused buffers, not an array
    // zeroed on the stack at every call: a short slice paid for zeroing all 4 KB, and so did
    // every row of a GEMM epilogue. Its lanes past a chunk's count are computed and never
    // read, whatever an earlier user left in them.
    let mut buf = take_buffer(CHUNK + MAX_WIDTH);
    let buf_b: &mut [f32; CHUNK + MAX_WIDTH] = buf
        .as_mut_slice()
        .try_into()
        .expect("take_buffer gives the length asked for");
    let len = dst.len();
    for start in (0..len).step_by(CHUNK) {
        let end = (start + CHUNK).min(len);
        // The next chunk's input and output: the two passes over this chunk ask for them a
        // group at a time (prefetches), so that their memory traffic is spread over this
        // chunk's work rather than waited on in bursts when the next chunk starts (asking for
        // the whole chunk at once stalled on the prefetches themselves).
        let next = end..(end + CHUNK).min(len);
        let from = src.map(|s| &s[start..end]);
        let next_src = src.map_or(&[][..], |s| &s[next.clone()]);
        let (done, rest) = dst.split_at_mut(end);
        let out = &mut done[start..];
        let next_dst: &[f32] = &rest[..next.len()];
        if register_form > 0 {
            register_form -= 1;
            match from {
                _ if R::WIDE => map_wide::<L, R>(
                    l,
                    SrcDst {
                        src: from,
                        dst: out,
                    },
                ),
                Some(from) => map_lanes::<L, R>(l, from, out),
                None => map_lanes_in_place::<L, R>(l, out),
            }
        } else if 2 * chunk_by_regions::<L, R>(l, from, out, buf_b, (next_src, next_dst))
            > out.len()
        {
            register_form = LOOK_AGAIN_AFTER;
        }
    }
    give_back(buf);
}

/// One chunk (at most [`CHUNK`] elements) of [`map_by_regions`], sorted; returns how many of
/// its lanes (padding included) were region B's. `ahead` is the next chunk's input and output
/// (empty where there is none, or in place for the input), prefetched by the two passes. Only
/// region B (the costly formula) is gathered: region A's formula is short, and it runs on the
/// registers that have a lane of it, as the test-only `TwoRegions::by_regions` does.
///
/// The gathering and the finishing passes take a [`Lanes::Group`] of registers per step, then
/// single registers (one register per step left the finishing pass, a dependent chain per
/// register, short of independent work), and region B's formula runs over its buffer by
/// [`TwoRegions::formula_b_over`] (by default a [`Lanes::WideGroup`] per step; exact erf on
/// AVX2 in stages).
///
/// The groups are whole (`WHOLE` in [`gather_b`], [`finish_lanes`]): loaded and stored without
/// the length of each of their registers that a partial load computes, which on AVX2 (a group of
/// four registers, the compress a table's permutation) was a good part of the two passes'
/// instructions; only the single registers after them may end in a partial one.
#[inline(always)]
fn chunk_by_regions<L: Lanes, R: TwoRegions>(
    l: L,
    src: Option<&[f32]>,
    dst: &mut [f32],
    buf_b: &mut [f32; CHUNK + MAX_WIDTH],
    ahead: (&[f32], &[f32]),
) -> usize {
    let grouped = dst.len() - dst.len() % <L::Group as Lanes>::WIDTH;
    // Region B's arguments to the front of the buffer, in lane order (what lies past them is
    // left from an earlier chunk: computed and never read).
    let n_b = gather_b::<_, R, true>(l.group(), src, dst, 0..grouped, buf_b, 0, ahead.0);
    let n_b = gather_b::<_, R, false>(l, src, dst, grouped..dst.len(), buf_b, n_b, &[]);
    // Its formula over its own lanes only, in whole registers (the lanes past the count are
    // left-overs, computed and never read).
    let b_registers = &mut buf_b[..n_b.div_ceil(L::WIDTH) * L::WIDTH];
    R::formula_b_over(l, b_registers);
    // Back to the lanes, with region A's formula where a lane needs it, finished.
    let p_b = finish_lanes::<_, R, true>(l.group(), src, dst, 0..grouped, buf_b, 0, ahead.1);
    finish_lanes::<_, R, false>(l, src, dst, grouped..dst.len(), buf_b, p_b, &[]);
    n_b
}

/// The register of `x` at `start..start + len` of `src` (of `dst` itself when `src` is
/// `None`), zero-padded; `WHOLE`: `len` is the width, loaded without a length.
#[inline(always)]
fn load_at<X: Lanes, const WHOLE: bool>(
    x: X,
    src: Option<&[f32]>,
    dst: &[f32],
    start: usize,
    len: usize,
) -> X::F {
    let from = &src.unwrap_or(dst)[start..start + len];
    if WHOLE {
        x.load(from)
    } else {
        x.load_partial(from, 0.0)
    }
}

/// Region B's arguments of the elements `range` (registers of `x`, the last one partial; all
/// whole, loaded without a length, when `WHOLE`), in lane order, to `buf` from `n_b` on;
/// returns the new count. Each step prefetches the same offset of `ahead` (if it reaches it).
#[inline(always)]
fn gather_b<X: Lanes, R: TwoRegions, const WHOLE: bool>(
    x: X,
    src: Option<&[f32]>,
    dst: &[f32],
    range: core::ops::Range<usize>,
    buf: &mut [f32],
    mut n_b: usize,
    ahead: &[f32],
) -> usize {
    for start in range.clone().step_by(X::WIDTH) {
        prefetch_part(ahead, start, X::WIDTH);
        let v = load_at::<X, WHOLE>(x, src, dst, start, X::WIDTH.min(range.end - start));
        let arg = R::arg(x, v);
        let (_, in_b) = R::regions(x, v, arg);
        n_b += x.compress(arg, in_b, &mut buf[n_b..]);
    }
    n_b
}

/// The elements `range` (registers of `x`, the last one partial; all whole when `WHOLE`)
/// finished, region B's values expanded from `buf` from `p_b` on; returns the position after
/// the last one taken. Each step prefetches the same offset of `ahead` (if it reaches it).
#[inline(always)]
fn finish_lanes<X: Lanes, R: TwoRegions, const WHOLE: bool>(
    x: X,
    src: Option<&[f32]>,
    dst: &mut [f32],
    range: core::ops::Range<usize>,
    buf: &[f32],
    mut p_b: usize,
    ahead: &[f32],
) -> usize {
    for start in range.clone().step_by(X::WIDTH) {
        prefetch_part(ahead, start, X::WIDTH);
        let len = X::WIDTH.min(range.end - start);
        let v = load_at::<X, WHOLE>(x, src, dst, start, len);
        let arg = R::arg(x, v);
        let (in_a, in_b) = R::regions(x, v, arg);
        let a = R::formula_a_where_needed(x, in_a, arg);
        let b = x.expand(&buf[p_b..], in_b, arg);
        p_b += x.count(in_b);
        let y = R::finish(x, v, in_a, in_b, a, b);
        if WHOLE {
            x.store(y, &mut dst[start..start + len]);
        } else {
            x.store_partial(y, &mut dst[start..start + len]);
        }
    }
    p_b
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use crate::lanes::{Isa, LaneOp, Mode};

    /// `R` over `src` sorted by regions (in place when `in_place`), and register by register.
    struct Both<'a, R> {
        src: &'a [f32],
        in_place: bool,
        regions: core::marker::PhantomData<R>,
    }

    impl<R: TwoRegions> LaneOp for Both<'_, R> {
        type Output = (Vec<f32>, Vec<f32>);
        fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output {
            let mut sorted = vec![0f32; self.src.len()];
            if self.in_place {
                sorted.copy_from_slice(self.src);
                map_sorted::<L, R>(l, None, &mut sorted);
            } else {
                map_sorted::<L, R>(l, Some(self.src), &mut sorted);
            }
            let mut by_register = vec![0f32; self.src.len()];
            map_lanes::<L, R>(l, self.src, &mut by_register);
            (sorted, by_register)
        }
    }

    /// `R` sorted by regions gives the bits of its register form ([`Kernel::apply`]) on every
    /// lane type (the compressing ones, and the others through the lane-by-lane compress and
    /// groups of registers), in place and into another slice.
    pub fn sorted_equals_by_register<R: TwoRegions>(name: &str, src: &[f32]) {
        for isa in Isa::available() {
            for in_place in [false, true] {
                let (sorted, by_register) =
                    isa.supported().unwrap().dispatch::<R::Mode, _>(Both::<R> {
                        src,
                        in_place,
                        regions: core::marker::PhantomData,
                    });
                for (i, (s, r)) in sorted.iter().zip(&by_register).enumerate() {
                    assert_eq!(
                        s.to_bits(),
                        r.to_bits(),
                        "{isa} in place {in_place}: {name}({:e}) at {i}",
                        src[i]
                    );
                }
            }
        }
    }

    /// Inputs for the tests of kernels sorted by regions, for lengths that end inside a register,
    /// around a group and inside a chunk: a spread where every register mixes both regions and
    /// the saturated lanes, the same with special values and region edges (every seventh lane;
    /// and at the edges of registers, groups and chunks), runs of one region only, and chunks
    /// of mostly region B (left in the register form) between sorted ones.
    pub fn inputs() -> Vec<Vec<f32>> {
        let specials = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            0.5,
            -0.5,
            0.499_999_97,
            4.0,
            -4.0,
            3.999_999_8,
            1e-40,
            f32::MAX,
            // The GELU's region edges: `|x| / sqrt 2` at 0.5 and at 4, and past the exp's
            // underflow.
            0.707_106_77,
            0.707_106_84,
            -0.707_106_84,
            5.656_854,
            5.656_855_5,
            -5.656_855_5,
            -20.0,
            -1e-40,
        ];
        let mut all = Vec::new();
        for n in [
            1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 256, 257, 1000, 1024, 1025, 2100,
        ] {
            let spread: Vec<f32> = (0..n)
                .map(|i| -8.0 + 16.0 * ((i as u64 * 2_654_435_761 % 1009) as f32 / 1009.0))
                .collect();
            let mut odd = spread.clone();
            for (j, v) in odd.iter_mut().step_by(7).enumerate() {
                *v = specials[j % specials.len()];
            }
            let small = vec![0.25f32; n];
            let large: Vec<f32> = (0..n).map(|i| 1.0 + i as f32 / 512.0).collect();
            let mut mixed = large.repeat(4);
            mixed.extend(&spread);
            mixed.extend(small.iter().chain(&odd).cycle().take(8 * n));
            // The specials at the first, a middle and the last lane of registers, of groups
            // (AVX2's 32 lanes, AVX-512's 64) and of chunks, in a sorted chunk and in one
            // left in the register form (after a chunk of region B only).
            let mut edges = spread.clone();
            let mut after_b = vec![-2.0f32; CHUNK];
            after_b.extend(&spread);
            let lanes = [
                0, 3, 7, 8, 15, 16, 31, 32, 47, 63, 64, 95, 511, 1023, 1024, 1055,
            ];
            for (j, &at) in lanes.iter().enumerate() {
                for (k, v) in [&mut edges, &mut after_b].into_iter().enumerate() {
                    for at in [at, CHUNK + at] {
                        if at < v.len() {
                            v[at] = specials[(j + 5 * k + at / CHUNK) % specials.len()];
                        }
                    }
                }
            }
            all.extend([spread, odd, small, large, mixed, edges, after_b]);
        }
        all
    }
}
