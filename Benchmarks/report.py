#!/usr/bin/env python3
"""Prints the benchmark results as a Markdown table of ratios against each group's baseline.

Reads the JMH export of `swift package benchmark --format jmh`. Benchmarks are named
"<group>: <variant>"; the variant "baseline" is the group's reference, measured in the same run.
"""
import glob
import json
import os
import sys

UNIT_NS = {"ns": 1, "μs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}

def main(folder):
    files = sorted(glob.glob(os.path.join(folder, "*.jmh.json")), key=os.path.getmtime)
    if not files:
        sys.exit(f"no benchmark results in {folder}: run `make bench`")
    rows = []
    for entry in json.load(open(files[-1])):
        # "package.benchmark.<Target>.<group>:_<variant>", spaces written as "_".
        name = entry["benchmark"].split(".", 3)[-1].replace("_", " ")
        group, _, variant = name.partition(": ")
        metrics = entry["secondaryMetrics"]
        time = metrics["Time (wall clock)"]
        ns = time["scorePercentiles"]["50.0"] * UNIT_NS[time["scoreUnit"]]
        mallocs = metrics.get("Malloc (total)", {}).get("scorePercentiles", {}).get("50.0")
        memory = metrics.get("Memory (resident peak)", {}).get("scorePercentiles", {}).get("50.0")
        rows.append((group, variant, ns, mallocs, memory))

    by_group = {}
    for row in rows:
        by_group.setdefault(row[0], []).append(row)
    # Benchmarks with scalingFactor .kilo measure 1,000 operations per iteration.
    per_operation = {"counter", "feedback", "actor-send", "plugin-send", "contended-send"}
    # Benchmarks that run 100,000 effects per iteration; only they measure peak memory.
    per_100_000 = {"effects", "churn"}
    print("| benchmark | variant | time (p50) | ratio to baseline | mallocs (p50) | peak memory |")
    print("|---|---|---:|---:|---:|---:|")
    for group in sorted(by_group):
        members = sorted(by_group[group], key=lambda r: (not r[1].startswith("baseline"), r[1]))
        baseline = next((r[2] for r in members if r[1].startswith("baseline")), None)
        for _, variant, ns, mallocs, memory in members:
            if group in per_operation:
                shown = f"{ns / 1000:.2f} ns/op"
            elif group == "csv-64mib":
                shown = f"{ns / 1e6:.0f} ms = {64e9 / ns:.0f} MiB/s"
            elif group.startswith("csv"):
                shown = f"{ns / 1e6:.2f} ms = {1e9 / ns:.0f} MiB/s"
            elif group in per_100_000:
                shown = f"{ns / 1e6:.0f} ms = {100_000 / (ns / 1e9):,.0f}/s"
            else:
                shown = f"{ns / 1e6:.1f} ms"
            ratio = f"{ns / baseline:.2f}x" if baseline else "-"
            if mallocs is None:
                allocations = "-"
            else:
                allocations = f"{mallocs:.0f}" + (" per 1,000 ops" if group in per_operation else "")
            peak = f"{memory / 1048576:.0f} MiB" if memory is not None and group in per_100_000 else "-"
            print(f"| {group} | {variant} | {shown} | {ratio} | {allocations} | {peak} |")

if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "Benchmarks/.build/results")
