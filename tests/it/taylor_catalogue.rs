//! The test catalogue of `taylor-expf.md` (section 4), run on `activation_kernels::taylor`, and
//! the mutants of its pitfall table (section 5), each rejected by the check the table names.
//!
//! Every catalogue test is a check function `check_<name>` that returns `Err` with the first
//! (or worst) failure, and a `#[test] fn <name>` that runs it on the real kernel. The mutants
//! s01 to s07 are variants of one model of the kernel ([`model`]), which with
//! [`Variant::Reference`] is the kernel bit for bit (`model_reference_is_the_kernel`), so each
//! mutant differs from the kernel in exactly the one place its pitfall names. s08 and s09 are
//! off-by-one array loops.
//!
//! The module's mutant s06 (and s07 at `-inf`) is caught in C by UBSan: converting NaN or an
//! out-of-range float to `int` is undefined behaviour. Rust's `as` is defined (it saturates), so
//! the model converts through [`c_int`], which does what C does under `-fsanitize=undefined`:
//! it records the undefined behaviour (see [`ub`]) and returns what x86 hardware returns. Every
//! check fails on a recorded undefined behaviour, as UBSan with `-fno-sanitize-recover` would.
#![allow(clippy::excessive_precision)]

use crate::common::{float_range, special_values, ulp_error};
use activation_kernels::{exact, taylor};

/// The module's constants, by the bit patterns `taylor-expf.md` gives them.
mod constants {
    /// `fl(1/ln 2)`.
    pub const LOG2E: f32 = f32::from_bits(0x3FB8_AA3B);
    /// `L_hi = 355/512`.
    pub const L_HI: f32 = f32::from_bits(0x3F31_8000);
    /// `L_lo = fl(ln 2 - 355/512)`.
    pub const L_LO: f32 = f32::from_bits(0xB95E_8083);
    /// `1/j!`, highest degree first.
    pub const COEFFS: [f32; 8] = [
        f32::from_bits(0x3950_0D01),
        f32::from_bits(0x3AB6_0B61),
        f32::from_bits(0x3C08_8889),
        f32::from_bits(0x3D2A_AAAB),
        f32::from_bits(0x3E2A_AAAB),
        0.5,
        1.0,
        1.0,
    ];
    /// The largest `x` with a finite result.
    pub const OVERFLOW: f32 = f32::from_bits(0x42B1_7217);
    /// Below it the result is `+0`.
    pub const UNDERFLOW: f32 = f32::from_bits(0xC2CF_F1B4);
    /// `1.5 * 2^23`: `(t + MAGIC) - MAGIC` rounds `t` to an integer, ties to even.
    pub const MAGIC: f32 = 12_582_912.0;
}

/// A scalar exp under test.
type Scalar<'a> = &'a dyn Fn(f32) -> f32;
/// An array exp in the C interface's shape `tl_exp_f32(x, y, n)`: `y[i] = exp(x[i])` for
/// `i < n`; `None` for `x` means in place (`y == x`). The buffers may be longer than `n`: what
/// lies past `n` must stay untouched.
type Array<'a> = &'a dyn Fn(Option<&[f32]>, &mut [f32], usize);

// ---------------------------------------------------------------------------------------------
// Undefined behaviour, as UBSan would report it in the C kernel.

mod ub {
    use std::cell::Cell;

    thread_local! {
        static SEEN: Cell<Option<&'static str>> = const { Cell::new(None) };
    }

    /// Records an operation that is undefined behaviour in C (the first one is kept).
    pub fn record(what: &'static str) {
        SEEN.with(|s| {
            if s.get().is_none() {
                s.set(Some(what));
            }
        });
    }

    /// The undefined behaviour recorded since the last call, if any.
    pub fn take() -> Option<&'static str> {
        SEEN.with(|s| s.take())
    }
}

