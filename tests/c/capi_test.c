/*
 * The C side of the crate's C interface (include/activation_kernels.h), built and run by
 * tests/capi.rs under -fsanitize=address,undefined. Exits 0 when every check passes.
 *
 * It checks: the hand example of taylor-expf.md (bits of e^1, e^-1, e^10; e^+-0 = 1), the
 * specials, tl_exp_f32 (the scalar's bits, exactly n written, in place, n <= 0, NULL refused),
 * and every ak_* function: its bits at 0.5 (pinned from the Rust side), closeness to the C
 * library's double-precision result, the array form against the scalar (separate, in place,
 * partly overlapping), n <= 0 and NULL.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "activation_kernels.h"

static int failures = 0;
static int checks = 0;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        checks++;                                                                              \
        if (!(cond)) {                                                                         \
            failures++;                                                                        \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);            \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
        }                                                                                      \
    } while (0)

static uint32_t bits(float f) {
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static float from_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* A value no function returns, for the elements that must stay untouched. */
#define SENTINEL 0x7F9D0D0Du

#define N 48

/* Inputs for the array checks: ordinary values, the specials and the edges. */
static void fill_inputs(float *x) {
    static const uint32_t specials[] = {
        0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u,
        0x00000001u, 0x807FFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x42B17217u, 0x42B17218u,
        0xC2CFF1B4u, 0xC2CFF1B5u, 0xC2AEAC4Fu, 0x3F800000u,
    };
    size_t k = sizeof specials / sizeof specials[0];
    for (size_t i = 0; i < N; i++) {
        x[i] = i < k ? from_bits(specials[i]) : (float)((double)i * 0.731 - 17.0);
    }
}

static void check_taylor(void) {
    /* Section 3: e^1 = 2.7182817, e^-1 = 0.36787945, e^10 = 22026.465; e^+-0 = 1. */
    CHECK(bits(tl_expf(1.0f)) == 0x402DF854u, "e^1 = %a", tl_expf(1.0f));
    CHECK(bits(tl_expf(-1.0f)) == 0x3EBC5AB2u, "e^-1 = %a", tl_expf(-1.0f));
    CHECK(bits(tl_expf(10.0f)) == 0x46AC14EEu, "e^10 = %a", tl_expf(10.0f));
    CHECK(bits(tl_expf(0.0f)) == 0x3F800000u, "e^0 = %a", tl_expf(0.0f));
    CHECK(bits(tl_expf(-0.0f)) == 0x3F800000u, "e^-0 = %a", tl_expf(-0.0f));
    CHECK(fabs((double)tl_expf(1.0f) - 2.718281828459045) < 1.2e-7, "e^1 = %.9g", tl_expf(1.0f));

    /* Specials and edges. */
    CHECK(isnan(tl_expf(NAN)), "e^NaN = %a", tl_expf(NAN));
    CHECK(isnan(tl_expf(-NAN)), "e^-NaN = %a", tl_expf(-NAN));
    CHECK(tl_expf(INFINITY) == INFINITY, "e^inf = %a", tl_expf(INFINITY));
    CHECK(bits(tl_expf(-INFINITY)) == 0u, "e^-inf = %a", tl_expf(-INFINITY));
    CHECK(isfinite(tl_expf(from_bits(0x42B17217u))), "e^88.7228317 = %a",
          tl_expf(from_bits(0x42B17217u)));
    CHECK(tl_expf(from_bits(0x42B17218u)) == INFINITY, "e^88.7228394 = %a",
          tl_expf(from_bits(0x42B17218u)));
    CHECK(bits(tl_expf(-200.0f)) == 0u, "e^-200 = %a", tl_expf(-200.0f));

    /* The array form: the scalar's bits, exactly n elements, the guard after them untouched. */
    float x[N + 1], y[N + 1], expect[N];
    fill_inputs(x);
    x[N] = 2.0f;
    for (int n = 0; n <= N; n += (n < 9 ? 1 : 13)) {
        for (int i = 0; i <= N; i++) y[i] = from_bits(SENTINEL);
        tl_exp_f32(x, y, n);
        for (int i = 0; i < n; i++) {
            CHECK(bits(y[i]) == bits(tl_expf(x[i])), "n=%d y[%d] = %a for x = %a", n, i, y[i],
                  x[i]);
        }
        for (int i = n; i <= N; i++) {
            CHECK(bits(y[i]) == SENTINEL, "n=%d: y[%d] written", n, i);
        }
    }
    for (int i = 0; i < N; i++) expect[i] = tl_expf(x[i]);

    /* In place, y == x; the element after n stays. */
    float v[N + 1];
    memcpy(v, x, sizeof v);
    tl_exp_f32(v, v, N);
    for (int i = 0; i < N; i++) {
        CHECK(bits(v[i]) == bits(expect[i]), "in place v[%d] = %a", i, v[i]);
    }
    CHECK(bits(v[N]) == bits(2.0f), "in place: v[N] written");

    /* n <= 0 writes nothing; NULL with n > 0 is refused (nothing read or written, no crash). */
    for (int i = 0; i <= N; i++) y[i] = from_bits(SENTINEL);
    tl_exp_f32(x, y, 0);
    tl_exp_f32(x, y, -1);
    tl_exp_f32(x, y, INT64_MIN);
    tl_exp_f32(NULL, y, 4);
    tl_exp_f32(x, NULL, 4);
    tl_exp_f32(NULL, NULL, 4);
    tl_exp_f32(NULL, NULL, 0);
    for (int i = 0; i <= N; i++) CHECK(bits(y[i]) == SENTINEL, "y[%d] written", i);
}

