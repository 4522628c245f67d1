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
//! On aarch64 the same holds for FPCR: the rounding mode (RMode, bits 22-23), flush-to-zero
//! (FZ, bit 24: subnormal inputs and results read and become `0`), and with FEAT_AFP the
//! alternate handling (AH, bit 1) and flush-inputs-to-zero (FIZ, bit 0). The guard clears them
//! and the trap enables (bits 8-12 and 15, which most cores do not implement) and keeps every
//! other bit of the caller's; the exception flags live in another register (FPSR), which the
//! guard does not touch. Bits 0 and 1 are reserved as zero where FEAT_AFP is absent, so clearing
//! them is safe everywhere.
//!
//! On other targets the guard does nothing (their default environment is the exact one, and
//! this crate's exact kernels are only promised for it).

/// The exact control bits: every exception masked (bits 7-12), round-to-nearest (bits 13-14
/// zero), FTZ (bit 15) and DAZ (bit 6) off. The power-on default of every x86-64 thread.
#[cfg(target_arch = "x86_64")]
pub const EXACT_MXCSR: u32 = 0x1F80;

/// The six sticky exception flags (bits 0-5), which the guard never clears.
#[cfg(target_arch = "x86_64")]
const FLAGS: u32 = 0x3F;

/// The FPCR bits exact mode needs clear: FIZ (0), AH (1), the trap enables IOE, DZE, OFE, UFE,
/// IXE (8-12) and IDE (15), RMode (22-23, round-to-nearest is `0b00`) and FZ (24).
#[cfg(target_arch = "aarch64")]
pub const FPCR_NOT_EXACT: u32 = 0x3 | (0x1F << 8) | (1 << 15) | (0x3 << 22) | (1 << 24);

/// The thread's MXCSR register.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn mxcsr() -> u32 {
    let mut v = 0u32;
    // SAFETY: `stmxcsr` stores the 4-byte MXCSR register at the address of `v`, a local `u32`
    // that is valid and aligned for the write. SSE is part of x86-64.
    unsafe {
        core::arch::asm!(
            "stmxcsr [{p}]",
            p = in(reg) &mut v as *mut u32,
            options(nostack, preserves_flags)
        );
    }
    v
}

/// Sets the thread's MXCSR register to `v`.
///
/// Every floating-point operation after this call rounds as `v` says; this is how tests put a
/// thread into FTZ/DAZ or round-toward-zero. Reserved bits (16-31) are ignored, not written.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn set_mxcsr(v: u32) {
    let v = v & 0xFFFF;
    // SAFETY: `ldmxcsr` loads MXCSR from the address of `v`, a local `u32` valid for the read;
    // the reserved bits are cleared above, so the load cannot raise #GP. The asm is not `pure`:
    // the compiler keeps it in order with the other side effects around it.
    unsafe {
        core::arch::asm!(
            "ldmxcsr [{p}]",
            p = in(reg) &v as *const u32,
            options(nostack, preserves_flags, readonly)
        );
    }
}

/// The thread's FPCR register (bits 32-63 are reserved).
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub fn fpcr() -> u32 {
    let v: u64;
    // SAFETY: `mrs` reads FPCR, which EL0 may read, into a general register; no memory.
    unsafe {
        core::arch::asm!("mrs {v}, fpcr", v = out(reg) v, options(nomem, nostack, preserves_flags));
    }
    v as u32
}

/// Sets the thread's FPCR register to `v`. Bits the CPU does not implement read back as zero.
///
/// Every floating-point operation after this call rounds as `v` says; this is how tests put a
/// thread into flush-to-zero or round-toward-zero.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub fn set_fpcr(v: u32) {
    // SAFETY: `msr` writes FPCR, which EL0 may write; reserved bits are ignored. The asm is not
    // `pure` (and touches no memory): the compiler keeps it in order with the other side
    // effects around it, and the hardware applies it to every later instruction.
    unsafe {
        core::arch::asm!("msr fpcr, {v}", v = in(reg) v as u64, options(nomem, nostack, preserves_flags));
    }
}

/// The thread's floating-point control register: MXCSR on x86-64, FPCR on aarch64 (`0`
/// elsewhere, where the guard does nothing).
#[inline(always)]
fn control() -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        mxcsr()
    }
    #[cfg(target_arch = "aarch64")]
    {
        fpcr()
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        0
    }
}

/// Sets the register of [`control`].
#[inline(always)]
fn set_control(v: u32) {
    #[cfg(target_arch = "x86_64")]
    set_mxcsr(v);
    #[cfg(target_arch = "aarch64")]
    set_fpcr(v);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = v;
}

/// The control register's value for exact mode, from the caller's `v`: on x86-64 the exact
/// control bits with the caller's flags; on aarch64 the caller's FPCR with the bits of
/// `FPCR_NOT_EXACT` cleared.
#[inline(always)]
fn exact_from(v: u32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        EXACT_MXCSR | (v & FLAGS)
    }
    #[cfg(target_arch = "aarch64")]
    {
        v & !FPCR_NOT_EXACT
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        v
    }
}

