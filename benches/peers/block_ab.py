#!/usr/bin/env python3
"""The transformer block, ONNX Runtime and the crate in alternation: ratios from the same minutes.

`ort_block.py` times ORT and the example is run on its own, minutes apart; on a shared host the
speed of both moves by 10-20% within minutes, more than the gaps being judged. This script runs
them in turn, round after round: each round times ORT's block (a fresh session, its warm-up, then
`--runs` calls) and `examples/transformer_block` in each mode (`--reps` runs after its warm-up),
for each thread count, the order reversed every other round. Each round gives a ratio of
tokens per second, crate / ORT (above 1: the crate is faster); the report is the median of those
ratios and their range, beside each side's median time.

The graph and the weights are `ort_block.py`'s (the example's, checked there against float64).
Build the example first:

    cargo build --release --example transformer_block
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE benches/peers/.venv/bin/python benches/peers/block_ab.py

See benches/peers/README.md.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import ort_block as ob  # noqa: E402  (imports run.py first, which captures the environment)

import onnxruntime as ort  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

DOC_COMMAND = ("env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "
               "benches/peers/.venv/bin/python benches/peers/block_ab.py")
TOTAL = re.compile(r"^\s*total\s+([0-9.]+) ms")
DIGEST = re.compile(r"SHA-256 of the exact output: ([0-9a-f]{64})")


def crate_ms(binary: str, threads: int, mode: str, reps: int, decode: bool, isa: str | None):
    """The example's median total in ms, and the exact digest it printed (or None)."""
    cmd = [binary, "--threads", str(threads), "--mode", mode, "--reps", str(reps), "--no-reference"]
    if decode:
        cmd.append("--decode")
    if isa:
        cmd += ["--isa", isa]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}")
    totals = [float(m.group(1)) for m in map(TOTAL.match, out.stdout.splitlines()) if m]
    if len(totals) != 1:
        raise SystemExit(f"no single 'total ... ms' line in the output of {' '.join(cmd)}:\n{out.stdout}")
    digest = DIGEST.search(out.stdout)
    return totals[0], digest.group(1) if digest else None


