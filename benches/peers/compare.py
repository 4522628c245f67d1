#!/usr/bin/env python3
"""Side-by-side figures: the crate's criterion results (target/criterion) next to the peers
measured by run.py (results.json) and ort_block.py (block.json, block-decode.json), one
Markdown table per topic: elementwise operators and softmax, GEMM, GEMV, the transformer block;
and block_ab.py's alternated rounds (block-ab.json), the block's ratios from the same minutes.

    python3 benches/peers/compare.py [--block-log FILE ...] [--block-ms exact@1=..,fast@1=..]

Only the standard library is needed. A criterion result or a peer figure that is absent prints
as "missing". The tables below map the crate's criterion ids to the peers' rows; edit them when
a benchmark is renamed or added. Compare only figures taken on the same machine under similar
load (each source's date, mode and load is printed above the tables).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "benches"))
import report  # noqa: E402  (benches/report.py: criterion's results)

# ---------------------------------------------------------------------------------------------
# The mapping. `{isa}` is replaced by --isa (default: the widest ISA with results), `{n}` by the
# element count, `{mode}` by exact / fast.
# ---------------------------------------------------------------------------------------------

# (row label, criterion id template per mode (benches/kernels.rs, benches/softmax.rs),
#  results.json ORT key (run.py ORT_ELEMENTWISE / Softmax-<cols>))
OPS = [
    ("exp", "exp/{n}/{mode}/{isa}", "Exp"),
    ("log", "log/{n}/{mode}/{isa}", "Log"),
    ("sigmoid", "sigmoid/{n}/{mode}/{isa}", "Sigmoid"),
    ("tanh", "tanh/{n}/{mode}/{isa}", "Tanh"),
    ("erf", "erf/{n}/{mode}/{isa}", "Erf"),
    ("gelu_erf vs Gelu (opset 20, none)", "gelu_erf/{n}/{mode}/{isa}", "Gelu-20-none"),
    ("gelu_tanh vs FastGelu", "gelu_tanh/{n}/{mode}/{isa}", "FastGelu"),
    ("silu vs QuickGelu (alpha 1)", "silu/{n}/{mode}/{isa}", "QuickGelu-1"),
    ("softmax rows of 1024", "softmax/{n}/cols-1024/{mode}", "Softmax-1024"),
    ("softmax rows of 4096", "softmax/{n}/cols-4096/{mode}", "Softmax-4096"),
]
# The streaming loop y = a*x: the crate's (one id for both columns) against ORT's Mul and numpy's.
STREAM = ("stream y=a*x vs Mul", "exp/{n}/stream", "Mul", "np.multiply")

# GEMM (benches/gemm.rs, the groups `gemm-block/<m>x<k>x<n>` with B packed once):
# (results.json shape key, BLAS threads, exact id, fast id).
GEMM_SHAPES = ["256x768x2304", "256x768x768", "256x768x3072", "256x3072x768", "1024x1024x1024"]
GEMM = [(shape, 1, f"gemm-block/{shape}/exact", f"gemm-block/{shape}/fast") for shape in GEMM_SHAPES] + [
    (shape, 2, f"gemm-block/{shape}/exact-2t", f"gemm-block/{shape}/fast-2t") for shape in GEMM_SHAPES
]

# GEMV, m = 1 (benches/gemm.rs, the groups `gemv/1x<k>x<n>`, one thread):
# (shape key, threads, exact id, fast id).
GEMV = [
    (shape, 1, f"gemv/{shape}/exact", f"gemv/{shape}/fast")
    for shape in ["1x768x2304", "1x768x3072", "1x3072x768"]
]
GEMV_TARGET = 1.3  # a GEMV within this factor of streaming its weights once is "at the bound"

ISA_PREFERENCE = ("avx512", "avx2", "sse2", "scalar")
MISSING = "missing"


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------

def first_existing(*paths):
    return next((p for p in paths if p and os.path.exists(p)), None)


def load_json(path):
    if not path:
        return None
    with open(path) as f:
        return json.load(f)


def describe(label, path, doc):
    if doc is None:
        return f"- {label}: none found"
    load = doc.get("load") or {}
    other = load.get("other_cores")
    return (f"- {label}: `{os.path.relpath(path, ROOT)}`, {doc.get('mode', '?')} run of {doc.get('date', '?')}"
            + (f", other work kept {other:.2f} cores busy on average" if other is not None else "")
            + f"; CPU {doc.get('cpu', {}).get('model', '?')} (family {doc.get('cpu', {}).get('family', '?')}, "
              f"model {doc.get('cpu', {}).get('model_id', '?')})")


def pick_isa(crit, wanted):
    if wanted:
        return wanted
    for isa in ISA_PREFERENCE:
        if any(k.endswith(f"/{isa}") or f"-{isa}" in k for k in crit):
            return isa
    return "avx2"


BLOCK_HEADER = re.compile(r"^transformer block: d_model (\d+), (\d+) heads, d_ff (\d+), seq (\d+), batch (\d+)")
# "fast mode on avx2 (2 threads), median of 5 runs:"; a decode run ("(1 threads, decode)")
# is not the block and does not match.
BLOCK_MODE = re.compile(r"^(exact|fast) mode on (\S+) \((\S+) threads\)(?:, median of \d+ runs?)?:")
BLOCK_TOTAL = re.compile(r"^\s+total\s+([\d.]+) ms")


def parse_block_log(path):
    """The example's printout: [(mode, threads or 'pool', ms, config tuple or None)]."""
    out, config, mode = [], None, None
    with open(path, errors="replace") as f:
        for line in f:
            m = BLOCK_HEADER.match(line)
            if m:
                config = tuple(int(v) for v in m.groups())
                continue
            m = BLOCK_MODE.match(line.strip())
            if m:
                mode = (m.group(1), m.group(3))
                continue
            m = BLOCK_TOTAL.match(line)
            if m and mode:
                threads = int(mode[1]) if mode[1].isdigit() else mode[1]
                out.append((mode[0], threads, float(m.group(1)), config))
                mode = None
    return out


