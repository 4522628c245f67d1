//! The one slice driver: a kernel over `src -> dst` or in place, any length, any alignment.
//! Whole registers first; the tail (fewer elements than a register) goes through the same lane
//! code on a register padded with zeros ([`Lanes::load_partial`]), never through another
//! formula.

use super::{Kernel, SrcDst};
use crate::lanes::{Lanes, prefetch_ahead};

/// How far ahead of the group it works on a map loop from `src` to `dst` prefetches its input,
/// in elements (a multiple of every group's width). The hardware prefetchers follow the stream
/// only within each 4 KiB page; a page ahead, the next page's lines are asked for before the
/// loop gets there. Only the groups whose line ahead lies in the input prefetch: a short slice
/// (a GEMM tile's row) none. Not in place: there the data is most often just written by the
/// caller and still in cache, and the prefetch (with the indexed loop it needs beside the
/// mutable borrow) made the loop slower.
const AHEAD: usize = 1024;

/// Runs `K` over `src` into `dst` (equal lengths) on the lanes `l`: a [`Lanes::Group`] of
/// registers per loop iteration (four AVX2 registers as one), then single registers, then the
/// zero-padded tail.
///
/// The registers of a group go through the kernel together, so a kernel's per-register test
/// (every lane in range? a uniform region?) is one test for all of them, and their dependent
/// chains sit in one straight block the compiler interleaves. Lanes never mix: the bits are
/// those of one register at a time.
#[inline(always)]
pub fn map_lanes<L: Lanes, K: Kernel>(l: L, src: &[f32], dst: &mut [f32]) {
    map_lanes_by::<L, _, K>(l, l.group(), src, dst)
}

/// Runs `K` over `data` in place on the lanes `l`, as [`map_lanes`] does.
#[inline(always)]
pub fn map_lanes_in_place<L: Lanes, K: Kernel>(l: L, data: &mut [f32]) {
    map_lanes_in_place_by::<L, _, K>(l, l.group(), data)
}

/// [`Kernel::map`] of a kernel of long dependent chains: as [`map_lanes`] (or
/// [`map_lanes_in_place`] in place), with a [`Lanes::WideGroup`] of registers per loop
/// iteration. The same bits: only the number of registers in flight changes.
#[inline(always)]
pub fn map_wide<L: Lanes, K: Kernel>(l: L, io: SrcDst<'_>) {
    // Where the wide group is the group (every lane type but AVX-512), this is `map_lanes`
    // itself: the same group type, the same instantiation.
    match io.src {
        Some(src) => map_lanes_by::<L, _, K>(l, l.wide_group(), src, io.dst),
        None => map_lanes_in_place_by::<L, _, K>(l, l.wide_group(), io.dst),
    }
}

/// A kernel whose dependent chain ends in a short, slow tail (a division) after a long head
/// (an exp): [`map_two_stage`] runs a group's head one loop step before its tail.
pub trait TwoStage: Kernel {
    /// What the head hands the tail (the exp's result, whether the register was clean).
    type Head<F: Copy>: Copy;
    /// The first stage of [`Kernel::apply`] of `x`.
    fn head<L: Lanes>(l: L, x: L::F) -> Self::Head<L::F>;
    /// The rest of [`Kernel::apply`]: `tail(x, head(x))` is `apply(x)`, bit for bit.
    fn tail<L: Lanes>(l: L, x: L::F, h: Self::Head<L::F>) -> L::F;
}

/// [`map_wide`] with the head of each group of registers computed in the loop step before
/// its tail: step `i` forms group `i`'s head, then group `i - 1`'s tail from that group's
/// input (loaded again) and head, and stores it. The tail's inputs are ready when it issues,
/// so its latency (a division's) no longer ends each step's chain, and the core's window holds
/// the next heads beside it. The same bits: each register goes through `tail(x, head(x))`,
/// which is [`Kernel::apply`], and the single registers and the padded tail through `apply`.
/// In place, group `i` is read before group `i - 1` is written, and no group is read after it
/// is written.
#[inline(always)]
pub fn map_two_stage<L: Lanes, K: TwoStage>(l: L, io: SrcDst<'_>) {
    let g = l.wide_group();
    let w = <L::WideGroup as Lanes>::WIDTH;
    let (src, dst): (Option<&[f32]>, &mut [f32]) = (io.src, io.dst);
    let n = dst.len() / w;
    if n > 0 {
        let mut head = K::head(g, load_from(g, src, dst, 0));
        for i in 1..n {
            let next = K::head(g, load_from(g, src, dst, i * w));
            let y = K::tail(g, load_from(g, src, dst, (i - 1) * w), head);
            g.store(y, &mut dst[(i - 1) * w..]);
            head = next;
        }
        let y = K::tail(g, load_from(g, src, dst, (n - 1) * w), head);
        g.store(y, &mut dst[(n - 1) * w..]);
    }
    let done = n * w;
    let dst = &mut dst[done..];
    match src {
        Some(src) => map_lanes_by::<L, L, K>(l, l, &src[done..], dst),
        None => map_lanes_in_place_by::<L, L, K>(l, l, dst),
    }
}

