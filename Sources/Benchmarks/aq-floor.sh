#!/bin/bash
# Where jaq record's difference to floor-record lies (issue #29): in turns, `jaq record`, the
# referee `aq-floor-record` (Sources/Benchmarks/AQFloor: the least an Audio Queue recorder
# spends, written as Apple's samples are) and `floor-record` (the least a libjack recorder
# spends) record the same ports for SECONDS, on a private realtime dummy server with a looping
# `jaq play` as the source; each run's CPU is `perf stat -e task-clock` of the whole process.
# The ratios to floor-record are taken within each turn and their medians printed: aq-floor's
# is what the Audio Queue model costs a take by itself, jaq's the rest. The three take turns at
# going first.
#
# usage: Sources/Benchmarks/aq-floor.sh JAQ AQ_FLOOR_RECORD [TRACKS] [SECONDS] [TURNS] [BITS]
#   BITS: float (the default) or 24
#   e.g. make release && Sources/Benchmarks/aq-floor.sh .build/release/jaq .build/release/aq-floor-record 2 10 8
set -euo pipefail
dir=$(mktemp -d /tmp/jaq-aqfloor.XXXXXX)
name=aq-floor
export JACK_DEFAULT_SERVER=jaq-aqfloor-$$
. "$(dirname "$0")/source-server.sh"
ab_arguments 13 "$@"
tracks=$count
bits=${more[0]:-float}
record_setup "$tracks" "$bits" "$a"

run() {
    case $1 in
    jaq) take_cpu "$a" record -b "$bits" -d "$seconds" --quiet -o "$dir/take/j-{n}.wav" "${ports[@]}" ;;
    aq) take_cpu "$b" "$seconds" "$bits" "$dir/take/q" "${ports[@]}" ;;
    floor) take_cpu "$dir/floor-record" "$seconds" "$bits" "$dir/take/f" "${ports[@]}" ;;
    esac
}
results=$dir/results
referee_turns "jaq record" aq-floor-record floor-record
mj=$(column_median 1 "$results")
mq=$(column_median 2 "$results")
mf=$(column_median 3 "$results")
rj=$(ratio_median 1 "$results")
rq=$(ratio_median 2 "$results")
printf '%s tracks, %s, %s s, %s turns (medians): jaq record %.1f ms, aq-floor-record %.1f ms, floor-record %.1f ms; ratio to floor-record: jaq %.3f, aq-floor %.3f\n' \
    "$tracks" "$bits" "$seconds" "$turns" "$mj" "$mq" "$mf" "$rj" "$rq"