/// `f(x)`, or `Err` if it did something C leaves undefined.
fn eval(f: Scalar, x: f32) -> Result<f32, String> {
    let y = f(x);
    match ub::take() {
        None => Ok(y),
        Some(what) => Err(format!(
            "undefined behaviour at x = {x:e} ({:#010x}): {what}",
            x.to_bits()
        )),
    }
}

/// `f(x)` within `tol` ulp of `e^x` computed in f64, else `Err`.
fn within(f: Scalar, x: f32, tol: f64) -> Result<(), String> {
    let y = eval(f, x)?;
    let reference = f64::from(x).exp();
    let e = ulp_error(y, reference);
    if e <= tol {
        Ok(())
    } else {
        Err(format!(
            "x = {x:e} ({:#010x}): got {y:e} ({:#010x}), e^x = {reference:e}: {e:.3} ulp > {tol}",
            x.to_bits(),
            y.to_bits()
        ))
    }
}

/// The worst ulp error of `f` over `xs` against f64 exp; `Err` if above 2 ulp.
fn worst_within_2_ulp(f: Scalar, xs: impl IntoIterator<Item = f32>) -> Result<f64, String> {
    let mut worst = (0.0f64, 0.0f32);
    for x in xs {
        let y = eval(f, x)?;
        let e = ulp_error(y, f64::from(x).exp());
        if e > worst.0 || e.is_nan() {
            worst = (e, x);
        }
    }
    if worst.0 <= 2.0 {
        Ok(worst.0)
    } else {
        let x = worst.1;
        Err(format!(
            "worst error {:.3} ulp > 2 at x = {x:e} ({:#010x}): got {:e}, e^x = {:e}",
            worst.0,
            x.to_bits(),
            f(x),
            f64::from(x).exp()
        ))
    }
}

/// SplitMix64: a tiny seeded generator, so the samples are the same on every run.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi]`, rounded to f32.
    fn uniform(&mut self, lo: f64, hi: f64) -> f32 {
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (lo + (hi - lo) * u) as f32
    }
}

/// The largest float with a finite `e^x`, `0x1.62e42ep+6 = 88.7228317`.
const OVERFLOW_EDGE: f32 = f32::from_bits(0x42B1_7217);
/// The smallest normal float.
const FLT_MIN: f32 = f32::MIN_POSITIVE;
/// The smallest subnormal step, `2^-149`.
const SUBNORMAL_STEP: f64 = 1.401_298_464_324_817e-45;

// ---------------------------------------------------------------------------------------------
// The catalogue's checks.

/// Section 3's bits: `e^1 = 2.7182817`, `e^-1 = 0.36787945`, `e^10 = 22026.465`, `e^+-0 = 1`.
fn check_hand_example(f: Scalar) -> Result<(), String> {
    let cases: [(f32, u32); 5] = [
        (1.0, 0x402D_F854),  // 2.7182817
        (-1.0, 0x3EBC_5AB2), // 0.36787945
        (10.0, 0x46AC_14EE), // 22026.465
        (0.0, 0x3F80_0000),
        (-0.0, 0x3F80_0000),
    ];
    for (x, bits) in cases {
        let y = eval(f, x)?;
        if y.to_bits() != bits {
            return Err(format!(
                "e^{x:?} = {y:e} ({:#010x}), expected {:e} ({bits:#010x})",
                y.to_bits(),
                f32::from_bits(bits)
            ));
        }
    }
    Ok(())
}

/// 10^6 seeded uniform `x` in `[-87.34, 88.72]` within 2 ulp of exp in f64.
fn check_million_samples_within_2_ulp(f: Scalar) -> Result<(), String> {
    let mut rng = SplitMix64(0x7A11_0E5F_2024_0906);
    worst_within_2_ulp(f, (0..1_000_000).map(|_| rng.uniform(-87.34, 88.72))).map(|_| ())
}

