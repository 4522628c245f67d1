//! The x86-64 lane types and their `#[target_feature]` trampolines.
//!
//! Each lane type is a zero-sized token. Only [`super::Supported::dispatch`] builds one, after
//! [`super::Isa::supported`] checked the CPU features, and every `unsafe` block below relies on
//! that.

use core::arch::x86_64::*;

use super::x86_asm::{exact_pairs_6x2_avx2, mul_broadcast_avx512};
use super::x86_horner_asm::{HORNER_BLOCK, exact_horner_in_place_avx2};
use super::x86_tanh_asm::exact_tanh_in_range_avx2;
use super::{LaneOp, Lanes, Mode, Pair, core_kind};

/// 128-bit registers (four `f32` lanes), SSE2. `FMA` says whether [`Lanes::fma`] may use the
/// FMA3 instruction (`true`, only built on CPUs that have it) or must use a correctly rounded
/// software fma per lane (`false`).
#[derive(Clone, Copy, Debug)]
pub struct Sse2<const FMA: bool>(());

/// 256-bit registers (eight `f32` lanes), AVX2 + FMA. `VROUNDPS`: whether the exact exp's
/// reduction rounds by `vroundps` (chosen where it is one operation, see
/// [`core_kind::rounds_in_one_operation`]) or by the spec's magic-number adds. Both give the
/// same bits; which is faster depends on the core.
#[derive(Clone, Copy, Debug)]
pub struct Avx2<const VROUNDPS: bool>(());

/// 512-bit registers (sixteen `f32` lanes), AVX-512F.
#[derive(Clone, Copy, Debug)]
pub struct Avx512(());

/// Wraps an intrinsic call whose feature the token proves.
macro_rules! proven {
    ($e:expr) => {{
        // SAFETY: a token of this type exists only after `Isa::supported` checked that the CPU
        // has the instruction set, and the call is otherwise a pure register operation.
        unsafe { $e }
    }};
}

impl<const FMA: bool> Lanes for Sse2<FMA> {
    const WIDTH: usize = 4;
    type F = __m128;
    type I = __m128i;
    type M = __m128;
    type Group = Self;

    #[inline(always)]
    fn group(self) -> Self::Group {
        self
    }

    type WideGroup = Self;

    #[inline(always)]
    fn wide_group(self) -> Self::WideGroup {
        self
    }

