#!/usr/bin/env python3
"""ONNX Runtime running the transformer block of examples/transformer_block as one graph.

The graph is the same pre-LayerNorm GPT-2-style block as `forward()` in
examples/transformer_block/block.rs: LayerNormalization, MatMul+Add to q|k|v, 12 heads of 64,
causal softmax attention with scale 1/sqrt(head_dim), output projection + bias + residual,
LayerNormalization, MatMul+Add up to d_ff, Gelu (erf form, opset-20 `Gelu`), MatMul+Add down +
residual. The weights and the input are the example's (its seeded integer generator, redone in
numpy), so both run on the same numbers. Before any timing, ORT's output is checked against a
float64 numpy implementation of the block, on a small configuration and on the timed one.

With --decode it times one decode step instead: one new token per sequence attending to a KV cache
of seq-1 past keys/values (graph inputs) plus itself; the graph also returns the grown K/V cache.

Run from the repository root:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE benches/peers/.venv/bin/python benches/peers/ort_block.py

See benches/peers/README.md.
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
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as peers  # noqa: E402  (captures the environment before numpy/ORT load)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

DOC_COMMAND = ("env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "
               "benches/peers/.venv/bin/python benches/peers/ort_block.py")
OPSET = 20  # LayerNormalization is opset 17, Gelu opset 20
LN_EPS = 1e-5  # block.rs LN_EPS


@dataclass(frozen=True)
class Config:
    d_model: int = 768
    heads: int = 12
    d_ff: int = 3072
    seq: int = 256
    batch: int = 1

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def tokens(self) -> int:
        return self.seq * self.batch


# Small enough for a float64 reference in well under a second, large enough to exercise batch > 1,
# several heads and the causal mask.
CHECK_CONFIG = Config(d_model=64, heads=4, d_ff=256, seq=16, batch=2)


# --------------------------------------------------------------------------
# the example's weights: splitmix64 integers times powers of two (block.rs IntRng)
# --------------------------------------------------------------------------

M64 = (1 << 64) - 1


class IntRng:
    """block.rs `IntRng`, vectorised: draw i (from 1) is splitmix64 of seed + i * golden."""

    def __init__(self, seed: int):
        self.seed = seed & M64
        self.drawn = 0

    def _next(self, count: int) -> np.ndarray:
        i = np.arange(self.drawn + 1, self.drawn + count + 1, dtype=np.uint64)
        self.drawn += count
        with np.errstate(over="ignore"):
            z = np.uint64(self.seed) + i * np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))

    def values(self, count: int, amplitude: float) -> np.ndarray:
        ints = (self._next(count) >> np.uint64(40)).astype(np.int64) - (1 << 23)
        return ints.astype(np.float32) * np.float32(amplitude / 8388608.0)

    def vector(self, n: int, center: float, amplitude: float) -> np.ndarray:
        return np.float32(center) + self.values(n, amplitude)

    def matrix(self, r: int, c: int, amplitude: float) -> np.ndarray:
        return self.values(r * c, amplitude).reshape(r, c)


def pow2_near(x: float) -> float:
    l2 = math.log2(x)
    return 2.0 ** (math.copysign(math.floor(abs(l2) + 0.5), l2))  # Rust's round: half away from 0


def make_weights(c: Config, seed: int) -> dict:
    g = IntRng(seed)
    d, f = c.d_model, c.d_ff
    a_in = pow2_near(1.0 / math.sqrt(d))
    a_ff = pow2_near(1.0 / math.sqrt(f))
    w = {}
    # Same order as block.rs Weights::new.
    w["ln1_g"] = g.vector(d, 1.0, 0.125)
    w["ln1_b"] = g.vector(d, 0.0, 0.0625)
    w["w_qkv"] = g.matrix(d, 3 * d, a_in)
    w["b_qkv"] = g.vector(3 * d, 0.0, 0.03125)
    w["w_o"] = g.matrix(d, d, a_in)
    w["b_o"] = g.vector(d, 0.0, 0.03125)
    w["ln2_g"] = g.vector(d, 1.0, 0.125)
    w["ln2_b"] = g.vector(d, 0.0, 0.0625)
    w["w_up"] = g.matrix(d, f, a_in)
    w["b_up"] = g.vector(f, 0.0, 0.03125)
    w["w_down"] = g.matrix(f, d, a_ff)
    w["b_down"] = g.vector(d, 0.0, 0.03125)
    return w


def make_input(c: Config, seed: int) -> np.ndarray:
    """block.rs `input`: [tokens, d_model] from the seed xor 0xA5A5A5A5, here as [batch, seq, d_model]."""
    return IntRng(seed ^ 0xA5A5A5A5).matrix(c.tokens, c.d_model, 2.0).reshape(c.batch, c.seq, c.d_model)


# --------------------------------------------------------------------------
# float64 reference (block.rs forward_f64)
# --------------------------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])


def layer_norm64(x, g, b):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LN_EPS) * g.astype(np.float64) + b.astype(np.float64)


def qkv64(c: Config, w: dict, x64: np.ndarray):
    """q, k, v as [batch, heads, seq, head_dim] float64."""
    h = layer_norm64(x64, w["ln1_g"], w["ln1_b"])
    qkv = h @ w["w_qkv"].astype(np.float64) + w["b_qkv"].astype(np.float64)
    b, s = x64.shape[0], x64.shape[1]
    parts = qkv.reshape(b, s, 3, c.heads, c.head_dim).transpose(2, 0, 3, 1, 4)
    return parts[0], parts[1], parts[2]


def block64(c: Config, w: dict, x: np.ndarray):
    """The block in float64 on x [batch, seq, d_model]; returns (y, k, v) with k, v [b, h, s, hd]."""
    x64 = x.astype(np.float64)
    q, k, v = qkv64(c, w, x64)
    sc = q @ k.transpose(0, 1, 3, 2) / math.sqrt(c.head_dim)
    s = x.shape[1]
    sc = np.where(np.triu(np.ones((s, s), dtype=bool), k=1), -np.inf, sc)
    sc = np.exp(sc - sc.max(axis=-1, keepdims=True))
    p = sc / sc.sum(axis=-1, keepdims=True)
    attn = (p @ v).transpose(0, 2, 1, 3).reshape(x.shape[0], s, c.d_model)
    x1 = x64 + attn @ w["w_o"].astype(np.float64) + w["b_o"].astype(np.float64)
    h2 = layer_norm64(x1, w["ln2_g"], w["ln2_b"])
    u = h2 @ w["w_up"].astype(np.float64) + w["b_up"].astype(np.float64)
    u = 0.5 * u * (1.0 + _erf(u / math.sqrt(2.0)))
    y = x1 + u @ w["w_down"].astype(np.float64) + w["b_down"].astype(np.float64)
    return y, k, v


# --------------------------------------------------------------------------
# the ONNX graph
# --------------------------------------------------------------------------

def build_block(c: Config, w: dict, decode: bool) -> bytes:
    """Prefill: x [B, S, D] -> y [B, S, D], causal. Decode: x [B, 1, D], past_k/past_v
    [B, H, S-1, hd] -> y [B, 1, D], present_k/present_v [B, H, S, hd]."""
    B, H, hd, D = c.batch, c.heads, c.head_dim, c.d_model
    S = 1 if decode else c.seq
    nodes, inits = [], [numpy_helper.from_array(v, name=k) for k, v in w.items()]

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name=name))
        return name

    def node(op, inputs, output, **attrs):
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    const("scale", np.float32(1.0 / math.sqrt(hd)))
    const("heads_shape", np.array([B, S, H, hd], dtype=np.int64))
    const("model_shape", np.array([B, S, D], dtype=np.int64))
    const("qkv_split", np.array([D, D, D], dtype=np.int64))

    h = node("LayerNormalization", ["x", "ln1_g", "ln1_b"], "ln1", axis=-1, epsilon=LN_EPS)
    qkv = node("Add", [node("MatMul", [h, "w_qkv"], "qkv_mm"), "b_qkv"], "qkv")
    nodes.append(helper.make_node("Split", [qkv, "qkv_split"], ["q2", "k2", "v2"], name="split", axis=-1))

    def heads(t, perm):  # [B, S, D] -> [B, S, H, hd] -> transposed
        return node("Transpose", [node("Reshape", [t, "heads_shape"], t + "_4d")], t + "_heads", perm=perm)

    q = heads("q2", [0, 2, 1, 3])  # [B, H, S, hd]
    k = heads("k2", [0, 2, 1, 3])
    v = heads("v2", [0, 2, 1, 3])
    if decode:
        k = node("Concat", ["past_k", k], "present_k", axis=2)  # [B, H, S_total, hd]
        v = node("Concat", ["past_v", v], "present_v", axis=2)
    kt = node("Transpose", [k], "k_t", perm=[0, 1, 3, 2])  # [B, H, hd, S_total]
    sc = node("Mul", [node("MatMul", [q, kt], "qk"), "scale"], "scores")
    if not decode:
        mask = np.triu(np.full((c.seq, c.seq), -np.inf, dtype=np.float32), k=1)
        sc = node("Add", [sc, const("causal_mask", mask)], "scores_masked")
    p = node("Softmax", [sc], "probs", axis=-1)
    o = node("MatMul", [p, v], "attn_heads")  # [B, H, S, hd]
    o = node("Reshape", [node("Transpose", [o], "attn_t", perm=[0, 2, 1, 3]), "model_shape"], "attn")
    x1 = node("Add", [node("Add", [node("MatMul", [o, "w_o"], "proj_mm"), "b_o"], "proj"), "x"], "x1")
    h2 = node("LayerNormalization", [x1, "ln2_g", "ln2_b"], "ln2", axis=-1, epsilon=LN_EPS)
    u = node("Add", [node("MatMul", [h2, "w_up"], "up_mm"), "b_up"], "up")
    u = node("Gelu", [u], "gelu", approximate="none")
    node("Add", [node("Add", [node("MatMul", [u, "w_down"], "down_mm"), "b_down"], "down"), x1], "y")

    f32 = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("x", f32, [B, S, D])]
    outputs = [helper.make_tensor_value_info("y", f32, [B, S, D])]
    if decode:
        P = c.seq - 1
        inputs += [helper.make_tensor_value_info(n, f32, [B, H, P, hd]) for n in ("past_k", "past_v")]
        outputs += [helper.make_tensor_value_info(n, f32, [B, H, c.seq, hd]) for n in ("present_k", "present_v")]
    graph = helper.make_graph(nodes, "transformer_block_decode" if decode else "transformer_block",
                              inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=10)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def session(model: bytes, threads: int, spin: bool, optimized_path: str | None = None):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    so.log_severity_level = 3
    if optimized_path:
        so.optimized_model_filepath = optimized_path
    return ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])


def feeds(c: Config, w: dict, x: np.ndarray, decode: bool):
    """(inputs, preallocated outputs) as dicts of numpy arrays. Decode: the past K/V are the
    float64 reference's keys/values of the first seq-1 tokens, the new token is the last one."""
    if not decode:
        return {"x": x}, {"y": np.zeros_like(x)}
    _, k, v = block64(c, w, x)
    ins = {"x": np.ascontiguousarray(x[:, -1:, :]),
           "past_k": np.ascontiguousarray(k[:, :, :-1, :], dtype=np.float32),
           "past_v": np.ascontiguousarray(v[:, :, :-1, :], dtype=np.float32)}
    outs = {"y": np.zeros((c.batch, 1, c.d_model), np.float32),
            "present_k": np.zeros((c.batch, c.heads, c.seq, c.head_dim), np.float32),
            "present_v": np.zeros((c.batch, c.heads, c.seq, c.head_dim), np.float32)}
    return ins, outs


