#!/usr/bin/env python3
"""Prints criterion's medians as ns per element (or GFLOP/s for groups whose throughput is in
FLOPs), one table per benchmark group, from target/criterion. Usage:

    python3 benches/report.py [GROUP_REGEX]

`load()` is also what benches/peers/compare.py reads criterion's results with.
"""
import json, os, re, sys

DEFAULT_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "criterion")


def load(root=DEFAULT_ROOT, pattern=None):
    """Every criterion result under `root` (the `new/` run of each benchmark), as
    {id: {"group", "name", "median_ns", "elements", "mtime"}} where id is "<group>/<name>" and
    name is the function id, then "/<value>" for a parameterised `BenchmarkId`. `elements` is
    the throughput in elements (None if the group sets none); median_ns is the median point
    estimate of one iteration."""
    out = {}
    for dirpath, _, files in os.walk(root):
        if "benchmark.json" not in files or os.path.basename(dirpath) != "new":
            continue
        with open(os.path.join(dirpath, "benchmark.json")) as f:
            bench = json.load(f)
        est_path = os.path.join(dirpath, "estimates.json")
        with open(est_path) as f:
            est = json.load(f)
        group = bench["group_id"]
        if pattern is not None and not pattern.search(group):
            continue
        name = bench["function_id"] or ""
        if bench.get("value_str"):
            name = f"{name}/{bench['value_str']}" if name else bench["value_str"]
        tp = bench.get("throughput") or {}
        out[f"{group}/{name}"] = {
            "group": group,
            "name": name,
            "median_ns": est["median"]["point_estimate"],
            "elements": tp.get("Elements"),
            "mtime": os.path.getmtime(est_path),
        }
    return out


def main():
    pattern = re.compile(sys.argv[1] if len(sys.argv) > 1 else ".")
    rows = {}
    for r in load(DEFAULT_ROOT, pattern).values():
        per = r["median_ns"] / r["elements"] if r["elements"] else None
        rows.setdefault(r["group"], []).append((r["name"], r["median_ns"], per))

    for group in sorted(rows, key=lambda g: (g.split("/")[0], int(g.split("/")[1]) if g.count("/") and g.split("/")[1].isdigit() else 0)):
        print(f"\n{group}")
        base = {n: p for n, _, p in rows[group]}
        stream = base.get("stream")
        for name, med, per in sorted(rows[group]):
            extra = f"  ({per / stream:.2f}x stream)" if per and stream else ""
            if per is None:
                print(f"  {name:28} {med / 1e6:10.3f} ms")
            elif "gemm" in group or group.startswith("attention"):
                print(f"  {name:28} {1.0 / per:10.1f} GFLOP/s")
            else:
                print(f"  {name:28} {per:10.3f} ns/elem{extra}")


if __name__ == "__main__":
    main()
