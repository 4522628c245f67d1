//! Exact mode's `tanh` on AVX2 as one loop in assembly (see [`exact_tanh_in_range_avx2`]),
//! apart from the lane type of `x86.rs` that calls it: a `#[target_feature]` function that only
//! the lane token, built after [`super::Isa::supported`] checked the CPU, reaches.

use crate::ops::exp::{EXP_Q, LN2_HI, LN2_LO, LOG2E};
use crate::ops::tanh::{TANH_IN_RANGE, TANH_P, TANH_SMALL};

/// Lanes in one block of the loop: three registers.
pub(super) const TANH_BLOCK: usize = 24;

/// The loop's constants, each broadcast to a whole register (as bits), in the order of the
/// offsets in the assembly: `|x|`'s mask, `log2 e`, `-ln2_hi`, `-ln2_lo`, the exp's `q` and
/// tanh's `P` (highest first), 1, 2, `TANH_SMALL`, and as integers the bits of
/// `TANH_IN_RANGE` and of `TANH_SMALL` less one (for `>=` by a signed `>`).
#[repr(C, align(32))]
struct Constants([[u32; 8]; 19]);

static CONSTANTS: Constants = {
    let one = [
        0x7FFF_FFFF,
        LOG2E.to_bits(),
        (-LN2_HI).to_bits(),
        (-LN2_LO).to_bits(),
        EXP_Q[0].to_bits(),
        EXP_Q[1].to_bits(),
        EXP_Q[2].to_bits(),
        EXP_Q[3].to_bits(),
        EXP_Q[4].to_bits(),
        TANH_P[0].to_bits(),
        TANH_P[1].to_bits(),
        TANH_P[2].to_bits(),
        TANH_P[3].to_bits(),
        TANH_P[4].to_bits(),
        1f32.to_bits(),
        2f32.to_bits(),
        TANH_SMALL.to_bits(),
        TANH_IN_RANGE.to_bits() - 1,
        TANH_SMALL.to_bits() - 1,
    ];
    let mut t = [[0u32; 8]; 19];
    let mut k = 0;
    while k < 19 {
        t[k] = [one[k]; 8];
        k += 1;
    }
    Constants(t)
};

