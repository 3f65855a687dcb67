#!/bin/bash
# A/B of two jaq binaries' `jaq play` against floor-play, in turns (Docs/benchmarks.md, "Where the
# time goes"), as ab-record.sh does for the recorder: a private realtime dummy server (`jackd -R`,
# or without -R where realtime scheduling is refused) with CHANNELS playback ports; each turn
# plays a CHANNELS-channel sine of SECONDS (BITS: 16 or float) with binary A, binary B and
# floor-play, one after the other, and takes each process's CPU (`perf stat -e task-clock`, whole
# process) and wall time. The ratio to the floor is taken within each turn, against that turn's
# floor-play run, and the median of the turns is printed with the medians of the CPU times and
# of A's CPU minus B's within each turn.
#
# usage: Sources/Benchmarks/ab-play.sh JAQ_A JAQ_B [CHANNELS] [SECONDS] [TURNS] [BITS]
#   e.g. Sources/Benchmarks/ab-play.sh /tmp/before/.build/release/jaq .build/release/jaq 2 10 6 float
set -euo pipefail
dir=$(mktemp -d /tmp/jaq-ab.XXXXXX)
name=ab-play
export JACK_DEFAULT_SERVER=jaq-ab-$$
. "$(dirname "$0")/source-server.sh"
ab_arguments 11 "$@"
channels=$count
bits=${more[0]:-float}
play_setup "$channels" "$seconds" "$bits"
results=$dir/results
for turn in $(seq "$turns"); do
    # A and B take turns at going first (as in ab-record.sh).
    if ((turn % 2)); then
        read -r ca wa < <(play_run "$a" play --quiet "$dir/play.wav")
        read -r cb wb < <(play_run "$b" play --quiet "$dir/play.wav")
    else
        read -r cb wb < <(play_run "$b" play --quiet "$dir/play.wav")
        read -r ca wa < <(play_run "$a" play --quiet "$dir/play.wav")
    fi
    read -r cf wf < <(play_run "$dir/floor-play" "$dir/play.wav")
    printf 'turn %s: A %s ms (%.2f s), B %s ms (%.2f s), floor-play %s ms (%.2f s)\n' "$turn" "$ca" "$wa" "$cb" "$wb" "$cf" "$wf" >&2
    echo "$ca $cb $cf $wa $wb $wf" >>"$results"
done
col() { column_median "$1" "$results"; }
ra=$(ratio_median 1 "$results")
rb=$(ratio_median 2 "$results")
printf 'jaq play --quiet, %s channels, %s s, %s, %s turns (medians): A %.1f ms, B %.1f ms, floor-play %.1f ms; ratio to the floor A %.3f, B %.3f; A - B within a turn %.2f ms; wall A %.2f s, B %.2f s, floor-play %.2f s\n' \
    "$channels" "$seconds" "$bits" "$turns" "$(col 1)" "$(col 2)" "$(col 3)" "$ra" "$rb" "$(difference_median "$results")" "$(col 4)" "$(col 5)" "$(col 6)"
