#!/usr/bin/env python3
"""Operators and GEMM shapes, the peers and the crate in alternation: ratios from the same minutes.

Each round runs `run.py --quick --only PEERS` (ONNX Runtime's operators, or numpy/OpenBLAS's
products with `--peers gemm`), then each given criterion bench binary on FILTER, the binaries'
order reversed every other round. Per benchmark it prints the median over rounds (and range) of
crate time / peer time for each binary, and of binary i / binary 0: pass an old build's binary
first and a new one after to judge a change against the old build in the same window.

Build the bench binaries (`cargo bench --no-run -p ak-benches --bench kernels`, and `softmax`,
`gemm`), copy each aside (`target/release/deps/kernels-HASH`), then, for example:

    PY benches/peers/ops_ab.py --rounds 3 \
        --filter '^(exp|sigmoid|tanh)/1048576/(exact|fast)/avx2$' OLD_KERNELS NEW_KERNELS
    PY benches/peers/ops_ab.py --peers gemm --warm 1 --meas 3 \
        --filter '^gemm-block/.*/(exact|fast)$' GEMM_BENCH

where PY is the peers' Python (see README.md). Benchmarks and peers are matched by name:
operators by `KEY` below, softmax by its row length, `gemm-block` by shape and thread count.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# The crate's operator bench names and the keys of run.py's rows.
KEY = {"exp": "Exp", "log": "Log", "sigmoid": "Sigmoid", "tanh": "Tanh", "erf": "Erf",
       "gelu_erf": "Gelu-20-none", "gelu_tanh": "FastGelu", "silu": "QuickGelu-1"}

UNIT_US = {"ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}


def peer_round(tmp, peers):
    """One run.py --quick: its rows (peer times in each row's `res`)."""
    out = os.path.join(tmp, "peers.md")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    subprocess.run([sys.executable, os.path.join(HERE, "run.py"), "--quick", "--only", peers,
                    "--out", out], check=True, stdout=subprocess.DEVNULL, env=env)
    with open(os.path.join(tmp, "peers.json")) as f:
        return json.load(f)["rows"]


def peer_us(rows, name):
    """The peer's time in microseconds for the crate's benchmark `name`, or None."""
    parts = name.split("/")
    if parts[0] == "gemm-block":
        threads = 2 if parts[2].endswith("-2t") else 1
        for r in rows:
            if r.get("res") and r.get("key") == parts[1] and r.get("threads") == threads:
                return r["res"]["ns_per_call_median"] / 1e3
        return None
    key = KEY.get(parts[0])
    if parts[0] == "softmax" and len(parts) > 2:
        key = "Softmax-" + parts[2].replace("cols-", "")
    for r in rows:
        if r.get("key") == key and r.get("res"):
            return r["res"]["ns_per_elem_median"] * r["n"] / 1e3
    return None


def crate_us(binary, flt, warm, meas):
    """Criterion's median time in microseconds of each benchmark of `binary` that `flt` selects."""
    p = subprocess.run([binary, "--bench", "--warm-up-time", str(warm), "--measurement-time",
                        str(meas), flt], capture_output=True, text=True, check=True)
    res, name = {}, None
    for line in (p.stdout + p.stderr).splitlines():
        m = re.match(r"^(\S+/\S+)", line)
        if m:
            name = m.group(1)
        t = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", line)
        if t and name:
            res[name] = float(t.group(1)) * UNIT_US[t.group(2)]
            name = None
    return res


def cell(v, digits):
    return f"{statistics.median(v):.{digits}f} ({min(v):.2f}-{max(v):.2f})" if v else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--peers", default="ort", help="run.py's --only: ort or gemm")
    ap.add_argument("--filter", required=True, help="criterion's benchmark filter (a regex)")
    ap.add_argument("--warm", type=float, default=0.5, help="criterion warm-up seconds")
    ap.add_argument("--meas", type=float, default=2.0, help="criterion measurement seconds")
    ap.add_argument("bins", nargs="+", help="criterion bench binaries; the first is the baseline")
    a = ap.parse_args()
    to_peer, to_first = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = list(range(len(a.bins)))
            if r % 2:
                order.reverse()
            rows = peer_round(tmp, a.peers)
            times = {i: crate_us(a.bins[i], a.filter, a.warm, a.meas) for i in order}
            for name, first in times[0].items():
                peer = peer_us(rows, name)
                for i, t in times.items():
                    if name in t:
                        if peer:
                            to_peer.setdefault((name, i), []).append(t[name] / peer)
                        to_first.setdefault((name, i), []).append(t[name] / first)
            print(f"round {r + 1}: " + ", ".join(f"{n} [{i}] {t[n]:.0f} us" for n in times[0]
                                                 for i, t in times.items() if n in t),
                  file=sys.stderr, flush=True)
    n = len(a.bins)
    print("| benchmark | " + " | ".join(f"bin{i} / peer" for i in range(n))
          + "".join(f" | bin{i} / bin0" for i in range(1, n)) + " |")
    print("| --- |" + " ---: |" * (2 * n - 1))
    for name in sorted({k for k, _ in to_first}):
        cells = [cell(to_peer.get((name, i)), 2) for i in range(n)]
        cells += [cell(to_first.get((name, i)), 3) for i in range(1, n)]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
