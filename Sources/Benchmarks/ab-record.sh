#!/bin/bash
# A/B of two jaq binaries against floor-record, in turns (Docs/benchmarks.md, "Where the time
# goes"): the way issue #29's changes are measured, since two runs of `make bench` differ by
# more than a change is worth. A private realtime dummy server (`jackd -R`, or without -R where
# realtime scheduling is refused) runs a looping `jaq play` of TRACKS channels; each turn records
# those ports for SECONDS with binary A and binary B (A first in odd turns, B in even ones), then
# floor-record, and takes each process's CPU (`perf stat -e task-clock`, whole process). The
# ratio to the floor is taken within each turn, against that turn's floor-record take, and the
# median of the turns is printed with the medians of the CPU times and of A's CPU minus B's
# within each turn.
#
# usage: Sources/Benchmarks/ab-record.sh JAQ_A JAQ_B [TRACKS] [SECONDS] [TURNS] [BITS]
#   BITS: float (the default) or 24, the takes' sample format (`jaq record -b`, floor-record's)
#   e.g. git worktree add /tmp/before HEAD~3 && (cd /tmp/before && make release) &&
#        Sources/Benchmarks/ab-record.sh /tmp/before/.build/release/jaq .build/release/jaq 2 10 6
set -euo pipefail
dir=$(mktemp -d /tmp/jaq-ab.XXXXXX)
name=ab-record
export JACK_DEFAULT_SERVER=jaq-ab-$$
. "$(dirname "$0")/source-server.sh"
ab_arguments 14 "$@"
tracks=$count
bits=${more[0]:-float}
record_setup "$tracks" "$bits" "$b"

results=$dir/results
for turn in $(seq "$turns"); do
    # A and B take turns at going first: the run after floor-record's can cost more for no fault
    # of its own (at 64 tracks, up to 35 ms more, in the kernel's page zeroing: Docs/benchmarks.md).
    if ((turn % 2)); then
        ta=$(take_cpu "$a" record -b "$bits" -d "$seconds" --quiet -o "$dir/take/a-{n}.wav" "${ports[@]}")
        tb=$(take_cpu "$b" record -b "$bits" -d "$seconds" --quiet -o "$dir/take/b-{n}.wav" "${ports[@]}")
    else
        tb=$(take_cpu "$b" record -b "$bits" -d "$seconds" --quiet -o "$dir/take/b-{n}.wav" "${ports[@]}")
        ta=$(take_cpu "$a" record -b "$bits" -d "$seconds" --quiet -o "$dir/take/a-{n}.wav" "${ports[@]}")
    fi
    tf=$(take_cpu "$dir/floor-record" "$seconds" "$bits" "$dir/take/f" "${ports[@]}")
    echo "turn $turn: A $ta ms, B $tb ms, floor-record $tf ms" >&2
    echo "$ta $tb $tf" >>"$results"
done
# Medians: of each column, and of each turn's ratio to its floor.
ma=$(column_median 1 "$results")
mb=$(column_median 2 "$results")
mf=$(column_median 3 "$results")
ra=$(ratio_median 1 "$results")
rb=$(ratio_median 2 "$results")
printf 'jaq record -b %s -d %s, %s tracks, %s turns (medians): A %.1f ms, B %.1f ms, floor-record %.1f ms; ratio to the floor A %.3f, B %.3f; A - B within a turn %.2f ms\n' \
    "$bits" "$seconds" "$tracks" "$turns" "$ma" "$mb" "$mf" "$ra" "$rb" "$(difference_median "$results")"