    #[inline(always)]
    fn splat(self, v: f32) -> __m128 {
        proven!(_mm_set1_ps(v))
    }
    #[inline(always)]
    fn splat_i(self, v: i32) -> __m128i {
        proven!(_mm_set1_epi32(v))
    }
    #[inline(always)]
    fn load(self, src: &[f32]) -> __m128 {
        let src = &src[..4];
        // SAFETY: `src` has four elements; unaligned loads are allowed.
        unsafe { _mm_loadu_ps(src.as_ptr()) }
    }
    #[inline(always)]
    fn store(self, v: __m128, dst: &mut [f32]) {
        let dst = &mut dst[..4];
        // SAFETY: `dst` has four elements; unaligned stores are allowed.
        unsafe { _mm_storeu_ps(dst.as_mut_ptr(), v) }
    }
    #[inline(always)]
    fn transpose_square(self, regs: &mut [__m128]) {
        let [r0, r1, r2, r3] = *regs else {
            panic!("transpose_square: {} registers", regs.len())
        };
        let (ab_lo, ab_hi) = proven!((_mm_unpacklo_ps(r0, r1), _mm_unpackhi_ps(r0, r1)));
        let (cd_lo, cd_hi) = proven!((_mm_unpacklo_ps(r2, r3), _mm_unpackhi_ps(r2, r3)));
        regs.copy_from_slice(&proven!([
            _mm_movelh_ps(ab_lo, cd_lo),
            _mm_movehl_ps(cd_lo, ab_lo),
            _mm_movelh_ps(ab_hi, cd_hi),
            _mm_movehl_ps(cd_hi, ab_hi),
        ]));
    }
    #[inline(always)]
    fn add(self, a: __m128, b: __m128) -> __m128 {
        proven!(_mm_add_ps(a, b))
    }
    #[inline(always)]
    fn sub(self, a: __m128, b: __m128) -> __m128 {
        proven!(_mm_sub_ps(a, b))
    }
    #[inline(always)]
    fn mul(self, a: __m128, b: __m128) -> __m128 {
        proven!(_mm_mul_ps(a, b))
    }
    #[inline(always)]
    fn div(self, a: __m128, b: __m128) -> __m128 {
        proven!(_mm_div_ps(a, b))
    }
    #[inline(always)]
    fn min(self, a: __m128, b: __m128) -> __m128 {
        proven!(_mm_min_ps(a, b))
    }
    #[inline(always)]
    fn fma(self, a: __m128, b: __m128, c: __m128) -> __m128 {
        if FMA {
            proven!(_mm_fmadd_ps(a, b, c))
        } else {
            let (mut x, mut y, mut z) = ([0f32; 4], [0f32; 4], [0f32; 4]);
            self.store(a, &mut x);
            self.store(b, &mut y);
            self.store(c, &mut z);
            for i in 0..4 {
                x[i] = x[i].mul_add(y[i], z[i]);
            }
            self.load(&x)
        }
    }
    #[inline(always)]
    fn lt(self, a: __m128, b: __m128) -> __m128 {
        proven!(_mm_cmplt_ps(a, b))
    }
    #[inline(always)]
    fn gt(self, a: __m128, b: __m128) -> __m128 {
        proven!(_mm_cmpgt_ps(a, b))
    }
    #[inline(always)]
    fn ge(self, a: __m128, b: __m128) -> __m128 {
        proven!(_mm_cmpge_ps(a, b))
    }
    #[inline(always)]
    fn eq(self, a: __m128, b: __m128) -> __m128 {
        proven!(_mm_cmpeq_ps(a, b))
    }
    #[inline(always)]
    fn is_nan(self, a: __m128) -> __m128 {
        proven!(_mm_cmpunord_ps(a, a))
    }
    #[inline(always)]
    fn gt_i(self, a: __m128i, b: __m128i) -> __m128 {
        proven!(_mm_castsi128_ps(_mm_cmpgt_epi32(a, b)))
    }
    #[inline(always)]
    fn select(self, m: __m128, a: __m128, b: __m128) -> __m128 {
        proven!(_mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b)))
    }
    #[inline(always)]
    fn mask_or(self, a: __m128, b: __m128) -> __m128 {
        proven!(_mm_or_ps(a, b))
    }
    #[inline(always)]
    fn mask_and(self, a: __m128, b: __m128) -> __m128 {
        proven!(_mm_and_ps(a, b))
    }
    #[inline(always)]
    fn any(self, m: __m128) -> bool {
        proven!(_mm_movemask_ps(m) != 0)
    }
    #[inline(always)]
    fn all(self, m: __m128) -> bool {
        proven!(_mm_movemask_ps(m) == 0xF)
    }
    #[inline(always)]
    fn and(self, a: __m128, b: __m128) -> __m128 {
        proven!(_mm_and_ps(a, b))
    }
    #[inline(always)]
    fn or(self, a: __m128, b: __m128) -> __m128 {
        proven!(_mm_or_ps(a, b))
    }
    #[inline(always)]
    fn to_bits(self, a: __m128) -> __m128i {
        proven!(_mm_castps_si128(a))
    }
    #[inline(always)]
    fn from_bits(self, a: __m128i) -> __m128 {
        proven!(_mm_castsi128_ps(a))
    }
    #[inline(always)]
    fn add_i(self, a: __m128i, b: __m128i) -> __m128i {
        proven!(_mm_add_epi32(a, b))
    }
    #[inline(always)]
    fn sub_i(self, a: __m128i, b: __m128i) -> __m128i {
        proven!(_mm_sub_epi32(a, b))
    }
    #[inline(always)]
    fn and_i(self, a: __m128i, b: __m128i) -> __m128i {
        proven!(_mm_and_si128(a, b))
    }
    #[inline(always)]
    fn shl_i<const N: i32>(self, a: __m128i) -> __m128i {
        proven!(_mm_slli_epi32::<N>(a))
    }
    #[inline(always)]
    fn sra_i<const N: i32>(self, a: __m128i) -> __m128i {
        proven!(_mm_srai_epi32::<N>(a))
    }
}

impl<const VROUNDPS: bool> Lanes for Avx2<VROUNDPS> {
    const WIDTH: usize = 8;
    type F = __m256;
    type I = __m256i;
    type M = __m256;
    type Group = Pair<Pair<Self>>;

    #[inline(always)]
    fn group(self) -> Self::Group {
        Pair::of(Pair::of(self))
    }

    type WideGroup = Pair<Pair<Self>>;

    #[inline(always)]
    fn wide_group(self) -> Self::WideGroup {
        Pair::of(Pair::of(self))
    }

