//! [`Func`], the names of the element-wise functions, their kernels in each mode, and
//! [`MapSlice`], the entry point of every element-wise operator.

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

use super::{Kernel, SrcDst};
use crate::error::Error;
use crate::lanes::{LaneOp, Lanes, Mode, Supported, compiled_once_per_mode};

/// An element-wise function of the crate.
///
/// In [`crate::Exact`] every one is the spec's algorithm (SiLU is the crate's `x * sigmoid(x)`).
/// In [`crate::Fast`], every exp, alone or inside an operator (sigmoid, SiLU, GELU tanh,
/// `1 + erf`), is the fast degree-3 exp; `Erf` and `Tanh` are fitted rationals and `GeluErf`
/// the rational GELU; the rest of each algorithm is the accurate one with fused multiply-adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Func {
    /// `e^x`.
    Exp,
    /// `e^x` for `x <= 0` (softmax), flushing subnormal results to `+0`.
    ExpNonPositive,
    /// Natural logarithm.
    Log,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// Hyperbolic tangent.
    Tanh,
    /// Error function.
    Erf,
    /// `1 + erf(x)`, without cancellation for negative `x`.
    OnePlusErf,
    /// GELU, erf form: `0.5 x (1 + erf(x / sqrt 2))`.
    GeluErf,
    /// GELU, tanh form: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
    GeluTanh,
    /// SiLU (swish): `x * sigmoid(x)`.
    Silu,
}

/// Something to do with a kernel type, chosen from a [`Func`] and a mode by `Func::visit`.
pub(crate) trait KernelVisitor {
    /// What the visit returns.
    type Output;
    /// Called with the kernel type of the function.
    fn visit<K: Kernel>(self) -> Self::Output;
}

impl Func {
    /// Every function, in declaration order.
    pub const ALL: [Func; 10] = [
        Func::Exp,
        Func::ExpNonPositive,
        Func::Log,
        Func::Sigmoid,
        Func::Tanh,
        Func::Erf,
        Func::OnePlusErf,
        Func::GeluErf,
        Func::GeluTanh,
        Func::Silu,
    ];

    /// The snake-case name (`"gelu_erf"`), as the test vectors and digests name it.
    pub fn name(self) -> &'static str {
        match self {
            Func::Exp => "exp",
            Func::ExpNonPositive => "exp_nonpositive",
            Func::Log => "log",
            Func::Sigmoid => "sigmoid",
            Func::Tanh => "tanh",
            Func::Erf => "erf",
            Func::OnePlusErf => "one_plus_erf",
            Func::GeluErf => "gelu_erf",
            Func::GeluTanh => "gelu_tanh",
            Func::Silu => "silu",
        }
    }

    /// Calls `v` with the kernel type of this function in mode `M`.
    pub(crate) fn visit<M: Mode, V: KernelVisitor>(self, v: V) -> V::Output {
        use super::{erf, exp, gelu, log, sigmoid, silu, tanh};
        match (self, M::FAST) {
            (Func::Exp | Func::ExpNonPositive, true) => v.visit::<exp::FastExp>(),
            (Func::Exp, false) => v.visit::<exp::Exp<M>>(),
            (Func::ExpNonPositive, false) => v.visit::<exp::ExpNonPositive<M>>(),
            (Func::Log, _) => v.visit::<log::Log<M>>(),
            (Func::Sigmoid, _) => v.visit::<sigmoid::Sigmoid<M>>(),
            (Func::Tanh, true) => v.visit::<tanh::TanhRational>(),
            (Func::Tanh, false) => v.visit::<tanh::Tanh>(),
            (Func::Erf, true) => v.visit::<erf::ErfRational>(),
            (Func::Erf, false) => v.visit::<erf::Erf<M>>(),
            (Func::OnePlusErf, _) => v.visit::<erf::OnePlusErf<M>>(),
            (Func::GeluErf, true) => v.visit::<gelu::GeluRational>(),
            (Func::GeluErf, false) => v.visit::<gelu::GeluErf<M>>(),
            (Func::GeluTanh, _) => v.visit::<gelu::GeluTanh<M>>(),
            (Func::Silu, _) => v.visit::<silu::Silu<M>>(),
        }
    }
}

impl fmt::Display for Func {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Func {
    type Err = Error;
    fn from_str(s: &str) -> Result<Func, Error> {
        Func::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| Error::InvalidArgument(format!("unknown function {s:?}")))
    }
}

