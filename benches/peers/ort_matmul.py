#!/usr/bin/env python3
"""ONNX Runtime's MatMul (MLAS) against numpy/OpenBLAS on the transformer block's products.

The weight B is an initializer of a one-node graph, so ORT packs it once at session creation, as
it does a model's weights. Each round times both peers on the same shapes, the order reversed
every other round, on four A matrices used in turn (fresh inputs each call), and reports per shape
the median over rounds of OpenBLAS time / ORT time (above 1: ORT is faster) and its range. The
crate's GEMM is compared with OpenBLAS by `ops_ab.py --peers gemm`; this script tells whether
ORT's own products run at OpenBLAS's rate.

Run from the repository root:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE benches/peers/.venv/bin/python benches/peers/ort_matmul.py

See benches/peers/README.md.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from threadpoolctl import threadpool_limits

# m x k x n: the block's qkv, output projection, MLP up and down products, and the 1024 cube.
SHAPES = [(256, 768, 2304), (256, 768, 768), (256, 768, 3072), (256, 3072, 768), (1024, 1024, 1024)]


def session(b: np.ndarray, m: int, threads: int) -> ort.InferenceSession:
    k, n = b.shape
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["A", "B"], ["C"])], "matmul",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("C", TensorProto.FLOAT, [m, n])],
        [numpy_helper.from_array(b, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=15, help="timed calls per peer per round")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    with threadpool_limits(args.threads):
        for m, k, n in SHAPES:
            b = rng.standard_normal((k, n), dtype=np.float32) * 0.05
            a_in = [rng.standard_normal((m, k), dtype=np.float32) for _ in range(4)]
            c = np.empty((m, n), np.float32)
            sess = session(b, m, args.threads)
            io = sess.io_binding()
            out = ort.OrtValue.ortvalue_from_numpy(c)
            ins = [ort.OrtValue.ortvalue_from_numpy(a) for a in a_in]

            def ort_call(i: int) -> None:
                io.bind_ortvalue_input("A", ins[i % 4])
                io.bind_ortvalue_output("C", out)
                sess.run_with_iobinding(io)

            def blas_call(i: int) -> None:
                np.matmul(a_in[i % 4], b, out=c)

            ort_call(0)
            want = a_in[0].astype(np.float64) @ b.astype(np.float64)
            err = float(np.max(np.abs(c - want)))
            if err > 1e-3:
                raise RuntimeError(f"{m}x{k}x{n}: ORT's output is off by {err:.3g}")
            for i in range(3):
                ort_call(i)
                blas_call(i)
            t_ort, t_blas, ratios = [], [], []
            for r in range(args.rounds):
                peers = [("ort", ort_call), ("blas", blas_call)]
                t = {}
                for name, call in peers if r % 2 == 0 else peers[::-1]:
                    times = []
                    for i in range(args.calls):
                        t0 = time.perf_counter()
                        call(i)
                        times.append(time.perf_counter() - t0)
                    t[name] = statistics.median(times)
                t_ort.append(t["ort"])
                t_blas.append(t["blas"])
                ratios.append(t["blas"] / t["ort"])
            gf = 2 * m * k * n / 1e9
            mo, mb = statistics.median(t_ort), statistics.median(t_blas)
            print(f"{args.threads}t {m}x{k}x{n}: ORT {mo * 1e3:.3f} ms ({gf / mo:.1f} GFLOP/s), "
                  f"OpenBLAS {mb * 1e3:.3f} ms ({gf / mb:.1f}), OpenBLAS time / ORT time "
                  f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
