/*
 * activation_kernels.h: the C interface of the activation-kernels crate (cargo feature `capi`).
 *
 * Build the library from the crate's root, then link it:
 *
 *   cargo rustc --release --features capi --crate-type staticlib
 *       -> target/release/libactivation_kernels.a
 *   cargo rustc --release --features capi --crate-type cdylib
 *       -> target/release/libactivation_kernels.so (.dylib on macOS, .dll on Windows)
 *
 *   cc -I include prog.c target/release/libactivation_kernels.a -lpthread -ldl -lm -o prog
 *
 * The system libraries the static library needs on a platform are printed by
 *   cargo rustc --release --features capi --crate-type staticlib -- --print native-static-libs
 *
 * Two families:
 *
 *   tl_expf, tl_exp_f32: the interface of taylor-expf.md, on the crate's degree-7 Taylor
 *     reference (a teaching kernel and differential oracle).
 *   ak_*: the crate's exact kernels. Their bits are fixed by the crate's spec and are the same
 *     on every machine and instruction set. The array forms run on the instruction set that
 *     ACTIVATION_KERNELS_ISA (scalar, sse2, avx2, avx512, neon) forces, or, if it is unset or
 *     names one this CPU lacks, on the widest one the CPU has; read once per process.
 *
 * Arrays. Every array function computes y[i] = f(x[i]) for 0 <= i < n, and:
 *   - n <= 0: reads and writes nothing (x and y may then be NULL);
 *   - y == x: works in place;
 *   - any other overlap of x[0..n) and y[0..n): the result is as if x had been copied first;
 *   - refused, with nothing read or written: x or y NULL with n > 0, x or y not aligned for
 *     float, or n * sizeof(float) larger than the largest object the address space allows.
 *     The ak_*_f32 functions report a refusal by their status (AK_ERR_*). tl_exp_f32 keeps the
 *     module's void signature: it returns without doing anything, silently, so a caller that
 *     needs to know checks its pointers first.
 * Apart from those refusals, x must be valid for reading n floats and y for writing n floats,
 * and no other thread may write them during the call.
 *
 * All functions are thread-safe, and may be called from a thread-local destructor at thread
 * exit. Allocations: an array call whose x and y partly overlap copies x; a thread's first
 * array call of erf or GELU erf on AVX2 or AVX-512 takes a scratch buffer of about 4 KiB,
 * kept for the thread's later calls (at thread exit, one per call); the process's first call
 * reads ACTIVATION_KERNELS_ISA into a string once, if it is set. Nothing else allocates.
 */
#ifndef ACTIVATION_KERNELS_H
#define ACTIVATION_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status of the ak_*_f32 functions. */
#define AK_OK 0             /* done (also for n <= 0, which writes nothing) */
#define AK_ERR_NULL 1       /* x or y is NULL and n > 0; nothing written */
#define AK_ERR_MISALIGNED 2 /* x or y is not aligned for float; nothing written */
#define AK_ERR_LENGTH 3     /* n floats exceed the address space; nothing written */
#define AK_ERR_INTERNAL 4   /* the kernel failed (not expected) */

/* ---- taylor-expf.md: the degree-7 Taylor reference ------------------------------------ */

/* e^x: within 2 ulp where e^x is normal (1.21 ulp measured); x > 88.7228317 -> +inf;
 * x < -103.97208 and -inf -> +0; NaN -> NaN (the quiet NaN 0x7FC00000). */
float tl_expf(float x);

/* y[i] = tl_expf(x[i]) for 0 <= i < n; y == x allowed. n <= 0 writes nothing. A NULL or
 * misaligned pointer with n > 0 is refused silently: nothing is read or written. */
void tl_exp_f32(const float *x, float *y, int64_t n);

/* ---- The exact kernels ------------------------------------------------------------------ */

/* e^x: +inf above 88.72283, +0 below -103.97208, NaN for NaN. 1.2 ulp. */
float ak_exp(float x);
/* ln x: -inf at +-0, +inf at +inf, NaN below 0. 2.1 ulp. */
float ak_log(float x);
/* 1 / (1 + e^-x). 2.5 ulp. */
float ak_sigmoid(float x);
/* tanh x, tanh(-0) = -0. 1.5 ulp. */
float ak_tanh(float x);
/* erf x, erf(+-inf) = +-1. 3.0 ulp. */
float ak_erf(float x);
/* GELU, erf form: 0.5 x (1 + erf(x / sqrt 2)). */
float ak_gelu_erf(float x);
/* GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
float ak_gelu_tanh(float x);
/* SiLU: x * sigmoid(x). */
float ak_silu(float x);

/* Array forms: y[i] = ak_<f>(x[i]) for 0 <= i < n, bit for bit the scalar function.
 * Return AK_OK, or AK_ERR_NULL / AK_ERR_MISALIGNED / AK_ERR_LENGTH with nothing written. */
int ak_exp_f32(const float *x, float *y, int64_t n);
int ak_log_f32(const float *x, float *y, int64_t n);
int ak_sigmoid_f32(const float *x, float *y, int64_t n);
int ak_tanh_f32(const float *x, float *y, int64_t n);
int ak_erf_f32(const float *x, float *y, int64_t n);
int ak_gelu_erf_f32(const float *x, float *y, int64_t n);
int ak_gelu_tanh_f32(const float *x, float *y, int64_t n);
int ak_silu_f32(const float *x, float *y, int64_t n);

#ifdef __cplusplus
}
#endif

#endif /* ACTIVATION_KERNELS_H */
