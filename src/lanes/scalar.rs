//! One `f32` lane: the reference path, and the only one on targets other than x86-64.

use super::Lanes;

/// One `f32` lane in a general-purpose register. Available on every CPU.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scalar(pub(super) ());

impl Scalar {
    /// The one-lane token. Scalar code needs no CPU feature, so anyone may build it.
    pub const fn new() -> Scalar {
        Scalar(())
    }
}

impl Lanes for Scalar {
    const WIDTH: usize = 1;
    type F = f32;
    type I = i32;
    type M = bool;
    type Group = Self;

    #[inline(always)]
    fn group(self) -> Self {
        self
    }

    type WideGroup = Self;

    #[inline(always)]
    fn wide_group(self) -> Self::WideGroup {
        self
    }

    #[inline(always)]
    fn splat(self, v: f32) -> f32 {
        v
    }
    #[inline(always)]
    fn splat_i(self, v: i32) -> i32 {
        v
    }
    #[inline(always)]
    fn load(self, src: &[f32]) -> f32 {
        src[0]
    }
    #[inline(always)]
    fn store(self, v: f32, dst: &mut [f32]) {
        dst[0] = v;
    }
    #[inline(always)]
    fn add(self, a: f32, b: f32) -> f32 {
        a + b
    }
    #[inline(always)]
    fn sub(self, a: f32, b: f32) -> f32 {
        a - b
    }
    #[inline(always)]
    fn mul(self, a: f32, b: f32) -> f32 {
        a * b
    }
    #[inline(always)]
    fn div(self, a: f32, b: f32) -> f32 {
        a / b
    }
    #[inline(always)]
    fn min(self, a: f32, b: f32) -> f32 {
        if a < b { a } else { b }
    }
    #[inline(always)]
    fn fma(self, a: f32, b: f32, c: f32) -> f32 {
        // Correctly rounded on every target: the hardware instruction where the trampoline
        // enables it, else the C library's fmaf, which is exact in software.
        a.mul_add(b, c)
    }
    #[inline(always)]
    fn lt(self, a: f32, b: f32) -> bool {
        a < b
    }
    #[inline(always)]
    fn gt(self, a: f32, b: f32) -> bool {
        a > b
    }
    #[inline(always)]
    fn ge(self, a: f32, b: f32) -> bool {
        a >= b
    }
    #[inline(always)]
    fn eq(self, a: f32, b: f32) -> bool {
        a == b
    }
    #[inline(always)]
    fn is_nan(self, a: f32) -> bool {
        a.is_nan()
    }
    #[inline(always)]
    fn gt_i(self, a: i32, b: i32) -> bool {
        a > b
    }
    #[inline(always)]
    fn select(self, m: bool, a: f32, b: f32) -> f32 {
        if m { a } else { b }
    }
    #[inline(always)]
    fn mask_or(self, a: bool, b: bool) -> bool {
        a | b
    }
    #[inline(always)]
    fn mask_and(self, a: bool, b: bool) -> bool {
        a & b
    }
    #[inline(always)]
    fn any(self, m: bool) -> bool {
        m
    }
    #[inline(always)]
    fn all(self, m: bool) -> bool {
        m
    }
    #[inline(always)]
    fn and(self, a: f32, b: f32) -> f32 {
        f32::from_bits(a.to_bits() & b.to_bits())
    }
    #[inline(always)]
    fn or(self, a: f32, b: f32) -> f32 {
        f32::from_bits(a.to_bits() | b.to_bits())
    }
    #[inline(always)]
    fn to_bits(self, a: f32) -> i32 {
        a.to_bits() as i32
    }
    #[inline(always)]
    fn from_bits(self, a: i32) -> f32 {
        f32::from_bits(a as u32)
    }
    #[inline(always)]
    fn add_i(self, a: i32, b: i32) -> i32 {
        a.wrapping_add(b)
    }
    #[inline(always)]
    fn sub_i(self, a: i32, b: i32) -> i32 {
        a.wrapping_sub(b)
    }
    #[inline(always)]
    fn and_i(self, a: i32, b: i32) -> i32 {
        a & b
    }
    #[inline(always)]
    fn shl_i<const N: i32>(self, a: i32) -> i32 {
        a.wrapping_shl(N as u32)
    }
    #[inline(always)]
    fn sra_i<const N: i32>(self, a: i32) -> i32 {
        a.wrapping_shr(N as u32)
    }
}
