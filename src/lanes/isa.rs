//! Instruction-set detection, forcing and dispatch.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use super::{ExactFpEnv, LaneOp, Mode, Scalar};
use crate::error::Error;

/// An instruction set a kernel can run on.
///
/// Exact kernels give the same bits on every one of them. `Avx2` means AVX2 + FMA (and POPCNT,
/// which every AVX2 CPU has); `Avx512` means AVX-512F (with AVX2, FMA and POPCNT, which every
/// AVX-512 CPU has). `Sse2`, `Avx2` and `Avx512` run on x86-64 only, `Neon` on aarch64 only;
/// elsewhere they are simply not available.
///
/// ```
/// use activation_kernels::Isa;
/// let best = Isa::detect();
/// assert!(Isa::available().contains(&best));
/// assert!(Isa::Scalar.is_available());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Isa {
    /// One `f32` at a time, in general-purpose code. Every CPU.
    Scalar,
    /// 128-bit SSE2 registers, four lanes. Every x86-64 CPU.
    Sse2,
    /// 256-bit AVX2 registers with FMA, eight lanes.
    Avx2,
    /// 512-bit AVX-512F registers, sixteen lanes.
    Avx512,
    /// 128-bit NEON (Advanced SIMD) registers with FMA, four lanes. Every aarch64 CPU.
    Neon,
}

impl Isa {
    /// The environment variable that forces an instruction set: `scalar`, `sse2`, `avx2`,
    /// `avx512`, `neon` (read once per process).
    pub const ENV_VAR: &'static str = "ACTIVATION_KERNELS_ISA";

    /// Every instruction set: scalar, x86-64's narrowest first, then aarch64's. Those of one
    /// architecture are never available on the other, so the ones a CPU runs are in this list
    /// narrowest first.
    pub const ALL: [Isa; 5] = [Isa::Scalar, Isa::Sse2, Isa::Avx2, Isa::Avx512, Isa::Neon];

    /// The lowercase name, as `ACTIVATION_KERNELS_ISA` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Sse2 => "sse2",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Neon => "neon",
        }
    }

    /// The number of `f32` lanes in one register.
    pub fn width(self) -> usize {
        match self {
            Isa::Scalar => 1,
            Isa::Sse2 => 4,
            Isa::Avx2 => 8,
            Isa::Avx512 => 16,
            Isa::Neon => 4,
        }
    }

    /// Whether this CPU runs the instruction set.
    pub fn is_available(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Sse2 => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                    && std::arch::is_x86_feature_detected!("popcnt")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                    && std::arch::is_x86_feature_detected!("popcnt")
            }
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Every instruction set this CPU runs, narrowest first.
    pub fn available() -> Vec<Isa> {
        Isa::ALL.into_iter().filter(|i| i.is_available()).collect()
    }

    /// The widest instruction set this CPU runs.
    pub fn detect() -> Isa {
        Isa::ALL
            .into_iter()
            .rev()
            .find(|i| i.is_available())
            .unwrap_or(Isa::Scalar)
    }

    /// The instruction set `ACTIVATION_KERNELS_ISA` forces, if it is set (read once per
    /// process). An unknown name or an instruction set this CPU lacks is an error. An empty (or
    /// all-blank) value is the same as unset, as shells and CI files often leave it.
    pub fn from_env() -> Option<Result<Isa, Error>> {
        static FORCED: OnceLock<Option<String>> = OnceLock::new();
        let forced = FORCED.get_or_init(|| {
            std::env::var(Isa::ENV_VAR)
                .ok()
                .filter(|v| !v.trim().is_empty())
        });
        forced.as_deref().map(|name| name.parse::<Isa>()?.checked())
    }

    /// The forced instruction set if `ACTIVATION_KERNELS_ISA` is set, else [`Isa::detect`].
    pub fn preferred() -> Result<Isa, Error> {
        Isa::from_env().unwrap_or_else(|| Ok(Isa::detect()))
    }

    /// The forced instruction set if `ACTIVATION_KERNELS_ISA` is set and usable, else
    /// [`Isa::detect`]. A value that names no instruction set, or one this CPU lacks, is not
    /// silently ignored: the first time, one line on stderr names it and the set used instead.
    pub fn preferred_or_detect() -> Isa {
        Supported::preferred_or_detect().isa()
    }

    /// `Ok(self)` if this CPU runs it, else [`Error::IsaUnavailable`].
    pub fn checked(self) -> Result<Isa, Error> {
        self.supported().map(Supported::isa)
    }

    /// The proof that this CPU runs the instruction set, which kernels are dispatched through;
    /// [`Error::IsaUnavailable`] if it does not.
    pub(crate) fn supported(self) -> Result<Supported, Error> {
        if self.is_available() {
            Ok(Supported(self))
        } else {
            Err(Error::IsaUnavailable { isa: self })
        }
    }

    /// Whether this CPU has a fused multiply-add instruction: x86-64's FMA3 (fast mode uses a
    /// software fma without it), or aarch64's `fmadd`/`fmla`, which every aarch64 CPU has.
    pub fn has_hardware_fma() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("fma")
        }
        #[cfg(target_arch = "aarch64")]
        {
            true
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            false
        }
    }
}

/// An instruction set this CPU runs: made only by [`Isa::supported`] after the check, so a
/// dispatch through it cannot fail. Sessions and epilogues hold one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Supported(Isa);

impl Supported {
    /// The widest instruction set this CPU runs.
    pub(crate) fn detect() -> Supported {
        // `Isa::detect` returns an instruction set this CPU runs (scalar at least).
        Supported(Isa::detect())
    }

