#!/usr/bin/env python3
"""make test-cluster: three hosts sharing one private PostgreSQL, under attack.

A private PostgreSQL server is made in a temporary directory (initdb and the server run as the
`postgres` user when this runs as root: PostgreSQL refuses root) on a loopback port; three
`actomaton-host serve --listen --state postgres://...` hosts join it. A client sends every action
with an Idempotency-Key to a random host and retries what was not acknowledged (the same key, on
another host) until it is. Meanwhile, round after round:

  kill     kill -9 the host that owns a busy instance, then start it again;
  stop     SIGSTOP a host past its lease, SIGCONT it;
  restart  SIGTERM every host and start them all again.

Each round also leaves a delayed action (add_later) pending on a busy instance just before the
attack, due during the outage, and one on a quiet instance of the attacked host that no request
touches again: its timer must fire on the host that adopts it. At the end it checks, from the
journal and the hosts' answers:

  - every acknowledged action is in the journal exactly once: per instance the journal's
    transitions are numbered 1..N without a gap, and N is the count of acknowledged requests
    plus the delayed actions that fired;
  - the final state equals the journal: the count is what the acknowledged increments and the
    fired delayed actions add up to; every delayed action fired exactly once, the quiet
    instances' too (adopted by another host when theirs died, stopped or lapsed);
  - a watcher of each busy instance, connected to whichever host it picks and reconnecting with
    ?after=SEQ whenever its host goes away, saw every transition once, in order, up to the last;
  - no delayed action fired early: the n-th delayed action of a busy instance reached its
    watcher no sooner than its delay after the n-th was first asked for;
  - no instance was written by two owners: the hosts' fencing refusals are counted and printed;

and it prints the failover times (from the last acknowledgement before an attack to the first
after it, per instance, the worst of the round).

Usage: cluster-test.py HOST_BINARY COUNTER_PLUGIN [--rounds N] [--lease-ttl S]
(CLUSTER_KEEP_LOGS=1 keeps the hosts' logs of a run that passed; CLUSTER_LOG_LEVEL=debug makes
them log a line per request.)
"""

import argparse
import base64
import http.client
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

KEYS = [f"k{index}" for index in range(6)]
DELAY_SECONDS = 1.0
LATER_AMOUNT = 1_000_000


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def find_postgres_binaries():
    root = "/usr/lib/postgresql"
    if os.path.isdir(root):
        for version in sorted(os.listdir(root), key=lambda v: -int(v) if v.isdigit() else 0):
            candidate = os.path.join(root, version, "bin")
            if os.path.exists(os.path.join(candidate, "initdb")):
                return candidate
    initdb = shutil.which("initdb")
    if initdb:
        return os.path.dirname(initdb)
    sys.exit("error: PostgreSQL is not installed (no initdb): run make deps")


