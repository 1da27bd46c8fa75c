#!/usr/bin/env python3
"""make cluster-bench: the cluster's throughput with one, two and three hosts, and a forwarded
request against a direct one, measured in the same run on this machine.

A private PostgreSQL server (as in make test-cluster) and N hosts; one wrk per host, all at once,
each posting `add 1` to KEYS instances in turn, so that with N hosts about (N-1)/N of the
requests reach a host that does not own their instance and are forwarded. Then, with two hosts:
the instances the first owns, asked of it directly and of the second (forwarded), one wrk at a
time.

Usage: cluster-bench.py HOST_BINARY COUNTER_PLUGIN [--seconds S] [--connections C] [--keys K]
"""

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

spec = importlib.util.spec_from_file_location("cluster_test", os.path.join(os.path.dirname(__file__), "cluster-test.py"))
cluster_test = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cluster_test)

WRK_SCRIPT = """
local keys = {%s}
local counter = %d
request = function()
  counter = counter + 1
  return wrk.format("POST", "/v1/machines/counter/" .. keys[(counter %% #keys) + 1], {["Content-Type"] = "application/json"},
                    '{"action": "add", "args": [1]}')
end
"""


def wrk(url, seconds, connections, keys, offset, scratch):
    """Runs wrk against `url`; returns (requests per second, p99 ms, failures)."""
    script = os.path.join(scratch, f"post-{offset}-{len(keys)}.lua")
    with open(script, "w") as file:
        file.write(WRK_SCRIPT % (", ".join(f'"{key}"' for key in keys), offset))
    output = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", script, url],
                            capture_output=True, text=True, check=True).stdout
    match = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", output, re.M)
    value, unit = float(match.group(1)), match.group(2)
    p99 = value / 1000 if unit == "us" else value * 1000 if unit == "s" else value
    failures = 0
    for pattern in (r"Non-2xx or 3xx responses: (\d+)", r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)"):
        found = re.search(pattern, output)
        if found:
            failures += sum(int(group) for group in found.groups())
    return float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)), p99, failures


def together(hosts, seconds, connections, keys, scratch):
    """One wrk per host at once; returns (total requests per second, worst p99 ms, failures)."""
    results = [None] * len(hosts)

    def run(index):
        results[index] = wrk(hosts[index].url, seconds, connections, keys, index * 7, scratch)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(hosts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(r[0] for r in results), max(r[1] for r in results), sum(r[2] for r in results)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("host")
    parser.add_argument("plugin")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--keys", type=int, default=60)
    arguments = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("cluster-bench: wrk is not installed (apt-get install -y wrk)")

    work = tempfile.mkdtemp(prefix="actomaton-cluster-bench-")
    plugins = os.path.join(work, "plugins")
    os.makedirs(plugins)
    shutil.copy(arguments.plugin, os.path.join(plugins, "counter.so"))
    database = cluster_test.PostgresServer()
    keys = [f"b{index}" for index in range(arguments.keys)]
    rows = []
    hosts = []
    failed = True
    try:
        for count in (1, 2, 3):
            hosts = [cluster_test.Host(arguments.host, plugins, database.url, 10, work) for _ in range(count)]
            for host in hosts:
                host.start()
            together(hosts, 2, arguments.connections, keys, work)  # warm-up: the instances are claimed
            rate, p99, failures = together(hosts, arguments.seconds, arguments.connections, keys, work)
            if failures:
                sys.exit(f"cluster-bench: {count} hosts: {failures} requests failed (logs in {work})")
            rows.append((count, rate, p99))
            if count == 2:
                owned = {row[0].split("/", 1)[1] for row in database.query(
                    "SELECT i.name FROM actomaton_instances i JOIN actomaton_hosts h ON h.id = i.owner "
                    f"WHERE h.advertise = '{hosts[0].url}' AND i.name LIKE 'counter/b%'")}
                mine = [key for key in keys if key in owned]
                if not mine:
                    sys.exit("cluster-bench: the first host owns no instance")
                direct = wrk(hosts[0].url, arguments.seconds, arguments.connections, mine, 0, work)
                forwarded = wrk(hosts[1].url, arguments.seconds, arguments.connections, mine, 0, work)
                if direct[2] or forwarded[2]:
                    sys.exit(f"cluster-bench: the forwarding run failed requests (logs in {work})")
            for host in hosts:
                host.signal(15)
            for host in hosts:
                host.wait()
            hosts = []
        failed = False
    finally:
        for host in hosts:
            host.signal(9)
        database.stop()
        if failed:
            print(f"cluster-bench: the hosts' logs are kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    base = rows[0][1]
    print(f"\n### The cluster on this machine: {arguments.keys} instances, {arguments.connections} connections per host, "
          f"{arguments.seconds} s each (one wrk per host)\n")
    print("| hosts | requests forwarded | actions/s | ratio to one host | p99 |")
    print("|---|---|---|---|---|")
    for count, rate, p99 in rows:
        print(f"| {count} | about {100 * (count - 1) // count}% | {rate:,.0f} | {rate / base:.2f} | {p99:.1f} ms |")
    print(f"\n| two hosts, the instances the first owns | actions/s | p99 |\n|---|---|---|")
    print(f"| asked of their owner (direct) | {direct[0]:,.0f} | {direct[1]:.1f} ms |")
    print(f"| asked of the other host (forwarded) | {forwarded[0]:,.0f} | {forwarded[1]:.1f} ms |")
    print(f"\nA forwarded request costs {direct[0] / forwarded[0]:.2f}x a direct one in throughput "
          f"and {forwarded[1] / direct[1]:.2f}x in p99 latency.")


if __name__ == "__main__":
    main()
