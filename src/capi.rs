//! The C interface, behind the cargo feature `capi`; declared in `include/activation_kernels.h`.
//!
//! * `tl_expf` and `tl_exp_f32`: the interface of `taylor-expf.md`, on the Taylor reference
//!   ([`crate::taylor`]).
//! * `ak_exp`, `ak_log`, `ak_sigmoid`, `ak_tanh`, `ak_erf`, `ak_gelu_erf`, `ak_gelu_tanh`,
//!   `ak_silu`: the exact kernels ([`crate::exact`]), with array forms `ak_exp_f32` and so on,
//!   which run on the instruction set `ACTIVATION_KERNELS_ISA` forces or, if it is unset or
//!   names one this CPU lacks, the widest one it has (every one gives the same bits).
//!
//! # Building the C library
//!
//! The `[lib]` target stays a plain Rust library; the C library is built on demand:
//!
//! ```sh
//! cargo rustc --release --features capi --crate-type staticlib   # target/release/libactivation_kernels.a
//! cargo rustc --release --features capi --crate-type cdylib      # libactivation_kernels.so / .dylib / .dll
//! cc -I include prog.c target/release/libactivation_kernels.a -lpthread -ldl -lm -o prog
//! ```
//!
//! The system libraries the static library needs on a given platform are printed by adding
//! `-- --print native-static-libs` to the `cargo rustc` command.
//!
//! # Arrays
//!
//! Every array function takes `(const float *x, float *y, int64_t n)` and sets
//! `y[i] = f(x[i])` for `0 <= i < n`:
//!
//! * `n <= 0`: nothing is read or written (the pointers may be null).
//! * `y == x`: in place.
//! * Any other overlap of `x[0..n]` and `y[0..n]`: the result is as if `x` had been copied
//!   first (the function copies it).
//! * Refused, with nothing read or written: a null `x` or `y` with `n > 0`, a pointer not
//!   aligned for `float`, or `n` floats larger than the address space allows. The `ak_*_f32`
//!   functions return a status ([`AK_OK`], or [`AK_ERR_NULL`], [`AK_ERR_MISALIGNED`],
//!   [`AK_ERR_LENGTH`]); `tl_exp_f32` keeps the module's `void` signature and returns without
//!   doing anything, so a caller who needs to know checks its pointers first.
//!
//! # Unsafe code
//!
//! The crate keeps `unsafe` in `src/lanes/`. This module is the one exception: C hands over raw
//! pointers, and turning them into slices cannot be safe. That happens in one helper,
//! `c_arrays`, after the checks above; everything after it is safe Rust on slices.

use core::ffi::c_int;
use std::sync::OnceLock;

use crate::{Error, Func, Isa, exact, taylor};

/// Status of the `ak_*_f32` functions: success (also for `n <= 0`).
pub const AK_OK: c_int = 0;
/// Status: `x` or `y` is null and `n > 0`. Nothing was written.
pub const AK_ERR_NULL: c_int = 1;
/// Status: `x` or `y` is not aligned for `float`. Nothing was written.
pub const AK_ERR_MISALIGNED: c_int = 2;
/// Status: `n` floats exceed the largest object the address space allows. Nothing was written.
pub const AK_ERR_LENGTH: c_int = 3;
/// Status: the kernel failed (not expected: the instruction set is checked before use).
pub const AK_ERR_INTERNAL: c_int = 4;

/// Where the input of an array call is.
enum Input<'a> {
    /// `y == x`: the output slice holds the input.
    InPlace,
    /// A slice that does not overlap the output.
    Slice(&'a [f32]),
    /// A copy of an input that partly overlaps the output.
    Copied(Vec<f32>),
}

