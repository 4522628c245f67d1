//! The one slice driver: a kernel over `src -> dst` or in place, any length, any alignment.
//! Whole registers first; the tail (fewer elements than a register) goes through the same lane
//! code on a register padded with zeros ([`Lanes::load_partial`]), never through another
//! formula.

use super::Kernel;
use super::func::{Func, KernelVisitor};
use crate::lanes::{Lanes, Supported, WithLanes};
use crate::mode::{Mode, compiled_once_per_mode};

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

/// Runs `K` over `data` in place on the lanes `l`, as [`map_lanes`] does. (No closure: a
/// kernel inside a closure called from several places may be left out of line, outside the
/// instruction set's `#[target_feature]` function.)
#[inline(always)]
pub fn map_lanes_in_place<L: Lanes, K: Kernel>(l: L, data: &mut [f32]) {
    map_lanes_in_place_by::<L, _, K>(l, l.group(), data)
}

/// [`Kernel::map`] of a kernel of long dependent chains: as [`map_lanes`] (or
/// [`map_lanes_in_place`] when `src` is `None`), with a [`Lanes::WideGroup`] of registers per
/// loop iteration. The same bits: only the number of registers in flight changes.
#[inline(always)]
pub fn map_wide<L: Lanes, K: Kernel>(l: L, src: Option<&[f32]>, dst: &mut [f32]) {
    // Where the wide group is the group (every lane type but AVX-512), this is `map_lanes`
    // itself: the same group type, the same instantiation.
    match src {
        Some(src) => map_lanes_by::<L, _, K>(l, l.wide_group(), src, dst),
        None => map_lanes_in_place_by::<L, _, K>(l, l.wide_group(), dst),
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
        K::map(l, self.src, self.dst)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::Isa;
    use crate::mode::{Exact, Fast};

    /// The registers of a [`Lanes::Group`] (or a [`Lanes::WideGroup`]) through a kernel at
    /// once give the bits of one lane at a time (the scalar path, whose group is one
    /// register), for every function, mode and instruction set, out of place and in place, at
    /// lengths that end in a partial register and in whole registers after the last group:
    /// one odd value (a NaN, an infinity, a value past a
    /// clamp or in another region of the algorithm) in one register of a group sends the
    /// whole group down the slow path, which must change nothing for its other registers.
    #[test]
    fn a_group_gives_the_bits_of_its_registers_one_at_a_time() {
        let odd = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            1e-30,
            -1e-40,
            0.3,
            -0.59,
            0.61,
            3.95,
            -5.7,
            20.0,
            -87.5,
            88.5,
            -104.0,
            200.0,
            -1e30,
        ];
        for n in [64 * 64 + 13, 64 * 64 + 5 * 16 + 3] {
            groups_against_scalar(n, &odd);
        }
    }

    fn groups_against_scalar(n: usize, odd: &[f32]) {
        let mut src: Vec<f32> = (0..n)
            .map(|i| -8.0 + 16.0 * ((i as u64 * 2_654_435_761 % 4093) as f32 / 4093.0))
            .collect();
        for (j, &v) in odd.iter().cycle().take(n / 41).enumerate() {
            src[(j * 41 + j % 7) % n] = v;
        }
        let log_src: Vec<f32> = src.iter().map(|x| x.abs()).collect();
        let scalar = Isa::Scalar.supported().unwrap();
        for isa in Isa::available() {
            let isa = isa.supported().unwrap();
            for func in Func::ALL {
                let src = if func == Func::Log { &log_src } else { &src };
                for fast in [false, true] {
                    let map = if fast {
                        map_slice_in_mode::<Fast>
                    } else {
                        map_slice_in_mode::<Exact>
                    };
                    let map_in_place = if fast {
                        map_slice_in_place_in_mode::<Fast>
                    } else {
                        map_slice_in_place_in_mode::<Exact>
                    };
                    let (mut grouped, mut single) = (vec![0f32; n], vec![0f32; n]);
                    map(func, isa, src, &mut grouped);
                    map(func, scalar, src, &mut single);
                    let mut in_place = src.clone();
                    map_in_place(func, isa, &mut in_place);
                    for (i, (g, s)) in grouped.iter().zip(&single).enumerate() {
                        assert_eq!(
                            g.to_bits(),
                            s.to_bits(),
                            "{func} fast {fast} on {:?} at {i} of {n} (x = {:e})",
                            isa.isa(),
                            src[i]
                        );
                        assert_eq!(
                            in_place[i].to_bits(),
                            s.to_bits(),
                            "{func} fast {fast} in place on {:?} at {i} of {n}",
                            isa.isa()
                        );
                    }
                }
            }
        }
    }
}
