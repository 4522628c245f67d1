//! Lane types: one trait, [`Lanes`], over `f32` scalar code and the x86-64 and aarch64 vector
//! registers.
//!
//! Every kernel of the crate is written once, generic over `L: Lanes` and the mode `M: Mode`,
//! as the `#[inline(always)]` body of a [`LaneOp`]. [`Supported`] is the proof that the CPU has
//! an instruction set (only [`Isa::supported`] makes one); [`Supported::dispatch`] builds the
//! lane token (which only this module can build) and calls the body through a
//! `#[target_feature]` trampoline, so the body is compiled with that instruction set enabled.
//!
//! The trait has no fused multiply-add for exact code to call by accident: exact kernels go
//! through [`Mode::madd`], which is a separate multiply and add in [`Exact`] and calls
//! [`Lanes::fma`] only in [`Fast`].

pub(crate) mod core_kind;
pub(crate) mod fpenv;
mod isa;
mod mode;
#[cfg(target_arch = "aarch64")]
mod neon;
mod op;
pub(crate) mod pages;
pub(crate) mod pair;
mod prefetch;
mod scalar;
pub(crate) mod transpose;
#[cfg(target_arch = "x86_64")]
mod x86;
#[cfg(target_arch = "x86_64")]
mod x86_asm;
#[cfg(target_arch = "x86_64")]
mod x86_horner_asm;
#[cfg(target_arch = "x86_64")]
mod x86_tanh_asm;

pub use fpenv::{ExactFpEnv, exact_scalar};
pub(crate) use isa::IsaSet;
pub use isa::{Isa, Supported};
pub use mode::{Exact, Fast, Mode};
pub use op::LaneOp;
pub(crate) use op::compiled_once_per_mode;
pub use pair::Pair;
pub(crate) use prefetch::{
    prefetch, prefetch_ahead, prefetch_ahead_l2, prefetch_l2, prefetch_part,
};
pub use scalar::Scalar;
pub(crate) use transpose::transpose_strip;

/// The widest register of any lane type, in `f32` lanes.
pub const MAX_WIDTH: usize = 16;

/// `1.5 * 2^23`: adding and subtracting it rounds to the nearest integer (ties to even).
pub const ROUND_MAGIC: f32 = 12_582_912.0;