def parse_block_ms(spec):
    """"exact@1=61.2,fast@1=50,exact@2=35" (a mode without @threads means 1 thread)."""
    out = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, _, val = part.partition("=")
        mode, _, threads = key.partition("@")
        if mode not in ("exact", "fast") or not val:
            raise SystemExit(f"--block-ms: cannot read {part!r} (want e.g. exact@1=61.2)")
        out.append((mode, int(threads) if threads else 1, float(val), None))
    return out


# ---------------------------------------------------------------------------------------------
# formatting
# ---------------------------------------------------------------------------------------------

def f3(v):
    return MISSING if v is None else f"{v:.3f}"


def f1(v):
    return MISSING if v is None else f"{v:.1f}"


def ratio(a, b):
    return MISSING if a is None or b is None or b == 0 else f"{a / b:.2f}"


def table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(["---"] + ["---:"] * (len(head) - 1)) + " |"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# the tables
# ---------------------------------------------------------------------------------------------

def ns_per_elem(crit, cid, used):
    r = crit.get(cid)
    if not r or not r["elements"]:
        return None
    used.append(r)
    return r["median_ns"] / r["elements"]


def ops_tables(crit, peers, isa, used):
    rows = [r for r in (peers or {}).get("rows", []) if r.get("peer") in ("ORT", "numpy")]
    sizes = sorted({r["n"] for r in rows}) or [1 << 20]
    out = []
    for n in sizes:
        ort_by_key = {r.get("key"): r for r in rows if r["peer"] == "ORT" and r["n"] == n}
        np_by_key = {r.get("key"): r for r in rows if r["peer"] == "numpy" and r["n"] == n}
        body = []
        for label, tmpl, key in OPS:
            ex = ns_per_elem(crit, tmpl.format(n=n, mode="exact", isa=isa), used)
            fa = ns_per_elem(crit, tmpl.format(n=n, mode="fast", isa=isa), used)
            peer = ort_by_key.get(key)
            o = peer["res"]["ns_per_elem_median"] if peer else None
            body.append([label, f3(ex), f3(fa), f3(o), ratio(ex, o), ratio(fa, o)])
        label, tmpl, key, np_key = STREAM
        st = ns_per_elem(crit, tmpl.format(n=n), used)
        o = ort_by_key.get(key)
        o = o["res"]["ns_per_elem_median"] if o else None
        npm = np_by_key.get(np_key)
        npm = npm["res"]["ns_per_elem_median"] if npm else None
        body.append([f"{label} (numpy {f3(npm)})", f3(st), f3(st), f3(o), ratio(st, o), ratio(st, o)])
        out.append((f"Operators at N = {n:,} (ns per element, wall-clock medians; ratio below 1: the crate "
                    f"is faster; crate ISA {isa})",
                    table(["operator", "exact ns/elem", "fast ns/elem", "ORT ns/elem", "exact/ORT", "fast/ORT"],
                          body)))
    return out


