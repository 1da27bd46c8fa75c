#!/usr/bin/env python3
"""The network service under load (`make server-bench`), against a baseline in the same run.

Runs, one after another on this machine, with wrk beside the server:
  1. the baseline: `actomaton-host serve-baseline`, a plain Hummingbird handler that
     increments one counter;
  2. `serve --listen` with the C counter in-process, in memory;
  3. the same with `--state FILE --sync always` (every answer waits for its fsync; requests
     from all connections share commits);
  4. the counter in worker processes, as `serve` runs plugins by default: one per instance,
     all started before the run;
each with CONNECTIONS keep-alive connections POSTing `add 1` to KEYS instances for SECONDS.
Then the memory of 10,000 counter instances, active and passivated (the resident set of the
server process before and after), and 1,000 WebSocket watchers on one instance: how long each
transition takes to reach every watcher (from just before the POST that makes it).

Prints a Markdown table; the README's figures come from it. A run is refused (exit 1) when a
request failed or a watcher missed a transition: the figures would not be what they claim.
"""
import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+)")


def start(command):
    """Starts a server; returns the process and its port (read from its `listening on` line)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        match = LISTENING.search(line)
        if match:
            return process, int(match.group(1))
    process.kill()
    sys.exit(f"server-bench: the server did not start: {' '.join(command)}\n{process.stderr.read()}")


def stop(process):
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def resident_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


WRK_SCRIPT = """
local counter = 0
local keys = %d
request = function()
  counter = counter + 1
  return wrk.format("POST", "/v1/machines/counter/k" .. (counter %% keys), {["Content-Type"] = "application/json"},
                    '{"action": "add", "args": [1]}')
end
"""


def wrk(port, seconds, connections, keys, scratch):
    """Runs wrk; returns (requests per second, p50 ms, p99 ms, requests, failures)."""
    script = os.path.join(scratch, "post.lua")
    with open(script, "w") as file:
        file.write(WRK_SCRIPT % keys)
    output = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", script,
                             f"http://127.0.0.1:{port}"], capture_output=True, text=True, check=True).stdout

    def milliseconds(label):
        match = re.search(rf"^\s+{label}\s+([\d.]+)(us|ms|s)\s*$", output, re.M)
        value, unit = float(match.group(1)), match.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    requests = int(re.search(r"(\d+) requests in", output).group(1))
    failures = 0
    for pattern in (r"Non-2xx or 3xx responses: (\d+)", r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)"):
        match = re.search(pattern, output)
        if match:
            failures += sum(int(group) for group in match.groups())
    return rate, milliseconds("50%"), milliseconds("99%"), requests, failures


def load(name, command, args, scratch, all_instances_first=False):
    process, port = start(command)
    try:
        wrk(port, 2, args.connections, args.keys, scratch)  # warm-up: the instances are made
        # A worker process starts with its instance's first action: all of them before the run.
        deadline = time.monotonic() + 120
        while all_instances_first and metric(port, "actomaton_instances_active") < args.keys and time.monotonic() < deadline:
            wrk(port, 2, args.connections, args.keys, scratch)
        rate, p50, p99, requests, failures = wrk(port, args.seconds, args.connections, args.keys, scratch)
    finally:
        stop(process)
    if failures:
        sys.exit(f"server-bench: {name}: {failures} requests failed")
    return rate, p50, p99


def post(port, key, body='{"action": "increment"}'):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/machines/counter/{key}", data=body.encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())


def metric(port, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics") as response:
        for line in response.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


async def make_instances(port, count):
    """POSTs `increment` to `count` new keys over 32 keep-alive connections."""
    async def client(keys):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = b'{"action": "increment"}'
        for key in keys:
            writer.write(f"POST /v1/machines/counter/m{key} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            await writer.drain()
            status = await reader.readline()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            if b" 200 " not in status:
                raise RuntimeError(f"instance m{key}: {status!r}")
        writer.close()
    await asyncio.gather(*(client(range(index, count, 32)) for index in range(32)))


def memory(host, plugins, count):
    """The resident set per instance: active, then passivated."""
    process, port = start([host, "serve", "--plugins", plugins, "--isolation", "none", "--listen", "127.0.0.1:0",
                           "--idle-timeout", "2", "--log-level", "warning"])
    try:
        post(port, "warm")
        before = resident_kib(process.pid)
        asyncio.run(make_instances(port, count))
        active = resident_kib(process.pid)
        deadline = time.monotonic() + 60
        while metric(port, "actomaton_instances_passivated") < count and time.monotonic() < deadline:
            time.sleep(0.2)
        passivated_count = metric(port, "actomaton_instances_passivated")
        passivated = resident_kib(process.pid)
    finally:
        stop(process)
    return (active - before) * 1024 / count, (passivated - before) * 1024 / count, passivated_count


def raw_watcher_process(port, count, transitions, connected, results):
    """One client process: `count` watchers on plain sockets, read through one selector, each
    frame parsed by hand; puts each delivery's (seq, receipt time) in `results`. A WebSocket
    library's cost per message, in Python, is a large part of what the other client measures."""
    import base64
    import selectors
    import socket

    path = "/v1/machines/counter/watched/watch"
    selector = selectors.DefaultSelector()
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        buffer = b""
        while b"\r\n\r\n" not in buffer:
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError("a watcher was closed during its handshake")
            buffer += chunk
        head, _, rest = buffer.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise RuntimeError(f"a watcher's handshake was answered {head[:40]!r}")
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, {"socket": sock, "buffer": rest, "received": []})
        with connected.get_lock():
            connected.value += 1
    watching = count
    states = [key.data for key in selector.get_map().values()]
    while watching:
        ready = selector.select(timeout=120)
        if not ready:
            raise RuntimeError("no watcher received anything for 120 s")
        for key, _ in ready:
            state = key.data
            chunk = state["socket"].recv(1 << 16)
            now = time.monotonic()
            if not chunk:
                raise RuntimeError("a watcher was closed")
            buffer = state["buffer"] + chunk
            while len(buffer) >= 2:
                opcode, length, offset = buffer[0] & 0x0F, buffer[1] & 0x7F, 2
                if length == 126:
                    length, offset = int.from_bytes(buffer[2:4], "big"), 4
                elif length == 127:
                    length, offset = int.from_bytes(buffer[2:10], "big"), 10
                if len(buffer) < offset + length:
                    break
                payload, buffer = buffer[offset:offset + length], buffer[offset + length:]
                if opcode == 1:
                    start = payload.index(b'"seq":') + 6
                    state["received"].append((int(payload[start:payload.index(b",", start)]), now))
                    if len(state["received"]) == transitions:
                        selector.unregister(state["socket"])
                        watching -= 1
                elif opcode == 9:
                    # A pong, masked with zeros (a client's frames are masked).
                    state["socket"].sendall(bytes([0x8A, 0x80 | len(payload), 0, 0, 0, 0]) + payload)
                elif opcode == 8:
                    raise RuntimeError(f"a watcher was closed: {payload!r}")
            state["buffer"] = buffer
    results.put([item for state in states for item in state["received"]])
    for state in states:
        state["socket"].close()


