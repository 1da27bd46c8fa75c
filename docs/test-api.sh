#!/usr/bin/env bash
# `make test-api`: schemathesis (from PyPI) against a live `actomaton-host serve --listen`
# serving the C counter in this process, with docs/openapi.yaml: every response must match the
# document, and none may be a 5xx.
#
#     docs/test-api.sh HOST_BINARY COUNTER_SO SCHEMATHESIS [SECONDS]
set -euo pipefail
host=$1 counter=$2 st=$3 seconds=${4:-60}
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
    rm -rf "$scratch"
}
trap cleanup EXIT
mkdir -p "$scratch/plugins"
cp "$counter" "$scratch/plugins/counter.so"
"$host" serve --plugins "$scratch/plugins" --listen 127.0.0.1:0 --isolation none --log-level error >"$scratch/server.log" 2>&1 &
server=$!
port=""
for _ in $(seq 1 300); do
    port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$scratch/server.log")
    [ -n "$port" ] && break
    kill -0 "$server" 2>/dev/null || { cat "$scratch/server.log"; echo "the server did not start"; exit 1; }
    sleep 0.1
done
[ -n "$port" ] || { cat "$scratch/server.log"; echo "the server did not say where it listens"; exit 1; }
status=0
"$st" --config-file "$here/schemathesis.toml" run "$here/openapi.yaml" --url "http://127.0.0.1:$port" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance \
    --phases examples,coverage,fuzzing --max-time "$seconds" || status=$?
kill -TERM "$server"
wait "$server" || { echo "the server did not stop cleanly"; status=1; }
server=""
exit "$status"
