#!/usr/bin/env python3
"""Python's csv module (its C reader) on the CSV benchmarks' 64 MiB file, for reference beside
`csv-64mib` in CoreBenchmarks: prints the median of 5 runs in the report's table format.

The file is BenchmarkSupport's sampleCSV(byteCount: 64 << 20), generated the same way here.
"""
import csv
import io
import statistics
import time

def sample_csv(byte_count):
    fields = ["alpha", "1234", "\"quoted, with comma\"", "\"say \"\"hi\"\"\"", "", "\"two\nlines\"", "x"]
    parts, size, index = [], 0, 0
    while size < byte_count:
        row = ",".join(fields[(index * 31 + column * 7) % len(fields)] for column in range(5)) + "\r\n"
        parts.append(row)
        size += len(row.encode())
        index += 1
    return "".join(parts)

def main():
    text = sample_csv(64 << 20)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        fields = 0
        for row in csv.reader(io.StringIO(text, newline="")):
            fields += len(row)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"| csv-64mib | Python {'.'.join(map(str, __import__('sys').version_info[:3]))} csv.reader (C), every row | "
          f"{median * 1000:.0f} ms = {64 / median:.0f} MiB/s | - | - | - |")

if __name__ == "__main__":
    main()
