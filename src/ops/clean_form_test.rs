//! Test support: a kernel's clean form (taken by a register whose lanes are all in range)
//! against its general form (forced by a NaN in another lane of the register).

use super::Kernel;
use crate::lanes::{Isa, Lanes, WithLanes};

/// `K` of every `x` twice, as bit pairs: on a register of `x` alone and in lane 1 of a
/// register whose lane 0 is NaN (lane 1 is past the end of a one-lane register: its pair is
/// not compared).
struct AloneAndBesideNan<'a, K>(&'a [f32], core::marker::PhantomData<K>);

impl<K: Kernel> WithLanes for AloneAndBesideNan<'_, K> {
    type Output = Vec<(u32, u32)>;
    const USES_FMA: bool = K::USES_FMA;
    fn run<L: Lanes>(self, l: L) -> Self::Output {
        self.0
            .iter()
            .map(|&x| {
                let mut xs = [x; 16];
                xs[0] = f32::NAN;
                let alone = lane_bits(l, K::apply(l, l.splat(x)), 0);
                (alone, lane_bits(l, K::apply(l, l.load(&xs)), 1))
            })
            .collect()
    }
}

/// The bit pattern of lane `i` of `v`.
pub fn lane_bits<L: Lanes>(l: L, v: L::F, i: usize) -> u32 {
    let mut out = [0f32; crate::lanes::MAX_WIDTH];
    l.store(v, &mut out);
    out[i].to_bits()
}

/// `K` of each of `xs` on every available lane type, alone in a register (bits), after
/// asserting that on every lane type wider than one the register beside a NaN gives the same
/// bits. Returns `(isa, x, bits)` for the caller's own checks.
pub fn assert_clean_form_is_general_form<K: Kernel>(xs: &[f32]) -> Vec<(Isa, f32, u32)> {
    let mut wide = 0;
    let mut out = Vec::new();
    for isa in Isa::available() {
        let pairs = isa
            .supported()
            .unwrap()
            .dispatch(AloneAndBesideNan::<K>(xs, core::marker::PhantomData));
        for (&x, (alone, beside_nan)) in xs.iter().zip(pairs) {
            if isa.width() > 1 {
                assert_eq!(alone, beside_nan, "{isa}: x {x:e}");
                wide += 1;
            }
            out.push((isa, x, alone));
        }
    }
    assert!(wide > 0 || !cfg!(target_arch = "x86_64"));
    out
}