class PostgresServer:
    def __init__(self):
        self.binaries = find_postgres_binaries()
        self.directory = tempfile.mkdtemp(prefix="actomaton-cluster-pg-")
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            shutil.chown(self.directory, "postgres", "postgres")
        self.run("initdb", "-D", f"{self.directory}/data", "-U", "actomaton", "--auth=trust", "--locale=C", "-E", "UTF8",
                 "--no-sync")
        self.port = free_port()
        self.run("pg_ctl", "-D", f"{self.directory}/data", "-l", f"{self.directory}/server.log", "-w", "-t", "60", "-o",
                 f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c max_connections=200", "start")
        self.url = f"postgres://actomaton@127.0.0.1:{self.port}/postgres"

    def run(self, tool, *arguments):
        command = [os.path.join(self.binaries, tool), *arguments]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)

    def query(self, sql):
        output = subprocess.run([os.path.join(self.binaries, "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "actomaton",
                                 "-d", "postgres", "-At", "-F", "\t", "-c", sql], check=True, capture_output=True, text=True)
        return [line.split("\t") for line in output.stdout.splitlines() if line]

    def stop(self):
        try:
            self.run("pg_ctl", "-D", f"{self.directory}/data", "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


# CLUSTER_LOG_LEVEL=debug: the hosts log a line per request (their logs are kept when a run fails,
# or with CLUSTER_KEEP_LOGS=1).
LOG_LEVEL = os.environ.get("CLUSTER_LOG_LEVEL")


class Host:
    def __init__(self, binary, plugins, database, lease_ttl, log_directory):
        self.binary, self.plugins, self.database, self.lease_ttl = binary, plugins, database, lease_ttl
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(log_directory, f"host-{self.port}.log"), "ab")
        self.process = None
        self.stopped = False

    def start(self):
        self.process = subprocess.Popen(
            [self.binary, "serve", "--plugins", self.plugins, "--listen", f"127.0.0.1:{self.port}", "--isolation", "none",
             "--state", self.database, "--advertise", self.url, "--lease-ttl", str(self.lease_ttl), "--shutdown-timeout", "5",
             "--journal-snapshot-every", "1000000"] + (["--log-level", LOG_LEVEL] if LOG_LEVEL else []),
            stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
                connection.request("GET", "/readyz")
                if connection.getresponse().status == 200:
                    return
            except OSError:
                pass
            if self.process.poll() is not None:
                sys.exit(f"error: the host on port {self.port} exited with {self.process.returncode}; see its log")
            time.sleep(0.05)
        sys.exit(f"error: the host on port {self.port} did not become ready")

    def signal(self, number):
        if self.process and self.process.poll() is None:
            os.kill(self.process.pid, number)

    def wait(self):
        if self.process:
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.dump_stacks("did not exit within 60 s of SIGTERM")
                raise

    def dump_stacks(self, why):
        """Appends every thread's stack to the host's log (when gdb is installed), for a host that hangs."""
        if not self.process or self.process.poll() is not None or shutil.which("gdb") is None:
            return
        self.log.write(f"\n== cluster-test: this host {why}; its threads:\n".encode())
        self.log.flush()
        subprocess.run(["gdb", "-p", str(self.process.pid), "-batch", "-ex", "thread apply all bt 25"],
                       stdout=self.log, stderr=subprocess.DEVNULL, timeout=120)


class Client:
    """One sender per instance: increments, each with its own Idempotency-Key, retried until acknowledged."""

    def __init__(self, hosts):
        self.hosts = hosts
        self.lock = threading.Lock()
        self.acknowledged = {key: [] for key in KEYS}  # (time, seq, action, idempotency key)
        self.armed_at = {key: [] for key in KEYS}  # when each delayed action was first asked for, in order
        self.running = True
        self.retries = 0
        # Every attempt, for the dump of an instance whose journal does not add up:
        # (started, ended, port, outcome, idempotency key).
        self.attempts = {key: [] for key in KEYS}

    def send(self, key, body, idempotency_key, deadline_seconds=120):
        deadline = time.monotonic() + deadline_seconds
        attempt = 0
        while time.monotonic() < deadline:
            host = random.choice(self.hosts)
            started = time.monotonic()
            outcome = "?"
            try:
                connection = http.client.HTTPConnection("127.0.0.1", host.port, timeout=2)
                connection.request("POST", f"/v1/machines/counter/{key}", body=json.dumps(body),
                                   headers={"Idempotency-Key": idempotency_key, "Content-Type": "application/json"})
                response = connection.getresponse()
                text = response.read()
                outcome = f"{response.status} {text[:160]!r}"
                if response.status == 200:
                    self.attempts[key].append((started, time.monotonic(), host.port, outcome, idempotency_key))
                    return json.loads(text)
                if response.status not in (503, 504, 421, 500):
                    raise RuntimeError(f"{key}: {response.status} {text!r}")
            except (OSError, http.client.HTTPException) as error:
                outcome = f"{error!r}"
            self.attempts[key].append((started, time.monotonic(), host.port, outcome, idempotency_key))
            attempt += 1
            with self.lock:
                self.retries += 1
            time.sleep(min(0.02 * attempt, 0.2))
        raise RuntimeError(f"{key}: no acknowledgement within {deadline_seconds}s for {idempotency_key}")

    def stream(self, key):
        number = 0
        while self.running:
            number += 1
            answer = self.send(key, {"action": "increment"}, f"{key}-{number}")
            with self.lock:
                self.acknowledged[key].append((time.monotonic(), answer["seq"], "increment"))

    def arm_quiet(self, host, key):
        """A delayed action on a new instance, sent to `host` so that it owns the instance."""
        connection = http.client.HTTPConnection("127.0.0.1", host.port, timeout=10)
        connection.request("POST", f"/v1/machines/counter/{key}",
                           body=json.dumps({"action": "add_later", "args": [LATER_AMOUNT, DELAY_SECONDS]}),
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        return response.status == 200

    def arm_later(self, key, number):
        with self.lock:
            self.armed_at[key].append(time.monotonic())
        answer = self.send(key, {"action": "add_later", "args": [LATER_AMOUNT, DELAY_SECONDS]}, f"{key}-later-{number}")
        with self.lock:
            self.acknowledged[key].append((time.monotonic(), answer["seq"], "add_later"))
        return answer["seq"]

    def last_acknowledgement(self):
        with self.lock:
            return {key: (entries[-1][0] if entries else 0) for key, entries in self.acknowledged.items()}

    def first_acknowledgement_after(self, moment):
        with self.lock:
            return {key: next((entry[0] for entry in entries if entry[0] > moment), None) for key, entries in self.acknowledged.items()}


class Watcher:
    """Watches counter/KEY over a WebSocket on random hosts, resuming with ?after=SEQ; checks seq order."""

    def __init__(self, hosts, key):
        self.hosts, self.key = hosts, key
        self.last = 0
        self.problems = []
        self.reconnects = 0
        self.running = True
        self.fired_seen = []  # when each delayed action's transition reached the watcher

    def run(self):
        while self.running:
            host = random.choice(self.hosts)
            try:
                with socket.create_connection(("127.0.0.1", host.port), timeout=3) as connection:
                    key = base64.b64encode(os.urandom(16)).decode()
                    connection.sendall((f"GET /v1/machines/counter/{self.key}/watch?after={self.last} HTTP/1.1\r\n"
                                        f"Host: 127.0.0.1:{host.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
                    stream = connection.makefile("rb")
                    status = stream.readline()
                    while stream.readline() not in (b"\r\n", b""):
                        pass
                    if b" 101 " not in status:
                        raise OSError(status)
                    resumed_after, received = self.last, 0
                    while self.running:
                        header = stream.read(2)
                        if len(header) < 2:
                            break
                        opcode, length = header[0] & 0x0F, header[1] & 0x7F
                        if length == 126:
                            length = struct.unpack(">H", stream.read(2))[0]
                        elif length == 127:
                            length = struct.unpack(">Q", stream.read(8))[0]
                        payload = stream.read(length)
                        if opcode == 8:
                            break
                        if opcode == 1:
                            message = json.loads(payload)
                            seq = message["seq"]
                            if message.get("action") == "add":
                                self.fired_seen.append(time.monotonic())
                            if seq != self.last + 1:
                                self.problems.append(f"watcher of {self.key}: seq {seq} after {self.last} (connection "
                                                     f"{self.reconnects} to port {host.port}, after={resumed_after}; "
                                                     f"{received} messages on it before)")
                            self.last = seq
                            received += 1
            except (OSError, ValueError):
                pass
            self.reconnects += 1
            time.sleep(0.05)


def owner_of(database, key):
    rows = database.query(f"SELECT h.advertise FROM actomaton_instances i JOIN actomaton_hosts h ON h.id = i.owner "
                          f"WHERE i.name = 'counter/{key}'")
    return rows[0][0] if rows else None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("host")
    parser.add_argument("plugin")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--lease-ttl", type=int, default=2)
    arguments = parser.parse_args()

    work = tempfile.mkdtemp(prefix="actomaton-cluster-")
    plugins = os.path.join(work, "plugins")
    os.makedirs(plugins)
    shutil.copy(arguments.plugin, os.path.join(plugins, "counter.so"))
    database = PostgresServer()
    hosts = [Host(arguments.host, plugins, database.url, arguments.lease_ttl, work) for _ in range(3)]
    failed = False
    try:
        for host in hosts:
            host.start()
        print(f"3 hosts on ports {', '.join(str(h.port) for h in hosts)}, PostgreSQL on {database.port}, "
              f"lease {arguments.lease_ttl}s, {arguments.rounds} rounds of each attack")
        client = Client(hosts)
        senders = [threading.Thread(target=client.stream, args=(key,), daemon=True) for key in KEYS]
        for sender in senders:
            sender.start()
        watchers = {key: Watcher(hosts, key) for key in KEYS}
        for watcher in watchers.values():
            threading.Thread(target=watcher.run, daemon=True).start()
        time.sleep(0.5)
        failovers = {"kill": [], "stop": [], "restart": []}
        quiet = []
        later_number = 0
        for round_number in range(arguments.rounds):
            for attack in ("kill", "stop", "restart"):
                later_number += 1
                busy = random.choice(KEYS)
                client.arm_later(busy, later_number)
                owner = owner_of(database, busy)
                victim = next((h for h in hosts if h.url == owner), random.choice(hosts))
                quiet_key = f"quiet-{later_number}"
                if client.arm_quiet(victim, quiet_key):
                    quiet.append(quiet_key)
                before = client.last_acknowledgement()
                attacked = time.monotonic()
                if attack == "kill":
                    victim.signal(signal.SIGKILL)
                    victim.wait()
                    time.sleep(arguments.lease_ttl + DELAY_SECONDS)
                    victim.start()
                elif attack == "stop":
                    victim.signal(signal.SIGSTOP)
                    time.sleep(arguments.lease_ttl * 1.5 + DELAY_SECONDS)
                    victim.signal(signal.SIGCONT)
                else:
                    terminated = time.monotonic()
                    for host in hosts:
                        host.signal(signal.SIGTERM)
                    for host in hosts:
                        host.wait()
                    exited = time.monotonic() - terminated
                    # The outage begins once every host has exited: requests in flight at the
                    # SIGTERM are still answered while the hosts drain.
                    before = client.last_acknowledgement()
                    attacked = time.monotonic()
                    for host in hosts:
                        host.start()
                    print(f"round {round_number + 1}, restart: the last host exited {exited:.2f}s after SIGTERM; "
                          f"all were ready {time.monotonic() - attacked:.2f}s later")
                # Every instance acknowledged something again.
                deadline = time.monotonic() + 60
                while True:
                    after = client.first_acknowledgement_after(attacked)
                    if all(after.values()):
                        break
                    if time.monotonic() > deadline:
                        stuck = [key for key, moment in after.items() if not moment]
                        print(f"round {round_number + 1}, {attack}: {', '.join(stuck)} acknowledged nothing for 60 s; "
                              f"the hosts' threads are in their logs")
                        for host in hosts:
                            host.dump_stacks(f"acknowledged nothing for {', '.join(stuck)} for 60 s after the {attack}")
                        break
                    time.sleep(0.05)
                gaps = {key: (after[key] or time.monotonic()) - before[key] for key in KEYS}
                worst = max(gaps.values())
                failovers[attack].append(worst)
                if worst > 2 * arguments.lease_ttl + 1.5:
                    # A slow failover: what the client was answered meanwhile, on its slowest instance.
                    key = max(gaps, key=gaps.get)
                    wall = time.strftime("%H:%M:%S", time.gmtime(time.time() - time.monotonic() + before[key]))
                    print(f"round {round_number + 1}, {attack} of port {victim.port}: {key} waited {worst:.2f}s; its attempts "
                          f"(seconds after the last acknowledgement before, at {wall} UTC):")
                    for (started, ended, port, outcome, _) in client.attempts[key]:
                        if before[key] <= started <= before[key] + worst:
                            print(f"  {started - before[key]:6.2f}..{ended - before[key]:6.2f} port {port}: {outcome[:120]}")
            print(f"round {round_number + 1}: worst gap kill {failovers['kill'][-1]:.2f}s, stop {failovers['stop'][-1]:.2f}s, "
                  f"restart {failovers['restart'][-1]:.2f}s; {client.retries} retries so far")
        # Let the last delayed actions fire, then stop the client.
        time.sleep(DELAY_SECONDS + arguments.lease_ttl + 1)
        client.running = False
        for sender in senders:
            sender.join(timeout=180)

        # Each instance's final state, from whichever host owns it.
        problems = []
        total_actions = 0
        for key in KEYS:
            status = None
            for _ in range(200):
                try:
                    connection = http.client.HTTPConnection("127.0.0.1", random.choice(hosts).port, timeout=10)
                    connection.request("GET", f"/v1/machines/counter/{key}")
                    response = connection.getresponse()
                    text = response.read()
                    if response.status == 200:
                        status = json.loads(text)
                        if not status["timers"]:
                            break
                except (OSError, http.client.HTTPException):
                    pass
                time.sleep(0.1)
            rows = database.query(f"SELECT ordinal, action, args FROM actomaton_actions WHERE name = 'counter/{key}' ORDER BY seq")
            ordinals = [int(row[0]) for row in rows]
            actions = [row[1] for row in rows]
            acknowledged = client.acknowledged[key]
            increments = sum(1 for entry in acknowledged if entry[2] == "increment")
            armed = sum(1 for entry in acknowledged if entry[2] == "add_later")
            fired = sum(1 for action in actions if action == "add") if ordinals and ordinals[0] == 1 else None
            total_actions += len(ordinals)
            if ordinals != list(range(1, len(ordinals) + 1)):
                problems.append(f"{key}: the journal's transitions are not numbered 1..N without a gap")
            if len(set(entry[1] for entry in acknowledged)) != len(acknowledged):
                problems.append(f"{key}: two acknowledgements carry the same seq")
            if fired is not None and fired != armed:
                problems.append(f"{key}: {armed} delayed actions were armed and {fired} fired")
                # What to look at: the delayed actions in the journal, and when the client armed them.
                with open(os.path.join(work, f"{key}-delayed.txt"), "w") as dump:
                    for row in database.query(f"SELECT ordinal, action, args FROM actomaton_actions "
                                              f"WHERE name = 'counter/{key}' AND action <> 'increment' ORDER BY seq"):
                        dump.write(f"journal: ordinal {row[0]} {row[1]}\n")
                    for entry in acknowledged:
                        if entry[2] == "add_later":
                            dump.write(f"client: armed at seq {entry[1]}, acknowledged at {entry[0]:.3f}\n")
            if fired is not None and len(ordinals) != increments + armed + fired:
                # What to look at: each journaled transition with the acknowledgement that carried
                # its seq, the receipts (an action applied twice has its key's receipt answered with
                # the later seq), and every attempt of the client.
                with open(os.path.join(work, f"{key}-journal.txt"), "w") as dump:
                    acked = {entry[1]: entry for entry in acknowledged}
                    for row in database.query(f"SELECT ordinal, action FROM actomaton_actions WHERE name = 'counter/{key}' ORDER BY seq"):
                        dump.write(f"journal: ordinal {row[0]} {row[1]}, acknowledged {acked.get(int(row[0]))}\n")
                    for row in database.query(f"SELECT key, answer FROM actomaton_receipts WHERE name = 'counter/{key}' ORDER BY key"):
                        dump.write(f"receipt: {row[0]} {row[1][:160]}\n")
                    for (started, ended, port, outcome, idempotency_key) in client.attempts[key]:
                        dump.write(f"attempt: {idempotency_key} {started:.3f}..{ended:.3f} port {port}: {outcome}\n")
                problems.append(f"{key}: the journal holds {len(ordinals)} transitions for {increments} increments, "
                                f"{armed} delayed actions armed and {fired} fired")
            expected = increments + LATER_AMOUNT * armed
            if status is None:
                problems.append(f"{key}: no host answered for its state")
            elif status["state"] != {"count": expected}:
                problems.append(f"{key}: the state is {status['state']}, the acknowledged actions add up to {expected}")
        # Each watcher catches up with the last transition of its instance.
        final_seqs = {key: len(database.query(f"SELECT 1 FROM actomaton_actions WHERE name = 'counter/{key}'"))
                      for key in KEYS}
        deadline = time.monotonic() + 30
        while any(watchers[key].last < final_seqs[key] for key in KEYS) and time.monotonic() < deadline:
            time.sleep(0.1)
        early = 0
        for key in KEYS:
            watcher = watchers[key]
            watcher.running = False
            problems += watcher.problems[:5]
            # Never early: the n-th delayed action reached the watcher no sooner than its delay
            # after the n-th was first asked for (it may arrive late: after a reconnection, or
            # when its host was down).
            for number, (asked, seen) in enumerate(zip(client.armed_at[key], watcher.fired_seen), start=1):
                if seen < asked + DELAY_SECONDS:
                    early += 1
                    problems.append(f"{key}: delayed action {number} fired {asked + DELAY_SECONDS - seen:.3f}s early")
            if len(watcher.fired_seen) != len(client.armed_at[key]):
                problems.append(f"the watcher of {key} saw {len(watcher.fired_seen)} delayed actions fire, "
                                f"{len(client.armed_at[key])} were armed")
            if watcher.last != final_seqs[key]:
                problems.append(f"the watcher of {key} saw up to seq {watcher.last}, the journal holds {final_seqs[key]}")
        in_order = all(watchers[key].last == final_seqs[key] and not watchers[key].problems for key in KEYS)
        print(f"a watcher of each of {len(KEYS)} busy instances, on random hosts, saw all "
              f"{sum(final_seqs.values())} transitions in order ({sum(w.reconnects for w in watchers.values())} "
              f"connections)" if in_order else "a watcher missed transitions")
        armed_total = sum(len(client.armed_at[key]) for key in KEYS)
        print(f"{armed_total} delayed actions on busy instances: "
              f"{'none fired early' if not early else f'{early} fired early'}")
        # The quiet instances: read from the journal only (a request would bring them back itself).
        for key in quiet:
            rows = None
            for _ in range(100):
                rows = database.query(f"SELECT (SELECT count(*) FROM actomaton_actions WHERE name = 'counter/{key}' AND action = 'add'), "
                                      f"(SELECT count(*) FROM actomaton_timers WHERE name = 'counter/{key}')")
                if rows[0] == ["1", "0"]:
                    break
                time.sleep(0.1)
            if rows[0] != ["1", "0"]:
                problems.append(f"{key}: its delayed action fired {rows[0][0]} times ({rows[0][1]} timers left) on the host that "
                                f"adopted it; once was expected")
        print(f"{len(quiet)} quiet instances' delayed actions, due while their host was down: "
              f"{'each fired once' if not any(p.startswith('quiet') for p in problems) else 'NOT each fired once'}")
        hosts_rows = database.query("SELECT id, advertise, fenced FROM actomaton_hosts ORDER BY id")
        fencing = sum(int(row[2]) for row in hosts_rows)
        acknowledged_total = sum(len(entries) for entries in client.acknowledged.values())
        print(f"{acknowledged_total} acknowledged requests, {total_actions} journaled transitions, {client.retries} retries, "
              f"{fencing} fencing refusals (records of a host that had lost its instance, refused)")
        for attack, times in failovers.items():
            times = sorted(times)
            print(f"failover after {attack}: median {times[len(times) // 2]:.2f}s, worst {times[-1]:.2f}s "
                  f"(from the last acknowledgement before to the first after, lease {arguments.lease_ttl}s)")
        if problems:
            failed = True
            for problem in problems:
                print(f"FAILED: {problem}")
        else:
            print("every acknowledged action is in the journal exactly once; every delayed action fired once; "
                  "the final states equal the journal")
    except BaseException:
        failed = True
        raise
    finally:
        for host in hosts:
            host.signal(signal.SIGCONT)
            host.signal(signal.SIGKILL)
        database.stop()
        if failed or os.environ.get("CLUSTER_KEEP_LOGS"):
            print(f"the hosts' logs are kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
