//! The element types a session computes on: `f32`, and `f16`/`bf16` widened to `f32` in chunks.

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

/// A tensor element type: `f32`, `half::f16` or `half::bf16`. Sealed.
///
/// 16-bit values are widened to `f32` (exactly), computed by the `f32` kernels, and rounded back
/// once to nearest even.
pub trait Element: sealed::Sealed + Copy + Send + Sync + std::fmt::Debug + 'static {
    /// `Some` when the element type is `f32` itself (no conversion needed).
    fn as_f32_slice_mut(s: &mut [Self]) -> Option<&mut [f32]>;
    /// `Some` when the element type is `f32` itself.
    fn as_f32_slice(s: &[Self]) -> Option<&[f32]>;
    /// Widens `src` into `dst` (equal lengths).
    fn widen(src: &[Self], dst: &mut [f32]);
    /// Rounds `src` into `dst` (equal lengths), to nearest even.
    fn narrow(src: &[f32], dst: &mut [Self]);
    /// One value widened.
    fn to_f32(self) -> f32;
    /// One value rounded to nearest even.
    fn from_f32(v: f32) -> Self;
}

impl Element for f32 {
    #[inline]
    fn as_f32_slice_mut(s: &mut [f32]) -> Option<&mut [f32]> {
        Some(s)
    }
    #[inline]
    fn as_f32_slice(s: &[f32]) -> Option<&[f32]> {
        Some(s)
    }
    #[inline]
    fn widen(src: &[f32], dst: &mut [f32]) {
        dst.copy_from_slice(src);
    }
    #[inline]
    fn narrow(src: &[f32], dst: &mut [f32]) {
        dst.copy_from_slice(src);
    }
    #[inline]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline]
    fn from_f32(v: f32) -> f32 {
        v
    }
}

macro_rules! half_element {
    ($t:ty) => {
        impl Element for $t {
            #[inline]
            fn as_f32_slice_mut(_: &mut [$t]) -> Option<&mut [f32]> {
                None
            }
            #[inline]
            fn as_f32_slice(_: &[$t]) -> Option<&[f32]> {
                None
            }
            #[inline]
            fn widen(src: &[$t], dst: &mut [f32]) {
                src.convert_to_f32_slice(dst);
            }
            #[inline]
            fn narrow(src: &[f32], dst: &mut [$t]) {
                dst.convert_from_f32_slice(src);
            }
            #[inline]
            fn to_f32(self) -> f32 {
                <$t>::to_f32(self)
            }
            #[inline]
            fn from_f32(v: f32) -> $t {
                <$t>::from_f32(v)
            }
        }
    };
}
half_element!(f16);
half_element!(bf16);
