#!/usr/bin/env python3
"""Peer benchmarks for activation-kernels: ONNX Runtime, numpy and OpenBLAS
measured on this machine, single-threaded (OpenBLAS sgemm/sgemv also at 2 threads),
as medians of repeated timings. Writes results.md and the same figures as
results.json (read by compare.py).

Run from the repository root, with the OpenBLAS overrides unset:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE benches/peers/.venv/bin/python benches/peers/run.py

See benches/peers/README.md for how to read the numbers.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import statistics
import sys
import time

# Environment variables that change how OpenBLAS/ORT pick kernels or threads.
# They are read when the libraries load, so they are captured before the imports.
WATCHED_ENV = (
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NPY_DISABLE_CPU_FEATURES",
)
# The two that must be unset for a valid run (old OpenBLAS workarounds that slow numpy).
MUST_BE_UNSET = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
ENV_SEEN = {k: os.environ.get(k) for k in WATCHED_ENV}

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
from threadpoolctl import threadpool_info, threadpool_limits  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DOC_COMMAND = (
    "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "
    "benches/peers/.venv/bin/python benches/peers/run.py"
)

SIZES_FULL = (1 << 20, 1 << 24)  # 1,048,576 and 16,777,216
SIZES_QUICK = (1 << 20,)
SOFTMAX_COLS = (1024, 4096)  # rows * cols = 1,048,576
SOFTMAX_TOTAL = 1 << 20
# sgemm shapes m x k x n (C-order A[m,k] @ B[k,n]): the four GEMMs of the GPT-2-small block at
# 256 tokens (qkv, attention output projection, MLP up, MLP down), then the square 1024^3.
# The key is what benches/peers/compare.py matches the crate's criterion ids against.
GEMM_SHAPES = (
    ("256x768x2304", 256, 768, 2304, "qkv projection"),
    ("256x768x768", 256, 768, 768, "attention output projection"),
    ("256x768x3072", 256, 768, 3072, "MLP up"),
    ("256x3072x768", 256, 3072, 768, "MLP down"),
    ("1024x1024x1024", 1024, 1024, 1024, "square"),
)
# GEMV (m = 1, one token of decode) on the block's weight matrices.
GEMV_SHAPES = (
    ("1x768x2304", 1, 768, 2304, "qkv projection"),
    ("1x768x3072", 1, 768, 3072, "MLP up"),
    ("1x3072x768", 1, 3072, 768, "MLP down"),
)
BLAS_THREADS = (1, 2)
DRAM_BYTES = 256 << 20  # buffer for the beyond-cache read bandwidth
SECTIONS = ("ort", "numpy", "gemm", "gemv")


# --------------------------------------------------------------------------
# machine / load description
# --------------------------------------------------------------------------

def cpu_info() -> dict:
    info = {"model": "unknown", "family": "?", "model_id": "?", "flags": set()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if ":" not in line:
                    continue
                key, _, val = line.partition(":")
                key, val = key.strip(), val.strip()
                if key == "model name" and info["model"] == "unknown":
                    info["model"] = val
                elif key == "cpu family" and info["family"] == "?":
                    info["family"] = val
                elif key == "model" and info["model_id"] == "?":
                    info["model_id"] = val
                elif key == "flags" and not info["flags"]:
                    info["flags"] = set(val.split())
    except OSError:
        pass
    info["ncpu"] = os.cpu_count()
    return info


def read_proc_stat():
    """(busy_jiffies, total_jiffies, steal_jiffies) summed over all CPUs."""
    try:
        with open("/proc/stat") as f:
            parts = f.readline().split()
    except OSError:
        return None
    vals = [int(v) for v in parts[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    steal = vals[7] if len(vals) > 7 else 0
    total = sum(vals[:8])
    return total - idle, total, steal


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "n/a"


def other_load(stat0, self0, t0):
    """Cores kept busy by work other than this process since (stat0, self0, t0)."""
    stat1, self1 = read_proc_stat(), os.times()
    wall = time.monotonic() - t0
    if not stat0 or not stat1 or wall <= 0:
        return None
    busy = (stat1[0] - stat0[0]) / os.sysconf("SC_CLK_TCK")
    mine = (self1.user + self1.system) - (self0.user + self0.system)
    return max(0.0, (busy - mine) / wall)


class LoadMonitor:
    """Estimates how busy the machine was with work other than this process."""

    def __init__(self):
        self.t0 = time.monotonic()
        self.stat0 = read_proc_stat()
        self.self0 = os.times()
        self.load0 = loadavg()

    def summary(self) -> dict:
        wall = time.monotonic() - self.t0
        stat1 = read_proc_stat()
        self1 = os.times()
        hz = os.sysconf("SC_CLK_TCK")
        out = {"wall_s": wall, "load_start": self.load0, "load_end": loadavg()}
        if self.stat0 and stat1:
            busy = (stat1[0] - self.stat0[0]) / hz
            steal = (stat1[2] - self.stat0[2]) / hz
            mine = (self1.user + self1.system) - (self.self0.user + self.self0.system)
            out["other_cores"] = max(0.0, (busy - mine) / wall)
            out["steal_cores"] = steal / wall
            out["self_cores"] = mine / wall
        return out


# --------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------

WAIT_QUIET = {"max_s": 0.0, "threshold": 0.25, "waited_s": 0.0, "retries": 2}


def wait_for_quiet():
    """If --wait-quiet is set, wait (up to max_s) until other processes use < threshold cores."""
    if WAIT_QUIET["max_s"] <= 0:
        return
    deadline = time.monotonic() + WAIT_QUIET["max_s"]
    start = time.monotonic()
    while True:
        stat0, self0, t0 = read_proc_stat(), os.times(), time.monotonic()
        time.sleep(0.5)
        other = other_load(stat0, self0, t0)
        if other is None or other < WAIT_QUIET["threshold"] or time.monotonic() >= deadline:
            break
    WAIT_QUIET["waited_s"] += time.monotonic() - start


def bench(fn, elements: int, repeats: int, target_s: float, cpu_clock=time.thread_time_ns):
    """Time `fn` (one call processes `elements` items).

    Calibrates an inner iteration count so that one repeat lasts about
    `target_s`, then reports per-element median and min wall time over
    `repeats`, plus the median CPU time of the timing thread (`cpu_clock`).
    CPU time leaves out the time the thread was preempted (not the slowdown
    from work on the other core); wall time is what the Rust criterion
    benchmarks report. Also records how many cores other processes kept busy
    meanwhile."""
    fn()  # warm-up: page in buffers, let lazy init happen
    fn()
    one = None
    for _ in range(5):  # min of a few calls, so one preemption does not skew the count
        t = time.perf_counter_ns()
        fn()
        d = time.perf_counter_ns() - t
        one = d if one is None else min(one, d)
    iters = max(1, int(target_s * 1e9 / max(one, 1)))
    # With --wait-quiet, a case that other work disturbed (> 2x the threshold) is
    # measured again after waiting, up to RETRIES times; the least disturbed run is kept.
    best = None
    for attempt in range(1 + (WAIT_QUIET["retries"] if WAIT_QUIET["max_s"] > 0 else 0)):
        wait_for_quiet()
        wall, cpu = [], []
        stat0, self0, t0 = read_proc_stat(), os.times(), time.monotonic()
        for _ in range(repeats):
            c = cpu_clock()
            t = time.perf_counter_ns()
            for _ in range(iters):
                fn()
            wall.append((time.perf_counter_ns() - t) / iters)
            cpu.append((cpu_clock() - c) / iters)
        other = other_load(stat0, self0, t0)
        if best is None or (other is not None and other < best[2]):
            best = (wall, cpu, other if other is not None else float("inf"))
        if other is None or other <= 2 * WAIT_QUIET["threshold"]:
            break
    wall, cpu, other = best
    if other == float("inf"):
        other = None
    w_med = statistics.median(wall)
    w_min = min(wall)
    c_med = statistics.median(cpu)
    return {
        "ns_per_call_median": w_med,
        "ns_per_call_min": w_min,
        "cpu_ns_per_call_median": c_med,
        "ns_per_elem_median": w_med / elements,
        "ns_per_elem_min": w_min / elements,
        "cpu_ns_per_elem_median": c_med / elements,
        "iters": iters,
        "repeats": repeats,
        "other_cores": other,
    }


# --------------------------------------------------------------------------
# ONNX Runtime
# --------------------------------------------------------------------------

OPSET = 20  # opset-20 is where ONNX Gelu appeared; Exp/Log/... are unchanged since 13


def make_model(op_type, domain="", attrs=None, shape=None, extra_inputs=None):
    shape = shape or ["N"]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    initializers = []
    node_inputs = ["x"]
    for name, value in (extra_inputs or []):
        initializers.append(helper.make_tensor(name, TensorProto.FLOAT, [], [value]))
        node_inputs.append(name)
    node = helper.make_node(op_type, node_inputs, ["y"], domain=domain, **(attrs or {}))
    graph = helper.make_graph([node], f"peer_{op_type}", [x], [y], initializer=initializers)
    opsets = [helper.make_opsetid("", OPSET)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(graph, opset_imports=opsets, ir_version=10)
    if not domain:
        onnx.checker.check_model(model)
    return model.SerializeToString()


def ort_session(model_bytes):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.log_severity_level = 3
    return ort.InferenceSession(model_bytes, sess_options=so, providers=["CPUExecutionProvider"])


def ort_bound_runner(sess, x: np.ndarray, y: np.ndarray):
    """io_binding with a preallocated output so ORT does not allocate per call."""
    binding = sess.io_binding()
    binding.bind_ortvalue_input("x", ort.OrtValue.ortvalue_from_numpy(x))
    binding.bind_ortvalue_output("y", ort.OrtValue.ortvalue_from_numpy(y))

    def run():
        sess.run_with_iobinding(binding)

    return run


# float64 references, used only on a sample to check each peer computes the right thing
SQRT1_2 = 1.0 / math.sqrt(2.0)
_erf = np.vectorize(math.erf, otypes=[np.float64])


def ref_gelu_erf(x):
    return 0.5 * x * (1.0 + _erf(x * SQRT1_2))


def ref_gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def ref_sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def ref_softmax_rows(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


STREAM_A = 1.0001  # the `y = a * x` streaming baseline multiplier

# (key, label, op_type, domain, attrs, extra initializer inputs, input domain, reference).
# The key names the row in results.json (benches/peers/compare.py looks rows up by it).
ORT_ELEMENTWISE = [
    ("Exp", "Exp", "Exp", "", None, None, "sym", np.exp),
    ("Log", "Log", "Log", "", None, None, "pos", np.log),
    ("Sigmoid", "Sigmoid", "Sigmoid", "", None, None, "sym", ref_sigmoid),
    ("Tanh", "Tanh", "Tanh", "", None, None, "sym", np.tanh),
    ("Erf", "Erf", "Erf", "", None, None, "sym", _erf),
    ("Gelu-ms", "Gelu (com.microsoft, erf)", "Gelu", "com.microsoft", None, None, "sym", ref_gelu_erf),
    ("Gelu-20-none", "Gelu opset20 approximate=none", "Gelu", "", {"approximate": "none"}, None, "sym",
     ref_gelu_erf),
    ("Gelu-20-tanh", "Gelu opset20 approximate=tanh", "Gelu", "", {"approximate": "tanh"}, None, "sym",
     ref_gelu_tanh),
    ("FastGelu", "FastGelu (com.microsoft, tanh)", "FastGelu", "com.microsoft", None, None, "sym", ref_gelu_tanh),
    ("QuickGelu-1", "SiLU (com.microsoft QuickGelu alpha=1)", "QuickGelu", "com.microsoft", {"alpha": 1.0}, None,
     "sym", lambda x: x * ref_sigmoid(x)),
    ("Mul", "Mul y=a*x (ORT streaming baseline)", "Mul", "", None, [("a", STREAM_A)], "sym",
     lambda x: np.float32(STREAM_A) * x),
]


def check_output(label, x, y, ref, sample=4096):
    """Max abs error of the peer on a sample, vs a float64 reference."""
    xs = x.reshape(-1)[:sample].astype(np.float64)
    ys = y.reshape(-1)[:sample].astype(np.float64)
    if x.ndim == 2:  # softmax: check whole rows
        rows = max(1, sample // x.shape[1])
        xs = x[:rows].astype(np.float64)
        ys = y[:rows].astype(np.float64)
    err = float(np.max(np.abs(ys - ref(xs))))
    scale = float(np.max(np.abs(ref(xs)))) or 1.0
    if not math.isfinite(err) or err > 1e-3 * scale:
        raise RuntimeError(f"{label}: output check failed, max abs err {err:.3g}")
    return err


# --------------------------------------------------------------------------
# OpenBLAS (numpy's) sgemm and sgemv
# --------------------------------------------------------------------------

def blas_clock(threads):
    """1 thread: CPU time of the calling thread; more: CPU time of the whole process."""
    return time.thread_time_ns if threads == 1 else time.process_time_ns


def gemm_err(a, b, c, idx):
    """Max abs error of a few entries of c = a @ b against float64 dot products."""
    return max(abs(float(c[i, j]) - float(a[i].astype(np.float64) @ b[:, j].astype(np.float64)))
               for i, j in idx)


def gemm_section(rows, rng, repeats, target_s):
    """sgemm through np.matmul(a, b, out=c) on C-order a[m,k], b[k,n], at 1 and 2 BLAS threads."""
    print("\n== OpenBLAS sgemm via numpy.matmul(a, b, out=c), float32, C-order operands ==")
    for key, m, k, n, what in GEMM_SHAPES:
        ga = rng.standard_normal((m, k)).astype(np.float32)
        gb = rng.standard_normal((k, n)).astype(np.float32)
        gc = np.zeros((m, n), dtype=np.float32)
        flops = 2.0 * m * k * n
        idx = [(0, 0), (m // 2, n // 3), (m - 1, n - 1)]
        for threads in BLAS_THREADS:
            with threadpool_limits(limits=threads, user_api="blas"):
                f = lambda: np.matmul(ga, gb, out=gc)  # noqa: E731
                f()
                err = gemm_err(ga, gb, gc, idx)
                if not err <= 1e-3 * math.sqrt(k):
                    raise RuntimeError(f"sgemm {key}: output check failed, max abs err {err:.3g}")
                res = bench(f, m * n, repeats, max(target_s, 0.2), cpu_clock=blas_clock(threads))
            g_med = flops / res["ns_per_call_median"]
            g_best = flops / res["ns_per_call_min"]
            # CPU-time GFLOP/s only makes sense per core; for 2 threads report CPU utilisation instead
            g_cpu = flops / res["cpu_ns_per_call_median"] if threads == 1 else None
            util = res["cpu_ns_per_call_median"] / res["ns_per_call_median"]
            label = f"sgemm {key} ({threads} thread{'s' if threads > 1 else ''})"
            rows.append(dict(peer="OpenBLAS", kind="gemm", key=key, op=label, what=what, m=m, k=k, n=n,
                             threads=threads, shape=f"{m}x{k}x{n}", res=res, err=err, gflops=g_med,
                             gflops_best=g_best, gflops_cpu=g_cpu, util=util))
            print(f"  {label:36s} {what:28s} {res['ns_per_call_median']/1e6:7.2f} ms/call median -> "
                  f"{g_med:6.1f} GFLOP/s (best {g_best:.1f}"
                  + (f", per CPU-second {g_cpu:.1f}" if g_cpu else f", CPU utilisation {util:.2f} cores")
                  + f"; other load {fmt_load(res)}), max abs err {err:.2g}")


def read_pass(buf, repeats, target_s):
    """Time of one read-only pass over `buf` (float32, contiguous): the faster of OpenBLAS's sdot of
    the buffer with itself (each element comes from memory once) and numpy's max-reduction.
    Returns (bench result of the faster, name)."""
    flat = buf.reshape(-1)
    best = None
    for name, f in (("sdot(w, w)", lambda: np.dot(flat, flat)), ("np.max(w)", lambda: np.max(flat))):
        res = bench(f, flat.size, repeats, target_s)
        if best is None or res["ns_per_call_median"] < best[0]["ns_per_call_median"]:
            best = (res, name)
    return best


def max_load(*results):
    """The largest `other_cores` of several bench results (None if none was measured)."""
    vals = [r["other_cores"] for r in results if r.get("other_cores") is not None]
    return max(vals) if vals else None


def gemv_section(rows, rng, repeats, target_s):
    """sgemv (m = 1) through np.matmul(x[1,k], w[k,n], out=y[1,n]), beside the time to stream the
    weight matrix once: its bytes over the read bandwidth measured on that same matrix (same cache
    state as a GEMV repeated on it), a copy of it, and its bytes over the read bandwidth of a
    256 MiB buffer (from memory, beyond the caches)."""
    print("\n== OpenBLAS sgemv (m = 1) via numpy.matmul(x, w, out=y), float32, beside streaming the weights ==")
    big = rng.uniform(-1.0, 1.0, size=DRAM_BYTES // 4).astype(np.float32)
    dram = {}
    for threads in BLAS_THREADS:
        with threadpool_limits(limits=threads, user_api="blas"):
            res, how = read_pass(big, max(3, repeats // 2), target_s)
        dram[threads] = big.nbytes / res["ns_per_call_median"]  # bytes per ns = GB/s
        print(f"  read bandwidth, {DRAM_BYTES >> 20} MiB buffer ({threads} BLAS thread"
              f"{'s' if threads > 1 else ''}): {dram[threads]:.1f} GB/s ({how}; other load {fmt_load(res)})")
    del big
    for key, m, k, n, what in GEMV_SHAPES:
        x = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((k, n)).astype(np.float32)
        w_copy = np.empty_like(w)
        y = np.zeros((m, n), dtype=np.float32)
        flops = 2.0 * m * k * n
        for threads in BLAS_THREADS:
            with threadpool_limits(limits=threads, user_api="blas"):
                f = lambda: np.matmul(x, w, out=y)  # noqa: E731
                f()
                err = gemm_err(x, w, y, [(0, 0), (0, n // 2), (0, n - 1)])
                if not err <= 1e-3 * math.sqrt(k):
                    raise RuntimeError(f"sgemv {key}: output check failed, max abs err {err:.3g}")
                res = bench(f, m * n, repeats, target_s, cpu_clock=blas_clock(threads))
                rd, how = read_pass(w, repeats, target_s)
                cp = bench(lambda: np.copyto(w_copy, w), w.size, repeats, target_s)
            t = res["ns_per_call_median"]
            read_ns = rd["ns_per_call_median"]
            # The time to stream the weights once: the fastest measured pass over them, by the
            # read-only pass or by OpenBLAS's sgemv itself (which reads several rows at once and
            # beats a one-stream read here); a GEMV can not be much faster than this.
            stream_ns, stream_src = min((read_ns, f"read pass, {how}"), (t, "OpenBLAS sgemv"))
            label = f"sgemv {key} ({threads} thread{'s' if threads > 1 else ''})"
            rows.append(dict(peer="OpenBLAS", kind="gemv", key=key, op=label, what=what, m=m, k=k, n=n,
                             threads=threads, shape=f"{m}x{k}x{n}", res=res, err=err,
                             gflops=flops / t, gflops_best=flops / res["ns_per_call_min"],
                             weight_bytes=w.nbytes, gemv_gbs=w.nbytes / t,
                             read_ns=read_ns, read_gbs=w.nbytes / read_ns, read_how=how,
                             stream_ns=stream_ns, stream_src=stream_src,
                             copy_ns=cp["ns_per_call_median"],
                             dram_gbs=dram[threads], dram_stream_ns=w.nbytes / dram[threads],
                             gemv_over_read=t / read_ns,
                             other_cores_max=max_load(res, rd, cp)))
            print(f"  {label:36s} {what:16s} {t/1e3:7.1f} us median ({w.nbytes/t:5.1f} GB/s of weights); "
                  f"read pass {read_ns/1e3:7.1f} us ({w.nbytes/read_ns:.1f} GB/s, {how}); "
                  f"copy {cp['ns_per_call_median']/1e3:.1f} us; from memory {w.nbytes/dram[threads]/1e3:.1f} us; "
                  f"gemv/read pass {t/read_ns:.2f}; other load {fmt_load(res)}")


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def fmt_int(n: int) -> str:
    return f"{n:,}"


def fmt_load(res):
    v = res.get("other_cores")
    return "n/a" if v is None else f"{v:.2f}"


def report_line(label, where, res, err):
    print(f"  {label:42s} {where:>13s}  {res['ns_per_elem_median']:7.3f} ns/elem wall median "
          f"(min {res['ns_per_elem_min']:.3f}, CPU {res['cpu_ns_per_elem_median']:.3f}; "
          f"{res['iters']} calls x {res['repeats']}; other load {fmt_load(res)}; max abs err {err:.2g})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="fewer repeats and N=1,048,576 only; writes results-quick.md unless --out is given")
    ap.add_argument("--repeats", type=int, default=None, help="timed repeats per case (default 15, quick 5)")
    ap.add_argument("--target-ms", type=float, default=None,
                    help="approximate duration of one repeat in ms (default 50, quick 20)")
    ap.add_argument("--out", default=None, help="markdown output path (default benches/peers/results.md)")
    ap.add_argument("--wait-quiet", type=float, default=0.0, metavar="S",
                    help="before each case, wait up to S seconds for other processes to use < 0.25 cores, "
                         "and re-measure (up to 2 times) a case they disturbed (default 0: do not wait)")
    ap.add_argument("--note", default="", help="free text appended to the results file (e.g. machine load)")
    ap.add_argument("--only", default=",".join(SECTIONS), metavar="LIST",
                    help=f"comma-separated sections to run, from {','.join(SECTIONS)} (default: all)")
    args = ap.parse_args()
    sections = [x.strip() for x in args.only.split(",") if x.strip()]
    unknown = [x for x in sections if x not in SECTIONS]
    if unknown:
        ap.error(f"--only: unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")

    WAIT_QUIET["max_s"] = args.wait_quiet
    repeats = args.repeats or (5 if args.quick else 15)
    target_s = (args.target_ms or (20.0 if args.quick else 50.0)) / 1e3
    sizes = SIZES_QUICK if args.quick else SIZES_FULL
    out_path = args.out or os.path.join(HERE, "results-quick.md" if args.quick else "results.md")
    json_path = os.path.splitext(out_path)[0] + ".json"

    cpu = cpu_info()
    flags = cpu["flags"]
    has = {f: (f in flags) for f in ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_bf16")}

    print("== environment ==")
    for k, v in ENV_SEEN.items():
        print(f"  {k} = {v if v is not None else '(unset)'}")
    bad_env = [k for k in MUST_BE_UNSET if ENV_SEEN[k] is not None]
    if bad_env:
        print(f"  WARNING: {', '.join(bad_env)} set; OpenBLAS kernel choice is overridden and numpy "
              f"results are not comparable. Run as:\n    {DOC_COMMAND}")
    print(f"  CPU: {cpu['model']} (family {cpu['family']}, model {cpu['model_id']}), {cpu['ncpu']} logical CPUs")
    print("  CPU flags: " + ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in has.items()))
    print(f"  python {platform.python_version()}, numpy {np.__version__}, onnxruntime {ort.__version__}, "
          f"onnx {onnx.__version__}")

    monitor = LoadMonitor()

    # numpy SIMD dispatch info
    try:
        from numpy._core._multiarray_umath import __cpu_baseline__, __cpu_dispatch__, __cpu_features__
        np_simd_found = [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]
        np_simd = f"baseline {' '.join(__cpu_baseline__)}; dispatched+found {' '.join(np_simd_found)}"
    except Exception as e:  # pragma: no cover - numpy internals moved
        np_simd = f"n/a ({e})"
    print(f"  numpy SIMD: {np_simd}")

    # threadpoolctl: what BLAS is numpy using?
    tp_lines = []
    for lib in threadpool_info():
        fp = os.path.basename(lib.get("filepath", "") or "")
        desc = (f"{lib.get('user_api')}/{lib.get('internal_api')} {lib.get('version')} "
                f"file={fp} threading={lib.get('threading_layer', 'n/a')} "
                f"architecture={lib.get('architecture', 'n/a')} num_threads={lib.get('num_threads')}")
        tp_lines.append(desc)
        print(f"  threadpoolctl: {desc}")
    blas_arch = next((lib.get("architecture") for lib in threadpool_info() if lib.get("user_api") == "blas"), None)

    rows = []  # dicts: peer, op, n, shape, res, gflops, err, note

    rng = np.random.default_rng(12345)
    max_n = max(sizes)
    x_sym_full = rng.uniform(-8.0, 8.0, size=max_n).astype(np.float32)
    # (0, 16]: uniform on [0,16) mapped to (0,16] by 16 - u
    x_pos_full = (np.float32(16.0) - rng.uniform(0.0, 16.0, size=max_n).astype(np.float32))
    assert float(x_pos_full.min()) > 0.0

    failures = []

    with threadpool_limits(limits=1):
        if "ort" in sections:
            # ---------------- ONNX Runtime ----------------
            print("\n== ONNX Runtime (intra_op=1, inter_op=1, sequential, io_binding with preallocated output) ==")
            for key, label, op, domain, attrs, extra, dom, ref in ORT_ELEMENTWISE:
                try:
                    model = make_model(op, domain, attrs, extra_inputs=extra)
                    sess = ort_session(model)
                except Exception as e:
                    msg = str(e).splitlines()[0][:200]
                    print(f"  {label}: UNSUPPORTED ({msg})")
                    failures.append((f"ORT {label}", msg))
                    continue
                for n in sizes:
                    x = (x_sym_full if dom == "sym" else x_pos_full)[:n]
                    y = np.zeros_like(x)
                    run = ort_bound_runner(sess, x, y)
                    try:
                        run()
                        err = check_output(label, x, y, ref)
                        res = bench(run, n, repeats, target_s)
                    except Exception as e:
                        msg = str(e).splitlines()[0][:200]
                        print(f"  {label} N={fmt_int(n)}: FAILED ({msg})")
                        failures.append((f"ORT {label} N={n}", msg))
                        continue
                    rows.append(dict(peer="ORT", key=key, op=label, n=n, shape=f"[{fmt_int(n)}]", res=res, err=err))
                    report_line(label, f"N={fmt_int(n)}", res, err)
                del sess

            for cols in SOFTMAX_COLS:
                r = SOFTMAX_TOTAL // cols
                label = f"Softmax rows (axis=-1, {cols} cols)"
                try:
                    sess = ort_session(make_model("Softmax", "", {"axis": -1}, shape=["R", "C"]))
                    x = x_sym_full[:SOFTMAX_TOTAL].reshape(r, cols)
                    y = np.zeros_like(x)
                    run = ort_bound_runner(sess, x, y)
                    run()
                    err = check_output(label, x, y, ref_softmax_rows)
                    res = bench(run, SOFTMAX_TOTAL, repeats, target_s)
                except Exception as e:
                    msg = str(e).splitlines()[0][:200]
                    print(f"  {label}: FAILED ({msg})")
                    failures.append((f"ORT {label}", msg))
                    continue
                rows.append(dict(peer="ORT", key=f"Softmax-{cols}", op=label, n=SOFTMAX_TOTAL,
                                 shape=f"[{r}, {cols}]", res=res, err=err))
                report_line(label, f"[{r}x{cols}]", res, err)
                del sess

        if "numpy" in sections:
            # ---------------- numpy ----------------
            print("\n== numpy (out= preallocated) ==")
            a32 = np.float32(STREAM_A)
            np_cases = [
                ("np.exp", "np.exp", "sym", lambda x, y: np.exp(x, out=y), np.exp),
                ("np.log", "np.log", "pos", lambda x, y: np.log(x, out=y), np.log),
                ("np.tanh", "np.tanh", "sym", lambda x, y: np.tanh(x, out=y), np.tanh),
                ("np.multiply", "np.multiply y=a*x (streaming baseline)", "sym",
                 lambda x, y: np.multiply(x, a32, out=y), lambda x: np.float32(STREAM_A) * x),
            ]
            for key, label, dom, f, ref in np_cases:
                for n in sizes:
                    x = (x_sym_full if dom == "sym" else x_pos_full)[:n]
                    y = np.zeros_like(x)
                    f(x, y)
                    err = check_output(label, x, y, ref)
                    res = bench(lambda: f(x, y), n, repeats, target_s)
                    rows.append(dict(peer="numpy", key=key, op=label, n=n, shape=f"[{fmt_int(n)}]", res=res, err=err))
                    report_line(label, f"N={fmt_int(n)}", res, err)

    if "gemm" in sections:
        gemm_section(rows, rng, repeats, target_s)
    if "gemv" in sections:
        gemv_section(rows, rng, repeats, target_s)

    load = monitor.summary()

    # ---------------- report ----------------
    elem_rows = [r for r in rows if r.get("kind") not in ("gemm", "gemv")]
    gemm_rows = [r for r in rows if r.get("kind") == "gemm"]
    gemv_rows = [r for r in rows if r.get("kind") == "gemv"]
    tables = []
    if elem_rows:
        table = ["| peer | op | shape / N | ns/elem wall median | ns/elem wall min | ns/elem CPU median "
                 "| other load (cores) |",
                 "| --- | --- | --- | ---: | ---: | ---: | ---: |"]
        for r in elem_rows:
            res = r["res"]
            table.append(f"| {r['peer']} | {r['op']} | {r['shape']} | **{res['ns_per_elem_median']:.3f}** | "
                         f"{res['ns_per_elem_min']:.3f} | {res['cpu_ns_per_elem_median']:.3f} | {fmt_load(res)} |")
        tables.append(("Elementwise and softmax", table))
    if gemm_rows:
        table = ["| sgemm m x k x n | in the block | BLAS threads | ms/call median | GFLOP/s wall median "
                 "| GFLOP/s best | CPU | other load (cores) |",
                 "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: |"]
        for r in gemm_rows:
            res = r["res"]
            cpu_txt = (f"{r['gflops_cpu']:.1f} GFLOP/s per CPU-second" if r["gflops_cpu"]
                       else f"{r['util']:.2f} cores busy")
            table.append(f"| {r['shape']} | {r['what']} | {r['threads']} | {res['ns_per_call_median']/1e6:.2f} | "
                         f"**{r['gflops']:.1f}** | {r['gflops_best']:.1f} | {cpu_txt} | {fmt_load(res)} |")
        tables.append(("OpenBLAS sgemm", table))
    if gemv_rows:
        table = ["| sgemv m x k x n | in the block | BLAS threads | weights MiB | gemv us median | GB/s of weights "
                 "| read pass us | read GB/s | gemv / read pass | stream once us | copy us | from memory us "
                 "| other load (cores, max) |",
                 "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in gemv_rows:
            res = r["res"]
            load_txt = "n/a" if r["other_cores_max"] is None else f"{r['other_cores_max']:.2f}"
            table.append(f"| {r['shape']} | {r['what']} | {r['threads']} | {r['weight_bytes']/2**20:.1f} | "
                         f"**{res['ns_per_call_median']/1e3:.1f}** | {r['gemv_gbs']:.1f} | "
                         f"{r['read_ns']/1e3:.1f} | {r['read_gbs']:.1f} | {r['gemv_over_read']:.2f} | "
                         f"{r['stream_ns']/1e3:.1f} | {r['copy_ns']/1e3:.1f} | "
                         f"{r['dram_stream_ns']/1e3:.1f} | {load_txt} |")
        tables.append(("OpenBLAS sgemv (m = 1) beside streaming the weights", table))
    tables_md = "\n\n".join(f"### {title}\n\n" + "\n".join(t) for title, t in tables)
    print("\n" + tables_md)

    if failures:
        print("\nFailed / unsupported:")
        for what, why in failures:
            print(f"  - {what}: {why}")

    load_line = (f"load average at start {load['load_start']}, at end {load['load_end']}; "
                 f"wall {load['wall_s']:.0f} s")
    if "other_cores" in load:
        load_line += (f"; CPU busy with other work during the run: {load['other_cores']:.2f} cores on average "
                      f"(this process {load['self_cores']:.2f}, hypervisor steal {load['steal_cores']:.2f})")
    print("\n" + load_line)

    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    env_txt = ", ".join(f"{k}={'(unset)' if ENV_SEEN[k] is None else ENV_SEEN[k]}" for k in WATCHED_ENV)
    cmd = DOC_COMMAND + ("".join(" " + a for a in sys.argv[1:]))
    md = []
    md.append("# Peer benchmark results")
    md.append("")
    md.append(f"- Date: {now}")
    md.append(f"- Command: `{cmd}`" + ("" if not bad_env else
                                       f" — **WARNING: {', '.join(bad_env)} were set; numpy/OpenBLAS numbers "
                                       "are not valid**"))
    md.append(f"- Mode: {'quick' if args.quick else 'full'}; {repeats} repeats per case, each repeat about "
              f"{target_s*1e3:.0f} ms of back-to-back calls (sgemm at least 200 ms); median and min reported; "
              f"sections: {', '.join(sections)}")
    md.append(f"- CPU: {cpu['model']} (family {cpu['family']}, model {cpu['model_id']}), "
              f"{cpu['ncpu']} logical CPUs")
    md.append("- CPU flags: " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in has.items()))
    md.append(f"- Versions: Python {platform.python_version()}, numpy {np.__version__}, "
              f"onnxruntime {ort.__version__}, onnx {onnx.__version__}")
    md.append(f"- Environment seen: {env_txt}")
    md.append(f"- numpy SIMD: {np_simd}")
    for line in tp_lines:
        md.append(f"- threadpoolctl: {line}")
    md.append(f"- Machine load: {load_line}")
    if args.wait_quiet > 0:
        md.append(f"- Waited up to {args.wait_quiet:.0f} s before each case for other work to drop below "
                  f"{WAIT_QUIET['threshold']} cores, re-measuring a case up to {WAIT_QUIET['retries']} times if "
                  f"other work exceeded {2 * WAIT_QUIET['threshold']} cores during it; least disturbed kept "
                  f"({WAIT_QUIET['waited_s']:.0f} s waited in total)")
    if args.note:
        md.append(f"- Note: {args.note}")
    md.append("")
    md.append("Threads: ORT intra_op_num_threads=1, inter_op_num_threads=1, ORT_SEQUENTIAL; numpy/OpenBLAS "
              "limited to 1 thread with threadpoolctl, except the sgemm/sgemv rows at 2 BLAS threads. ORT runs through "
              "io_binding with a preallocated output (no per-call allocation). Inputs uniform in [-8, 8] "
              "(Log: (0, 16]); Softmax over rows of a [rows, cols] tensor with 1,048,576 elements. "
              "Each peer's output was checked on a sample against a float64 reference before timing.")
    md.append("")
    md.append("Columns: *wall median* (bold) is the headline, comparable with criterion's wall-clock "
              "numbers; *wall min* is the fastest repeat; *CPU median* is the calling thread's CPU time, "
              "which leaves out time the thread was preempted but not the slowdown from work running on "
              "the other core (shared caches and memory bandwidth; on a VM the vCPUs may also share a "
              "physical core), so under load both can rise. ns/elem = time per call / elements; "
              "GFLOP/s = 2*m*k*n / time per call. "
              f"*other load* is how many of the {cpu['ncpu']} cores other processes kept busy while that "
              "row was timed (from /proc/stat, this process subtracted): near 0 the row is clean; near 1 "
              "or above, a single-threaded row shares caches and memory bandwidth with that work, and a "
              "multi-threaded row (2 BLAS threads) loses a core to it.")
    md.append("")
    if gemv_rows:
        md.append("sgemv: `np.matmul(x[1,k], w[k,n], out=y[1,n])`, repeated on the same weights. *read pass* "
                  "is one read-only pass over the same weight matrix (the faster of OpenBLAS `sdot(w, w)` "
                  "and `np.max(w)`), timed the same way, so in the same cache state as the repeated GEMV "
                  "(the matrices are 6.75-9 MiB, about the size of the L3); *read GB/s* = weight bytes / "
                  "that time. *gemv / read pass* below 1 means OpenBLAS's sgemv reads the weights faster "
                  "than the one-stream read pass (it reads several rows at once), so the read pass alone "
                  "is not a floor. *stream once* is the fastest measured pass over the weights, the read "
                  "pass or OpenBLAS's sgemv at the same thread count: the time to judge a GEMV against "
                  "(`compare.py` divides the crate's GEMV by it). *copy* is `np.copyto` of the weights "
                  "(read and write). *from memory* = weight bytes / the one-stream read bandwidth of a "
                  "256 MiB buffer, for weights that are not in any cache.")
        md.append("")
    if has["avx512f"]:
        md.append("Kernels: the CPU has avx512f, so ONNX Runtime's MLAS can select its AVX512F kernels "
                  "(exp, softmax sum-of-exp, fused GELU(erf), SiLU) and AVX2/FMA3 kernels elsewhere.")
    else:
        md.append("Kernels: the CPU has no avx512f, so ONNX Runtime's MLAS runs its AVX2/FMA3 kernels "
                  "(exp, logistic, tanh, erf, softmax sum-of-exp; AVX for the softmax max/normalise) and "
                  "its generic (non-AVX512) paths where the only fused kernel is AVX512F "
                  "(GELU(erf), SiLU); none of its AVX512F kernels run. (From MLAS's CPU dispatch in the "
                  "ORT sources, not traced per op in this build.) Log is not an MLAS kernel. "
                  f"OpenBLAS reports core type {blas_arch}.")
    md.append("")
    md.append(tables_md)
    if blas_arch:
        md.append("")
        md.append(f"OpenBLAS core type in use (threadpoolctl `architecture`): **{blas_arch}**.")
    if failures:
        md.append("")
        md.append("Failed or unsupported:")
        md.append("")
        for what, why in failures:
            md.append(f"- {what}: {why}")
    md.append("")
    with open(out_path, "w") as f:
        f.write("\n".join(md))
    print(f"\nwrote {os.path.relpath(out_path)}")

    # The same figures for benches/peers/compare.py.
    doc = {
        "schema": 1,
        "date": now,
        "command": cmd,
        "mode": "quick" if args.quick else "full",
        "sections": sections,
        "repeats": repeats,
        "target_ms": target_s * 1e3,
        "cpu": {"model": cpu["model"], "family": cpu["family"], "model_id": cpu["model_id"],
                "ncpu": cpu["ncpu"], "flags": has},
        "versions": {"python": platform.python_version(), "numpy": np.__version__,
                     "onnxruntime": ort.__version__, "onnx": onnx.__version__},
        "env": ENV_SEEN,
        "env_valid": not bad_env,
        "blas_architecture": blas_arch,
        "load": load,
        "failures": [{"what": w, "why": y} for w, y in failures],
        "rows": rows,
    }
    with open(json_path, "w") as f:
        json.dump(doc, f, indent=1, default=float)
    print(f"wrote {os.path.relpath(json_path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