/// The C arrays `x[0..n]` and `y[0..n]` as slices: `Ok(None)` for `n <= 0`, an `AK_ERR_*`
/// status for a call that is refused.
///
/// # Safety
///
/// For `n > 0`, a non-null, aligned `x` must be valid for reading `n` floats and a non-null,
/// aligned `y` valid for reading and writing `n` floats, and no other code may write `x` or
/// access `y` while the slices live (`'a`, the duration of the C call).
unsafe fn c_arrays<'a>(
    x: *const f32,
    y: *mut f32,
    n: i64,
) -> Result<Option<(Input<'a>, &'a mut [f32])>, c_int> {
    if n <= 0 {
        return Ok(None);
    }
    if x.is_null() || y.is_null() {
        return Err(AK_ERR_NULL);
    }
    if !x.is_aligned() || !y.is_aligned() {
        return Err(AK_ERR_MISALIGNED);
    }
    let len = match usize::try_from(n) {
        Ok(len) if len <= isize::MAX as usize / size_of::<f32>() => len,
        _ => return Err(AK_ERR_LENGTH),
    };
    let bytes = len * size_of::<f32>();
    let (xa, ya) = (x as usize, y as usize);
    let input = if xa == ya {
        Input::InPlace
    } else if xa < ya.wrapping_add(bytes) && ya < xa.wrapping_add(bytes) {
        // SAFETY: `x` is non-null, aligned and valid for `len` reads (the caller's contract),
        // and `len * 4 <= isize::MAX`; the shared slice is dropped (copied) before the mutable
        // one over `y` is made.
        Input::Copied(unsafe { std::slice::from_raw_parts(x, len) }.to_vec())
    } else {
        // SAFETY: as above; the ranges do not overlap, so this shared slice and the mutable one
        // below never alias.
        Input::Slice(unsafe { std::slice::from_raw_parts(x, len) })
    };
    // SAFETY: `y` is non-null, aligned and valid for `len` reads and writes (the caller's
    // contract), `len * 4 <= isize::MAX`, and no live slice over `x` overlaps it.
    let out = unsafe { std::slice::from_raw_parts_mut(y, len) };
    Ok(Some((input, out)))
}

/// Runs `map` (or `map_in_place` when `y == x`) on the C arrays; returns an `AK_*` status.
///
/// # Safety
///
/// The contract of [`c_arrays`].
unsafe fn run_arrays(
    x: *const f32,
    y: *mut f32,
    n: i64,
    map: impl FnOnce(&[f32], &mut [f32]) -> Result<(), Error>,
    map_in_place: impl FnOnce(&mut [f32]) -> Result<(), Error>,
) -> c_int {
    // SAFETY: the caller passes on the contract of `c_arrays`.
    let result = match unsafe { c_arrays(x, y, n) } {
        Ok(Some((Input::InPlace, out))) => map_in_place(out),
        Ok(Some((Input::Slice(src), out))) => map(src, out),
        Ok(Some((Input::Copied(src), out))) => map(&src, out),
        Ok(None) => Ok(()),
        Err(status) => return status,
    };
    match result {
        Ok(()) => AK_OK,
        Err(_) => AK_ERR_INTERNAL,
    }
}

/// `e^x` by the Taylor reference ([`taylor::expf`]): within 2 ulp where `e^x` is normal,
/// `+inf` above 88.7228317, `+0` at `-inf` and below -103.97208, NaN for NaN.
#[unsafe(no_mangle)]
pub extern "C" fn tl_expf(x: f32) -> f32 {
    taylor::expf(x)
}

/// `y[i] = tl_expf(x[i])` for `0 <= i < n` ([`taylor::exp_f32`]); `y == x` allowed (in place),
/// any other overlap as if `x` were copied first. `n <= 0` does nothing. A null or misaligned
/// pointer with `n > 0` is refused: the function returns without reading or writing anything
/// (the module's signature is `void`, so the refusal is silent).
///
/// # Safety
///
/// For `n > 0`, non-null aligned `x` and `y` must be valid for reading `n` floats, `y` also for
/// writing them, and no other thread may access them during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_exp_f32(x: *const f32, y: *mut f32, n: i64) {
    // SAFETY: this function's contract is that of `run_arrays`.
    unsafe {
        run_arrays(x, y, n, taylor::exp_f32, |d| {
            taylor::exp_f32_in_place(d);
            Ok(())
        })
    };
}

/// The instruction set of the `ak_*_f32` functions: the one `ACTIVATION_KERNELS_ISA` forces,
/// or [`Isa::detect`] if it is unset, unknown or unavailable here. Chosen once per process.
fn c_isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(|| Isa::preferred().unwrap_or_else(|_| Isa::detect()))
}