typedef float (*scalar_fn)(float);
typedef int (*array_fn)(const float *, float *, int64_t);

static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double ref_gelu_erf(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double ref_gelu_tanh(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.141592653589793) * (x + 0.044715 * x * x * x)));
}
static double ref_silu(double x) { return x / (1.0 + exp(-x)); }

struct exact_fn {
    const char *name;
    scalar_fn scalar;
    array_fn array;
    uint32_t bits_at_half; /* the Rust side's bits of f(0.5) */
    double (*reference)(double);
    double lo, hi; /* where the reference is compared */
};

static void check_exact(const struct exact_fn *f) {
    const char *name = f->name;
    CHECK(bits(f->scalar(0.5f)) == f->bits_at_half, "%s(0.5) = %a (0x%08X), expected 0x%08X",
          name, f->scalar(0.5f), (unsigned)bits(f->scalar(0.5f)), (unsigned)f->bits_at_half);

    /* Close to the C library's double result (a wiring check, not the accuracy test). */
    for (int i = 0; i <= 200; i++) {
        double xd = f->lo + (f->hi - f->lo) * i / 200.0;
        float x = (float)xd;
        double want = f->reference((double)x);
        double got = (double)f->scalar(x);
        CHECK(fabs(got - want) <= 1e-5 * fabs(want) + 1e-7, "%s(%a) = %.9g, libm %.9g", name,
              x, got, want);
    }

    /* The array form, separate arrays: the scalar's bits, exactly n written. */
    float x[N + 1], y[N + 1], expect[N];
    fill_inputs(x);
    x[N] = 2.0f;
    for (int i = 0; i < N; i++) expect[i] = f->scalar(x[i]);
    for (int n = 0; n <= N; n += (n < 9 ? 1 : 13)) {
        for (int i = 0; i <= N; i++) y[i] = from_bits(SENTINEL);
        int s = f->array(x, y, n);
        CHECK(s == AK_OK, "%s_f32 n=%d: status %d", name, n, s);
        for (int i = 0; i < n; i++) {
            CHECK(bits(y[i]) == bits(expect[i]), "%s_f32 n=%d: y[%d] = %a, scalar %a", name, n, i,
                  y[i], expect[i]);
        }
        for (int i = n; i <= N; i++) CHECK(bits(y[i]) == SENTINEL, "%s_f32 n=%d: y[%d] written",
                                           name, n, i);
    }

    /* In place, y == x. */
    float v[N + 1];
    memcpy(v, x, sizeof v);
    CHECK(f->array(v, v, N) == AK_OK, "%s_f32 in place: status", name);
    for (int i = 0; i < N; i++) {
        CHECK(bits(v[i]) == bits(expect[i]), "%s_f32 in place: v[%d] = %a, scalar %a", name, i,
              v[i], expect[i]);
    }
    CHECK(bits(v[N]) == bits(2.0f), "%s_f32 in place: v[N] written", name);

    /* Partial overlap, y = x + 1 and y = x - 1: as if x had been copied first. */
    float w[N + 1];
    memcpy(w, x, N * sizeof(float));
    CHECK(f->array(w, w + 1, N) == AK_OK, "%s_f32 y = x + 1: status", name);
    for (int i = 0; i < N; i++) {
        CHECK(bits(w[i + 1]) == bits(expect[i]), "%s_f32 y = x + 1: y[%d] = %a, scalar %a", name,
              i, w[i + 1], expect[i]);
    }
    memcpy(w + 1, x, N * sizeof(float));
    CHECK(f->array(w + 1, w, N) == AK_OK, "%s_f32 y = x - 1: status", name);
    for (int i = 0; i < N; i++) {
        CHECK(bits(w[i]) == bits(expect[i]), "%s_f32 y = x - 1: y[%d] = %a, scalar %a", name, i,
              w[i], expect[i]);
    }

    /* n <= 0: AK_OK, nothing written. NULL with n > 0: AK_ERR_NULL, nothing written. */
    for (int i = 0; i <= N; i++) y[i] = from_bits(SENTINEL);
    CHECK(f->array(x, y, 0) == AK_OK, "%s_f32 n = 0", name);
    CHECK(f->array(x, y, -7) == AK_OK, "%s_f32 n = -7", name);
    CHECK(f->array(NULL, NULL, 0) == AK_OK, "%s_f32 NULL, n = 0", name);
    CHECK(f->array(NULL, y, 5) == AK_ERR_NULL, "%s_f32 x NULL", name);
    CHECK(f->array(x, NULL, 5) == AK_ERR_NULL, "%s_f32 y NULL", name);
    CHECK(f->array(NULL, NULL, 5) == AK_ERR_NULL, "%s_f32 both NULL", name);
    for (int i = 0; i <= N; i++) CHECK(bits(y[i]) == SENTINEL, "%s_f32: y[%d] written", name, i);
}

