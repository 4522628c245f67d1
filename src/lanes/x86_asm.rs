//! The x86-64 GEMM steps written in assembly, apart from the lane types of `x86.rs` that call
//! them: each is a `#[target_feature]` function that only a lane token, built after
//! [`super::Isa::supported`] checked the CPU, reaches.

use core::arch::x86_64::*;

/// `*a * x` as one `vmulps` with an embedded broadcast of `*a`.
///
/// Written in assembly because the compiler merges the broadcasts of one value into a single
/// `vbroadcastss` register and multiplies by that register: that register broadcast takes an
/// FP pipe slot which the GEMM's exact microkernel (24 multiplies and 24 adds per step of k)
/// has no room for, and with the broadcast in each multiply it runs at the FMA kernel's rate
/// (BENCHMARKS.md). The
/// product is the same IEEE multiply either way (`x` is the first source, so a product of two
/// NaNs keeps `x`'s payload; exact mode's GEMM stores only the canonical NaN).
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) fn mul_broadcast_avx512(a: &f32, x: __m512) -> __m512 {
    let product: __m512;
    // SAFETY: reads the four bytes of `*a`, which the reference keeps valid; writes only the
    // output register; AVX-512F is enabled on this function.
    unsafe {
        core::arch::asm!(
            "vmulps {product}, {x}, dword ptr [{a}]{{1to16}}",
            product = lateout(zmm_reg) product,
            x = in(zmm_reg) x,
            a = in(reg) a,
            options(pure, readonly, nostack, preserves_flags),
        );
    }
    product
}

/// `n = min(a.len() / 12, b.len() / 32)` pairs of exact steps of the GEMM's 6 x 2 microkernel
/// (see [`super::Lanes::exact_pairs_6x2`]), the loop in assembly.
///
/// Written in assembly because the compiler's schedule of the same instructions (it sinks the
/// second step's B loads between the first step's rows and reuses the broadcast register for
/// products) ran slower on Zen 3 than each step's two B loads first, then row by row a
/// broadcast, two multiplies and two adds (BENCHMARKS.md, "Choices in the code"). The
/// instructions are the generic kernel's: per accumulator, the product `a * b` rounded, then
/// `product + acc` rounded, `k` increasing, so the bits are the same.
#[target_feature(enable = "avx2")]
#[inline]
pub(super) fn exact_pairs_6x2_avx2(a: &[f32], b: &[f32], acc: &mut [__m256; 12]) {
    let n = (a.len() / 12).min(b.len() / 32);
    if n == 0 {
        return;
    }
    let [c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11] = acc;
    // SAFETY: the loop runs `n >= 1` times and reads `a[..12 n]` (48 bytes a pass) and
    // `b[..32 n]` (128 bytes a pass), both within the slices; it writes only the registers
    // named here (the accumulators in and out, ymm12-15 and the pointers and counter
    // clobbered) and the flags, and no memory; AVX is enabled on this function.
    unsafe {
        core::arch::asm!(
            "2:",
            "vmovups ymm12, ymmword ptr [{b} + 0]",
            "vmovups ymm13, ymmword ptr [{b} + 32]",
            "vbroadcastss ymm14, dword ptr [{a} + 0]",
            "vmulps ymm15, ymm14, ymm12",
            "vaddps ymm0, ymm15, ymm0",
            "vmulps ymm15, ymm14, ymm13",
            "vaddps ymm1, ymm15, ymm1",
            "vbroadcastss ymm14, dword ptr [{a} + 4]",
            "vmulps ymm15, ymm14, ymm12",
            "vaddps ymm2, ymm15, ymm2",
            "vmulps ymm15, ymm14, ymm13",
            "vaddps ymm3, ymm15, ymm3",
            "vbroadcastss ymm14, dword ptr [{a} + 8]",
            "vmulps ymm15, ymm14, ymm12",
            "vaddps ymm4, ymm15, ymm4",
            "vmulps ymm15, ymm14, ymm13",
            "vaddps ymm5, ymm15, ymm5",
            "vbroadcastss ymm14, dword ptr [{a} + 12]",
            "vmulps ymm15, ymm14, ymm12",
            "vaddps ymm6, ymm15, ymm6",
            "vmulps ymm15, ymm14, ymm13",
            "vaddps ymm7, ymm15, ymm7",
            "vbroadcastss ymm14, dword ptr [{a} + 16]",
            "vmulps ymm15, ymm14, ymm12",
            "vaddps ymm8, ymm15, ymm8",
            "vmulps ymm15, ymm14, ymm13",
            "vaddps ymm9, ymm15, ymm9",
            "vbroadcastss ymm14, dword ptr [{a} + 20]",
            "vmulps ymm15, ymm14, ymm12",
            "vaddps ymm10, ymm15, ymm10",
            "vmulps ymm15, ymm14, ymm13",
            "vaddps ymm11, ymm15, ymm11",
            "vmovups ymm12, ymmword ptr [{b} + 64]",
            "vmovups ymm13, ymmword ptr [{b} + 96]",
            "vbroadcastss ymm14, dword ptr [{a} + 24]",
            "vmulps ymm15, ymm14, ymm12",
            "vaddps ymm0, ymm15, ymm0",
            "vmulps ymm15, ymm14, ymm13",
            "vaddps ymm1, ymm15, ymm1",
            "vbroadcastss ymm14, dword ptr [{a} + 28]",
            "vmulps ymm15, ymm14, ymm12",
            "vaddps ymm2, ymm15, ymm2",
            "vmulps ymm15, ymm14, ymm13",
            "vaddps ymm3, ymm15, ymm3",
            "vbroadcastss ymm14, dword ptr [{a} + 32]",
            "vmulps ymm15, ymm14, ymm12",
            "vaddps ymm4, ymm15, ymm4",
            "vmulps ymm15, ymm14, ymm13",
            "vaddps ymm5, ymm15, ymm5",
            "vbroadcastss ymm14, dword ptr [{a} + 36]",
            "vmulps ymm15, ymm14, ymm12",
            "vaddps ymm6, ymm15, ymm6",
            "vmulps ymm15, ymm14, ymm13",
            "vaddps ymm7, ymm15, ymm7",
            "vbroadcastss ymm14, dword ptr [{a} + 40]",
            "vmulps ymm15, ymm14, ymm12",
            "vaddps ymm8, ymm15, ymm8",
            "vmulps ymm15, ymm14, ymm13",
            "vaddps ymm9, ymm15, ymm9",
            "vbroadcastss ymm14, dword ptr [{a} + 44]",
            "vmulps ymm15, ymm14, ymm12",
            "vaddps ymm10, ymm15, ymm10",
            "vmulps ymm15, ymm14, ymm13",
            "vaddps ymm11, ymm15, ymm11",
            "add {a}, 48",
            "add {b}, 128",
            "dec {n}",
            "jnz 2b",
            a = inout(reg) a.as_ptr() => _,
            b = inout(reg) b.as_ptr() => _,
            n = inout(reg) n => _,
            inout("ymm0") *c0,
            inout("ymm1") *c1,
            inout("ymm2") *c2,
            inout("ymm3") *c3,
            inout("ymm4") *c4,
            inout("ymm5") *c5,
            inout("ymm6") *c6,
            inout("ymm7") *c7,
            inout("ymm8") *c8,
            inout("ymm9") *c9,
            inout("ymm10") *c10,
            inout("ymm11") *c11,
            out("ymm12") _,
            out("ymm13") _,
            out("ymm14") _,
            out("ymm15") _,
            options(readonly, nostack),
        );
    }
}