    #[inline(always)]
    fn splat(self, v: f32) -> __m256 {
        proven!(_mm256_set1_ps(v))
    }
    #[inline(always)]
    fn splat_i(self, v: i32) -> __m256i {
        proven!(_mm256_set1_epi32(v))
    }
    #[inline(always)]
    fn load(self, src: &[f32]) -> __m256 {
        let src = &src[..8];
        // SAFETY: `src` has eight elements; the token proves AVX.
        unsafe { _mm256_loadu_ps(src.as_ptr()) }
    }
    #[inline(always)]
    fn store(self, v: __m256, dst: &mut [f32]) {
        let dst = &mut dst[..8];
        // SAFETY: `dst` has eight elements; the token proves AVX.
        unsafe { _mm256_storeu_ps(dst.as_mut_ptr(), v) }
    }
    #[inline(always)]
    fn load_partial(self, src: &[f32], pad: f32) -> __m256 {
        if src.len() >= 8 {
            return self.load(src);
        }
        let lanes = self.first_n(src.len());
        // SAFETY: the mask selects the first `src.len()` lanes, all inside `src`; a masked-off
        // lane is not accessed (`vmaskmovps` raises no fault for it) and loads as zero, then
        // takes `pad`. The token proves AVX2.
        unsafe {
            let x = _mm256_maskload_ps(src.as_ptr(), _mm256_castps_si256(lanes));
            _mm256_blendv_ps(_mm256_set1_ps(pad), x, lanes)
        }
    }
    #[inline(always)]
    fn transpose_square(self, regs: &mut [__m256]) {
        let n = regs.len();
        let r: &mut [__m256; 8] = regs
            .try_into()
            .unwrap_or_else(|_| panic!("transpose_square: {n} registers"));
        // Pairs of rows interleaved, then pairs of pairs (64-bit halves), then the 128-bit
        // halves of rows 0-3 and 4-7 joined.
        let mut t = *r;
        for i in 0..4 {
            t[2 * i] = proven!(_mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]));
            t[2 * i + 1] = proven!(_mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]));
        }
        let mut u = t;
        for g in 0..2 {
            let (lo, hi) = (t[4 * g], t[4 * g + 1]);
            let (lo2, hi2) = (t[4 * g + 2], t[4 * g + 3]);
            u[4 * g] = proven!(_mm256_shuffle_ps::<0x44>(lo, lo2));
            u[4 * g + 1] = proven!(_mm256_shuffle_ps::<0xEE>(lo, lo2));
            u[4 * g + 2] = proven!(_mm256_shuffle_ps::<0x44>(hi, hi2));
            u[4 * g + 3] = proven!(_mm256_shuffle_ps::<0xEE>(hi, hi2));
        }
        for c in 0..4 {
            r[c] = proven!(_mm256_permute2f128_ps::<0x20>(u[c], u[4 + c]));
            r[4 + c] = proven!(_mm256_permute2f128_ps::<0x31>(u[c], u[4 + c]));
        }
    }
    #[inline(always)]
    fn store_partial(self, v: __m256, dst: &mut [f32]) {
        if dst.len() >= 8 {
            return self.store(v, dst);
        }
        let lanes = self.first_n(dst.len());
        // SAFETY: the mask selects the first `dst.len()` lanes, all inside `dst`; a masked-off
        // lane is neither written nor accessed. The token proves AVX2.
        unsafe { _mm256_maskstore_ps(dst.as_mut_ptr(), _mm256_castps_si256(lanes), v) }
    }
    #[inline(always)]
    fn first_n(self, n: usize) -> __m256 {
        // The lane indices against `n` as 32-bit integers (`n` clamped so that it fits).
        let index = proven!(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        let n = proven!(_mm256_set1_epi32(n.min(8) as i32));
        proven!(_mm256_castsi256_ps(_mm256_cmpgt_epi32(n, index)))
    }
    #[inline(always)]
    fn add(self, a: __m256, b: __m256) -> __m256 {
        proven!(_mm256_add_ps(a, b))
    }
    #[inline(always)]
    fn sub(self, a: __m256, b: __m256) -> __m256 {
        proven!(_mm256_sub_ps(a, b))
    }
    #[inline(always)]
    fn mul(self, a: __m256, b: __m256) -> __m256 {
        proven!(_mm256_mul_ps(a, b))
    }
    #[inline(always)]
    fn exact_pairs_6x2(self, a: &[f32], b: &[f32], acc: &mut [__m256]) -> bool {
        let Ok(acc) = <&mut [__m256; 12]>::try_from(acc) else {
            return false;
        };
        // SAFETY: a token of this type exists only after `Isa::supported` checked AVX2.
        unsafe { exact_pairs_6x2_avx2(a, b, acc) };
        true
    }
    #[inline(always)]
    fn exact_tanh_in_range(self, src: Option<&[f32]>, dst: &mut [f32]) -> usize {
        // SAFETY: a token of this type exists only after `Isa::supported` checked AVX2 and FMA.
        unsafe { exact_tanh_in_range_avx2(src, dst) }
    }
    const EXACT_HORNER_BLOCK: usize = HORNER_BLOCK;
    #[inline(always)]
    fn exact_horner_in_place(self, coeffs: &[f32], s: &mut [f32]) -> usize {
        // SAFETY: a token of this type exists only after `Isa::supported` checked AVX2.
        unsafe { exact_horner_in_place_avx2(coeffs, s) }
    }
    #[inline(always)]
    fn div(self, a: __m256, b: __m256) -> __m256 {
        proven!(_mm256_div_ps(a, b))
    }
    #[inline(always)]
    fn min(self, a: __m256, b: __m256) -> __m256 {
        proven!(_mm256_min_ps(a, b))
    }
    #[inline(always)]
    fn fma(self, a: __m256, b: __m256, c: __m256) -> __m256 {
        proven!(_mm256_fmadd_ps(a, b, c))
    }
    #[inline(always)]
    fn madd_exact_product(self, a: __m256, b: __m256, c: __m256) -> __m256 {
        // The product is exact (the method's contract), so its one rounding is the sum's.
        proven!(_mm256_fmadd_ps(a, b, c))
    }
    #[inline(always)]
    fn lt(self, a: __m256, b: __m256) -> __m256 {
        proven!(_mm256_cmp_ps::<_CMP_LT_OQ>(a, b))
    }
    #[inline(always)]
    fn gt(self, a: __m256, b: __m256) -> __m256 {
        proven!(_mm256_cmp_ps::<_CMP_GT_OQ>(a, b))
    }
    #[inline(always)]
    fn ge(self, a: __m256, b: __m256) -> __m256 {
        proven!(_mm256_cmp_ps::<_CMP_GE_OQ>(a, b))
    }
    #[inline(always)]
    fn eq(self, a: __m256, b: __m256) -> __m256 {
        proven!(_mm256_cmp_ps::<_CMP_EQ_OQ>(a, b))
    }
    #[inline(always)]
    fn is_nan(self, a: __m256) -> __m256 {
        proven!(_mm256_cmp_ps::<_CMP_UNORD_Q>(a, a))
    }
    #[inline(always)]
    fn gt_i(self, a: __m256i, b: __m256i) -> __m256 {
        proven!(_mm256_castsi256_ps(_mm256_cmpgt_epi32(a, b)))
    }
    #[inline(always)]
    fn select(self, m: __m256, a: __m256, b: __m256) -> __m256 {
        proven!(_mm256_blendv_ps(b, a, m))
    }
    #[inline(always)]
    fn select_by_sign(self, s: __m256, a: __m256, b: __m256) -> __m256 {
        // `vblendvps` reads only the sign bit of each lane of its mask: `s` itself is one.
        proven!(_mm256_blendv_ps(b, a, s))
    }
    #[inline(always)]
    fn mask_or(self, a: __m256, b: __m256) -> __m256 {
        proven!(_mm256_or_ps(a, b))
    }
    #[inline(always)]
    fn mask_and(self, a: __m256, b: __m256) -> __m256 {
        proven!(_mm256_and_ps(a, b))
    }
    #[inline(always)]
    fn any(self, m: __m256) -> bool {
        proven!(_mm256_movemask_ps(m)) != 0
    }
    #[inline(always)]
    fn all(self, m: __m256) -> bool {
        proven!(_mm256_movemask_ps(m)) == 0xFF
    }
    #[inline(always)]
    fn and(self, a: __m256, b: __m256) -> __m256 {
        proven!(_mm256_and_ps(a, b))
    }
    #[inline(always)]
    fn or(self, a: __m256, b: __m256) -> __m256 {
        proven!(_mm256_or_ps(a, b))
    }
    #[inline(always)]
    fn to_bits(self, a: __m256) -> __m256i {
        proven!(_mm256_castps_si256(a))
    }
    #[inline(always)]
    fn from_bits(self, a: __m256i) -> __m256 {
        proven!(_mm256_castsi256_ps(a))
    }
    #[inline(always)]
    fn add_i(self, a: __m256i, b: __m256i) -> __m256i {
        proven!(_mm256_add_epi32(a, b))
    }
    #[inline(always)]
    fn sub_i(self, a: __m256i, b: __m256i) -> __m256i {
        proven!(_mm256_sub_epi32(a, b))
    }
    #[inline(always)]
    fn and_i(self, a: __m256i, b: __m256i) -> __m256i {
        proven!(_mm256_and_si256(a, b))
    }
    #[inline(always)]
    fn shl_i<const N: i32>(self, a: __m256i) -> __m256i {
        proven!(_mm256_slli_epi32::<N>(a))
    }
    #[inline(always)]
    fn sra_i<const N: i32>(self, a: __m256i) -> __m256i {
        proven!(_mm256_srai_epi32::<N>(a))
    }

    const ROUNDS: bool = VROUNDPS;

    #[inline(always)]
    fn round_even(self, x: __m256) -> __m256 {
        // `vroundps`: round to nearest even (imm bits 1:0 = 0, bit 2 = 0: the immediate's mode,
        // not MXCSR's), precision exception suppressed (bit 3).
        proven!(_mm256_round_ps::<
            { _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC },
        >(x))
    }

    // AVX2 has no compress: a permutation from a table indexed by the mask's eight bits.
    const COMPRESSES: bool = true;

    #[inline(always)]
    fn compress(self, v: __m256, m: __m256, dst: &mut [f32]) -> usize {
        let bits = proven!(_mm256_movemask_ps(m)) as usize;
        let idx = self.table_row(&COMPRESS_FROM[bits]);
        self.store(proven!(_mm256_permutevar8x32_ps(v, idx)), dst);
        bits.count_ones() as usize
    }
    #[inline(always)]
    fn count(self, m: __m256) -> usize {
        proven!(_mm256_movemask_ps(m)).count_ones() as usize
    }
    #[inline(always)]
    fn expand(self, src: &[f32], m: __m256, b: __m256) -> __m256 {
        let bits = proven!(_mm256_movemask_ps(m)) as usize;
        let idx = self.table_row(&EXPAND_FROM[bits]);
        let spread = proven!(_mm256_permutevar8x32_ps(self.load(src), idx));
        self.select(m, spread, b)
    }
}

