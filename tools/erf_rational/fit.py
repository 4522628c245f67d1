"""Minimax fit of the rationals of fast mode's `erf` (and `1 + erf`) and `tanh`.

    c = min(|x|, CMAX); z = c*c
    f(x) ~= copysign(min(c * P(z) / Q(z), 1), x),  Q(0) = 1,  f = erf or tanh

minimising the *relative* error max |c*P(c^2)/Q(c^2) - erf(c)| / erf(c) over c in
(0, CMAX]: erf(x) = x * R(x^2), so this is the relative error of R(z) against
h(z) = erf(sqrt z)/sqrt z, a smooth function of z with h(0) = 2/sqrt(pi).
A relative fit keeps the ulp error flat down to 0 (an absolute fit, like the
GELU's, lets the relative error near 0 grow), and CMAX = 3.92 is where erf
rounds to 1 in f32 (erf(3.9192) = 1 - 2^-25). tanh is fitted the same way,
against h(z) = tanh(sqrt z)/sqrt z with h(0) = 1, up to CMAX = 9.02 (tanh
rounds to 1 in f32 from 9.011 on).

Method (as tools/gelu_rational/fit.py, with the weight 1/h): Lawson-weighted
linearised least squares on a grid, then rational Remez (Newton on the
equioscillation equations, in mpmath), the reference moved to the extrema of
the relative error on a dense grid. The fit works in t = z / ZMAX.

Usage: fit.py [erf|tanh] [NP NQ]   (default erf; degrees of P and Q in z, default 4 4)
"""
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import mpmath  # noqa: E402
import numpy as np  # noqa: E402

mpmath.mp.dps = 40
ARGS = sys.argv[1:]
FUNC = ARGS.pop(0) if ARGS and ARGS[0] in ("erf", "tanh") else "erf"
NP, NQ = (int(ARGS[0]), int(ARGS[1])) if len(ARGS) > 1 else (4, 4)
NFREE = (NP + 1) + NQ
# Where the function rounds to 1 in f32 (the clamp), its mpmath form, and its value at 0 / c.
CMAX = float(np.float32({"erf": 3.92, "tanh": 9.02}[FUNC]))
F_MP = {"erf": mpmath.erf, "tanh": mpmath.tanh}[FUNC]
H0 = {"erf": 2 / mpmath.sqrt(mpmath.pi), "tanh": mpmath.mpf(1)}[FUNC]
ZMAX = CMAX * CMAX
GRID = 200_001


def h_mp(c):
    """f(c)/c in mpmath (erf: 2/sqrt(pi) at 0; tanh: 1)."""
    c = mpmath.mpf(c)
    return H0 if c == 0 else F_MP(c) / c


def h_ref(c):
    return np.array([float(h_mp(float(x))) for x in c])


def ratval(a, b, c):
    t = (c / CMAX) ** 2
    p = np.polynomial.polynomial.polyval(t, a)
    q = np.polynomial.polynomial.polyval(t, np.concatenate(([1.0], b)))
    return p / q, q


def lawson(c, f, iters=300):
    """Loeb's linearisation with Lawson weights, in relative error (rows scaled by 1/f)."""
    t = (c / CMAX) ** 2
    V = np.vander(t, max(NP, NQ) + 1, increasing=True)
    A = np.hstack([V[:, : NP + 1], -f[:, None] * V[:, 1 : NQ + 1]]) / f[:, None]
    rhs = np.ones_like(f)
    w = np.full(len(c), 1.0 / len(c))
    qold = np.ones_like(c)
    for _ in range(iters):
        s = np.sqrt(w) / qold
        x = np.linalg.lstsq(A * s[:, None], rhs * s, rcond=None)[0]
        a, b = x[: NP + 1], x[NP + 1 :]
        r, qold = ratval(a, b, c)
        e = np.abs(r / f - 1)
        w = w * e
        w /= w.sum()
    return a, b


def extrema(err, n):
    """n alternating extrema of the error (largest magnitudes), both ends included."""
    i = np.arange(1, len(err) - 1)
    loc = i[(np.abs(err[i]) >= np.abs(err[i - 1])) & (np.abs(err[i]) >= np.abs(err[i + 1]))]
    loc = [0] + list(loc) + [len(err) - 1]
    groups = []
    for k in loc:
        if groups and np.sign(err[k]) == np.sign(err[groups[-1]]):
            if abs(err[k]) > abs(err[groups[-1]]):
                groups[-1] = k
        else:
            groups.append(k)
    while len(groups) > n:
        if abs(err[groups[0]]) < abs(err[groups[-1]]):
            groups.pop(0)
        else:
            groups.pop()
    if len(groups) < n:
        raise RuntimeError(f"only {len(groups)} alternating extrema, need {n}")
    return np.array(groups)