macro_rules! exact_c_fns {
    ($($func:expr, $name:ident, $scalar:ident, $array:ident, $what:literal;)*) => {$(
        #[doc = concat!("`", $what, "`, exact: [`exact::", stringify!($name), "`].")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $scalar(x: f32) -> f32 {
            exact::$name(x)
        }

        #[doc = concat!("`y[i] = ", stringify!($scalar), "(x[i])` for `0 <= i < n` ([`exact::map`]); ",
            "`y == x` allowed (in place), any other overlap as if `x` were copied first. ",
            "Returns [`AK_OK`] (also for `n <= 0`, which writes nothing), or, with nothing written, ",
            "[`AK_ERR_NULL`], [`AK_ERR_MISALIGNED`] or [`AK_ERR_LENGTH`].\n\n",
            "# Safety\n\n",
            "For `n > 0`, non-null aligned `x` and `y` must be valid for reading `n` floats, `y` ",
            "also for writing them, and no other thread may access them during the call.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $array(x: *const f32, y: *mut f32, n: i64) -> c_int {
            let isa = c_isa();
            // SAFETY: this function's contract is that of `run_arrays`.
            unsafe {
                run_arrays(
                    x,
                    y,
                    n,
                    |s, d| exact::map($func, isa, s, d),
                    |d| exact::map_in_place($func, isa, d),
                )
            }
        }
    )*};
}

