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

# The A/B scripts' own (ab-record.sh, ab-play.sh).
# ab_arguments LAST ARGS...: JAQ_A JAQ_B [COUNT] [SECONDS] [TURNS] [MORE...] into `a` and `b`
# (absolute paths), `count` (ports, default 2), `seconds` (10), `turns` (6) and `more` (the rest);
# with fewer than two arguments, prints lines 2 to LAST of the script (its usage) and exits 2.
ab_arguments() {
    local last=$1
    shift
    [ $# -ge 2 ] || { sed -n "2,${last}p" "$0" >&2; exit 2; }
    a=$(realpath "$1")
    b=$(realpath "$2")
    count=${3:-2}
    seconds=${4:-10}
    turns=${5:-6}
    more=("${@:6}")
}

# ab_server COUNT: source_server, realtime where the machine allows it; exits with jackd's last
# words if it does not come up either way.
ab_server() {
    source_server -R "$1" || source_server --no-realtime "$1" \
        || { echo "$name: jackd did not start: $(tail -3 "$dir/jackd.log")" >&2; exit 1; }
}

# The median of the numbers on standard input; `column_median N FILE`, of column N of FILE.
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
column_median() { awk -v c="$1" '{print $c}' "$2" | median; }
# `ratio_median N FILE`: the median of column N over column 3 (the floor's, in every script) of FILE.
ratio_median() { awk -v c="$1" '{print $c/$3}' "$2" | median; }

# `difference_median FILE`: the median of column 1 minus column 2 (A's CPU minus B's) of FILE,
# taken within each turn: a slow spell of the machine raises both, and drops out of it, where
# it moves the medians of the columns apart (a change worth 2 ms in 0.2 s takes showed 0.1 ms
# between the medians of 10 s takes in a noisy hour).
difference_median() { awk '{print $1 - $2}' "$1" | median; }

# take_cpu COMMAND...: the CPU milliseconds of one run of a recorder (`perf stat -e task-clock`,
# the whole process), into an emptied $dir/take (ab-record.sh, aq-floor.sh).
take_cpu() {
    rm -rf "$dir/take" && mkdir "$dir/take"
    perf stat -x, -e task-clock "$@" 2>&1 >/dev/null | awk -F, '/task-clock/ {print $1}'
}

# record_setup TRACKS BITS PLAYER: for the scripts that measure takes against floor-record
# (ab-record.sh, aq-floor.sh): checks BITS (float or 24) and the tools, builds floor-record into
# $dir, and starts the server and PLAYER's looping source of TRACKS channels.
record_setup() {
    case $2 in float | 24) ;; *) echo "$name: BITS is float or 24" >&2; exit 2 ;; esac
    require jackd jack_lsp perf sox cc -- "$a" "$b"
    cc -O2 Sources/Benchmarks/Floor/floor-record.c -o "$dir/floor-record" -ljack -lm
    ab_server "$1"
    source_player "$3" "$1"
}

# play_setup CHANNELS SECONDS BITS: for the scripts that measure playback against floor-play
# (ab-play.sh, aq-floor-play.sh): checks the tools, builds floor-play into $dir, writes
# $dir/play.wav (a CHANNELS-channel sine of SECONDS, BITS 16 or float) and starts the server.
play_setup() {
    local encoding
    case $3 in
        float) encoding=(-b 32 -e floating-point) ;;
        16) encoding=(-b 16) ;;
        *) echo "$name: BITS is 16 or float" >&2; exit 2 ;;
    esac
    require jackd jack_lsp perf sox cc -- "$a" "$b"
    cc -O2 Sources/Benchmarks/Floor/floor-play.c -o "$dir/floor-play" -ljack -lsndfile -lm
    sox -n -r 48000 -c "$1" "${encoding[@]}" "$dir/play.wav" synth "$2" sine 440 vol 0.5
    ab_server "$1"
}

# play_run COMMAND...: "CPU-ms wall-s" of one run of a player (`perf stat -e task-clock`, the
# whole process; the wall time around it).
play_run() {
    local start end cpu
    start=$(date +%s.%N)
    cpu=$(perf stat -x, -e task-clock "$@" 2>&1 >/dev/null | awk -F, '/task-clock/ {print $1}')
    end=$(date +%s.%N)
    echo "$cpu $(echo "$end - $start" | bc -l)"
}

# referee_turns JAQ_LABEL AQ_LABEL FLOOR_LABEL: for aq-floor.sh and aq-floor-play.sh, $turns
# turns of the script's `run jaq`, `run aq` and `run floor` (each prints its CPU ms), each going
# first in turn; a line "jaq aq floor" per turn in $results.
referee_turns() {
    local orders=("jaq aq floor" "aq floor jaq" "floor jaq aq") turn tool
    local -A t
    for turn in $(seq "$turns"); do
        t=()
        for tool in ${orders[$(((turn - 1) % 3))]}; do t[$tool]=$(run "$tool"); done
        echo "turn $turn: $1 ${t[jaq]} ms, $2 ${t[aq]} ms, $3 ${t[floor]} ms" >&2
        echo "${t[jaq]} ${t[aq]} ${t[floor]}" >>"$results"
    done
}
