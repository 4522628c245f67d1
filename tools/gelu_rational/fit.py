"""Minimax fit of the rational erf used by the fast-mode GELU.

    c = min(|x|, 5.6); z = c*c
    erf(x/sqrt 2) ~= copysign(c * P(z) / Q(z), x),  deg P = deg Q = 5, Q(0) = 1

minimising max |c*P(c^2)/Q(c^2) - erf(c/sqrt 2)| over c in [0, 5.6].

Method: Lawson-weighted linearised least squares on a grid (start), then
rational Remez (Newton on the 12 equioscillation equations, in mpmath) with
the reference moved to the error extrema found on a dense grid.
The fit works in t = z / ZMAX (t in [0, 1]) for conditioning; coefficients
are scaled back to powers of z at the end.
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import mpmath  # noqa: E402
import numpy as np  # noqa: E402

mpmath.mp.dps = 40
NP, NQ = 5, 5                      # degrees of P and Q in z
NFREE = (NP + 1) + NQ              # 11 free coefficients
CMAX = float(np.float32(5.6))      # the clamp as the f32 code sees it
ZMAX = CMAX * CMAX
GRID = 200_001                     # dense measurement grid


def erf_ref(c):
    """erf(c/sqrt 2) for an array of doubles, via mpmath, rounded to f64."""
    s = mpmath.sqrt(2)
    return np.array([float(mpmath.erf(mpmath.mpf(float(x)) / s)) for x in c])


def ratval(a, b, c):
    """c*P(t)/Q(t) in f64, t = (c/CMAX)^2; a = p0..p5, b = q1..q5 in t."""
    t = (c / CMAX) ** 2
    p = np.polynomial.polynomial.polyval(t, a)
    q = np.polynomial.polynomial.polyval(t, np.concatenate(([1.0], b)))
    return c * p / q, q


def lawson(c, f, iters=300):
    """Linearised (Loeb) least squares with Lawson weights: near-minimax start."""
    t = (c / CMAX) ** 2
    V = np.vander(t, max(NP, NQ) + 1, increasing=True)
    A = np.hstack([c[:, None] * V[:, : NP + 1], -f[:, None] * V[:, 1 : NQ + 1]])
    w = np.full(len(c), 1.0 / len(c))
    qold = np.ones_like(c)
    for _ in range(iters):
        s = np.sqrt(w) / qold
        x = np.linalg.lstsq(A * s[:, None], f * s, rcond=None)[0]
        a, b = x[: NP + 1], x[NP + 1 :]
        r, qold = ratval(a, b, c)
        e = np.abs(r - f)
        w = w * e
        w /= w.sum()
    return a, b


def extrema(c, err, n):
    """n alternating error extrema (largest magnitudes) on the grid."""
    i = np.arange(1, len(c) - 1)
    loc = i[(np.abs(err[i]) >= np.abs(err[i - 1])) & (np.abs(err[i]) >= np.abs(err[i + 1]))]
    loc = list(loc) + [len(c) - 1]          # c = 0 has error 0; the right end counts
    groups = []                              # merge same-sign runs, keep the biggest
    for k in loc:
        if groups and np.sign(err[k]) == np.sign(err[groups[-1]]):
            if abs(err[k]) > abs(err[groups[-1]]):
                groups[-1] = k
        else:
            groups.append(k)
    while len(groups) > n:                   # drop the smaller end
        if abs(err[groups[0]]) < abs(err[groups[-1]]):
            groups.pop(0)
        else:
            groups.pop()
    if len(groups) < n:
        raise RuntimeError(f"only {len(groups)} alternating extrema, need {n}")
    return np.array(groups)


def remez_newton(a, b, E, cs):
    """Solve c_k P(t_k)/Q(t_k) - erf(c_k/sqrt2) = (-1)^k E at the reference (mpmath)."""
    s2 = mpmath.sqrt(2)
    ck = [mpmath.mpf(float(x)) for x in cs]
    tk = [(x / CMAX) ** 2 for x in ck]
    fk = [mpmath.erf(x / s2) for x in ck]
    sg = [(-1) ** k for k in range(len(ck))]
    u = [mpmath.mpf(float(v)) for v in list(a) + list(b)] + [mpmath.mpf(float(E))]
    for _ in range(30):
        J = mpmath.matrix(NFREE + 1, NFREE + 1)
        R = mpmath.matrix(NFREE + 1, 1)
        for k in range(NFREE + 1):
            P = mpmath.polyval(u[NP::-1], tk[k])
            Q = mpmath.polyval(u[NP + NQ : NP : -1] + [1], tk[k])
            g = fk[k] + sg[k] * u[-1]
            R[k] = ck[k] * P - g * Q
            for j in range(NP + 1):
                J[k, j] = ck[k] * tk[k] ** j
            for j in range(1, NQ + 1):
                J[k, NP + j] = -g * tk[k] ** j
            J[k, NFREE] = -sg[k] * Q
        du = mpmath.lu_solve(J, -R)
        u = [u[i] + du[i] for i in range(NFREE + 1)]
        if mpmath.norm(du) < mpmath.mpf(10) ** -30:
            break
    u = [float(v) for v in u]
    return np.array(u[: NP + 1]), np.array(u[NP + 1 : NFREE]), u[-1]


def to_z(a, b):
    """Coefficients in t = z/ZMAX -> coefficients in z."""
    pz = np.array([a[j] / ZMAX**j for j in range(NP + 1)])
    qz = np.array([b[j - 1] / ZMAX**j for j in range(1, NQ + 1)])
    return pz, qz


def eval_exact(pz, qz, c):
    """c*P(z)/Q(z) in f64 (exact enough next to 1e-8 errors), z = c*c."""
    z = c * c
    P = np.polynomial.polynomial.polyval(z, pz)
    Q = np.polynomial.polynomial.polyval(z, np.concatenate(([1.0], qz)))
    return c * P / Q


def fma32(a, b, c):
    """f32 fma emulated: the f64 product of two f32 values is exact."""
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def eval_f32(p32, q32, c32):
    """The crate's f32 path: z = c*c, fma Horner for P and Q, P/Q, times c."""
    z = c32 * c32
    P = np.full_like(c32, p32[-1])
    for k in range(NP - 1, -1, -1):
        P = fma32(P, z, np.full_like(c32, p32[k]))
    Q = np.full_like(c32, q32[-1])
    for k in range(NQ - 1, -1, -1):
        Q = fma32(Q, z, np.full_like(c32, q32[k]))
    return c32 * (P / Q)


