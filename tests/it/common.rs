//! Helpers shared by the integration tests: the golden vectors, the digest inputs, ulp errors
//! and the special values.
#![allow(dead_code, clippy::approx_constant)]

use activation_kernels::Func;
use sha2::{Digest, Sha256};

/// The `(input, output)` bit pairs of `tests/data/<name>.txt`.
pub fn vectors(name: &str) -> Vec<(u32, u32)> {
    let path = format!("{}/tests/data/{name}.txt", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut it = l.split_whitespace();
            let a = u32::from_str_radix(it.next().unwrap(), 16).unwrap();
            let b = u32::from_str_radix(it.next().unwrap(), 16).unwrap();
            (a, b)
        })
        .collect()
}

/// The digests of `tests/data/DIGESTS.txt`, by function name.
pub fn digests() -> Vec<(String, String)> {
    let path = format!("{}/tests/data/DIGESTS.txt", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f[1], "4099");
            (f[0].to_string(), f[3].to_string())
        })
        .collect()
}

/// Every 4099th bit pattern, `0, 4099, ...` below `2^32`, as floats.
pub fn digest_inputs() -> Vec<f32> {
    (0..=u32::MAX / 4099)
        .map(|k| f32::from_bits(k * 4099))
        .collect()
}

/// SHA-256 (hex) of the little-endian bytes of `v`.
pub fn sha256_hex(v: &[f32]) -> String {
    let mut h = Sha256::new();
    for x in v {
        h.update(x.to_le_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The special values: signed zeros, infinities, NaNs with payloads and both signs,
/// subnormals, FLT_MIN, FLT_MAX, and every threshold of the spec with its neighbours.
pub fn special_values() -> Vec<f32> {
    let mut bits: Vec<u32> = vec![
        0x0000_0000,
        0x8000_0000,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
        0xFFC0_0000,
        0x7F80_0001,
        0xFF80_0001,
        0x7FA5_A5A5,
        0xFFFF_FFFF,
        0x7FBF_FFFF,
        0x0000_0001,
        0x8000_0001,
        0x0000_0002,
        0x007F_FFFF,
        0x807F_FFFF,
        0x0040_0000,
        0x0080_0000,
        0x8080_0000,
        0x7F7F_FFFF,
        0xFF7F_FFFF,
        0x3F80_0000,
        0xBF80_0000,
    ];
    let thresholds: [f32; 19] = [
        88.722_83,
        -103.972_08,
        -87.336_54,
        -87.3,
        88.3,
        88.376_26,
        0.6,
        -0.6,
        0.5,
        -0.5,
        64.0,
        -64.0,
        5.6,
        -5.6,
        1.175_494_4e-38,
        0.707_106_77,
        1.414_213_5,
        2.0,
        -2.0,
    ];
    for t in thresholds {
        let b = t.to_bits();
        for d in -3i32..=3 {
            bits.push(b.wrapping_add_signed(d));
        }
    }
    bits.into_iter().map(f32::from_bits).collect()
}

/// Every `step`-th float of `[lo, hi]` in increasing order (by the ordered bit pattern).
pub fn float_range(lo: f32, hi: f32, step: usize) -> Vec<f32> {
    let (a, b) = (ordered(lo), ordered(hi));
    (a..=b).step_by(step).map(unordered).collect()
}

/// [`float_range`] in pieces of at most `n` floats, in order: for sweeps too long to hold
/// (with their outputs, on every instruction set) at once.
pub fn float_range_pieces(
    lo: f32,
    hi: f32,
    step: usize,
    n: usize,
) -> impl Iterator<Item = Vec<f32>> {
    let (a, b) = (ordered(lo), ordered(hi));
    let span = (step * (n - 1)) as i64;
    (a..=b).step_by(step * n).map(move |start| {
        (start..=b.min(start + span))
            .step_by(step)
            .map(unordered)
            .collect()
    })
}

fn ordered(x: f32) -> i64 {
    let b = x.to_bits() as i32;
    if b < 0 {
        -((b & 0x7FFF_FFFF) as i64)
    } else {
        b as i64
    }
}

fn unordered(k: i64) -> f32 {
    if k < 0 {
        f32::from_bits(0x8000_0000 | (-k) as u32)
    } else {
        f32::from_bits(k as u32)
    }
}

/// The spec's ulp measure, from the accuracy tool (`tools/accuracy`; one definition for the
/// tool and the tests).
#[allow(unused_imports)]
pub use ak_accuracy::ulp_error;

/// Runs `f` for every available instruction set.
pub fn for_each_isa(mut f: impl FnMut(activation_kernels::Isa)) {
    for isa in activation_kernels::Isa::available() {
        f(isa);
    }
}

/// The functions with golden vectors and digests for the exact kernels.
pub fn golden_funcs() -> Vec<Func> {
    Func::ALL.into_iter().filter(|f| *f != Func::Silu).collect()
}

/// `exact::map` or `fast::map`.
pub type MapFn =
    fn(Func, activation_kernels::Isa, &[f32], &mut [f32]) -> Result<(), activation_kernels::Error>;
/// `exact::map_in_place` or `fast::map_in_place`.
pub type MapInPlaceFn =
    fn(Func, activation_kernels::Isa, &mut [f32]) -> Result<(), activation_kernels::Error>;

/// Both modes by name, with their slice drivers.
pub fn modes() -> [(&'static str, MapFn, MapInPlaceFn); 2] {
    use activation_kernels::{exact, fast};
    [
        (
            "exact",
            exact::map as MapFn,
            exact::map_in_place as MapInPlaceFn,
        ),
        (
            "fast",
            fast::map as MapFn,
            fast::map_in_place as MapInPlaceFn,
        ),
    ]
}

/// The first index where two outputs differ in bits, described.
pub fn first_difference(x: &[f32], a: &[f32], b: &[f32]) -> Option<String> {
    (0..a.len())
        .find(|&i| a[i].to_bits() != b[i].to_bits())
        .map(|i| {
            format!(
                "x[{i}]={:08x}: {:08x} vs {:08x}",
                x[i].to_bits(),
                a[i].to_bits(),
                b[i].to_bits()
            )
        })
}

/// A single-value kernel such as `exact::exp`.
pub type ScalarFn = fn(f32) -> f32;

/// A small deterministic generator (splitmix64) for test data.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * u
    }
    /// `n` uniform values.
    pub fn vec(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}

/// The bit patterns in logical order, so that NaNs compare equal to themselves.
pub fn bits<'a>(a: impl IntoIterator<Item = &'a f32>) -> Vec<u32> {
    a.into_iter().map(|v| v.to_bits()).collect()
}

/// A session of mode `M` pinned to `isa` and `threads`, splitting work whatever its size.
pub fn pinned_session<M: activation_kernels::Mode>(
    isa: activation_kernels::Isa,
    threads: usize,
) -> activation_kernels::Session<M> {
    activation_kernels::Session::<M>::new()
        .with_isa(isa)
        .unwrap()
        .with_threads(threads)
        .unwrap()
        .with_parallel_threshold(0)
}

/// Whether the long versions of the sweeps run: `AK_EXTENSIVE=1` (any value but `0` or empty).
/// By default each sweep runs a strided sample that keeps `cargo test --release` short.
pub fn extensive() -> bool {
    std::env::var("AK_EXTENSIVE").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The thread's floating-point control register: MXCSR on x86-64, FPCR on aarch64 ([`FP_DEFAULT`]
/// elsewhere).
pub fn fp_control() -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut v = 0u32;
        // SAFETY: `stmxcsr` writes 4 bytes to the address of the local `v`.
        unsafe {
            std::arch::asm!("stmxcsr [{p}]", p = in(reg) &mut v as *mut u32, options(nostack));
        }
        v
    }
    #[cfg(target_arch = "aarch64")]
    {
        let v: u64;
        // SAFETY: `mrs` reads FPCR into a general register; EL0 may read it.
        unsafe {
            std::arch::asm!("mrs {v}, fpcr", v = out(reg) v, options(nomem, nostack));
        }
        v as u32
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        FP_DEFAULT
    }
}

/// Sets the thread's floating-point control register (MXCSR on x86-64, FPCR on aarch64;
/// nothing elsewhere).
pub fn set_fp_control(v: u32) {
    #[cfg(target_arch = "x86_64")]
    {
        let v = v & 0xFFFF;
        // SAFETY: `ldmxcsr` reads 4 bytes from the address of the local `v`; the reserved bits
        // are clear, so it cannot fault.
        unsafe {
            std::arch::asm!("ldmxcsr [{p}]", p = in(reg) &v as *const u32, options(nostack, readonly));
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        // SAFETY: `msr` writes FPCR; EL0 may write it, and reserved bits are ignored.
        unsafe {
            std::arch::asm!("msr fpcr, {v}", v = in(reg) v as u64, options(nomem, nostack));
        }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = v;
    }
}

/// The control bits of the register of [`fp_control`]: on x86-64 without MXCSR's six sticky
/// exception flags (bits 0-5); FPCR holds no flags (they are in FPSR).
pub fn control_bits(v: u32) -> u32 {
    if cfg!(target_arch = "x86_64") {
        v & !0x3F
    } else {
        v
    }
}

/// The default control register: on x86-64 every exception masked, round to nearest, FTZ and
/// DAZ off; FPCR all zeros (round to nearest, no flushing) on aarch64 Linux.
pub const FP_DEFAULT: u32 = if cfg!(target_arch = "x86_64") {
    0x1F80
} else {
    0
};
/// Flush-to-zero: x86-64's FTZ and DAZ (what `-Ofast` and `set_flush_denormal` set), aarch64's
/// FZ (bit 24, which flushes subnormal inputs and results).
pub const FP_FLUSH_TO_ZERO: u32 = if cfg!(target_arch = "x86_64") {
    FP_DEFAULT | 0x8040
} else {
    FP_DEFAULT | (1 << 24)
};
/// Round toward zero (MXCSR's RC, bits 13-14; FPCR's RMode, bits 22-23).
pub const FP_TOWARD_ZERO: u32 = if cfg!(target_arch = "x86_64") {
    FP_DEFAULT | 0x6000
} else {
    FP_DEFAULT | (0x3 << 22)
};

/// Runs `f` with the thread's control register set to `v`, then restores the previous value
/// (also when `f` panics).
pub fn with_fp_control<R>(v: u32, f: impl FnOnce() -> R) -> R {
    struct Restore(u32);
    impl Drop for Restore {
        fn drop(&mut self) {
            set_fp_control(self.0);
        }
    }
    let _restore = Restore(fp_control());
    set_fp_control(v);
    f()
}

/// The single-value exact function of `func`.
pub fn scalar_fn(func: Func) -> ScalarFn {
    use activation_kernels::exact;
    match func {
        Func::Exp => exact::exp,
        Func::ExpNonPositive => exact::exp_nonpositive,
        Func::Log => exact::log,
        Func::Sigmoid => exact::sigmoid,
        Func::Tanh => exact::tanh,
        Func::Erf => exact::erf,
        Func::OnePlusErf => exact::one_plus_erf,
        Func::GeluErf => exact::gelu_erf,
        Func::GeluTanh => exact::gelu_tanh,
        Func::Silu => exact::silu,
    }
}

/// The canonical NaN for any NaN, else `x`.
pub fn canon(x: f32) -> f32 {
    if x.is_nan() {
        f32::from_bits(0x7FC0_0000)
    } else {
        x
    }
}

/// The canonical sum of exact mode, written out: 16 interleaved partials, then the tree.
pub fn canonical_sum(v: impl Iterator<Item = f32>) -> f32 {
    let mut p = [0f32; 16];
    for (i, x) in v.enumerate() {
        p[i % 16] += x;
    }
    for half in [8, 4, 2, 1] {
        for j in 0..half {
            p[j] += p[j + half];
        }
    }
    p[0]
}

/// Exact layer norm of an ordinary row, written out in the canonical order.
pub fn layer_norm_reference(x: &[f32], g: &[f32], b: &[f32], eps: f32) -> Vec<f32> {
    let n = x.len() as f32;
    let mean = canonical_sum(x.iter().copied()) / n;
    let mut var = canonical_sum(x.iter().map(|&v| (v - mean) * (v - mean))) / n;
    // The mean's shift: where the mean of the differences `c` is large beside the spread
    // (`c^2 > 2^-40 (var + eps)`), the mean is `mean + c` rounded plus the mean of the
    // differences from that, and the variance is summed again.
    let c = canonical_sum(x.iter().map(|&v| v - mean)) / n;
    let (mean, shift) = if c * c > 2f32.powi(-40) * (var + eps) {
        let mean = mean + c;
        let c = canonical_sum(x.iter().map(|&v| v - mean)) / n;
        var = canonical_sum(x.iter().map(|&v| ((v - mean) - c) * ((v - mean) - c))) / n;
        (mean, c)
    } else {
        (mean, 0.0)
    };
    let sd = (var + eps).sqrt();
    x.iter()
        .zip(g)
        .zip(b)
        .map(|((&x, &g), &b)| canon(((x - mean) - shift) / sd * g + b))
        .collect()
}

/// Exact softmax of a row written out (a fully masked row gives zeros, a NaN row NaNs).
pub fn softmax_reference(row: &[f32]) -> Vec<f32> {
    if row.iter().any(|x| x.is_nan()) {
        return vec![canon(f32::NAN); row.len()];
    }
    let m = row
        .iter()
        .fold(f32::NEG_INFINITY, |m, &x| if x > m { x } else { m });
    if m == f32::NEG_INFINITY {
        return vec![0.0; row.len()];
    }
    let e: Vec<f32> = row
        .iter()
        .map(|&x| activation_kernels::exact::exp_nonpositive(if x == m { 0.0 } else { x - m }))
        .collect();
    let s = canonical_sum(e.iter().copied());
    e.iter().map(|&e| e / s).collect()
}

/// Exact `a b` written out: each element from `+0`, in increasing k, a product then a sum.
pub fn gemm_reference(
    a: &ndarray::ArrayRef2<f32>,
    b: &ndarray::ArrayRef2<f32>,
) -> ndarray::Array2<f32> {
    ndarray::Array2::from_shape_fn((a.nrows(), b.ncols()), |(i, j)| {
        let mut acc = 0.0f32;
        for k in 0..a.ncols() {
            let p = a[[i, k]] * b[[k, j]];
            acc += p;
        }
        canon(acc)
    })
}

/// A deterministic `[r, c]` matrix from a hash of `(i, j, seed)`: values in `[-0.5, 0.5)` times
/// `scale`.
pub fn hashed_matrix(r: usize, c: usize, seed: u64, scale: f32) -> ndarray::Array2<f32> {
    ndarray::Array2::from_shape_fn((r, c), |(i, j)| {
        let h = (i as u64 * 1_000_003 + j as u64 * 7919 + seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((h >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale
    })
}

/// Like [`hashed_matrix`], with mixed magnitudes: each value times `2^e`, `e` in `-6..=6`.
pub fn hashed_mixed_matrix(r: usize, c: usize, seed: u64) -> ndarray::Array2<f32> {
    ndarray::Array2::from_shape_fn((r, c), |(i, j)| {
        let h = (i as u64 * 1_000_003 + j as u64 * 7919 + seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mantissa = (h >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
        mantissa * 2f32.powi(((h >> 20) % 13) as i32 - 6)
    })
}
