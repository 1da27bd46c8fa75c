#!/usr/bin/env python3
"""make torture: kill -9 actomaton-host over and over under each --sync policy, start two hosts
on one state file, and fill the database up; print what each case lost against its documented
bound.

usage: torture.py HOST COUNTER_SO [--rounds N]

Each kill round feeds the counter plugin `add` lines with distinct amounts, reads a random
number of acknowledged (printed) lines, kills the host with SIGKILL, restarts it on the same
database and reads the count back. The journal must hold a prefix of the input (nothing lost
out of order, nothing applied twice); the acknowledged actions past that prefix were lost.
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

BATCH_BOUND = 5000  # JournalOptions().maxUnsyncedActions
LINES = 20000


def restored_count(host, counter, state):
    done = subprocess.run([host, "run", counter, "--state", state, "--print", "none"], input=b":state\n",
                          capture_output=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"restart failed: {done.stderr.decode(errors='replace')}")
    line = done.stdout.decode().strip().splitlines()[-1]
    return int(line[len('counter: {"count":'):-1])


def kill_round(host, counter, state, sync, round_index, base, rng):
    amounts = [round_index * 100_000 + i for i in range(1, LINES + 1)]
    process = subprocess.Popen([host, "run", counter, "--state", state, "--sync", sync, "--print", "summary",
                                "--journal-snapshot-every", "97"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    stop_after = rng.randint(1, 8000)
    feeder_input = "".join(f"add {a}\n" for a in amounts).encode()
    import threading
    feeder = threading.Thread(target=lambda: _feed(process, feeder_input), daemon=True)
    feeder.start()
    acknowledged = 0
    killed_at = None
    for raw in process.stdout:
        if raw.startswith(b"counter: add "):
            acknowledged += 1
            if acknowledged >= stop_after:
                process.send_signal(signal.SIGKILL)
                killed_at = time.monotonic()
                break
    if killed_at is None:
        process.send_signal(signal.SIGKILL)
    rest = process.stdout.read()
    acknowledged += sum(1 for line in rest.splitlines() if line.startswith(b"counter: add "))
    process.wait()
    now = restored_count(host, counter, state)
    kept, total = 0, 0
    while base + total < now and kept < len(amounts):
        total += amounts[kept]
        kept += 1
    if base + total != now:
        raise SystemExit(f"--sync {sync}, round {round_index}: restored {now} is no prefix of the input: an action lost out of order or applied twice")
    return now, acknowledged, max(0, acknowledged - kept)


def _feed(process, data):
    try:
        process.stdin.write(data)
        process.stdin.close()
    except (BrokenPipeError, OSError):
        pass


def two_hosts(host, counter, directory):
    state = os.path.join(directory, "two.sqlite")
    first = subprocess.Popen([host, "run", counter, "--state", state], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
    first.stdout.readline()
    second = subprocess.run([host, "run", counter, "--state", state], input=b"add 1\n", capture_output=True, timeout=60)
    first.stdin.close()
    first.wait()
    refused = second.returncode == 1 and b"another actomaton-host is using this state database" in second.stderr
    return refused, second.stderr.decode(errors="replace").strip()


def disk_full(host, counter, directory):
    state = os.path.join(directory, "full.sqlite")
    lines = "".join(f"add {i}\n" for i in range(1, LINES + 1)).encode()
    done = subprocess.run([host, "run", counter, "--state", state, "--print", "summary", "--state-max-size", "128K", "--journal-snapshot-every", "1000000"],
                          input=lines, capture_output=True, timeout=600)
    acknowledged = [int(l[len(b"counter: add "):]) for l in done.stdout.splitlines() if l.startswith(b"counter: add ")]
    now = restored_count(host, counter, state)
    return done.returncode, len(acknowledged), sum(acknowledged), now, done.stderr.decode(errors="replace").strip()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("host")
    parser.add_argument("counter")
    parser.add_argument("--rounds", type=int, default=int(os.environ.get("TORTURE_ROUNDS", "20")))
    parser.add_argument("--seed", type=int, default=int(os.environ.get("TORTURE_SEED", "1")))
    arguments = parser.parse_args()
    rng = random.Random(arguments.seed)
    failed = False
    with tempfile.TemporaryDirectory(prefix="actomaton-torture-") as directory:
        print(f"kill -9 rounds: {arguments.rounds} per policy, {LINES} add lines each (seed {arguments.seed})")
        print(f"{'--sync':8} {'acknowledged':>13} {'lost (total)':>13} {'lost (worst)':>13}  bound")
        for sync, bound in (("always", 0), ("off", 0), ("batch", BATCH_BOUND)):
            state = os.path.join(directory, f"{sync}.sqlite")
            base, acknowledged_total, lost_total, lost_worst = 0, 0, 0, 0
            for round_index in range(arguments.rounds):
                base, acknowledged, lost = kill_round(arguments.host, arguments.counter, state, sync, round_index, base, rng)
                acknowledged_total += acknowledged
                lost_total += lost
                lost_worst = max(lost_worst, lost)
            bound_text = "nothing" if bound == 0 else f"{bound} actions, one 100 ms window"
            verdict = "ok" if lost_worst <= bound else "BROKEN"
            failed |= lost_worst > bound
            print(f"{sync:8} {acknowledged_total:>13} {lost_total:>13} {lost_worst:>13}  {bound_text}: {verdict}")
        refused, message = two_hosts(arguments.host, arguments.counter, directory)
        failed |= not refused
        print(f"two hosts on one state file: {'second refused' if refused else 'BOTH RAN'} ({message})")
        status, count, total, now, message = disk_full(arguments.host, arguments.counter, directory)
        ok = status == 1 and now == total
        failed |= not ok
        print(f"full database (--state-max-size 128K): exit {status}, {count} acknowledged, "
              f"restored {'exactly those' if now == total else f'{now} against {total} acknowledged'}: {'ok' if ok else 'BROKEN'}")
        print(f"  {message}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
