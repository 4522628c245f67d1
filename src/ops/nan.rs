//! The canonical NaN at the stores of exact mode that no element-wise kernel covers: a tile of
//! a matrix product after its epilogue (`inf * 0`, `inf - inf` and NaN payloads of the
//! operands come out of IEEE arithmetic as whatever NaN the hardware makes, `0xFFC00000` on
//! x86-64 or the payload passed through), and the product of a gated form.
//!
//! One compare and one select per stored element. Fast mode stores what the hardware made.

use super::nan_where_nan;
use crate::lanes::{LaneOp, Lanes, Mode, compiled_once_per_mode};

/// Replaces every NaN of `data` with the canonical NaN, a register at a time.
///
/// A register is stored only when it holds a NaN. Stored unconditionally, the compiler made
/// each store of `select(nan, canonical, x)` over the `x` just loaded a masked store of the
/// canonical NaN (`vmaskmovps` on AVX2), which is slow on AMD's cores, and a finished GEMM
/// tile, NaN-free but for rare inputs, paid one per register.
#[inline(always)]
pub fn canonical_nan_lanes<L: Lanes>(l: L, data: &mut [f32]) {
    let mut d = data.chunks_exact_mut(L::WIDTH);
    for d in &mut d {
        let x = l.load(d);
        if l.any(l.is_nan(x)) {
            l.store(nan_where_nan(l, x, x), d);
        }
    }
    let d = d.into_remainder();
    if !d.is_empty() {
        let x = l.load_partial(d, 0.0);
        l.store_partial(nan_where_nan(l, x, x), d);
    }
}

/// `out[i] = out[i] * up[i]`, a NaN product canonical in exact mode (equal lengths).
#[inline(always)]
fn mul_lanes<L: Lanes, M: Mode>(l: L, out: &mut [f32], up: &[f32]) {
    let w = L::WIDTH;
    for (o, u) in out.chunks_mut(w).zip(up.chunks(w)) {
        let p = l.mul(l.load_partial(o, 0.0), l.load_partial(u, 0.0));
        let p = if M::FAST { p } else { nan_where_nan(l, p, p) };
        l.store_partial(p, o);
    }
}

/// `out[i] *= up[i]`: in exact mode in the exact floating-point environment and with a
/// canonical NaN. `up` has `out`'s length (the caller checks it).
pub struct MulRow<'a> {
    /// The left factors, and the products.
    pub out: &'a mut [f32],
    /// The right factors.
    pub up: &'a [f32],
}

impl LaneOp for MulRow<'_> {
    type Output = ();
    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        debug_assert_eq!(self.out.len(), self.up.len());
        mul_lanes::<L, M>(l, self.out, self.up)
    }
}

compiled_once_per_mode!(MulRow<'_>);

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use crate::lanes::Isa;
    use crate::lanes::{Exact, Fast};
    use crate::ops::CANONICAL_NAN;

    pub fn nan_payloads_and_inf_times_zero_become_canonical_in_exact_mode() {
        let up = [0.0f32, 2.0, 1.0, -3.0, 0.0, 1.0, 5.0];
        for isa in Isa::available() {
            let isa = isa.supported().unwrap();
            let mut out = [
                f32::INFINITY,
                f32::from_bits(0x7FC0_1234),
                f32::from_bits(0xFFC0_0000),
                1.5,
                f32::NEG_INFINITY,
                f32::from_bits(0x7F80_0001),
                -0.5,
            ];
            let mut fast = out;
            MulRow {
                out: &mut out,
                up: &up,
            }
            .dispatch::<Exact>(isa);
            let bits: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
            let canon = CANONICAL_NAN.to_bits();
            assert_eq!(
                bits,
                [
                    canon,
                    canon,
                    canon,
                    (-4.5f32).to_bits(),
                    canon,
                    canon,
                    (-2.5f32).to_bits()
                ],
                "{isa:?}"
            );
            MulRow {
                out: &mut fast,
                up: &up,
            }
            .dispatch::<Fast>(isa);
            assert!(fast[0].is_nan() && fast[3] == -4.5, "{isa:?}");
        }
    }
}
