//! The aarch64 lane type, NEON (Advanced SIMD), and its trampoline.
//!
//! NEON is part of the aarch64 baseline (every aarch64 CPU that runs a Linux, macOS or Windows
//! userland has it, and the `aarch64-*` targets enable it by default); the token is still made
//! only by [`super::Supported::dispatch`] after [`super::Isa::supported`] checked it, like the
//! x86 ones, and every `unsafe` block below relies on that.
//!
//! The exact bits: `fadd`, `fsub`, `fmul` and `fdiv` on `.4s` are the IEEE operations, rounded
//! as FPCR says, which [`super::ExactFpEnv`] makes round-to-nearest with no flushing for exact
//! kernels. Nothing here fuses except [`Lanes::fma`] (`fmla`, rounded once), which only fast
//! mode calls. [`Lanes::min`] is a compare and a select, not `fmin`: `fmin` propagates a NaN
//! operand and orders `-0` below `+0`, where the trait (x86's `minps`) gives `b`.

use core::arch::aarch64::*;

use super::{LaneOp, Lanes, Mode, Pair};

/// 128-bit NEON registers, four `f32` lanes.
#[derive(Clone, Copy, Debug)]
pub struct Neon(());

/// Wraps an intrinsic call whose feature the token proves.
macro_rules! proven {
    ($e:expr) => {{
        // SAFETY: a token of this type exists only after `Isa::supported` checked that the CPU
        // has NEON, and the call is otherwise a pure register operation.
        unsafe { $e }
    }};
}

impl Lanes for Neon {
    const WIDTH: usize = 4;
    type F = float32x4_t;
    type I = int32x4_t;
    type M = uint32x4_t;
    /// Four registers, as on AVX2: the aarch64 cores this targets (Neoverse N1/V1/V2, Apple's
    /// performance cores) issue two to four 128-bit FP operations per cycle with a latency of
    /// three or four, so one dependent chain per register leaves most of the pipes idle. To be
    /// measured on hardware; no Arm machine was at hand when this was written.
    type Group = Pair<Pair<Self>>;

    #[inline(always)]
    fn group(self) -> Self::Group {
        Pair::of(Pair::of(self))
    }

    /// The [`Lanes::Group`]: eight chains would fit NEON's 32 registers, but that doubles the
    /// compiled code, and the x86 rule is that a wider group must be measured to pay first.
    type WideGroup = Pair<Pair<Self>>;

    #[inline(always)]
    fn wide_group(self) -> Self::WideGroup {
        Pair::of(Pair::of(self))
    }