/// Exact `tanh` of the leading blocks of [`TANH_BLOCK`] lanes of `src` (`dst` itself when
/// `None`) into `dst`, up to the first block that has a lane of `|x| >= TANH_IN_RANGE` or NaN
/// (or to the last whole block); returns the lanes written, a multiple of the block (see
/// [`super::Lanes::exact_tanh_in_range`]).
///
/// Each lane takes the spec's operations in the spec's order, as `tanh_by_stage` does: the
/// exp of `ax + ax` by `reduce_arg`'s steps (`n` by `vroundps`, `x - n*ln2_hi` as one FMA,
/// whose product is exact for `|n| < 256`, then the product by `-ln2_lo` and a sum), the
/// Horner steps of `q` as products and sums, `1 + (r + (r*r)*q)`, `2^n` added to the exponent
/// field (`n` converted by `vcvtps2dq`, exact for an integral `n`), `1 - 2/(e + 1)`; the
/// polynomial `ax + ax*(z*P(z))` by products and sums; the select by `ax < TANH_SMALL` and the
/// sign of `x` OR-ed last. A block whose lanes are all below `TANH_SMALL` takes the
/// polynomial alone. No other FMA, so the bits are the generic kernel's.
///
/// Written in assembly because the compiler's schedule of the same operations (about 43 per
/// register of both branches) keeps the core's pipes half busy: it re-serialises the
/// interleaved Horner chains, reloads the constants by broadcasts and spills. Here each step
/// runs on the block's three registers for both polynomials before the next step, the
/// constants come from one aligned table (one load per step, shared by the registers), and
/// every value stays in a register.
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(super) fn exact_tanh_in_range_avx2(src: Option<&[f32]>, dst: &mut [f32]) -> usize {
    let len = match src {
        Some(src) => src.len().min(dst.len()),
        None => dst.len(),
    };
    let blocks = len / TANH_BLOCK;
    let from = match src {
        Some(src) => src.as_ptr(),
        None => dst.as_ptr(),
    };
    let left: usize;
    // SAFETY: the loop runs at most `blocks` times; pass `b` reads the 96 bytes of lanes
    // `24 b..24 b + 24` of `from` (`src`, or `dst` in place) and then writes the same lanes of
    // `dst`, all within the first `24 * blocks <= len` elements of both (in place, every read
    // of a block comes before its store); it reads the constants' table (19 aligned
    // registers); it writes only the registers named here and the flags. AVX2 and FMA are
    // enabled on this function.
    unsafe {
        core::arch::asm!(
            "test {k}, {k}",
            "jz 3f",
            "2:",
            "vmovups ymm0, ymmword ptr [{src} + 0]",
            "vmovups ymm1, ymmword ptr [{src} + 32]",
            "vmovups ymm2, ymmword ptr [{src} + 64]",
            "vmovaps ymm15, ymmword ptr [{c} + 0]",
            "vandps ymm0, ymm0, ymm15",
            "vandps ymm1, ymm1, ymm15",
            "vandps ymm2, ymm2, ymm15",
            "vpmaxsd ymm3, ymm0, ymm1",
            "vpmaxsd ymm3, ymm3, ymm2",
            "vpcmpgtd ymm4, ymm3, ymmword ptr [{c} + 544]",
            "vpcmpgtd ymm5, ymm3, ymmword ptr [{c} + 576]",
            "vmovmskps {m:e}, ymm4",
            "test {m:e}, {m:e}",
            "jnz 3f",
            "vmovmskps {m:e}, ymm5",
            "test {m:e}, {m:e}",
            "jz 4f",
            "vmulps ymm6, ymm0, ymm0",
            "vmulps ymm7, ymm1, ymm1",
            "vmulps ymm8, ymm2, ymm2",
            "vaddps ymm0, ymm0, ymm0",
            "vaddps ymm1, ymm1, ymm1",
            "vaddps ymm2, ymm2, ymm2",
            "vmovaps ymm15, ymmword ptr [{c} + 32]",
            "vmulps ymm3, ymm0, ymm15",
            "vmulps ymm4, ymm1, ymm15",
            "vmulps ymm5, ymm2, ymm15",
            "vroundps ymm3, ymm3, 8",
            "vroundps ymm4, ymm4, 8",
            "vroundps ymm5, ymm5, 8",
            "vmovaps ymm15, ymmword ptr [{c} + 64]",
            "vfmadd231ps ymm0, ymm3, ymm15",
            "vfmadd231ps ymm1, ymm4, ymm15",
            "vfmadd231ps ymm2, ymm5, ymm15",
            "vcvtps2dq ymm12, ymm3",
            "vcvtps2dq ymm13, ymm4",
            "vcvtps2dq ymm14, ymm5",
            "vmovaps ymm15, ymmword ptr [{c} + 96]",
            "vmulps ymm3, ymm3, ymm15",
            "vmulps ymm4, ymm4, ymm15",
            "vmulps ymm5, ymm5, ymm15",
            "vaddps ymm0, ymm3, ymm0",
            "vaddps ymm1, ymm4, ymm1",
            "vaddps ymm2, ymm5, ymm2",
            "vpslld ymm12, ymm12, 23",
            "vpslld ymm13, ymm13, 23",
            "vpslld ymm14, ymm14, 23",
            "vmovaps ymm15, ymmword ptr [{c} + 288]",
            "vmulps ymm9, ymm6, ymm15",
            "vmulps ymm10, ymm7, ymm15",
            "vmulps ymm11, ymm8, ymm15",
            "vmovaps ymm15, ymmword ptr [{c} + 128]",
            "vmulps ymm3, ymm0, ymm15",
            "vmulps ymm4, ymm1, ymm15",
            "vmulps ymm5, ymm2, ymm15",
            "vmovaps ymm15, ymmword ptr [{c} + 320]",
            "vaddps ymm9, ymm9, ymm15",
            "vaddps ymm10, ymm10, ymm15",
            "vaddps ymm11, ymm11, ymm15",
            "vmovaps ymm15, ymmword ptr [{c} + 160]",
            "vaddps ymm3, ymm3, ymm15",
            "vaddps ymm4, ymm4, ymm15",
            "vaddps ymm5, ymm5, ymm15",
            "vmulps ymm9, ymm9, ymm6",
            "vmulps ymm10, ymm10, ymm7",
            "vmulps ymm11, ymm11, ymm8",
            "vmulps ymm3, ymm3, ymm0",
            "vmulps ymm4, ymm4, ymm1",
            "vmulps ymm5, ymm5, ymm2",
            "vmovaps ymm15, ymmword ptr [{c} + 352]",
            "vaddps ymm9, ymm9, ymm15",
            "vaddps ymm10, ymm10, ymm15",
            "vaddps ymm11, ymm11, ymm15",
            "vmovaps ymm15, ymmword ptr [{c} + 192]",
            "vaddps ymm3, ymm3, ymm15",
            "vaddps ymm4, ymm4, ymm15",
            "vaddps ymm5, ymm5, ymm15",
            "vmulps ymm9, ymm9, ymm6",
            "vmulps ymm10, ymm10, ymm7",
            "vmulps ymm11, ymm11, ymm8",
            "vmulps ymm3, ymm3, ymm0",
            "vmulps ymm4, ymm4, ymm1",
            "vmulps ymm5, ymm5, ymm2",
            "vmovaps ymm15, ymmword ptr [{c} + 384]",
            "vaddps ymm9, ymm9, ymm15",
            "vaddps ymm10, ymm10, ymm15",
            "vaddps ymm11, ymm11, ymm15",
            "vmovaps ymm15, ymmword ptr [{c} + 224]",
            "vaddps ymm3, ymm3, ymm15",
            "vaddps ymm4, ymm4, ymm15",
            "vaddps ymm5, ymm5, ymm15",
            "vmulps ymm9, ymm9, ymm6",
            "vmulps ymm10, ymm10, ymm7",
            "vmulps ymm11, ymm11, ymm8",
            "vmulps ymm3, ymm3, ymm0",
            "vmulps ymm4, ymm4, ymm1",
            "vmulps ymm5, ymm5, ymm2",
            "vmovaps ymm15, ymmword ptr [{c} + 416]",
            "vaddps ymm9, ymm9, ymm15",
            "vaddps ymm10, ymm10, ymm15",
            "vaddps ymm11, ymm11, ymm15",
            "vmovaps ymm15, ymmword ptr [{c} + 256]",
            "vaddps ymm3, ymm3, ymm15",
            "vaddps ymm4, ymm4, ymm15",
            "vaddps ymm5, ymm5, ymm15",
            "vmulps ymm9, ymm9, ymm6",
            "vmulps ymm10, ymm10, ymm7",
            "vmulps ymm11, ymm11, ymm8",
            "vmulps ymm6, ymm0, ymm0",
            "vmulps ymm7, ymm1, ymm1",
            "vmulps ymm8, ymm2, ymm2",
            "vmulps ymm3, ymm3, ymm6",
            "vmulps ymm4, ymm4, ymm7",
            "vmulps ymm5, ymm5, ymm8",
            "vaddps ymm3, ymm3, ymm0",
            "vaddps ymm4, ymm4, ymm1",
            "vaddps ymm5, ymm5, ymm2",
            "vmovaps ymm15, ymmword ptr [{c} + 448]",
            "vaddps ymm3, ymm3, ymm15",
            "vaddps ymm4, ymm4, ymm15",
            "vaddps ymm5, ymm5, ymm15",
            "vpaddd ymm3, ymm3, ymm12",
            "vpaddd ymm4, ymm4, ymm13",
            "vpaddd ymm5, ymm5, ymm14",
            "vaddps ymm3, ymm3, ymm15",
            "vaddps ymm4, ymm4, ymm15",
            "vaddps ymm5, ymm5, ymm15",
            "vmovaps ymm15, ymmword ptr [{c} + 480]",
            "vdivps ymm3, ymm15, ymm3",
            "vdivps ymm4, ymm15, ymm4",
            "vdivps ymm5, ymm15, ymm5",
            "vmovups ymm0, ymmword ptr [{src} + 0]",
            "vmovups ymm1, ymmword ptr [{src} + 32]",
            "vmovups ymm2, ymmword ptr [{src} + 64]",
            "vmovaps ymm15, ymmword ptr [{c} + 0]",
            "vandps ymm6, ymm0, ymm15",
            "vandps ymm7, ymm1, ymm15",
            "vandps ymm8, ymm2, ymm15",
            "vmulps ymm9, ymm9, ymm6",
            "vmulps ymm10, ymm10, ymm7",
            "vmulps ymm11, ymm11, ymm8",
            "vaddps ymm9, ymm9, ymm6",
            "vaddps ymm10, ymm10, ymm7",
            "vaddps ymm11, ymm11, ymm8",
            "vmovaps ymm15, ymmword ptr [{c} + 512]",
            "vcmpps ymm12, ymm6, ymm15, 1",
            "vcmpps ymm13, ymm7, ymm15, 1",
            "vcmpps ymm14, ymm8, ymm15, 1",
            "vxorps ymm0, ymm0, ymm6",
            "vxorps ymm1, ymm1, ymm7",
            "vxorps ymm2, ymm2, ymm8",
            "vmovaps ymm15, ymmword ptr [{c} + 448]",
            "vsubps ymm3, ymm15, ymm3",
            "vsubps ymm4, ymm15, ymm4",
            "vsubps ymm5, ymm15, ymm5",
            "vblendvps ymm9, ymm3, ymm9, ymm12",
            "vblendvps ymm10, ymm4, ymm10, ymm13",
            "vblendvps ymm11, ymm5, ymm11, ymm14",
            "vorps ymm9, ymm9, ymm0",
            "vorps ymm10, ymm10, ymm1",
            "vorps ymm11, ymm11, ymm2",
            "vmovups ymmword ptr [{dst} + 0], ymm9",
            "vmovups ymmword ptr [{dst} + 32], ymm10",
            "vmovups ymmword ptr [{dst} + 64], ymm11",
            "5:",
            "add {src}, 96",
            "add {dst}, 96",
            "dec {k}",
            "jnz 2b",
            "jmp 3f",
            "4:",
            "vmulps ymm6, ymm0, ymm0",
            "vmulps ymm7, ymm1, ymm1",
            "vmulps ymm8, ymm2, ymm2",
            "vmovaps ymm15, ymmword ptr [{c} + 288]",
            "vmulps ymm9, ymm6, ymm15",
            "vmulps ymm10, ymm7, ymm15",
            "vmulps ymm11, ymm8, ymm15",
            "vmovaps ymm15, ymmword ptr [{c} + 320]",
            "vaddps ymm9, ymm9, ymm15",
            "vaddps ymm10, ymm10, ymm15",
            "vaddps ymm11, ymm11, ymm15",
            "vmulps ymm9, ymm9, ymm6",
            "vmulps ymm10, ymm10, ymm7",
            "vmulps ymm11, ymm11, ymm8",
            "vmovaps ymm15, ymmword ptr [{c} + 352]",
            "vaddps ymm9, ymm9, ymm15",
            "vaddps ymm10, ymm10, ymm15",
            "vaddps ymm11, ymm11, ymm15",
            "vmulps ymm9, ymm9, ymm6",
            "vmulps ymm10, ymm10, ymm7",
            "vmulps ymm11, ymm11, ymm8",
            "vmovaps ymm15, ymmword ptr [{c} + 384]",
            "vaddps ymm9, ymm9, ymm15",
            "vaddps ymm10, ymm10, ymm15",
            "vaddps ymm11, ymm11, ymm15",
            "vmulps ymm9, ymm9, ymm6",
            "vmulps ymm10, ymm10, ymm7",
            "vmulps ymm11, ymm11, ymm8",
            "vmovaps ymm15, ymmword ptr [{c} + 416]",
            "vaddps ymm9, ymm9, ymm15",
            "vaddps ymm10, ymm10, ymm15",
            "vaddps ymm11, ymm11, ymm15",
            "vmulps ymm9, ymm9, ymm6",
            "vmulps ymm10, ymm10, ymm7",
            "vmulps ymm11, ymm11, ymm8",
            "vmulps ymm9, ymm9, ymm0",
            "vmulps ymm10, ymm10, ymm1",
            "vmulps ymm11, ymm11, ymm2",
            "vaddps ymm9, ymm9, ymm0",
            "vaddps ymm10, ymm10, ymm1",
            "vaddps ymm11, ymm11, ymm2",
            "vmovups ymm3, ymmword ptr [{src} + 0]",
            "vmovups ymm4, ymmword ptr [{src} + 32]",
            "vmovups ymm5, ymmword ptr [{src} + 64]",
            "vxorps ymm3, ymm3, ymm0",
            "vxorps ymm4, ymm4, ymm1",
            "vxorps ymm5, ymm5, ymm2",
            "vorps ymm9, ymm9, ymm3",
            "vorps ymm10, ymm10, ymm4",
            "vorps ymm11, ymm11, ymm5",
            "vmovups ymmword ptr [{dst} + 0], ymm9",
            "vmovups ymmword ptr [{dst} + 32], ymm10",
            "vmovups ymmword ptr [{dst} + 64], ymm11",
            "jmp 5b",
            "3:",
            src = inout(reg) from => _,
            dst = inout(reg) dst.as_mut_ptr() => _,
            k = inout(reg) blocks => left,
            c = in(reg) &CONSTANTS,
            m = out(reg) _,
            out("ymm0") _,
            out("ymm1") _,
            out("ymm2") _,
            out("ymm3") _,
            out("ymm4") _,
            out("ymm5") _,
            out("ymm6") _,
            out("ymm7") _,
            out("ymm8") _,
            out("ymm9") _,
            out("ymm10") _,
            out("ymm11") _,
            out("ymm12") _,
            out("ymm13") _,
            out("ymm14") _,
            out("ymm15") _,
            options(nostack),
        );
    }
    (blocks - left) * TANH_BLOCK
}