exact_c_fns! {
    Func::Exp, exp, ak_exp, ak_exp_f32, "e^x";
    Func::Log, log, ak_log, ak_log_f32, "ln x";
    Func::Sigmoid, sigmoid, ak_sigmoid, ak_sigmoid_f32, "1 / (1 + e^-x)";
    Func::Tanh, tanh, ak_tanh, ak_tanh_f32, "tanh x";
    Func::Erf, erf, ak_erf, ak_erf_f32, "erf x";
    Func::GeluErf, gelu_erf, ak_gelu_erf, ak_gelu_erf_f32, "0.5 x (1 + erf(x / sqrt 2))";
    Func::GeluTanh, gelu_tanh, ak_gelu_tanh, ak_gelu_tanh_f32,
        "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))";
    Func::Silu, silu, ak_silu, ak_silu_f32, "x sigmoid(x)";
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;

    const INPUTS: [f32; 9] = [-3.0, -1.0, -0.5, 0.0, 0.25, 1.0, 2.0, 10.0, 100.0];

    pub fn taylor_scalar_and_array() {
        assert_eq!(tl_expf(1.0).to_bits(), 0x402D_F854);
        let mut y = [0.0f32; 9];
        // SAFETY: both arrays hold 9 floats.
        unsafe { tl_exp_f32(INPUTS.as_ptr(), y.as_mut_ptr(), 9) };
        for (x, y) in INPUTS.iter().zip(y) {
            assert_eq!(y.to_bits(), taylor::expf(*x).to_bits());
        }
    }

    pub fn in_place_and_partial_overlap() {
        let expect: Vec<u32> = INPUTS.iter().map(|&x| exact::tanh(x).to_bits()).collect();
        let mut v = INPUTS;
        // SAFETY: `v` holds 9 floats; x == y is allowed.
        let s = unsafe { ak_tanh_f32(v.as_ptr(), v.as_mut_ptr(), 9) };
        assert_eq!(s, AK_OK);
        assert_eq!(v.map(f32::to_bits).to_vec(), expect);

        // y = x + 1 over one buffer: y[i] = tanh(old x[i]).
        let mut buf = [0.0f32; 10];
        buf[..9].copy_from_slice(&INPUTS);
        let p = buf.as_mut_ptr();
        // SAFETY: `buf` holds 10 floats, so x[0..9] and y = x + 1 [0..9] are in bounds.
        let s = unsafe { ak_tanh_f32(p, p.add(1), 9) };
        assert_eq!(s, AK_OK);
        assert_eq!(
            buf[1..].iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            expect
        );
        // And the other way, y = x - 1.
        buf[1..].copy_from_slice(&INPUTS);
        let p = buf.as_mut_ptr();
        // SAFETY: as above, with x = buf + 1 and y = buf.
        let s = unsafe { ak_tanh_f32(p.add(1), p, 9) };
        assert_eq!(s, AK_OK);
        assert_eq!(
            buf[..9].iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            expect
        );
    }

    pub fn refusals_write_nothing() {
        let x = [1.0f32; 4];
        let mut y = [7.0f32; 5];
        // SAFETY: n <= 0 reads and writes nothing; null and misaligned pointers are refused
        // before any access.
        unsafe {
            assert_eq!(ak_exp_f32(x.as_ptr(), y.as_mut_ptr(), 0), AK_OK);
            assert_eq!(ak_exp_f32(x.as_ptr(), y.as_mut_ptr(), -5), AK_OK);
            assert_eq!(ak_exp_f32(std::ptr::null(), std::ptr::null_mut(), 0), AK_OK);
            assert_eq!(ak_exp_f32(std::ptr::null(), y.as_mut_ptr(), 4), AK_ERR_NULL);
            assert_eq!(ak_exp_f32(x.as_ptr(), std::ptr::null_mut(), 4), AK_ERR_NULL);
            let odd = (y.as_mut_ptr() as *mut u8).add(1) as *mut f32;
            assert_eq!(ak_exp_f32(x.as_ptr(), odd, 3), AK_ERR_MISALIGNED);
            assert_eq!(
                ak_exp_f32(x.as_ptr(), y.as_mut_ptr(), i64::MAX),
                AK_ERR_LENGTH
            );
            tl_exp_f32(std::ptr::null(), y.as_mut_ptr(), 4);
            tl_exp_f32(x.as_ptr(), std::ptr::null_mut(), 4);
            tl_exp_f32(x.as_ptr(), y.as_mut_ptr(), -1);
        }
        assert_eq!(y, [7.0; 5]);
    }

    pub fn every_function_matches_its_exact_kernel() {
        type CScalar = extern "C" fn(f32) -> f32;
        type CArray = unsafe extern "C" fn(*const f32, *mut f32, i64) -> c_int;
        type Entry = (CScalar, CArray, fn(f32) -> f32);
        let fns: [Entry; 8] = [
            (ak_exp, ak_exp_f32, exact::exp),
            (ak_log, ak_log_f32, exact::log),
            (ak_sigmoid, ak_sigmoid_f32, exact::sigmoid),
            (ak_tanh, ak_tanh_f32, exact::tanh),
            (ak_erf, ak_erf_f32, exact::erf),
            (ak_gelu_erf, ak_gelu_erf_f32, exact::gelu_erf),
            (ak_gelu_tanh, ak_gelu_tanh_f32, exact::gelu_tanh),
            (ak_silu, ak_silu_f32, exact::silu),
        ];
        for (scalar, array, reference) in fns {
            let mut y = [0.0f32; 9];
            // SAFETY: both arrays hold 9 floats.
            assert_eq!(unsafe { array(INPUTS.as_ptr(), y.as_mut_ptr(), 9) }, AK_OK);
            for (x, y) in INPUTS.iter().zip(y) {
                assert_eq!(y.to_bits(), reference(*x).to_bits());
                assert_eq!(scalar(*x).to_bits(), reference(*x).to_bits());
            }
        }
    }
    /// The bits `tests/c/capi_test.c` expects at `x = 0.5`, so that each C name is wired to its
    /// function.
    pub fn bits_the_c_test_pins() {
        let got = [
            ak_exp(0.5),
            ak_log(0.5),
            ak_sigmoid(0.5),
            ak_tanh(0.5),
            ak_erf(0.5),
            ak_gelu_erf(0.5),
            ak_gelu_tanh(0.5),
            ak_silu(0.5),
        ]
        .map(f32::to_bits);
        assert_eq!(
            got,
            [
                0x3FD3_094C,
                0xBF31_7218,
                0x3F1F_597F,
                0x3EEC_9A9F,
                0x3F05_3F7B,
                0x3EB1_03AF,
                0x3EB1_016D,
                0x3E9F_597F
            ]
        );
        assert_eq!(tl_expf(-1.0).to_bits(), 0x3EBC_5AB2);
        assert_eq!(tl_expf(10.0).to_bits(), 0x46AC_14EE);
    }
}