    #[inline(always)]
    fn splat(self, v: f32) -> float32x4_t {
        proven!(vdupq_n_f32(v))
    }
    #[inline(always)]
    fn splat_i(self, v: i32) -> int32x4_t {
        proven!(vdupq_n_s32(v))
    }
    #[inline(always)]
    fn load(self, src: &[f32]) -> float32x4_t {
        let src = &src[..4];
        // SAFETY: `src` has four elements; `ld1` needs no alignment beyond `f32`'s.
        unsafe { vld1q_f32(src.as_ptr()) }
    }
    #[inline(always)]
    fn store(self, v: float32x4_t, dst: &mut [f32]) {
        let dst = &mut dst[..4];
        // SAFETY: `dst` has four elements; `st1` needs no alignment beyond `f32`'s.
        unsafe { vst1q_f32(dst.as_mut_ptr(), v) }
    }
    #[inline(always)]
    fn add(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        proven!(vaddq_f32(a, b))
    }
    #[inline(always)]
    fn sub(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        proven!(vsubq_f32(a, b))
    }
    #[inline(always)]
    fn mul(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        proven!(vmulq_f32(a, b))
    }
    #[inline(always)]
    fn div(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        proven!(vdivq_f32(a, b))
    }
    #[inline(always)]
    fn min(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        // `a < b ? a : b`, x86's `minps`: `b` where either is NaN, and where they are equal
        // (`min(-0, +0)` is `+0`).
        proven!(vbslq_f32(vcltq_f32(a, b), a, b))
    }
    #[inline(always)]
    fn fma(self, a: float32x4_t, b: float32x4_t, c: float32x4_t) -> float32x4_t {
        // `fmla`: `c + a * b` rounded once.
        proven!(vfmaq_f32(c, a, b))
    }
    #[inline(always)]
    fn lt(self, a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        proven!(vcltq_f32(a, b))
    }
    #[inline(always)]
    fn gt(self, a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        proven!(vcgtq_f32(a, b))
    }
    #[inline(always)]
    fn ge(self, a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        proven!(vcgeq_f32(a, b))
    }
    #[inline(always)]
    fn eq(self, a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        proven!(vceqq_f32(a, b))
    }
    #[inline(always)]
    fn is_nan(self, a: float32x4_t) -> uint32x4_t {
        // Only a NaN is unequal to itself.
        proven!(vmvnq_u32(vceqq_f32(a, a)))
    }
    #[inline(always)]
    fn gt_i(self, a: int32x4_t, b: int32x4_t) -> uint32x4_t {
        proven!(vcgtq_s32(a, b))
    }
    #[inline(always)]
    fn select(self, m: uint32x4_t, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        // Masks are all ones or all zeros per lane, so the bitwise select is the lane select.
        proven!(vbslq_f32(m, a, b))
    }
    #[inline(always)]
    fn mask_or(self, a: uint32x4_t, b: uint32x4_t) -> uint32x4_t {
        proven!(vorrq_u32(a, b))
    }
    #[inline(always)]
    fn mask_and(self, a: uint32x4_t, b: uint32x4_t) -> uint32x4_t {
        proven!(vandq_u32(a, b))
    }
    #[inline(always)]
    fn any(self, m: uint32x4_t) -> bool {
        proven!(vmaxvq_u32(m)) != 0
    }
    #[inline(always)]
    fn all(self, m: uint32x4_t) -> bool {
        proven!(vminvq_u32(m)) != 0
    }
    #[inline(always)]
    fn and(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        proven!(vreinterpretq_f32_u32(vandq_u32(
            vreinterpretq_u32_f32(a),
            vreinterpretq_u32_f32(b)
        )))
    }
    #[inline(always)]
    fn or(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        proven!(vreinterpretq_f32_u32(vorrq_u32(
            vreinterpretq_u32_f32(a),
            vreinterpretq_u32_f32(b)
        )))
    }
    #[inline(always)]
    fn to_bits(self, a: float32x4_t) -> int32x4_t {
        proven!(vreinterpretq_s32_f32(a))
    }
    #[inline(always)]
    fn from_bits(self, a: int32x4_t) -> float32x4_t {
        proven!(vreinterpretq_f32_s32(a))
    }
    #[inline(always)]
    fn add_i(self, a: int32x4_t, b: int32x4_t) -> int32x4_t {
        proven!(vaddq_s32(a, b))
    }
    #[inline(always)]
    fn sub_i(self, a: int32x4_t, b: int32x4_t) -> int32x4_t {
        proven!(vsubq_s32(a, b))
    }
    #[inline(always)]
    fn and_i(self, a: int32x4_t, b: int32x4_t) -> int32x4_t {
        proven!(vandq_s32(a, b))
    }
    #[inline(always)]
    fn shl_i<const N: i32>(self, a: int32x4_t) -> int32x4_t {
        // `sshl` by a splat count: any `N` (the immediate form takes 0..=31 only); a constant
        // count compiles to the immediate `shl`.
        proven!(vshlq_s32(a, vdupq_n_s32(N)))
    }
    #[inline(always)]
    fn sra_i<const N: i32>(self, a: int32x4_t) -> int32x4_t {
        // `sshl` by a negative count shifts right, arithmetically.
        proven!(vshlq_s32(a, vdupq_n_s32(-N)))
    }
}

/// Runs `op` on NEON registers (part of the aarch64 baseline: no feature to enable).
pub(super) fn run_neon<M: Mode, O: LaneOp>(op: O) -> O::Output {
    op.run::<_, M>(Neon(()))
}