/// Every 512th float of `[-1, 1]` (about 4 million inputs) within 2 ulp.
fn check_sweep_of_minus_one_to_one(f: Scalar) -> Result<(), String> {
    worst_within_2_ulp(f, float_range(-1.0, 1.0, 512)).map(|_| ())
}

/// 64 floats each side of `(j + 1/2) ln 2` for every `j` whose point lies between the
/// underflow and overflow thresholds (`j = -150..=127`): the largest `|r|`.
fn check_reduction_boundaries(f: Scalar) -> Result<(), String> {
    let mut xs = Vec::new();
    for j in -150i32..=127 {
        let b = ((f64::from(j) + 0.5) * std::f64::consts::LN_2) as f32;
        let (mut up, mut down) = (b, b);
        xs.push(b);
        for _ in 0..64 {
            up = up.next_up();
            down = down.next_down();
            xs.push(up);
            xs.push(down);
        }
    }
    worst_within_2_ulp(f, xs).map(|_| ())
}

/// `e^88.7228317` finite and within 2 ulp (and the 4096 floats below it, all with `k = 128`
/// or 127); the next float, `FLT_MAX` and `+inf` give `+inf`.
fn check_overflow_edge(f: Scalar) -> Result<(), String> {
    let y = eval(f, OVERFLOW_EDGE)?;
    if !y.is_finite() {
        return Err(format!("e^88.7228317 = {y:e}, expected finite"));
    }
    let mut x = OVERFLOW_EDGE;
    for _ in 0..4096 {
        within(f, x, 2.0)?;
        x = x.next_down();
    }
    for x in [OVERFLOW_EDGE.next_up(), 100.0, f32::MAX, f32::INFINITY] {
        let y = eval(f, x)?;
        if y != f32::INFINITY {
            return Err(format!(
                "e^{x:e} ({:#010x}) = {y:e}, expected +inf",
                x.to_bits()
            ));
        }
    }
    Ok(())
}

/// `e^-87.3` within 2 ulp; below the normal range `0 <= y <= FLT_MIN`, `y` not `-0`, and
/// within one subnormal step of `e^x` (so `+0` where `e^x` is below one step); `+0` below the
/// cutoff, down to `-FLT_MAX`; `e^-inf = +0`.
fn check_underflow_edge(f: Scalar) -> Result<(), String> {
    within(f, -87.3, 2.0)?;
    let deep = [
        -104.0,
        -110.0,
        -150.0,
        -200.0,
        -1000.0,
        -1.0e10,
        -f32::MAX,
        f32::NEG_INFINITY,
    ];
    // Downward from -87.3, so a failure reports the first input that goes wrong.
    let sweep = float_range(-110.0, -87.3, 8);
    for x in sweep.into_iter().rev().chain(deep) {
        let reference = f64::from(x).exp();
        if reference >= f64::from(FLT_MIN) {
            within(f, x, 2.0)?;
            continue;
        }
        let y = eval(f, x)?;
        let ok = y.is_sign_positive()
            && (0.0..=FLT_MIN).contains(&y)
            && (f64::from(y) - reference).abs() <= SUBNORMAL_STEP;
        if !ok {
            return Err(format!(
                "e^{x:e} ({:#010x}) = {y:e} ({:#010x}), expected +0 or a subnormal within one \
                 step of {reference:e}",
                x.to_bits(),
                y.to_bits()
            ));
        }
    }
    Ok(())
}

/// NaN in (quiet and signalling, both signs, several payloads), NaN out, with no undefined
/// behaviour on the way.
fn check_nan_in_nan_out(f: Scalar) -> Result<(), String> {
    for bits in [
        0x7FC0_0000u32,
        0xFFC0_0000,
        0x7F80_0001,
        0xFF80_0001,
        0x7FA5_A5A5,
        0x7FBF_FFFF,
        0xFFFF_FFFF,
    ] {
        let x = f32::from_bits(bits);
        let y = eval(f, x)?;
        if !y.is_nan() {
            return Err(format!("e^NaN ({bits:#010x}) = {y:e}, expected NaN"));
        }
    }
    Ok(())
}