impl<const VROUNDPS: bool> Avx2<VROUNDPS> {
    /// One row of a permutation table as a register.
    #[inline(always)]
    fn table_row(self, row: &[i32; 8]) -> __m256i {
        // SAFETY: `row` holds eight `i32`s (32 bytes, an unaligned load); the token proves AVX.
        unsafe { _mm256_loadu_si256(row.as_ptr().cast()) }
    }
}

/// For each 8-bit mask, the lanes whose bits are set, in order, then zeros: the source lane of
/// each destination lane of an AVX2 compress.
static COMPRESS_FROM: [[i32; 8]; 256] = {
    let mut t = [[0i32; 8]; 256];
    let mut bits = 0;
    while bits < 256 {
        let (mut lane, mut n) = (0, 0);
        while lane < 8 {
            if bits & (1 << lane) != 0 {
                t[bits][n] = lane;
                n += 1;
            }
            lane += 1;
        }
        bits += 1;
    }
    t
};

/// For each 8-bit mask, how many set bits precede each lane: the source of each lane of an
/// AVX2 expand (used where the lane's bit is set).
static EXPAND_FROM: [[i32; 8]; 256] = {
    let mut t = [[0i32; 8]; 256];
    let mut bits = 0;
    while bits < 256 {
        let (mut lane, mut n) = (0, 0);
        while lane < 8 {
            t[bits][lane] = n;
            if bits & (1 << lane) != 0 {
                n += 1;
            }
            lane += 1;
        }
        bits += 1;
    }
    t
};

