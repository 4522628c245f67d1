//! The one slice driver: a kernel over `src -> dst` or in place, any length, any alignment.
//! Whole registers first; the tail (fewer elements than a register) goes through the same lane
//! code on a register padded with zeros ([`Lanes::load_partial`]), never through another
//! formula.

use super::Kernel;
use super::func::{Func, KernelVisitor};
use crate::lanes::{Lanes, Supported, WithLanes};
use crate::mode::{Mode, compiled_once_per_mode};

/// Runs `K` over `src` into `dst` (equal lengths) on the lanes `l`, [`Kernel::UNROLL`]
/// registers per loop iteration.
#[inline(always)]
pub fn map_lanes<L: Lanes, K: Kernel>(l: L, src: &[f32], dst: &mut [f32]) {
    match K::UNROLL {
        4 => map_unrolled::<L, K, 4>(l, src, dst),
        2 => map_unrolled::<L, K, 2>(l, src, dst),
        _ => map_unrolled::<L, K, 1>(l, src, dst),
    }
}

/// `N` registers per iteration, then single registers, then the zero-padded tail.
#[inline(always)]
fn map_unrolled<L: Lanes, K: Kernel, const N: usize>(l: L, src: &[f32], dst: &mut [f32]) {
    let w = L::WIDTH;
    let mut s = src.chunks_exact(w * N);
    let mut d = dst.chunks_exact_mut(w * N);
    for (s, d) in (&mut s).zip(&mut d) {
        let mut x = [l.splat(0.0); N];
        for (i, x) in x.iter_mut().enumerate() {
            *x = K::apply(l, l.load(&s[i * w..]));
        }
        for (i, x) in x.into_iter().enumerate() {
            l.store(x, &mut d[i * w..]);
        }
    }
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

/// Runs `K` over `data` in place on the lanes `l`, [`Kernel::UNROLL`] registers per loop
/// iteration. (No closure: a kernel inside a closure called from several places may be left
/// out of line, outside the instruction set's `#[target_feature]` function.)
#[inline(always)]
pub fn map_lanes_in_place<L: Lanes, K: Kernel>(l: L, data: &mut [f32]) {
    match K::UNROLL {
        4 => map_in_place_unrolled::<L, K, 4>(l, data),
        2 => map_in_place_unrolled::<L, K, 2>(l, data),
        _ => map_in_place_unrolled::<L, K, 1>(l, data),
    }
}

/// `N` registers per iteration, then single registers, then the zero-padded tail.
#[inline(always)]
fn map_in_place_unrolled<L: Lanes, K: Kernel, const N: usize>(l: L, data: &mut [f32]) {
    let w = L::WIDTH;
    let mut d = data.chunks_exact_mut(w * N);
    for d in &mut d {
        let mut x = [l.splat(0.0); N];
        for (i, x) in x.iter_mut().enumerate() {
            *x = K::apply(l, l.load(&d[i * w..]));
        }
        for (i, x) in x.into_iter().enumerate() {
            l.store(x, &mut d[i * w..]);
        }
    }
    let mut d = d.into_remainder().chunks_exact_mut(w);
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

struct MapSlice<'a, K> {
    src: Option<&'a [f32]>,
    dst: &'a mut [f32],
    kernel: core::marker::PhantomData<K>,
}

impl<K: Kernel> WithLanes for MapSlice<'_, K> {
    type Output = ();
    const USES_FMA: bool = K::USES_FMA;
    #[inline(always)]
    fn run<L: Lanes>(self, l: L) {
        match self.src {
            Some(src) => map_lanes::<L, K>(l, src, self.dst),
            None => map_lanes_in_place::<L, K>(l, self.dst),
        }
    }
}

struct MapVisitor<'a> {
    isa: Supported,
    src: Option<&'a [f32]>,
    dst: &'a mut [f32],
}

impl KernelVisitor for MapVisitor<'_> {
    type Output = ();
    fn visit<K: Kernel>(self) {
        self.isa.dispatch(MapSlice::<K> {
            src: self.src,
            dst: self.dst,
            kernel: core::marker::PhantomData,
        })
    }
}

compiled_once_per_mode! {
    /// `dst[i] = func(src[i])` in mode `M` on `isa`. `src` and `dst` have equal lengths (the
    /// callers check it).
    pub fn map_slice(func: Func, isa: Supported, src: &[f32], dst: &mut [f32]) = map_slice_in_mode;
}

compiled_once_per_mode! {
    /// `data[i] = func(data[i])` in mode `M` on `isa`.
    pub fn map_slice_in_place(func: Func, isa: Supported, data: &mut [f32]) = map_slice_in_place_in_mode;
}

fn map_slice_in_mode<M: Mode>(func: Func, isa: Supported, src: &[f32], dst: &mut [f32]) {
    debug_assert_eq!(src.len(), dst.len());
    func.visit::<M, _>(MapVisitor {
        isa,
        src: Some(src),
        dst,
    })
}

fn map_slice_in_place_in_mode<M: Mode>(func: Func, isa: Supported, data: &mut [f32]) {
    func.visit::<M, _>(MapVisitor {
        isa,
        src: None,
        dst: data,
    })
}