def watcher_process(port, count, transitions, connected, results):
    """One client process: `count` watchers; puts each delivery's (seq, receipt time) in `results`."""
    import websockets

    async def watch(received):
        async with websockets.connect(f"ws://127.0.0.1:{port}/v1/machines/counter/watched/watch", max_queue=None,
                                      open_timeout=120) as socket:
            with connected.get_lock():
                connected.value += 1
            while len(received) < transitions:
                message = await socket.recv()
                now = time.monotonic()
                start = message.index('"seq":') + 6
                received.append((int(message[start:message.index(",", start)]), now))

    async def main():
        lists = [[] for _ in range(count)]
        await asyncio.gather(*(watch(received) for received in lists))
        results.put([item for received in lists for item in received])

    asyncio.run(main())


def watchers(port, count, transitions, spacing, client, processes=4):
    """Opens `count` watchers of one instance from `processes` client processes (one Python
    process cannot read 1,000 sockets as fast as the server writes them), with `client`
    (`raw_watcher_process` or `watcher_process`), sends `transitions`
    actions `spacing` seconds apart, and returns every delivery's latency in milliseconds, from
    just before the POST to the receipt (CLOCK_MONOTONIC is one clock for every process)."""
    import multiprocessing

    post(port, "watched")
    connected = multiprocessing.Value("i", 0)
    results = multiprocessing.Queue()
    clients = [multiprocessing.Process(target=client,
                                       args=(port, count // processes + (index < count % processes), transitions, connected, results))
               for index in range(processes)]
    for client in clients:
        client.start()
    deadline = time.monotonic() + 120
    while connected.value < count and time.monotonic() < deadline:
        time.sleep(0.05)
    sent = {}
    for index in range(transitions):
        seq = 2 + index
        sent[seq] = time.monotonic()
        answer = post(port, "watched")
        if answer["seq"] != seq:
            raise RuntimeError(f"expected seq {seq}, got {answer['seq']}")
        time.sleep(spacing)
    deliveries = [item for _ in clients for item in results.get(timeout=120)]
    for client in clients:
        client.join()
    if len(deliveries) != count * transitions:
        sys.exit(f"server-bench: watchers missed {count * transitions - len(deliveries)} transitions")
    return [(received - sent[seq]) * 1000 for seq, received in deliveries]


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("host", help="actomaton-host, a release build")
    parser.add_argument("counter", help="the C counter plugin (.so)")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--instances", type=int, default=10_000)
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--transitions", type=int, default=100)
    parser.add_argument("--only", choices=["load", "memory", "watchers"], help="run one part")
    parser.add_argument("--watcher-clients", choices=["both", "raw", "websockets"], default="both",
                        help="the watchers' client: plain sockets read by hand, the websockets library, or both in turn")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("server-bench: wrk is not installed (apt-get install -y wrk)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))

    scratch = tempfile.mkdtemp(prefix="actomaton-server-bench-")
    os.chmod(scratch, 0o700)
    plugins = os.path.join(scratch, "plugins")
    os.mkdir(plugins, 0o700)
    shutil.copy(args.counter, os.path.join(plugins, "counter.so"))
    os.chmod(os.path.join(plugins, "counter.so"), 0o755)
    # The C counter in-process (serve's default runs each instance in a worker process).
    serve = [args.host, "serve", "--plugins", plugins, "--isolation", "none", "--listen", "127.0.0.1:0", "--log-level", "warning"]
    rows = []
    try:
        if args.only in (None, "load"):
            baseline = load("baseline", [args.host, "serve-baseline", "--listen", "127.0.0.1:0"], args, scratch)
            rows.append(("plain Hummingbird handler (baseline)", *baseline))
            rows.append(("serve --listen, C counter in-process", *load("in memory", serve, args, scratch)))
            state = os.path.join(scratch, "state.sqlite")
            rows.append(("… with --state --sync always", *load("--sync always", serve + ["--state", state, "--sync", "always"], args, scratch)))
            in_workers = [argument for argument in serve if argument not in ("--isolation", "none")]
            rows.append((f"serve --listen, C counter in {args.keys:,} worker processes (serve's default)",
                         *load("in workers", in_workers, args, scratch, all_instances_first=True)))
        if args.only in (None, "memory"):
            active, passivated, passivated_count = memory(args.host, plugins, args.instances)
        latencies = {}
        clients = {"raw": (raw_watcher_process, "plain sockets, frames read by hand"),
                   "websockets": (watcher_process, "the websockets library")}
        for name in (["raw", "websockets"] if args.watcher_clients == "both" else [args.watcher_clients]):
            if args.only not in (None, "watchers"):
                break
            process, port = start(serve + ["--max-watchers-per-instance", str(args.watchers), "--max-watchers", str(args.watchers),
                                           "--max-connections", str(args.watchers + 64)])
            try:
                latencies[name] = watchers(port, args.watchers, args.transitions, 0.1, clients[name][0])
            finally:
                stop(process)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    if rows:
        base = rows[0][1]
        print(f"\n### The service under load: {args.connections} connections, {args.keys} keys, {args.seconds} s each (wrk, 2 threads)\n")
        print("| server | actions/s | × baseline | p50 | p99 |")
        print("|---|---:|---:|---:|---:|")
        for name, rate, p50, p99 in rows:
            print(f"| {name} | {rate:,.0f} | {rate / base:.2f} | {p50:.2f} ms | {p99:.2f} ms |")
    if args.only in (None, "memory"):
        print(f"\n| {args.instances:,} counter instances | resident set per instance |")
        print("|---|---:|")
        print(f"| active | {active:,.0f} B |")
        print(f"| passivated ({passivated_count:,.0f} of them, idle timeout 2 s) | {passivated:,.0f} B (freed memory the allocator keeps counts) |")
    for name, measured in latencies.items():
        print(f"\n{args.watchers:,} watchers on one instance, {args.transitions} transitions 100 ms apart, "
              f"{len(measured):,} deliveries: p50 {statistics.median(measured):.1f} ms, p99 {percentile(measured, 0.99):.1f} ms, "
              f"max {max(measured):.1f} ms (from before the POST to each watcher's receipt; 4 Python client processes, "
              f"{clients[name][1]})")


if __name__ == "__main__":
    main()