def ort_ms(model: bytes, threads: int, ins: dict, outs: dict, warmup: int, runs: int) -> float:
    """ORT's median over `runs` calls of a fresh session, after `warmup` calls. The session is
    dropped before returning, so its spinning workers do not run beside the crate."""
    sess = ob.session(model, threads, True)
    res = ob.time_runs(ob.bound_runner(sess, ins, outs), warmup, runs)
    del sess
    time.sleep(0.2)
    return res["ms_median"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7, help="rounds of ORT and the crate in turn (default 7)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--modes", default="exact,fast", help="the crate's modes (default exact,fast)")
    ap.add_argument("--runs", type=int, default=9, help="ORT's timed calls per round (default 9)")
    ap.add_argument("--warmup", type=int, default=3, help="ORT's untimed calls per round (default 3)")
    ap.add_argument("--reps", type=int, default=9, help="the example's --reps per round (default 9)")
    ap.add_argument("--decode", action="store_true", help="one decode step instead of the block")
    ap.add_argument("--isa", default=None, help="the example's --isa (default: the best detected)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "examples", "transformer_block"),
                    help="the built example (default target/release/examples/transformer_block)")
    ap.add_argument("--out", default=None, help="markdown output (default benches/peers/block-ab[-decode].md; "
                    "the JSON goes next to it)")
    args = ap.parse_args()
    if args.rounds < 1 or args.runs < 1 or args.reps < 1:
        ap.error("--rounds, --runs and --reps must be at least 1")
    if not os.path.exists(args.bin):
        ap.error(f"{args.bin} not found: cargo build --release --example transformer_block")
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    stem = "block-ab-decode" if args.decode else "block-ab"
    out_path = args.out or os.path.join(HERE, f"{stem}.md")

    c = ob.Config()
    w, x = ob.make_weights(c, 2024), ob.make_input(c, 2024)
    model = ob.build_block(c, w, args.decode)
    ins, outs = ob.feeds(c, w, x, args.decode)
    ob.check(c, w, x, args.decode, ob.session(model, 1, False))  # raises if ORT computes something else
    cpu = ob.peers.cpu_info()
    print(f"ORT {ort.__version__}; CPU {cpu['model']} (family {cpu['family']}, model {cpu['model_id']}), "
          f"{cpu['ncpu']} logical CPUs; {args.rounds} rounds")
    monitor = ob.peers.LoadMonitor()
    children0 = os.times()

    ort_t = {t: [] for t in threads}
    crate_t = {(t, m): [] for t in threads for m in modes}
    digests = set()
    with threadpool_limits(limits=1):
        for r in range(args.rounds):
            for t in threads:
                def ort_side():
                    ort_t[t].append(ort_ms(model, t, ins, outs, args.warmup, args.runs))

                def crate_side():
                    for m in modes:
                        ms, digest = crate_ms(args.bin, t, m, args.reps, args.decode, args.isa)
                        crate_t[(t, m)].append(ms)
                        if digest:
                            digests.add(digest)
                for side in ((ort_side, crate_side) if r % 2 == 0 else (crate_side, ort_side)):
                    side()
                print(f"  round {r + 1}, {t} thread{'s' if t > 1 else ''}: ORT {ort_t[t][-1]:.3f} ms; "
                      + ", ".join(f"{m} {crate_t[(t, m)][-1]:.3f} ms" for m in modes), flush=True)
    load = monitor.summary()
    # The monitor counts the example's processes as other work: take their CPU time out.
    children1 = os.times()
    children = (children1.children_user + children1.children_system
                - children0.children_user - children0.children_system)
    load["crate_cores"] = children / load["wall_s"]
    if "other_cores" in load:
        load["other_cores"] = max(0.0, load["other_cores"] - load["crate_cores"])

    rows = []
    for t in threads:
        for m in modes:
            ratios = [o / k for o, k in zip(ort_t[t], crate_t[(t, m)])]
            rows.append({"threads": t, "mode": m, "ort_ms": statistics.median(ort_t[t]),
                         "crate_ms": statistics.median(crate_t[(t, m)]),
                         "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
                         "ratio_max": max(ratios), "ort_ms_rounds": ort_t[t],
                         "crate_ms_rounds": crate_t[(t, m)]})

    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cmd = DOC_COMMAND + "".join(" " + a for a in sys.argv[1:])
    load_line = f"load average at start {load['load_start']}, at end {load['load_end']}; wall {load['wall_s']:.0f} s"
    if "other_cores" in load:
        load_line += f"; CPU busy with other work: {load['other_cores']:.2f} cores on average"
    what = "decode step" if args.decode else "block"
    md = [f"# The transformer {what}: the crate and ONNX Runtime in alternation", "",
          f"- Date: {now}",
          f"- Command: `{cmd}`",
          f"- CPU: {cpu['model']} (family {cpu['family']}, model {cpu['model_id']}), {cpu['ncpu']} logical CPUs",
          f"- Each round: ORT's median of {args.runs} calls (a fresh session, {args.warmup} untimed calls first) and "
          f"the example's median of {args.reps} runs (after its warm-up) per mode, the order reversed every "
          f"other round; {args.rounds} rounds",
          f"- Machine load: {load_line}",
          f"- Exact digests printed: {', '.join(sorted(digests)) or 'none'}", "",
          "| threads | mode | ORT ms (median of rounds) | crate ms (median of rounds) "
          "| crate / ORT tokens/s: median of rounds | range |",
          "| ---: | --- | ---: | ---: | ---: | ---: |"]
    for row in rows:
        md.append(f"| {row['threads']} | {row['mode']} | {row['ort_ms']:.3f} | {row['crate_ms']:.3f} | "
                  f"**{row['ratio_median']:.3f}** | {row['ratio_min']:.3f}-{row['ratio_max']:.3f} |")
    md.append("")
    print("\n".join(md))
    with open(out_path, "w") as f:
        f.write("\n".join(md))
    doc = {"schema": 1, "date": now, "command": cmd, "what": "decode" if args.decode else "prefill",
           "rounds": args.rounds, "runs": args.runs, "warmup": args.warmup, "reps": args.reps,
           "cpu": {"model": cpu["model"], "family": cpu["family"], "model_id": cpu["model_id"]},
           "onnxruntime": ort.__version__, "digests": sorted(digests), "load": load, "results": rows}
    with open(os.path.splitext(out_path)[0] + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {os.path.relpath(out_path)} and its JSON")
    return 0


if __name__ == "__main__":
    sys.exit(main())
