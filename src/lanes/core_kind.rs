//! What kind of core runs the code, where an instruction set alone does not decide a choice.

/// Whether this CPU executes a 512-bit operation as two 256-bit halves, as AMD's Zen 4 does
/// (AMD family 25 with AVX-512; Zen 3, the same family, has no AVX-512 and never asks). Such a
/// core does one 512-bit FMA per cycle, so a GEMM microkernel there can stream its B panel
/// from L2 at half the bytes per cycle of a core with two full-width FMA pipes (Intel's, and
/// Zen 5's on servers); those want a B panel that stays in L1 ([`crate::gemm`]'s kernel
/// choice). Read once per process.
pub(crate) fn halves_512_bit_operations() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static HALVES: OnceLock<bool> = OnceLock::new();
        *HALVES.get_or_init(|| is_amd() && family(std::arch::x86_64::__cpuid(1).eax) == 25)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether AVX2's `vroundps` is one operation on this core, as on AMD's (Zen 1 to 5: one
/// operation per 128 or 256 bits, three or four cycles). Intel's cores since Skylake split it
/// into two operations on the two pipes that also run the multiplies and FMAs, eight cycles
/// long, so there the exact exp's reduction rounds by the spec's magic-number adds instead,
/// which run on the add pipes (see `Avx2` in `x86.rs`). Other vendors take the spec's adds.
/// Read once per process. Only x86-64's AVX2 lanes ask.
#[cfg(target_arch = "x86_64")]
pub(crate) fn rounds_in_one_operation() -> bool {
    use std::sync::OnceLock;
    static ONE: OnceLock<bool> = OnceLock::new();
    *ONE.get_or_init(is_amd)
}

/// Whether CPUID's vendor string is "AuthenticAMD".
#[cfg(target_arch = "x86_64")]
fn is_amd() -> bool {
    let vendor = std::arch::x86_64::__cpuid(0);
    (vendor.ebx, vendor.edx, vendor.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163)
}

/// The display family of CPUID leaf 1's `eax`: the base family, plus the extended family when
/// the base family is 15.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn family(eax: u32) -> u32 {
    let base = (eax >> 8) & 0xf;
    if base == 0xf {
        base + ((eax >> 20) & 0xff)
    } else {
        base
    }
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::family;

    pub fn family_adds_the_extended_family_only_to_family_15() {
        // Zen 4 (family 25 = 15 + 10, model 17), Intel (family 6, model 207).
        assert_eq!(family(0x00a1_0f11), 25);
        assert_eq!(family(0x000c_06f2), 6);
        // An extended family field is ignored below base family 15.
        assert_eq!(family(0x0ff0_0600), 6);
    }
}