def remez_newton(a, b, E, cs):
    """Solve P(t_k) - h_k (1 + s_k E) Q(t_k) = 0 at the reference (mpmath)."""
    ck = [mpmath.mpf(float(x)) for x in cs]
    tk = [(x / CMAX) ** 2 for x in ck]
    hk = [h_mp(x) for x in ck]
    sg = [(-1) ** k for k in range(len(ck))]
    u = [mpmath.mpf(float(v)) for v in list(a) + list(b)] + [mpmath.mpf(float(E))]
    for _ in range(30):
        J = mpmath.matrix(NFREE + 1, NFREE + 1)
        R = mpmath.matrix(NFREE + 1, 1)
        for k in range(NFREE + 1):
            P = mpmath.polyval(u[NP::-1], tk[k])
            Q = mpmath.polyval(u[NP + NQ : NP : -1] + [1], tk[k])
            g = hk[k] * (1 + sg[k] * u[-1])
            R[k] = P - g * Q
            for j in range(NP + 1):
                J[k, j] = tk[k] ** j
            for j in range(1, NQ + 1):
                J[k, NP + j] = -g * tk[k] ** j
            J[k, NFREE] = -hk[k] * sg[k] * Q
        du = mpmath.lu_solve(J, -R)
        u = [u[i] + du[i] for i in range(NFREE + 1)]
        if mpmath.norm(du) < mpmath.mpf(10) ** -30:
            break
    u = [float(v) for v in u]
    return np.array(u[: NP + 1]), np.array(u[NP + 1 : NFREE]), u[-1]


def fma32(a, b, c):
    """f32 fma: the f64 product of two f32 values is exact, one rounding to f32 after."""
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def eval_f32(p32, q32, c32):
    """The crate's f32 path: z = c*c, fma Horner for P and Q, (c*P)/Q, min 1."""
    z = c32 * c32
    P = np.full_like(c32, p32[-1])
    for k in range(NP - 1, -1, -1):
        P = fma32(P, z, np.full_like(c32, p32[k]))
    Q = np.full_like(c32, q32[-1])
    for k in range(NQ - 1, -1, -1):
        Q = fma32(Q, z, np.full_like(c32, q32[k]))
    return np.minimum((c32 * P) / Q, np.float32(1.0))


def ulp_err(y32, ref):
    """|y - ref| in ulps of the f32 spacing at ref (ref > 0)."""
    r32 = ref.astype(np.float32)
    sp = np.spacing(r32).astype(np.float64)
    return np.abs(y32.astype(np.float64) - ref) / sp


def main():
    c32 = np.linspace(0.0, CMAX, GRID).astype(np.float32)
    c = c32.astype(np.float64)
    f = h_ref(c)

    cc = CMAX * np.sin(np.linspace(0, np.pi / 2, 4001))
    a, b = lawson(cc, h_ref(cc))
    print(f"lawson start : max rel err {np.max(np.abs(ratval(a, b, c)[0] / f - 1)):.4e}")
    for it in range(40):
        err = ratval(a, b, c)[0] / f - 1
        ref = extrema(err, NFREE + 1)
        emax, emin = np.max(np.abs(err)), np.min(np.abs(err[ref]))
        print(f"remez {it:2d}     : max rel err {emax:.6e}  min ref err {emin:.6e}")
        if emax / emin - 1 < 1e-4:
            break
        a, b, _ = remez_newton(a, b, np.sign(err[ref[0]]) * emin, c[ref])
    else:
        raise RuntimeError("Remez did not converge")

    pz = np.array([a[j] / ZMAX**j for j in range(NP + 1)])
    qz = np.concatenate(([1.0], [b[j - 1] / ZMAX**j for j in range(1, NQ + 1)]))
    zz = np.linspace(0.0, ZMAX, GRID)
    qmin = np.min(np.polynomial.polynomial.polyval(zz, qz))
    assert qmin > 0, "Q vanishes on [0, ZMAX]"

    p32, q32 = pz.astype(np.float32), qz.astype(np.float32)
    z = c * c
    def rel(pp, qq):
        r = np.polynomial.polynomial.polyval(z, pp) / np.polynomial.polynomial.polyval(z, qq)
        return np.max(np.abs(r / f - 1))
    e_exact = rel(pz, qz)
    e_round = rel(p32.astype(np.float64), q32.astype(np.float64))
    f_ref = np.array([float(F_MP(float(x))) for x in c[1:]])
    e_ulp = ulp_err(eval_f32(p32, q32, c32[1:]), f_ref)
    worst = c32[1:][np.argmax(e_ulp)]
    e_ulp = np.max(e_ulp)

    print()
    print(f"{FUNC}: degrees P {NP}, Q {NQ}; c in [0, {CMAX}], z in [0, {ZMAX:.4f}]; {GRID} grid points")
    print(f"max relative error, exact arithmetic, fitted coefficients : {e_exact:.4e}")
    print(f"max relative error, exact arithmetic, f32 coefficients    : {e_round:.4e}")
    print(f"max error of the f32 evaluation (fma Horner, c*P/Q)        : {e_ulp:.3f} ulp at {worst}")
    print(f"min Q(z) on [0, ZMAX]                                      : {qmin:.6g}")
    print()

    def lit(v):
        s = str(np.float32(v))
        assert np.float32(s) == v
        return s

    def hexes(v):
        return ", ".join("0x%08x" % x for x in v.view(np.uint32))

    P_hi, Q_hi = p32[::-1], q32[::-1]
    name = FUNC.upper()
    for half, v in (("P", P_hi), ("Q", Q_hi)):
        print(f"// {name}_FAST_{half} f32 bits: [{hexes(v)}]")
    print(f"pub const {name}_FAST_P: [f32; {NP + 1}] = [{', '.join(lit(v) for v in P_hi)}];")
    print(f"pub const {name}_FAST_Q: [f32; {NQ + 1}] = [{', '.join(lit(v) for v in Q_hi)}];")


if __name__ == "__main__":
    main()
