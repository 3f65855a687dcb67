# Sourced by the bench scripts (callback-bench.sh, ab-record.sh): a private dummy JACK server
# and a looping `jaq play` as the source, both stopped, and the scratch directory removed, when
# the script exits. Set before sourcing: `dir` (the scratch directory), `name` (for messages)
# and JACK_DEFAULT_SERVER (the server's name).
jackd_pid=
player_pid=
source_cleanup() {
    # Each step on its own: a killed process's status (143) must not stop the next (set -e).
    set +e
    if [ -n "$player_pid" ]; then kill "$player_pid" 2>/dev/null; wait "$player_pid" 2>/dev/null; fi
    if [ -n "$jackd_pid" ]; then kill "$jackd_pid" 2>/dev/null; wait "$jackd_pid" 2>/dev/null; fi
    rm -rf "$dir"
}
trap source_cleanup EXIT

# require TOOLS... -- BINARIES...: exits with one line naming what is missing: a tool (make
# deps-bench installs them) or a binary to measure that is not an executable.
require() {
    local tool binary
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        command -v "$1" >/dev/null || { echo "$name: $1 is missing (make deps-bench)" >&2; exit 1; }
        shift
    done
    [ $# -gt 0 ] && shift
    for binary in "$@"; do [ -x "$binary" ] || { echo "$name: $binary is not an executable" >&2; exit 1; }; done
}

# source_server SCHEDULING CHANNELS: jackd SCHEDULING (-R or --no-realtime) -d dummy at
# 48 kHz, 256 frames, CHANNELS ports each way; returns 1 if it did not come up (jackd -R where
# realtime scheduling is refused).
source_server() {
    jackd -n "$JACK_DEFAULT_SERVER" "$1" -d dummy -r 48000 -p 256 -C "$2" -P "$2" >"$dir/jackd.log" 2>&1 &
    jackd_pid=$!
    for _ in $(seq 100); do
        jack_lsp >/dev/null 2>&1 && return 0
        kill -0 "$jackd_pid" 2>/dev/null || break
        sleep 0.1
    done
    kill "$jackd_pid" 2>/dev/null; wait "$jackd_pid" 2>/dev/null; jackd_pid=
    return 1
}

# source_player JAQ CHANNELS: JAQ plays a CHANNELS-channel float sine of 5 s in a loop; sets
# `ports` to its CHANNELS output ports.
source_player() {
    sox -n -r 48000 -c "$2" -b 32 -e floating-point "$dir/source.wav" synth 5 sine 440 vol 0.5 2>/dev/null
    "$1" play --quiet --loop "$dir/source.wav" >"$dir/play.log" 2>&1 &
    player_pid=$!
    for _ in $(seq 100); do
        [ "$(jack_lsp 2>/dev/null | grep -c '^jaq-1-source:out')" -ge "$2" ] && break
        sleep 0.1
    done
    mapfile -t ports < <(jack_lsp | grep '^jaq-1-source:out' | head -n "$2")
    [ "${#ports[@]}" -eq "$2" ] || { echo "$name: the player's ports did not appear" >&2; exit 1; }
}
