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

/// Lane operations that apply to each half: `fn op(self, a: Self::F, ...) -> Self::F` is
/// `(op(a.0, ...), op(a.1, ...))`.
macro_rules! per_half {
    ($($op:ident $(<const $n:ident: i32>)? ($($arg:ident: $t:ident),+) -> $out:ident;)*) => {$(
        #[inline(always)]
        fn $op$(<const $n: i32>)?(self, $($arg: Self::$t),+) -> Self::$out {
            (
                self.0.$op$(::<$n>)?($($arg.0),+),
                self.0.$op$(::<$n>)?($($arg.1),+),
            )
        }
    )*};
}

impl<L: Lanes> Lanes for Pair<L> {
    const WIDTH: usize = 2 * L::WIDTH;
    type F = (L::F, L::F);
    type I = (L::I, L::I);
    type M = (L::M, L::M);
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

    per_half! {
        add(a: F, b: F) -> F;
        sub(a: F, b: F) -> F;
        mul(a: F, b: F) -> F;
        div(a: F, b: F) -> F;
        min(a: F, b: F) -> F;
        fma(a: F, b: F, c: F) -> F;
        lt(a: F, b: F) -> M;
        gt(a: F, b: F) -> M;
        ge(a: F, b: F) -> M;
        eq(a: F, b: F) -> M;
        is_nan(a: F) -> M;
        gt_i(a: I, b: I) -> M;
        select(m: M, a: F, b: F) -> F;
        select_by_sign(s: F, a: F, b: F) -> F;
        mask_or(a: M, b: M) -> M;
        mask_and(a: M, b: M) -> M;
        and(a: F, b: F) -> F;
        or(a: F, b: F) -> F;
        to_bits(a: F) -> I;
        from_bits(a: I) -> F;
        add_i(a: I, b: I) -> I;
        sub_i(a: I, b: I) -> I;
        and_i(a: I, b: I) -> I;
        shl_i<const N: i32>(a: I) -> I;
        sra_i<const N: i32>(a: I) -> I;
        round_even(x: F) -> F;
        scale_pow2(p: F, n: F) -> F;
        madd_exact_product(a: F, b: F, c: F) -> F;
    }
    const SCALES: bool = L::SCALES;
    const ROUNDS: bool = L::ROUNDS;
    const CHEAP_SELECT: bool = L::CHEAP_SELECT;
    #[inline(always)]
    fn any(self, m: Self::M) -> bool {
        self.0.any(self.0.mask_or(m.0, m.1))
    }
    #[inline(always)]
    fn all(self, m: Self::M) -> bool {
        self.0.all(self.0.mask_and(m.0, m.1))
    }

    // The first half's lanes, then the second's: the lane order of the pair.
    const COMPRESSES: bool = L::COMPRESSES;
    #[inline(always)]
    fn compress(self, v: Self::F, m: Self::M, dst: &mut [f32]) -> usize {
        let n = self.0.compress(v.0, m.0, dst);
        n + self.0.compress(v.1, m.1, &mut dst[n..])
    }
    #[inline(always)]
    fn expand(self, src: &[f32], m: Self::M, b: Self::F) -> Self::F {
        let first = self.0.expand(src, m.0, b.0);
        (first, self.0.expand(&src[self.0.count(m.0)..], m.1, b.1))
    }
    #[inline(always)]
    fn count(self, m: Self::M) -> usize {
        self.0.count(m.0) + self.0.count(m.1)
    }
    #[inline(always)]
    fn first_n(self, n: usize) -> Self::M {
        (
            self.0.first_n(n),
            self.0.first_n(n.saturating_sub(L::WIDTH)),
        )
    }
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use crate::lanes::{Exact, Isa, LaneOp, Mode};

    struct Check;

    impl LaneOp for Check {
        type Output = ();
        fn run<L: Lanes, M: Mode>(self, l: L) {
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
                assert!(p.any(m) && !p.all(m), "one lane set at {i}");
                let m = p.lt(p.load(&one), p.splat(0.5));
                assert!(!p.all(m) && p.any(m), "one lane clear at {i}");
            }
            assert!(p.all(p.ge(x, p.splat(0.5))) && !p.any(p.is_nan(x)));
        }
    }

    pub fn pair_loads_stores_and_tests_both_halves() {
        for isa in Isa::available() {
            isa.supported().unwrap().dispatch::<Exact, _>(Check);
        }
    }
}
