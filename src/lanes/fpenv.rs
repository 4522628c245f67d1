//! The floating-point environment of exact mode.
//!
//! On x86-64 the rounding of every SSE/AVX operation depends on the thread's MXCSR register:
//! the rounding mode (bits 13-14), flush-to-zero (FTZ, bit 15: subnormal results become `0`)
//! and denormals-are-zero (DAZ, bit 6: subnormal inputs read as `0`). A C program linked with
//! `-Ofast` (`crtfastmath.o`), PyTorch's `set_flush_denormal(True)` or a oneDNN thread sets
//! FTZ/DAZ, and rayon workers inherit whatever their creator had. Exact mode's bits are defined
//! with round-to-nearest-even and subnormals kept, so every exact kernel runs inside an
//! [`ExactFpEnv`]: it reads MXCSR, and only if the control bits differ from the exact ones sets
//! round-to-nearest, FTZ and DAZ off and every exception masked (the exact kernels compute
//! `inf - inf` and friends on lanes they later discard), then restores the caller's control
//! bits when it is dropped, also on unwind. Exception flags raised inside stay raised, as
//! `feupdateenv` leaves them.
//!
//! Reading MXCSR costs a few cycles; writing it is slower (it orders the floating-point
//! pipeline), which is why the guard writes only when the caller's value is not already the
//! exact one. Fast mode does not use the guard: it runs with the caller's MXCSR (FTZ/DAZ or
//! another rounding mode change its bits, as they change any other fast code's).
//!
//! On other targets the guard does nothing (their default environment is the exact one, and
//! this crate's exact kernels are only promised for it).

/// The exact control bits: every exception masked (bits 7-12), round-to-nearest (bits 13-14
/// zero), FTZ (bit 15) and DAZ (bit 6) off. The power-on default of every x86-64 thread.
pub const EXACT_MXCSR: u32 = 0x1F80;

/// The six sticky exception flags (bits 0-5), which the guard never clears.
const FLAGS: u32 = 0x3F;

/// The thread's MXCSR register (on other targets: [`EXACT_MXCSR`]).
#[inline(always)]
pub fn mxcsr() -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut v = 0u32;
        // SAFETY: `stmxcsr` stores the 4-byte MXCSR register at the address of `v`, a local
        // `u32` that is valid and aligned for the write. SSE is part of x86-64.
        unsafe {
            core::arch::asm!(
                "stmxcsr [{p}]",
                p = in(reg) &mut v as *mut u32,
                options(nostack, preserves_flags)
            );
        }
        v
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        EXACT_MXCSR
    }
}

/// Sets the thread's MXCSR register to `v` (ignored on other targets).
///
/// Every floating-point operation after this call rounds as `v` says; this is how tests put a
/// thread into FTZ/DAZ or round-toward-zero. Reserved bits (16-31) are ignored, not written.
#[inline(always)]
pub fn set_mxcsr(v: u32) {
    #[cfg(target_arch = "x86_64")]
    {
        let v = v & 0xFFFF;
        // SAFETY: `ldmxcsr` loads MXCSR from the address of `v`, a local `u32` valid for the
        // read; the reserved bits are cleared above, so the load cannot raise #GP. The asm is
        // not `pure`: the compiler keeps it in order with the other side effects around it.
        unsafe {
            core::arch::asm!(
                "ldmxcsr [{p}]",
                p = in(reg) &v as *const u32,
                options(nostack, preserves_flags, readonly)
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = v;
    }
}

/// While it lives, the thread runs with [`EXACT_MXCSR`]'s control bits; dropped (also on
/// unwind), it gives the thread back the control bits it had. Made by [`ExactFpEnv::enter`];
/// cheap when the thread already has the exact environment (one read, no write).
#[must_use = "the environment is restored when the guard is dropped"]
#[derive(Debug)]
pub struct ExactFpEnv {
    /// The caller's MXCSR, if the guard changed it.
    saved: Option<u32>,
}

impl ExactFpEnv {
    /// Enters the exact environment on this thread.
    #[inline(always)]
    pub fn enter() -> ExactFpEnv {
        let caller = mxcsr();
        if caller & !FLAGS == EXACT_MXCSR {
            return ExactFpEnv { saved: None };
        }
        set_mxcsr(EXACT_MXCSR | (caller & FLAGS));
        ExactFpEnv {
            saved: Some(caller),
        }
    }

    /// Enters the exact environment when `exact`, else leaves the thread's as it is.
    #[inline(always)]
    pub fn enter_if(exact: bool) -> ExactFpEnv {
        if exact {
            ExactFpEnv::enter()
        } else {
            ExactFpEnv { saved: None }
        }
    }

    /// Whether the guard changed the environment (and will restore it).
    pub fn changed(&self) -> bool {
        self.saved.is_some()
    }
}

impl Drop for ExactFpEnv {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(caller) = self.saved {
            // The caller's control bits, with every flag raised before or inside.
            set_mxcsr((caller & !FLAGS) | (mxcsr() & FLAGS));
        }
    }
}

/// Keeps `x` in a register the compiler must treat as produced here, in program order with
/// the MXCSR writes around it, so a value computed under the guard is not computed before the
/// guard is entered or after it is dropped.
#[inline(always)]
fn fence(x: f32) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut x = x;
        // SAFETY: an empty instruction that leaves the register alone; it only orders the value
        // (it is `volatile`, like the `ldmxcsr` of the guard, so the two stay in order).
        unsafe {
            core::arch::asm!("/* {x} */", x = inout(xmm_reg) x, options(nomem, nostack, preserves_flags));
        }
        x
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        x
    }
}

/// `f(x)` computed in the exact environment: for the scalar exact functions, which run
/// outside [`super::Supported::dispatch`].
#[inline(always)]
pub fn exact_scalar(x: f32, f: impl FnOnce(f32) -> f32) -> f32 {
    let env = ExactFpEnv::enter();
    if !env.changed() {
        return f(x);
    }
    let y = fence(f(fence(x)));
    drop(env);
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_sets_exact_bits_and_restores_the_callers() {
        let before = mxcsr();
        // FTZ | DAZ | round toward zero, invalid unmasked.
        let odd = (EXACT_MXCSR | 0x8000 | 0x0040 | 0x6000) & !0x0080;
        set_mxcsr(odd);
        {
            let g = ExactFpEnv::enter();
            assert!(g.changed());
            assert_eq!(mxcsr() & !FLAGS, EXACT_MXCSR);
            // A nested guard sees the exact environment and writes nothing.
            let inner = ExactFpEnv::enter();
            assert!(!inner.changed());
        }
        assert_eq!(mxcsr() & !FLAGS, odd & !FLAGS);
        set_mxcsr(before);
    }

    #[test]
    fn guard_restores_on_unwind() {
        let before = mxcsr();
        set_mxcsr(EXACT_MXCSR | 0x8040);
        let r = std::panic::catch_unwind(|| {
            let _g = ExactFpEnv::enter();
            panic!("inside the guard");
        });
        assert!(r.is_err());
        assert_eq!(mxcsr() & !FLAGS, EXACT_MXCSR | 0x8040);
        set_mxcsr(before);
    }

    #[test]
    fn exact_scalar_keeps_subnormals_under_ftz() {
        let before = mxcsr();
        set_mxcsr(EXACT_MXCSR | 0x8040);
        let tiny = std::hint::black_box(f32::from_bits(0x0080_0000));
        let half = exact_scalar(tiny, |x| x * std::hint::black_box(0.5));
        set_mxcsr(before);
        assert_eq!(half.to_bits(), 0x0040_0000);
    }
}