int main(void) {
    check_taylor();

    const struct exact_fn fns[] = {
        {"ak_exp", ak_exp, ak_exp_f32, 0x3FD3094Cu, exp, -80.0, 80.0},
        {"ak_log", ak_log, ak_log_f32, 0xBF317218u, log, 1e-6, 1e6},
        {"ak_sigmoid", ak_sigmoid, ak_sigmoid_f32, 0x3F1F597Fu, ref_sigmoid, -30.0, 30.0},
        {"ak_tanh", ak_tanh, ak_tanh_f32, 0x3EEC9A9Fu, tanh, -10.0, 10.0},
        {"ak_erf", ak_erf, ak_erf_f32, 0x3F053F7Bu, erf, -5.0, 5.0},
        {"ak_gelu_erf", ak_gelu_erf, ak_gelu_erf_f32, 0x3EB103AFu, ref_gelu_erf, -5.0, 10.0},
        {"ak_gelu_tanh", ak_gelu_tanh, ak_gelu_tanh_f32, 0x3EB1016Du, ref_gelu_tanh, -5.0, 10.0},
        {"ak_silu", ak_silu, ak_silu_f32, 0x3E9F597Fu, ref_silu, -20.0, 20.0},
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) check_exact(&fns[i]);

    if (failures) {
        fprintf(stderr, "capi_test: %d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("capi_test: all %d checks passed\n", checks);
    return 0;
}