/// The register of `g` at `at` of `src`, or of `dst` in place (a function, not a closure,
/// so that it inlines into the trampoline).
#[inline(always)]
fn load_from<G: Lanes>(g: G, src: Option<&[f32]>, dst: &[f32], at: usize) -> G::F {
    match src {
        Some(src) => g.load(&src[at..]),
        None => g.load(&dst[at..]),
    }
}

/// [`map_lanes`] with the group `g` (registers of `l` taken together).
#[inline(always)]
fn map_lanes_by<L: Lanes, G: Lanes, K: Kernel>(l: L, g: G, src: &[f32], dst: &mut [f32]) {
    let mut s = src.chunks_exact(G::WIDTH);
    let mut d = dst.chunks_exact_mut(G::WIDTH);
    let prefetching = (src.len() / G::WIDTH).saturating_sub(AHEAD.div_ceil(G::WIDTH));
    for (i, (s, d)) in (&mut s).zip(&mut d).take(prefetching).enumerate() {
        prefetch_ahead(src, i * G::WIDTH + AHEAD, G::WIDTH);
        g.store(K::apply(g, g.load(s)), d);
    }
    for (s, d) in (&mut s).zip(&mut d) {
        g.store(K::apply(g, g.load(s)), d);
    }
    let w = L::WIDTH;
    let mut s = s.remainder().chunks_exact(w);
    let mut d = d.into_remainder().chunks_exact_mut(w);
    for (s, d) in (&mut s).zip(&mut d) {
        l.store(K::apply(l, l.load(s)), d);
    }
    let (s, d) = (s.remainder(), d.into_remainder());
    if !s.is_empty() {
        l.store_partial(K::apply(l, l.load_partial(s, 0.0)), d);
    }
}

/// [`map_lanes_in_place`] with the group `g`.
#[inline(always)]
fn map_lanes_in_place_by<L: Lanes, G: Lanes, K: Kernel>(l: L, g: G, data: &mut [f32]) {
    let mut d = data.chunks_exact_mut(G::WIDTH);
    for d in &mut d {
        g.store(K::apply(g, g.load(d)), d);
    }
    let mut d = d.into_remainder().chunks_exact_mut(L::WIDTH);
    for d in &mut d {
        l.store(K::apply(l, l.load(d)), d);
    }
    let d = d.into_remainder();
    if !d.is_empty() {
        l.store_partial(K::apply(l, l.load_partial(d, 0.0)), d);
    }
}

/// `data = f(data)`, `N` registers per loop iteration, then single registers, the tail
/// through one zero-padded register.
#[inline(always)]
pub fn map_registers_in_place_by<L: Lanes, const N: usize>(
    l: L,
    data: &mut [f32],
    f: impl Fn(L::F) -> L::F,
) {
    let w = L::WIDTH;
    let mut d = data.chunks_exact_mut(w * N);
    for d in &mut d {
        let mut x = [l.splat(0.0); N];
        for (i, x) in x.iter_mut().enumerate() {
            *x = f(l.load(&d[i * w..]));
        }
        for (i, x) in x.into_iter().enumerate() {
            l.store(x, &mut d[i * w..]);
        }
    }
    map_registers_in_place(l, d.into_remainder(), f);
}

/// `data = f(data)` a register at a time, the tail through one zero-padded register.
#[inline(always)]
pub fn map_registers_in_place<L: Lanes>(l: L, data: &mut [f32], f: impl Fn(L::F) -> L::F) {
    let mut d = data.chunks_exact_mut(L::WIDTH);
    for d in &mut d {
        l.store(f(l.load(d)), d);
    }
    let d = d.into_remainder();
    if !d.is_empty() {
        l.store_partial(f(l.load_partial(d, 0.0)), d);
    }
}

/// `f` over `N` registers at a time (from `src` into `dst`, or in place), then `tail` on
/// single registers and the zero-padded last one.
#[inline(always)]
pub fn map_register_arrays<L: Lanes, const N: usize>(
    l: L,
    io: SrcDst<'_>,
    f: impl Fn([L::F; N]) -> [L::F; N],
    tail: impl Fn(L::F) -> L::F,
) {
    let w = L::WIDTH;
    let SrcDst { src, dst } = io;
    let whole = dst.len() - dst.len() % (N * w);
    let mut start = 0;
    while start < whole {
        let from: &[f32] = match src {
            Some(s) => &s[start..start + N * w],
            None => &dst[start..start + N * w],
        };
        let mut x = [l.splat(0.0); N];
        for (i, x) in x.iter_mut().enumerate() {
            *x = l.load(&from[i * w..]);
        }
        let y = f(x);
        for (i, y) in y.into_iter().enumerate() {
            l.store(y, &mut dst[start + i * w..]);
        }
        start += N * w;
    }
    while start < dst.len() {
        let len = w.min(dst.len() - start);
        let from: &[f32] = match src {
            Some(s) => &s[start..start + len],
            None => &dst[start..start + len],
        };
        let y = tail(l.load_partial(from, 0.0));
        l.store_partial(y, &mut dst[start..start + len]);
        start += len;
    }
}
