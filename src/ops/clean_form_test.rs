//! Test support: a kernel's clean form (taken by a register whose lanes are all in range)
//! against its general form (forced by a NaN in another lane of the register).

use super::Kernel;
use crate::lanes::{Isa, LaneOp, Lanes, MAX_WIDTH, Mode};

/// Inputs per dispatch. The tests stream their inputs (millions of them) through every lane
/// type a chunk at a time, so that only a chunk's bits are held, not every input's on every
/// lane type. A multiple of every register width, so that the tests that load whole registers
/// from a chunk load the registers they would load from the whole input.
pub const CHUNK: usize = 4096;
const _: () = assert!(CHUNK.is_multiple_of(4 * MAX_WIDTH));

/// `K` of every `x` of `xs` twice, as bits: on a register of `x` alone (into `alone`) and in
/// lane 1 of a register whose lane 0 is NaN (into `beside_nan`; on a one-lane register lane 1
/// is past the end: left as it is).
struct AloneAndBesideNan<'a, K> {
    xs: &'a [f32],
    alone: &'a mut [u32],
    beside_nan: &'a mut [u32],
    kernel: core::marker::PhantomData<K>,
}

impl<K: Kernel> LaneOp for AloneAndBesideNan<'_, K> {
    type Output = ();
    // Inlined into the instruction set's trampoline, with plain loops (see `LaneOp`): out of
    // line, the kernel under test would be compiled without the instruction set, every
    // intrinsic a call.
    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        let outs = self.alone.iter_mut().zip(self.beside_nan.iter_mut());
        for (&x, (alone, beside_nan)) in self.xs.iter().zip(outs) {
            *alone = lane_bits(l, K::apply(l, l.splat(x)), 0);
            if L::WIDTH > 1 {
                let mut xs = [x; MAX_WIDTH];
                xs[0] = f32::NAN;
                *beside_nan = lane_bits(l, K::apply(l, l.load(&xs)), 1);
            }
        }
    }
}

/// The bit pattern of lane `i` of `v`.
#[inline(always)]
pub fn lane_bits<L: Lanes>(l: L, v: L::F, i: usize) -> u32 {
    let mut out = [0f32; MAX_WIDTH];
    l.store(v, &mut out);
    out[i].to_bits()
}

/// `K` of each of `xs` on every available lane type, alone in a register, after asserting
/// that on every lane type wider than one the register beside a NaN gives the same bits.
/// Calls `each(isa, chunk, bits)` with those bits for every chunk of `xs` (of [`CHUNK`]
/// inputs) on every lane type, the lane types of a chunk in the order of [`Isa::available`]
/// (scalar first), for the caller's own checks.
pub fn assert_clean_form_is_general_form<K: Kernel>(
    xs: &[f32],
    mut each: impl FnMut(Isa, &[f32], &[u32]),
) {
    let isas = Isa::available();
    assert_eq!(isas[0], Isa::Scalar);
    let mut wide = 0;
    let (mut alone, mut beside_nan) = (vec![0u32; CHUNK], vec![0u32; CHUNK]);
    for chunk in xs.chunks(CHUNK) {
        let (alone, beside_nan) = (&mut alone[..chunk.len()], &mut beside_nan[..chunk.len()]);
        for &isa in &isas {
            isa.supported()
                .unwrap()
                .dispatch::<K::Mode, _>(AloneAndBesideNan::<K> {
                    xs: chunk,
                    alone,
                    beside_nan,
                    kernel: core::marker::PhantomData,
                });
            if isa.width() > 1 {
                for ((&x, a), b) in chunk.iter().zip(&*alone).zip(&*beside_nan) {
                    assert_eq!(a, b, "{isa}: x {x:e}");
                }
                wide += chunk.len();
            }
            each(isa, chunk, alone);
        }
    }
    assert!(wide > 0 || !cfg!(target_arch = "x86_64"));
}

/// [`assert_clean_form_is_general_form`] of `K` over `xs`, then asserts that every lane type
/// gives the scalar lane type's bits.
pub fn assert_clean_form_is_general_form_and_scalar<K: Kernel>(xs: &[f32]) {
    let mut scalar = Vec::with_capacity(CHUNK);
    let mut compared = 0;
    assert_clean_form_is_general_form::<K>(xs, |isa, xs, bits| {
        if isa == Isa::Scalar {
            scalar.clear();
            scalar.extend_from_slice(bits);
            compared += xs.len();
            return;
        }
        assert_eq!(scalar.len(), xs.len());
        for ((&x, y), s) in xs.iter().zip(bits).zip(&scalar) {
            assert_eq!(y, s, "{isa} against scalar: x {x:e}");
        }
    });
    assert_eq!(compared, xs.len());
}

/// [`assert_clean_form_is_general_form_and_scalar`] of `K` over every float of `[lo, hi]`,
/// both signs, the 4,097 smallest floats of both signs, and every 65,521st bit pattern (NaNs
/// left out).
pub fn assert_clean_form_is_general_form_near<K: Kernel>(lo: f32, hi: f32) {
    let xs = both_signs_and_a_sweep((lo.to_bits()..=hi.to_bits()).chain(0..=4_096));
    assert_clean_form_is_general_form_and_scalar::<K>(&xs);
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
