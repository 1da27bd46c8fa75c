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
        rows.append((group, variant, ns, mallocs))

    by_group = {}
    for row in rows:
        by_group.setdefault(row[0], []).append(row)
    scale = {"csv": "per MiB of CSV"}
    print("| benchmark | variant | time (p50) | ratio to baseline | mallocs (p50) |")
    print("|---|---|---:|---:|---:|")
    for group in sorted(by_group):
        members = sorted(by_group[group], key=lambda r: (r[1] != "baseline", r[1]))
        baseline = next((r[2] for r in members if r[1] == "baseline"), None)
        for _, variant, ns, mallocs in members:
            if group == "csv":
                shown = f"{ns / 1e6:.2f} ms = {1e9 / ns:.0f} MiB/s"
            else:
                # The per-send benchmarks run 1,000 sends per measured iteration.
                shown = f"{ns / 1000:.2f} ns/send"
            ratio = f"{ns / baseline:.2f}x" if baseline else "-"
            per = "" if group == "csv" else " per 1,000 sends"
            print(f"| {group} | {variant} | {shown} | {ratio} | {mallocs:.0f}{per} |")

if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "Benchmarks/.build/results")