    /// [`Isa::preferred`], as proof.
    pub(crate) fn preferred() -> Result<Supported, Error> {
        match Isa::from_env() {
            Some(forced) => forced?.supported(),
            None => Ok(Supported::detect()),
        }
    }

    /// [`Isa::preferred_or_detect`], as proof.
    pub(crate) fn preferred_or_detect() -> Supported {
        static WARNED: std::sync::Once = std::sync::Once::new();
        Supported::preferred().unwrap_or_else(|e| {
            let used = Supported::detect();
            WARNED.call_once(|| {
                eprintln!(
                    "activation-kernels: ignoring {}: {e}; using {}",
                    Isa::ENV_VAR,
                    used.isa()
                )
            });
            used
        })
    }

    /// The instruction set.
    pub fn isa(self) -> Isa {
        self.0
    }

    /// Runs `op` in mode `M` with the lane type of the instruction set, compiled for it: an
    /// exact op inside an [`ExactFpEnv`], so its bits do not depend on the caller's (or the
    /// rayon worker's) MXCSR; a fast one with the caller's MXCSR and, on the 128-bit and scalar
    /// paths, the hardware FMA where the CPU has it (see [`LaneOp`]).
    pub fn dispatch<M: Mode, O: LaneOp>(self, op: O) -> O::Output {
        self.dispatch_within::<M, O, AnyIsa>(op)
    }

    /// [`Supported::dispatch`] on AVX2 with the exact exp's rounding chosen by the caller
    /// (`vroundps`, or the spec's magic-number adds) rather than by the core: the test that
    /// both variants give the same bits runs on any CPU with AVX2. `None` without AVX2.
    #[cfg(all(feature = "unit-tests", target_arch = "x86_64"))]
    pub(crate) fn dispatch_avx2_rounding<M: Mode, O: LaneOp>(
        op: O,
        vroundps: bool,
    ) -> Option<O::Output> {
        Isa::Avx2.supported().ok()?;
        let _env = ExactFpEnv::enter_if(!M::FAST);
        // SAFETY: `Isa::supported` confirmed AVX2, FMA and POPCNT.
        Some(unsafe { super::x86::run_avx2_rounding::<M, O>(op, vroundps) })
    }

    /// [`Supported::dispatch`] for an op that runs only on the instruction sets of `S`: it is
    /// compiled for those alone (the arms of the others are not instantiated). The caller must
    /// not pass another one: that panics.
    #[inline(always)]
    pub(crate) fn dispatch_within<M: Mode, O: LaneOp, S: IsaSet>(self, op: O) -> O::Output {
        let _env = ExactFpEnv::enter_if(!M::FAST);
        // Each arm is guarded by a constant of `S` alone, so that an arm `S` leaves out is not
        // compiled at all (rustc does not instantiate what sits under a constant false test).
        #[cfg(target_arch = "x86_64")]
        {
            use super::x86;
            let fma = M::FAST && Isa::has_hardware_fma();
            match self.0 {
                // SAFETY: `fma` is true only when the CPU has FMA.
                Isa::Scalar if S::SCALAR && fma => unsafe { x86::run_scalar_fma::<M, O>(op) },
                Isa::Scalar if S::SCALAR => op.run::<_, M>(Scalar(())),
                // SAFETY: `fma` is true only when the CPU has FMA.
                Isa::Sse2 if S::SSE2 && fma => unsafe { x86::run_sse2_fma::<M, O>(op) },
                Isa::Sse2 if S::SSE2 => x86::run_sse2::<M, O>(op),
                // SAFETY: a `Supported` exists only after `Isa::supported` confirmed AVX2, FMA
                // and POPCNT.
                Isa::Avx2 if S::AVX2 => unsafe { x86::run_avx2::<M, O>(op) },
                // SAFETY: a `Supported` exists only after `Isa::supported` confirmed AVX-512F,
                // AVX2, FMA and POPCNT.
                Isa::Avx512 if S::AVX512 => unsafe { x86::run_avx512::<M, O>(op) },
                // NEON is not available on x86-64, so no `Supported` holds it; the others are
                // left out by `S`.
                isa => unreachable!("{isa}: not an instruction set of this op"),
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            match self.0 {
                // A `Supported` holding NEON exists only after `Isa::supported` confirmed it.
                Isa::Neon if S::NEON => super::neon::run_neon::<M, O>(op),
                Isa::Scalar if S::SCALAR => op.run::<_, M>(Scalar(())),
                isa => unreachable!("{isa}: not an instruction set of this op"),
            }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            match self.0 {
                Isa::Scalar if S::SCALAR => op.run::<_, M>(Scalar(())),
                isa => unreachable!("{isa}: not an instruction set of this op"),
            }
        }
    }
}

/// The instruction sets an op runs on, for [`Supported::dispatch_within`]: one constant per
/// instruction set, so that each arm of the dispatch tests a constant of its own.
pub(crate) trait IsaSet {
    /// Scalar code.
    const SCALAR: bool;
    /// SSE2 (with or without FMA).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    const SSE2: bool;
    /// AVX2.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    const AVX2: bool;
    /// AVX-512.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    const AVX512: bool;
    /// NEON.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    const NEON: bool;
}

/// Every instruction set: what [`Supported::dispatch`] compiles an op for.
pub(crate) struct AnyIsa;

impl IsaSet for AnyIsa {
    const SCALAR: bool = true;
    const SSE2: bool = true;
    const AVX2: bool = true;
    const AVX512: bool = true;
    const NEON: bool = true;
}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Isa {
    type Err = Error;
    fn from_str(s: &str) -> Result<Isa, Error> {
        let s = s.trim().to_ascii_lowercase();
        Isa::ALL
            .into_iter()
            .find(|i| i.name() == s)
            .ok_or(Error::UnknownIsa { name: s })
    }
}