impl Lanes for Avx512 {
    const WIDTH: usize = 16;
    type F = __m512;
    type I = __m512i;
    type M = __mmask16;
    type Group = Pair<Pair<Self>>;

    #[inline(always)]
    fn group(self) -> Self::Group {
        Pair::of(Pair::of(self))
    }

    type WideGroup = Pair<Pair<Pair<Self>>>;

    #[inline(always)]
    fn wide_group(self) -> Self::WideGroup {
        Pair::of(Pair::of(Pair::of(self)))
    }

    #[inline(always)]
    fn splat(self, v: f32) -> __m512 {
        proven!(_mm512_set1_ps(v))
    }
    #[inline(always)]
    fn splat_i(self, v: i32) -> __m512i {
        proven!(_mm512_set1_epi32(v))
    }
    #[inline(always)]
    fn load(self, src: &[f32]) -> __m512 {
        let src = &src[..16];
        // SAFETY: `src` has sixteen elements; the token proves AVX-512F.
        unsafe { _mm512_loadu_ps(src.as_ptr()) }
    }
    #[inline(always)]
    fn store(self, v: __m512, dst: &mut [f32]) {
        let dst = &mut dst[..16];
        // SAFETY: `dst` has sixteen elements; the token proves AVX-512F.
        unsafe { _mm512_storeu_ps(dst.as_mut_ptr(), v) }
    }
    #[inline(always)]
    fn load_partial(self, src: &[f32], pad: f32) -> __m512 {
        if src.len() >= 16 {
            return self.load(src);
        }
        // The lanes of `src`, as a mask: a masked load instead of a copy through memory.
        let k = self.first_n(src.len());
        // SAFETY: the mask selects the first `src.len()` lanes, all inside `src`; a masked-off
        // lane is not accessed (AVX-512 suppresses its faults) and takes `pad`. The token
        // proves AVX-512F.
        unsafe { _mm512_mask_loadu_ps(_mm512_set1_ps(pad), k, src.as_ptr()) }
    }
    #[inline(always)]
    fn transpose_square(self, regs: &mut [__m512]) {
        let n = regs.len();
        let r: &mut [__m512; 16] = regs
            .try_into()
            .unwrap_or_else(|_| panic!("transpose_square: {n} registers"));
        // Within each 128-bit lane: pairs of rows interleaved, then pairs of pairs (64-bit
        // halves), leaving `u[4 g + c]` with column `4 L + c` of rows `4 g..4 g + 4` in lane
        // `L`. Then the lanes are gathered: lanes 0 and 2 or 1 and 3 of groups 0 and 1 (2
        // and 3), then of those pairs.
        let mut t = *r;
        for i in 0..8 {
            t[2 * i] = proven!(_mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]));
            t[2 * i + 1] = proven!(_mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]));
        }
        let mut u = t;
        for g in 0..4 {
            let pd = |x: __m512| proven!(_mm512_castps_pd(x));
            let ps = |x: __m512d| proven!(_mm512_castpd_ps(x));
            let (lo, hi) = (pd(t[4 * g]), pd(t[4 * g + 1]));
            let (lo2, hi2) = (pd(t[4 * g + 2]), pd(t[4 * g + 3]));
            u[4 * g] = ps(proven!(_mm512_unpacklo_pd(lo, lo2)));
            u[4 * g + 1] = ps(proven!(_mm512_unpackhi_pd(lo, lo2)));
            u[4 * g + 2] = ps(proven!(_mm512_unpacklo_pd(hi, hi2)));
            u[4 * g + 3] = ps(proven!(_mm512_unpackhi_pd(hi, hi2)));
        }
        for c in 0..4 {
            // Columns c and 8 + c (even lanes), 4 + c and 12 + c (odd lanes), of rows 0-7
            // and of rows 8-15.
            let even_a = proven!(_mm512_shuffle_f32x4::<0x88>(u[c], u[4 + c]));
            let odd_a = proven!(_mm512_shuffle_f32x4::<0xDD>(u[c], u[4 + c]));
            let even_b = proven!(_mm512_shuffle_f32x4::<0x88>(u[8 + c], u[12 + c]));
            let odd_b = proven!(_mm512_shuffle_f32x4::<0xDD>(u[8 + c], u[12 + c]));
            r[c] = proven!(_mm512_shuffle_f32x4::<0x88>(even_a, even_b));
            r[8 + c] = proven!(_mm512_shuffle_f32x4::<0xDD>(even_a, even_b));
            r[4 + c] = proven!(_mm512_shuffle_f32x4::<0x88>(odd_a, odd_b));
            r[12 + c] = proven!(_mm512_shuffle_f32x4::<0xDD>(odd_a, odd_b));
        }
    }
    #[inline(always)]
    fn store_partial(self, v: __m512, dst: &mut [f32]) {
        if dst.len() >= 16 {
            return self.store(v, dst);
        }
        let k = self.first_n(dst.len());
        // SAFETY: the mask selects the first `dst.len()` lanes, all inside `dst`; a masked-off
        // lane is neither written nor accessed. The token proves AVX-512F.
        unsafe { _mm512_mask_storeu_ps(dst.as_mut_ptr(), k, v) }
    }
    #[inline(always)]
    fn first_n(self, n: usize) -> __mmask16 {
        ((1u32 << n.min(16)) - 1) as __mmask16
    }
    #[inline(always)]
    fn add(self, a: __m512, b: __m512) -> __m512 {
        proven!(_mm512_add_ps(a, b))
    }
    #[inline(always)]
    fn sub(self, a: __m512, b: __m512) -> __m512 {
        proven!(_mm512_sub_ps(a, b))
    }
    #[inline(always)]
    fn mul(self, a: __m512, b: __m512) -> __m512 {
        proven!(_mm512_mul_ps(a, b))
    }
    #[inline(always)]
    fn mul_splat(self, a: &f32, x: __m512) -> __m512 {
        // SAFETY: a token of this type exists only after `Isa::supported` checked AVX-512F.
        unsafe { mul_broadcast_avx512(a, x) }
    }
    #[inline(always)]
    fn div(self, a: __m512, b: __m512) -> __m512 {
        proven!(_mm512_div_ps(a, b))
    }
    #[inline(always)]
    fn min(self, a: __m512, b: __m512) -> __m512 {
        proven!(_mm512_min_ps(a, b))
    }
    #[inline(always)]
    fn fma(self, a: __m512, b: __m512, c: __m512) -> __m512 {
        proven!(_mm512_fmadd_ps(a, b, c))
    }
    #[inline(always)]
    fn lt(self, a: __m512, b: __m512) -> __mmask16 {
        proven!(_mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b))
    }
    #[inline(always)]
    fn gt(self, a: __m512, b: __m512) -> __mmask16 {
        proven!(_mm512_cmp_ps_mask::<_CMP_GT_OQ>(a, b))
    }
    #[inline(always)]
    fn ge(self, a: __m512, b: __m512) -> __mmask16 {
        proven!(_mm512_cmp_ps_mask::<_CMP_GE_OQ>(a, b))
    }
    #[inline(always)]
    fn eq(self, a: __m512, b: __m512) -> __mmask16 {
        proven!(_mm512_cmp_ps_mask::<_CMP_EQ_OQ>(a, b))
    }
    #[inline(always)]
    fn is_nan(self, a: __m512) -> __mmask16 {
        proven!(_mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, a))
    }
    #[inline(always)]
    fn gt_i(self, a: __m512i, b: __m512i) -> __mmask16 {
        proven!(_mm512_cmpgt_epi32_mask(a, b))
    }
    #[inline(always)]
    fn select(self, m: __mmask16, a: __m512, b: __m512) -> __m512 {
        proven!(_mm512_mask_blend_ps(m, b, a))
    }
    #[inline(always)]
    fn mask_or(self, a: __mmask16, b: __mmask16) -> __mmask16 {
        a | b
    }
    #[inline(always)]
    fn mask_and(self, a: __mmask16, b: __mmask16) -> __mmask16 {
        a & b
    }
    #[inline(always)]
    fn any(self, m: __mmask16) -> bool {
        m != 0
    }
    #[inline(always)]
    fn all(self, m: __mmask16) -> bool {
        m == 0xFFFF
    }
    // AVX-512F has no floating-point bitwise instructions (they are AVX-512DQ); the integer
    // ones give the same bits.
    #[inline(always)]
    fn and(self, a: __m512, b: __m512) -> __m512 {
        proven!(_mm512_castsi512_ps(_mm512_and_epi32(
            _mm512_castps_si512(a),
            _mm512_castps_si512(b)
        )))
    }
    #[inline(always)]
    fn or(self, a: __m512, b: __m512) -> __m512 {
        proven!(_mm512_castsi512_ps(_mm512_or_epi32(
            _mm512_castps_si512(a),
            _mm512_castps_si512(b)
        )))
    }
    #[inline(always)]
    fn to_bits(self, a: __m512) -> __m512i {
        proven!(_mm512_castps_si512(a))
    }
    #[inline(always)]
    fn from_bits(self, a: __m512i) -> __m512 {
        proven!(_mm512_castsi512_ps(a))
    }
    #[inline(always)]
    fn add_i(self, a: __m512i, b: __m512i) -> __m512i {
        proven!(_mm512_add_epi32(a, b))
    }
    #[inline(always)]
    fn sub_i(self, a: __m512i, b: __m512i) -> __m512i {
        proven!(_mm512_sub_epi32(a, b))
    }
    #[inline(always)]
    fn and_i(self, a: __m512i, b: __m512i) -> __m512i {
        proven!(_mm512_and_epi32(a, b))
    }
    #[inline(always)]
    fn shl_i<const N: i32>(self, a: __m512i) -> __m512i {
        proven!(_mm512_sll_epi32(a, _mm_cvtsi32_si128(N)))
    }
    #[inline(always)]
    fn sra_i<const N: i32>(self, a: __m512i) -> __m512i {
        proven!(_mm512_sra_epi32(a, _mm_cvtsi32_si128(N)))
    }

    const SCALES: bool = true;
    const ROUNDS: bool = true;
    const CHEAP_SELECT: bool = true;

    #[inline(always)]
    fn round_even(self, x: __m512) -> __m512 {
        // Round to nearest even (imm bits 1:0 = 0, bit 2 = 0: the immediate's mode, not
        // MXCSR's), precision exception suppressed (bit 3), to 0 fraction bits (bits 7:4).
        proven!(_mm512_roundscale_ps::<
            { _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC },
        >(x))
    }
    #[inline(always)]
    fn scale_pow2(self, p: __m512, n: __m512) -> __m512 {
        // `vscalefps`: `p * 2^floor(n)`, rounded once; `n` is integral, the product normal
        // (the method's contract), so the product is exact.
        proven!(_mm512_scalef_ps(p, n))
    }

    const COMPRESSES: bool = true;

    #[inline(always)]
    fn compress(self, v: __m512, m: __mmask16, dst: &mut [f32]) -> usize {
        // The register form, then a whole store: the form that stores straight to memory is
        // microcoded and slow on the AVX-512 cores measured.
        self.store(proven!(_mm512_maskz_compress_ps(m, v)), dst);
        m.count_ones() as usize
    }
    #[inline(always)]
    fn count(self, m: __mmask16) -> usize {
        m.count_ones() as usize
    }
    #[inline(always)]
    fn expand(self, src: &[f32], m: __mmask16, b: __m512) -> __m512 {
        proven!(_mm512_mask_expand_ps(b, m, self.load(src)))
    }
}

