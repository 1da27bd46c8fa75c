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
    memory_rows = []
    results_by_name = {}
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
        # The memory benchmarks' own figures. The JMH export carries a metric over to the
        # benchmarks after the one that recorded it, so each group reads only its own.
        custom = {key: metrics[key]["scorePercentiles"]["50.0"] for key in MEMORY_METRICS.get(group, []) if key in metrics}
        memory_rows.append((group, variant, memory, custom))
        if group == "bursts":
            results_by_name[name] = metrics

    by_group = {}
    for row in rows:
        by_group.setdefault(row[0], []).append(row)
    # Benchmarks with scalingFactor .kilo measure 1,000 operations per iteration.
    per_operation = {"counter", "feedback", "actor-send", "plugin-send", "contended-send"}
    # Benchmarks that run 100,000 effects per iteration; only they measure peak memory.
    per_100_000 = {"effects", "churn", "in-flight", "sleep-cancelled"}
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
            # These groups do not count mallocs; what the JMH export shows for them is a figure
            # carried over from an earlier benchmark.
            if mallocs is None or group in per_100_000:
                allocations = "-"
            else:
                allocations = f"{mallocs:.0f}" + (" per 1,000 ops" if group in per_operation else "")
            peak = f"{memory / 1048576:.0f} MiB" if memory is not None and group in per_100_000 else "-"
            print(f"| {group} | {variant} | {shown} | {ratio} | {allocations} | {peak} |")
    print_memory(memory_rows)
    print_bursts(results_by_name)

# The custom metrics of the memory benchmarks (AsyncBenchmarks), by group.
PER_TASK, RESIDENT, RETAINED, LATE = ("heap bytes per in-flight task", "resident bytes per in-flight task",
                                      "heap bytes retained after", "last effect late (us)")
MEMORY_METRICS = {
    "in-flight": [PER_TASK, RESIDENT, RETAINED],
    "sleep-cancelled": [PER_TASK, RESIDENT, RETAINED],
    "churn": [RETAINED, LATE],
}

def print_memory(memory_rows):
    """The memory table: per in-flight task, beyond the group's baseline, and after the work."""
    groups = {}
    for row in memory_rows:
        if row[0] in MEMORY_METRICS:
            groups.setdefault(row[0], []).append(row)
    if not groups:
        return
    print()
    print("| benchmark | variant | peak RSS | heap per in-flight task | beyond baseline | resident per in-flight task | heap retained after | last effect late |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for group in sorted(groups):
        members = sorted(groups[group], key=lambda r: (not r[1].startswith("baseline"), r[1]))
        baseline = next((r[3] for r in members if r[1].startswith("baseline")), {})
        for _, variant, peak, custom in members:
            def figure(key, unit=" B"):
                return f"{custom[key]:,.0f}{unit}" if key in custom else "-"
            beyond = "-"
            if PER_TASK in custom and PER_TASK in baseline and not variant.startswith("baseline"):
                beyond = f"{custom[PER_TASK] - baseline[PER_TASK]:+,.0f} B"
            retained = f"{custom[RETAINED] / 1048576:,.2f} MiB" if RETAINED in custom else "-"
            late = f"{custom[LATE] / 1000:,.1f} ms" if LATE in custom else "-"
            shown_peak = f"{peak / 1048576:.0f} MiB" if peak is not None else "-"
            print(f"| {group} | {variant} | {shown_peak} | {figure(PER_TASK)} | {beyond} | {figure(RESIDENT)} | {retained} | {late} |")

BURST_METRICS = ["effects per second, first burst", "resident at start", "resident peak (VmHWM)", "resident after burst 1", "resident after burst 3",
                 "resident after burst 6", "heap in use after the bursts"]

def print_bursts(results):
    """The bursts table: the resident set over six bursts, with the reclaimer and without."""
    rows = [(name, metrics) for name, metrics in sorted(results.items()) if name.startswith("bursts:")]
    if not rows:
        return
    print()
    print("| bursts | effects/s (burst 1) | start | peak | after burst 1 | after 3 | after 6 | after 6 / start | heap in use after |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, metrics in rows:
        values = [metrics.get(key, {}).get("scorePercentiles", {}).get("50.0") for key in BURST_METRICS]
        rate = f"{values[0]:,.0f}" if values[0] is not None else "-"
        memory = values[1:]
        shown = [f"{v / 1048576:,.1f} MiB" if v is not None else "-" for v in memory]
        ratio = f"{memory[4] / memory[0]:.1f}x" if memory[0] and memory[4] is not None else "-"
        print(f"| {name[len('bursts: '):]} | {rate} | {' | '.join(shown[:5])} | {ratio} | {shown[5]} |")

if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "Benchmarks/.build/results")