def bound_runner(sess, ins: dict, outs: dict):
    """io_binding with preallocated outputs so ORT does not allocate them per call."""
    b = sess.io_binding()
    for name, a in ins.items():
        b.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(a))
    for name, a in outs.items():
        b.bind_ortvalue_output(name, ort.OrtValue.ortvalue_from_numpy(a))
    return lambda: sess.run_with_iobinding(b)


def check(c: Config, w: dict, x: np.ndarray, decode: bool, sess) -> dict:
    """Runs the session once and compares y (and, decoding, the grown K/V cache) with the float64
    block; raises if they differ by more than float32 rounding can explain."""
    ins, outs = feeds(c, w, x, decode)
    bound_runner(sess, ins, outs)()
    y_ref, k_ref, v_ref = block64(c, w, x)
    if decode:
        y_ref = y_ref[:, -1:, :]
    got = {"y": (outs["y"], y_ref)}
    if decode:
        got["present_k"] = (outs["present_k"], k_ref)
        got["present_v"] = (outs["present_v"], v_ref)
    errs = {}
    for name, (a, ref) in got.items():
        err = float(np.max(np.abs(a.astype(np.float64) - ref)))
        scale = max(1.0, float(np.max(np.abs(ref))))
        # ORT in float32 lands within about 5e-7 of the float64 block at the default and the check
        # sizes; a wrong mask, head layout or scale gives 1e-1 or more, GELU's tanh form about 1e-4.
        tol = 2e-5 * scale
        if not (math.isfinite(err) and err <= tol):
            raise RuntimeError(f"ORT block {'decode ' if decode else ''}{c}: {name} differs from the float64 "
                               f"block by {err:.3g} (tolerance {tol:.3g}): the graph is wrong")
        errs[name] = err
    return errs


