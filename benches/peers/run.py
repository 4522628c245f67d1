#!/usr/bin/env python3
"""Peer benchmarks for activation-kernels: ONNX Runtime, numpy and OpenBLAS
measured on this machine, single-threaded, as medians of repeated timings.

Run from the repository root, with the OpenBLAS overrides unset:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE benches/peers/.venv/bin/python benches/peers/run.py

See benches/peers/README.md for how to read the numbers.
"""

from __future__ import annotations

import argparse
import datetime as _dt
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
GEMM_N = 1024


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

# (label, op_type, domain, attrs, extra initializer inputs, input domain, reference)
ORT_ELEMENTWISE = [
    ("Exp", "Exp", "", None, None, "sym", np.exp),
    ("Log", "Log", "", None, None, "pos", np.log),
    ("Sigmoid", "Sigmoid", "", None, None, "sym", ref_sigmoid),
    ("Tanh", "Tanh", "", None, None, "sym", np.tanh),
    ("Erf", "Erf", "", None, None, "sym", _erf),
    ("Gelu (com.microsoft, erf)", "Gelu", "com.microsoft", None, None, "sym", ref_gelu_erf),
    ("Gelu opset20 approximate=none", "Gelu", "", {"approximate": "none"}, None, "sym", ref_gelu_erf),
    ("Gelu opset20 approximate=tanh", "Gelu", "", {"approximate": "tanh"}, None, "sym", ref_gelu_tanh),
    ("FastGelu (com.microsoft, tanh)", "FastGelu", "com.microsoft", None, None, "sym", ref_gelu_tanh),
    ("SiLU (com.microsoft QuickGelu alpha=1)", "QuickGelu", "com.microsoft", {"alpha": 1.0}, None, "sym",
     lambda x: x * ref_sigmoid(x)),
    ("Mul y=a*x (ORT streaming baseline)", "Mul", "", None, [("a", STREAM_A)], "sym",
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
    args = ap.parse_args()

    WAIT_QUIET["max_s"] = args.wait_quiet
    repeats = args.repeats or (5 if args.quick else 15)
    target_s = (args.target_ms or (20.0 if args.quick else 50.0)) / 1e3
    sizes = SIZES_QUICK if args.quick else SIZES_FULL
    out_path = args.out or os.path.join(HERE, "results-quick.md" if args.quick else "results.md")

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
        # ---------------- ONNX Runtime ----------------
        print("\n== ONNX Runtime (intra_op=1, inter_op=1, sequential, io_binding with preallocated output) ==")
        for label, op, domain, attrs, extra, dom, ref in ORT_ELEMENTWISE:
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
                rows.append(dict(peer="ORT", op=label, n=n, shape=f"[{fmt_int(n)}]", res=res, err=err))
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
            rows.append(dict(peer="ORT", op=label, n=SOFTMAX_TOTAL, shape=f"[{r}, {cols}]", res=res, err=err))
            report_line(label, f"[{r}x{cols}]", res, err)
            del sess

        # ---------------- numpy ----------------
        print("\n== numpy (out= preallocated) ==")
        a32 = np.float32(STREAM_A)
        np_cases = [
            ("np.exp", "sym", lambda x, y: np.exp(x, out=y), np.exp),
            ("np.log", "pos", lambda x, y: np.log(x, out=y), np.log),
            ("np.tanh", "sym", lambda x, y: np.tanh(x, out=y), np.tanh),
            ("np.multiply y=a*x (streaming baseline)", "sym",
             lambda x, y: np.multiply(x, a32, out=y), lambda x: np.float32(STREAM_A) * x),
        ]
        for label, dom, f, ref in np_cases:
            for n in sizes:
                x = (x_sym_full if dom == "sym" else x_pos_full)[:n]
                y = np.zeros_like(x)
                f(x, y)
                err = check_output(label, x, y, ref)
                res = bench(lambda: f(x, y), n, repeats, target_s)
                rows.append(dict(peer="numpy", op=label, n=n, shape=f"[{fmt_int(n)}]", res=res, err=err))
                report_line(label, f"N={fmt_int(n)}", res, err)

    # ---------------- OpenBLAS sgemm ----------------
    print(f"\n== OpenBLAS sgemm via numpy.matmul, {GEMM_N}x{GEMM_N}x{GEMM_N} float32, out= ==")
    ga = rng.standard_normal((GEMM_N, GEMM_N)).astype(np.float32)
    gb = rng.standard_normal((GEMM_N, GEMM_N)).astype(np.float32)
    gc = np.zeros((GEMM_N, GEMM_N), dtype=np.float32)
    flops = 2.0 * GEMM_N**3
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            f = lambda: np.matmul(ga, gb, out=gc)  # noqa: E731
            f()
            # spot check a few entries against float64
            idx = [(0, 0), (17, 513), (GEMM_N - 1, GEMM_N - 1)]
            err = max(abs(float(gc[i, j]) - float(ga[i].astype(np.float64) @ gb[:, j].astype(np.float64)))
                      for i, j in idx)
            # 1 thread: CPU time of the calling thread; 2 threads: CPU time of the whole process
            clock = time.thread_time_ns if threads == 1 else time.process_time_ns
            res = bench(f, GEMM_N * GEMM_N, repeats, max(target_s, 0.2), cpu_clock=clock)
        g_med = flops / res["ns_per_call_median"]
        g_best = flops / res["ns_per_call_min"]
        # CPU-time GFLOP/s only makes sense per core; for 2 threads report CPU utilisation instead
        g_cpu = flops / res["cpu_ns_per_call_median"] if threads == 1 else None
        util = res["cpu_ns_per_call_median"] / res["ns_per_call_median"]
        label = f"sgemm {GEMM_N}^3 ({threads} thread{'s' if threads > 1 else ''})"
        rows.append(dict(peer="OpenBLAS", op=label, n=GEMM_N**3, shape=f"{GEMM_N}x{GEMM_N}x{GEMM_N}",
                         res=res, err=err, gflops=g_med, gflops_best=g_best, gflops_cpu=g_cpu, util=util))
        print(f"  {label:42s} {res['ns_per_call_median']/1e6:.2f} ms/call median -> {g_med:.1f} GFLOP/s "
              f"(best {g_best:.1f}"
              + (f", per CPU-second {g_cpu:.1f}" if g_cpu else f", CPU utilisation {util:.2f} cores")
              + f"), max abs err {err:.2g}")

    load = monitor.summary()

    # ---------------- report ----------------
    table = ["| peer | op | shape / N | ns/elem wall median | ns/elem wall min | ns/elem CPU median "
             "| GFLOP/s | other load (cores) |",
             "| --- | --- | --- | ---: | ---: | ---: | --- | ---: |"]
    for r in rows:
        res = r["res"]
        if "gflops" in r:
            extra = (f"CPU-time {r['gflops_cpu']:.1f}" if r["gflops_cpu"]
                     else f"CPU utilisation {r['util']:.2f} cores")
            table.append(f"| {r['peer']} | {r['op']} | {r['shape']} | – | – | – | "
                         f"**{r['gflops']:.1f}** wall median (best {r['gflops_best']:.1f}; {extra}; "
                         f"{res['ns_per_call_median']/1e6:.1f} ms/call) | {fmt_load(res)} |")
        else:
            table.append(f"| {r['peer']} | {r['op']} | {r['shape']} | **{res['ns_per_elem_median']:.3f}** | "
                         f"{res['ns_per_elem_min']:.3f} | {res['cpu_ns_per_elem_median']:.3f} | | {fmt_load(res)} |")
    table_md = "\n".join(table)
    print("\n" + table_md)

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
              f"{target_s*1e3:.0f} ms of back-to-back calls (sgemm at least 200 ms); median and min reported")
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
              "limited to 1 thread with threadpoolctl, except the 2-thread sgemm row. ORT runs through "
              "io_binding with a preallocated output (no per-call allocation). Inputs uniform in [-8, 8] "
              "(Log: (0, 16]); Softmax over rows of a [rows, cols] tensor with 1,048,576 elements. "
              "Each peer's output was checked on a sample against a float64 reference before timing.")
    md.append("")
    md.append("Columns: *wall median* (bold) is the headline, comparable with criterion's wall-clock "
              "numbers; *wall min* is the fastest repeat; *CPU median* is the calling thread's CPU time, "
              "which leaves out time the thread was preempted but not the slowdown from work running on "
              "the other core (shared caches and memory bandwidth; on a VM the vCPUs may also share a "
              "physical core), so under load both can rise. ns/elem = time per call / elements; GFLOP/s = 2*n^3 / time per call. "
              f"*other load* is how many of the {cpu['ncpu']} cores other processes kept busy while that "
              "row was timed (from /proc/stat, this process subtracted): near 0 the row is clean; near 1 "
              "or above, a single-threaded row shares caches and memory bandwidth with that work, and a "
              "multi-threaded row (2-thread sgemm) loses a core to it.")
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
    md.append(table_md)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
