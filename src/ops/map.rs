//! The one slice driver: a kernel over `src -> dst` or in place, any length, any alignment.
//! Whole registers first; the tail (fewer elements than a register) goes through the same lane
//! code on a register padded with zeros ([`Lanes::load_partial`]), never through another
//! formula.

use super::{Kernel, SrcDst};
use crate::lanes::Lanes;

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

/// [`map_lanes`] with the group `g` (registers of `l` taken together).
#[inline(always)]
fn map_lanes_by<L: Lanes, G: Lanes, K: Kernel>(l: L, g: G, src: &[f32], dst: &mut [f32]) {
    let mut s = src.chunks_exact(G::WIDTH);
    let mut d = dst.chunks_exact_mut(G::WIDTH);
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
