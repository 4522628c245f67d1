//! [`Pair`]: two registers of a lane type used as one register of twice the width.
//!
//! Every operation applies to both halves; a branch on [`Lanes::all`] or [`Lanes::any`] tests
//! both halves with one mask, so a kernel's per-register test (is every lane in range?) is
//! taken once for two registers, and the two halves' dependent chains sit side by side in one
//! straight block the compiler can interleave. Lanes never mix, so a kernel gives the same bits
//! on `Pair<L>` as on `L` (as on any lane width).

use super::Lanes;

/// Two registers of `L` as one of `2 * L::WIDTH` lanes. Built only from a token of `L`, so it
/// is itself proof that the CPU runs `L`'s instruction set.
#[derive(Clone, Copy, Debug)]
pub struct Pair<L>(L);

impl<L: Lanes> Pair<L> {
    /// The pair of the lane token `l`.
    #[inline(always)]
    pub fn of(l: L) -> Pair<L> {
        Pair(l)
    }
}

macro_rules! both {
    ($l:expr, $op:ident, $($a:expr),+) => {
        ($l.$op($($a.0),+), $l.$op($($a.1),+))
    };
}

impl<L: Lanes> Lanes for Pair<L> {
    const WIDTH: usize = 2 * L::WIDTH;
    type F = (L::F, L::F);
    type I = (L::I, L::I);
    type M = (L::M, L::M);

    #[inline(always)]
    fn splat(self, v: f32) -> Self::F {
        let x = self.0.splat(v);
        (x, x)
    }
    #[inline(always)]
    fn splat_i(self, v: i32) -> Self::I {
        let x = self.0.splat_i(v);
        (x, x)
    }
    #[inline(always)]
    fn load(self, src: &[f32]) -> Self::F {
        let (lo, hi) = src[..Self::WIDTH].split_at(L::WIDTH);
        (self.0.load(lo), self.0.load(hi))
    }
    #[inline(always)]
    fn store(self, v: Self::F, dst: &mut [f32]) {
        let (lo, hi) = dst[..Self::WIDTH].split_at_mut(L::WIDTH);
        self.0.store(v.0, lo);
        self.0.store(v.1, hi);
    }
    #[inline(always)]
    fn load_partial(self, src: &[f32], pad: f32) -> Self::F {
        let cut = src.len().min(L::WIDTH);
        (
            self.0.load_partial(&src[..cut], pad),
            self.0.load_partial(&src[cut..], pad),
        )
    }
    #[inline(always)]
    fn store_partial(self, v: Self::F, dst: &mut [f32]) {
        let cut = dst.len().min(L::WIDTH);
        let (lo, hi) = dst.split_at_mut(cut);
        self.0.store_partial(v.0, lo);
        self.0.store_partial(v.1, hi);
    }

