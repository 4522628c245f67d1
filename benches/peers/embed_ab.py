#!/usr/bin/env python3
"""Sentence embeddings, ONNX Runtime and the crate's `embed` CLI in alternation: ratios from the same minutes.

For each thread count and input, each round times ORT (`ort_embed.py`'s graph and calling
convention, a fresh session) and the `embed` binary in each mode, the order reversed every other
round. Each round gives a ratio of sentences/s, crate / ORT (above 1: the crate is faster); the
report is the median of those ratios and their range, beside each side's median sentences/s. On a
shared host both sides move by 10-20% within minutes, which is why they alternate.

Inputs (benches/peers/embed/):
- online: the 32 sentences of `online.txt` in one call (ORT pads them to the longest). One call
  takes milliseconds and `embed` reports one figure per process, so both sides process the batch
  `--online-repeat` times in a row (the file repeated, `--batch-size 32`) and the figure is
  sentences over the whole time; ORT's session is warmed up first, `embed`'s first call is counted.
- corpus: the 1,100 sentences of `corpus.txt`; ORT sorts them by length into batches of 32 and
  pads each to its longest, `embed` gets the file as it is with `--batch-size 32`.

Both figures include tokenisation and exclude loading the model. Also reported: the max abs
difference between the crate's and ORT's embeddings (ORT is itself within about 2e-7 of float64,
`ort_embed.py` checks it) and the exact mode's SHA-256 digests, which must be one per input.

Build `embed` once and fetch the model first:

    models/fetch_model.sh
    cargo build --release -p ak-models --bin embed
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE benches/peers/.venv/bin/python benches/peers/embed_ab.py

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
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import ort_embed as oe  # noqa: E402  (imports run.py first, which captures the environment)

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

DOC_COMMAND = ("env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "
               "benches/peers/.venv/bin/python benches/peers/embed_ab.py")
RATE = re.compile(r"^sentences/s: ([0-9.eE+-]+)$")
DIGEST = re.compile(r"^SHA-256: ([0-9a-fA-F]{64})$")


def crate_run(binary: str, model: str, path: str, mode: str, threads: int, isa: str | None,
              output: str) -> tuple[float, str]:
    """One `embed` process: (its sentences/s, its SHA-256) from the last two lines of its stderr."""
    cmd = [binary, "--model", model, "--mode", mode, "--threads", str(threads), "--batch-size", str(oe.BATCH),
           "--output", output]
    if isa:
        cmd += ["--isa", isa]
    cmd.append(path)
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}")
    tail = out.stderr.strip().splitlines()[-2:]
    rate = RATE.match(tail[0].strip()) if len(tail) == 2 else None
    digest = DIGEST.match(tail[1].strip()) if len(tail) == 2 else None
    if not rate or not digest:
        raise SystemExit(f"the last two stderr lines of {' '.join(cmd)} are not 'sentences/s: X' and "
                         f"'SHA-256: HEX':\n{out.stderr}")
    return float(rate.group(1)), digest.group(1).lower()


def read_jsonl(path: str, rows: int, dim: int) -> np.ndarray:
    """The first `rows` embeddings of an `embed` output file."""
    out = np.empty((rows, dim), dtype=np.float64)
    with open(path) as f:
        for i in range(rows):
            line = f.readline()
            if not line:
                raise SystemExit(f"{path}: {i} embeddings, expected at least {rows}")
            v = json.loads(line)
            if len(v) != dim:
                raise SystemExit(f"{path}: line {i + 1} has {len(v)} values, expected {dim}")
            out[i] = v
    return out


def ort_rate(model: bytes, tok, sentences: list[str], sort: bool, threads: int, repeat: int,
             warmup: int) -> float:
    """ORT's sentences/s over `repeat` consecutive passes, on a fresh session after `warmup` passes.
    The session is dropped before returning, so its spinning workers do not run beside the crate."""
    oe.set_tokenizer_threads(threads)
    sess = oe.session(model, threads)
    for _ in range(warmup):
        oe.embed(sess, tok, sentences, sort=sort)
    t = time.perf_counter()
    for _ in range(repeat):
        oe.embed(sess, tok, sentences, sort=sort)
    rate = repeat * len(sentences) / (time.perf_counter() - t)
    del sess
    time.sleep(0.2)
    return rate


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="rounds of ORT and the crate in turn (default 5)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--modes", default="exact,fast", help="the crate's modes (default exact,fast)")
    ap.add_argument("--inputs", default="online,corpus", help="online, corpus or both (default both)")
    ap.add_argument("--online-repeat", type=int, default=30,
                    help="calls of the online batch per measurement, both sides (default 30)")
    ap.add_argument("--model", default=oe.DEFAULT_MODEL, help="model folder (default models/data/all-MiniLM-L6-v2)")
    ap.add_argument("--isa", default=None, help="embed's --isa (default: the best detected)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "embed"),
                    help="the built CLI (default target/release/embed)")
    ap.add_argument("--ort-only", action="store_true", help="time ORT alone (no crate; no ratios)")
    ap.add_argument("--out", default=os.path.join(HERE, "embed-ab.md"),
                    help="markdown output (default benches/peers/embed-ab.md; the JSON goes next to it)")
    args = ap.parse_args()
    if args.rounds < 1 or args.online_repeat < 1:
        ap.error("--rounds and --online-repeat must be at least 1")
    if not args.ort_only and not os.path.exists(args.bin):
        ap.error(f"{args.bin} not found: cargo build --release -p ak-models --bin embed (or --ort-only)")
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    modes = [] if args.ort_only else [m.strip() for m in args.modes.split(",") if m.strip()]
    inputs = oe.resolve_inputs(args.inputs)

    cfg, w, tok = oe.load_model(args.model)
    model = oe.build_graph(cfg, w)
    cpu = oe.peers.cpu_info()
    print(f"ORT {ort.__version__}; CPU {cpu['model']} (family {cpu['family']}, model {cpu['model_id']}), "
          f"{cpu['ncpu']} logical CPUs; {args.rounds} rounds; crate {args.bin if modes else 'not run'}")

    tmp = tempfile.TemporaryDirectory(prefix="embed_ab.")
    data = {}  # label -> dict(sentences, sort, crate_path, ort_embeddings, counts)
    with threadpool_limits(limits=1):
        oe.set_tokenizer_threads(1)
        sess = oe.session(model, 1)
        for label, path, sort in inputs:
            sentences = oe.read_sentences(path)
            crate_path = path
            if not sort:  # online: the batch repeated, so one process times many calls of 32
                crate_path = os.path.join(tmp.name, f"{label}-x{args.online_repeat}.txt")
                with open(crate_path, "w", encoding="utf-8") as f:
                    f.write("\n".join(sentences * args.online_repeat) + "\n")
            err = oe.check(cfg, w, tok, sess, sentences, sort, 1 if not sort else 11)
            counts = oe.token_counts(tok, sentences, sort=sort)
            data[label] = dict(sentences=sentences, sort=sort, crate_path=crate_path, counts=counts,
                               ort=oe.embed(sess, tok, sentences, sort=sort).astype(np.float64), ort_err=err)
            print(f"  {label}: {counts['sentences']} sentences, {counts['tokens']:,} tokens, {counts['padded']:,} "
                  f"padded; ORT vs float64 max abs error {err:.2e}")
        del sess

        monitor = oe.peers.LoadMonitor()
        children0 = os.times()
        ort_r = {(lb, t): [] for lb in data for t in threads}
        crate_r = {(lb, t, m): [] for lb in data for t in threads for m in modes}
        digests = {(lb, m): set() for lb in data for m in modes}
        diff = {(lb, m): 0.0 for lb in data for m in modes}
        for r in range(args.rounds):
            for t in threads:
                for label, d in data.items():
                    def ort_side():
                        repeat = args.online_repeat if not d["sort"] else 1
                        ort_r[(label, t)].append(ort_rate(model, tok, d["sentences"], d["sort"], t, repeat, 1))

                    def crate_side():
                        for m in modes:
                            out = os.path.join(tmp.name, f"{label}-{m}.jsonl")
                            rate, digest = crate_run(args.bin, args.model, d["crate_path"], m, t, args.isa, out)
                            crate_r[(label, t, m)].append(rate)
                            digests[(label, m)].add(digest)
                            got = read_jsonl(out, len(d["sentences"]), cfg.hidden)
                            diff[(label, m)] = max(diff[(label, m)], float(np.max(np.abs(got - d["ort"]))))
                    for side in ((ort_side, crate_side) if r % 2 == 0 else (crate_side, ort_side)):
                        side()
                    print(f"  round {r + 1}, {t} thread{'s' if t > 1 else ''}, {label}: ORT "
                          f"{ort_r[(label, t)][-1]:.1f}" + "".join(f", {m} {crate_r[(label, t, m)][-1]:.1f}"
                                                                 for m in modes) + " sentences/s", flush=True)
    load = monitor.summary()
    # The monitor counts the crate's processes as other work: take their CPU time out.
    children1 = os.times()
    children = (children1.children_user + children1.children_system
                - children0.children_user - children0.children_system)
    load["crate_cores"] = children / load["wall_s"]
    if "other_cores" in load:
        load["other_cores"] = max(0.0, load["other_cores"] - load["crate_cores"])

    rows = []
    for label in data:
        for t in threads:
            row = {"input": label, "threads": t, "ort": statistics.median(ort_r[(label, t)]),
                   "ort_rounds": ort_r[(label, t)], "modes": {}}
            for m in modes:
                ratios = [k / o for o, k in zip(ort_r[(label, t)], crate_r[(label, t, m)])]
                row["modes"][m] = {"crate": statistics.median(crate_r[(label, t, m)]),
                                   "crate_rounds": crate_r[(label, t, m)], "ratio_median": statistics.median(ratios),
                                   "ratio_min": min(ratios), "ratio_max": max(ratios)}
            rows.append(row)

    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cmd = DOC_COMMAND + "".join(" " + a for a in sys.argv[1:])
    load_line = f"load average at start {load['load_start']}, at end {load['load_end']}; wall {load['wall_s']:.0f} s"
    if "other_cores" in load:
        load_line += f"; CPU busy with other work: {load['other_cores']:.2f} cores on average"
    md = ["# Sentence embeddings (all-MiniLM-L6-v2): the crate and ONNX Runtime in alternation", "",
          f"- Date: {now}",
          f"- Command: `{cmd}`",
          f"- CPU: {cpu['model']} (family {cpu['family']}, model {cpu['model_id']}), {cpu['ncpu']} logical CPUs",
          f"- ORT {ort.__version__}: graph built by ort_embed.py, ORT_ENABLE_ALL; online = the batch of 32 in one call, "
          f"{args.online_repeat} calls per measurement after one warm-up call; corpus = sorted by length into "
          f"batches of {oe.BATCH}, one pass after one warm-up pass; a fresh session each round",
          f"- Crate: `{os.path.relpath(args.bin, ROOT)} --batch-size {oe.BATCH}"
          + (f" --isa {args.isa}" if args.isa else "") + "`, one process per measurement, its `sentences/s` line "
          f"(online: the batch repeated {args.online_repeat} times in the file)",
          "- Inputs: " + "; ".join(f"{lb}: {d['counts']['sentences']} sentences, {d['counts']['tokens']:,} tokens "
                                   f"({d['counts']['padded']:,} once padded as ORT runs it)" for lb, d in data.items()),
          f"- {args.rounds} rounds, the order reversed every other round; ratio = crate / ORT sentences/s, "
          "median over rounds and range",
          f"- Machine load: {load_line}",
          "- ORT vs float64: " + ", ".join(f"{lb} {d['ort_err']:.2e}" for lb, d in data.items())]
    if modes:
        md.append("- Crate vs ORT, max abs difference of the embeddings: "
                  + ", ".join(f"{lb} {m} {diff[(lb, m)]:.2e}" for lb in data for m in modes))
        md.append("- SHA-256 per input and mode (exact must show one): "
                  + "; ".join(f"{lb} {m}: {', '.join(sorted(digests[(lb, m)]))}" for lb in data for m in modes))
    md += ["", "| input | threads | ORT sentences/s | " + " | ".join(f"{m} sentences/s | {m} / ORT | range"
                                                            for m in modes) + " |",
           "| --- | ---: | ---: | " + " | ".join("---: | ---: | ---:" for _ in modes) + " |"]
    for row in rows:
        md.append(f"| {row['input']} | {row['threads']} | {row['ort']:.1f} | " + " | ".join(
            f"{v['crate']:.1f} | **{v['ratio_median']:.2f}** | {v['ratio_min']:.2f}-{v['ratio_max']:.2f}"
            for v in row["modes"].values()) + " |")
    md.append("")
    print("\n".join(md))
    with open(args.out, "w") as f:
        f.write("\n".join(md))
    doc = {"schema": 1, "date": now, "command": cmd, "rounds": args.rounds, "online_repeat": args.online_repeat,
           "cpu": {"model": cpu["model"], "family": cpu["family"], "model_id": cpu["model_id"]},
           "onnxruntime": ort.__version__, "inputs": {lb: d["counts"] for lb, d in data.items()},
           "ort_vs_f64": {lb: d["ort_err"] for lb, d in data.items()},
           "crate_vs_ort": {f"{lb}/{m}": v for (lb, m), v in diff.items()},
           "digests": {f"{lb}/{m}": sorted(v) for (lb, m), v in digests.items()}, "load": load, "results": rows}
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {os.path.relpath(args.out)} and its JSON")
    exact = [f"{lb}" for (lb, m), v in digests.items() if m == "exact" and len(v) > 1]
    if exact:
        print(f"WARNING: exact mode gave more than one SHA-256 for {', '.join(exact)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
