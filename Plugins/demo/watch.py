#!/usr/bin/env python3
"""Watches an instance of `actomaton-host serve --listen`: prints each transition the
WebSocket sends, until COUNT of them have arrived (or the server closes it).

    watch.py ws://127.0.0.1:PORT/v1/machines/counter/room-1/watch COUNT
"""
import sys

from websockets.sync.client import connect


def main() -> int:
    url, count = sys.argv[1], int(sys.argv[2])
    with connect(url, open_timeout=10) as socket:
        print("watcher: connected to " + url, flush=True)
        for _ in range(count):
            print("watcher: " + socket.recv(timeout=10), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