def gemm_table(crit, peers, isa, used):
    blas = {(r["key"], r["threads"]): r for r in (peers or {}).get("rows", []) if r.get("kind") == "gemm"}
    body = []
    for key, threads, ex_id, fa_id in GEMM:
        m, k, n = (int(v) for v in key.split("x"))
        flops = 2.0 * m * k * n
        vals = []
        for cid in (ex_id.format(isa=isa), fa_id.format(isa=isa)):
            r = crit.get(cid)
            if r:
                used.append(r)
            vals.append(flops / r["median_ns"] if r else None)
        ob = blas.get((key, threads))
        ob = ob["gflops"] if ob else None
        body.append([key, threads, f1(vals[0]), f1(vals[1]), f1(ob), ratio(vals[0], ob), ratio(vals[1], ob)])
    return ("GEMM m x k x n (GFLOP/s = 2mkn / median time; ratio above 1: the crate is faster; crate ISA "
            f"{isa})",
            table(["shape", "threads", "exact GFLOP/s", "fast GFLOP/s", "OpenBLAS GFLOP/s", "exact/OpenBLAS",
                   "fast/OpenBLAS"], body))


def gemv_table(crit, peers, isa, used):
    blas = {(r["key"], r["threads"]): r for r in (peers or {}).get("rows", []) if r.get("kind") == "gemv"}
    body = []
    for key, threads, ex_id, fa_id in GEMV:
        vals = []
        for cid in (ex_id.format(isa=isa), fa_id.format(isa=isa)):
            r = crit.get(cid)
            if r:
                used.append(r)
            vals.append(r["median_ns"] / 1e3 if r else None)
        ob = blas.get((key, threads))
        o_us = ob["res"]["ns_per_call_median"] / 1e3 if ob else None
        s_us = ob["stream_ns"] / 1e3 if ob else None

        def verdict(v):
            if v is None or s_us is None:
                return MISSING
            return f"{v / s_us:.2f} ({'yes' if v / s_us <= GEMV_TARGET else 'no'})"
        body.append([key, threads, f1(vals[0]), f1(vals[1]), f1(o_us), f1(s_us), ratio(vals[0], o_us),
                     ratio(vals[1], o_us), verdict(vals[0]), verdict(vals[1])])
    return (f"GEMV, m = 1 (microseconds per call; *stream once* = the fastest measured pass over the weights, "
            f"see results.md; *within {GEMV_TARGET}x* = crate time / stream once <= {GEMV_TARGET})",
            table(["shape", "threads", "exact us", "fast us", "OpenBLAS us", "stream once us", "exact/OpenBLAS",
                   "fast/OpenBLAS", f"exact/stream (within {GEMV_TARGET}x?)",
                   f"fast/stream (within {GEMV_TARGET}x?)"], body))


