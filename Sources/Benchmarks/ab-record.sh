#!/bin/bash
# A/B of two jaq binaries against floor-record, in turns (Docs/benchmarks.md, "Where the time
# goes"): the way issue #29's changes are measured, since two runs of `make bench` differ by
# more than a change is worth. A private realtime dummy server (`jackd -R`, or without -R where
# realtime scheduling is refused) runs a looping `jaq play` of TRACKS channels; each turn records
# those ports for SECONDS with binary A, binary B and floor-record, one after the other, and
# takes each process's CPU (`perf stat -e task-clock`, whole process). The ratio to the floor is
# taken within each turn, against that turn's floor-record take, and the median of the turns is
# printed with the medians of the CPU times.
#
# usage: Sources/Benchmarks/ab-record.sh JAQ_A JAQ_B [TRACKS] [SECONDS] [TURNS]
#   e.g. git worktree add /tmp/before HEAD~3 && (cd /tmp/before && make release) &&
#        Sources/Benchmarks/ab-record.sh /tmp/before/.build/release/jaq .build/release/jaq 2 10 6
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
a=$(realpath "$1")
b=$(realpath "$2")
tracks=${3:-2}
seconds=${4:-10}
turns=${5:-6}
for tool in jackd jack_lsp perf sox cc; do
    command -v $tool >/dev/null || { echo "ab-record: $tool is missing (make deps-bench)" >&2; exit 1; }
done
for binary in "$a" "$b"; do [ -x "$binary" ] || { echo "ab-record: $binary is not an executable" >&2; exit 1; }; done
dir=$(mktemp -d /tmp/jaq-ab.XXXXXX)
server=jaq-ab-$$
jackd_pid=
player_pid=
cleanup() {
    set +e
    if [ -n "$player_pid" ]; then kill "$player_pid" 2>/dev/null; wait "$player_pid" 2>/dev/null; fi
    if [ -n "$jackd_pid" ]; then kill "$jackd_pid" 2>/dev/null; wait "$jackd_pid" 2>/dev/null; fi
    rm -rf "$dir"
}
trap cleanup EXIT
cc -O2 Sources/Benchmarks/Floor/floor-record.c -o "$dir/floor-record" -ljack -lm
export JACK_DEFAULT_SERVER=$server
start_server() {
    jackd -n "$server" "$@" -d dummy -r 48000 -p 256 -C "$tracks" -P "$tracks" >"$dir/jackd.log" 2>&1 &
    jackd_pid=$!
    for _ in $(seq 50); do jack_lsp >/dev/null 2>&1 && return 0; kill -0 "$jackd_pid" 2>/dev/null || break; sleep 0.1; done
    kill "$jackd_pid" 2>/dev/null; wait "$jackd_pid" 2>/dev/null; jackd_pid=
    return 1
}
start_server -R || start_server --no-realtime || { echo "ab-record: jackd did not start: $(tail -3 "$dir/jackd.log")" >&2; exit 1; }
sox -n -r 48000 -c "$tracks" -b 32 -e floating-point "$dir/source.wav" synth 5 sine 440 vol 0.5 2>/dev/null
"$b" play --quiet --loop "$dir/source.wav" >"$dir/play.log" 2>&1 &
player_pid=$!
for _ in $(seq 100); do
    [ "$(jack_lsp 2>/dev/null | grep -c '^jaq-1-source:out')" -ge "$tracks" ] && break
    sleep 0.1
done
mapfile -t ports < <(jack_lsp | grep '^jaq-1-source:out' | head -n "$tracks")
[ "${#ports[@]}" -eq "$tracks" ] || { echo "ab-record: the player's ports did not appear" >&2; exit 1; }

# The CPU milliseconds of one run of a recorder (its command follows).
cpu() {
    rm -rf "$dir/take" && mkdir "$dir/take"
    perf stat -x, -e task-clock "$@" 2>&1 >/dev/null | awk -F, '/task-clock/ {print $1}'
}
results=$dir/results
for turn in $(seq "$turns"); do
    ta=$(cpu "$a" record -b float -d "$seconds" --quiet -o "$dir/take/a-{n}.wav" "${ports[@]}")
    tb=$(cpu "$b" record -b float -d "$seconds" --quiet -o "$dir/take/b-{n}.wav" "${ports[@]}")
    tf=$(cpu "$dir/floor-record" "$seconds" float "$dir/take/f" "${ports[@]}")
    echo "turn $turn: A $ta ms, B $tb ms, floor-record $tf ms" >&2
    echo "$ta $tb $tf" >>"$results"
done
# Medians: of each column, and of each turn's ratio to its floor.
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
ma=$(awk '{print $1}' "$results" | median)
mb=$(awk '{print $2}' "$results" | median)
mf=$(awk '{print $3}' "$results" | median)
ra=$(awk '{print $1/$3}' "$results" | median)
rb=$(awk '{print $2/$3}' "$results" | median)
printf 'jaq record -b float -d %s, %s tracks, %s turns (medians): A %.1f ms, B %.1f ms, floor-record %.1f ms; ratio to the floor A %.3f, B %.3f\n' \
    "$seconds" "$tracks" "$turns" "$ma" "$mb" "$mf" "$ra" "$rb"