/// `dst[i] = func(src[i])`, or `data[i] = func(data[i])` in place: the entry point of every
/// element-wise operator. The function is chosen before the dispatch: each kernel is a
/// [`MapKernel`] with a trampoline of its own per instruction set.
pub struct MapSlice<'a> {
    /// The function.
    pub func: Func,
    /// Its input and output.
    pub io: SrcDst<'a>,
}

compiled_once_per_mode!(MapSlice<'_> -> (), by run);

impl MapSlice<'_> {
    /// Dispatches the kernel of the function in mode `M`.
    fn run<M: Mode>(self, isa: Supported) {
        let MapSlice { func, io } = self;
        func.visit::<M, _>(DispatchMap { isa, io })
    }
}

/// The kernel `K` over a slice: [`Kernel::map`].
pub struct MapKernel<'a, K> {
    /// Its input and output.
    pub io: SrcDst<'a>,
    /// The kernel.
    pub kernel: PhantomData<K>,
}

impl<K: Kernel> LaneOp for MapKernel<'_, K> {
    type Output = ();
    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        K::map(l, self.io)
    }
}

/// Dispatches the [`MapKernel`] of the kernel a [`Func`] names.
struct DispatchMap<'a> {
    isa: Supported,
    io: SrcDst<'a>,
}

impl KernelVisitor for DispatchMap<'_> {
    type Output = ();
    fn visit<K: Kernel>(self) {
        let (io, kernel) = (self.io, PhantomData::<K>);
        self.isa.dispatch::<K::Mode, _>(MapKernel { io, kernel })
    }
}

/// `dst[i] = func(src[i])` in mode `M` on `isa`. `src` and `dst` have equal lengths (the
/// callers check it).
pub fn map_slice<M: Mode>(func: Func, isa: Supported, src: &[f32], dst: &mut [f32]) {
    let io = SrcDst::new(src, dst);
    MapSlice { func, io }.dispatch::<M>(isa)
}