def main():
    # Dense grid of f32 inputs (so the f32 evaluation sees the same points).
    c32 = np.linspace(0.0, CMAX, GRID).astype(np.float32)
    c = c32.astype(np.float64)
    f = erf_ref(c)

    # 1. Lawson start on a coarse Chebyshev-spaced grid.
    cc = CMAX * (1 - np.cos(np.linspace(0, np.pi / 2, 4001)))
    a, b = lawson(cc, erf_ref(cc))
    print(f"lawson start       : max err {np.max(np.abs(ratval(a, b, c)[0] - f)):.4e}")

    # 2. Rational Remez on the dense grid.
    for it in range(40):
        err = ratval(a, b, c)[0] - f
        ref = extrema(c, err, NFREE + 1)
        emax, emin = np.max(np.abs(err)), np.min(np.abs(err[ref]))
        print(f"remez iter {it:2d}      : max err {emax:.6e}  min ref err {emin:.6e}")
        if emax / emin - 1 < 1e-4:
            break
        a, b, _ = remez_newton(a, b, np.sign(err[ref[0]]) * emin, c[ref])
    else:
        raise RuntimeError("Remez did not converge")

    pz, qz = to_z(a, b)
    qfull = np.concatenate(([1.0], qz))
    e_exact = np.max(np.abs(eval_exact(pz, qz, c) - f))

    # Q has no zeros on [0, ZMAX]: no real roots there, and Q(0) = 1 > 0.
    zz = np.linspace(0.0, ZMAX, GRID)
    qmin = np.min(np.polynomial.polynomial.polyval(zz, qfull))
    roots = np.polynomial.polynomial.polyroots(qfull)
    bad = [r for r in roots if abs(r.imag) < 1e-9 and 0 <= r.real <= ZMAX]
    assert qmin > 0 and not bad, "Q vanishes on [0, 31.36]"

    p32 = pz.astype(np.float32)
    q32 = np.concatenate(([1.0], qz)).astype(np.float32)
    e_round = np.max(np.abs(eval_exact(p32.astype(np.float64), q32[1:].astype(np.float64), c) - f))
    e_f32 = np.max(np.abs(eval_f32(p32, q32, c32).astype(np.float64) - f))

    print()
    print("method: Lawson-weighted linearised least squares start, then rational Remez")
    print(f"        (Newton on the equioscillation equations in mpmath), {GRID} grid points on [0, {CMAX}]")
    print(f"max error, exact arithmetic, fitted coefficients  : {e_exact:.4e}")
    print(f"max error, exact arithmetic, f32-rounded coeffs   : {e_round:.4e}")
    print(f"max error, f32 fma Horner + f32 division          : {e_f32:.4e}")
    print(f"min Q(z) on [0, {ZMAX:.4f}]                         : {qmin:.6g}"
          f"{'  (all q > 0: Q increasing, min at z = 0)' if np.all(qz > 0) else ''}")
    print()

    def lit(v):
        s = str(np.float32(v))  # shortest string that round-trips through f32
        assert np.float32(s) == v
        return s

    def hexes(v):
        return ", ".join("0x%08x" % x for x in v.view(np.uint32))

    P_hi, Q_hi = p32[::-1], q32[::-1]
    for name, v in (("P", P_hi), ("Q", Q_hi)):
        print(f"// GELU_{name} f32 bits: [{hexes(v)}]")
    print(f"pub const GELU_P: [f32; 6] = [{', '.join(lit(v) for v in P_hi)}];")
    print(f"pub const GELU_Q: [f32; 6] = [{', '.join(lit(v) for v in Q_hi)}];")


if __name__ == "__main__":
    main()
