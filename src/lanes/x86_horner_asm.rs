//! Exact mode's Horner rule over a buffer on AVX2 as one loop in assembly (see
//! [`exact_horner_in_place_avx2`]), apart from the lane type of `x86.rs` that calls it: a
//! `#[target_feature]` function that only the lane token, built after
//! [`super::Isa::supported`] checked the CPU, reaches.

/// Lanes in one block of the loop: twelve registers, one Horner chain each.
pub(super) const HORNER_BLOCK: usize = 96;

/// Exact mode's Horner rule (`crate::ops::horner` in [`crate::lanes::Exact`]: `acc =
/// coeffs[0]`, then `acc = acc * s + coeffs[k]` for each further coefficient, the product
/// rounded, then the sum) of every lane of the leading blocks of [`HORNER_BLOCK`] lanes of `s`,
/// written over them; returns the lanes written, a multiple of the block (see
/// [`super::Lanes::exact_horner_in_place`]). 0, with nothing written, for fewer than two
/// coefficients.
///
/// Written in assembly because the chains are long and dependent (a product then a sum per
/// coefficient), so their count in flight decides the speed, and with `s` in a register per
/// chain the 16 registers hold four chains. Here `s` is the multiply's memory operand each
/// step and the step's coefficient one register (broadcast from the table) shared by the
/// block's twelve chains, so one register per chain suffices: per step and chain one product,
/// one sum and (but for the last three chains, whose `s` fills the registers left) one load,
/// which the multiply pipes, the add pipes and the load units each take side by side, rather
/// than each chain waiting on its own previous step. No FMA: the
/// bits are the compiled rule's.
#[target_feature(enable = "avx2")]
#[inline]
pub(super) fn exact_horner_in_place_avx2(coeffs: &[f32], s: &mut [f32]) -> usize {
    let blocks = s.len() / HORNER_BLOCK;
    if coeffs.len() < 2 || blocks == 0 {
        return 0;
    }
    // The steps after the first product: a sum and a product each, then the last sum.
    let middle = coeffs.len() - 2;
    // SAFETY: the outer loop runs `blocks` times; pass `b` reads the 384 bytes of lanes
    // `96 b..96 b + 96` of `s` (in each of its steps) and then writes the same lanes, all
    // within the first `96 * blocks <= s.len()` elements; it reads `coeffs[0..coeffs.len()]`
    // (4-byte broadcasts at offsets 0 to `4 (middle + 1)`, `middle + 2` being its length); it
    // writes only the registers named here and the flags. AVX2 is enabled on this function.
    unsafe {
        core::arch::asm!(
            "2:",
            // acc = coeffs[0] * s
            "vbroadcastss ymm15, dword ptr [{c}]",
            "vmulps ymm0, ymm15, ymmword ptr [{s} + 0]",
            "vmulps ymm1, ymm15, ymmword ptr [{s} + 32]",
            "vmulps ymm2, ymm15, ymmword ptr [{s} + 64]",
            "vmulps ymm3, ymm15, ymmword ptr [{s} + 96]",
            "vmulps ymm4, ymm15, ymmword ptr [{s} + 128]",
            "vmulps ymm5, ymm15, ymmword ptr [{s} + 160]",
            "vmulps ymm6, ymm15, ymmword ptr [{s} + 192]",
            "vmulps ymm7, ymm15, ymmword ptr [{s} + 224]",
            "vmulps ymm8, ymm15, ymmword ptr [{s} + 256]",
            "vmovups ymm12, ymmword ptr [{s} + 288]",
            "vmulps ymm9, ymm15, ymm12",
            "vmovups ymm13, ymmword ptr [{s} + 320]",
            "vmulps ymm10, ymm15, ymm13",
            "vmovups ymm14, ymmword ptr [{s} + 352]",
            "vmulps ymm11, ymm15, ymm14",
            "lea {p}, [{c} + 4]",
            "mov {j}, {m}",
            "test {j}, {j}",
            "jz 4f",
            // acc = (acc + coeffs[k]) * s for k = 1..=middle
            "3:",
            "vbroadcastss ymm15, dword ptr [{p}]",
            "vaddps ymm0, ymm0, ymm15",
            "vaddps ymm1, ymm1, ymm15",
            "vaddps ymm2, ymm2, ymm15",
            "vaddps ymm3, ymm3, ymm15",
            "vaddps ymm4, ymm4, ymm15",
            "vaddps ymm5, ymm5, ymm15",
            "vaddps ymm6, ymm6, ymm15",
            "vaddps ymm7, ymm7, ymm15",
            "vaddps ymm8, ymm8, ymm15",
            "vaddps ymm9, ymm9, ymm15",
            "vaddps ymm10, ymm10, ymm15",
            "vaddps ymm11, ymm11, ymm15",
            "vmulps ymm0, ymm0, ymmword ptr [{s} + 0]",
            "vmulps ymm1, ymm1, ymmword ptr [{s} + 32]",
            "vmulps ymm2, ymm2, ymmword ptr [{s} + 64]",
            "vmulps ymm3, ymm3, ymmword ptr [{s} + 96]",
            "vmulps ymm4, ymm4, ymmword ptr [{s} + 128]",
            "vmulps ymm5, ymm5, ymmword ptr [{s} + 160]",
            "vmulps ymm6, ymm6, ymmword ptr [{s} + 192]",
            "vmulps ymm7, ymm7, ymmword ptr [{s} + 224]",
            "vmulps ymm8, ymm8, ymmword ptr [{s} + 256]",
            "vmulps ymm9, ymm9, ymm12",
            "vmulps ymm10, ymm10, ymm13",
            "vmulps ymm11, ymm11, ymm14",
            "add {p}, 4",
            "dec {j}",
            "jnz 3b",
            // acc + coeffs[last], stored over the block's `s`
            "4:",
            "vbroadcastss ymm15, dword ptr [{p}]",
            "vaddps ymm0, ymm0, ymm15",
            "vaddps ymm1, ymm1, ymm15",
            "vaddps ymm2, ymm2, ymm15",
            "vaddps ymm3, ymm3, ymm15",
            "vaddps ymm4, ymm4, ymm15",
            "vaddps ymm5, ymm5, ymm15",
            "vaddps ymm6, ymm6, ymm15",
            "vaddps ymm7, ymm7, ymm15",
            "vaddps ymm8, ymm8, ymm15",
            "vaddps ymm9, ymm9, ymm15",
            "vaddps ymm10, ymm10, ymm15",
            "vaddps ymm11, ymm11, ymm15",
            "vmovups ymmword ptr [{s} + 0], ymm0",
            "vmovups ymmword ptr [{s} + 32], ymm1",
            "vmovups ymmword ptr [{s} + 64], ymm2",
            "vmovups ymmword ptr [{s} + 96], ymm3",
            "vmovups ymmword ptr [{s} + 128], ymm4",
            "vmovups ymmword ptr [{s} + 160], ymm5",
            "vmovups ymmword ptr [{s} + 192], ymm6",
            "vmovups ymmword ptr [{s} + 224], ymm7",
            "vmovups ymmword ptr [{s} + 256], ymm8",
            "vmovups ymmword ptr [{s} + 288], ymm9",
            "vmovups ymmword ptr [{s} + 320], ymm10",
            "vmovups ymmword ptr [{s} + 352], ymm11",
            "add {s}, 384",
            "dec {k}",
            "jnz 2b",
            s = inout(reg) s.as_mut_ptr() => _,
            k = inout(reg) blocks => _,
            c = in(reg) coeffs.as_ptr(),
            m = in(reg) middle,
            p = out(reg) _,
            j = out(reg) _,
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
    blocks * HORNER_BLOCK
}