/// Runs `op` with one-lane scalar code compiled with FMA enabled, so `f32::mul_add` is one
/// instruction.
///
/// # Safety
/// The CPU must have FMA.
#[target_feature(enable = "fma")]
pub(super) unsafe fn run_scalar_fma<M: Mode, O: LaneOp>(op: O) -> O::Output {
    op.run::<_, M>(super::Scalar(()))
}

/// Runs `op` on 128-bit lanes with software fma (SSE2 is part of x86-64).
pub(super) fn run_sse2<M: Mode, O: LaneOp>(op: O) -> O::Output {
    op.run::<_, M>(Sse2::<false>(()))
}

/// Runs `op` on 128-bit lanes with the FMA3 instruction.
///
/// # Safety
/// The CPU must have FMA.
#[target_feature(enable = "fma")]
pub(super) unsafe fn run_sse2_fma<M: Mode, O: LaneOp>(op: O) -> O::Output {
    op.run::<_, M>(Sse2::<true>(()))
}

/// Runs `op` on 256-bit lanes.
///
/// # Safety
/// The CPU must have AVX2, FMA and POPCNT.
#[target_feature(enable = "avx2,fma,popcnt")]
pub(super) unsafe fn run_avx2<M: Mode, O: LaneOp>(op: O) -> O::Output {
    // Only the exact exp rounds by `round_even`, so fast mode compiles one variant: the test
    // on the constant comes first and alone, and rustc does not instantiate what sits under a
    // constant false test.
    #[allow(clippy::collapsible_if)]
    if !M::FAST {
        if core_kind::rounds_in_one_operation() {
            return op.run::<_, M>(Avx2::<true>(()));
        }
    }
    op.run::<_, M>(Avx2::<false>(()))
}

/// [`run_avx2`] with the exact exp's rounding chosen by the caller rather than by the core, so
/// that a test on any x86-64 CPU with AVX2 checks both variants' bits.
///
/// # Safety
/// The CPU must have AVX2, FMA and POPCNT.
#[cfg(feature = "unit-tests")]
#[target_feature(enable = "avx2,fma,popcnt")]
pub(super) unsafe fn run_avx2_rounding<M: Mode, O: LaneOp>(op: O, vroundps: bool) -> O::Output {
    if vroundps {
        op.run::<_, M>(Avx2::<true>(()))
    } else {
        op.run::<_, M>(Avx2::<false>(()))
    }
}

/// Runs `op` on 512-bit lanes.
///
/// # Safety
/// The CPU must have AVX-512F, AVX2, FMA and POPCNT.
#[target_feature(enable = "avx512f,avx2,fma,popcnt")]
pub(super) unsafe fn run_avx512<M: Mode, O: LaneOp>(op: O) -> O::Output {
    op.run::<_, M>(Avx512(()))
}
