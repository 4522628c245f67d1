//! The one slice driver: a kernel over `src -> dst` or in place, any length, any alignment.
//! Whole registers first; the tail (fewer elements than a register) goes through the same lane
//! code on a register padded with zeros, never through another formula.

use super::Kernel;
use super::func::{Func, KernelVisitor};
use crate::Error;
use crate::lanes::{Isa, Lanes, MAX_WIDTH, WithLanes};
use crate::mode::Mode;

/// Runs `K` over `src` into `dst` (equal lengths) on the lanes `l`.
#[inline(always)]
pub fn map_lanes<L: Lanes, K: Kernel>(l: L, src: &[f32], dst: &mut [f32]) {
    let w = L::WIDTH;
    let mut s = src.chunks_exact(w);
    let mut d = dst.chunks_exact_mut(w);
    for (s, d) in (&mut s).zip(&mut d) {
        l.store(K::apply(l, l.load(s)), d);
    }
    tail::<L, K>(l, s.remainder(), d.into_remainder());
}

/// Runs `K` over `data` in place on the lanes `l`.
#[inline(always)]
pub fn map_lanes_in_place<L: Lanes, K: Kernel>(l: L, data: &mut [f32]) {
    let w = L::WIDTH;
    let mut d = data.chunks_exact_mut(w);
    for d in &mut d {
        l.store(K::apply(l, l.load(d)), d);
    }
    let rest = d.into_remainder();
    let mut buf = [0f32; MAX_WIDTH];
    buf[..rest.len()].copy_from_slice(rest);
    tail::<L, K>(l, &buf[..rest.len()], rest);
}

/// The last `src.len() < WIDTH` elements, through one padded register.
#[inline(always)]
fn tail<L: Lanes, K: Kernel>(l: L, src: &[f32], dst: &mut [f32]) {
    if src.is_empty() {
        return;
    }
    let mut buf = [0f32; MAX_WIDTH];
    buf[..src.len()].copy_from_slice(src);
    let y = K::apply(l, l.load(&buf));
    l.store(y, &mut buf);
    dst.copy_from_slice(&buf[..src.len()]);
}

struct MapOp<'a, K> {
    src: Option<&'a [f32]>,
    dst: &'a mut [f32],
    kernel: core::marker::PhantomData<K>,
}

impl<K: Kernel> WithLanes for MapOp<'_, K> {
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
    isa: Isa,
    src: Option<&'a [f32]>,
    dst: &'a mut [f32],
}

impl KernelVisitor for MapVisitor<'_> {
    type Output = Result<(), Error>;
    fn visit<K: Kernel>(self) -> Result<(), Error> {
        self.isa.dispatch(MapOp::<K> {
            src: self.src,
            dst: self.dst,
            kernel: core::marker::PhantomData,
        })
    }
}

/// `dst[i] = func(src[i])` in mode `M` on `isa`. Lengths must match.
pub fn map_slice<M: Mode>(func: Func, isa: Isa, src: &[f32], dst: &mut [f32]) -> Result<(), Error> {
    if src.len() != dst.len() {
        return Err(Error::LengthMismatch {
            src: src.len(),
            dst: dst.len(),
        });
    }
    func.visit::<M, _>(MapVisitor {
        isa,
        src: Some(src),
        dst,
    })
}

/// `data[i] = func(data[i])` in mode `M` on `isa`.
pub fn map_slice_in_place<M: Mode>(func: Func, isa: Isa, data: &mut [f32]) -> Result<(), Error> {
    func.visit::<M, _>(MapVisitor {
        isa,
        src: None,
        dst: data,
    })
}