    #[inline(always)]
    fn add(self, a: Self::F, b: Self::F) -> Self::F {
        both!(self.0, add, a, b)
    }
    #[inline(always)]
    fn sub(self, a: Self::F, b: Self::F) -> Self::F {
        both!(self.0, sub, a, b)
    }
    #[inline(always)]
    fn mul(self, a: Self::F, b: Self::F) -> Self::F {
        both!(self.0, mul, a, b)
    }
    #[inline(always)]
    fn div(self, a: Self::F, b: Self::F) -> Self::F {
        both!(self.0, div, a, b)
    }
    #[inline(always)]
    fn min(self, a: Self::F, b: Self::F) -> Self::F {
        both!(self.0, min, a, b)
    }
    #[inline(always)]
    fn fma(self, a: Self::F, b: Self::F, c: Self::F) -> Self::F {
        both!(self.0, fma, a, b, c)
    }
    #[inline(always)]
    fn lt(self, a: Self::F, b: Self::F) -> Self::M {
        both!(self.0, lt, a, b)
    }
    #[inline(always)]
    fn gt(self, a: Self::F, b: Self::F) -> Self::M {
        both!(self.0, gt, a, b)
    }
    #[inline(always)]
    fn ge(self, a: Self::F, b: Self::F) -> Self::M {
        both!(self.0, ge, a, b)
    }
    #[inline(always)]
    fn eq(self, a: Self::F, b: Self::F) -> Self::M {
        both!(self.0, eq, a, b)
    }
    #[inline(always)]
    fn is_nan(self, a: Self::F) -> Self::M {
        both!(self.0, is_nan, a)
    }
    #[inline(always)]
    fn gt_i(self, a: Self::I, b: Self::I) -> Self::M {
        both!(self.0, gt_i, a, b)
    }
    #[inline(always)]
    fn select(self, m: Self::M, a: Self::F, b: Self::F) -> Self::F {
        both!(self.0, select, m, a, b)
    }
    #[inline(always)]
    fn mask_or(self, a: Self::M, b: Self::M) -> Self::M {
        both!(self.0, mask_or, a, b)
    }
    #[inline(always)]
    fn mask_and(self, a: Self::M, b: Self::M) -> Self::M {
        both!(self.0, mask_and, a, b)
    }
    #[inline(always)]
    fn any(self, m: Self::M) -> bool {
        self.0.any(self.0.mask_or(m.0, m.1))
    }
    #[inline(always)]
    fn all(self, m: Self::M) -> bool {
        self.0.all(self.0.mask_and(m.0, m.1))
    }
    #[inline(always)]
    fn and(self, a: Self::F, b: Self::F) -> Self::F {
        both!(self.0, and, a, b)
    }
    #[inline(always)]
    fn or(self, a: Self::F, b: Self::F) -> Self::F {
        both!(self.0, or, a, b)
    }
    #[inline(always)]
    fn to_bits(self, a: Self::F) -> Self::I {
        both!(self.0, to_bits, a)
    }
    #[inline(always)]
    fn from_bits(self, a: Self::I) -> Self::F {
        both!(self.0, from_bits, a)
    }
    #[inline(always)]
    fn add_i(self, a: Self::I, b: Self::I) -> Self::I {
        both!(self.0, add_i, a, b)
    }
    #[inline(always)]
    fn sub_i(self, a: Self::I, b: Self::I) -> Self::I {
        both!(self.0, sub_i, a, b)
    }
    #[inline(always)]
    fn and_i(self, a: Self::I, b: Self::I) -> Self::I {
        both!(self.0, and_i, a, b)
    }
    #[inline(always)]
    fn shl_i<const N: i32>(self, a: Self::I) -> Self::I {
        (self.0.shl_i::<N>(a.0), self.0.shl_i::<N>(a.1))
    }
    #[inline(always)]
    fn sra_i<const N: i32>(self, a: Self::I) -> Self::I {
        (self.0.sra_i::<N>(a.0), self.0.sra_i::<N>(a.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::{Isa, WithLanes};

    struct Check;

    impl WithLanes for Check {
        type Output = ();
        const USES_FMA: bool = false;
        fn run<L: Lanes>(self, l: L) {
            let p = Pair::of(l);
            let w = Pair::<L>::WIDTH;
            assert_eq!(w, 2 * L::WIDTH);
            let src: Vec<f32> = (0..w).map(|i| i as f32 + 0.5).collect();
            // Partial loads and stores of every length, with the padding past it.
            for len in 0..=w {
                let v = p.load_partial(&src[..len], -1.0);
                let mut all = vec![7.0f32; w];
                p.store(v, &mut all);
                let want: Vec<f32> = (0..w)
                    .map(|i| if i < len { src[i] } else { -1.0 })
                    .collect();
                assert_eq!(all, want, "load_partial of {len}");
                let mut dst = vec![7.0f32; len];
                p.store_partial(p.load(&src), &mut dst);
                assert_eq!(dst, src[..len], "store_partial of {len}");
            }
            // `all` and `any` see both halves: one lane set or clear anywhere decides.
            let x = p.load(&src);
            for i in 0..w {
                let mut one = vec![0f32; w];
                one[i] = 1.0;
                let m = p.gt(p.load(&one), p.splat(0.0));
                assert!(p.any(m) && (w == 1 || !p.all(m)), "one lane set at {i}");
                let m = p.lt(p.load(&one), p.splat(0.5));
                assert!(!p.all(m) && (w == 1 || p.any(m)), "one lane clear at {i}");
            }
            assert!(p.all(p.ge(x, p.splat(0.5))) && !p.any(p.is_nan(x)));
        }
    }

    #[test]
    fn pair_loads_stores_and_tests_both_halves() {
        for isa in Isa::available() {
            isa.supported().unwrap().dispatch(Check);
        }
    }
}