/// The value the array check puts in `y` before the call: a NaN payload no exp returns.
const Y_SENTINEL: u32 = 0x7F9D_0D0D;
/// The input past the end of `x` (and of the in-place buffer): `e^2 != 2`.
const X_GUARD: f32 = 2.0;

/// The array form gives the scalar's bits, writes exactly `n` (for `n = 0` nothing, and never
/// the element past the end), leaves `x` alone, and works in place.
fn check_array_matches_scalar_and_aliases(scalar: Scalar, array: Array) -> Result<(), String> {
    let mut rng = SplitMix64(0xA11A_5E5A_11A5);
    let mut inputs = special_values();
    inputs.extend((0..200).map(|_| rng.uniform(-110.0, 95.0)));
    let total = inputs.len();
    for n in [
        0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100, total,
    ] {
        let expected: Vec<u32> = inputs[..n].iter().map(|&v| scalar(v).to_bits()).collect();
        let mut x = inputs[..n].to_vec();
        x.push(X_GUARD);
        let x_before: Vec<u32> = x.iter().map(|v| v.to_bits()).collect();
        let mut y = vec![f32::from_bits(Y_SENTINEL); n + 1];
        array(Some(&x), &mut y, n);
        if let Some(what) = ub::take() {
            return Err(format!("n = {n}: undefined behaviour: {what}"));
        }
        let got: Vec<u32> = y[..n].iter().map(|v| v.to_bits()).collect();
        if let Some(i) = (0..n).find(|&i| got[i] != expected[i]) {
            return Err(format!(
                "n = {n}: y[{i}] = {:#010x}, the scalar gives {:#010x} for x = {:e}",
                got[i], expected[i], x[i]
            ));
        }
        if y[n].to_bits() != Y_SENTINEL {
            return Err(format!("n = {n}: y[n] (one past the end) was written"));
        }
        if x.iter().map(|v| v.to_bits()).ne(x_before.iter().copied()) {
            return Err(format!("n = {n}: x was written"));
        }

        let mut buf = inputs[..n].to_vec();
        buf.push(X_GUARD);
        array(None, &mut buf, n);
        if let Some(what) = ub::take() {
            return Err(format!("n = {n}, in place: undefined behaviour: {what}"));
        }
        let got: Vec<u32> = buf[..n].iter().map(|v| v.to_bits()).collect();
        if let Some(i) = (0..n).find(|&i| got[i] != expected[i]) {
            return Err(format!(
                "n = {n}, in place: x[{i}] = {:#010x}, the scalar gives {:#010x}",
                got[i], expected[i]
            ));
        }
        if buf[n].to_bits() != X_GUARD.to_bits() {
            return Err(format!(
                "n = {n}, in place: x[n] (one past the end) was written"
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The catalogue on the real kernel.

/// The crate's array forms in the C shape.
fn kernel_array(x: Option<&[f32]>, y: &mut [f32], n: usize) {
    match x {
        Some(x) => taylor::exp_f32(&x[..n], &mut y[..n]).expect("equal lengths"),
        None => taylor::exp_f32_in_place(&mut y[..n]),
    }
}

#[test]
fn hand_example() {
    check_hand_example(&taylor::expf).unwrap();
}

#[test]
fn million_samples_within_2_ulp() {
    check_million_samples_within_2_ulp(&taylor::expf).unwrap();
}

#[test]
fn sweep_of_minus_one_to_one() {
    check_sweep_of_minus_one_to_one(&taylor::expf).unwrap();
}

#[test]
fn reduction_boundaries() {
    check_reduction_boundaries(&taylor::expf).unwrap();
}

#[test]
fn overflow_edge() {
    check_overflow_edge(&taylor::expf).unwrap();
}

#[test]
fn underflow_edge() {
    check_underflow_edge(&taylor::expf).unwrap();
}

#[test]
fn nan_in_nan_out() {
    check_nan_in_nan_out(&taylor::expf).unwrap();
}

#[test]
fn array_matches_scalar_and_aliases() {
    check_array_matches_scalar_and_aliases(&taylor::expf, &kernel_array).unwrap();
}

#[test]
fn array_length_mismatch_is_an_error() {
    let mut y = [0.0f32; 2];
    assert_eq!(
        taylor::exp_f32(&[1.0; 3], &mut y),
        Err(activation_kernels::Error::LengthMismatch { src: 3, dst: 2 })
    );
}

/// The module's bound: 1.21 ulp on the million samples (the catalogue asks for 2).
#[test]
fn million_samples_meet_the_modules_bound() {
    let mut rng = SplitMix64(0x7A11_0E5F_2024_0906);
    let f: Scalar = &taylor::expf;
    let worst = worst_within_2_ulp(f, (0..1_000_000).map(|_| rng.uniform(-87.34, 88.72))).unwrap();
    eprintln!("worst error on the million samples: {worst:.4} ulp");
    assert!(worst <= 1.25, "worst {worst} ulp");
}

/// The ordered integer of a float: adjacent floats differ by one.
fn ordered(x: f32) -> i64 {
    let b = x.to_bits() as i32;
    if b < 0 {
        -i64::from(b & 0x7FFF_FFFF)
    } else {
        i64::from(b)
    }
}

fn unordered(k: i64) -> f32 {
    if k < 0 {
        f32::from_bits(0x8000_0000 | (-k) as u32)
    } else {
        f32::from_bits(k as u32)
    }
}

/// The differential check: the Taylor kernel and the crate's exact exp (a different,
/// minimax, algorithm) within 2 ulp of each other on every 64th float of `[-87.33, 88.72]`
/// where both results are normal.
#[test]
fn taylor_and_exact_exp_agree_within_2_ulp() {
    let (lo, hi) = (ordered(-87.33), ordered(88.72));
    let (mut worst, mut worst_x, mut compared) = (0i64, 0.0f32, 0usize);
    let mut k = lo;
    while k <= hi {
        let x = unordered(k);
        let (a, b) = (taylor::expf(x), exact::exp(x));
        if a.is_normal() && b.is_normal() {
            let d = (ordered(a) - ordered(b)).abs();
            if d > worst {
                (worst, worst_x) = (d, x);
            }
            compared += 1;
        }
        k += 64;
    }
    eprintln!("{compared} inputs compared, worst difference {worst} ulp at x = {worst_x:e}");
    assert!(compared > 30_000_000, "{compared} inputs compared");
    assert!(
        worst <= 2,
        "taylor::expf and exact::exp differ by {worst} ulp at x = {worst_x:e} ({:#010x}): \
         {:e} vs {:e}",
        worst_x.to_bits(),
        taylor::expf(worst_x),
        exact::exp(worst_x)
    );
}

// ---------------------------------------------------------------------------------------------
// The mutants of the pitfall table.

/// The kernel (`Reference`) and its single-pitfall variants s01 to s07.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Reference,
    /// Pitfall 1: the Taylor polynomial stops at `r^6`.
    S01DegreeSix,
    /// Pitfall 2: the reduction in one product, `x - k * 0.69314718f`.
    S02SingleProduct,
    /// Pitfall 3: `k` by truncation, `(int)(x / ln 2)`.
    S03TruncatedK,
    /// Pitfall 4: `2^k` built in one piece.
    S04OnePieceScale,
    /// Pitfall 5: the overflow test written `x >= 88.7228317f`.
    S05OverflowGe,
    /// Pitfall 6: no NaN check before the conversion to `int`.
    S06NoNanCheck,
    /// Pitfall 7: no underflow cutoff.
    S07NoUnderflowCutoff,
}

/// C's `(int)f`: truncation toward zero. NaN or a value outside `int` is undefined behaviour;
/// it is recorded, and the result is what x86's `cvttss2si` gives (`INT_MIN`).
fn c_int(f: f32) -> i32 {
    let v = f64::from(f);
    if v.is_nan() || v <= -2_147_483_649.0 || v >= 2_147_483_648.0 {
        ub::record("float-to-int conversion of NaN or of a value outside int");
        i32::MIN
    } else {
        f as i32
    }
}

/// The module's `pow2i(k)`: `float(bits((k + 127) << 23))` in C `int` arithmetic. A negative
/// `k + 127` or a shift past `INT_MAX` is undefined behaviour (recorded); the bits are what the
/// shift instruction gives.
fn c_pow2i(k: i32) -> f32 {
    let e = k.wrapping_add(127);
    if !(0..=255).contains(&e) {
        ub::record("left shift of a negative value or past INT_MAX in pow2i");
    }
    f32::from_bits((e as u32) << 23)
}

/// The kernel written out step by step, with one pitfall switched in by `v`.
fn model(v: Variant, x: f32) -> f32 {
    use Variant::*;
    if v != S06NoNanCheck && x.is_nan() {
        return f32::NAN;
    }
    let overflows = if v == S05OverflowGe {
        x >= constants::OVERFLOW
    } else {
        x > constants::OVERFLOW
    };
    if overflows {
        return f32::INFINITY;
    }
    if v != S07NoUnderflowCutoff && x < constants::UNDERFLOW {
        return 0.0;
    }
    let (k, kf) = if v == S03TruncatedK {
        let k = c_int(x / std::f32::consts::LN_2);
        (k, k as f32)
    } else {
        let kf = (x * constants::LOG2E + constants::MAGIC) - constants::MAGIC;
        (c_int(kf), kf)
    };
    // s02 writes the pitfall's literal, the float nearest ln 2.
    #[allow(clippy::approx_constant)]
    let r = if v == S02SingleProduct {
        x - kf * 0.693_147_18
    } else {
        (x - kf * constants::L_HI) - kf * constants::L_LO
    };
    let coeffs: &[f32] = if v == S01DegreeSix {
        &constants::COEFFS[1..]
    } else {
        &constants::COEFFS
    };
    let mut p = coeffs[0];
    for &c in &coeffs[1..] {
        p = p * r + c;
    }
    if v == S04OnePieceScale {
        return p * c_pow2i(k);
    }
    let k1 = k / 2;
    let k2 = k.wrapping_sub(k1);
    p * c_pow2i(k1) * c_pow2i(k2)
}

fn mutant(v: Variant) -> impl Fn(f32) -> f32 {
    move |x| model(v, x)
}

/// Pitfall 8, first form: `for (i = 0; i < n - 1; i++)`, the last element unwritten.
fn mutant_s08_array(x: Option<&[f32]>, y: &mut [f32], n: usize) {
    for i in 0..n.saturating_sub(1) {
        let v = x.map_or(y[i], |x| x[i]);
        y[i] = taylor::expf(v);
    }
}

/// Pitfall 8, second form: `for (i = 0; i <= n; i++)`, one past the end written.
fn mutant_s09_array(x: Option<&[f32]>, y: &mut [f32], n: usize) {
    for i in 0..=n {
        let v = x.map_or(y[i], |x| x[i]);
        y[i] = taylor::expf(v);
    }
}

/// The model without a pitfall is the kernel, bit for bit and without undefined behaviour, so
/// every mutant below differs from the kernel in its one place only.
#[test]
fn model_reference_is_the_kernel() {
    let reference = mutant(Variant::Reference);
    let mut rng = SplitMix64(0x0DE1_0DE1);
    let xs = special_values()
        .into_iter()
        .chain(float_range(-120.0, 100.0, 997))
        .chain((0..100_000).map(|_| rng.uniform(-110.0, 95.0)));
    for x in xs {
        let got = eval(&reference, x).unwrap();
        assert_eq!(
            got.to_bits(),
            taylor::expf(x).to_bits(),
            "x = {x:e} ({:#010x})",
            x.to_bits()
        );
    }
    // The model passes the whole catalogue too.
    let f: Scalar = &reference;
    check_hand_example(f).unwrap();
    check_overflow_edge(f).unwrap();
    check_underflow_edge(f).unwrap();
    check_nan_in_nan_out(f).unwrap();
    check_reduction_boundaries(f).unwrap();
}

/// Asserts that `check` rejects the mutant, and returns its message.
fn assert_caught(result: Result<(), String>, mutant: &str, check: &str) -> String {
    match result {
        Err(msg) => {
            eprintln!("mutant {mutant} caught by {check}: {msg}");
            msg
        }
        Ok(()) => panic!("mutant {mutant} survives {check}"),
    }
}

#[test]
fn mutant_s01_is_caught_by_million_samples_within_2_ulp() {
    let m = mutant(Variant::S01DegreeSix);
    let msg = assert_caught(check_million_samples_within_2_ulp(&m), "s01", "million");
    assert!(msg.contains("ulp"), "{msg}");
}

#[test]
fn mutant_s02_is_caught_by_million_samples_within_2_ulp() {
    let m = mutant(Variant::S02SingleProduct);
    let msg = assert_caught(check_million_samples_within_2_ulp(&m), "s02", "million");
    assert!(msg.contains("ulp"), "{msg}");
}

#[test]
fn mutant_s03_is_caught_by_million_samples_within_2_ulp() {
    let m = mutant(Variant::S03TruncatedK);
    let msg = assert_caught(check_million_samples_within_2_ulp(&m), "s03", "million");
    assert!(msg.contains("ulp"), "{msg}");
}

#[test]
fn mutant_s04_is_caught_by_overflow_edge() {
    let m = mutant(Variant::S04OnePieceScale);
    assert_caught(check_overflow_edge(&m), "s04", "overflow_edge");
}

#[test]
fn mutant_s04_is_caught_by_underflow_edge() {
    let m = mutant(Variant::S04OnePieceScale);
    assert_caught(check_underflow_edge(&m), "s04", "underflow_edge");
}

#[test]
fn mutant_s05_is_caught_by_overflow_edge() {
    let m = mutant(Variant::S05OverflowGe);
    let msg = assert_caught(check_overflow_edge(&m), "s05", "overflow_edge");
    assert!(msg.contains("expected finite"), "{msg}");
}

#[test]
fn mutant_s06_is_caught_by_nan_in_nan_out() {
    let m = mutant(Variant::S06NoNanCheck);
    let msg = assert_caught(check_nan_in_nan_out(&m), "s06", "nan_in_nan_out");
    assert!(msg.contains("undefined behaviour"), "{msg}");
}

#[test]
fn mutant_s07_is_caught_by_underflow_edge() {
    let m = mutant(Variant::S07NoUnderflowCutoff);
    assert_caught(check_underflow_edge(&m), "s07", "underflow_edge");
}

#[test]
fn mutant_s08_is_caught_by_array_matches_scalar_and_aliases() {
    let msg = assert_caught(
        check_array_matches_scalar_and_aliases(&taylor::expf, &mutant_s08_array),
        "s08",
        "array_matches_scalar_and_aliases",
    );
    assert!(msg.contains("y[0]"), "{msg}");
}

#[test]
fn mutant_s09_is_caught_by_array_matches_scalar_and_aliases() {
    let msg = assert_caught(
        check_array_matches_scalar_and_aliases(&taylor::expf, &mutant_s09_array),
        "s09",
        "array_matches_scalar_and_aliases",
    );
    assert!(msg.contains("one past the end"), "{msg}");
}