/// The value that gives the caller back its control register, from the caller's `caller` and
/// the current `now`: on x86-64 the caller's control bits with every flag raised before or
/// inside; elsewhere the caller's value (aarch64's flags are in FPSR).
#[inline(always)]
fn restored(caller: u32, now: u32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        (caller & !FLAGS) | (now & FLAGS)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = now;
        caller
    }
}

/// While it lives, the thread runs with exact mode's control bits (`EXACT_MXCSR`'s on x86-64,
/// FPCR without `FPCR_NOT_EXACT` on aarch64); dropped (also on unwind), it gives the thread
/// back the control bits it had. Made by [`ExactFpEnv::enter`]; cheap when the thread already
/// has the exact environment (one read, no write).
#[must_use = "the environment is restored when the guard is dropped"]
#[derive(Debug)]
pub struct ExactFpEnv {
    /// The caller's control register, if the guard changed it.
    saved: Option<u32>,
}

impl ExactFpEnv {
    /// Enters the exact environment on this thread.
    #[inline(always)]
    pub fn enter() -> ExactFpEnv {
        let caller = control();
        let exact = exact_from(caller);
        if exact == caller {
            return ExactFpEnv { saved: None };
        }
        set_control(exact);
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
            set_control(restored(caller, control()));
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
    #[cfg(target_arch = "aarch64")]
    {
        let mut x = x;
        // SAFETY: an empty instruction that leaves the register alone; it only orders the value
        // (it is `volatile`, like the `msr fpcr` of the guard, so the two stay in order).
        unsafe {
            core::arch::asm!("/* {x:s} */", x = inout(vreg) x, options(nomem, nostack, preserves_flags));
        }
        x
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
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

#[cfg(all(feature = "unit-tests", target_arch = "x86_64"))]
#[doc(hidden)]
pub mod tests {
    use super::*;

    pub fn guard_sets_exact_bits_and_restores_the_callers() {
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

    pub fn guard_restores_on_unwind() {
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

    pub fn exact_scalar_keeps_subnormals_under_ftz() {
        let before = mxcsr();
        set_mxcsr(EXACT_MXCSR | 0x8040);
        let tiny = std::hint::black_box(f32::from_bits(0x0080_0000));
        let half = exact_scalar(tiny, |x| x * std::hint::black_box(0.5));
        set_mxcsr(before);
        assert_eq!(half.to_bits(), 0x0040_0000);
    }
}

#[cfg(all(feature = "unit-tests", target_arch = "aarch64"))]
#[doc(hidden)]
pub mod tests {
    use super::*;

    /// FZ and round-toward-zero (RMode `0b11`).
    const FZ_TOWARD_ZERO: u32 = (1 << 24) | (0x3 << 22);

    pub fn guard_clears_rounding_and_flushing_and_restores_the_callers_fpcr() {
        let before = fpcr();
        // Default NaN (bit 25) is not the guard's: it stays as the caller set it.
        let odd = before | FZ_TOWARD_ZERO | (1 << 25);
        set_fpcr(odd);
        assert_eq!(
            fpcr() & FZ_TOWARD_ZERO,
            FZ_TOWARD_ZERO,
            "FPCR took FZ and RMode"
        );
        {
            let g = ExactFpEnv::enter();
            assert!(g.changed());
            assert_eq!(fpcr() & FPCR_NOT_EXACT, 0);
            assert_eq!(fpcr() & (1 << 25), 1 << 25);
            // A nested guard sees the exact environment and writes nothing.
            let inner = ExactFpEnv::enter();
            assert!(!inner.changed());
        }
        assert_eq!(fpcr(), odd);
        set_fpcr(before);
    }

    pub fn guard_restores_on_unwind() {
        let before = fpcr();
        set_fpcr(before | FZ_TOWARD_ZERO);
        let r = std::panic::catch_unwind(|| {
            let _g = ExactFpEnv::enter();
            panic!("inside the guard");
        });
        assert!(r.is_err());
        assert_eq!(fpcr(), before | FZ_TOWARD_ZERO);
        set_fpcr(before);
    }

    pub fn exact_scalar_keeps_subnormals_under_fz() {
        let before = fpcr();
        set_fpcr(before | (1 << 24));
        let tiny = std::hint::black_box(f32::from_bits(0x0080_0000));
        let flushed = std::hint::black_box(tiny * std::hint::black_box(0.5));
        let half = exact_scalar(tiny, |x| x * std::hint::black_box(0.5));
        set_fpcr(before);
        // FZ took effect outside the guard, not inside.
        assert_eq!(flushed.to_bits(), 0);
        assert_eq!(half.to_bits(), 0x0040_0000);
    }
}
