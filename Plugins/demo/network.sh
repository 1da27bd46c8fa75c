#!/usr/bin/env bash
# A short session with `actomaton-host serve --listen` (part of `make demo`): the counter
# plugin served on a free loopback port, two instances driven with curl, a WebSocket watcher
# that sees a delayed action's transition arrive, an idempotent retry, then SIGTERM; then the
# server started again on the same --state: the instances, a watcher resuming with ?after=SEQ
# from the journal, and the retry still answered from its first response.
#
#     Plugins/demo/network.sh HOST_BINARY PLUGIN_DIRECTORY PYTHON_WITH_WEBSOCKETS
set -euo pipefail
host=$1 plugins=$2 python=$3
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../scripts/listening-port.sh
. "$here/../../scripts/listening-port.sh"
scratch=$(mktemp -d)
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
    rm -rf "$scratch"
}
trap cleanup EXIT

start() {  # Port 0: the system picks a free port; the server prints the one it got.
    echo "\$ actomaton-host serve --plugins DIR --listen 127.0.0.1:0 --state state.sqlite"
    "$host" serve --plugins "$plugins" --listen 127.0.0.1:0 --state "$scratch/state.sqlite" >"$scratch/server.log" 2>&1 &
    server=$!
    port=$(listening_port "$scratch/server.log" "$server") || exit 1
    cat "$scratch/server.log"
    printed=$(wc -l <"$scratch/server.log")
    base="http://127.0.0.1:$port"
}
stop() {
    echo "\$ kill -TERM $server   (the server finishes what is in flight and exits 0)"
    kill -TERM "$server"
    status=0
    wait "$server" || status=$?
    server=""
    tail -n +$((printed + 1)) "$scratch/server.log"
    echo "exit status: $status"
    [ "$status" = 0 ] || exit "$status"
}
start

show() {  # prints a command as one would type it
    local line="\$" arg
    for arg in "$@"; do
        if [[ $arg =~ ^[A-Za-z0-9_./:=?@%+-]+$ ]]; then line+=" $arg"; else line+=" '$arg'"; fi
    done
    echo "$line"
}
request() {  # METHOD PATH [BODY [HEADER]]
    local method=$1 path=$2 body=${3:-} header=${4:-}
    local args=(-sS -X "$method" "$base$path")
    [ -n "$body" ] && args+=(-H 'Content-Type: application/json' -d "$body")
    [ -n "$header" ] && args+=(-H "$header")
    show curl "${args[@]:1}"
    curl "${args[@]}" -w '   (%{http_code})\n'
}

request POST /v1/machines/counter/room-1 '{"action": "add", "args": [5]}'
request POST /v1/machines/counter/room-2 '{"action": "increment"}'

echo "\$ python3 Plugins/demo/watch.py ws://127.0.0.1:$port/v1/machines/counter/room-1/watch 3 &"
"$python" "$here/watch.py" "ws://127.0.0.1:$port/v1/machines/counter/room-1/watch" 3 >"$scratch/watch.log" 2>&1 &
watcher=$!
for _ in $(seq 1 100); do grep -q connected "$scratch/watch.log" && break; sleep 0.1; done
cat "$scratch/watch.log"

request POST /v1/machines/counter/room-1 '{"action": "add", "args": [1]}'
request POST /v1/machines/counter/room-1 '{"action": "add_later", "args": {"amount": 100, "seconds": 0.3}}'
echo "(the watcher sees both transitions, then the delayed add's, 0.3 s later)"
if ! wait "$watcher"; then cat "$scratch/watch.log"; echo "the watcher failed"; exit 1; fi
tail -n +2 "$scratch/watch.log"

request GET /v1/machines/counter/room-1
request GET '/v1/machines/counter?limit=10'
show curl -sS "$base/"
echo "$(curl -sS "$base/" | grep -o '<title>[^<]*</title>')   (the inspector: open $base/ in a browser)"

echo "(a retry with the same Idempotency-Key is answered from the first response, not applied again)"
for _ in 1 2; do
    show curl -si -X POST "$base/v1/machines/counter/room-2" -H "Idempotency-Key: order-17" -d '{"action": "add", "args": [10]}'
    curl -si -X POST "$base/v1/machines/counter/room-2" -H "Idempotency-Key: order-17" -d '{"action": "add", "args": [10]}' \
        | tr -d '\r' | grep -Ei '^(HTTP|idempotent-replayed|\{)'
done
request GET /v1/machines/counter/room-2
request POST /v1/machines/counter/room-2 '{"action": "add", "args": ["ten"]}'
echo "(without --tokens, no page of another site may use the service: a browser says where a request came from)"
request POST /v1/machines/counter/room-2 '{"action": "reset"}' 'Origin: https://evil.example'
echo

stop

echo; echo "(started again on the same state: every instance comes back, seq and all)"
start
request GET /v1/machines/counter/room-1
echo "(a watcher that saw seq 1 resumes: the transitions after it come from the journal)"
echo "\$ python3 Plugins/demo/watch.py 'ws://127.0.0.1:$port/v1/machines/counter/room-1/watch?after=1' 3"
"$python" "$here/watch.py" "ws://127.0.0.1:$port/v1/machines/counter/room-1/watch?after=1" 3 >"$scratch/watch.log" 2>&1 \
    || { cat "$scratch/watch.log"; echo "the watcher failed"; exit 1; }
cat "$scratch/watch.log"
echo "(the retry after the restart is still answered from its first response)"
show curl -si -X POST "$base/v1/machines/counter/room-2" -H "Idempotency-Key: order-17" -d '{"action": "add", "args": [10]}'
curl -si -X POST "$base/v1/machines/counter/room-2" -H "Idempotency-Key: order-17" -d '{"action": "add", "args": [10]}' \
    | tr -d '\r' | grep -Ei '^(HTTP|idempotent-replayed|\{)'
stop
