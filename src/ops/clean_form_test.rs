//! Test support: a kernel's clean form (taken by a register whose lanes are all in range)
//! against its general form (forced by a NaN in another lane of the register).

use super::Kernel;
use crate::lanes::{Isa, LaneOp, Lanes, Mode};

/// `K` of every `x` twice, as bit pairs: on a register of `x` alone and in lane 1 of a
/// register whose lane 0 is NaN (lane 1 is past the end of a one-lane register: its pair is
/// not compared).
struct AloneAndBesideNan<'a, K>(&'a [f32], core::marker::PhantomData<K>);

impl<K: Kernel> LaneOp for AloneAndBesideNan<'_, K> {
    type Output = Vec<(u32, u32)>;
    fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output {
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
            .dispatch::<K::Mode, _>(AloneAndBesideNan::<K>(xs, core::marker::PhantomData));
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

/// [`assert_clean_form_is_general_form`] of `K` over every float of `[lo, hi]`, both signs, the
/// 4,097 smallest floats of both signs, and every 65,521st bit pattern (NaNs left out); then
/// asserts that every lane type gives the scalar lane type's bits.
pub fn assert_clean_form_is_general_form_near<K: Kernel>(lo: f32, hi: f32) {
    let xs = both_signs_and_a_sweep((lo.to_bits()..=hi.to_bits()).chain(0..=4_096));
    let out = assert_clean_form_is_general_form::<K>(&xs);
    let scalar: Vec<u32> = out
        .iter()
        .filter(|(isa, ..)| *isa == Isa::Scalar)
        .map(|&(.., bits)| bits)
        .collect();
    assert_eq!(scalar.len(), xs.len());
    for (i, &(isa, x, bits)) in out.iter().enumerate() {
        assert_eq!(bits, scalar[i % xs.len()], "{isa} against scalar: x {x:e}");
    }
}

/// The floats of the bit patterns `bits` with both signs, then every 65,521st bit pattern of
/// all (a sparse sweep of every exponent), NaNs left out: the inputs of the clean-form tests.
pub fn both_signs_and_a_sweep(bits: impl IntoIterator<Item = u32>) -> Vec<f32> {
    bits.into_iter()
        .flat_map(|b| [b, b | 0x8000_0000])
        .chain((0..=u32::MAX).step_by(65_521))
        .map(f32::from_bits)
        .filter(|x| !x.is_nan())
        .collect()
}
