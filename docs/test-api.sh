#!/usr/bin/env bash
# `make test-api`: schemathesis (from PyPI) against a live `actomaton-host serve --listen`
# serving the C counter in this process, with docs/openapi.yaml: every response must match the
# document, and none may be a 5xx. Twice: in memory, then with --state and --tokens.
#
#     docs/test-api.sh HOST_BINARY COUNTER_SO SCHEMATHESIS [SECONDS]
set -euo pipefail
host=$1 counter=$2 st=$3 seconds=${4:-60}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../scripts/listening-port.sh
. "$here/../scripts/listening-port.sh"
scratch=$(mktemp -d)
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
    rm -rf "$scratch"
}
trap cleanup EXIT
mkdir -p "$scratch/plugins"
cp "$counter" "$scratch/plugins/counter.so"
# Two passes: in memory without tokens; then with a journal (--state) and --tokens, every
# request with a token of every scope.
check() {
    local name=$1; shift
    local header=$1; shift
    : >"$scratch/server.log"
    "$host" serve --plugins "$scratch/plugins" --listen 127.0.0.1:0 --isolation none --log-level error "$@" >"$scratch/server.log" 2>&1 &
    server=$!
    local port
    port=$(listening_port "$scratch/server.log" "$server") || { echo "$name: no server"; exit 1; }
    local headers=()
    if [ -n "$header" ]; then
        headers=(--header "$header")
        # The token is taken, and a request without it refused: the pass tests the API, not 401s.
        local with without
        with=$(curl -s -o /dev/null -w '%{http_code}' -H "$header" "http://127.0.0.1:$port/v1/plugins")
        without=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/plugins")
        [ "$with" = 200 ] && [ "$without" = 401 ] || { echo "$name: the token was not taken ($with with it, $without without)"; exit 1; }
    fi
    echo "== $name"
    "$st" --config-file "$here/schemathesis.toml" run "$here/openapi.yaml" --url "http://127.0.0.1:$port" "${headers[@]}" \
        --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance,unsupported_method \
        --phases examples,coverage,fuzzing --max-time "$seconds" || status=$?
    kill -TERM "$server"
    wait "$server" || { echo "$name: the server did not stop cleanly"; status=1; }
    server=""
}
status=0
check "in memory, no tokens" ""
token=api-test-token-0123456789abcdef
printf '%s read:* send:* admin\n' "$token" >"$scratch/tokens"
chmod 600 "$scratch/tokens"
check "--state and --tokens" "Authorization: Bearer $token" --state "$scratch/state.sqlite" --tokens "$scratch/tokens"
exit "$status"