def block_table(title, block, crate_runs, notes):
    if block is None and not crate_runs:
        return None
    c = (block or {}).get("config", {})
    config = (c.get("d_model"), c.get("heads"), c.get("d_ff"), c.get("seq"), c.get("batch")) if c else None
    for mode, threads, ms, cfg in crate_runs:
        if cfg and config and cfg != config:
            notes.append(f"the crate's {mode} run at {threads} threads used d_model/heads/d_ff/seq/batch {cfg}, "
                         f"the ORT run {config}: not the same block")
    ort_ms = {r["threads"]: r["ms_median"] for r in (block or {}).get("results", [])}
    crate = {}
    for mode, threads, ms, _ in crate_runs:
        crate.setdefault((mode, threads), []).append(ms)
    counts = {k: len(v) for k, v in crate.items()}
    crate = {k: statistics.median(v) for k, v in crate.items()}  # several runs given: their median
    thread_keys = sorted(set(ort_ms) | {t for _, t in crate}, key=lambda t: (isinstance(t, str), t))
    tokens = (block or {}).get("new_tokens_per_call")
    body = []
    for t in thread_keys:
        o = ort_ms.get(t)
        ex, fa = crate.get(("exact", t)), crate.get(("fast", t))
        tps = (lambda ms: MISSING if ms is None or not tokens else f"{tokens / (ms / 1e3):.0f}")
        runs = "/".join(str(counts.get((m, t), 0)) for m in ("exact", "fast"))
        body.append([t, f3(o), f3(ex), f3(fa), runs, ratio(ex, o), ratio(fa, o),
                     f"{tps(o)} / {tps(ex)} / {tps(fa)}"])
    shape = (f"d_model {c.get('d_model')}, {c.get('heads')} heads, d_ff {c.get('d_ff')}, seq {c.get('seq')}, "
             f"batch {c.get('batch')}" if c else "configuration unknown")
    return (f"{title} ({shape}; ms per call: ORT's median, the crate's median over the runs given; "
            "ratio below 1: the crate is faster)",
            table(["threads", "ORT ms", "crate exact ms", "crate fast ms", "crate runs (exact/fast)",
                   "exact/ORT", "fast/ORT",
                   "tokens/s ORT / exact / fast"], body))