def optimized_ops(model: bytes) -> str:
    """Op types of the graph after ORT's optimisations (ORT_ENABLE_ALL), e.g. which fusions ran."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "optimized.onnx")
        session(model, 1, False, optimized_path=path)
        m = onnx.load(path, load_external_data=False)
    counts = Counter((n.domain + "." if n.domain else "") + n.op_type for n in m.graph.node)
    return ", ".join(f"{op} x{n}" for op, n in sorted(counts.items()))


def time_runs(run, warmup: int, runs: int) -> dict:
    for _ in range(warmup):
        run()
    stat0, self0, t0 = peers.read_proc_stat(), os.times(), time.monotonic()
    wall, cpu = [], []
    for _ in range(runs):
        c = time.process_time_ns()
        t = time.perf_counter_ns()
        run()
        wall.append(time.perf_counter_ns() - t)
        cpu.append(time.process_time_ns() - c)
    return {"ms_median": statistics.median(wall) / 1e6, "ms_min": min(wall) / 1e6,
            "ms_max": max(wall) / 1e6, "cpu_cores": statistics.median(cpu) / statistics.median(wall),
            "runs": runs, "warmup": warmup, "other_cores": peers.other_load(stat0, self0, t0)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    d = Config()
    ap.add_argument("--d-model", type=int, default=d.d_model)
    ap.add_argument("--heads", type=int, default=d.heads)
    ap.add_argument("--d-ff", type=int, default=d.d_ff)
    ap.add_argument("--seq", type=int, default=d.seq,
                    help="tokens per sequence; with --decode, the KV cache holds seq-1 past tokens")
    ap.add_argument("--batch", type=int, default=d.batch)
    ap.add_argument("--seed", type=int, default=2024, help="weight/input seed (the example's default)")
    ap.add_argument("--decode", action="store_true",
                    help="time one decode step (1 new token per sequence, KV cache of seq-1) instead of the block")
    ap.add_argument("--threads", default="1,2", help="comma-separated intra_op thread counts (default 1,2)")
    ap.add_argument("--no-spin", action="store_true",
                    help="set session.intra_op.allow_spinning=0 (ORT's default spins its worker threads)")
    ap.add_argument("--quick", action="store_true", help="fewer runs; writes block[-decode]-quick.{md,json}")
    ap.add_argument("--warmup", type=int, default=None, help="untimed runs first (default 10, quick 3)")
    ap.add_argument("--runs", type=int, default=None,
                    help="timed runs (default 50, quick 10; decode 300, quick 50)")
    ap.add_argument("--check-only", action="store_true", help="only build the graphs and check them")
    ap.add_argument("--out", default=None, help="markdown output (the JSON goes next to it)")
    ap.add_argument("--note", default="", help="free text added to the results file")
    args = ap.parse_args()

    c = Config(args.d_model, args.heads, args.d_ff, args.seq, args.batch)
    if c.heads <= 0 or c.d_model % c.heads:
        ap.error("--d-model must be a multiple of --heads")
    if args.decode and c.seq < 2:
        ap.error("--decode needs --seq >= 2 (a KV cache of seq-1 tokens)")
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    warmup = args.warmup if args.warmup is not None else (3 if args.quick else 10)
    runs = args.runs or ((50 if args.quick else 300) if args.decode else (10 if args.quick else 50))
    stem = "block-decode" if args.decode else "block"
    out_path = args.out or os.path.join(HERE, f"{stem}{'-quick' if args.quick else ''}.md")
    json_path = os.path.splitext(out_path)[0] + ".json"
    what = "decode step" if args.decode else "block"

    cpu = peers.cpu_info()
    bad_env = [k for k in peers.MUST_BE_UNSET if peers.ENV_SEEN[k] is not None]
    print(f"ORT {ort.__version__}, numpy {np.__version__}, onnx {onnx.__version__}; CPU {cpu['model']} "
          f"(family {cpu['family']}, model {cpu['model_id']}), {cpu['ncpu']} logical CPUs, "
          f"avx512f {'yes' if 'avx512f' in cpu['flags'] else 'no'}")
    if bad_env:
        print(f"  WARNING: {', '.join(bad_env)} set (only matters for the numpy reference); run as:\n"
              f"    {DOC_COMMAND}")
    monitor = peers.LoadMonitor()

    # 1. Check the graph against float64 on a small configuration (prefill and decode), then on
    #    the configuration that is timed.
    checks = {}
    for cc, label in ((CHECK_CONFIG, "small"), (c, "timed")):
        for dec in ([False, True] if label == "small" else [args.decode]):
            wc, xc = make_weights(cc, args.seed), make_input(cc, args.seed)
            errs = check(cc, wc, xc, dec, session(build_block(cc, wc, dec), 1, False))
            name = f"{label} {'decode' if dec else 'prefill'} ({cc.d_model}/{cc.heads}/{cc.d_ff}, seq {cc.seq}, " \
                   f"batch {cc.batch})"
            checks[name] = errs
            print(f"  check vs float64, {name}: " + ", ".join(f"max |{k} - f64| {v:.2e}" for k, v in errs.items())
                  + ": ok")
    if args.check_only:
        return 0

    w, x = make_weights(c, args.seed), make_input(c, args.seed)
    model = build_block(c, w, args.decode)
    ops = optimized_ops(model)
    print(f"  graph after ORT_ENABLE_ALL: {ops}")
    ins, outs = feeds(c, w, x, args.decode)
    new_tokens = c.batch if args.decode else c.tokens

    results = []
    with threadpool_limits(limits=1):  # keep numpy's BLAS out of the way
        for t in threads:
            sess = session(model, t, not args.no_spin)
            res = time_runs(bound_runner(sess, ins, outs), warmup, runs)
            res.update(threads=t, tokens_per_s=new_tokens / (res["ms_median"] / 1e3))
            results.append(res)
            print(f"  ORT {what}, intra_op {t}: {res['ms_median']:.3f} ms median (min {res['ms_min']:.3f}, "
                  f"max {res['ms_max']:.3f}; {res['runs']} runs after {warmup} warm-up), "
                  f"{res['tokens_per_s']:.0f} tokens/s, CPU {res['cpu_cores']:.2f} cores, "
                  f"other load {peers.fmt_load(res)}")
            del sess
    load = monitor.summary()
    load_line = (f"load average at start {load['load_start']}, at end {load['load_end']}; wall {load['wall_s']:.0f} s")
    if "other_cores" in load:
        load_line += (f"; CPU busy with other work: {load['other_cores']:.2f} cores on average "
                      f"(this process {load['self_cores']:.2f}, hypervisor steal {load['steal_cores']:.2f})")
    print(load_line)

    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cmd = DOC_COMMAND + "".join(" " + a for a in sys.argv[1:])
    shape = (f"d_model {c.d_model}, {c.heads} heads of {c.head_dim}, d_ff {c.d_ff}, seq {c.seq}, batch {c.batch}"
             + (f"; decode: 1 new token per sequence, KV cache of {c.seq - 1} past tokens" if args.decode else ""))
    md = [f"# ONNX Runtime: transformer {what}", "",
          f"- Date: {now}",
          f"- Command: `{cmd}`",
          f"- Mode: {'quick' if args.quick else 'full'}; {runs} timed runs after {warmup} warm-up runs, "
          "each run one call; median, min and max reported",
          f"- CPU: {cpu['model']} (family {cpu['family']}, model {cpu['model_id']}), {cpu['ncpu']} logical CPUs, "
          f"avx512f {'yes' if 'avx512f' in cpu['flags'] else 'no'}",
          f"- Versions: Python {platform.python_version()}, onnxruntime {ort.__version__}, onnx {onnx.__version__}, "
          f"numpy {np.__version__}",
          f"- Block: {shape}; weights and input from the example's generator, seed {args.seed}",
          "- Session: ORT_ENABLE_ALL, intra_op_num_threads as in the table, inter_op_num_threads 1, "
          f"ORT_SEQUENTIAL, allow_spinning {'0' if args.no_spin else '1 (ORT default)'}; io_binding with "
          "preallocated outputs",
          f"- Graph after ORT's optimisations: {ops}",
          "- Checked against a float64 numpy block before timing: "
          + "; ".join(f"{k}: " + ", ".join(f"max |{n} - f64| {v:.2e}" for n, v in e.items())
                      for k, e in checks.items()),
          f"- Machine load: {load_line}"]
    if args.note:
        md.append(f"- Note: {args.note}")
    md += ["", "| intra_op threads | ms median | ms min | ms max | tokens/s (median) | CPU cores busy "
           "| other load (cores) |", "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        md.append(f"| {r['threads']} | **{r['ms_median']:.3f}** | {r['ms_min']:.3f} | {r['ms_max']:.3f} | "
                  f"{r['tokens_per_s']:.0f} | {r['cpu_cores']:.2f} | {peers.fmt_load(r)} |")
    md.append("")
    with open(out_path, "w") as f:
        f.write("\n".join(md))
    doc = {"schema": 1, "date": now, "command": cmd, "mode": "quick" if args.quick else "full",
           "what": "decode" if args.decode else "prefill", "config": asdict(c), "seed": args.seed,
           "new_tokens_per_call": new_tokens, "spin": not args.no_spin,
           "cpu": {"model": cpu["model"], "family": cpu["family"], "model_id": cpu["model_id"], "ncpu": cpu["ncpu"]},
           "versions": {"onnxruntime": ort.__version__, "onnx": onnx.__version__, "numpy": np.__version__},
           "optimized_ops": ops, "checks": checks, "load": load, "results": results}
    with open(json_path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {os.path.relpath(out_path)} and {os.path.relpath(json_path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