/// `data[i] = func(data[i])` in mode `M` on `isa`.
pub fn map_slice_in_place<M: Mode>(func: Func, isa: Supported, data: &mut [f32]) {
    let io = SrcDst::in_place(data);
    MapSlice { func, io }.dispatch::<M>(isa)
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use crate::lanes::{Exact, Fast, Isa};

    /// The registers of a [`Lanes::Group`] (or a [`Lanes::WideGroup`]) through a kernel at
    /// once give the bits of one lane at a time (the scalar path, whose group is one
    /// register), for every function, mode and instruction set, out of place and in place, at
    /// lengths that end in a partial register and in whole registers after the last group:
    /// one odd value (a NaN, an infinity, a value past a
    /// clamp or in another region of the algorithm) in one register of a group sends the
    /// whole group down the slow path, which must change nothing for its other registers.
    pub fn a_group_gives_the_bits_of_its_registers_one_at_a_time() {
        let odd = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            1e-30,
            -1e-40,
            0.3,
            -0.59,
            0.61,
            3.95,
            -5.7,
            20.0,
            -87.5,
            88.5,
            -104.0,
            200.0,
            -1e30,
        ];
        for n in [64 * 64 + 13, 64 * 64 + 5 * 16 + 3] {
            groups_against_scalar(n, &odd);
        }
    }

    fn groups_against_scalar(n: usize, odd: &[f32]) {
        let mut src: Vec<f32> = (0..n)
            .map(|i| -8.0 + 16.0 * ((i as u64 * 2_654_435_761 % 4093) as f32 / 4093.0))
            .collect();
        for (j, &v) in odd.iter().cycle().take(n / 41).enumerate() {
            src[(j * 41 + j % 7) % n] = v;
        }
        let log_src: Vec<f32> = src.iter().map(|x| x.abs()).collect();
        let scalar = Isa::Scalar.supported().unwrap();
        for isa in Isa::available() {
            let isa = isa.supported().unwrap();
            for func in Func::ALL {
                let src = if func == Func::Log { &log_src } else { &src };
                for fast in [false, true] {
                    let map = if fast {
                        map_slice::<Fast>
                    } else {
                        map_slice::<Exact>
                    };
                    let map_in_place = if fast {
                        map_slice_in_place::<Fast>
                    } else {
                        map_slice_in_place::<Exact>
                    };
                    let (mut grouped, mut single) = (vec![0f32; n], vec![0f32; n]);
                    map(func, isa, src, &mut grouped);
                    map(func, scalar, src, &mut single);
                    let mut in_place = src.clone();
                    map_in_place(func, isa, &mut in_place);
                    for (i, (g, s)) in grouped.iter().zip(&single).enumerate() {
                        assert_eq!(
                            g.to_bits(),
                            s.to_bits(),
                            "{func} fast {fast} on {:?} at {i} of {n} (x = {:e})",
                            isa.isa(),
                            src[i]
                        );
                        assert_eq!(
                            in_place[i].to_bits(),
                            s.to_bits(),
                            "{func} fast {fast} in place on {:?} at {i} of {n}",
                            isa.isa()
                        );
                    }
                }
            }
        }
    }

    /// The exact kernels on AVX2 give the scalar bits with either rounding of the exp's
    /// reduction: `vroundps`, which the dispatch takes on AMD's cores, and the spec's
    /// magic-number adds, which it takes on the others (`core_kind::rounds_in_one_operation`).
    /// The dispatch picks one by the core, so without this test a machine of one vendor would
    /// never run the other. Every function on every 4,099th bit pattern (every one with
    /// `AK_AVX2_ROUNDING_STRIDE=1`, a long run by hand), the special values, and the inputs
    /// within 64 ulps of each tie of `x * log2 e`, where two roundings could part.
    pub fn both_avx2_exp_roundings_give_the_scalar_bits() {
        #[cfg(not(target_arch = "x86_64"))]
        eprintln!("skipped: AVX2 is x86-64's");
        #[cfg(target_arch = "x86_64")]
        both_avx2_exp_roundings_on_x86();
    }

    #[cfg(target_arch = "x86_64")]
    fn both_avx2_exp_roundings_on_x86() {
        if Isa::Avx2.supported().is_err() {
            eprintln!("skipped: this CPU has no AVX2");
            return;
        }
        let stride: u64 = std::env::var("AK_AVX2_ROUNDING_STRIDE")
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|&s| s >= 1)
            .unwrap_or(4_099);
        let mut near_ties = Vec::new();
        for k in -152..=130 {
            let tie = ((k as f64 + 0.5) * std::f64::consts::LN_2) as f32;
            near_ties
                .extend((-64..=64).map(|d| f32::from_bits(tie.to_bits().wrapping_add_signed(d))));
        }
        let specials = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            f32::MIN_POSITIVE,
        ];
        check_avx2_roundings(&near_ties);
        check_avx2_roundings(&specials);
        let mut block = Vec::with_capacity(1 << 20);
        let mut bits = 0u64;
        while bits < 1 << 32 {
            block.clear();
            while bits < 1 << 32 && block.len() < 1 << 20 {
                block.push(f32::from_bits(bits as u32));
                bits += stride;
            }
            check_avx2_roundings(&block);
        }
    }

    /// Every function in exact mode on `src`, on AVX2 with each rounding, against scalar.
    #[cfg(target_arch = "x86_64")]
    fn check_avx2_roundings(src: &[f32]) {
        let scalar = Isa::Scalar.supported().unwrap();
        for func in Func::ALL {
            let mut want = vec![0f32; src.len()];
            map_slice::<Exact>(func, scalar, src, &mut want);
            for vroundps in [true, false] {
                let mut got = vec![0f32; src.len()];
                let io = SrcDst::new(src, &mut got);
                func.visit::<Exact, _>(MapOnAvx2 { io, vroundps });
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(
                        g.to_bits(),
                        w.to_bits(),
                        "{func} on AVX2 (vroundps {vroundps}) at x = {:e} ({:#010x})",
                        src[i],
                        src[i].to_bits()
                    );
                }
            }
        }
    }

    /// [`MapKernel`] on AVX2 with the exp's rounding chosen by the test.
    #[cfg(target_arch = "x86_64")]
    struct MapOnAvx2<'a> {
        io: SrcDst<'a>,
        vroundps: bool,
    }

    #[cfg(target_arch = "x86_64")]
    impl KernelVisitor for MapOnAvx2<'_> {
        type Output = ();
        fn visit<K: Kernel>(self) {
            let op = MapKernel {
                io: self.io,
                kernel: PhantomData::<K>,
            };
            Supported::dispatch_avx2_rounding::<K::Mode, _>(op, self.vroundps)
                .expect("the caller checked AVX2");
        }
    }

    /// The kernel's [`Kernel::apply`] on one scalar lane per element: no slice loop, so it
    /// judges every [`Kernel::map`], the scalar one's included.
    struct ApplyEach<'a> {
        src: &'a [f32],
        dst: &'a mut [f32],
    }

    impl KernelVisitor for ApplyEach<'_> {
        type Output = ();
        fn visit<K: Kernel>(self) {
            let l = crate::lanes::Scalar::new();
            for (y, &x) in self.dst.iter_mut().zip(self.src) {
                *y = K::apply(l, x);
            }
        }
    }

    /// `func` in mode `M` through the slice maps, into another slice and in place, on every
    /// instruction set gives the bits of its kernel's `apply`, one scalar lane at a time, on
    /// the last `n` elements of `src` for each `n` of `lengths`.
    fn slice_maps_give_the_scalar_bits<M: Mode>(func: Func, src: &[f32], lengths: &[usize]) {
        for &n in lengths {
            let src = &src[src.len() - n..];
            let mut want = vec![0f32; n];
            func.visit::<M, _>(ApplyEach {
                src,
                dst: &mut want,
            });
            for isa in Isa::available() {
                let isa_ok = isa.supported().unwrap();
                let mut got = vec![0f32; n];
                map_slice::<M>(func, isa_ok, src, &mut got);
                let mut in_place = src.to_vec();
                map_slice_in_place::<M>(func, isa_ok, &mut in_place);
                for (i, w) in want.iter().enumerate() {
                    let name = format!("{isa}: {}({:e}) at {i}", func.name(), src[i]);
                    assert_eq!(got[i].to_bits(), w.to_bits(), "{name}");
                    assert_eq!(in_place[i].to_bits(), w.to_bits(), "{name} in place");
                }
            }
        }
    }

    /// The slice map of the exact tanh (on AVX2 blocks of three registers by the loop in
    /// assembly, `Lanes::exact_tanh_in_range`, and four registers by `tanh_by_stage` where it
    /// stops; on NEON four by `tanh_by_register`) gives the scalar bits on every instruction
    /// set, out of place and in place: register sets all of the polynomial branch, all of the
    /// exp branch, mixed in some registers only, with a NaN, an infinity or a value past
    /// `TANH_IN_RANGE` among them, and lengths that end inside a register and inside a set of
    /// four; then the special values in the first, a middle or the last register of a set,
    /// such sets first and last in the slice and back to back, beside sets all of one branch,
    /// and lengths of no whole set, one, and whole sets with single registers and a partial
    /// one after them.
    pub fn the_exact_tanh_slice_map_gives_the_scalar_bits() {
        let mut src: Vec<f32> = (0..4_096)
            .map(|i| -8.0 + 16.0 * ((i as u64 * 2_654_435_761 % 4_093) as f32 / 4_093.0))
            .collect();
        src.extend((0..256).map(|i| 0.59 - i as f32 / 512.0));
        src.extend((0..256).map(|i| 0.61 + i as f32 / 64.0));
        src.extend((0..256).map(|i| if i % 32 == 5 { 0.3 } else { 2.0 }));
        for (k, special) in [f32::NAN, f32::INFINITY, -50.0, 43.0, -0.0, 1e-40]
            .into_iter()
            .enumerate()
        {
            src[4_096 + 97 * k] = special;
            src[300 * k + 7] = special;
        }
        let lengths = [src.len(), src.len() - 1, 35, 31, 8, 3];
        slice_maps_give_the_scalar_bits::<Exact>(Func::Tanh, &src, &lengths);

        // Sets of four AVX2 registers (32 lanes) in a row, and the assembly loop's blocks of 24:
        // spread over [-8, 8] (both branches), all below 0.6, all from 1 on; the special values
        // at the first and last lanes of blocks and sets too.
        let mut src: Vec<f32> = (0..4_096)
            .map(|i| -8.0 + 16.0 * ((i as u64 * 2_654_435_761 % 4_093) as f32 / 4_093.0))
            .collect();
        src.extend((0..512).map(|i| -0.59 + i as f32 * (1.18 / 512.0)));
        src.extend((0..512).map(|i| 1.0 + i as f32 / 16.0));
        let specials = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -50.0,
            crate::ops::tanh::TANH_IN_RANGE,
            -0.0,
            1e-40,
        ];
        let n = src.len();
        for (k, &special) in specials.iter().enumerate() {
            for at in [
                0,
                5,
                23,
                24,
                31,
                32,
                47,
                63,
                64 * k + 100,
                4_096 + 40 * k,
                n - 1 - 40 * k,
            ] {
                src[(at + 11 * k).min(n - 1)] = special;
            }
        }
        let lengths = [n, n - 1, n - 37, 130, 97, 64, 40, 33, 32, 31, 9, 8, 3, 0];
        slice_maps_give_the_scalar_bits::<Exact>(Func::Tanh, &src, &lengths);
    }

    /// The slice maps of the sigmoid, exact and fast (a group's exp one loop step before its
    /// division, `map_two_stage`), give the scalar bits on every instruction set, out of place
    /// and in place: groups in the exp's clean range next to groups with a NaN, an infinity or
    /// a value past it (exact mode's `EXP_ONE_SCALE`, fast mode's clamp at 87.3: the general
    /// head and the selects) in their first, a middle or their last register, such groups
    /// first and last in the slice and back to back, and lengths of no whole group, one, and
    /// whole groups with single registers and a partial one after them.
    pub fn the_sigmoid_slice_maps_give_the_scalar_bits() {
        let mut src: Vec<f32> = (0..4_096)
            .map(|i| -20.0 + 40.0 * ((i as u64 * 2_654_435_761 % 4_093) as f32 / 4_093.0))
            .collect();
        src.extend((0..512).map(|i| 85.9 + i as f32 / 2_048.0));
        src.extend((0..512).map(|i| -87.5 + i as f32 / 1_024.0));
        let specials = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -86.5,
            90.0,
            -0.0,
            1e-40,
            -87.4,
            87.4,
        ];
        for (k, &special) in specials.iter().enumerate() {
            for at in [0, 5, 31, 32, 63, 64 * k + 100, 4_096 - 1 - 40 * k] {
                src[at + 11 * k] = special;
            }
        }
        let n = src.len();
        let lengths = [n, n - 1, n - 37, 130, 97, 64, 40, 33, 32, 31, 9, 8, 3, 0];
        slice_maps_give_the_scalar_bits::<Exact>(Func::Sigmoid, &src, &lengths);
        slice_maps_give_the_scalar_bits::<Fast>(Func::Sigmoid, &src, &lengths);
    }

    /// The slice map of the fast tanh (two registers at a time on AVX2, by
    /// `tanh_rational_of_set`) gives the scalar bits on every instruction set, out of place and
    /// in place: sets all in the clean form's range, sets with a lane from 8 on (the clamped
    /// form) in one register or both, with a NaN or an infinity among them, and lengths that
    /// end inside a register and inside a set of two.
    pub fn the_fast_tanh_slice_map_gives_the_scalar_bits() {
        let mut src: Vec<f32> = (0..4_096)
            .map(|i| -8.5 + 17.0 * ((i as u64 * 2_654_435_761 % 4_093) as f32 / 4_093.0))
            .collect();
        src.extend((0..256).map(|i| 7.99 + i as f32 / 1_024.0));
        src.extend((0..256).map(|i| if i % 24 == 5 { -8.0 } else { 0.5 }));
        for (k, special) in [f32::NAN, f32::INFINITY, -9.5, 9.02, -0.0, 1e-40]
            .into_iter()
            .enumerate()
        {
            src[4_096 + 97 * k] = special;
            src[300 * k + 7] = special;
        }
        let lengths = [src.len(), src.len() - 1, 35, 23, 16, 9, 3];
        slice_maps_give_the_scalar_bits::<Fast>(Func::Tanh, &src, &lengths);
    }

    /// Every kernel that sorts by regions, through the slice maps (into another slice and in
    /// place) on every instruction set, gives the bits of the scalar one, which runs the
    /// register form: on the compressing instruction sets, the sorted form. (The register form
    /// against the sorted one on every lane type, as erf's test does, would compile every such
    /// kernel once more per lane type for the tests.) On every input of the regions tests'
    /// [`inputs`](crate::ops::regions::tests::inputs).
    pub fn sorted_kernels_give_the_scalar_bits_on_every_isa() {
        fn check<M: Mode>() {
            for func in [Func::Erf, Func::OnePlusErf, Func::GeluErf] {
                for src in crate::ops::regions::tests::inputs() {
                    slice_maps_give_the_scalar_bits::<M>(func, &src, &[src.len()]);
                }
            }
        }
        check::<Exact>();
        check::<Fast>();
    }
}