def alternation_table(doc):
    """block_ab.py's rounds: the median of each round's tokens/s ratio, crate / ORT."""
    if doc is None:
        return None
    body = [[r["threads"], r["mode"], f3(r["ort_ms"]), f3(r["crate_ms"]), f"{r['ratio_median']:.3f}",
             f"{r['ratio_min']:.3f}-{r['ratio_max']:.3f}"] for r in doc.get("results", [])]
    what = "Decode step" if doc.get("what") == "decode" else "Transformer block"
    return (f"{what}, ORT and the crate in alternation (block_ab.py, {doc.get('rounds')} rounds, "
            f"{doc.get('date')}; ratio above 1: the crate is faster)",
            table(["threads", "mode", "ORT ms (median of rounds)", "crate ms (median of rounds)",
                   "crate / ORT tokens/s (median of rounds)", "range"], body))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--criterion", default=report.DEFAULT_ROOT, help="criterion's output (default target/criterion)")
    ap.add_argument("--peers", default=None,
                    help="run.py's JSON (default benches/peers/results.json, else results-quick.json)")
    ap.add_argument("--block-json", default=None,
                    help="ort_block.py's JSON (default benches/peers/block.json, else block-quick.json)")
    ap.add_argument("--decode-json", default=None,
                    help="ort_block.py --decode's JSON (default block-decode.json, else block-decode-quick.json)")
    ap.add_argument("--block-ab", default=None,
                    help="block_ab.py's JSON (default benches/peers/block-ab.json, if there)")
    ap.add_argument("--block-log", action="append", default=[], metavar="FILE",
                    help="saved output of `cargo run --release --example transformer_block -- --threads N` "
                         "(repeat the option for several files; a file may hold several runs; the median of "
                         "the runs of each mode and thread count is used)")
    ap.add_argument("--block-ms", default="", metavar="SPEC",
                    help="the crate's block times by hand, e.g. exact@1=61.2,fast@1=50.3,exact@2=35")
    ap.add_argument("--isa", default=None, help="the crate's ISA to compare (default: widest with results)")
    ap.add_argument("--out", default=None, help="also write the tables to this Markdown file")
    args = ap.parse_args()

    crit = report.load(args.criterion) if os.path.isdir(args.criterion) else {}
    peers_path = first_existing(args.peers, os.path.join(HERE, "results.json"), os.path.join(HERE, "results-quick.json"))
    block_path = first_existing(args.block_json, os.path.join(HERE, "block.json"),
                                os.path.join(HERE, "block-quick.json"))
    decode_path = first_existing(args.decode_json, os.path.join(HERE, "block-decode.json"),
                                 os.path.join(HERE, "block-decode-quick.json"))
    ab_path = first_existing(args.block_ab, os.path.join(HERE, "block-ab.json"))
    for given, found, what in ((args.peers, peers_path, "--peers"), (args.block_json, block_path, "--block-json"),
                               (args.decode_json, decode_path, "--decode-json"), (args.block_ab, ab_path, "--block-ab")):
        if given and found != given:
            raise SystemExit(f"{what} {given}: no such file")
    peers, block, decode = load_json(peers_path), load_json(block_path), load_json(decode_path)
    ab = load_json(ab_path)
    crate_runs = [r for path in args.block_log for r in parse_block_log(path)]
    if args.block_ms:
        crate_runs += parse_block_ms(args.block_ms)
    isa = pick_isa(crit, args.isa)

    used, notes, sections = [], [], []
    sections += ops_tables(crit, peers, isa, used)
    sections.append(gemm_table(crit, peers, isa, used))
    sections.append(gemv_table(crit, peers, isa, used))
    for title, doc, runs in (("Transformer block", block, crate_runs), ("Decode step", decode, [])):
        t = block_table(title, doc, runs, notes)
        if t:
            sections.append(t)
    t = alternation_table(ab)
    if t:
        sections.append(t)
    if not crate_runs and ab is None:
        notes.append("no crate block figure given: save `cargo run --release --example transformer_block -- "
                     "--threads N` to a file and pass it with --block-log, or pass --block-ms")
    if decode is not None:
        notes.append("the crate has no decode-step figure yet; the decode table shows ORT only")

    src = ["# The crate beside its peers", ""]
    if used:
        t0 = min(r["mtime"] for r in used)
        t1 = max(r["mtime"] for r in used)
        fmt = lambda t: _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")  # noqa: E731
        src.append(f"- crate: criterion results under `{os.path.relpath(args.criterion, ROOT)}`, "
                   f"{len(used)} used, written {fmt(t0)} to {fmt(t1)}")
    else:
        src.append(f"- crate: no matching criterion results under `{os.path.relpath(args.criterion, ROOT)}`")
    src.append(describe("peers (run.py)", peers_path, peers))
    src.append(describe("ORT block (ort_block.py)", block_path, block))
    if decode is not None:
        src.append(describe("ORT decode step (ort_block.py --decode)", decode_path, decode))
    for doc, path in ((peers, peers_path), (block, block_path), (decode, decode_path)):
        if doc is not None and doc.get("mode") == "quick":
            notes.append(f"`{os.path.relpath(path, ROOT)}` is a quick run: re-measure (full mode, quiet machine) "
                         "before quoting")
    if peers is not None and not peers.get("env_valid", True):
        notes.append("run.py saw OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE set: its OpenBLAS figures are not valid")
    md = "\n".join(src) + "\n"
    for title, body in sections:
        md += f"\n## {title}\n\n{body}\n"
    if notes:
        md += "\nNotes:\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    print(md)
    if args.out:
        with open(args.out, "w") as f:
            f.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
