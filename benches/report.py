#!/usr/bin/env python3
"""Prints criterion's medians as ns per element (or GFLOP/s for groups whose throughput is in
FLOPs), one table per benchmark group, from target/criterion. Usage:

    python3 benches/report.py [GROUP_REGEX]
"""
import json, os, re, sys

root = os.path.join(os.path.dirname(__file__), "..", "target", "criterion")
pattern = re.compile(sys.argv[1] if len(sys.argv) > 1 else ".")
rows = {}
for dirpath, _, files in os.walk(root):
    if "benchmark.json" not in files or os.path.basename(dirpath) != "new":
        continue
    bench = json.load(open(os.path.join(dirpath, "benchmark.json")))
    est = json.load(open(os.path.join(dirpath, "estimates.json")))
    group = bench["group_id"]
    if not pattern.search(group):
        continue
    name = bench["function_id"] or ""
    if bench.get("value_str"):
        name = f"{name}/{bench['value_str']}" if name else bench["value_str"]
    median_ns = est["median"]["point_estimate"]
    tp = bench.get("throughput") or {}
    if "Elements" in tp:
        per = median_ns / tp["Elements"]
        rows.setdefault(group, []).append((name, median_ns, per))
    else:
        rows.setdefault(group, []).append((name, median_ns, None))

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