/// A set of `f32` lanes and the operations the kernels need on them.
///
/// Implemented by [`Scalar`] (one lane), on x86-64 by the 128-bit (`Sse2`), 256-bit
/// (`Avx2`) and 512-bit (`Avx512`) register types, and on aarch64 by the 128-bit NEON one
/// (`Neon`). A value of an implementing type is a token: proof that the CPU runs the
/// instruction set. Only [`Supported::dispatch`] makes them.
///
/// Comparisons are ordered (false when either side is NaN), like Rust's `<`, with the same
/// results on every lane type. `eq` and `is_nan` are quiet everywhere, and so are AVX2's and
/// AVX-512's `lt`/`gt`/`ge` (`_CMP_*_OQ`); SSE2 has no quiet ordered less-than, so its
/// `lt`/`gt`/`ge` are the signalling `cmpltps`/`cmpleps` forms: on a NaN operand they also set
/// MXCSR's invalid flag. NEON's `fcmgt`/`fcmge` (its `lt`/`gt`/`ge`) signal too, in FPSR; its
/// `fcmeq` is quiet. Only the flag differs, never a result, and the crate promises nothing
/// about the flags (its kernels raise invalid, overflow and inexact on lanes they discard, such
/// as `inf - inf` before a select). No exception traps in exact mode: its environment
/// ([`ExactFpEnv`]) masks them all. Fast mode runs with the caller's MXCSR (FPCR): a caller that
/// unmasks floating-point exceptions must expect traps from fast kernels on any instruction set.
/// Integer arithmetic wraps. `select(m, a, b)` is `m ? a : b` lane by lane.
pub trait Lanes: Copy + Send + Sync + 'static {
    /// Number of `f32` lanes.
    const WIDTH: usize;
    /// `WIDTH` lanes of `f32`.
    type F: Copy;
    /// `WIDTH` lanes of `i32`.
    type I: Copy;
    /// A lane mask, the result of a comparison.
    type M: Copy;
    /// The registers the slice driver runs a kernel on at once: four AVX2 or AVX-512
    /// registers as one (`Pair<Pair<_>>`), one register of the other types. Several
    /// independent registers let the compiler interleave their dependent chains, and a
    /// kernel's per-register test is taken once for all of them; but each doubling doubles the
    /// kernels' compiled code (and the build time), so a lane type gets a group only where one
    /// is measured to pay: on AVX2 four beat two and eight for every kernel; on AVX-512 four
    /// beat one, and two on all but two kernels; on SSE2 two did not pay. Lanes never mix:
    /// the bits are those of one register at a time.
    type Group: Lanes;

    /// The [`Lanes::Group`] of this token.
    fn group(self) -> Self::Group;

    /// The registers the slice driver runs a kernel of long dependent chains on at once, when
    /// the kernel asks for it: eight AVX-512 registers as one (`Pair<Pair<Pair<_>>>`), the
    /// [`Lanes::Group`] elsewhere. With 32 architectural registers, eight chains of an exp
    /// (about 24 dependent steps each) still fit, and the scheduler finds ready work in more of
    /// them: the exact exp, sigmoid and SiLU gained over a group of four on AVX-512. The fast
    /// rationals (a short chain, then a division) and log lost, and on AVX2's 16 registers
    /// eight spill, so it is opt-in (BENCHMARKS.md).
    type WideGroup: Lanes;

    /// The [`Lanes::WideGroup`] of this token.
    fn wide_group(self) -> Self::WideGroup;

    /// Every lane `v`.
    fn splat(self, v: f32) -> Self::F;
    /// Every lane `v`.
    fn splat_i(self, v: i32) -> Self::I;
    /// Loads `src[..WIDTH]`. Panics if `src` is shorter.
    fn load(self, src: &[f32]) -> Self::F;
    /// Stores into `dst[..WIDTH]`. Panics if `dst` is shorter.
    fn store(self, v: Self::F, dst: &mut [f32]);

    /// Loads the `src.len() <= WIDTH` values of `src` into the first lanes and `pad` into the
    /// others: the one way a slice tail reaches a kernel. The padding is the caller's choice
    /// because it must be neutral for what follows (`+0` for a sum, `-inf` for a maximum).
    #[inline(always)]
    fn load_partial(self, src: &[f32], pad: f32) -> Self::F {
        if src.len() == Self::WIDTH {
            return self.load(src);
        }
        let mut buf = [pad; MAX_WIDTH];
        buf[..src.len()].copy_from_slice(src);
        self.load(&buf)
    }
    /// The mask of the first `n` lanes, every lane for `n >= WIDTH`: the lanes a slice tail of
    /// `n` values fills. The default compares each lane's index with `n`; a lane type with a
    /// cheaper form (a mask register, an integer compare) gives its own.
    #[inline(always)]
    fn first_n(self, n: usize) -> Self::M {
        const INDEX: [f32; MAX_WIDTH] = {
            let mut index = [0f32; MAX_WIDTH];
            let mut i = 0;
            while i < MAX_WIDTH {
                index[i] = i as f32;
                i += 1;
            }
            index
        };
        self.lt(self.load(&INDEX), self.splat(n.min(MAX_WIDTH) as f32))
    }
    /// Stores the first `dst.len() <= WIDTH` lanes of `v` into `dst`.
    #[inline(always)]
    fn store_partial(self, v: Self::F, dst: &mut [f32]) {
        if dst.len() == Self::WIDTH {
            return self.store(v, dst);
        }
        let mut buf = [0f32; MAX_WIDTH];
        self.store(v, &mut buf);
        dst.copy_from_slice(&buf[..dst.len()]);
    }

    /// Transposes the `WIDTH x WIDTH` matrix whose row `i` is `regs[i]`: afterwards lane `i`
    /// of `regs[t]` is what lane `t` of `regs[i]` was. A pure move (no bit changes), for
    /// kernels that read a matrix along the axis their lanes do not run on (the one-row GEMM
    /// against attention's keys). The default goes through memory; x86's lane types shuffle
    /// in registers. Panics if `regs.len() != WIDTH` or `WIDTH > MAX_WIDTH`.
    #[inline(always)]
    fn transpose_square(self, regs: &mut [Self::F]) {
        let w = Self::WIDTH;
        assert_eq!(regs.len(), w, "transpose_square: {} registers", regs.len());
        let mut rows = [0f32; MAX_WIDTH * MAX_WIDTH];
        for (i, r) in regs.iter().enumerate() {
            self.store(*r, &mut rows[i * w..]);
        }
        let mut column = [0f32; MAX_WIDTH];
        for (t, r) in regs.iter_mut().enumerate() {
            for (i, v) in column[..w].iter_mut().enumerate() {
                *v = rows[i * w + t];
            }
            *r = self.load(&column);
        }
    }

    /// `a + b`, rounded once.
    fn add(self, a: Self::F, b: Self::F) -> Self::F;
    /// `a - b`, rounded once.
    fn sub(self, a: Self::F, b: Self::F) -> Self::F;
    /// `a * b`, rounded once.
    fn mul(self, a: Self::F, b: Self::F) -> Self::F;
    /// `*a * x`, rounded once: `mul(splat(*a), x)` with the same bits. Exists for the GEMM's
    /// exact microkernel: AVX-512 takes the broadcast into the multiply's memory operand
    /// (`vmulps zmm, zmm, m32{1to16}`), which the load unit does, where a broadcast register
    /// (`vbroadcastss`) costs a slot on the FP pipes that exact mode's separate multiplies and
    /// adds fill. Every other lane type splats and multiplies.
    #[inline(always)]
    fn mul_splat(self, a: &f32, x: Self::F) -> Self::F {
        self.mul(self.splat(*a), x)
    }
    /// The pairs of steps of k of the GEMM's exact 6 x 2-register microkernel, where this lane
    /// type has them in assembly (AVX2): for each of `n = min(a.len() / 12, b.len() / (4 *
    /// WIDTH))` pairs, in increasing `k`, `acc[2 i + v] = mul(splat(a[6 k + i]), b[k][v]) +
    /// acc[2 i + v]` (`a`: six values of A per `k`; `b`: two registers per `k`). Returns
    /// `false`, having done nothing, where it does not (every other lane type, or `acc` not
    /// twelve registers): the caller runs its own loop.
    #[inline(always)]
    fn exact_pairs_6x2(self, _a: &[f32], _b: &[f32], _acc: &mut [Self::F]) -> bool {
        false
    }
    /// Exact mode's `tanh` (`crate::ops::tanh::tanh`, bit for bit) of the leading blocks of
    /// `src` (of `dst` itself when `None`, in place) into `dst`, where this lane type has it as
    /// a loop in assembly (AVX2, blocks of three registers): block by block up to the first
    /// that has a lane of `|x| >= TANH_IN_RANGE` or NaN, or to the last whole block. Returns
    /// the count of leading elements written; the caller maps that block (or the tail) itself,
    /// then calls again after it. 0 where the lane type has no such loop (the default).
    #[inline(always)]
    fn exact_tanh_in_range(self, _src: Option<&[f32]>, _dst: &mut [f32]) -> usize {
        0
    }
    /// The block of [`Lanes::exact_horner_in_place`] in elements (a multiple of the width), 0
    /// where it evaluates nothing (every lane type but AVX2): a kernel whose dependent chain is
    /// mostly one long exact Horner rule may run it as a pass of its own over a buffer padded
    /// to whole blocks where it is not 0, and keep its one-pass form elsewhere.
    const EXACT_HORNER_BLOCK: usize = 0;
    /// Exact mode's Horner rule (`crate::ops::horner` in [`Exact`], bit for bit: `acc =
    /// coeffs[0]`, then `acc = acc * s + coeffs[k]`, the product rounded, then the sum) of each
    /// element of the leading blocks of `s`, written over it, where this lane type has it as a
    /// loop in assembly (AVX2: blocks of twelve registers, one independent chain each, the
    /// coefficient shared). Returns the count of leading elements evaluated, a multiple of the
    /// block; the caller evaluates the rest. 0 where the lane type has no such loop (the
    /// default) or for fewer than two coefficients.
    #[inline(always)]
    fn exact_horner_in_place(self, _coeffs: &[f32], _s: &mut [f32]) -> usize {
        0
    }
    /// `a / b`, correctly rounded (never a reciprocal estimate).
    fn div(self, a: Self::F, b: Self::F) -> Self::F;
    /// `a < b ? a : b`: the smaller, and `b` where either is NaN (x86's `minps`, on every lane
    /// type).
    fn min(self, a: Self::F, b: Self::F) -> Self::F;
    /// `a * b + c` with one rounding. For fast mode only; exact code calls
    /// [`Lanes::madd_exact_product`] instead, where the two forms are the same.
    fn fma(self, a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    /// `a * b + c` where the caller knows the product `a * b` to be exact (representable in
    /// f32, as `n * LN2_HI` for an integral `|n| < 256` is): the spec's product-then-sum, whose
    /// product rounds nothing, so it has the bits of a fused multiply-add. One FMA where the
    /// lane type has one as an instruction (AVX2): one rounding less on the dependent chain
    /// and one operation less. The default is the product and the sum. Where the product is
    /// not exact the two forms may differ: the callers use it only on lanes whose product is
    /// exact or whose result is replaced.
    #[inline(always)]
    fn madd_exact_product(self, a: Self::F, b: Self::F, c: Self::F) -> Self::F {
        self.add(self.mul(a, b), c)
    }

    /// `a < b`.
    fn lt(self, a: Self::F, b: Self::F) -> Self::M;
    /// `a > b`.
    fn gt(self, a: Self::F, b: Self::F) -> Self::M;
    /// `a >= b`.
    fn ge(self, a: Self::F, b: Self::F) -> Self::M;
    /// `a == b`.
    fn eq(self, a: Self::F, b: Self::F) -> Self::M;
    /// `a` is NaN.
    fn is_nan(self, a: Self::F) -> Self::M;
    /// `a > b` on `i32` lanes.
    fn gt_i(self, a: Self::I, b: Self::I) -> Self::M;
    /// `m ? a : b`.
    fn select(self, m: Self::M, a: Self::F, b: Self::F) -> Self::F;
    /// `a` where the sign bit of `s` is set, `b` where it is clear: [`Lanes::select`] by the
    /// bit alone, not by a comparison, so `-0.0` and a NaN with its sign bit set take `a`,
    /// `+0.0` and a NaN without it take `b`. The default is an integer comparison of the bit
    /// pattern with 0 and a select; AVX2's `vblendvps` chooses by the sign bit of each lane
    /// of its mask operand, so there it is that one instruction with `s` as the mask.
    #[inline(always)]
    fn select_by_sign(self, s: Self::F, a: Self::F, b: Self::F) -> Self::F {
        self.select(self.gt_i(self.splat_i(0), self.to_bits(s)), a, b)
    }
    /// Mask or.
    fn mask_or(self, a: Self::M, b: Self::M) -> Self::M;
    /// Lane-wise and of two masks.
    fn mask_and(self, a: Self::M, b: Self::M) -> Self::M;
    /// True if any lane of `m` is set.
    fn any(self, m: Self::M) -> bool;
    /// True if every lane of `m` is set.
    fn all(self, m: Self::M) -> bool;

    /// Bitwise and of the bit patterns.
    fn and(self, a: Self::F, b: Self::F) -> Self::F;
    /// Bitwise or of the bit patterns.
    fn or(self, a: Self::F, b: Self::F) -> Self::F;

    /// The bit patterns as `i32`.
    fn to_bits(self, a: Self::F) -> Self::I;
    /// The `f32` with these bit patterns.
    #[allow(clippy::wrong_self_convention)]
    fn from_bits(self, a: Self::I) -> Self::F;
    /// `a + b`, wrapping.
    fn add_i(self, a: Self::I, b: Self::I) -> Self::I;
    /// `a - b`, wrapping.
    fn sub_i(self, a: Self::I, b: Self::I) -> Self::I;
    /// `a & b`.
    fn and_i(self, a: Self::I, b: Self::I) -> Self::I;
    /// `a << N` (logical).
    fn shl_i<const N: i32>(self, a: Self::I) -> Self::I;
    /// `a >> N` (arithmetic).
    fn sra_i<const N: i32>(self, a: Self::I) -> Self::I;

    /// Whether [`Lanes::round_even`] and [`Lanes::scale_pow2`] are one instruction each
    /// (AVX-512's `vrndscaleps` and `vscalefps`). Where they are, an exp's reduction takes
    /// them instead of the magic-number rounding and the exponent-field integer arithmetic:
    /// fewer operations, the same bits. Elsewhere their default forms are that arithmetic.
    /// On the AVX-512 cores measured both run on the pipes that also run the adds, so the exact
    /// exp saves about one add per register; the fast exp, bound by its fused multiply-adds,
    /// does not move.
    const SCALES: bool = false;

    /// Whether the exact exp's reduction rounds `x * log2 e` with [`Lanes::round_even`] as one
    /// instruction (AVX-512's `vrndscaleps`; AVX2's `vroundps` on the cores where it is one
    /// operation, see `Avx2`): one rounding step on the dependent chain where the spec's
    /// `(v + M) - M` has two, the same integer (see `reduce_arg` in `ops/exp.rs`). Where the
    /// instruction splits into operations on the multiply pipes (AVX2 on Intel's cores), the
    /// adds cost less.
    const ROUNDS: bool = false;

    /// Whether [`Lanes::select`] is one instruction that takes no slot of the multiply or add
    /// pipes (AVX-512's `vblendmps` by a mask register, which the AVX-512 cores measured run on
    /// any FP pipe). Where it is, a kernel may trade arithmetic for selects (the exact tanh
    /// evaluates both of its branches in one pass of per-lane operands). AVX2's `vblendvps`
    /// takes a multiply-pipe slot, and SSE2's select is three logic operations.
    const CHEAP_SELECT: bool = false;

    /// `x` rounded to the nearest integer, ties to even, for `|x| < 2^22`: the spec's
    /// `(x + M) - M` (`M = 1.5 * 2^23`) with the same value, except that a zero result may be
    /// `-0` here where that form gives `+0`. Beyond `2^22`, anything.
    #[inline(always)]
    fn round_even(self, x: Self::F) -> Self::F {
        let magic = self.splat(ROUND_MAGIC);
        self.sub(self.add(x, magic), magic)
    }

    /// `p * 2^n` for an integral `n` with `|n| < 2^22`, `p` positive and normal, and the
    /// product normal: the product is exact there (only the exponent changes). Elsewhere
    /// (a subnormal or overflowing product), anything.
    #[inline(always)]
    fn scale_pow2(self, p: Self::F, n: Self::F) -> Self::F {
        let magic = self.splat(ROUND_MAGIC);
        let k = self.sub_i(self.to_bits(self.add(n, magic)), self.to_bits(magic));
        self.from_bits(self.add_i(self.to_bits(p), self.shl_i::<23>(k)))
    }

    /// Whether [`Lanes::compress`] and [`Lanes::expand`] are a few instructions (AVX-512's
    /// `vcompressps` and `vexpandps`; on AVX2 a `vpermps` by a row of a table indexed by the
    /// mask), cheap enough for a kernel to gather the lanes of each region of its algorithm
    /// into dense registers. Elsewhere they are lane-by-lane loops, correct but slow.
    const COMPRESSES: bool = false;

    /// Writes the lanes of `v` where `m` is set to the front of `dst`, in lane order, and
    /// returns how many there are. `dst` holds at least `WIDTH` values; those after the count
    /// get anything.
    #[inline(always)]
    fn compress(self, v: Self::F, m: Self::M, dst: &mut [f32]) -> usize {
        let (values, set) = (self.lanes_of(v), self.lanes_of(self.mask_as_ones(m)));
        let mut n = 0;
        for (&v, &s) in values.iter().zip(&set).take(Self::WIDTH) {
            if s != 0.0 {
                dst[n] = v;
                n += 1;
            }
        }
        n
    }

    /// The register whose lanes where `m` is set take `src[0]`, `src[1]`, ... in lane order,
    /// and whose other lanes are `b`'s: the inverse of [`Lanes::compress`]. `src` holds at least
    /// `WIDTH` values.
    #[inline(always)]
    fn expand(self, src: &[f32], m: Self::M, b: Self::F) -> Self::F {
        let (mut values, set) = (self.lanes_of(b), self.lanes_of(self.mask_as_ones(m)));
        let mut n = 0;
        for (v, &s) in values.iter_mut().zip(&set).take(Self::WIDTH) {
            if s != 0.0 {
                *v = src[n];
                n += 1;
            }
        }
        self.load(&values)
    }

    /// How many lanes `m` sets.
    #[inline(always)]
    fn count(self, m: Self::M) -> usize {
        let set = self.lanes_of(self.mask_as_ones(m));
        set[..Self::WIDTH].iter().filter(|&&s| s != 0.0).count()
    }

    /// The lanes of `v`, in the first `WIDTH` entries.
    #[inline(always)]
    fn lanes_of(self, v: Self::F) -> [f32; MAX_WIDTH] {
        let mut out = [0f32; MAX_WIDTH];
        self.store(v, &mut out);
        out
    }

    /// `1` where `m` is set, `0` elsewhere.
    #[inline(always)]
    fn mask_as_ones(self, m: Self::M) -> Self::F {
        self.select(m, self.splat(1.0), self.splat(0.0))
    }
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::{Exact, Isa, LaneOp, Lanes, MAX_WIDTH, Mode, ROUND_MAGIC};

    /// `mul_splat(a, x)` against `mul(splat(a), x)` for one `a` and a register of `x`.
    struct MulSplat {
        a: f32,
        x: [f32; MAX_WIDTH],
    }

    impl LaneOp for MulSplat {
        type Output = (Vec<u32>, Vec<u32>);
        fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output {
            let x = l.load(&self.x);
            let bits = |v: L::F| {
                let mut out = [0f32; MAX_WIDTH];
                l.store(v, &mut out);
                out[..L::WIDTH].iter().map(|v| v.to_bits()).collect()
            };
            (
                bits(l.mul_splat(&self.a, x)),
                bits(l.mul(l.splat(self.a), x)),
            )
        }
    }

    /// `n` pairs of exact 6 x 2 steps through [`Lanes::exact_pairs_6x2`] beside the generic
    /// step (`add(mul(splat(a), b), acc)`; none where the lane type did not run them), from the
    /// same accumulators: whether the lane type ran them, and the bits of the twelve
    /// accumulators both ways (`a` and `b` hold a little more than `n` pairs, which the pairs
    /// must not reach).
    struct ExactPairs<'a> {
        n: usize,
        values: &'a [f32],
    }

    impl LaneOp for ExactPairs<'_> {
        type Output = (bool, Vec<u32>, Vec<u32>);
        fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output {
            let w = L::WIDTH;
            let v = |i: usize| self.values[i % self.values.len()];
            let a: Vec<f32> = (0..12 * self.n + 5).map(|i| v(3 * i + 1)).collect();
            let b: Vec<f32> = (0..(4 * self.n + 3) * w).map(|i| v(5 * i + 2)).collect();
            let start: Vec<f32> = (0..12 * w).map(|i| v(7 * i)).collect();
            let load = |src: &[f32]| -> Vec<L::F> { src.chunks(w).map(|c| l.load(c)).collect() };
            let bits = |acc: &[L::F]| -> Vec<u32> {
                let mut out = vec![0f32; 12 * w];
                for (r, c) in acc.iter().zip(out.chunks_mut(w)) {
                    l.store(*r, c);
                }
                out.iter().map(|x| x.to_bits()).collect()
            };
            let mut got = load(&start);
            let ran = l.exact_pairs_6x2(&a, &b, &mut got);
            // Where it did not run, it must have left the accumulators alone.
            let mut want = load(&start);
            for k in (0..2 * self.n).filter(|_| ran) {
                for (i, row) in want.chunks_mut(2).enumerate() {
                    for (j, acc) in row.iter_mut().enumerate() {
                        let bk = l.load(&b[(2 * k + j) * w..]);
                        *acc = l.add(l.mul(l.splat(a[6 * k + i]), bk), *acc);
                    }
                }
            }
            (ran, bits(&got), bits(&want))
        }
    }

    /// Partial loads and stores of every length on one lane type: `load_partial` gives the
    /// slice then `pad`; `store_partial` writes the slice's lanes and nothing after them (the
    /// slice is cut from a longer buffer whose other values must stay).
    struct Partial;

    impl LaneOp for Partial {
        type Output = ();
        fn run<L: Lanes, M: Mode>(self, l: L) {
            let w = L::WIDTH;
            let src: Vec<f32> = (0..w).map(|i| i as f32 + 0.5).collect();
            for len in 0..=w {
                let mut all = [7.0f32; MAX_WIDTH];
                l.store(l.load_partial(&src[..len], -1.0), &mut all);
                for (i, &x) in all[..w].iter().enumerate() {
                    assert_eq!(
                        x,
                        if i < len { src[i] } else { -1.0 },
                        "load of {len}, lane {i}"
                    );
                }
                let mut buf = [7.0f32; 2 * MAX_WIDTH];
                l.store_partial(l.load(&src), &mut buf[1..1 + len]);
                assert_eq!(buf[0], 7.0, "store of {len} wrote before the slice");
                assert_eq!(&buf[1..1 + len], &src[..len], "store of {len}");
                assert!(
                    buf[1 + len..].iter().all(|&x| x == 7.0),
                    "store of {len} wrote past it"
                );
            }
        }
    }

    /// `first_n(n)` of every `n` from 0 to past the width, as `(n, the lanes it sets)`: on the
    /// lane type, then on its group of registers (a `Pair` where it is one).
    struct FirstN;

    /// `(n, the lanes of first_n(n))` for every `n` up to two past the width of `l`.
    fn first_n_masks<L: Lanes>(l: L) -> Vec<(usize, Vec<bool>)> {
        (0..=L::WIDTH + 2)
            .map(|n| {
                let mut ones = vec![0f32; L::WIDTH];
                l.store(
                    l.select(l.first_n(n), l.splat(1.0), l.splat(0.0)),
                    &mut ones,
                );
                (n, ones.iter().map(|&v| v == 1.0).collect())
            })
            .collect()
    }

    impl LaneOp for FirstN {
        type Output = Vec<(usize, Vec<bool>)>;
        fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output {
            let mut masks = first_n_masks(l);
            masks.extend(first_n_masks(l.group()));
            masks
        }
    }

    /// `first_n(n)` sets exactly the lanes below `n` (every lane from `n = WIDTH` on), on every
    /// lane type and on its group of registers (a `Pair`, whose halves split `n`).
    pub fn first_n_sets_the_first_n_lanes_on_every_lane_type() {
        for isa in Isa::available() {
            for (n, lanes) in isa.supported().unwrap().dispatch::<Exact, _>(FirstN) {
                let want: Vec<bool> = (0..lanes.len()).map(|i| i < n).collect();
                assert_eq!(lanes, want, "{isa}: first_n({n})");
            }
        }
    }

    /// `round_even` and `scale_pow2` of one register each, as bits.
    struct RoundAndScale {
        x: [f32; MAX_WIDTH],
        p: [f32; MAX_WIDTH],
        n: [f32; MAX_WIDTH],
    }

    impl LaneOp for RoundAndScale {
        type Output = (Vec<f32>, Vec<u32>);
        fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output {
            // Every one of the MAX_WIDTH lanes, a register of `L` at a time.
            let mut round = [0f32; MAX_WIDTH];
            let mut scaled = [0f32; MAX_WIDTH];
            for k in (0..MAX_WIDTH).step_by(L::WIDTH) {
                l.store(l.round_even(l.load(&self.x[k..])), &mut round[k..]);
                let product = l.scale_pow2(l.load(&self.p[k..]), l.load(&self.n[k..]));
                l.store(product, &mut scaled[k..]);
            }
            (round.to_vec(), scaled.iter().map(|v| v.to_bits()).collect())
        }
    }

    /// On every lane type (AVX-512's one-instruction forms and everyone's defaults):
    /// `round_even` is the spec's `(x + M) - M` in value wherever `|x| < 2^22` (ties, the
    /// values next to them, zeros, the ends of the range), and `scale_pow2` is the IEEE product
    /// `p * 2^n` wherever that is normal (every `n` from -126 to 127, `p` across `[0.5, 4)`).
    pub fn round_even_and_scale_pow2_keep_the_spec_arithmetic_on_every_lane_type() {
        let magic = ROUND_MAGIC;
        let mut xs = vec![0.0f32, -0.0, 0.25, -0.25, 4_194_303.5, -4_194_303.5];
        for k in -300..300 {
            let tie = k as f32 + 0.5;
            xs.extend([tie, tie.next_up(), tie.next_down(), k as f32 * 1.37]);
        }
        let mut products = Vec::new();
        for n in -126..=127i32 {
            for step in 0..37 {
                let p = 0.5 + step as f32 * (3.5 / 37.0) + 1e-7 * n as f32;
                let want = p * 2f32.powi(n);
                if want.is_normal() {
                    products.push((p, n as f32, want));
                }
            }
        }
        assert!(products.len() > 9000, "{}", products.len());
        for isa in Isa::available() {
            let (xs, ps): (Vec<_>, Vec<_>) = (
                xs.chunks(MAX_WIDTH).collect(),
                products.chunks(MAX_WIDTH).collect(),
            );
            // Every chunk of both lists (the shorter one cycles).
            for i in 0..xs.len().max(ps.len()) {
                let (xc, pc) = (xs[i % xs.len()], ps[i % ps.len()]);
                let (mut x, mut p, mut n) =
                    ([0f32; MAX_WIDTH], [1f32; MAX_WIDTH], [0f32; MAX_WIDTH]);
                x[..xc.len()].copy_from_slice(xc);
                for (i, &(pi, ni, _)) in pc.iter().enumerate() {
                    (p[i], n[i]) = (pi, ni);
                }
                let (round, scaled) = isa
                    .supported()
                    .unwrap()
                    .dispatch::<Exact, _>(RoundAndScale { x, p, n });
                for (i, &r) in round.iter().enumerate() {
                    assert_eq!(r, (x[i] + magic) - magic, "{isa:?} round_even({:e})", x[i]);
                }
                for (i, &s) in scaled.iter().enumerate() {
                    let want = pc.get(i).map_or(1.0, |&(_, _, w)| w);
                    assert_eq!(s, want.to_bits(), "{isa:?}: {} * 2^{}", p[i], n[i]);
                }
            }
        }
    }

    /// `madd_exact_product(a, b, c)` of every triple, a register at a time, as bits: on the
    /// lane type, then on its group of registers.
    struct MaddExact<'a>(&'a [(f32, f32, f32)]);

    fn madd_exact_bits<L: Lanes>(l: L, t: &[(f32, f32, f32)]) -> Vec<u32> {
        let mut out = Vec::with_capacity(t.len() + L::WIDTH);
        for c in t.chunks(L::WIDTH) {
            let column = |f: fn(&(f32, f32, f32)) -> f32| {
                let v: Vec<f32> = c.iter().map(f).collect();
                l.load_partial(&v, 1.0)
            };
            let (a, b, z) = (column(|t| t.0), column(|t| t.1), column(|t| t.2));
            let mut y = vec![0f32; L::WIDTH];
            l.store(l.madd_exact_product(a, b, z), &mut y);
            out.extend(y[..c.len()].iter().map(|v| v.to_bits()));
        }
        out
    }

    impl LaneOp for MaddExact<'_> {
        type Output = (Vec<u32>, Vec<u32>);
        fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output {
            (
                madd_exact_bits(l, self.0),
                madd_exact_bits(l.group(), self.0),
            )
        }
    }

    /// `madd_exact_product` is the product and the sum, bit for bit, wherever the product is
    /// exact, on every lane type (AVX2's FMA, everyone's default) and its group: the exp's
    /// `n * -LN2_HI + x` for every integral `n` of `[-255, 255]` (both zeros) and `x` near
    /// `n * ln 2` (the cancellation the reduction makes), zeros and subnormals among them, and
    /// products of 12-bit significands across the exponents beside addends that cancel them
    /// exactly or nearly, subnormal addends, addends at 1.5 units of the product's 24th bit
    /// (a rounding) and arbitrary ones.
    pub fn madd_exact_product_is_the_product_and_the_sum_where_the_product_is_exact() {
        let mut t = Vec::new();
        let hi = -f32::from_bits(0x3F31_7200); // LN2_HI
        for n in -255..=255i32 {
            let nf = n as f32;
            let near = nf * core::f32::consts::LN_2;
            for x in [
                near,
                near.next_up(),
                near.next_down(),
                -nf * hi,
                nf * 0.7,
                0.0,
                -0.0,
            ] {
                t.push((nf, hi, x));
            }
        }
        t.push((-0.0, hi, 0.0));
        t.push((-0.0, hi, -0.0));
        t.push((0.0, hi, f32::from_bits(1)));
        let mut seed = 0x9E37_79B9u32;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        for _ in 0..20_000 {
            // 12-bit significands: their product has at most 24 bits, exact while normal.
            let sig = |r: u32| (0x800 | (r & 0x7FF)) as f32;
            let (ea, eb) = ((next() % 80) as i32 - 40, (next() % 80) as i32 - 40);
            let sign = if next() & 1 == 0 { 1.0 } else { -1.0 };
            let a = sign * sig(next()) * 2f32.powi(ea);
            let b = sig(next()) * 2f32.powi(eb);
            let exact = a * b;
            let c = match next() % 5 {
                0 => -exact,
                1 => -exact * (1.0 + f32::EPSILON),
                2 => f32::from_bits(next() & 0x807F_FFFF),
                3 => exact * 2f32.powi(-24) * 1.5,
                _ => f32::from_bits(next() & 0xBFFF_FFFF),
            };
            t.push((a, b, c));
        }
        for &(a, b, _) in &t {
            let p = a * b;
            assert_eq!(p as f64, a as f64 * b as f64, "{a:e} * {b:e} is not exact");
        }
        let want: Vec<u32> = t.iter().map(|&(a, b, c)| (a * b + c).to_bits()).collect();
        for isa in Isa::available() {
            let (single, group) = isa.supported().unwrap().dispatch::<Exact, _>(MaddExact(&t));
            for (form, got) in [("lane type", single), ("group", group)] {
                assert_eq!(got.len(), t.len(), "{isa}");
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    let (a, b, c) = t[i];
                    assert_eq!(g, w, "{isa} {form}: {a:e} * {b:e} + {c:e}");
                }
            }
        }
    }

    /// `select_by_sign(s, a, b)` over `s` a register at a time (`a` the lane index plus one,
    /// `b` its negation), as bits: on the lane type, then on its group of registers.
    struct SelectBySign<'a>(&'a [f32]);

    fn select_by_sign_bits<L: Lanes>(l: L, s: &[f32]) -> Vec<u32> {
        let a: Vec<f32> = (0..L::WIDTH).map(|i| 1.0 + i as f32).collect();
        let b: Vec<f32> = a.iter().map(|v| -v).collect();
        let mut out = vec![0f32; L::WIDTH];
        s.chunks_exact(L::WIDTH)
            .flat_map(|c| {
                l.store(
                    l.select_by_sign(l.load(c), l.load(&a), l.load(&b)),
                    &mut out,
                );
                out.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            })
            .collect()
    }

    impl LaneOp for SelectBySign<'_> {
        type Output = Vec<(usize, Vec<u32>)>;
        fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output {
            vec![
                (L::WIDTH, select_by_sign_bits(l, self.0)),
                (
                    <L::Group as Lanes>::WIDTH,
                    select_by_sign_bits(l.group(), self.0),
                ),
            ]
        }
    }

    /// `select_by_sign` takes `a` exactly where the sign bit is set, on every lane type and
    /// its group: both zeros, NaNs of both signs (quiet and signalling), infinities,
    /// subnormals, the ends of the normal range, each in every lane position.
    pub fn select_by_sign_follows_the_sign_bit_on_every_lane_type() {
        let magnitudes = [
            0x0000_0000u32,
            0x7FC0_0000,
            0x7F80_0001,
            0x7FFF_FFFF,
            0x7F80_0000,
            0x0000_0001,
            0x007F_FFFF,
            0x0080_0000,
            0x3F80_0000,
            0x7F7F_FFFF,
        ];
        let specials: Vec<u32> = magnitudes
            .iter()
            .flat_map(|&m| [m, m | 0x8000_0000])
            .collect();
        // 20 specials in a cycle of 128 lanes (a multiple of every width, group widths
        // included): each special meets every lane position of a register of up to 64.
        let s: Vec<f32> = (0..128 * specials.len())
            .map(|i| f32::from_bits(specials[(i + i / 128) % specials.len()]))
            .collect();
        for isa in Isa::available() {
            let out = isa
                .supported()
                .unwrap()
                .dispatch::<Exact, _>(SelectBySign(&s));
            for (width, bits) in out {
                assert_eq!(bits.len(), s.len());
                for (i, (&got, &x)) in bits.iter().zip(&s).enumerate() {
                    let a = 1.0 + (i % width) as f32;
                    let want = if x.to_bits() >> 31 == 1 { a } else { -a };
                    assert_eq!(got, want.to_bits(), "{isa} ({width} lanes): s = {x:e}");
                }
            }
        }
    }

    pub fn partial_loads_and_stores_touch_only_their_lanes_on_every_lane_type() {
        for isa in Isa::available() {
            isa.supported().unwrap().dispatch::<Exact, _>(Partial);
        }
    }

    pub fn exact_pairs_6x2_are_the_generic_steps_on_every_lane_type() {
        // Products that overflow, underflow into subnormals, meet infinities and zeros (NaNs
        // from inf * 0 and inf - inf), and sums that round in every direction.
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            -1.5,
            f32::MIN_POSITIVE,
            1e-45,
            -7.0e-39,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            -3.4e38,
            0.1,
        ];
        values.extend((0..41).map(|i| (i as f32 * 0.7311 - 9.0).exp2() * [1.0, -1.0][i % 2]));
        for isa in Isa::available() {
            for n in [0, 1, 2, 7, 40] {
                let (ran, got, want) = isa
                    .supported()
                    .unwrap()
                    .dispatch::<Exact, _>(ExactPairs { n, values: &values });
                assert_eq!(ran, isa == Isa::Avx2, "{isa}: assembly pairs");
                for (lane, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    let nan = |b: u32| f32::from_bits(b).is_nan();
                    // A NaN's payload follows the operand order, which the compiler may swap
                    // in the generic step; exact mode stores only the canonical NaN.
                    assert!(
                        g == w || (nan(g) && nan(w)),
                        "{isa}, {n} pairs, lane {lane}: {:e} != {:e}",
                        f32::from_bits(g),
                        f32::from_bits(w)
                    );
                }
            }
        }
    }

    /// `exact_tanh_in_range` of `src`, out of place (`dst` filled with a NaN first) or in
    /// place: the count it returned and `dst`.
    struct TanhInRange<'a> {
        src: &'a [f32],
        in_place: bool,
    }

    impl LaneOp for TanhInRange<'_> {
        type Output = (usize, Vec<f32>);
        fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output {
            if self.in_place {
                let mut dst = self.src.to_vec();
                (l.exact_tanh_in_range(None, &mut dst), dst)
            } else {
                let mut dst = vec![f32::NAN; self.src.len()];
                (l.exact_tanh_in_range(Some(self.src), &mut dst), dst)
            }
        }
    }

    /// `exact_tanh_in_range` writes the scalar kernel's bits (`Tanh::apply` one lane at a time)
    /// on whole blocks of 24 lanes up to the first block with a lane it does not take (NaN,
    /// `|x| >= TANH_IN_RANGE`), and nothing after them; out of place and in place, on AVX2 (the
    /// lane type that has it; the others write nothing): both branches and their boundary
    /// (`0.6`), `TANH_IN_RANGE`'s neighbours, zeros, subnormals, blocks all of the polynomial
    /// branch or all of the exp's next to mixed ones, lengths that end inside a block, and a
    /// value it does not take at the start, the end and the middle of a block.
    pub fn exact_tanh_in_range_gives_the_scalar_bits_up_to_a_lane_out_of_range() {
        use crate::ops::Kernel;
        use crate::ops::tanh::{TANH_IN_RANGE, TANH_SMALL, Tanh};
        const BLOCK: usize = 24;
        let edges = [
            0.0,
            -0.0,
            1e-45,
            -1e-40,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE.next_down(),
            TANH_SMALL,
            -TANH_SMALL.next_down(),
            TANH_SMALL.next_up(),
            TANH_IN_RANGE.next_down(),
            -TANH_IN_RANGE.next_down(),
            1.0,
            -9.0,
        ];
        let spread = |n: usize, lo: f32, hi: f32| -> Vec<f32> {
            (0..n)
                .map(|i| lo + (hi - lo) * ((i as u64 * 2_654_435_761 % 4_093) as f32 / 4_093.0))
                .collect()
        };
        let mut src: Vec<f32> = edges.to_vec();
        src.extend(spread(3_000, -42.99, 42.99));
        src.extend(spread(5 * BLOCK, -0.6, 0.6));
        src.extend(spread(1_000, -8.0, 8.0));
        src.extend(spread(4 * BLOCK, 0.6, 20.0));
        src.extend(edges.iter().rev());
        src.extend(spread(600, -0.7, 0.7));
        // Every float from just below 0.6 to just above it, both signs.
        let around = TANH_SMALL.to_bits() - 300..TANH_SMALL.to_bits() + 300;
        src.extend(
            around
                .flat_map(|b| [b, b | 0x8000_0000])
                .map(f32::from_bits),
        );
        let small = src.iter().filter(|x| x.abs() < TANH_SMALL).count();
        assert!(small > 1_000 && small < src.len() - 1_000, "{small}");
        let scalar = crate::lanes::Scalar::new();
        let check = |src: &[f32], stop: usize| {
            for isa in Isa::available() {
                for in_place in [false, true] {
                    let (n, dst) = isa
                        .supported()
                        .unwrap()
                        .dispatch::<Exact, _>(TanhInRange { src, in_place });
                    let want = if isa == Isa::Avx2 { stop } else { 0 };
                    assert_eq!(n, want, "{isa} in place {in_place}: {} lanes", src.len());
                    for (i, (&x, &y)) in src.iter().zip(&dst).enumerate() {
                        let want = if i < n {
                            Tanh::apply(scalar, x)
                        } else if in_place {
                            x
                        } else {
                            f32::NAN
                        };
                        assert_eq!(
                            y.to_bits(),
                            want.to_bits(),
                            "{isa} in place {in_place}: tanh({x:e}) at {i} of {}",
                            src.len()
                        );
                    }
                }
            }
        };
        for len in [src.len(), src.len() - 1, 97, 49, 48, 47, 25, 24, 23, 1, 0] {
            let src = &src[src.len() - len..];
            check(src, len / BLOCK * BLOCK);
        }
        // A lane out of range stops the loop at its block.
        for out in [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            TANH_IN_RANGE,
            -TANH_IN_RANGE,
            50.0,
        ] {
            for at in [0, 23, 24, 35, 47, 7 * BLOCK + 1, src.len() - 1] {
                let mut src = src.clone();
                src[at] = out;
                check(&src, at / BLOCK * BLOCK);
            }
        }
    }

    /// `exact_horner_in_place` of `coeffs` over a copy of `s`: the count it returned and the
    /// copy.
    struct HornerInPlace<'a> {
        coeffs: &'a [f32],
        s: &'a [f32],
    }

    impl LaneOp for HornerInPlace<'_> {
        type Output = (usize, Vec<f32>);
        fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output {
            let mut s = self.s.to_vec();
            (l.exact_horner_in_place(self.coeffs, &mut s), s)
        }
    }

    /// `exact_horner_in_place` of `coeffs` over `src` on every lane type: AVX2 evaluates the
    /// leading whole blocks of 96 elements (none for fewer than two coefficients), each to the
    /// bits of the scalar lane type's `horner` (NaN as any NaN: its payload follows the
    /// operand order), and leaves the rest as it was; every other lane type evaluates nothing.
    fn check_horner_in_place<const N: usize>(coeffs: &[f32; N], src: &[f32]) {
        use crate::ops::horner;
        let scalar = crate::lanes::Scalar::new();
        for isa in Isa::available() {
            let (n, got) = isa
                .supported()
                .unwrap()
                .dispatch::<Exact, _>(HornerInPlace { coeffs, s: src });
            let want_n = if isa == Isa::Avx2 && N >= 2 {
                src.len() / 96 * 96
            } else {
                0
            };
            assert_eq!(n, want_n, "{isa}: {N} coefficients, {} lanes", src.len());
            for (i, (&s, &y)) in src.iter().zip(&got).enumerate() {
                let want = if i < n {
                    horner::<_, Exact, N>(scalar, s, coeffs)
                } else {
                    s
                };
                assert!(
                    y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan()),
                    "{isa}: {N} coefficients, s = {s:e} at {i} of {}: {y:e} != {want:e}",
                    src.len()
                );
            }
        }
    }

    pub fn exact_horner_in_place_gives_the_scalar_bits_in_whole_blocks() {
        use crate::ops::erf::ERF_G;
        // `s = 1/|x| - 1` of erf's large branch (`|x|` in `[0.5, 4)`), with its ends.
        let mut in_range: Vec<f32> = (0..1_100)
            .map(|i| -0.75 + 1.75 * ((i as u64 * 2_654_435_761 % 4_093) as f32 / 4_093.0))
            .collect();
        in_range.extend([-0.75, 1.0, 1.0f32.next_down(), -0.75f32.next_up()]);
        // Any float: zeros, subnormals, infinities, NaNs, and magnitudes whose powers
        // overflow or underflow.
        let specials = [
            0.0,
            -0.0,
            1e-45,
            -7.0e-39,
            f32::MIN_POSITIVE,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
            -3.4e38,
            1e10,
            -1e-20,
        ];
        let mut any: Vec<f32> = (0..1_000u32)
            .map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761)))
            .collect();
        for (j, v) in any.iter_mut().step_by(5).enumerate() {
            *v = specials[j % specials.len()];
        }
        let short = [0.5f32, -1.25, 3.0];
        for src in [&in_range, &any] {
            for len in [0, 1, 8, 95, 96, 97, 191, 192, 193, 960, 1_000] {
                let src = &src[src.len() - len..];
                check_horner_in_place(&ERF_G, src);
                check_horner_in_place(&[short[0], short[1]], src);
                check_horner_in_place(&short, src);
                check_horner_in_place(&[short[0]], src);
            }
        }
    }

    /// `transpose_square` of registers whose lanes are distinct bit patterns (NaN payloads,
    /// signed zeros and subnormals among them: a move must keep every bit), against the
    /// transposition done value by value.
    struct Transpose;

    impl LaneOp for Transpose {
        type Output = Vec<(usize, Vec<u32>, Vec<u32>)>;
        fn run<L: Lanes, M: Mode>(self, l: L) -> Self::Output {
            fn check<L: Lanes>(l: L) -> (usize, Vec<u32>, Vec<u32>) {
                let w = L::WIDTH;
                let value = |i: usize, t: usize| {
                    f32::from_bits(match (i * w + t) % 5 {
                        0 => 0x7fc0_0000 | (i * w + t) as u32,
                        1 => 0x8000_0000 | (i * w + t) as u32,
                        _ => 0x3f80_0000 + ((i * w + t) as u32) * 0x1_0001,
                    })
                };
                let mut regs = [l.splat(0.0); MAX_WIDTH];
                for (i, r) in regs[..w].iter_mut().enumerate() {
                    let row: Vec<f32> = (0..w).map(|t| value(i, t)).collect();
                    *r = l.load(&row);
                }
                l.transpose_square(&mut regs[..w]);
                let mut got = Vec::new();
                for r in &regs[..w] {
                    let mut out = [0f32; MAX_WIDTH];
                    l.store(*r, &mut out);
                    got.extend(out[..w].iter().map(|v| v.to_bits()));
                }
                let want = (0..w)
                    .flat_map(|t| (0..w).map(move |i| value(i, t).to_bits()))
                    .collect();
                (w, got, want)
            }
            let mut out = vec![check(l)];
            // The default (through memory), on the two-register pair where it fits.
            if L::WIDTH <= MAX_WIDTH / 2 {
                out.push(check(super::Pair::of(l)));
            }
            out
        }
    }

    pub fn transpose_square_moves_every_bit_on_every_lane_type() {
        for isa in Isa::available() {
            for (w, got, want) in isa.supported().unwrap().dispatch::<Exact, _>(Transpose) {
                assert_eq!(got, want, "{isa} ({w} lanes)");
            }
        }
    }

    pub fn mul_splat_is_the_product_with_the_splat_on_every_lane_type() {
        let specials = [
            0.0,
            -0.0,
            1.0,
            -1.5,
            f32::MIN_POSITIVE,
            1e-45,
            -3.4e38,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            0.1,
            7.0e-39,
        ];
        // Lane values: the specials, then a spread of magnitudes and signs, so products
        // overflow, underflow into subnormals and round in every direction.
        let mut x = [0f32; MAX_WIDTH];
        for (i, v) in x.iter_mut().enumerate() {
            *v = match specials.get(i) {
                Some(&s) => s,
                None => (i as f32 * 0.7311).exp2() * if i % 3 == 0 { -1.0 } else { 1.0 },
            };
        }
        for isa in Isa::available() {
            for &a in specials.iter().chain(&[3.0e-20, -2.7e19, 1.000_000_1]) {
                // Each lane value in lane 0 once, so a register narrower than MAX_WIDTH sees them all.
                for shift in 0..MAX_WIDTH {
                    let mut xs = x;
                    xs.rotate_left(shift);
                    let (got, want) = isa
                        .supported()
                        .unwrap()
                        .dispatch::<Exact, _>(MulSplat { a, x: xs });
                    assert_eq!(got, want, "{isa:?}, a = {a:e}, rotated by {shift}");
                }
            }
        }
    }
}
