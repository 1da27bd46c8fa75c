# Sourced by the shell scripts that start `actomaton-host serve --listen 127.0.0.1:0`.
#
#     listening_port LOG PID
#
# Prints the port the server at PID says it listens on, in LOG ("listening on 127.0.0.1:PORT"),
# once it says so (within 30 s). Fails, with the log and one line on standard error, when the
# server ends first or never says.
listening_port() {
    local log=$1 pid=$2 port=""
    for _ in $(seq 1 300); do
        port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$log")
        [ -n "$port" ] && { echo "$port"; return 0; }
        kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "the server did not start" >&2; return 1; }
        sleep 0.1
    done
    cat "$log" >&2
    echo "the server did not say where it listens" >&2
    return 1
}
